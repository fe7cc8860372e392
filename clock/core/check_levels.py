"""The checks that read the recording's levels: ``noise-level``, ``speech-level`` and ``level-agreement``.

They need no event log. Where a percentile crosses the floor on a recording
with beats, the replay gives the verdict (:func:`level_verdict`), the
percentile its evidence; :mod:`clock.core.check` says what each check holds.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .beats import Beat, outpaced_line
from .check_input import GAIN_SEARCH_DB, Checked, Finding, LevelReplay, Verdict, plural, rms
from .recommend.windows import NOISE_PERCENTILE

__all__ = ["level_agreement", "level_verdict", "noise_level", "speech_level"]


def noise_level(c: Checked) -> Verdict:
    """``noise-level``: the noise (the loud percentile of the silence ticks, away from speech) is below the floor.

    A recording whose noise reaches within ``floor_margin_db`` of its speech fails only when the replay fails a
    beat, and says whether any replayed floor ends its beats right.
    """
    rec, th, margins = c.levels, c.th, c.margins
    fl = f"floor {th.floor:g}"
    noise_label = f"noise p{NOISE_PERCENTILE:g}"
    if rec.noise_high is None:
        return Verdict([], Finding(None, "no silence ticks", fl, None, th.floor, "RMS"), False)
    if rec.window is None and rec.speech_low is not None:
        evidence = (
            f"{noise_label} {rms(rec.noise_high)} within {margins.floor_margin_db:g} dB of speech "
            f"p{margins.speech_percentile:g} {rms(rec.speech_low)}"
        )
        finding = Finding(rec.noise_loudest_s, evidence, fl, rec.noise_high, th.floor, "RMS")
        if c.level_replay is None:
            detail = f"{evidence} (no event log to replay: the percentiles decide)"
            return Verdict([replace(finding, detail=detail)], Finding(None, "", ""))
        return level_verdict(finding, c.level_replay, +1, hopeless=True)
    noise = rec.noise_high
    finding = Finding(rec.noise_loudest_s, f"{noise_label} {rms(noise)}", fl, noise, th.floor, "RMS")
    if noise < th.floor or c.level_replay is None:
        return Verdict([finding] if noise >= th.floor else [], replace(finding, t_s=None))
    return level_verdict(finding, c.level_replay, +1)


def speech_level(c: Checked) -> Verdict:
    """``speech-level``: the low speech percentile is above the floor by ``floor_margin_db``.

    A recording with no speech fails unless its config entry says ``speech = false``.
    """
    th, margins, low, trace = c.th, c.margins, c.levels.speech_low, c.obs.trace
    need = th.floor * 10 ** (margins.floor_margin_db / 20)
    want = f"floor + {margins.floor_margin_db:g} dB = {rms(need)}"
    if low is not None:
        quiet_ticks = np.flatnonzero(c.speech & (trace.level < need))
        where = float(trace.t_s[quiet_ticks[0]]) if quiet_ticks.size else None
        finding = Finding(where, f"speech p{margins.speech_percentile:g} {rms(low)}", want, low, need, "RMS")
        if low >= need or c.level_replay is None:
            return Verdict([finding] if low < need else [], replace(finding, t_s=None))
        return level_verdict(finding, c.level_replay, -1)
    if c.obs.meta.get("speech") is False:
        return Verdict([], Finding(None, "no speech, as the config says", "-"), False)
    finding = Finding(None, "no speech ticks", f"{want} (or speech = false in its [recordings] entry)", None, need)
    return Verdict([replace(finding, unit="RMS")], Finding(None, "", ""))


def level_agreement(c: Checked) -> Verdict:
    """``level-agreement``: the levels the page logged agree with the recording's (:mod:`clock.core.agreement`).

    The 99th percentile of ``|logged - measured|`` is held to ``lossless_tolerance`` where the log gives the
    recording's first frame exactly, else to ``recorder_tolerance``; for the former, at most
    ``max_floor_disagreements`` readings fall on different sides of the floor.
    """
    a, o = c.obs.agreement, c.options
    if a is None or a.n_compared == 0:
        what = "no clock.level readings" if a is None else "no reading inside the recording"
        return Verdict([], Finding(None, what, "-"), False)
    max_disagree = o.max_floor_disagreements
    tolerance = o.lossless_tolerance if a.start_exact else o.recorder_tolerance
    kind = "lossless" if a.start_exact else "start uncertain"
    offset = f", offset {a.offset_s * 1000:+.1f} ms estimated" if a.offset_estimated else ""
    ahead = f", {a.n_ahead} of them one render quantum after their frame" if a.n_ahead else ""
    detail = f"{a.n_compared} readings ({kind}{ahead}): p99 |diff| {a.p99_diff:.3g}, max {a.max_diff:.3g}{offset}"
    want = f"p99 <= {tolerance:g}" + (f", at most {max_disagree} across the floor" if a.start_exact else "")
    summary = Finding(a.worst_s, detail, want, a.p99_diff, tolerance, "RMS")
    failures = []
    if (a.p99_diff or 0.0) > tolerance:
        failures.append(summary)
    if a.start_exact and a.n_floor_disagree > max_disagree:
        failures.append(
            Finding(
                a.first_floor_disagree_s,
                f"{a.n_floor_disagree} readings on the other side of floor {a.floor:g}",
                want,
                a.n_floor_disagree,
                max_disagree,
                "readings",
            )
        )
    return Verdict(failures, summary)


def level_verdict(finding: Finding, replay: LevelReplay, sign: int, *, hopeless: bool = False) -> Verdict:
    """A level check whose percentile crosses the floor: the replay's verdict, with the percentile as evidence.

    It fails at the first beat the replay fails; else it passes with a note of the gain (``sign`` -1 quieter,
    +1 louder) at which a beat would fail. ``hopeless``: the noise reaches the speech, and a failing line says
    whether any replayed floor ends the beats right.
    """
    th = replay.th
    if replay.failing:
        b = replay.failing[0]
        more = f" (and {plural(len(replay.failing) - 1, 'other beat')})" if len(replay.failing) > 1 else ""
        detail = f"beat {b.index + 1} {b.outcome}: {_what_failed(b, th.quiet_s)}{more}; {finding.detail}"
        if hopeless:
            detail += _any_floor_note(replay)
        at = b.last_word_s if b.last_word_s is not None else b.terminal_s
        return Verdict([replace(finding, t_s=at, detail=detail)], finding)
    breaks = replay.breaking_gain(sign)
    way = "louder" if sign > 0 else "quieter"
    if breaks is None:
        margin = f"{way} by up to {GAIN_SEARCH_DB} dB it still does"
    else:
        db, beat, outcome = breaks
        scaled = th.floor * 10 ** (-sign * db / 20)
        margin = f"{db} dB {way} (the floor replayed at {scaled:.3g}), beat {beat + 1} is {outcome}"
    note = (
        f"note: {finding.detail} crosses the floor, yet the replay at this setting ends every beat right; "
        f"{'a voice' if sign < 0 else 'the recording'} {margin}"
    )
    return Verdict([], replace(finding, t_s=None, detail=note))


def _any_floor_note(replay: LevelReplay) -> str:
    """What a hopeless noise-level line adds: a replayed floor that ends the beats right, or that none does."""
    works = replay.any_floor_works()
    if works is None:
        return "; no replayed floor ends its beats right: a level-floor clock cannot work on this recording"
    floor, need, room, _ = works
    upto = "" if room == float("inf") else f" and up to {room:.2f} s"
    return f"; at floor {floor:.2g} a quiet time above {need:.2f} s{upto} ends them right"


def _what_failed(b: Beat, quiet_s: float) -> str:
    """A failing beat's outcome, in words."""
    if b.outcome == "silent" or (b.outcome == "missed-onset" and b.onset_s is None):
        return "the guide's speech stays under the floor"
    if b.outcome == "outpaced":
        return outpaced_line(b, quiet_s)
    if b.outcome == "premature":
        return "declared quiet, then speech resumed"
    if b.outcome == "missed-onset":
        return "the guide spoke after the onset timeout"
    return f"quiet not declared before the {b.bound} at {b.span_end_s:.3f} s"
