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
    recordings checked together, :meth:`clock.core.analysis.FloorAnalysis.quiet_range`)
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
    (:func:`clock.core.analysis.narration_pause_s` at the floor).
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

The table
---------
:data:`CHECK_TABLE` maps each check's name to the function that runs it, in the
order :func:`check_recording` runs them: the checks that read the levels
(:mod:`clock.core.check_levels`), then those that read the replayed beats
(:mod:`clock.core.check_beats`) and the page's log (:mod:`clock.core.check_log`).
Each reads one :class:`~clock.core.check_input.Checked` and gives one
:class:`~clock.core.check_input.Verdict`; this module turns verdicts into
:class:`CheckResult` lines and counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import check_beats, check_levels, check_log
from .analysis import analyse
from .beats import beats as replay_beats
from .beats import heard
from .check_input import BeatReplay, Checked, CheckOptions, Finding, LevelReplay, Verdict
from .model import Margins, Observation
from .recommend.windows import recording_levels
from .thresholds import Thresholds
from .times import clock_time

__all__ = [
    "CHECKS",
    "CHECK_TABLE",
    "CheckCase",
    "CheckCounts",
    "CheckResult",
    "check_cases",
    "check_corpus",
    "check_counts",
    "check_recording",
    "in_time_order",
]

#: Every check's name, in the order the module notes list them (results come in :data:`CHECK_TABLE`'s order).
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

#: One check: what it gives for one recording.
Check = Callable[[Checked], Verdict]

#: Each check by name, in the order :func:`check_recording` runs them (and lists their results).
CHECK_TABLE: dict[str, Check] = {
    "noise-level": check_levels.noise_level,
    "speech-level": check_levels.speech_level,
    "level-agreement": check_levels.level_agreement,
    "gap": check_beats.gap,
    "premature": check_beats.premature,
    "stalled": check_beats.stalled,
    "outpaced": check_beats.outpaced,
    "missed-onset": check_beats.missed_onset,
    "no-speech": check_beats.no_speech,
    "premature-risk": check_beats.premature_risk,
    "dead-air": check_beats.dead_air,
    "logged-quiet": check_log.logged_quiet,
    "beat-count": check_beats.beat_count,
    "baseline": check_beats.baseline,
}

#: The checks that read the recording alone; the others need an event log with terminal responses.
_AUDIO_CHECKS = ("noise-level", "speech-level", "level-agreement")


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
    """Run every check of :data:`CHECK_TABLE` on one recording.

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
        Failures first within each check, in the order of :data:`CHECK_TABLE`;
        a passing check gives one passing result.
    """
    options = CheckOptions(
        expected_beats=expected_beats,
        baseline=baseline,
        onset_tolerance_s=onset_tolerance_s,
        max_gap_tolerance_s=max_gap_tolerance_s,
        lossless_tolerance=lossless_tolerance,
        recorder_tolerance=recorder_tolerance,
        max_floor_disagreements=max_floor_disagreements,
        page_thresholds=page_thresholds,
        narration_pause_s=narration_pause_s,
        quiet_range_s=quiet_range_s,
        align_log=align_log,
    )
    c = _checked(obs, thresholds, margins, options)
    out: list[CheckResult] = []
    for name, check in CHECK_TABLE.items():
        verdict = check(c) if c.beat_replay is not None or name in _AUDIO_CHECKS else _nothing_to_check(c, name)
        out.extend(_results(obs.name, name, verdict))
    return out


def _checked(obs: Observation, th: Thresholds, margins: Margins, options: CheckOptions) -> Checked:
    """One recording as every check reads it: its levels, and its beats replayed at the setting where it has any."""
    rec, classes = recording_levels(obs, margins)
    if obs.events is None or not obs.events.terminals:
        return Checked(obs, th, margins, options, rec, classes.speech, None, None)
    trace = obs.trace
    found = replay_beats(
        trace,
        obs.events,
        floor=th.floor,
        quiet_s=th.quiet_s,
        onset_timeout_s=th.onset_timeout_s,
        narration_pause_s=options.narration_pause_s,
    )
    # The checks read the beats the clock saw a tick of: an unheard beat has no speech, gap or decision.
    seen = heard(found)
    # One tick: the longest interval between two ticks' times (frames over the rate; a tick reads at
    # a render-quantum boundary, so 1/60 s at 48 kHz is 768 or 896 frames).
    step_s = float(np.diff(trace.frames).max()) / trace.sample_rate_hz if trace.n_ticks > 1 else trace.tick_s
    return Checked(
        obs,
        th,
        margins,
        options,
        rec,
        classes.speech,
        LevelReplay(obs, th, found, seen, classes.speech),
        BeatReplay(obs.events, found, seen, max(trace.tick_s, step_s)),
    )


def _nothing_to_check(c: Checked, check: str) -> Verdict:
    """A check that needs beats, on a recording without any: not applicable where its config says it has none
    (``log = false``: no log expected; ``beats = 0``: no beats expected), else ``beat-count`` fails (nothing
    checked is not a pass), naming what it lacks."""
    obs = c.obs
    stem = obs.name.rsplit(".", 1)[0] if "." in obs.name else obs.name
    missing = "no event log" if obs.events is None else "no terminal response in its log"
    expected = obs.meta.get("log") is False if obs.events is None else obs.meta.get("beats") == 0
    if check == "beat-count" and not expected:
        key = "log = false" if obs.events is None else "beats = 0"
        want = f"beats to check (or {key} in its [recordings] entry)"
        why = f"no event log ({stem}.events.jsonl)" if obs.events is None else missing
        return Verdict([Finding(None, f"{why}: no beat checked", want, 0, None, "beats")], Finding(None, "", ""))
    return Verdict([], Finding(None, missing, "-"), False)


def _results(recording: str, check: str, verdict: Verdict) -> list[CheckResult]:
    """A verdict's lines: one failing result per failure, else one passing (or not applicable) result."""
    found = [(f, False) for f in verdict.failures] or [(verdict.ok, True)]
    return [
        CheckResult(
            recording,
            check,
            passed,
            f.t_s,
            f.detail,
            f.expected,
            f.measured,
            f.threshold,
            f.unit,
            verdict.applicable or not passed,
        )
        for f, passed in found
    ]


def check_corpus(
    observations: Sequence[Observation],
    *,
    thresholds: Thresholds,
    margins: Margins,
    baseline: dict[str, dict[str, Any]] | None = None,
    **options: Any,
) -> list[CheckResult]:
    """:func:`check_recording` for each recording, its expected beat count from its ``meta["beats"]``.

    Each beat is judged by its own recording: ``P`` (the longest narration
    pause, which tells an aborted beat from an outpaced one) is the
    recording's own; the ``gap`` check reads the quiet times that end every
    beat of all of them right. ``baseline`` holds each recording's entry by
    name; ``options`` are :func:`check_recording`'s other keyword options
    (its tolerances, ``page_thresholds``, ``align_log``), the same for every
    recording.
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
                quiet_range_s=quiet_range,
                **options,
            )
        )
    return out


def in_time_order(results: Sequence[CheckResult]) -> list[CheckResult]:
    """``results`` with each recording's in time order: recordings as they first appear, within one its
    recording-wide results (no time) first, then the timed ones by time; ties keep their order (stable).
    """
    first: dict[str, int] = {}
    for r in results:
        first.setdefault(r.recording, len(first))
    return sorted(results, key=lambda r: (first[r.recording], r.t_s is not None, r.t_s or 0.0))
