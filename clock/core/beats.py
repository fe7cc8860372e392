"""Beats: the listing of a recording's beats, each analysed and replayed (:func:`beats`, :class:`Beat`).

Pure numpy. Times are in seconds on the audio timeline.

A beat opens at a terminal response and spans until the next ``prompt``, terminal response or ``end`` (or the
end of the recording): :mod:`clock.core.spans`. What :func:`beats` lists of each one comes from:

* the analysis at the floor (:mod:`clock.core.analysis`, :mod:`clock.core.beat_analysis`): the onset, an
  overlapping acknowledgment, the narration's gaps, the last word, who caused the bound;
* the tick replay (:mod:`clock.core.replay`): where the clock declared the beat quiet, at the rule it runs;
* the provider's signals (:mod:`clock.core.provider`);
* the one judge (:mod:`clock.core.outcome`), which names each outcome: the setting's failures are
  ``premature``, ``stalled`` and ``missed-onset``; ``aborted``, ``outpaced``, ``superseded`` and
  ``recording-ended`` are not the setting's doing (:func:`outpaced_line`, :func:`aborted_line` say why).

``premature_risk``: an acknowledgment overlapped and the silence between
its last word and the narration's onset reaches the quiet time, so the
clock would end the beat before the narration started.
"""

from __future__ import annotations

import warnings
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..errors import SpeechClockWarning
from .analysis import FloorAnalysis, analyse
from .beat_analysis import BeatAnalysis
from .causes import UNKNOWN_CAUSE
from .decide import declare_moved, judge_declared
from .events import Event, EventLog
from .levels import LevelTrace
from .made import Made
from .model import EPS_S
from .outcome import (
    ABORTED,
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTPACED,
    PREMATURE,
    STALLED,
    UNHEARD,
)
from .pauses import PauseClock
from .provider import BeatStop, ProviderIndex, beat_stops
from .replay import ReplayBeat, replay_ticks
from .thresholds import (
    DEFAULT_ONSET_TIMEOUT_S,
    LEVEL,
)

__all__ = ["Beat", "BeatList", "aborted_line", "beats", "heard", "outpaced_line"]


@dataclass(frozen=True, slots=True)
class Beat:
    """One beat: the analysis of the recording and the replayed clock's decision.

    See the module notes for each field's meaning; ``None`` where a value
    does not apply. ``span_end_s`` is where the span ends and ``bound`` what
    ends it; ``rule_stopped_*`` the provider event a rule acts on in the beat
    (:class:`BeatStop`: its time and log line, whether it was assumed the
    beat's own for want of ids, and whether another response's may have been
    taken for it), beside ``provider_stopped_s``, the provider's own by id;
    ``dead_air_s`` the unpaused time from the last word to the declaration
    in a beat ended right (None elsewhere); ``outcome`` is one of :data:`clock.core.outcome.OUTCOMES`, from the replay.
    Where the page's ``end`` bounds the span, ``narration_pause_s`` is the
    ``P`` it was judged with and ``speech_at_end`` whether the level was
    above the floor at the end's tick (None and False elsewhere). ``cause``
    says who caused the bound (:data:`clock.core.causes.CAUSE_NAMES`): a bound the page caused
    moves with the replayed declaration; ``past_bound``, the guide spoke on
    past it, and the span ends after that speech; ``after_early_end``, the
    page declared the beat before it before its last word
    (:attr:`BeatAnalysis.after_early_end`).
    """

    index: int
    terminal_s: float
    span_end_s: float
    onset_s: float | None
    onset_latency_s: float | None
    ack_overlap: bool
    ack_last_word_s: float | None
    ack_silence_s: float | None
    last_word_s: float | None
    gaps_s: tuple[float, ...]
    gap_at_s: tuple[float, ...]
    quiet_gaps_s: tuple[float, ...]
    premature_risk: bool
    replay: ReplayBeat
    premature: bool
    logged_quiet_s: float | None
    linger_s: float | None
    bound: str = "recording end"
    stalled: bool = False
    missed_onset: bool = False
    outcome: str = "ok"
    response_id: str | None = None
    provider_stopped_s: float | None = None
    barge_in_s: float | None = None
    cleared_s: float | None = None
    narration_pause_s: float | None = None
    speech_at_end: bool = False
    cause: str = UNKNOWN_CAUSE
    past_bound: bool = False
    after_early_end: bool = False
    rule_stopped_s: float | None = None
    rule_stopped_line: int | None = None
    rule_stopped_assumed: bool = False
    rule_stopped_risk: bool = False
    dead_air_s: float | None = None

    @property
    def rule_stopped_vs_last_word_s(self) -> float | None:
        """The provider event a rule acts on in this beat (:func:`beat_stops`) minus the measured last word."""
        if self.rule_stopped_s is None or self.last_word_s is None:
            return None
        return self.rule_stopped_s - self.last_word_s

    @property
    def provider_stopped_vs_last_word_s(self) -> float | None:
        """The provider's ``output_audio_buffer.stopped`` minus the measured last word.

        Positive: the provider said its buffer stopped after the guide's last
        word reached the analyser. Whether that event could replace the
        clock is this number's spread over many beats.
        """
        if self.provider_stopped_s is None or self.last_word_s is None:
            return None
        return self.provider_stopped_s - self.last_word_s

    @property
    def aborted(self) -> bool:
        """The visitor ended the beat (a prompt or ``end``) while the guide was still speaking: not a failure."""
        return self.outcome == ABORTED

    @property
    def outpaced(self) -> bool:
        """The visitor ended the beat after the guide had finished, before the clock declared quiet: not a failure."""
        return self.outcome == OUTPACED

    @property
    def failed(self) -> bool:
        """One of :data:`FAILURES`."""
        return self.outcome in FAILURES

    @property
    def end_after_word_s(self) -> float | None:
        """The span's end minus the last word (None without speech)."""
        return None if self.last_word_s is None else self.span_end_s - self.last_word_s

    @property
    def cut(self) -> bool:
        """The beat was cut short: a barge-in, or the provider cleared its audio buffer."""
        return self.barge_in_s is not None or self.cleared_s is not None

    @property
    def quiet_declared_s(self) -> float | None:
        """When the replayed clock declared the beat over."""
        return self.replay.quiet_declared_s

    @property
    def no_onset(self) -> bool:
        """The replayed clock never saw speech within the onset timeout."""
        return self.replay.no_onset

    @property
    def added_latency_s(self) -> float | None:
        """``quiet_declared_s`` minus the last word the clock had seen then."""
        r = self.replay
        if r.quiet_declared_s is None or r.last_word_s is None:
            return None
        return r.quiet_declared_s - r.last_word_s

    @property
    def replay_vs_logged_s(self) -> float | None:
        """The replay's declaration minus the page's logged ``clock.quiet``."""
        if self.quiet_declared_s is None or self.logged_quiet_s is None:
            return None
        return self.quiet_declared_s - self.logged_quiet_s


class BeatList(Made[Beat]):
    """What :func:`beats` returns: one :class:`Beat` per terminal response, in time order, as a sequence.

    The beats with speech in the clock's life are objects; every other beat (unheard or silent) is made when
    read, so a log of a million superseded terminal responses costs arrays. :meth:`heard` lists the beats the
    clock saw a tick of.
    """

    __slots__ = ("_unheard",)

    def __init__(self, n: int, kept: dict[int, Beat], make: Callable[[int], Beat], unheard: NDArray[np.int64]) -> None:
        super().__init__(n, kept, make)
        self._unheard = unheard

    @property
    def n_unheard(self) -> int:
        """Beats the clock saw no tick of (superseded at once, or after the recording's end)."""
        return int(self._unheard.size)

    def heard(self) -> list[Beat]:
        """Every beat but the unheard ones, in order (their outcome is never ``unheard``)."""
        keep = np.ones(len(self), bool)
        keep[self._unheard] = False
        return [self[j] for j in np.flatnonzero(keep).tolist()]


def beats(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S,
    narration_pause_s: float | None = None,
    rule: str = LEVEL,
    hangover_s: float | None = None,
) -> BeatList:
    """Analyse each beat of a recording and replay the clock over it.

    Parameters
    ----------
    trace : LevelTrace
        The level at the clock's cadence.
    events : EventLog
        Must hold the terminal responses; see :mod:`clock.core.events`.
    floor : float
        Speech is ``level > floor``.
    quiet_s : float
        The quiet time that ends a beat.
    onset_timeout_s : float, optional
        How long the clock waits for speech (default: 10 s, as the command
        line; ``float("inf")`` waits forever).
    narration_pause_s : float, optional
        ``P``, the longest pause inside a narration of the recordings judged
        together at this floor (:func:`clock.core.analysis.narration_pause_s`): an ``end`` the
        clock waits past is ``aborted`` within it of the last word, else
        ``outpaced``. Default: this recording's own.
    rule, hangover_s : optional
        The rule the clock runs (see :func:`clock.core.replay.replay_ticks`; default: the level clock).

    Returns
    -------
    BeatList
        One :class:`Beat` per terminal response, in time order (a sequence;
        beats without speech in the clock's life are made when read).

    Warns
    -----
    SpeechClockWarning
        Events after the end of the recording, or before its start (one
        warning each).
    """
    played = replay_ticks(
        trace, events, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s, rule=rule, hangover_s=hangover_s
    ).beats
    analysis = analyse(trace, events, floor=floor)
    pause = analysis.narration_pause_s if narration_pause_s is None else float(narration_pause_s)
    t = analysis.t_s
    end_s = float(t[-1]) + trace.tick_s if trace.n_ticks else 0.0
    _warn_outside(events, end_s)
    listing = _Listing(
        analysis, played, events.terminals, quiet_s, onset_timeout_s, pause,
        [e.t_s for e in events.of_kind("clock.quiet")], ProviderIndex(events), PauseClock.from_events(events),
        beat_stops(events, analysis),
    )  # fmt: skip
    # The beats with speech in the clock's life are made now; every other beat (unheard or silent) when read.
    kept = {j: listing.beat(j) for j in analysis.active_beats().tolist()}
    unheard = analysis.unheard if analysis.unheard is not None else np.zeros(0, np.int64)
    return BeatList(len(events.terminals), kept, listing.beat, unheard)


def _time_at(t: NDArray[np.float64], k: int | None) -> float | None:
    """The time of tick ``k`` (None for no tick)."""
    return None if k is None else float(t[k])


def _narration_gaps(a: BeatAnalysis, t: NDArray[np.float64]) -> list[tuple[float, float]]:
    """The narration's gaps inside the span: (last word s, next speech s), from the onset on."""
    gaps = []
    if a.spoken and a.onset_tick is not None:  # (a beat without speech has no runs: nothing to visit)
        for w, e in zip(a.run_word[a.inner].tolist(), a.run_end[a.inner].tolist()):
            if w >= a.onset_tick:
                gaps.append((float(t[w]), float(t[e])))
    return gaps


@dataclass(frozen=True, slots=True)
class _Listing:
    """What :func:`beats` makes each :class:`Beat` from: the analysis at the floor, the replay, the log's terminal
    responses and its logged declarations, the provider's signals, and the setting judged."""

    analysis: FloorAnalysis
    played: Sequence[ReplayBeat]
    terminals: Sequence[Event]
    quiet_s: float
    onset_timeout_s: float
    pause_s: float
    logged: list[float]
    signals: ProviderIndex
    pauses: PauseClock
    stops: tuple[BeatStop, ...]

    def judged(self, a: BeatAnalysis, rb: ReplayBeat, term: Event) -> tuple[str, ReplayBeat]:
        """The one judge's outcome of the replay's declaration in the beat, and the replayed beat (where the page's
        bound moved, the clock declares in the silence after the beat's last word)."""
        t = self.analysis.t_s
        declared = rb.quiet_declared_s
        declared_tick = None if declared is None else int(np.searchsorted(t, declared, "left"))
        outcome = judge_declared(
            a, declared_tick, onset_timeout_s=self.onset_timeout_s, narration_pause_s=self.pause_s, quiet_s=self.quiet_s
        )
        if outcome == OK and a.room_s == float("inf") and (declared_tick is None or declared_tick >= a.bound_tick):
            # The page's bound moved: the clock declares in the silence after the beat's last word.
            k = declare_moved(a, t, self.quiet_s - EPS_S)
            rb = replace(rb, last_word_s=_time_at(t, a.last_word_tick), quiet_declared_s=float(t[k]),
                         prompt_allowed_s=float(t[k]) + (term.linger_s or 0.0))  # fmt: skip
        return outcome, rb

    def beat(self, j: int) -> Beat:
        """Beat ``j``, analysed, replayed and judged."""
        a, term, t = self.analysis.beats[j], self.terminals[j], self.analysis.t_s
        outcome, rb = self.judged(a, self.played[j], term)
        onset, last_word, ack_last = (
            _time_at(t, a.onset_tick),
            _time_at(t, a.last_word_tick),
            _time_at(t, a.ack_end_tick),
        )
        gaps = _narration_gaps(a, t)
        silence = None if (ack_last is None or onset is None) else onset - ack_last
        ended_by_page, stop, pauses = a.ended_by_page, self.stops[j], self.pauses
        return Beat(
            index=a.index,
            terminal_s=a.terminal_s,
            span_end_s=a.bound_s,
            onset_s=onset,
            onset_latency_s=None if onset is None else onset - a.terminal_s,
            ack_overlap=a.ack_end_tick is not None,
            ack_last_word_s=ack_last,
            ack_silence_s=silence,
            last_word_s=last_word,
            gaps_s=tuple(b - w for w, b in gaps),
            gap_at_s=tuple(w for w, _ in gaps),
            quiet_gaps_s=tuple(pauses.unpaused(w, b) for w, b in gaps),
            premature_risk=bool(silence is not None and silence >= self.quiet_s - EPS_S),
            replay=rb,
            # (the flags say the one judge's outcome: no second verdict)
            premature=outcome == PREMATURE,
            logged_quiet_s=_first_in(self.logged, term.t_s, a.bound_s),
            linger_s=term.linger_s,
            bound=a.bound,
            stalled=outcome == STALLED,
            missed_onset=outcome == MISSED_ONSET,
            outcome=outcome,
            narration_pause_s=self.pause_s if ended_by_page else None,
            speech_at_end=a.speech_at_bound if ended_by_page else False,
            cause=a.cause,
            past_bound=a.past_bound,
            after_early_end=a.after_early_end,
            rule_stopped_s=stop.t_s,
            rule_stopped_line=stop.line,
            rule_stopped_assumed=stop.assumed,
            rule_stopped_risk=stop.risk,
            dead_air_s=(
                pauses.unpaused(rb.last_word_s, rb.quiet_declared_s)
                if outcome == OK and rb.quiet_declared_s is not None and rb.last_word_s is not None
                else None
            ),
            **self.signals.of(term, a.bound_s, rb),
        )


def heard(found: Sequence[Beat]) -> list[Beat]:
    """The beats the clock saw a tick of (every outcome but ``unheard``), in order; of a :class:`BeatList`,
    without making the others."""
    return found.heard() if isinstance(found, BeatList) else [b for b in found if b.outcome != UNHEARD]


def outpaced_line(b: Beat, quiet_s: float, rule: str | None = None) -> str:
    """What happened in an outpaced beat: the visitor ended it after the guide had finished, before the quiet time
    (or, with ``rule``, the words of a rule other than the level clock, before that rule ended it)."""
    before = f"the quiet time of {quiet_s:g} s" if rule is None else f"the rule ({rule}) ended it"
    return (
        f"the visitor ended it ({b.bound}) {b.end_after_word_s:.2f} s after the last word, before {before}; "
        f"the guide had finished (longer than any narration pause, {b.narration_pause_s or 0:.2f} s)"
    )


def aborted_line(b: Beat) -> str:
    """What happened in an aborted beat: the guide was speaking when the visitor ended it."""
    if b.speech_at_end:
        return f"the visitor ended it ({b.bound}) while the guide spoke (speech at the {b.bound})"
    return (
        f"the visitor ended it ({b.bound}) while the guide spoke: {b.end_after_word_s:.2f} s after a word, within "
        f"the longest narration pause ({b.narration_pause_s or 0:.2f} s)"
    )


def _warn_outside(events: EventLog, end_s: float) -> None:
    """One warning for events after the recording's end, one for events before its start."""
    late = [e for e in events.events if e.t_s > end_s]
    early = [e for e in events.events if e.t_s < 0]
    for group, what in (
        (late, f"after the end of the recording ({end_s:.3f} s)"),
        (early, "before the recording started"),
    ):
        if not group:
            continue
        e = group[0]
        where = f"{events.source}:{e.line}" if events.source and e.line else "event log"
        more = f" (and {len(group) - 1} more)" if len(group) > 1 else ""
        warnings.warn(f"{where}: {e.type} at {e.t_s:.3f} s is {what}{more}", SpeechClockWarning, stacklevel=3)


def _first_in(times: Sequence[float], lo: float, hi: float) -> float | None:
    """The first of ``times`` (ascending) in ``[lo, hi)``, or None."""
    at = bisect_left(times, lo)
    return times[at] if at < len(times) and times[at] < hi else None
