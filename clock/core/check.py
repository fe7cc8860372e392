"""Regression checks of committed thresholds against recordings.

Pure numpy. Each check of each recording gives one :class:`CheckResult`;
a failure renders as one line ``recording:mm:ss.mmm: check: detail vs
expected``, and carries the same as numbers (``measured``, ``threshold``,
``unit``).

Checks
------
``noise-level``
    The recording's noise (the 99th percentile of its silence ticks, away
    from speech) is below the floor.
``speech-level``
    The low speech percentile (``margins.speech_percentile``) is above the
    floor by ``margins.floor_margin_db``.

    The percentiles are evidence; the verdict of both is the replay's. Where
    a percentile crosses the floor on a recording with beats, the check fails
    only when the replay at the setting fails a beat of it, and its line names
    that beat and what happened; where the replay ends every beat right, it
    passes with a note that says how much quieter the voice (speech level) or
    louder the recording (noise level) may get before a beat fails, and which
    (the floor scaled by that gain, replayed). A recording whose noise reaches
    within ``floor_margin_db`` of its speech is one a level-floor clock
    "cannot work" on only when no replayed floor (a ladder about 1 dB apart
    from its noise to its speech, every quiet time) ends its beats right.
    Without an event log there is no replay, and the percentile decides.
``gap``
    Every narration gap, counting only unpaused time, is shorter than
    ``quiet_s - margins.quiet_margin_s`` (one failure per gap), unless no
    quiet time could keep that margin: where the quiet times that end every
    beat right at the floor (the replay's ``need < q <= room`` over the
    recordings checked together, :meth:`clock.core.beats.FloorAnalysis.quiet_range`)
    span less than twice the margin, and ``quiet_s`` lies inside them at
    least as far above ``need`` as their centre (less one tick), a gap
    within the margin passes with a note that states the shortfall and
    both edges. A gap within the margin where a wider run could have held
    it, or where the quiet time sits below the centre, still fails
    (:func:`clock.core.recommend.quiet.gap_margin_waived`, which ``derive``'s
    margin warning reads too).
``premature``, ``stalled``, ``outpaced``, ``missed-onset``, ``premature-risk``
    The replayed clock never ends a beat while the guide is still talking,
    always declares quiet before the beat's bound (the next prompt, terminal
    response or the end of the recording), declares it before the page's
    ``end`` when the guide had finished (else the beat is ``outpaced``: the
    visitor was faster than the clock), always hears an onset within the
    timeout, and no acknowledgment's silence reaches the quiet time. A beat
    the page ended (``end``) while the guide was still speaking is
    ``aborted``: not a failure. ``P``, the longest narration pause that tells
    the two apart, is taken over every recording checked together
    (:func:`clock.core.beats.narration_pause_s` at the floor).
``dead-air``
    No beat the replay ends right waits longer than ``max_dead_air_s`` (of
    ``[thresholds]``) from its last word to the clock's declaration (one
    failure per beat). Without that key the check does not apply, and says
    what the recording's beats wait: the median, p95 and max, and the tour's
    sum.
``no-speech``
    The guide spoke in every beat: a terminal response followed by no speech
    before the beat's bound fails, at the terminal response's time.
``logged-quiet``
    The replay's decision is within one tick of the page's ``clock.quiet``
    (plus 1 ms, the resolution a page's ``performance.now()`` log keeps), and,
    where the page logged its levels (``clock.level``: its own ticks), the
    longest interval between them in the beat: the page decides on its own
    ticks, the replay on the recording's regular grid.
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
    As many beats as the config's ``beats`` for the recording. Nothing
    checked is not a pass: a recording without an event log, or whose log
    has no terminal response (no beats), fails it with one line naming what
    it lacks, unless its ``[recordings."NAME"]`` says it has none
    (``log = false``: no log expected; ``beats = 0``: no beats expected).
    A recording with no speech fails ``speech-level`` likewise unless it
    says ``speech = false``.
``baseline``
    No drift from the committed baseline: beat count, onsets and the longest
    gap within tolerances.

Speech and silence ticks are told apart as ``derive`` does
(:func:`clock.core.recommend.windows.recording_levels`), never with the floor under test.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .beats import (
    ABORTED,
    FAILURES,
    LEVEL,
    OUTCOMES,
    OUTPACED,
    PREMATURE,
    Beat,
    aborted_line,
    analyse,
    beats,
    decide_quiets,
    heard,
    outpaced_line,
)
from .events import EventLog
from .model import EPS_S, Margins, Observation
from .recommend.quiet import gap_margin_waived
from .recommend.replay import floor_that_works, level_failures
from .recommend.windows import NOISE_PERCENTILE, recording_levels
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
    "in_time_order",
    "logged_setting",
]

CHECKS = (
    "noise-level",
    "speech-level",
    "gap",
    "premature",
    "stalled",
    "outpaced",
    "missed-onset",
    "no-speech",
    "premature-risk",
    "dead-air",
    "logged-quiet",
    "level-agreement",
    "beat-count",
    "baseline",
)

#: The checks that read the recording alone; the others need an event log with terminal responses.
_AUDIO_CHECKS = ("noise-level", "speech-level", "level-agreement")

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
    narration_pause_s: float | None = None,
    quiet_range_s: tuple[float, float] | None = None,
    align_log: bool = True,
) -> list[CheckResult]:
    """Run every check on one recording.

    ``align_log`` says whether the log was shifted by the offset its readings give where the recording's start
    is uncertain (the config's ``[agreement] align_log``); a failing ``logged-quiet`` line of an uncertain start
    that was not aligned names it.

    ``quiet_range_s`` is ``(need_s, room_s)`` of the recordings checked
    together at the floor (the quiet times that end all their beats right;
    default: this recording's own), which the ``gap`` check reads.

    ``page_thresholds`` is the setting the page ran when it logged its
    decisions (the committed one); ``logged-quiet`` compares the replay with
    the log only at that setting (the log's ``session`` line, when it gives
    the setting, decides over it). ``narration_pause_s`` is ``P`` of the
    recordings checked together (default: this recording's own).

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
    has_beats = obs.events is not None and bool(obs.events.terminals)
    found: Sequence[Beat] = []

    def replayed(rule: str = LEVEL, hangover_s: float | None = None) -> Sequence[Beat]:
        """The beats at the checked setting, the clock running ``rule``."""
        assert obs.events is not None
        return beats(
            trace,
            obs.events,
            floor=th.floor,
            quiet_s=th.quiet_s,
            onset_timeout_s=th.onset_timeout_s,
            narration_pause_s=narration_pause_s,
            rule=rule,
            hangover_s=hangover_s,
        )

    if has_beats:
        found = replayed()
    # The checks read the beats the clock saw a tick of: an unheard beat has no speech, gap or decision.
    seen = heard(found)
    replay = _LevelReplay(obs, th, found, seen, classes.speech) if has_beats else None
    fl = f"floor {th.floor:g}"
    noise_label = f"noise p{NOISE_PERCENTILE:g}"
    if rec.noise_high is None:
        result("noise-level", [], _Finding(None, "no silence ticks", fl, None, th.floor, "RMS"), False)
    elif rec.window is None and rec.speech_low is not None:
        evidence = (
            f"{noise_label} {_rms(rec.noise_high)} within {margins.floor_margin_db:g} dB of speech "
            f"p{margins.speech_percentile:g} {_rms(rec.speech_low)}"
        )
        finding = _Finding(rec.noise_loudest_s, evidence, fl, rec.noise_high, th.floor, "RMS")
        if replay is None:
            detail = f"{evidence} (no event log to replay: the percentiles decide)"
            result("noise-level", [replace(finding, detail=detail)], _Finding(None, "", ""))
        else:
            _level_verdict("noise-level", finding, replay, +1, result, hopeless=True)
    else:
        noise = rec.noise_high
        finding = _Finding(rec.noise_loudest_s, f"{noise_label} {_rms(noise)}", fl, noise, th.floor, "RMS")
        if noise < th.floor or replay is None:
            result("noise-level", [finding] if noise >= th.floor else [], replace(finding, t_s=None))
        else:
            _level_verdict("noise-level", finding, replay, +1, result)
    need = th.floor * 10 ** (margins.floor_margin_db / 20)
    want = f"floor + {margins.floor_margin_db:g} dB = {_rms(need)}"
    if rec.speech_low is not None:
        low = rec.speech_low
        quiet_ticks = np.flatnonzero(classes.speech & (trace.level < need))
        where = float(trace.t_s[quiet_ticks[0]]) if quiet_ticks.size else None
        finding = _Finding(where, f"speech p{margins.speech_percentile:g} {_rms(low)}", want, low, need, "RMS")
        if low >= need or replay is None:
            result("speech-level", [finding] if low < need else [], replace(finding, t_s=None))
        else:
            _level_verdict("speech-level", finding, replay, -1, result)
    elif obs.meta.get("speech") is False:
        said = "no speech, as the config says"
        out.append(CheckResult(name, "speech-level", True, None, said, "-", applicable=False))
    else:
        finding = _Finding(None, "no speech ticks", f"{want} (or speech = false in its [recordings] entry)", None, need)
        result("speech-level", [replace(finding, unit="RMS")], _Finding(None, "", ""))

    _agreement_check(obs, lossless_tolerance, recorder_tolerance, max_floor_disagreements, result)
    if not has_beats:
        stem = name.rsplit(".", 1)[0] if "." in name else name
        missing = "no event log" if obs.events is None else "no terminal response in its log"
        expected = obs.meta.get("log") is False if obs.events is None else obs.meta.get("beats") == 0
        key = "log = false" if obs.events is None else "beats = 0"
        for check in (c for c in CHECKS if c not in _AUDIO_CHECKS):
            if check == "beat-count" and not expected:  # nothing checked is not a pass
                want = f"beats to check (or {key} in its [recordings] entry)"
                why = f"no event log ({stem}.events.jsonl)" if obs.events is None else missing
                out.append(CheckResult(name, check, False, None, f"{why}: no beat checked", want, 0, None, "beats"))
            else:
                out.append(CheckResult(name, check, True, None, missing, "-", applicable=False))
        return out
    assert obs.events is not None
    page, known = _page_setting(obs, page_thresholds)
    here = (th.floor, th.quiet_s, th.onset_timeout_s)
    setting = obs.events.setting
    rule = (LEVEL, None) if setting is None else (setting.rule, setting.hangover_s)
    at_page = None
    if known and page is not None and (rule[0] != LEVEL or any(abs(a - b) > EPS_S for a, b in zip(here, page))):
        # The log says what the page ran: its decisions are held to the replay at that setting, with its rule.
        at_page = beats(
            trace,
            obs.events,
            floor=page[0],
            quiet_s=page[1],
            onset_timeout_s=page[2],
            narration_pause_s=narration_pause_s,
            rule=rule[0],
            hangover_s=rule[1],
        )
    # One tick: the longest interval between two ticks' times (frames over the rate; a tick reads at
    # a render-quantum boundary, so 1/60 s at 48 kHz is 768 or 896 frames).
    step_s = float(np.diff(trace.frames).max()) / trace.sample_rate_hz if trace.n_ticks > 1 else trace.tick_s
    if quiet_range_s is None:
        own = analyse(trace, obs.events, floor=th.floor)
        pause = own.narration_pause_s if narration_pause_s is None else narration_pause_s
        quiet_range_s = own.quiet_range(narration_pause_s=pause)[:2]
    # Dead air at the rule the page runs: the log's clock.setting's, else the config's ([thresholds] rule).
    dead_rule = rule if setting is not None else (th.rule, th.hangover_s)
    ruled = found if dead_rule[0] == LEVEL else replayed(*dead_rule)
    said = "the log's clock.setting" if setting is not None else "[thresholds]"
    _beat_checks(
        seen, len(found), th, margins, max(trace.tick_s, step_s), expected_beats, result, page, known, at_page,
        quiet_range_s, rule, (heard(ruled), _rule_label(dead_rule, th.quiet_s) + f" ({said})"),
        tuple(r.t_s for r in obs.events.readings) if obs.events is not None else (),
    )  # fmt: skip
    hint = _alignment_hint(obs, align_log)
    if hint:  # a logged decision off by the start's uncertainty: the line says what aligns it
        out[:] = [replace(r, detail=r.detail + hint) if r.check == "logged-quiet" and not r.passed else r for r in out]
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
    ahead = f", {a.n_ahead} of them one render quantum after their frame" if a.n_ahead else ""
    detail = f"{a.n_compared} readings ({kind}{ahead}): p99 |diff| {a.p99_diff:.3g}, max {a.max_diff:.3g}{offset}"
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
    align_log: bool = True,
) -> list[CheckResult]:
    """:func:`check_recording` for each recording, its expected beat count from its ``meta["beats"]``.

    Each beat is judged by its own recording: ``P`` (the longest narration
    pause, which tells an aborted beat from an outpaced one) is the
    recording's own; the ``gap`` check reads the quiet times that end every
    beat of all of them right.
    """
    out: list[CheckResult] = []
    analyses = [
        analyse(o.trace, o.events, floor=thresholds.floor)
        for o in observations
        if o.events is not None and o.events.terminals
    ]
    ranges = [a.quiet_range(narration_pause_s=a.narration_pause_s) for a in analyses]
    quiet_range = (
        max((r[0] for r in ranges), default=float("-inf")),
        min((r[1] for r in ranges), default=float("inf")),
    )
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
                quiet_range_s=quiet_range,
                align_log=align_log,
            )
        )
    return out


_SETTING = ("floor", "quiet_s", "onset_timeout_s")


def _page_setting(obs: Observation, given: Thresholds | None) -> tuple[tuple[float, float, float] | None, bool]:
    """(floor, quiet_s, onset_timeout_s) the page ran, and whether its log says so.

    The log's ``clock.setting`` line (speechclock.js writes it), else its ``session`` line's
    ``floor``, ``quiet_s`` and ``onset_timeout_s``; where it says neither, ``given`` (the
    committed setting, which the page may or may not have run), not known.
    """
    said = logged_setting(obs.events)
    if said is not None:
        return said, True
    if given is None:
        return None, False
    return (given.floor, given.quiet_s, given.onset_timeout_s), False


def logged_setting(log: EventLog | None) -> tuple[float, float, float] | None:
    """(floor, quiet_s, onset_timeout_s) the page ran as its log says: its ``clock.setting`` line (speechclock.js
    writes it), else its ``session`` line's ``floor``, ``quiet_s`` and ``onset_timeout_s``; None where it says
    neither. ``onset_timeout_s`` is ``inf`` where the page waited forever."""
    if log is not None and log.setting is not None:
        s = log.setting
        return s.floor, s.quiet_s, s.onset_timeout_s
    session = log.session if log is not None else {}
    said = [session.get(k) for k in _SETTING]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in said):
        return float(said[0]), float(said[1]), float(said[2])  # type: ignore[arg-type]
    return None


#: What a logged-quiet line says of a log that does not state its setting.
UNSAID = "the log does not say which setting the page ran"


def _beat_checks(
    found: Sequence[Beat],
    n: int,
    th: Thresholds,
    margins: Margins,
    tick_s: float,
    expected: int | None,
    result: Any,
    page: tuple[float, float, float] | None = None,
    known: bool = True,
    at_page: Sequence[Beat] | None = None,
    quiet_range: tuple[float, float] | None = None,
    rule: tuple[str, float | None] = (LEVEL, None),
    dead_air: tuple[Sequence[Beat], str] | None = None,
    page_ticks_s: Sequence[float] = (),
) -> None:
    margin = margins.quiet_margin_s
    limit = th.quiet_s - margin
    q = f"quiet {th.quiet_s:g} s"
    gaps = [(at, g) for b in found for at, g in zip(b.gap_at_s, b.quiet_gaps_s)]
    worst = max(gaps, key=lambda x: x[1], default=None)
    within = [(at, g) for at, g in gaps if g >= limit - EPS_S]
    ok = _Finding(
        None if worst is None else worst[0],
        f"longest gap {_fmt_s(worst[1]) if worst else 'none'}",
        f"{limit:.3f} s",
        None if worst is None else worst[1],
        limit,
        "s",
    )
    if within and quiet_range is not None:
        need, room = quiet_range
        if gap_margin_waived(th.quiet_s, need, room, margin_s=margin, tick_s=tick_s):
            # No quiet time keeps the margin on both sides: the replay bridges every gap and beats every bound.
            at, g = max(within, key=lambda x: x[1])
            note = (
                f"note: gap {_fmt_s(g)} is {th.quiet_s - g:.3f} s under the {q}, less than the margin {margin:g} s, "
                f"yet the quiet times that end every beat right span only {need:.3f} .. {room:.3f} s, narrower than "
                f"twice the margin, and {th.quiet_s:g} s is not more than a tick below their centre "
                f"({(need + room) / 2:.3f} s)"
            )
            within = []
            ok = replace(ok, t_s=at, detail=note)
    result(
        "gap",
        [
            _Finding(at, f"gap {_fmt_s(g)}", f"{q} - margin {margin:g} s = {limit:.3f} s", g, limit, "s")
            for at, g in within
        ],
        ok,
    )
    result(
        "premature",
        [
            _Finding(b.quiet_declared_s, f"beat {b.index + 1} declared quiet, then speech resumed", q, 1, 0, "beats")
            for b in found
            if b.outcome == PREMATURE
        ],
        _Finding(None, f"{n} beats", "no premature end", 0, 0, "beats"),
    )
    rooms = [b for b in found if b.replay.last_word_s is not None and b.bound != "end"]
    n_aborted = sum(b.aborted for b in found)
    aborted = f" ({n_aborted} ended by the visitor while the guide spoke)" if n_aborted else ""
    ended = [b for b in found if b.outcome in (ABORTED, OUTPACED)]
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
            "quiet declared in every beat the page did not end" if ended else "quiet declared in every beat",
            min((b.span_end_s - (b.last_word_s or b.span_end_s) for b in rooms), default=None),
            th.quiet_s,
            "s",
        ),
    )
    # A beat the visitor ended before the clock declared is the visitor's doing, never a failure: said, not failed.
    said = "".join(f"; beat {b.index + 1}: {aborted_line(b)}" for b in ended if b.aborted)
    said += "".join(f"; beat {b.index + 1}: {outpaced_line(b, th.quiet_s)}" for b in ended if b.outpaced)
    result(
        "outpaced",
        [],
        _Finding(
            None,
            f"{_plural(len(ended), 'beat')} the visitor ended{said}" if ended else "no beat the visitor ended",
            "the visitor's end is not the setting's doing",
            min((b.end_after_word_s for b in ended if not b.aborted and b.end_after_word_s is not None), default=None),
            th.quiet_s,
            "s",
        ),
        bool(ended),
    )
    result(
        "missed-onset",
        [
            _Finding(
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
        _Finding(
            None,
            f"{_plural(len(spoken), 'beat')} with speech",
            "an onset within the timeout in each",
            max(
                (b.onset_latency_s for b in found if b.onset_latency_s is not None and not b.after_early_end),
                default=None,
            ),  # fmt: skip
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
                f"beat {b.index + 1}: no speech after the terminal response before the {b.bound} "
                f"at {b.span_end_s:.3f} s",
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
    _dead_air_check(*(dead_air or (found, _rule_label((LEVEL, None), th.quiet_s))), th, result)
    logged = [b for b in found if b.replay_vs_logged_s is not None]
    allowed = tick_s + _LOG_RESOLUTION_S
    here = (th.floor, th.quiet_s, th.onset_timeout_s)
    if at_page is not None and page is not None:
        ran = f"floor {page[0]:g}, quiet {page[1]:g} s, onset timeout {page[2]:g} s"
        if rule[0] != LEVEL:
            ran += f", rule {rule[0]}" + ("" if rule[1] is None else f" with hangover {rule[1]:g} s")
        replayed = [b for b in heard(at_page) if b.replay_vs_logged_s is not None]
        _logged_quiet(replayed, tick_s, allowed, result, at=f"at the page's setting ({ran})", page_ticks_s=page_ticks_s)
    elif logged and page is not None and any(abs(a - b) > EPS_S for a, b in zip(here, page)):
        if known:
            ran = f"floor {page[0]:g}, quiet {page[1]:g} s, onset timeout {page[2]:g} s"
            made = f"{_plural(len(logged), 'logged decision')} made at the page's setting, {ran}, not at this one"
            want = "compared only at that setting, not at this one"
        else:
            made = f"{_plural(len(logged), 'logged decision')}; {UNSAID}"
            want = "compared only at the committed setting, not at this one"
        result("logged-quiet", [], _Finding(None, made, want), False)
    else:
        _logged_quiet(logged, tick_s, allowed, result, known=known, page_ticks_s=page_ticks_s)
    if expected is not None:
        finding = _Finding(None, f"{n} beats", f"{expected} expected", n, expected, "beats")
        result("beat-count", [finding] if n != expected else [], finding)
    else:
        result(
            "beat-count", [], _Finding(None, f"{n} beats", "no expected count in the config", n, None, "beats"), False
        )


def _rule_label(rule: tuple[str, float | None], quiet_s: float) -> str:
    """``rule level+stopped, hangover 0.25 s``: the rule a dead-air line was held at."""
    if rule[0] == LEVEL:
        return f"rule level, quiet {quiet_s:g} s"
    return f"rule {rule[0]}" + ("" if rule[1] is None else f", hangover {rule[1]:g} s")


def _dead_air_check(found: Sequence[Beat], rule: str, th: Thresholds, result: Any) -> None:
    """Each beat ended right against ``max_dead_air_s``: the unpaused wait from its last word to the declaration,
    at the rule the page runs (``rule`` says which, and where it was read)."""
    ended = [(b, b.dead_air_s) for b in found if b.outcome == "ok" and b.dead_air_s is not None]
    waits = np.array([x for _, x in ended], np.float64)
    if waits.size:
        summary = (
            f"dead air median {float(np.median(waits)):.3f} s, p95 {float(np.percentile(waits, 95)):.3f} s, "
            f"max {float(waits.max()):.3f} s over {_plural(waits.size, 'beat')} ended right, "
            f"{float(waits.sum()):.3f} s in the tour" + ("" if rule.startswith("rule level,") else f", at {rule}")
        )
    else:
        summary = "no beat ended right"
    worst = None if not waits.size else float(waits.max())
    limit = th.max_dead_air_s
    if limit is None:
        result(
            "dead-air",
            [],
            _Finding(None, f"no max_dead_air_s in [thresholds]; {summary}", "-", worst, None, "s"),
            False,
        )
        return
    want = f"max_dead_air_s {limit:g} s"
    result(
        "dead-air",
        [
            _Finding(
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
        _Finding(None, summary, want, worst, limit, "s"),
    )


def _page_tick_s(page_ticks_s: Sequence[float], b: Beat) -> float:
    """The longest interval between the page's own ticks (its ``clock.level`` readings) in a beat, up to its
    logged declaration: the page decides on its ticks, the replay on the recording's regular grid, so the page's
    last word and its declaration can each lie up to that interval from the replay's (0 without readings)."""
    if b.logged_quiet_s is None or len(page_ticks_s) < 2:
        return 0.0
    lo, hi = bisect_left(page_ticks_s, b.terminal_s), bisect_right(page_ticks_s, b.logged_quiet_s)
    near = page_ticks_s[max(lo - 1, 0) : min(hi + 1, len(page_ticks_s))]
    return max((y - x for x, y in zip(near, near[1:])), default=0.0)


def _rms(x: float) -> str:
    """A level in a line: five decimals, or three significant digits where five decimals would read as 0 (a
    level above digital silence is never said as 0)."""
    return f"{x:.5f}" if x == 0 or abs(x) >= 5e-6 else f"{x:.3g}"


def _logged_quiet(
    logged: Sequence[Beat],
    tick_s: float,
    allowed: float,
    result: Any,
    *,
    known: bool = True,
    at: str = "",
    page_ticks_s: Sequence[float] = (),
) -> None:
    """The replay's decisions against the page's ``clock.quiet``, at the setting the page ran.

    ``known``: the log says which setting that was; else a failing line says it does not (it
    was compared at the committed setting, which the page may not have run). Where the page logged its levels
    (its own ticks), one of its tick intervals in the beat is allowed besides the replay's tick
    (:func:`_page_tick_s`).
    """
    unsaid = (f" {at}" if at else "") + ("" if known else f" ({UNSAID})")
    ticks = sorted(page_ticks_s)
    bound = {b.index: allowed + _page_tick_s(ticks, b) for b in logged}
    result(
        "logged-quiet",
        [
            _Finding(
                b.logged_quiet_s,
                f"beat {b.index + 1}: replay {b.replay_vs_logged_s:+.3f} s from logged{unsaid}",
                f"one tick ({tick_s:.4f} s)" + (" and one of the page's" if bound[b.index] > allowed else ""),
                abs(b.replay_vs_logged_s or 0.0),
                bound[b.index],
                "s",
            )
            for b in logged
            if abs(b.replay_vs_logged_s or 0.0) > bound[b.index]
        ],
        _Finding(
            None,
            f"{len(logged)} logged decisions" + (f" {at}" if at else ""),
            f"within one tick ({tick_s:.4f} s)",
            max((abs(b.replay_vs_logged_s or 0.0) for b in logged), default=None),
            allowed,
            "s",
        ),
        bool(logged),
    )


def _alignment_hint(obs: Observation, align_log: bool) -> str:
    """What a failing logged-quiet line adds where the recording's start is uncertain and the log was not aligned:
    the config key that aligns it, or that the log holds no clock.level readings to align it by."""
    log, a = obs.events, obs.agreement
    if log is None:
        return ""
    exact = a.start_exact if a is not None else log.start is not None and log.start.capture == "worklet"
    if exact:
        return ""
    if a is not None and a.n_compared and a.offset_estimated:
        if align_log:
            return ""  # aligned already: the difference is the clock's
        return (
            "; the start is uncertain (MediaRecorder): align_log = true in [agreement] aligns the log by its readings"
        )
    if log.start is None or log.start.capture != "recorder":
        return ""  # the log does not say its start is uncertain
    return (
        "; the start is uncertain (MediaRecorder): log clock.level readings (docs/capture.md), and align_log = true "
        "in [agreement] aligns the log by them"
    )


def baseline_entry(found: Sequence[Beat]) -> dict[str, Any]:
    """What the baseline records for a recording."""
    seen = heard(found)  # an unheard beat has no onset and no gap
    gaps = [g for b in seen for g in b.quiet_gaps_s]
    onsets: list[float | None] = [None] * len(found)
    for b in seen:
        onsets[b.index] = None if b.onset_s is None else round(b.onset_s, 6)
    return {"beats": len(found), "onsets_s": onsets, "max_gap_s": round(max(gaps), 6) if gaps else None}


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
        if (a is None) != (b is None) or (a is not None and abs(a - b) > onset_tol + EPS_S):
            fails.append(_Finding(a, f"beat {i + 1} onset {a}", f"baseline {b} ± {onset_tol:g} s", a, b, "s"))
    a, b = now["max_gap_s"], base.get("max_gap_s")
    if (a is None) != (b is None) or (a is not None and abs(a - b) > gap_tol + EPS_S):
        fails.append(_Finding(None, f"max gap {a}", f"baseline {b} ± {gap_tol:g} s", a, b, "s"))
    return fails


#: How far (dB, in 1 dB steps) a level check's note looks for the gain that breaks a beat.
_GAIN_SEARCH_DB = 24


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


class _LevelReplay:
    """The replay behind a level check's verdict: at the setting, at the floor scaled by a gain, at any floor."""

    def __init__(
        self,
        obs: Observation,
        th: Thresholds,
        found: Sequence[Beat],
        seen: Sequence[Beat],
        speech: np.ndarray,
    ) -> None:
        self.obs, self.th, self.found, self.speech = obs, th, found, speech
        # The beats in which the guide speaks at the setting: one silent at another floor is lost there.
        self.speaking = np.zeros(len(found), bool)
        self.speaking[[b.index for b in seen if b.outcome != "silent"]] = True
        self.failing = level_failures(obs, speech, seen)

    def _fails(self, floor: float) -> tuple[int, str] | None:
        """The first beat the setting fails with the floor at ``floor`` (its index and outcome), or None."""
        assert self.obs.events is not None
        a = analyse(self.obs.trace, self.obs.events, floor=min(floor, 1.0))
        codes = decide_quiets(a, quiets_s=[self.th.quiet_s], onset_timeout_s=self.th.onset_timeout_s).outcome[:, 0]
        # A beat whose guide the changed level hides entirely is lost too (silent where it spoke).
        silent = codes == OUTCOMES.index("silent")
        lost = np.flatnonzero(np.isin(codes, [OUTCOMES.index(x) for x in FAILURES]) | (silent & self.speaking))
        if not lost.size:
            return None
        j = int(lost[0])
        return j, "silent (its speech under the floor)" if silent[j] else OUTCOMES[codes[j]]

    @property
    def spoke(self) -> list[bool]:
        """Where the guide spoke in each beat's span, as derive tells speech (without the floor)."""
        t = self.obs.trace.t_s
        return [bool(self.speech[slice(*np.searchsorted(t, [b.terminal_s, b.span_end_s]))].any()) for b in self.found]

    def breaking_gain(self, sign: int) -> tuple[int, int, str] | None:
        """The least gain (dB; ``sign`` -1 quieter, +1 louder) at which a beat fails: (dB, beat, outcome)."""
        for db in range(1, _GAIN_SEARCH_DB + 1):
            # The level scales with the gain: the floor scaled the other way replays the same decisions.
            found = self._fails(self.th.floor * 10 ** (-sign * db / 20))
            if found is not None:
                return db, found[0], found[1]
        return None

    def any_floor_works(self) -> tuple[float, float, float, int] | None:
        """A floor at which some quiet time ends every beat right (see
        :func:`clock.core.recommend.replay.floor_that_works`)."""
        return floor_that_works(self.obs, spoke=self.spoke, onset_timeout_s=self.th.onset_timeout_s)


def _level_verdict(
    check: str, finding: _Finding, replay: _LevelReplay, sign: int, result: Any, *, hopeless: bool = False
) -> None:
    """A level check whose percentile crosses the floor: the replay's verdict, with the percentile as evidence."""
    th = replay.th
    if replay.failing:
        b = replay.failing[0]
        more = f" (and {_plural(len(replay.failing) - 1, 'other beat')})" if len(replay.failing) > 1 else ""
        detail = f"beat {b.index + 1} {b.outcome}: {_what_failed(b, th.quiet_s)}{more}; {finding.detail}"
        if hopeless:
            works = replay.any_floor_works()
            if works is None:
                detail += "; no replayed floor ends its beats right: a level-floor clock cannot work on this recording"
            else:
                floor, need, room, _ = works
                upto = "" if room == float("inf") else f" and up to {room:.2f} s"
                detail += f"; at floor {floor:.2g} a quiet time above {need:.2f} s{upto} ends them right"
        result(
            check,
            [replace(finding, t_s=b.last_word_s if b.last_word_s is not None else b.terminal_s, detail=detail)],
            finding,
        )
        return
    breaks = replay.breaking_gain(sign)
    way = "louder" if sign > 0 else "quieter"
    if breaks is None:
        margin = f"{way} by up to {_GAIN_SEARCH_DB} dB it still does"
    else:
        db, beat, outcome = breaks
        scaled = th.floor * 10 ** (-sign * db / 20)
        margin = f"{db} dB {way} (the floor replayed at {scaled:.3g}), beat {beat + 1} is {outcome}"
    note = (
        f"note: {finding.detail} crosses the floor, yet the replay at this setting ends every beat right; "
        f"{'a voice' if sign < 0 else 'the recording'} {margin}"
    )
    result(check, [], replace(finding, t_s=None, detail=note))


def in_time_order(results: Sequence[CheckResult]) -> list[CheckResult]:
    """``results`` with each recording's in time order: recordings as they first appear, within one its
    recording-wide results (no time) first, then the timed ones by time; ties keep their order (stable).
    """
    first: dict[str, int] = {}
    for r in results:
        first.setdefault(r.recording, len(first))
    return sorted(results, key=lambda r: (first[r.recording], r.t_s is not None, r.t_s or 0.0))
