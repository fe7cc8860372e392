"""Regression checks of committed thresholds against recordings.

Pure numpy. Each check of each recording gives one :class:`CheckResult`;
a failure renders as one line ``recording:mm:ss.mmm: check: detail vs
expected``, and carries the same as numbers (``measured``, ``threshold``,
``unit``).

Checks
------
``noise-level``
    The recording's noise (the 99th percentile of its silence ticks, away
    from speech) is below the floor. A recording whose noise reaches its
    speech fails with a plain sentence: a level-floor clock cannot work on it.
``speech-level``
    The low speech percentile (``margins.speech_percentile``) is above the
    floor by ``margins.floor_margin_db``.
``gap``
    Every narration gap, counting only unpaused time, is shorter than
    ``quiet_s - margins.quiet_margin_s`` (one failure per gap).
``premature``, ``stalled``, ``missed-onset``, ``premature-risk``
    The replayed clock never ends a beat while the guide is still talking,
    always declares quiet before the beat's bound (the next prompt, terminal
    response, ``end`` or the end of the recording), always hears an onset
    within the timeout, and no acknowledgment's silence reaches the quiet
    time. A beat the page ended (``end``) while the guide was still speaking
    is ``aborted``: not a stall, and not a failure.
``no-speech``
    The guide spoke in every beat: a terminal response followed by no speech
    before the beat's bound fails, at the terminal response's time.
``logged-quiet``
    The replay's decision is within one tick of the page's ``clock.quiet``
    (plus 1 ms, the resolution a page's ``performance.now()`` log keeps).
    Compared only at the setting the page ran (``page_thresholds``, or the
    ``floor``, ``quiet_s`` and ``onset_timeout_s`` of the log's ``session``
    line); for another setting it is not applicable, and says why.
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
(:func:`clock.core.derive.recording_levels`), never with the floor under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .beats import Beat, beats
from .derive import NOISE_PERCENTILE, Margins, Observation, recording_levels
from .thresholds import Thresholds
from .times import clock_time

__all__ = [
    "CHECKS",
    "CheckCase",
    "CheckCounts",
    "CheckResult",
    "baseline_entry",
    "check_cases",
    "check_corpus",
    "check_counts",
    "check_recording",
]

CHECKS = (
    "noise-level",
    "speech-level",
    "gap",
    "premature",
    "stalled",
    "missed-onset",
    "no-speech",
    "premature-risk",
    "logged-quiet",
    "level-agreement",
    "beat-count",
    "baseline",
)

#: The checks that read the recording alone; the others need an event log with terminal responses.
_AUDIO_CHECKS = ("noise-level", "speech-level", "level-agreement")

_EPS = 1e-9
_LOG_RESOLUTION_S = 0.001


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one recording.

    Attributes
    ----------
    recording, check : str
    passed : bool
    t_s : float or None
        Where in the recording (the failing spot, or the worst one).
    detail, expected : str
        What was measured and what it was held against, in words (the line).
    measured, threshold : float or None
        The same as numbers, in ``unit``, for charts and trends.
    unit : str
        ``"RMS"``, ``"s"``, ``"beats"`` or ``"readings"``.
    applicable : bool
        False when the recording lacks what the check needs (e.g. an event log).
    """

    recording: str
    check: str
    passed: bool
    t_s: float | None
    detail: str
    expected: str
    measured: float | None = None
    threshold: float | None = None
    unit: str = ""
    applicable: bool = True

    def line(self) -> str:
        """``recording:mm:ss.mmm: check: detail vs expected``."""
        return f"{self.recording}:{clock_time(self.t_s)}: {self.check}: {self.detail} vs {self.expected}"


@dataclass(frozen=True, slots=True)
class CheckCase:
    """One check of one recording, and every result it gave.

    A check that fails gives one result per failure (one line each); one
    that holds or does not apply gives one result. Every view (text, JSON,
    JUnit, GitHub annotations, the report) counts cases, so its counts agree.

    Attributes
    ----------
    recording, check : str
    results : tuple of CheckResult
    """

    recording: str
    check: str
    results: tuple[CheckResult, ...]

    @property
    def status(self) -> str:
        """``"failed"``, ``"not applicable"`` or ``"passed"``."""
        if any(not r.passed for r in self.results):
            return "failed"
        return "not applicable" if all(not r.applicable for r in self.results) else "passed"

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The failing results (one line each)."""
        return tuple(r for r in self.results if not r.passed)


@dataclass(frozen=True, slots=True)
class CheckCounts:
    """What a list of results counts: checks (one per recording and check) by status, and failure lines.

    Attributes
    ----------
    recordings : int
    checks : int
        ``passed + failed + not_applicable``.
    passed, failed, not_applicable : int
        Checks by status.
    failures : int
        Failing results: the lines ``check`` prints, at least ``failed``.
    """

    recordings: int
    checks: int
    passed: int
    failed: int
    not_applicable: int
    failures: int


def check_cases(results: Sequence[CheckResult]) -> list[CheckCase]:
    """The results grouped by (recording, check), in the order they first come."""
    cases: dict[tuple[str, str], list[CheckResult]] = {}
    for r in results:
        cases.setdefault((r.recording, r.check), []).append(r)
    return [CheckCase(rec, check, tuple(rs)) for (rec, check), rs in cases.items()]


def check_counts(results: Sequence[CheckResult]) -> CheckCounts:
    """The counts every view of ``results`` gives."""
    cases = check_cases(results)
    status = [c.status for c in cases]
    return CheckCounts(
        recordings=len({r.recording for r in results}),
        checks=len(cases),
        passed=status.count("passed"),
        failed=status.count("failed"),
        not_applicable=status.count("not applicable"),
        failures=sum(not r.passed for r in results),
    )


@dataclass(frozen=True, slots=True)
class _Finding:
    """What a check found at one spot (a failure, or the passing summary)."""

    t_s: float | None
    detail: str
    expected: str
    measured: float | None = None
    threshold: float | None = None
    unit: str = ""


def _plural(n: int, noun: str) -> str:
    """``1 beat``, ``2 beats``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
    page_thresholds: Thresholds | None = None,
) -> list[CheckResult]:
    """Run every check on one recording.

    ``page_thresholds`` is the setting the page ran when it logged its
    decisions (the committed one); ``logged-quiet`` compares the replay with
    the log only at that setting (the log's ``session`` line, when it gives
    the setting, decides over it).

    Returns
    -------
    list of CheckResult
        Failures first within each check, in the order of :data:`CHECKS`;
        a passing check gives one passing result.
    """
    name, trace, th = obs.name, obs.trace, thresholds
    out: list[CheckResult] = []

    def result(check: str, failures: Sequence[_Finding], ok: _Finding, applicable: bool = True) -> None:
        found = [(f, False) for f in failures] or [(ok, True)]
        out.extend(
            CheckResult(
                name,
                check,
                passed,
                f.t_s,
                f.detail,
                f.expected,
                f.measured,
                f.threshold,
                f.unit,
                applicable or not passed,
            )
            for f, passed in found
        )

    rec, classes = recording_levels(obs, margins)
    fl = f"floor {th.floor:g}"
    noise_label = f"noise p{NOISE_PERCENTILE:g}"
    if rec.noise_high is None:
        result("noise-level", [], _Finding(None, "no silence ticks", fl, None, th.floor, "RMS"), False)
    elif rec.window is None and rec.speech_low is not None:
        detail = (
            f"{noise_label} {rec.noise_high:.5f} within {margins.floor_margin_db:g} dB of speech "
            f"p{margins.speech_percentile:g} {rec.speech_low:.5f}: a level-floor clock cannot work on this recording"
        )
        result(
            "noise-level",
            [_Finding(rec.noise_loudest_s, detail, fl, rec.noise_high, th.floor, "RMS")],
            _Finding(None, "", ""),
        )
    else:
        noise = rec.noise_high
        finding = _Finding(rec.noise_loudest_s, f"{noise_label} {noise:.5f}", fl, noise, th.floor, "RMS")
        result("noise-level", [finding] if noise >= th.floor else [], replace(finding, t_s=None))
    need = th.floor * 10 ** (margins.floor_margin_db / 20)
    want = f"floor + {margins.floor_margin_db:g} dB = {need:.5f}"
    if rec.speech_low is not None:
        low = rec.speech_low
        quiet_ticks = np.flatnonzero(classes.speech & (trace.level < need))
        where = float(trace.t_s[quiet_ticks[0]]) if quiet_ticks.size else None
        finding = _Finding(where, f"speech p{margins.speech_percentile:g} {low:.5f}", want, low, need, "RMS")
        result("speech-level", [finding] if low < need else [], replace(finding, t_s=None))
    else:
        result("speech-level", [_Finding(None, "no speech ticks", want, None, need, "RMS")], _Finding(None, "", ""))

    _agreement_check(obs, lossless_tolerance, recorder_tolerance, max_floor_disagreements, result)
    if obs.events is None or not obs.events.terminals:
        for check in (c for c in CHECKS if c not in _AUDIO_CHECKS):
            out.append(CheckResult(name, check, True, None, "no event log", "-", applicable=False))
        return out
    found = beats(trace, obs.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s)
    page = _page_setting(obs, page_thresholds)
    _beat_checks(found, th, margins, trace.tick_s, expected_beats, result, page)
    if baseline is None:
        out.append(CheckResult(name, "baseline", True, None, "no baseline entry", "-", applicable=False))
    else:
        result(
            "baseline",
            _baseline_failures(found, baseline, onset_tolerance_s, max_gap_tolerance_s),
            _Finding(
                None, "matches the baseline", f"±{onset_tolerance_s:g} s onsets, ±{max_gap_tolerance_s:g} s max gap"
            ),
        )
    return out


def _agreement_check(obs: Observation, lossless: float, recorder: float, max_disagree: int, result: Any) -> None:
    a = obs.agreement
    if a is None or a.n_compared == 0:
        what = "no clock.level readings" if a is None else "no reading inside the recording"
        result("level-agreement", [], _Finding(None, what, "-"), False)
        return
    tolerance = lossless if a.start_exact else recorder
    kind = "lossless" if a.start_exact else "start uncertain"
    offset = f", offset {a.offset_s * 1000:+.1f} ms estimated" if a.offset_estimated else ""
    detail = f"{a.n_compared} readings ({kind}): p99 |diff| {a.p99_diff:.3g}, max {a.max_diff:.3g}{offset}"
    want = f"p99 <= {tolerance:g}" + (f", at most {max_disagree} across the floor" if a.start_exact else "")
    summary = _Finding(a.worst_s, detail, want, a.p99_diff, tolerance, "RMS")
    failures = []
    if (a.p99_diff or 0.0) > tolerance:
        failures.append(summary)
    if a.start_exact and a.n_floor_disagree > max_disagree:
        failures.append(
            _Finding(
                a.first_floor_disagree_s,
                f"{a.n_floor_disagree} readings on the other side of floor {a.floor:g}",
                want,
                a.n_floor_disagree,
                max_disagree,
                "readings",
            )
        )
    result("level-agreement", failures, summary)


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
    page_thresholds: Thresholds | None = None,
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
                page_thresholds=page_thresholds,
            )
        )
    return out


_SETTING = ("floor", "quiet_s", "onset_timeout_s")


def _page_setting(obs: Observation, given: Thresholds | None) -> tuple[float, float, float] | None:
    """(floor, quiet_s, onset_timeout_s) the page ran: its log's ``session`` line if it says, else ``given``."""
    session = obs.events.session if obs.events is not None else {}
    said = [session.get(k) for k in _SETTING]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in said):
        return (float(said[0]), float(said[1]), float(said[2]))  # type: ignore[arg-type]
    if given is None:
        return None
    return given.floor, given.quiet_s, given.onset_timeout_s


def _beat_checks(
    found: Sequence[Beat],
    th: Thresholds,
    margins: Margins,
    tick_s: float,
    expected: int | None,
    result: Any,
    page: tuple[float, float, float] | None = None,
) -> None:
    limit = th.quiet_s - margins.quiet_margin_s
    q = f"quiet {th.quiet_s:g} s"
    gaps = [(at, g) for b in found for at, g in zip(b.gap_at_s, b.quiet_gaps_s)]
    worst = max(gaps, key=lambda x: x[1], default=None)
    result(
        "gap",
        [
            _Finding(
                at, f"gap {_fmt_s(g)}", f"{q} - margin {margins.quiet_margin_s:g} s = {limit:.3f} s", g, limit, "s"
            )
            for at, g in gaps
            if g >= limit - _EPS
        ],
        _Finding(
            None if worst is None else worst[0],
            f"longest gap {_fmt_s(worst[1]) if worst else 'none'}",
            f"{limit:.3f} s",
            None if worst is None else worst[1],
            limit,
            "s",
        ),
    )
    n = len(found)
    result(
        "premature",
        [
            _Finding(b.quiet_declared_s, f"beat {b.index + 1} declared quiet, then speech resumed", q, 1, 0, "beats")
            for b in found
            if b.premature
        ],
        _Finding(None, f"{n} beats", "no premature end", 0, 0, "beats"),
    )
    rooms = [b for b in found if b.replay.last_word_s is not None and not b.aborted]
    n_aborted = sum(b.aborted for b in found)
    aborted = f" ({n_aborted} aborted by the page's end while the guide spoke)" if n_aborted else ""
    spoken = [b for b in found if b.outcome not in ("silent", "unheard")]
    result(
        "stalled",
        [
            _Finding(
                b.last_word_s,
                f"beat {b.index + 1}: quiet not declared before the {b.bound} at {b.span_end_s:.3f} s",
                q,
                None if b.last_word_s is None else b.span_end_s - b.last_word_s,
                th.quiet_s,
                "s",
            )
            for b in found
            if b.stalled
        ],
        _Finding(
            None,
            f"{n} beats{aborted}",
            "quiet declared in every beat the page did not end" if n_aborted else "quiet declared in every beat",
            min((b.span_end_s - (b.last_word_s or b.span_end_s) for b in rooms), default=None),
            th.quiet_s,
            "s",
        ),
    )
    result(
        "missed-onset",
        [
            _Finding(
                b.terminal_s,
                f"beat {b.index + 1}: the guide spoke after the timeout",
                f"onset timeout {th.onset_timeout_s:g} s",
                b.onset_latency_s,
                th.onset_timeout_s,
                "s",
            )
            for b in found
            if b.missed_onset
        ],
        _Finding(
            None,
            f"{_plural(len(spoken), 'beat')} with speech",
            "an onset within the timeout in each",
            max((b.onset_latency_s for b in found if b.onset_latency_s is not None), default=None),
            th.onset_timeout_s,
            "s",
        ),
    )
    silent = [b for b in found if b.outcome == "silent"]
    result(
        "no-speech",
        [
            _Finding(
                b.terminal_s,
                f"beat {b.index + 1}: no speech after the terminal response "
                f"before the {b.bound} at {b.span_end_s:.3f} s",
                f"floor {th.floor:g}",
                0,
                1,
                "beats",
            )
            for b in silent
        ],
        _Finding(None, f"{n} beats", "speech in every beat", 0, 0, "beats"),
    )
    acks = [b for b in found if b.ack_silence_s is not None]
    result(
        "premature-risk",
        [
            _Finding(
                b.ack_last_word_s,
                f"beat {b.index + 1}: acknowledgment silence {_fmt_s(b.ack_silence_s or 0)}",
                q,
                b.ack_silence_s,
                th.quiet_s,
                "s",
            )
            for b in found
            if b.premature_risk
        ],
        _Finding(
            None,
            f"{sum(b.ack_overlap for b in found)} acknowledgments",
            "silence below the quiet time",
            max((b.ack_silence_s or 0.0 for b in acks), default=None),
            th.quiet_s,
            "s",
        ),
    )
    logged = [b for b in found if b.replay_vs_logged_s is not None]
    allowed = tick_s + _LOG_RESOLUTION_S
    here = (th.floor, th.quiet_s, th.onset_timeout_s)
    if logged and page is not None and any(abs(a - b) > _EPS for a, b in zip(here, page)):
        ran = f"floor {page[0]:g}, quiet {page[1]:g} s, onset timeout {page[2]:g} s"
        result(
            "logged-quiet",
            [],
            _Finding(
                None,
                f"{_plural(len(logged), 'logged decision')} made at the page's setting, {ran}, not at this one",
                "compared only at that setting, not at this one",
            ),
            False,
        )
    else:
        _logged_quiet(logged, tick_s, allowed, result)
    if expected is not None:
        finding = _Finding(None, f"{n} beats", f"{expected} expected", n, expected, "beats")
        result("beat-count", [finding] if n != expected else [], finding)
    else:
        result(
            "beat-count", [], _Finding(None, f"{n} beats", "no expected count in the config", n, None, "beats"), False
        )


def _logged_quiet(logged: Sequence[Beat], tick_s: float, allowed: float, result: Any) -> None:
    """The replay's decisions against the page's ``clock.quiet``, at the setting the page ran."""
    result(
        "logged-quiet",
        [
            _Finding(
                b.logged_quiet_s,
                f"beat {b.index + 1}: replay {b.replay_vs_logged_s:+.3f} s from logged",
                f"one tick ({tick_s:.4f} s)",
                abs(b.replay_vs_logged_s or 0.0),
                allowed,
                "s",
            )
            for b in logged
            if abs(b.replay_vs_logged_s or 0.0) > allowed
        ],
        _Finding(
            None,
            f"{len(logged)} logged decisions",
            f"within one tick ({tick_s:.4f} s)",
            max((abs(b.replay_vs_logged_s or 0.0) for b in logged), default=None),
            allowed,
            "s",
        ),
        bool(logged),
    )


def baseline_entry(found: Sequence[Beat]) -> dict[str, Any]:
    """What the baseline records for a recording."""
    gaps = [g for b in found for g in b.quiet_gaps_s]
    return {
        "beats": len(found),
        "onsets_s": [None if b.onset_s is None else round(b.onset_s, 6) for b in found],
        "max_gap_s": round(max(gaps), 6) if gaps else None,
    }


def _baseline_failures(found: Sequence[Beat], base: dict[str, Any], onset_tol: float, gap_tol: float) -> list[_Finding]:
    now = baseline_entry(found)
    fails: list[_Finding] = []
    if now["beats"] != base.get("beats"):
        fails.append(
            _Finding(
                None, f"{now['beats']} beats", f"baseline {base.get('beats')}", now["beats"], base.get("beats"), "beats"
            )
        )
    for i, (a, b) in enumerate(zip(now["onsets_s"], base.get("onsets_s", []))):
        if (a is None) != (b is None) or (a is not None and abs(a - b) > onset_tol + _EPS):
            fails.append(_Finding(a, f"beat {i + 1} onset {a}", f"baseline {b} ± {onset_tol:g} s", a, b, "s"))
    a, b = now["max_gap_s"], base.get("max_gap_s")
    if (a is None) != (b is None) or (a is not None and abs(a - b) > gap_tol + _EPS):
        fails.append(_Finding(None, f"max gap {a}", f"baseline {b} ± {gap_tol:g} s", a, b, "s"))
    return fails
