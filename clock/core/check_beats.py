"""The checks that read the replayed beats: gaps, how each beat ended, dead air, the count and the baseline.

Each reads the beats the clock saw a tick of (an unheard beat has no speech,
gap or decision) at the setting under test, and runs only on a recording
with beats (:mod:`clock.core.check` says what each check holds, and what a
recording without beats gives instead).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .beats import ABORTED, LEVEL, OUTPACED, PREMATURE, Beat, aborted_line, analyse, heard, outpaced_line
from .check_input import Checked, Finding, Verdict, fmt_s, plural
from .model import EPS_S
from .recommend.quiet import gap_margin_waived

__all__ = [
    "baseline",
    "baseline_entry",
    "beat_count",
    "dead_air",
    "gap",
    "missed_onset",
    "no_speech",
    "outpaced",
    "premature",
    "premature_risk",
    "rule_label",
    "stalled",
]


def _quiet(c: Checked) -> str:
    """``quiet 2.5 s``: the quiet time a line is held to."""
    return f"quiet {c.th.quiet_s:g} s"


def gap(c: Checked) -> Verdict:
    """``gap``: every narration gap (unpaused time) is shorter than ``quiet_s - quiet_margin_s``, one failure each.

    A gap within the margin passes with a note where no quiet time could keep the margin
    (:func:`clock.core.recommend.quiet.gap_margin_waived`).
    """
    r, th, margin = c.replayed, c.th, c.margins.quiet_margin_s
    limit = th.quiet_s - margin
    gaps = [(at, g) for b in r.heard for at, g in zip(b.gap_at_s, b.quiet_gaps_s)]
    worst = max(gaps, key=lambda x: x[1], default=None)
    within = [(at, g) for at, g in gaps if g >= limit - EPS_S]
    ok = Finding(
        None if worst is None else worst[0],
        f"longest gap {fmt_s(worst[1]) if worst else 'none'}",
        f"{limit:.3f} s",
        None if worst is None else worst[1],
        limit,
        "s",
    )
    need, room = _quiet_range(c)
    if within and gap_margin_waived(th.quiet_s, need, room, margin_s=margin, tick_s=r.tick_s):
        # No quiet time keeps the margin on both sides: the replay bridges every gap and beats every bound.
        at, g = max(within, key=lambda x: x[1])
        note = (
            f"note: gap {fmt_s(g)} is {th.quiet_s - g:.3f} s under the {_quiet(c)}, less than the margin {margin:g} s, "
            f"yet the quiet times that end every beat right span only {need:.3f} .. {room:.3f} s, narrower than "
            f"twice the margin, and {th.quiet_s:g} s is not more than a tick below their centre "
            f"({(need + room) / 2:.3f} s)"
        )
        return Verdict([], replace(ok, t_s=at, detail=note))
    want = f"{_quiet(c)} - margin {margin:g} s = {limit:.3f} s"
    return Verdict([Finding(at, f"gap {fmt_s(g)}", want, g, limit, "s") for at, g in within], ok)


def _quiet_range(c: Checked) -> tuple[float, float]:
    """``(need_s, room_s)``: the quiet times that end every beat right at the floor, over the recordings checked
    together (``quiet_range_s``), else this recording's own."""
    if c.options.quiet_range_s is not None:
        return c.options.quiet_range_s
    own = analyse(c.obs.trace, c.replayed.log, floor=c.th.floor)
    pause = own.narration_pause_s if c.options.narration_pause_s is None else c.options.narration_pause_s
    need, room = own.quiet_range(narration_pause_s=pause)[:2]
    return need, room


def premature(c: Checked) -> Verdict:
    """``premature``: the replayed clock never ends a beat while the guide is still talking."""
    r, quiet = c.replayed, _quiet(c)
    return Verdict(
        [
            Finding(b.quiet_declared_s, f"beat {b.index + 1} declared quiet, then speech resumed", quiet, 1, 0, "beats")
            for b in r.heard
            if b.outcome == PREMATURE
        ],
        Finding(None, f"{len(r.beats)} beats", "no premature end", 0, 0, "beats"),
    )


def stalled(c: Checked) -> Verdict:
    """``stalled``: the clock declares quiet before each beat's bound (the next prompt, terminal response or end)."""
    found, th = c.replayed.heard, c.th
    rooms = [b for b in found if b.replay.last_word_s is not None and b.bound != "end"]
    n_aborted = sum(b.aborted for b in found)
    aborted = f" ({n_aborted} ended by the visitor while the guide spoke)" if n_aborted else ""
    ended = [b for b in found if b.outcome in (ABORTED, OUTPACED)]
    return Verdict(
        [
            Finding(
                b.last_word_s,
                f"beat {b.index + 1}: quiet not declared before the {b.bound} at {b.span_end_s:.3f} s",
                _quiet(c),
                None if b.last_word_s is None else b.span_end_s - b.last_word_s,
                th.quiet_s,
                "s",
            )
            for b in found
            if b.stalled
        ],
        Finding(
            None,
            f"{len(c.replayed.beats)} beats{aborted}",
            "quiet declared in every beat the page did not end" if ended else "quiet declared in every beat",
            min((b.span_end_s - (b.last_word_s or b.span_end_s) for b in rooms), default=None),
            th.quiet_s,
            "s",
        ),
    )


def outpaced(c: Checked) -> Verdict:
    """``outpaced``: the beats the visitor ended before the clock declared, said, never failed (the visitor's doing:
    ``aborted`` while the guide spoke, ``outpaced`` after it finished)."""
    ended = [b for b in c.replayed.heard if b.outcome in (ABORTED, OUTPACED)]
    said = "".join(f"; beat {b.index + 1}: {aborted_line(b)}" for b in ended if b.aborted)
    said += "".join(f"; beat {b.index + 1}: {outpaced_line(b, c.th.quiet_s)}" for b in ended if b.outpaced)
    return Verdict(
        [],
        Finding(
            None,
            f"{plural(len(ended), 'beat')} the visitor ended{said}" if ended else "no beat the visitor ended",
            "the visitor's end is not the setting's doing",
            min((b.end_after_word_s for b in ended if not b.aborted and b.end_after_word_s is not None), default=None),
            c.th.quiet_s,
            "s",
        ),
        bool(ended),
    )


def missed_onset(c: Checked) -> Verdict:
    """``missed-onset``: the clock hears the guide's onset within the onset timeout in every beat with speech."""
    found, th = c.replayed.heard, c.th
    spoken = [b for b in found if b.outcome not in ("silent", "unheard")]
    return Verdict(
        [
            Finding(
                b.terminal_s,
                f"beat {b.index + 1}: the guide spoke after the timeout"
                if b.onset_s is not None
                else f"beat {b.index + 1}: the guide spoke, and the floor heard none of it",
                f"onset timeout {th.onset_timeout_s:g} s" if b.onset_s is not None else f"floor {th.floor:g}",
                b.onset_latency_s,
                th.onset_timeout_s if b.onset_s is not None else None,
                "s",
            )
            for b in found
            if b.missed_onset
        ],
        Finding(
            None,
            f"{plural(len(spoken), 'beat')} with speech",
            "an onset within the timeout in each",
            max(
                (b.onset_latency_s for b in found if b.onset_latency_s is not None and not b.after_early_end),
                default=None,
            ),  # fmt: skip
            th.onset_timeout_s,
            "s",
        ),
    )


def no_speech(c: Checked) -> Verdict:
    """``no-speech``: the guide spoke in every beat; a terminal response followed by no speech before the beat's
    bound fails, at the terminal response's time."""
    floor = f"floor {c.th.floor:g}"
    return Verdict(
        [
            Finding(
                b.terminal_s,
                f"beat {b.index + 1}: no speech after the terminal response before the {b.bound} "
                f"at {b.span_end_s:.3f} s",
                floor,
                0,
                1,
                "beats",
            )
            for b in c.replayed.heard
            if b.outcome == "silent"
        ],
        Finding(None, f"{len(c.replayed.beats)} beats", "speech in every beat", 0, 0, "beats"),
    )


def premature_risk(c: Checked) -> Verdict:
    """``premature-risk``: no acknowledgment's silence reaches the quiet time."""
    found, th = c.replayed.heard, c.th
    acks = [b for b in found if b.ack_silence_s is not None]
    return Verdict(
        [
            Finding(
                b.ack_last_word_s,
                f"beat {b.index + 1}: acknowledgment silence {fmt_s(b.ack_silence_s or 0)}",
                _quiet(c),
                b.ack_silence_s,
                th.quiet_s,
                "s",
            )
            for b in found
            if b.premature_risk
        ],
        Finding(
            None,
            f"{sum(b.ack_overlap for b in found)} acknowledgments",
            "silence below the quiet time",
            max((b.ack_silence_s or 0.0 for b in acks), default=None),
            th.quiet_s,
            "s",
        ),
    )


def rule_label(rule: tuple[str, float | None], quiet_s: float) -> str:
    """``rule level+stopped, hangover 0.25 s``: the rule a dead-air line was held at."""
    if rule[0] == LEVEL:
        return f"rule level, quiet {quiet_s:g} s"
    return f"rule {rule[0]}" + ("" if rule[1] is None else f", hangover {rule[1]:g} s")


def _at_the_page_rule(c: Checked) -> tuple[Sequence[Beat], str]:
    """The heard beats at the rule the page runs (the log's ``clock.setting``'s, else the config's ``[thresholds]
    rule``), and that rule in words with where it was read."""
    r, th = c.replayed, c.th
    logged = r.log.setting is not None
    rule = r.rule if logged else (th.rule, th.hangover_s)
    found = (
        r.beats
        if rule[0] == LEVEL
        else c.replay_at(
            floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s, rule=rule[0], hangover_s=rule[1]
        )
    )
    said = "the log's clock.setting" if logged else "[thresholds]"
    return heard(found), rule_label(rule, th.quiet_s) + f" ({said})"


def dead_air(c: Checked) -> Verdict:
    """``dead-air``: no beat ended right waits longer than ``max_dead_air_s`` from its last word to the clock's
    declaration (unpaused), at the rule the page runs; without that key it does not apply, and says the waits."""
    found, rule = _at_the_page_rule(c)
    ended = [(b, b.dead_air_s) for b in found if b.outcome == "ok" and b.dead_air_s is not None]
    waits = np.array([x for _, x in ended], np.float64)
    if waits.size:
        summary = (
            f"dead air median {float(np.median(waits)):.3f} s, p95 {float(np.percentile(waits, 95)):.3f} s, "
            f"max {float(waits.max()):.3f} s over {plural(waits.size, 'beat')} ended right, "
            f"{float(waits.sum()):.3f} s in the tour" + ("" if rule.startswith("rule level,") else f", at {rule}")
        )
    else:
        summary = "no beat ended right"
    worst = None if not waits.size else float(waits.max())
    limit = c.th.max_dead_air_s
    if limit is None:
        return Verdict([], Finding(None, f"no max_dead_air_s in [thresholds]; {summary}", "-", worst, None, "s"), False)
    want = f"max_dead_air_s {limit:g} s"
    return Verdict(
        [
            Finding(
                b.quiet_declared_s,
                f"beat {b.index + 1}: dead air {x:.3f} s after the last word at {rule}",
                want,
                x,
                limit,
                "s",
            )
            for b, x in ended
            if x > limit + EPS_S
        ],
        Finding(None, summary, want, worst, limit, "s"),
    )


def beat_count(c: Checked) -> Verdict:
    """``beat-count``: as many beats as the config's ``beats`` for the recording (not applicable without it)."""
    n, expected = len(c.replayed.beats), c.options.expected_beats
    if expected is None:
        return Verdict([], Finding(None, f"{n} beats", "no expected count in the config", n, None, "beats"), False)
    finding = Finding(None, f"{n} beats", f"{expected} expected", n, expected, "beats")
    return Verdict([finding] if n != expected else [], finding)


def baseline_entry(found: Sequence[Beat]) -> dict[str, Any]:
    """What the baseline records for a recording."""
    seen = heard(found)  # an unheard beat has no onset and no gap
    gaps = [g for b in seen for g in b.quiet_gaps_s]
    onsets: list[float | None] = [None] * len(found)
    for b in seen:
        onsets[b.index] = None if b.onset_s is None else round(b.onset_s, 6)
    return {"beats": len(found), "onsets_s": onsets, "max_gap_s": round(max(gaps), 6) if gaps else None}


def baseline(c: Checked) -> Verdict:
    """``baseline``: no drift from the committed baseline: beat count, onsets and the longest gap within
    tolerances (not applicable without an entry)."""
    base, o = c.options.baseline, c.options
    if base is None:
        return Verdict([], Finding(None, "no baseline entry", "-"), False)
    onset_tol, gap_tol = o.onset_tolerance_s, o.max_gap_tolerance_s
    now = baseline_entry(c.replayed.beats)
    fails: list[Finding] = []
    if now["beats"] != base.get("beats"):
        beats = base.get("beats")
        fails.append(Finding(None, f"{now['beats']} beats", f"baseline {beats}", now["beats"], beats, "beats"))
    for i, (a, b) in enumerate(zip(now["onsets_s"], base.get("onsets_s", []))):
        if (a is None) != (b is None) or (a is not None and abs(a - b) > onset_tol + EPS_S):
            fails.append(Finding(a, f"beat {i + 1} onset {a}", f"baseline {b} ± {onset_tol:g} s", a, b, "s"))
    a, b = now["max_gap_s"], base.get("max_gap_s")
    if (a is None) != (b is None) or (a is not None and abs(a - b) > gap_tol + EPS_S):
        fails.append(Finding(None, f"max gap {a}", f"baseline {b} ± {gap_tol:g} s", a, b, "s"))
    ok = Finding(None, "matches the baseline", f"±{onset_tol:g} s onsets, ±{gap_tol:g} s max gap")
    return Verdict(fails, ok)
