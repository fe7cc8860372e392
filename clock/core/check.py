"""Regression checks of committed thresholds against recordings.

Pure numpy. Each check of each recording gives one :class:`CheckResult`;
a failure renders as one line ``recording:mm:ss.mmm: check: measured vs
threshold``.

Checks
------
``silence-ceiling``
    The highest silence level is below the floor.
``speech-level``
    The low speech percentile (``margins.speech_percentile``) is above the
    floor by ``margins.floor_margin_db``.
``gap``
    Every narration gap, counting only unpaused time, is shorter than
    ``quiet_s - margins.quiet_margin_s`` (one failure per gap).
``premature``, ``no-onset``, ``premature-risk``
    The replayed clock never ends a beat while the guide is still talking,
    always hears an onset within the timeout, and no acknowledgment's
    silence reaches the quiet time.
``logged-quiet``
    The replay's decision is within one tick of the page's ``clock.quiet``
    (plus 1 ms, the resolution a page's ``performance.now()`` log keeps).
``level-agreement``
    The levels the page logged (``clock.level``) agree with the recording's
    (:mod:`clock.core.agreement`): the 99th percentile of
    ``|logged - measured|`` is at most ``lossless_tolerance`` (a recording
    whose first frame the log gives exactly) or ``recorder_tolerance`` (one
    whose start is uncertain), and, for the former, at most
    ``max_floor_disagreements`` readings fall on different sides of the floor.
``beat-count``
    As many beats as the config's ``beats`` for the recording.
``baseline``
    No drift from the committed baseline: beat count, onsets and the longest
    gap within tolerances.

Speech and silence ticks are told apart as ``derive`` does
(:func:`clock.core.derive.classify_ticks`), never with the floor under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .beats import Beat, beats
from .derive import Margins, Observation, classify_ticks
from .thresholds import Thresholds

__all__ = ["CHECKS", "CheckResult", "baseline_entry", "check_corpus", "check_recording"]

CHECKS = (
    "silence-ceiling",
    "speech-level",
    "gap",
    "premature",
    "no-onset",
    "premature-risk",
    "logged-quiet",
    "level-agreement",
    "beat-count",
    "baseline",
)

_EPS = 1e-9
_LOG_RESOLUTION_S = 0.001


def clock_time(t_s: float | None) -> str:
    """``mm:ss.mmm`` (``--:--.---`` when there is no time)."""
    if t_s is None:
        return "--:--.---"
    ms = int(round(max(t_s, 0.0) * 1000))
    return f"{ms // 60000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one recording.

    Attributes
    ----------
    recording, check : str
    passed : bool
    t_s : float or None
        Where in the recording (the failing spot, or the worst one).
    measured, threshold : str
        What was measured, and what it was held against.
    applicable : bool
        False when the recording lacks what the check needs (e.g. an event log).
    """

    recording: str
    check: str
    passed: bool
    t_s: float | None
    measured: str
    threshold: str
    applicable: bool = True

    def line(self) -> str:
        """``recording:mm:ss.mmm: check: measured vs threshold``."""
        return f"{self.recording}:{clock_time(self.t_s)}: {self.check}: {self.measured} vs {self.threshold}"


def _fmt_s(x: float) -> str:
    return f"{x:.3f} s"


def check_recording(
    obs: Observation,
    *,
    thresholds: Thresholds,
    margins: Margins,
    expected_beats: int | None = None,
    baseline: dict[str, Any] | None = None,
    onset_tolerance_s: float = 0.05,
    max_gap_tolerance_s: float = 0.05,
    lossless_tolerance: float = 0.0,
    recorder_tolerance: float = 0.03,
    max_floor_disagreements: int = 0,
) -> list[CheckResult]:
    """Run every check on one recording.

    Returns
    -------
    list of CheckResult
        Failures first within each check, in the order of :data:`CHECKS`;
        a passing check gives one passing result.
    """
    name, trace, th = obs.name, obs.trace, thresholds
    out: list[CheckResult] = []

    def result(
        check: str,
        failures: list[tuple[float | None, str, str]],
        ok: tuple[float | None, str, str],
        applicable: bool = True,
    ) -> None:
        if failures:
            out.extend(CheckResult(name, check, False, t, m, thr) for t, m, thr in failures)
        else:
            out.append(CheckResult(name, check, True, ok[0], ok[1], ok[2], applicable))

    classes = classify_ticks(trace, labels=obs.labels, events=obs.events, speech_range_db=margins.speech_range_db)
    t = trace.t_s
    sil = np.where(classes.silence, trace.level, -1.0)
    k = int(np.argmax(sil)) if classes.silence.any() else None
    ceiling = float(trace.level[k]) if k is not None else 0.0
    fl = f"floor {th.floor:g}"
    result(
        "silence-ceiling",
        [(float(t[k]), f"silence at {ceiling:.5f}", fl)] if ceiling >= th.floor and k is not None else [],
        (None if k is None else float(t[k]), f"silence ceiling {ceiling:.5f}", fl),
    )
    need = th.floor * 10 ** (margins.floor_margin_db / 20)
    speech = trace.level[classes.speech]
    if speech.size:
        low = float(np.percentile(speech, margins.speech_percentile))
        quiet_ticks = np.flatnonzero(classes.speech & (trace.level < need))
        where = float(t[quiet_ticks[0]]) if quiet_ticks.size else None
        label = f"speech p{margins.speech_percentile:g} {low:.5f}"
        want = f"floor + {margins.floor_margin_db:g} dB = {need:.5f}"
        result("speech-level", [(where, label, want)] if low < need else [], (None, label, want))
    else:
        result("speech-level", [(None, "no speech ticks", f"floor {th.floor:g}")], (None, "", ""))

    _agreement_check(obs, lossless_tolerance, recorder_tolerance, max_floor_disagreements, result)
    if obs.events is None or not obs.events.terminals:
        for check in ("gap", "premature", "no-onset", "premature-risk", "logged-quiet", "beat-count", "baseline"):
            out.append(CheckResult(name, check, True, None, "no event log", "-", applicable=False))
        return out
    found = beats(trace, obs.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s)
    _beat_checks(found, th, margins, trace.tick_s, expected_beats, result)
    if baseline is None:
        out.append(CheckResult(name, "baseline", True, None, "no baseline entry", "-", applicable=False))
    else:
        result(
            "baseline",
            _baseline_failures(found, baseline, onset_tolerance_s, max_gap_tolerance_s),
            (None, "matches the baseline", f"±{onset_tolerance_s:g} s onsets, ±{max_gap_tolerance_s:g} s max gap"),
        )
    return out


def _agreement_check(obs: Observation, lossless: float, recorder: float, max_disagree: int, result: Any) -> None:
    a = obs.agreement
    if a is None or a.n_compared == 0:
        what = "no clock.level readings" if a is None else "no reading inside the recording"
        result("level-agreement", [], (None, what, "-"), False)
        return
    tolerance = lossless if a.start_exact else recorder
    kind = "lossless" if a.start_exact else "start uncertain"
    offset = f", offset {a.offset_s * 1000:+.1f} ms estimated" if a.offset_estimated else ""
    measured = f"{a.n_compared} readings ({kind}): p99 |diff| {a.p99_diff:.3g}, max {a.max_diff:.3g}{offset}"
    want = f"p99 <= {tolerance:g}" + (f", at most {max_disagree} across the floor" if a.start_exact else "")
    failures = []
    if (a.p99_diff or 0.0) > tolerance:
        failures.append((a.worst_s, measured, want))
    if a.start_exact and a.n_floor_disagree > max_disagree:
        failures.append(
            (a.first_floor_disagree_s, f"{a.n_floor_disagree} readings on the other side of floor {a.floor:g}", want)
        )
    result("level-agreement", failures, (a.worst_s, measured, want))


def check_corpus(
    observations: Sequence[Observation],
    *,
    thresholds: Thresholds,
    margins: Margins,
    baseline: dict[str, dict[str, Any]] | None = None,
    onset_tolerance_s: float = 0.05,
    max_gap_tolerance_s: float = 0.05,
    lossless_tolerance: float = 0.0,
    recorder_tolerance: float = 0.03,
    max_floor_disagreements: int = 0,
) -> list[CheckResult]:
    """:func:`check_recording` for each recording, its expected beat count from its ``meta["beats"]``."""
    out: list[CheckResult] = []
    for o in observations:
        out.extend(
            check_recording(
                o,
                thresholds=thresholds,
                margins=margins,
                expected_beats=o.meta.get("beats"),  # type: ignore[arg-type]
                baseline=(baseline or {}).get(o.name),
                onset_tolerance_s=onset_tolerance_s,
                max_gap_tolerance_s=max_gap_tolerance_s,
                lossless_tolerance=lossless_tolerance,
                recorder_tolerance=recorder_tolerance,
                max_floor_disagreements=max_floor_disagreements,
            )
        )
    return out


def _beat_checks(
    found: Sequence[Beat], th: Thresholds, margins: Margins, tick_s: float, expected: int | None, result: Any
) -> None:
    limit = th.quiet_s - margins.quiet_margin_s
    gaps = [(at, g) for b in found for at, g in zip(b.gap_at_s, b.quiet_gaps_s)]
    worst = max(gaps, key=lambda x: x[1], default=None)
    result(
        "gap",
        [
            (at, f"gap {_fmt_s(g)}", f"quiet {th.quiet_s:g} s - margin {margins.quiet_margin_s:g} s = {limit:.3f} s")
            for at, g in gaps
            if g >= limit - _EPS
        ],
        (None if worst is None else worst[0], f"longest gap {_fmt_s(worst[1]) if worst else 'none'}", f"{limit:.3f} s"),
    )
    result(
        "premature",
        [
            (b.quiet_declared_s, f"beat {b.index} declared quiet, then speech resumed", f"quiet {th.quiet_s:g} s")
            for b in found
            if b.premature
        ],
        (None, f"{len(found)} beats", "no premature end"),
    )
    result(
        "no-onset",
        [
            (b.terminal_s, f"beat {b.index}: no speech within the timeout", f"onset timeout {th.onset_timeout_s:g} s")
            for b in found
            if b.no_onset
        ],
        (None, f"{len(found)} beats", "an onset in every beat"),
    )
    result(
        "premature-risk",
        [
            (
                b.ack_last_word_s,
                f"beat {b.index}: acknowledgment silence {_fmt_s(b.ack_silence_s or 0)}",
                f"quiet {th.quiet_s:g} s",
            )
            for b in found
            if b.premature_risk
        ],
        (None, f"{sum(b.ack_overlap for b in found)} acknowledgments", "silence below the quiet time"),
    )
    logged = [b for b in found if b.replay_vs_logged_s is not None]
    result(
        "logged-quiet",
        [
            (
                b.logged_quiet_s,
                f"beat {b.index}: replay {b.replay_vs_logged_s:+.3f} s from logged",
                f"one tick ({tick_s:.4f} s)",
            )
            for b in logged
            if abs(b.replay_vs_logged_s or 0.0) > tick_s + _LOG_RESOLUTION_S
        ],
        (None, f"{len(logged)} logged decisions", f"within one tick ({tick_s:.4f} s)"),
        bool(logged),
    )
    if expected is not None:
        result(
            "beat-count",
            [(None, f"{len(found)} beats", f"{expected} expected")] if len(found) != expected else [],
            (None, f"{len(found)} beats", f"{expected} expected"),
        )
    else:
        result("beat-count", [], (None, f"{len(found)} beats", "no expected count in the config"), False)


def baseline_entry(found: Sequence[Beat]) -> dict[str, Any]:
    """What the baseline records for a recording."""
    gaps = [g for b in found for g in b.quiet_gaps_s]
    return {
        "beats": len(found),
        "onsets_s": [None if b.onset_s is None else round(b.onset_s, 6) for b in found],
        "max_gap_s": round(max(gaps), 6) if gaps else None,
    }


def _baseline_failures(
    found: Sequence[Beat], base: dict[str, Any], onset_tol: float, gap_tol: float
) -> list[tuple[float | None, str, str]]:
    now = baseline_entry(found)
    fails: list[tuple[float | None, str, str]] = []
    if now["beats"] != base.get("beats"):
        fails.append((None, f"{now['beats']} beats", f"baseline {base.get('beats')}"))
    for i, (a, b) in enumerate(zip(now["onsets_s"], base.get("onsets_s", []))):
        if (a is None) != (b is None) or (a is not None and abs(a - b) > onset_tol + _EPS):
            fails.append((a, f"beat {i} onset {a}", f"baseline {b} ± {onset_tol:g} s"))
    a, b = now["max_gap_s"], base.get("max_gap_s")
    if (a is None) != (b is None) or (a is not None and abs(a - b) > gap_tol + _EPS):
        fails.append((None, f"max gap {a}", f"baseline {b} ± {gap_tol:g} s"))
    return fails
