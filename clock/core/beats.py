"""Beats: the onset after each terminal response, the narration's gaps, and the clock replay.

Pure numpy. Times are in seconds on the audio timeline.

A beat opens at a terminal response ``T`` and spans until the next
``prompt``, terminal response or ``end`` event (or the end of the
recording); see :func:`span_bounds` for an acknowledgment of the next beat.

**Analysis** at a floor (:func:`analyse`, what happened in the recording):

* If speech is in progress at ``T`` (speech at the tick at or after ``T``
  and at the tick before it, or only a dip between words there), an
  acknowledgment overlaps the terminal response (``ack_overlap``). It runs
  on across dips between words and ends at the first pause: a dip between
  words is a quiet shorter than ``MIN_GAP_S`` (0.15 s, the default of
  ``--min-gap`` and ``Margins.min_gap_s``; see
  :func:`clock.core.segments.word_gaps`), a pause one at least that long.
  Its last word is the last speech tick before that pause.
* The **onset** is the first rising edge after ``T`` (a speech tick after a
  quiet tick), past the acknowledgment if one overlaps.
  ``onset_latency_s = onset_s - terminal_s``.
* The **narration** runs from the onset to the last speech tick of the span
  (``last_word_s``); its gaps (``gaps_s``) are the inter-sentence gaps,
  measured from a last word (``gap_at_s``) to the next onset;
  ``quiet_gaps_s`` counts only their unpaused time, as the clock does.
* ``premature_risk``: an acknowledgment overlapped and the silence between
  its last word and the narration's onset reaches the quiet time, so the
  clock would end the beat before the narration started.
* **Provider signals** (OpenAI Realtime, when logged): when the provider said
  the beat's audio buffer stopped (``provider_stopped_s``, against the
  measured last word), and whether a barge-in (``barge_in_s``) or a cleared
  buffer (``cleared_s``) cut the beat.

**Replay** (:func:`replay_ticks`, what the browser clock would do, tick by tick):

idle -> (terminal response) waiting -> (first tick above the floor) speaking
-> done at the first tick where the unpaused time since the last word
reaches ``quiet_s``; then ``linger_s`` before the next prompt is allowed.
``pause`` freezes the quiet count (and the onset timeout), ``resume``
continues it, ``end`` aborts the beat. A beat still waiting after
``onset_timeout_s`` (unpaused) is ``no_onset``. Events at a time ``<= t`` are
applied before tick ``t``. Comparisons of elapsed time against ``quiet_s``
allow 1 ns for float rounding.

**Rules** (:data:`RULES`; ``speechclock.js`` runs each as the replay does,
and :mod:`clock.core.recommend.rules` replays them over whole corpora): the level clock
above (``level``), or a rule told the provider's ``output_audio_buffer.stopped``
(:attr:`clock.core.events.EventLog.stop_kind`), which may end the beat sooner.
A beat's event is its own (:func:`beat_stops`): the first one applied while
the beat is open (after its terminal response, before the next ``prompt``,
terminal response or ``end``) whose ``response_id`` is the beat's terminal
response's; another response's (an acknowledgment's) is skipped. Where the
log gives no ids (on the event or the terminal response) the first event in
the beat is assumed to be its own, and the output says so. The level clock
still bounds every rule, so a beat whose event is late or never comes ends
after ``quiet_s`` all the same:

``stopped+quiet``
    the event has arrived and the quiet since the last word reaches
    ``hangover_s``;
``stopped``
    the event has arrived (at the first unpaused tick from the beat's first
    word on, speech or not);
``level+stopped``
    the level clock, whose quiet time becomes ``hangover_s`` once the event
    has arrived.

**Causes** (:mod:`clock.core.causes`): each beat's bound is the page's (a
``prompt``, ``end`` or terminal response after the page's own clock declared
the beat: it moves with a replayed declaration, so the silence after the last
word runs on, and speech that follows the last word within the beat's
pauses, or at once after the page's prompt, is the beat's own narration),
the visitor's (a ``prompt`` or ``end`` before the page's clock declared), or
the world's (a superseding terminal response, the end of the recording). A
log that says nothing of the page's declarations has bounds of unknown
cause: walls, as before.

**Outcome** of a beat: :mod:`clock.core.outcome` names each outcome, says
what it means, and holds the one judge; the setting's failures are
``premature``, ``stalled`` and ``missed-onset``; ``aborted``, ``outpaced``,
``superseded`` and ``recording-ended`` are not the setting's doing. The
**narration pause** ``P`` (:func:`narration_pause_s`) tells an ``end`` the
visitor pressed while the guide was between sentences (aborted) from one
after it had finished (outpaced).

:func:`decide` answers the outcome of any quiet time and onset timeout from
one :func:`analyse` per floor, without replaying tick by tick; it gives the
same decisions as :func:`replay_ticks`.
"""

from __future__ import annotations

import functools
import operator
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError, SpeechClockWarning
from .causes import (
    CAUSE_NAMES,
    PAGE,
    UNKNOWN_CAUSE,
    VISITOR,
    WORLD,
    bound_causes,
    own_stopped,
    page_declared,
    page_ends,
)
from .events import Event, EventLog
from .levels import LevelTrace
from .model import EPS_S, MIN_GAP_S
from .outcome import (
    ABORTED,
    BOUND_KINDS,
    CODE,
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    OUTPACED,
    PREMATURE,
    RECORDING_ENDED,
    SILENT,
    STALLED,
    SUPERSEDED,
    UNHEARD,
    WORLD_ENDED,
    judge,
    silence_held,
    undone_codes,
    unspoken_codes,
    visitor,
)
from .segments import _check_floor, runs, word_gaps
from .speech import classify, guide_sound, noise_bumps
from .thresholds import (
    DEFAULT_ONSET_TIMEOUT_S,
    HANGOVER_RULES,
    LEVEL,
    LEVEL_AFTER_STOPPED,
    RULES,
    STOPPED,
    STOPPED_QUIET,
    Thresholds,
    check_rule,
)

__all__ = [
    "ABORTED",
    "CAUSE_NAMES",
    "RECORDING_ENDED",
    "SUPERSEDED",
    "WORLD_ENDED",
    "DONE",
    "FAILURES",
    "HANGOVER_RULES",
    "IDLE",
    "LEVEL",
    "LEVEL_AFTER_STOPPED",
    "OUTCOMES",
    "OUTPACED",
    "RULES",
    "SPEAKING",
    "STOPPED",
    "STOPPED_QUIET",
    "WAITING",
    "Beat",
    "BeatAnalysis",
    "BeatList",
    "Decision",
    "Decisions",
    "FloorAnalysis",
    "Replay",
    "ReplayBeat",
    "aborted_line",
    "BeatStop",
    "analyse",
    "beat_stops",
    "beats",
    "check_rule",
    "decide",
    "decide_quiets",
    "failing_beats",
    "heard",
    "judge_declared",
    "log_noise_bumps",
    "narration_pause_s",
    "outpaced_line",
    "page_declarations",
    "provider_stopped",
    "replay",
    "replay_ticks",
    "rule_stopped",
    "span_bounds",
    "span_ends_s",
]


T = TypeVar("T")


class Made(Sequence[T]):
    """A sequence whose items are made when read, except the few kept as objects.

    A log may hold a million terminal responses, nearly all superseded before any speech: their beats are
    alike but for a few numbers, kept in arrays, and each is made when read (and forgotten after), so a
    log's beats cost arrays, not objects. Reading is by index, slice (a list) or iteration.
    """

    __slots__ = ("_kept", "_make", "_n")

    def __init__(self, n: int, kept: dict[int, T], make: Callable[[int], T]) -> None:
        self._n, self._kept, self._make = n, kept, make

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        j = operator.index(i)
        if j < 0:
            j += self._n
        if not 0 <= j < self._n:
            raise IndexError("index out of range")
        found = self._kept.get(j)
        return self._make(j) if found is None else found

    def __iter__(self) -> Iterator[T]:
        kept, make = self._kept, self._make
        for j in range(self._n):
            found = kept.get(j)
            yield make(j) if found is None else found

    def __repr__(self) -> str:
        return f"Made({self._n} items, {len(self._kept)} kept)"


@dataclass(frozen=True, slots=True)
class ReplayBeat:
    """What the replayed clock did in one beat.

    Attributes
    ----------
    terminal_s : float
    start_s : float or None
        First tick above the floor after the terminal response (may be an
        overlapping acknowledgment).
    last_word_s : float or None
        The last word the clock had seen when the beat ended.
    quiet_declared_s : float or None
        Tick at which the clock declared the beat quiet (None: it never did).
    no_onset : bool
        No tick above the floor within the onset timeout.
    aborted : bool
        An ``end`` event, or the next terminal response, ended the beat first.
    prompt_allowed_s : float or None
        ``quiet_declared_s + linger_s``: when the next prompt may go.
    stopped_s : float or None
        When the provider's event applied in this beat came (None: none did before it closed): the beat's own
        (:func:`beat_stops`).
    """

    terminal_s: float
    start_s: float | None
    last_word_s: float | None
    quiet_declared_s: float | None
    no_onset: bool
    aborted: bool
    prompt_allowed_s: float | None
    stopped_s: float | None = None


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
    in a beat ended right (None elsewhere); ``outcome`` is one of :data:`OUTCOMES`, from the replay.
    Where the page's ``end`` bounds the span, ``narration_pause_s`` is the
    ``P`` it was judged with and ``speech_at_end`` whether the level was
    above the floor at the end's tick (None and False elsewhere). ``cause``
    says who caused the bound (:data:`CAUSE_NAMES`): a bound the page caused
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


def _check_times(quiet_s: float, onset_timeout_s: float) -> None:
    if not (np.isfinite(quiet_s) and quiet_s > 0):
        raise InvalidParameterError(f"quiet_s must be > 0, got {quiet_s!r}")
    if not (onset_timeout_s > 0):
        raise InvalidParameterError(f"onset_timeout_s must be > 0, got {onset_timeout_s!r}")


class _PauseClock:
    """Paused intervals, to count only unpaused time."""

    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []
        self.since: float | None = None

    def pause(self, t: float) -> None:
        if self.since is None:
            self.since = t

    def resume(self, t: float) -> None:
        if self.since is not None:
            self.intervals.append((self.since, t))
            self.since = None

    @property
    def paused(self) -> bool:
        return self.since is not None

    @classmethod
    def from_events(cls, events: EventLog) -> _PauseClock:
        """Every pause and resume of a log, applied in order."""
        clock = cls()
        for e in events.of_kind("pause", "resume"):
            (clock.pause if e.kind == "pause" else clock.resume)(e.t_s)
        return clock

    def unpaused(self, a: float, b: float) -> float:
        """Seconds of [a, b] outside every paused interval."""
        if not self.intervals and self.since is None:
            return b - a  # (nothing paused: the same float as subtracting no paused time)
        spans = self.intervals + ([(self.since, b)] if self.since is not None else [])
        paused = sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in spans)
        return (b - a) - paused


#: Per-tick clock states in :class:`Replay` (``state`` array codes).
IDLE, WAITING, SPEAKING, DONE = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class Replay:
    """The replayed clock: its beats, and its state at every tick.

    Attributes
    ----------
    beats : sequence of ReplayBeat
        One per terminal response (a beat the clock heard no speech in is
        made when read: :class:`Made`).
    state : ndarray of int8, shape (n_ticks,)
        ``IDLE``, ``WAITING``, ``SPEAKING``, or ``DONE`` at the tick a beat
        was declared quiet.
    quiet_count_s : ndarray of float64, shape (n_ticks,)
        Unpaused seconds since the last word while speaking (0 otherwise).
    """

    beats: Sequence[ReplayBeat]
    state: NDArray[np.int8]
    quiet_count_s: NDArray[np.float64]


@dataclass
class _Open:
    """The beat the clock is in."""

    terminal_s: float
    linger_s: float | None
    start_s: float | None = None
    last_word_s: float | None = None
    stopped_s: float | None = None
    response_id: str | None = None
    #: A ``prompt`` came: the beat's bound, after which no event is the beat's.
    bounded: bool = False

    def close(self, *, declared: float | None = None, no_onset: bool = False, aborted: bool = False) -> ReplayBeat:
        allowed = None if declared is None else declared + (self.linger_s or 0.0)
        return ReplayBeat(
            self.terminal_s, self.start_s, self.last_word_s, declared, no_onset, aborted, allowed, self.stopped_s
        )


#: The event a page that runs ``speechclock.js`` logs when it tells its clock the provider's event (the clock applied
#: it in the beat it had open, and the replay follows the page there: the page chose which event to tell it).
PAGE_STOP = "clock.stopped"


def _own_stop(response_id: str | None, e: Event) -> bool:
    """Whether a provider event may be the beat's own: its ``response_id`` is the beat's terminal response's,
    or one of the two has none (then the first in the beat is assumed to be its own)."""
    return response_id is None or e.response_id is None or e.response_id == response_id


def _quiet_ends(rule: str, told: bool, count_s: float, quiet_s: float, hangover_s: float) -> bool:
    """Whether a rule ends the beat at an unpaused quiet tick whose count since the last word is ``count_s``.

    The level clock bounds every rule: the quiet time ends the beat whatever the rule (a hangover at or above it,
    which the config, the command line and the page refuse, never waits longer)."""
    if count_s >= quiet_s - EPS_S:
        return True
    if rule == LEVEL_AFTER_STOPPED and told:
        return count_s >= hangover_s - EPS_S
    return told and (rule == STOPPED or (rule == STOPPED_QUIET and count_s >= hangover_s - EPS_S))


class _Closed:
    """The beats a replay has closed, in order: each one the clock heard speech in (or applied the provider's
    event in) as an object, every other as two flags (a log may hold a million terminal responses, nearly all
    superseded before any speech)."""

    def __init__(self, terminals: Sequence[Event]) -> None:
        self.kept: dict[int, ReplayBeat] = {}
        self.flags = bytearray()
        self.terminal_s = np.array([e.t_s for e in terminals], np.float64)

    def add(self, beat: _Open, *, declared: float | None = None, no_onset: bool = False, aborted: bool = False) -> None:
        if beat.start_s is not None or beat.stopped_s is not None:
            self.kept[len(self.flags)] = beat.close(declared=declared, no_onset=no_onset, aborted=aborted)
        self.flags.append(no_onset | aborted << 1)

    def never_heard(self, j: int) -> ReplayBeat:
        return ReplayBeat(
            float(self.terminal_s[j]), None, None, None, bool(self.flags[j] & 1), bool(self.flags[j] & 2), None
        )

    def beats(self) -> Made[ReplayBeat]:
        return Made(len(self.flags), self.kept, self.never_heard)


#: Ticks the replay reads as Python values at a time.
_TICKS_READ = 4096


def replay_ticks(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S,
    rule: str = LEVEL,
    hangover_s: float | None = None,
) -> Replay:
    """Replay the browser clock tick by tick (see the module notes).

    Parameters
    ----------
    trace : LevelTrace
    events : EventLog
    floor : float
        Speech is ``level > floor``.
    quiet_s : float
        Unpaused quiet time after the last word that ends a beat.
    onset_timeout_s : float, optional
        Give up waiting for speech after this long (default: 10 s, as the
        command line; ``float("inf")`` waits forever).
    rule : str, optional
        One of :data:`RULES` (default: the level clock).
    hangover_s : float, optional
        The rule's hangover (:func:`check_rule`).

    Returns
    -------
    Replay
        One :class:`ReplayBeat` per terminal response, in order, and the
        clock's state at every tick.
    """
    floor = _check_floor(floor)
    _check_times(quiet_s, onset_timeout_s)
    check_rule(rule, hangover_s)
    hangover = quiet_s if hangover_s is None else hangover_s
    t_s, above = trace.t_s, trace.level > floor
    queue = events.events
    stop_kind = events.stop_kind
    moved = page_ends(events)  # (the page's own ends move with the replayed declaration: they abort nothing)
    pauses = _PauseClock()
    done = _Closed(events.terminals)
    states = np.zeros(trace.n_ticks, np.int8)
    quiet_count = np.zeros(trace.n_ticks, np.float64)
    cur: _Open | None = None
    ei, n_events = 0, len(queue)
    for k in range(trace.n_ticks):
        if k % _TICKS_READ == 0:  # the ticks as Python values, a block at a time (a long trace stays arrays)
            t, speech = t_s[k : k + _TICKS_READ].tolist(), above[k : k + _TICKS_READ].tolist()
        now = t[k % _TICKS_READ]
        while ei < n_events and queue[ei].t_s <= now:
            e = queue[ei]
            ei += 1
            if e.kind == "terminal":
                if cur is not None:
                    done.add(cur, aborted=True)
                cur = _Open(e.t_s, e.linger_s, response_id=e.response_id)
            elif e.kind == "prompt" and cur is not None and stop_kind != PAGE_STOP:
                cur.bounded = True
            elif e.kind == "pause":
                pauses.pause(e.t_s)
            elif e.kind == "resume":
                pauses.resume(e.t_s)
            elif e.kind == "end" and cur is not None and ei - 1 not in moved:
                done.add(cur, aborted=True)
                cur = None
            elif e.kind == stop_kind and cur is not None and cur.stopped_s is None and not cur.bounded:
                if _own_stop(cur.response_id, e):
                    cur.stopped_s = e.t_s
        if cur is None:
            continue
        spoken = speech[k % _TICKS_READ]
        # The event alone ends the beat at any unpaused tick from its first word on, speech or not.
        alone = rule == STOPPED and cur.stopped_s is not None and not pauses.paused
        if cur.start_s is None:
            states[k] = WAITING
            if spoken:
                cur.start_s = cur.last_word_s = now
                states[k] = SPEAKING
                if alone:
                    states[k] = DONE
                    done.add(cur, declared=now)
                    cur = None
            elif pauses.unpaused(cur.terminal_s, now) >= onset_timeout_s - EPS_S:
                done.add(cur, no_onset=True)
                cur = None
            continue
        states[k] = SPEAKING
        if spoken:
            cur.last_word_s = now
            if alone:
                states[k] = DONE
                done.add(cur, declared=now)
                cur = None
            continue
        assert cur.last_word_s is not None
        count = quiet_count[k] = pauses.unpaused(cur.last_word_s, now)
        told = cur.stopped_s is not None
        if not pauses.paused and _quiet_ends(rule, told, count, quiet_s, hangover):
            states[k] = DONE
            done.add(cur, declared=now)
            cur = None
    if cur is not None:
        done.add(cur)
    # Terminal responses after the last tick never reach the clock.
    for e in queue[ei:]:
        if e.kind == "terminal":
            done.add(_Open(e.t_s, None), no_onset=True)
    states.flags.writeable = False
    quiet_count.flags.writeable = False
    return Replay(done.beats(), states, quiet_count)


def replay(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S,
    rule: str = LEVEL,
    hangover_s: float | None = None,
) -> list[ReplayBeat]:
    """The replayed clock's beats (see :func:`replay_ticks`)."""
    played = replay_ticks(
        trace, events, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s, rule=rule, hangover_s=hangover_s
    )
    return list(played.beats)


def page_declarations(trace: LevelTrace, events: EventLog, *, committed: Thresholds | None = None) -> EventLog:
    """The log with the page's declarations inferred (``EventLog.inferred_quiet_s``), where it needs them.

    A log without ``clock.quiet`` lines, with prompts or ends: the replay at the setting the page ran says where
    its clock declared each beat quiet, so the causes of its bounds are known (:mod:`clock.core.causes`;
    ``EventLog.causes_from`` is then ``"inferred"``). The setting is the log's ``clock.setting``; else the
    ``committed`` one (the config's), where the log bears it out: every ``prompt`` or ``end`` that follows a
    declaration of that replay in its beat comes as the page prompts, within :data:`PROMPT_ON_TIME_S` of the
    declaration plus the beat's linger, and at least one does. Any other log is returned as it is: a log whose
    prompts do not follow the committed setting was not made by a page running it, and keeps its bounds as walls.
    """
    s = events.setting or committed
    if s is None or events.of_kind("clock.quiet") or not events.of_kind("prompt", "end") or not trace.n_ticks:
        return events
    played = replay_ticks(
        trace, events, floor=s.floor, quiet_s=s.quiet_s, onset_timeout_s=s.onset_timeout_s, rule=s.rule,
        hangover_s=s.hangover_s,
    )  # fmt: skip
    found = tuple(b.quiet_declared_s for b in played.beats if b.quiet_declared_s is not None)
    if events.setting is None and not _prompts_follow(events, played.beats):
        return events
    return replace(events, inferred_quiet_s=found)


def _prompts_follow(events: EventLog, played: Sequence[ReplayBeat]) -> bool:
    """Whether the log's prompts and ends come as a page running the replayed clock prompts (see
    :func:`page_declarations`): each one after a replayed declaration in its beat within ``PROMPT_ON_TIME_S`` of
    the declaration plus the beat's linger, and at least one such."""
    bounds = events.of_kind("terminal", "prompt", "end")
    times = [e.t_s for e in bounds]
    followed = 0
    for term, b in zip(events.terminals, played):
        at = bisect_right(times, term.t_s)
        nxt = bounds[at] if at < len(bounds) else None
        d = b.quiet_declared_s
        if nxt is None or nxt.kind == "terminal" or d is None or d > nxt.t_s:
            continue
        if abs(nxt.t_s - (d + (term.linger_s or 0.0))) > PROMPT_ON_TIME_S:
            return False
        followed += 1
    return followed > 0


# --- the beats at one floor --------------------------------------------------
#
# Everything below is shared by ``beats`` (with the tick-by-tick replay) and by
# the sweep and the recommendation (with ``decide``, which answers any quiet
# time and onset timeout from one analysis per floor). Tests hold ``decide``
# to the replay on every setting of a grid.


_NO_TICK = np.zeros(0, np.int64)
_NO_REACH = np.zeros(0, np.float64)
_NO_RUNS = np.zeros((0, 2), np.int64)
_NO_TICK.setflags(write=False)
_NO_REACH.setflags(write=False)


def span_bounds(
    events: EventLog, *, t_s: NDArray[np.float64], speech: NDArray[np.bool_] | None, end_s: float
) -> list[tuple[float, str]]:
    """Where each terminal's beat ends, and what ends it.

    A beat spans from its terminal response to the first later ``prompt``,
    terminal response or ``end`` (or the end of the recording). When the
    beat is bounded by the next terminal response and an acknowledgment
    overlaps that response (speech in progress at its tick, at this floor's
    ``speech`` mask: speech at its tick and the tick before, or only a dip
    between words there), the acknowledgment belongs to the next beat: the
    span ends where the acknowledgment began, its runs of speech joined
    across dips between words (:func:`clock.core.segments.word_gaps`). This
    keeps a log without prompts from counting the next stop's
    acknowledgment as the guide speaking again.

    Returns
    -------
    list of (bound_s, kind)
        kind is ``"prompt"``, ``"terminal"``, ``"end"``, ``"acknowledgment"``
        or ``"recording end"``.
    """
    bound_s, codes = _span_bound_arrays(events, t_s=t_s, speech=speech, end_s=end_s)
    return list(zip(bound_s.tolist(), [BOUND_KINDS[c] for c in codes.tolist()]))


def span_ends_s(
    events: EventLog, *, t_s: NDArray[np.float64], speech: NDArray[np.bool_] | None, end_s: float
) -> NDArray[np.float64]:
    """Where each terminal's beat ends (:func:`span_bounds`'s times), as an array."""
    return _span_bound_arrays(events, t_s=t_s, speech=speech, end_s=end_s)[0]


def _log_arrays(events: EventLog, t_s: NDArray[np.float64]) -> dict[str, Any]:
    """What an analysis needs of a log at any floor, as arrays (made once per log and trace: :func:`_log_base`)."""
    queue = events.events
    bounds = events.of_kind("terminal", "prompt", "end")
    bound_times = np.array([e.t_s for e in bounds], np.float64)
    code = {k: i for i, k in enumerate(BOUND_KINDS)}
    term_t = np.array([e.t_s for e in events.terminals], np.float64)
    moved = page_ends(events)
    return {
        "t_s": t_s,
        # The tick each event is applied at (events at a time <= t apply before that tick).
        "applied": np.searchsorted(t_s, np.array([e.t_s for e in queue], np.float64), side="left"),
        # Beats the clock sees start at a terminal; the next terminal or end aborts them.
        "terms": np.array([i for i, e in enumerate(queue) if e.kind == "terminal"], np.int64),
        "stops": np.array(
            [i for i, e in enumerate(queue) if e.kind == "terminal" or (e.kind == "end" and i not in moved)], np.int64
        ),
        # What stops each stop is: a terminal response (else an ``end``).
        "stop_terminal": np.array([e.kind == "terminal" for e in queue], bool),
        "cause": bound_causes(events),
        "declared": page_declared(events),
        "own_stop": own_stopped(events),
        "linger": np.array([e.linger_s or 0.0 for e in events.terminals], np.float64),
        "bound_times": bound_times,
        "bound_codes": np.array([code[e.kind] for e in bounds], np.int8),
        "term_t": term_t,
        "at": np.searchsorted(bound_times, term_t, side="right"),  # the first bound after each terminal
    }


def _lives(log: dict[str, Any], n: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int8]]:
    """Each beat's life in ticks, ``[k0, ka)``: from the tick its terminal response applies at to the one at which
    the next terminal response or an ``end`` the page did not cause aborts it (or the end of the trace); and what
    ends it (:data:`_STOPS`)."""
    applied, terms, stops = log["applied"], log["terms"], log["stops"]
    k0 = applied[terms].astype(np.int64) if terms.size else np.zeros(0, np.int64)
    at = np.searchsorted(stops, terms, side="right")  # the next stop after each terminal
    has = at < stops.size
    nxt = stops[np.minimum(at, max(stops.size - 1, 0))] if stops.size else np.zeros(terms.size, np.int64)
    ka = np.where(has, applied[nxt] if stops.size else n, n)
    ka = np.minimum(ka, n)
    kind = np.where(has, np.where(log["stop_terminal"][nxt] if stops.size else False, 1, 2), 0).astype(np.int8)
    kind = np.where(ka >= n, 0, kind).astype(np.int8)
    return k0, np.maximum(k0, ka).astype(np.int64), kind


#: Speech that begins this soon after a prompt the page caused is not the answer to it (a round trip to the
#: provider and its first audio take longer): it is the beat's own narration going on past the prompt.
RESPONSE_MIN_S = 0.15
#: A page's prompt comes this close to its clock's declaration plus the beat's linger (the page prompts on "ready").
PROMPT_ON_TIME_S = 0.05

#: What ends a beat's life (``_lives``): the end of the trace, the next terminal response, an ``end``.
_STOPS = ("trace end", "terminal", "end")


def _span_bound_arrays(
    events: EventLog,
    *,
    t_s: NDArray[np.float64],
    speech: NDArray[np.bool_] | None,
    end_s: float,
    log: dict[str, Any] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int8]]:
    """:func:`span_bounds` as arrays of bounds and kinds (indices into ``BOUND_KINDS``), vectorised."""
    log = _log_arrays(events, t_s) if log is None else log
    code = {k: i for i, k in enumerate(BOUND_KINDS)}
    bound_times, bound_codes, at = log["bound_times"], log["bound_codes"], log["at"]
    has = at < bound_times.size
    pick = np.minimum(at, max(bound_times.size - 1, 0))
    out_s = np.where(has, bound_times[pick] if bound_times.size else end_s, end_s).astype(np.float64)
    out_k = np.where(has, bound_codes[pick] if bound_times.size else code["recording end"], code["recording end"])
    out_k = out_k.astype(np.int8)
    if speech is not None:
        moved, moved_s = _acknowledged(out_s, out_k, log["term_t"], t_s, speech)
        out_s[moved] = moved_s
        out_k[moved] = code["acknowledgment"]
    return out_s, out_k


def _acknowledged(
    bound_s: NDArray[np.float64],
    bound_codes: NDArray[np.int8],
    term_t: NDArray[np.float64],
    t_s: NDArray[np.float64],
    speech: NDArray[np.bool_],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The beats whose bound an acknowledgment of the next beat moves at this floor (see :func:`span_bounds`), and
    where to: where the acknowledgment began, its runs of speech joined across dips between words."""
    n = t_s.size
    k = np.searchsorted(t_s, bound_s, side="left")
    # Only a beat the next terminal response bounds can end at that beat's acknowledgment.
    bounded = np.flatnonzero((bound_codes == BOUND_KINDS.index("terminal")) & (k > 0) & (k < n))
    found = runs(speech) if bounded.size else _NO_RUNS
    if not found.size:
        return np.zeros(0, np.int64), np.zeros(0)
    starts, ends = found[:, 0], found[:, 1]
    follows = np.arange(starts.size) < starts.size - 1
    chain = _chains(starts, ends, t_s, follows)[1]
    kk = k[bounded]
    r = np.searchsorted(starts, kk, side="left") - 1  # the last run that starts before the tick (-1: none)
    first = starts[chain[np.maximum(r, 0)]]
    ack = _in_progress_at(t_s, starts, ends, follows, r, kk) & (t_s[first] > term_t[bounded])
    return bounded[ack], t_s[first[ack]]


def _in_progress(t: NDArray[np.float64], before: Any, after: Any, k: Any) -> NDArray[np.bool_]:
    """Whether speech is in progress at tick ``k``: speech at ``k`` and at the tick before it, or only a dip between
    words there (:func:`clock.core.segments.word_gaps`: the quiet from ``before``, the last speech tick before
    ``k``, to ``after``, the first at or after it, is shorter than ``MIN_GAP_S``). -1 stands for no such tick;
    vectorised over ``before``, ``after`` and ``k``.

    The one rule of an acknowledgment: this beat's at its terminal response (:func:`analyse`,
    :func:`analyse_floors`), and the next beat's, which bounds this one (:func:`span_bounds`).
    """
    before, after = np.asarray(before), np.asarray(after)
    pair = np.stack([np.maximum(before, 0), np.maximum(after, 0)])  # (as two runs of one tick: the quiet between)
    across = (before == k - 1) & (after == k)
    return np.asarray((before >= 0) & (after >= 0) & (across | word_gaps(pair, pair, t)[0]), bool)


def _in_progress_at(
    t: NDArray[np.float64],
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    follows: NDArray[np.bool_],
    r: NDArray[np.int64],
    k: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """:func:`_in_progress` at ticks ``k`` from runs of speech ``[starts, ends]`` (ticks), ``r`` the last run that
    starts before each tick (-1: none), ``follows[i]`` whether run ``i + 1`` is of the same mask (floor)."""
    some = r >= 0
    rr = np.maximum(r, 0)
    nxt = np.minimum(rr + 1, max(starts.size - 1, 0))
    before = np.where(some, np.minimum(ends[rr], k - 1), -1)
    after = np.where(some & (ends[rr] >= k), k, np.where(some & follows[rr], starts[nxt], -1))
    return _in_progress(t, before, after, k)


def _chains(
    starts: NDArray[np.int64], ends: NDArray[np.int64], t: NDArray[np.float64], follows: NDArray[np.bool_]
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """Runs of speech joined across dips between words (:func:`clock.core.segments.word_gaps`): ``join[i]``, the
    quiet after run ``i`` is a dip (never where run ``i + 1`` does not follow it at the same floor: ``follows``),
    and ``chain[i]``, the first run of the chain run ``i`` belongs to."""
    join = np.zeros(starts.size, bool)
    join[:-1] = word_gaps(starts, ends, t) & follows[:-1]
    new = np.ones(starts.size, bool)
    new[1:] = ~join[:-1]
    return join, np.maximum.accumulate(np.where(new, np.arange(starts.size), 0))


@dataclass(frozen=True, slots=True)
class BeatAnalysis:
    """One beat at one floor: its bounds, where the guide speaks, and the quiet the clock must bridge.

    Tick indices refer to the trace. The clock sees the beat from
    ``first_tick`` (the first tick at or after the terminal response) until
    ``life_end_tick`` (exclusive: the tick at which the next terminal
    response or an ``end`` aborts it, or the end of the trace); the beat's
    span ends at ``bound_tick`` (the first tick at or after ``bound_s``).

    Attributes
    ----------
    index : int
    terminal_s, bound_s : float
    bound : str
        What ends the span (see :func:`span_bounds`).
    first_tick, life_end_tick, bound_tick : int
    start_tick : int or None
        The first speech tick the clock sees (it stops waiting).
    onset_tick : int or None
        The narration's onset: the first rising edge in the span, past an
        acknowledgment that overlaps the terminal response.
    ack_end_tick : int or None
        The overlapping acknowledgment's last speech tick: the last before
        its first pause (a quiet of at least ``MIN_GAP_S``; shorter quiets are
        dips between its words).
    last_word_tick : int or None
        The last speech tick of the span.
    wait_s : float or None
        Unpaused wait at the last waiting tick before ``start_tick`` (the
        onset timeout must exceed it); None when speech is at the first tick.
    idle_wait_s : float or None
        With no speech in the clock's life: the unpaused wait at its last tick.
    run_word, run_end : ndarray of int64
        The quiet runs after ``start_tick``: the last word before each, and
        the tick that ends it (the next speech tick, or ``life_end_tick``).
    run_reach_s : ndarray of float64
        The most quiet the clock counts in each run (unpaused, at an
        unpaused tick); -inf when it never counts in it.
    room_s : float
        The most quiet the clock counts after the span's last word before the
        bound; -inf when speech runs into the bound.
    count_s : ndarray of float64 or None
        Per-tick quiet counts from ``start_tick`` to ``life_end_tick``
        (-inf where speaking or paused), kept only when a pause touches the
        beat; without pauses a count is the time since the last word.
    last_word_s : float or None
        The time of ``last_word_tick``.
    speech_at_bound : bool
        The level is above the floor at ``bound_tick`` (the guide speaks as
        the span ends).
    pause_s : float
        The longest unpaused quiet between two speech runs of the narration
        (from the onset on) inside the span; 0 when it has none.
    cause : str
        Who caused the bound (:data:`CAUSE_NAMES`, :mod:`clock.core.causes`).
        A bound the page caused moves with the replayed declaration: the
        silence after the last word continues at the level it had
        (``room_s`` is inf), and where the guide spoke on past it (speech
        within ``pause_s`` of it), the span runs on to the end of that
        speech (``past_bound``).
    past_bound : bool
        The narration ran on past the page's bound (its prompt cut a pause
        short): the span ends after the speech that followed.
    after_early_end : bool
        The page's clock declared the beat before it before that beat's last
        word (its ``clock.quiet``, or the declaration inferred from its
        ``clock.setting``): the beat is where it is because the page ended the
        one before early, so its onset latency (the narration before it may
        still play at its terminal response) is the page's doing, not the
        voice's, and is left out of the onset evidence.
    guide_spoke : bool
        The guide made sound in the beat's span, whatever the floor
        (:attr:`FloorAnalysis.guide_spoke`): where this floor hears none of
        it, the beat is a missed onset, not silent.
    silence_s : float
        The guide's own silence after its last word before the bound, where
        this floor hears the room's noise in it (:mod:`clock.core.speech`):
        longer than ``room_s``, which the bumps cut. NaN where it is
        ``room_s``.
    """

    index: int
    terminal_s: float
    bound_s: float
    bound: str
    first_tick: int
    life_end_tick: int
    bound_tick: int
    start_tick: int | None
    onset_tick: int | None
    ack_end_tick: int | None
    last_word_tick: int | None
    wait_s: float | None
    idle_wait_s: float | None
    run_word: NDArray[np.int64]
    run_end: NDArray[np.int64]
    run_reach_s: NDArray[np.float64]
    room_s: float
    count_s: NDArray[np.float64] | None
    last_word_s: float | None = None
    speech_at_bound: bool = False
    pause_s: float = 0.0
    cause: str = UNKNOWN_CAUSE
    past_bound: bool = False
    silence_s: float = float("nan")
    after_early_end: bool = False
    guide_spoke: bool = False

    @property
    def spoken(self) -> bool:
        """The guide spoke within the span (so the clock has something to end)."""
        return self.start_tick is not None and self.start_tick < self.bound_tick

    @property
    def inner(self) -> NDArray[np.bool_]:
        """Runs after which the guide speaks again within the span (a run that ends at its last word or before)."""
        return self.run_end <= (-1 if self.last_word_tick is None else self.last_word_tick)

    @property
    def ended_by_page(self) -> bool:
        """The visitor ended the beat: a ``prompt`` or ``end`` before the page's clock declared it (in a log that
        does not say who caused its bounds, an ``end``). Its outcome if the clock waits past it is ``aborted`` or
        ``outpaced``, never a failure."""
        return visitor(CAUSE_NAMES.index(self.cause), BOUND_KINDS.index(self.bound))

    @property
    def need_s(self) -> float:
        """The longest quiet inside the span: a quiet time must exceed it (-inf if none)."""
        inner = self.run_reach_s[self.inner]
        return float(inner.max()) if inner.size else float("-inf")

    def speaking_at_end(self, narration_pause_s: float) -> bool:
        """The visitor's bound (:attr:`ended_by_page`) ends the span while the guide speaks.

        Speech at the bound's tick, or a last word closer to the bound than
        ``narration_pause_s`` (the longest pause inside a narration of the
        recordings judged together): the guide may have been between two
        sentences.
        """
        if not self.ended_by_page or not self.spoken:
            return False
        if self.speech_at_bound:
            return True
        return self.last_word_s is not None and self.bound_s - self.last_word_s < narration_pause_s

    def undone(self, narration_pause_s: float) -> str:
        """The outcome of a beat the clock did not declare quiet in before its bound (:func:`_undone_codes`)."""
        code = undone_codes(
            np.array([CAUSE_NAMES.index(self.cause)]), np.array([BOUND_KINDS.index(self.bound)]),
            np.array([self.speech_at_bound]),
            np.array([np.nan if self.last_word_s is None else self.bound_s - self.last_word_s]), narration_pause_s,
        )  # fmt: skip
        return OUTCOMES[int(code[0])]

    def allows(self, quiet_s: float, onset_timeout_s: float, *, narration_pause_s: float) -> bool:
        """Whether this setting ends the beat right: its outcome (the one judge's) is not one of :data:`FAILURES`.

        ``narration_pause_s`` decides whether a bound the visitor caused came
        while the guide spoke (``aborted``) or after it had finished
        (``outpaced``): see :meth:`speaking_at_end`. Neither is a failure.
        """
        if not self.spoken:
            return not self.guide_spoke
        wait = np.array([np.nan if self.wait_s is None else self.wait_s])
        undone = np.array([CODE[self.undone(narration_pause_s)]], np.int8)
        code = judge(
            np.array([True]), wait, np.array([self.need_s]), np.array([self.room_s]), undone,
            np.array([quiet_s - EPS_S]), onset_timeout_s, np.array([self.silence_s]),
        )  # fmt: skip
        return OUTCOMES[int(code[0, 0])] not in FAILURES


@dataclass(frozen=True, slots=True)
class FloorAnalysis:
    """The beats of one recording at one floor, with what :func:`decide` needs.

    Attributes
    ----------
    floor : float
    t_s : ndarray of float64
        Tick times.
    beats : sequence of BeatAnalysis
        One per terminal response; a beat without speech in the clock's life
        is made from the log's arrays when read (:class:`Made`).
    after_end : int
        Terminal responses after the last tick (the clock never sees them).
    pauses : tuple of (float, float)
        The log's paused intervals.
    active : ndarray of int64, optional
        The beats with speech in the clock's life, in order (the others are
        unheard or silent whatever the setting, and loops over a floor's
        beats visit only these). Derived from ``beats`` when not given.
    unheard : ndarray of int64, optional
        The beats of which the clock sees no tick (given with ``active``).
    guide_spoke : ndarray of bool, optional
        Per beat, whether the guide made sound in its span (to its bound at
        this floor), whatever the floor hears
        (:func:`clock.core.speech.guide_sound`): a beat it spoke in that the
        floor hears none of is a missed onset, not silent. None: taken as
        spoken where the floor hears it.
    """

    floor: float
    t_s: NDArray[np.float64]
    beats: Sequence[BeatAnalysis]
    after_end: int = 0
    pauses: tuple[tuple[float, float], ...] = ()
    active: NDArray[np.int64] | None = None
    unheard: NDArray[np.int64] | None = None
    guide_spoke: NDArray[np.bool_] | None = None

    def active_beats(self) -> NDArray[np.int64]:
        """The indices of the beats with speech in the clock's life (see ``active``)."""
        if self.active is not None:
            return self.active
        return np.array([i for i, b in enumerate(self.beats) if b.start_tick is not None], np.int64)

    def spoken(self) -> NDArray[np.bool_]:
        """Which beats are spoken at this floor (:attr:`BeatAnalysis.spoken`; only a beat with speech in the
        clock's life can be)."""
        out = np.zeros(len(self.beats), bool)
        out[[j for j in self.active_beats().tolist() if self.beats[j].spoken]] = True
        return out

    @property
    def narration_pause_s(self) -> float:
        """The longest pause inside a narration of this recording at this floor (see :func:`narration_pause_s`)."""
        return narration_pause_s([self])

    def quiet_range(self, *, narration_pause_s: float) -> tuple[float, float, float]:
        """The settings that end every beat right at this floor, as :meth:`BeatAnalysis.allows` answers.

        Returns ``(need_s, room_s, wait_s)``: a quiet time ``q`` ends every
        beat right when ``need_s < q <= room_s`` (within the replay's 1 ns),
        with an onset timeout above ``wait_s``. ``need_s`` is the longest
        quiet the clock must bridge (-inf: none), ``room_s`` the least quiet
        left after a last word before a bound the clock must beat, one whose
        passing is a stall (inf: none; -inf: speech runs into such a bound,
        so no quiet time works).
        """
        need, room, wait = float("-inf"), float("inf"), float("-inf")
        for j in self.active_beats().tolist():  # (a beat without speech in the clock's life is not spoken)
            b = self.beats[j]
            if not b.spoken:
                continue
            need = max(need, b.need_s)
            if b.undone(narration_pause_s) == STALLED:
                room = min(room, b.room_s)
            if b.wait_s is not None:
                wait = max(wait, b.wait_s)
        return need, room, wait

    def gaps(self) -> list[tuple[int, float, float, bool]]:
        """Every quiet the clock bridges inside a span, as (beat, last word s, unpaused gap s, narration).

        A gap runs from a last word to the next speech tick. ``narration`` is
        False for the silence between an overlapping acknowledgment and the
        narration (a dip between the acknowledgment's words is not one).
        """
        out = []
        for i in self.active_beats().tolist():
            b = self.beats[i]
            if not b.spoken:
                continue
            for w, e in zip(b.run_word[b.inner].tolist(), b.run_end[b.inner].tolist()):
                gap = float(_unpaused(float(self.t_s[w]), self.t_s[e : e + 1], self.pauses)[0])
                out.append((b.index, float(self.t_s[w]), gap, w != b.ack_end_tick))
        return out


def narration_pause_s(analyses: Sequence[FloorAnalysis]) -> float:
    """``P``: the longest pause inside a narration of the recordings judged together, at one floor.

    The longest unpaused quiet between two speech runs of a narration
    (from its onset on, inside its span); the silence between an
    overlapping acknowledgment and the narration is not a narration pause.
    An ``end`` whose beat's last word is closer to it than ``P`` came while
    the guide spoke (``aborted``); one later came after the guide had
    finished (``outpaced``). The one place ``P`` is computed: every
    corpus-level caller (derive, sweep, check, :func:`clock.core.recommend.replay.judge`)
    passes this over its recordings at the floor judged; ``beats`` and
    :func:`decide` default to the recording's own. 0 when there is none.
    """
    return max((a.beats[j].pause_s for a in analyses for j in a.active_beats().tolist()), default=0.0)


def _pause_spans(events: EventLog) -> tuple[tuple[float, float], ...]:
    """Paused intervals of a log (an unresumed pause runs to infinity)."""
    clock = _PauseClock.from_events(events)
    spans = list(clock.intervals)
    if clock.since is not None:
        spans.append((clock.since, float("inf")))
    return tuple(spans)


def _unpaused(a: float, b: NDArray[np.float64], spans: tuple[tuple[float, float], ...]) -> NDArray[np.float64]:
    """``_PauseClock.unpaused(a, b)`` for many ``b``, with the same float operations in the same order."""
    paused = np.zeros_like(b)
    for lo, hi in spans:
        paused = paused + np.maximum(0.0, np.minimum(b, hi) - max(a, lo))
    return (b - a) - paused


def _paused_at(t: NDArray[np.float64], spans: tuple[tuple[float, float], ...]) -> NDArray[np.bool_]:
    """Whether the clock is paused at each tick (events at a tick's time apply before it)."""
    out = np.zeros(t.size, bool)
    for lo, hi in spans:
        out |= (t >= lo) & (t < hi)
    return out


def analyse(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    t_s: NDArray[np.float64] | None = None,
) -> FloorAnalysis:
    """Analyse every beat of a recording at one floor (see :class:`BeatAnalysis`).

    Parameters
    ----------
    trace : LevelTrace
    events : EventLog
    floor : float
        Speech is ``level > floor``.
    t_s : ndarray, optional
        ``trace.t_s``, when the caller already has it (a sweep analyses one
        trace at many floors).

    Returns
    -------
    FloorAnalysis
        What every floor shares (each beat's life, and its bound without
        speech) is found once per log and trace and kept with the log
        (:meth:`clock.core.events.EventLog.shared`): a beat without speech in
        the clock's life costs those arrays at every floor, not an object.
    """
    floor = _check_floor(floor)
    t = trace.t_s if t_s is None else t_s
    speech = trace.level > floor
    base = _log_base(trace, events, t)
    bump, sound = _guide(trace, events)
    k0, ka, term_t, spans = base["k0"], base["ka"], base["term_t"], base["spans"]
    m = k0.size
    is_speech_idx = np.flatnonzero(speech)
    # Only a beat with speech in the clock's life is replayed (an object of its own); every other beat (superseded
    # before any speech, or silent) is its bounds, kept in the log's arrays for every floor and made when read.
    active = np.flatnonzero(np.searchsorted(is_speech_idx, k0) < np.searchsorted(is_speech_idx, ka))
    moved, moved_s = _acknowledged(base["bound_s"], base["code"], term_t, t, speech)
    acknowledged = dict(zip(moved.tolist(), moved_s.tolist()))
    # Whether the guide spoke in each beat's span (to its bound at this floor: an acknowledgment of the next beat
    # that begins before its terminal response bounds this one where it begins).
    kb_here = base["kb"].copy()
    if moved.size:
        kb_here[moved] = _bound_ticks(t, moved_s, np.full(moved.size, BOUND_KINDS.index("acknowledgment")), k0[moved],
                                      ka[moved])  # fmt: skip
    spoke = _spoke_in(sound, k0, np.maximum(kb_here, k0))
    kept = {}
    for j in active.tolist():
        bound_s = acknowledged.get(j)
        kept[j] = _analyse_beat(
            j, float(term_t[j]), float(base["bound_s"][j]) if bound_s is None else bound_s,
            "acknowledgment" if bound_s is not None else BOUND_KINDS[base["code"][j]], int(k0[j]), int(ka[j]),
            t, speech, is_speech_idx, spans, CAUSE_NAMES[int(base["cause"][j])], int(base["stop"][j]),
            float(base["declared"][j]), float(base["own_stop"][j]), float(base["linger"][j]), bump,
        )  # fmt: skip
    declared = base["declared"]
    for j in active.tolist():
        before = kept.get(j - 1)
        early = before is not None and before.last_word_s is not None and declared[j - 1] < before.last_word_s
        # (after_early_end: the page declared the beat before it early)
        kept[j] = replace(kept[j], after_early_end=bool(early), guide_spoke=bool(spoke[j]))
    make = functools.partial(_idle_beat, base, acknowledged, spoke)
    return FloorAnalysis(floor, t, Made(m, kept, make), base["after_end"], spans, active, base["unheard"], spoke)


def _log_base(trace: LevelTrace, events: EventLog, t: NDArray[np.float64]) -> dict[str, Any]:
    """What every floor's analysis of a log shares: each beat's life, its bound without speech, and for a beat
    without speech in the clock's life, the unpaused wait at its last tick. Found once per log and trace, and
    kept with the log."""
    n = t.size
    end_s = float(t[-1]) + trace.tick_s if n else 0.0
    return events.shared(  # type: ignore[no-any-return]
        "beats",
        lambda: _make_log_base(events, t, end_s),
        valid=lambda b: b["end_s"] == end_s and (b["t_s"] is t or np.array_equal(b["t_s"], t)),
    )


def _guide(trace: LevelTrace, events: EventLog) -> tuple[NDArray[np.bool_] | None, NDArray[np.int32]]:
    """Where the guide spoke, whatever the floor (:mod:`clock.core.speech`), found once per trace and kept with the
    log: the trace's noise bumps, and the running count of the ticks where the guide made sound (from 0, one
    longer than the trace: a span ``[a, b)`` holds its sound where ``count[b] > count[a]``)."""

    def make() -> tuple[NDArray[np.float64], NDArray[np.bool_] | None, NDArray[np.int32]]:
        classes = classify(trace)
        sound = np.concatenate([[0], np.cumsum(guide_sound(trace, classes), dtype=np.int32)])
        return trace.level, noise_bumps(trace, classes), sound

    found = events.shared("guide", make, valid=lambda b: b[0] is trace.level)
    return found[1], found[2]


def log_noise_bumps(trace: LevelTrace, events: EventLog) -> NDArray[np.bool_] | None:
    """The trace's noise bumps (:func:`clock.core.speech.noise_bumps`; None where the room is digital silence), as
    the analyses of this log found them (found once, kept with the log)."""
    return _guide(trace, events)[0]


def _spoke_in(sound: NDArray[np.int32], k0: Any, kb: Any) -> Any:
    """Whether the guide made sound in each span ``[k0, kb)`` (:func:`_guide`'s running count)."""
    n = sound.size - 1
    return sound[np.clip(kb, 0, n)] > sound[np.clip(k0, 0, n)]


def _make_log_base(events: EventLog, t: NDArray[np.float64], end_s: float) -> dict[str, Any]:
    n = t.size
    log = _log_arrays(events, t)
    k0, ka, stop = _lives(log, n)
    bound_s, code = _span_bound_arrays(events, t_s=t, speech=None, end_s=end_s, log=log)
    spans = _pause_spans(events)
    term_t = log["term_t"]
    last = t[np.maximum(ka - 1, 0)] if n else term_t
    wait = np.where(ka > k0, _unpaused_each(term_t, last, spans), np.nan)
    return {
        "t_s": t, "end_s": end_s, "k0": k0, "ka": ka, "stop": stop, "cause": log["cause"], "term_t": term_t,
        "declared": log["declared"], "own_stop": log["own_stop"], "linger": log["linger"],
        "spans": spans, "bound_s": bound_s,
        "code": code, "kb": _bound_ticks(t, bound_s, code, k0, ka), "wait": wait,
        "unheard": np.flatnonzero(ka <= k0).astype(np.int64), "after_end": int(np.count_nonzero(k0 >= n)),
    }  # fmt: skip


def _bound_ticks(
    t: NDArray[np.float64], bound_s: NDArray[np.float64], code: NDArray[np.int8], k0: NDArray[np.int64], ka: NDArray
) -> NDArray[np.int64]:
    """Each span's ``bound_tick``: the first tick at or after its bound, within the clock's life."""
    kb = np.where(code == BOUND_KINDS.index("recording end"), ka, np.minimum(np.searchsorted(t, bound_s), ka))
    return np.maximum(kb, k0).astype(np.int64)


def _idle_beat(base: dict[str, Any], acknowledged: dict[int, float], spoke: NDArray[np.bool_], j: int) -> BeatAnalysis:
    """Beat ``j`` without speech in the clock's life, from its log's arrays (see :func:`analyse`)."""
    bound_s = acknowledged.get(j)
    code = int(base["code"][j]) if bound_s is None else BOUND_KINDS.index("acknowledgment")
    k0, ka = int(base["k0"][j]), int(base["ka"][j])
    if bound_s is None:
        bound_s, kb = float(base["bound_s"][j]), int(base["kb"][j])
    else:
        kb = int(_bound_ticks(base["t_s"], np.array([bound_s]), np.array([code]), base["k0"][j], base["ka"][j])[0])
    wait = float(base["wait"][j])
    return BeatAnalysis(
        j, float(base["term_t"][j]), bound_s, BOUND_KINDS[code], k0, ka, kb,
        None, None, None, None, None, None if wait != wait else wait,
        _NO_TICK, _NO_TICK, _NO_REACH, float("-inf"), None, cause=CAUSE_NAMES[int(base["cause"][j])],
        guide_spoke=bool(spoke[j]),
    )  # fmt: skip


def _unpaused_each(
    a: NDArray[np.float64], b: NDArray[np.float64], spans: tuple[tuple[float, float], ...]
) -> NDArray[np.float64]:
    """:func:`_unpaused` for pairs ``a[i]``, ``b[i]`` (the same float operations, element by element)."""
    paused = np.zeros_like(b)
    for lo, hi in spans:
        paused = paused + np.maximum(0.0, np.minimum(b, hi) - np.maximum(a, lo))
    return (b - a) - paused


def _analyse_beat(
    index: int,
    terminal_s: float,
    bound_s: float,
    bound: str,
    k0: int,
    ka: int,
    t: NDArray[np.float64],
    speech: NDArray[np.bool_],
    speech_idx: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
    cause: str = UNKNOWN_CAUSE,
    stop: int = 0,
    declared_s: float = float("nan"),
    own_stop_s: float = float("nan"),
    linger_s: float = 0.0,
    bump: NDArray[np.bool_] | None = None,
) -> BeatAnalysis:
    """One beat at one floor (see :class:`BeatAnalysis`); ``stop`` is what ends its life (:data:`_STOPS`),
    ``declared_s`` where the page's clock declared it, ``own_stop_s`` when the provider said the beat's own
    response's audio drained (NaN: not known), ``bump`` the room's noise (:func:`_analyse_span`)."""
    a = _analyse_span(index, terminal_s, bound_s, bound, k0, ka, t, speech, speech_idx, spans, bump)
    a = replace(a, cause=cause)
    if not a.spoken:
        return a
    assert a.last_word_tick is not None
    kd = int(np.searchsorted(t, declared_s, side="left")) if declared_s == declared_s else -1
    if a.first_tick <= kd < min(a.bound_tick, t.size) and bool(speech[kd]) and a.last_word_tick >= a.bound_tick - 1:
        # This floor hears sound where the page's clock heard the silence it declared on (noise, word tails), on
        # into the bound: at the level it had, the clock never declares, so the beat stalls, whatever the bound.
        return replace(a, cause=PAGE, room_s=float("-inf"), speech_at_bound=True)
    if cause != PAGE:
        return a
    on_time = declared_s == declared_s and abs(a.bound_s - (declared_s + linger_s)) <= PROMPT_ON_TIME_S
    return _moved(a, t, speech, speech_idx, spans, stop, declared_s, own_stop_s, on_time, bump)


def _moved(
    a: BeatAnalysis,
    t: NDArray[np.float64],
    speech: NDArray[np.bool_],
    speech_idx: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
    stop: int,
    declared_s: float,
    own_stop_s: float = float("nan"),
    on_time: bool = True,
    bump: NDArray[np.bool_] | None = None,
) -> BeatAnalysis:
    """A spoken beat whose bound the page caused, as a replay at any setting sees it: the bound moves with the
    replayed declaration, so the silence after the last word continues at the level it had (room inf). Where the
    guide spoke on past the bound (speech that follows the last word within the beat's longest pause, at least a
    dip between words), that speech is the beat's own narration, up to the first longer silence or the end of the
    beat's life (speech that begins within RESPONSE_MIN_S of a bound that came as the page prompts, its declaration
    plus the beat's linger, is the narration's whatever the silence before it); speech that runs into the next
    response stalls it (at the level it had, the clock never declares), into the end of the recording ends it
    there, into an ``end`` the visitor's. Where the provider said when the
    beat's own response's audio drained (``own_stop_s``, by its ``response_id``), the narration is the speech
    that begins before that, whatever the silences in it. Where this floor hears the room's noise after the last
    word (``bump``), the silence continues as it was, bumps and all: the most quiet the clock counted in it before
    the bound is all the room it has, and the noise heard past the bound is no narration."""
    assert a.last_word_tick is not None
    n, ka = t.size, a.life_end_tick
    join_s = max(a.pause_s, MIN_GAP_S)
    said = speech_idx if bump is None else speech_idx[~bump[speech_idx]]
    later = said[(said >= a.bound_tick) & (said < a.life_end_tick)]
    last = a.last_word_tick
    if later.size:
        breaks = np.flatnonzero(np.diff(later) > 1)
        starts = np.concatenate([[later[0]], later[breaks + 1]]).tolist()
        ends = np.concatenate([later[breaks], [later[-1]]]).tolist()
        for rs, re_ in zip(starts, ends):
            gap = float(_unpaused(float(t[last]), t[rs : rs + 1], spans)[0])
            if own_stop_s == own_stop_s:  # (the provider's own word: its audio up to then is the beat's)
                if float(t[rs]) >= own_stop_s:
                    break
            elif on_time and last == a.last_word_tick and float(t[rs]) < a.bound_s + RESPONSE_MIN_S:
                join_s = max(join_s, gap)  # (no answer to the prompt is heard this soon: the narration goes on)
            elif gap > join_s + EPS_S:
                break
            last = re_
    if stop == 0 and last < ka - 1:
        # Nothing stops the beat's life before the recording ends: the silence runs on to the recording's end,
        # the world's bound (a quiet time longer than it finds the recording ended, not a failure).
        out = _analyse_span(a.index, a.terminal_s, a.bound_s, "recording end", a.first_tick, ka, t, speech,
                            speech_idx, spans, bump)  # fmt: skip
        return replace(out, cause=WORLD, past_bound=last != a.last_word_tick)
    if last == a.last_word_tick:
        heard = speech_idx[(speech_idx > last) & (speech_idx < a.bound_tick)]
        return a if heard.size else replace(a, room_s=float("inf"))  # (bumps heard after the last word: as it was)
    into = last >= ka - 1  # the speech runs into the end of the beat's life
    kind = "recording end" if into and stop == 0 else a.bound
    bound_s = float(t[last + 1]) if last + 1 < n else float(t[-1]) + (float(t[-1] - t[-2]) if n > 1 else 0.0)
    out = _analyse_span(a.index, a.terminal_s, bound_s, kind, a.first_tick, ka, t, speech, speech_idx, spans, bump)
    if not into:
        return replace(out, cause=PAGE, past_bound=True, room_s=float("inf"), bound=a.bound)
    if stop == 1:
        # The level stays above the floor into the next response. Where the page's clock heard a silence this
        # floor hears too (quiet at its declaration's tick), this is the narration going on, the next response's
        # audio queued after it: its end is not seen, and the silence after it is taken to run on. Where this floor
        # hears sound the page's clock took for silence (noise, word tails), at the level it had the clock never
        # declares: the beat stalls.
        kd = int(np.searchsorted(t, declared_s, side="left")) if declared_s == declared_s else -1
        heard_quiet = 0 <= kd < n and not bool(speech[kd])
        room = float("inf") if heard_quiet or declared_s != declared_s else float("-inf")
        return replace(out, cause=PAGE, past_bound=True, room_s=room, bound=a.bound, speech_at_bound=True)
    # Into the end of the recording (the world's), or an ``end`` the visitor pressed while the guide spoke.
    return replace(out, cause=WORLD if stop == 0 else VISITOR, past_bound=True, bound="recording end" if stop == 0
                   else "end", speech_at_bound=True)  # fmt: skip


def _analyse_span(
    index: int,
    terminal_s: float,
    bound_s: float,
    bound: str,
    k0: int,
    ka: int,
    t: NDArray[np.float64],
    speech: NDArray[np.bool_],
    speech_idx: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
    bump: NDArray[np.bool_] | None = None,
) -> BeatAnalysis:
    """One beat's span at one floor (see :class:`BeatAnalysis`). ``bump``: the ticks that are the room's noise, not
    the guide's words (:func:`clock.core.speech.noise_bumps`; None: none). The clock hears a bump as any sound (its
    count starts again), but the beat's words, its last word and its narration's pauses are the guide's alone."""
    n = t.size
    kb = min(int(np.searchsorted(t, bound_s, side="left")), ka) if bound != "recording end" else ka
    kb = max(kb, k0)
    silence = float("nan")
    lo, hi = np.searchsorted(speech_idx, [k0, ka])
    spoken = speech_idx[lo:hi]
    said = spoken if bump is None else spoken[~bump[spoken]]
    if said.size == spoken.size or not said[said < kb].size:
        said = spoken  # (no bump heard, or no word in the span: every tick heard is taken as the guide's)
    noisy = said.size < spoken.size
    touched = noisy or any(
        lo_p <= (float(t[ka - 1]) if ka > k0 else terminal_s) and hi_p > terminal_s for lo_p, hi_p in spans
    )
    if spoken.size == 0:
        idle = None
        if ka > k0:
            idle = float(_unpaused(terminal_s, t[ka - 1 : ka], spans)[0])
        return BeatAnalysis(
            index, terminal_s, bound_s, bound, k0, ka, kb, None, None, None, None, None, idle,
            _NO_TICK, _NO_TICK, np.zeros(0), float("-inf"), None,
        )  # fmt: skip
    ks = int(spoken[0])
    wait = float(_unpaused(terminal_s, t[ks - 1 : ks], spans)[0]) if ks > k0 else None
    # Acknowledgment and narration onset, as the span shows them: speech in progress at the terminal response
    # (across its tick, or with only a dip between words there) is an acknowledgment.
    ack = bool(lo > 0 and _in_progress(t, speech_idx[lo - 1], speech_idx[lo], k0))
    in_span = said[said < kb]  # (the guide's words: the onset, an acknowledgment's end and the last word are theirs)
    ack_end = onset = last_word = None
    if in_span.size:
        breaks = np.flatnonzero(np.diff(in_span) > 1)
        run_starts = np.concatenate([[in_span[0]], in_span[breaks + 1]])
        run_ends = np.concatenate([in_span[breaks], [in_span[-1]]])
        last_word = int(in_span[-1])
        if ack:
            # The acknowledgment runs on across dips between words; the first pause ends it.
            pauses = np.flatnonzero(~word_gaps(run_starts, run_ends, t))
            last = int(pauses[0]) if pauses.size else run_ends.size - 1
            ack_end = int(run_ends[last])
            onset = int(run_starts[last + 1]) if last + 1 < run_starts.size else None
        else:
            onset = int(run_starts[0])
    # Quiet runs after the clock starts, within its life.
    ends = np.concatenate([spoken[1:], [ka]])
    keep = ends > spoken + 1
    run_word, run_end = spoken[keep], ends[keep]
    count = None
    if not touched:
        reach = t[run_end - 1] - t[run_word]
        room = float(t[kb - 1] - t[last_word]) if last_word is not None and last_word < kb - 1 else float("-inf")
    else:
        count = _counts(t, ks, ka, run_word, run_end, spans)
        reach = np.array([count[w + 1 - ks : e - ks].max() for w, e in zip(run_word, run_end)], np.float64)
        room = float("-inf")
        if last_word is not None and last_word < kb - 1:
            room = float(count[last_word + 1 - ks : kb - ks].max())
            if noisy:
                silence = float(_unpaused(float(t[last_word]), t[kb - 1 : kb], spans)[0])
    pause = 0.0
    if onset is not None and noisy:
        # The narration's pauses are between the guide's words: a bump inside one does not split it.
        w_idx = said[(said >= onset) & (said <= (last_word if last_word is not None else -1))]
        apart = np.flatnonzero(np.diff(w_idx) > 1)
        if apart.size:
            pause = float(_unpaused_each(t[w_idx[apart]], t[w_idx[apart + 1]], spans).max())
    elif onset is not None:
        inner = (run_end < kb) & (run_word >= onset)
        if inner.any():
            w_in, e_in = run_word[inner], run_end[inner]
            if not spans:
                pause = float((t[e_in] - t[w_in]).max())
            else:
                pause = max(float(_unpaused(float(t[w]), t[e : e + 1], spans)[0]) for w, e in zip(w_in, e_in))
    return BeatAnalysis(
        index, terminal_s, bound_s, bound, k0, ka, kb, ks, onset, ack_end, last_word, wait, None,
        run_word, run_end, np.asarray(reach, np.float64), room, count,
        None if last_word is None else float(t[last_word]),
        bool(kb < n and speech[kb] and not (noisy and bump is not None and bump[kb])), pause, silence_s=silence,
    )  # fmt: skip


def _counts(
    t: NDArray[np.float64],
    ks: int,
    ka: int,
    run_word: NDArray[np.int64],
    run_end: NDArray[np.int64],
    spans: tuple[tuple[float, float], ...],
) -> NDArray[np.float64]:
    """The clock's quiet count at each tick of ``[ks, ka)``, -inf where it speaks or is paused."""
    count = np.full(ka - ks, float("-inf"))
    for w, e in zip(run_word.tolist(), run_end.tolist()):
        count[w + 1 - ks : e - ks] = _unpaused(float(t[w]), t[w + 1 : e], spans)
    count[_paused_at(t[ks:ka], spans)] = float("-inf")
    return count


# --- every floor at once -----------------------------------------------------
#
# A sweep asks every quiet time at every floor. Which ticks are speech changes with the floor, but the order of
# the ticks by level does not: ``r[k]``, the number of floors under tick k's level, says at once at which floors
# tick k is speech (``r[k] > j``), so every floor's runs of speech come from one pass over the ticks, and each
# beat's summary at every floor (where the clock starts, the last word, the longest quiet inside the span, the
# room after the last word) from searches in those runs. Acknowledgments follow the one rule :func:`analyse`
# follows (:func:`_in_progress` at a terminal response, runs joined across dips between words by
# :func:`_chains`), on every floor's runs at once. Tests hold it to :func:`analyse` field by field (on
# acknowledgments with dips between their words too) and, with :func:`FloorTable.outcomes`, to the tick-by-tick
# replay on every setting.


@dataclass(frozen=True, slots=True)
class FloorTable:
    """The beats of one recording at many floors, each reduced to what decides every quiet time and onset timeout.

    Only the beats with speech in the clock's life at the lowest floor are kept (``beat``): every other beat is
    unheard or silent at every floor. Arrays of shape ``(n_floors, n_kept)`` give, at each floor, what
    :class:`BeatAnalysis` gives at one (``-1`` for a missing tick, NaN for a missing time).

    Attributes
    ----------
    floors : ndarray of float64
        As given (not sorted).
    t_s : ndarray of float64
        Tick times.
    beat : ndarray of int64
        The kept beats' indices.
    first_tick : ndarray of int64
        The first tick at or after each kept beat's terminal response.
    spoken : ndarray of bool
        :attr:`BeatAnalysis.spoken`.
    wait_s, need_s, room_s, pause_s : ndarray of float64
        As in :class:`BeatAnalysis` (``wait_s`` NaN where speech is at the first tick).
    last_word_tick, bound_tick : ndarray of int64
    cause, bound : ndarray of int8
        Who caused each span's bound (codes of :data:`CAUSE_NAMES`) and what it is (codes of ``BOUND_KINDS``).
    speech_at_bound : ndarray of bool
    end_after_word_s : ndarray of float64
        The span's bound minus the last word.
    silence_s : ndarray of float64 or None
        :attr:`BeatAnalysis.silence_s` (None: NaN everywhere).
    guide_spoke : ndarray of bool or None
        :attr:`FloorAnalysis.guide_spoke` at each floor (its spans).
    paused : dict
        ``(floor index, kept index)`` -> the :class:`BeatAnalysis` of a spoken beat analysed on its own: one a
        pause touches (its quiet is counted tick by tick), or one whose narration ran on past the page's bound.
    """

    floors: NDArray[np.float64]
    t_s: NDArray[np.float64]
    beat: NDArray[np.int64]
    first_tick: NDArray[np.int64]
    spoken: NDArray[np.bool_]
    wait_s: NDArray[np.float64]
    need_s: NDArray[np.float64]
    room_s: NDArray[np.float64]
    pause_s: NDArray[np.float64]
    last_word_tick: NDArray[np.int64]
    bound_tick: NDArray[np.int64]
    cause: NDArray[np.int8]
    bound: NDArray[np.int8]
    speech_at_bound: NDArray[np.bool_]
    end_after_word_s: NDArray[np.float64]
    paused: dict[tuple[int, int], BeatAnalysis] = field(default_factory=dict)
    silence_s: NDArray[np.float64] | None = None
    guide_spoke: NDArray[np.bool_] | None = None

    def declared_ticks(
        self, floor_index: NDArray[np.int64], kept_index: NDArray[np.int64], quiet_s: NDArray[np.float64]
    ) -> NDArray[np.int64]:
        """Where the clock declares quiet in beats it ends right (outcome ok), one per triple: the first tick after
        the last word at which the quiet counted reaches the quiet time."""
        target = np.asarray(quiet_s, np.float64) - EPS_S
        d = _first_reaching(self.t_s, self.last_word_tick[floor_index, kept_index], target)
        for (j, i), b in self.paused.items():
            assert b.last_word_tick is not None
            if b.count_s is None:  # (no pause touches it: counted as the rest are)
                continue
            for x in np.flatnonzero((floor_index == j) & (kept_index == i)).tolist():
                d[x] = _first_counted(b, b.last_word_tick, b.life_end_tick, float(target[x]))
        return d

    @property
    def ended_by_page(self) -> NDArray[np.bool_]:
        """Where the visitor caused the bound (:attr:`BeatAnalysis.ended_by_page`), at each floor."""
        return np.asarray(visitor(self.cause, self.bound), bool)

    @property
    def narration_pause_s(self) -> NDArray[np.float64]:
        """``P`` of this recording at each floor (see :func:`narration_pause_s`)."""
        return self.pause_s.max(axis=1, initial=0.0)

    def outcomes(
        self,
        *,
        quiets_s: Sequence[float] | NDArray[np.float64],
        onset_timeout_s: float,
        narration_pause_s: NDArray[np.float64],
    ) -> NDArray[np.int8]:
        """Each kept beat's outcome (indices into :data:`OUTCOMES`) at every floor and quiet time, shape
        ``(n_floors, n_kept, n_quiets)``, as :func:`decide_quiets` judges them; ``narration_pause_s`` is ``P`` at
        each floor."""
        undone = undone_codes(
            self.cause, self.bound, self.speech_at_bound, self.end_after_word_s, np.asarray(narration_pause_s)[:, None]
        )
        target = np.asarray(quiets_s, np.float64) - EPS_S
        return judge(
            self.spoken, self.wait_s, self.need_s, self.room_s, undone, target, onset_timeout_s, self.silence_s,
            self.guide_spoke,
        )  # fmt: skip


def _segment_max(values: NDArray[np.float64], lo: NDArray[np.int64], hi: NDArray[np.int64], empty: float) -> NDArray:
    """``values[lo:hi].max()`` for each pair (``empty`` where ``lo >= hi``), in one pass."""
    out = np.full(lo.shape, empty)
    some = lo < hi
    if some.any():
        idx = np.empty(2 * int(some.sum()), np.int64)
        idx[0::2], idx[1::2] = lo[some], hi[some]
        out[some] = np.maximum.reduceat(values, idx)[0::2]
    return out


def _floor_edges(count: NDArray[np.int64], base: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """Ticks ``k`` at floors ``j`` in ``[base[k], base[k] + count[k])``, as keys ``j * n + k``, sorted."""
    k = np.repeat(np.arange(n, dtype=np.int64), count)
    first = np.repeat(np.cumsum(count) - count, count)
    j = base[k] + (np.arange(k.size, dtype=np.int64) - first)
    return np.sort(j * n + k)


def analyse_floors(trace: LevelTrace, events: EventLog, *, floors: Sequence[float]) -> FloorTable:
    """Every beat of a recording at every floor at once (see :class:`FloorTable`).

    What :func:`analyse` finds at one floor, for many: one pass over the ticks for all floors, then one
    search per beat and floor, with no loop over floors (a beat a pause touches is analysed floor by floor).

    Parameters
    ----------
    trace : LevelTrace
    events : EventLog
    floors : sequence of float
        Speech is ``level > floor``.

    Returns
    -------
    FloorTable
    """
    given = np.array(floors, np.float64).reshape(-1)
    if not (np.isfinite(given) & (given >= 0)).all():
        for f in given.tolist():
            _check_floor(f)  # (raises, naming the first floor that is not a level)
    order = np.argsort(given, kind="stable")
    fs = given[order]
    t, level = trace.t_s, trace.level
    n, n_f = t.size, fs.size
    base = _log_base(trace, events, t)
    bump, sound = _guide(trace, events)
    k0_all, ka_all, bound0_all, code0_all = base["k0"], base["ka"], base["bound_s"], base["code"]
    spoke_all = _spoke_in(sound, k0_all, np.maximum(base["kb"], k0_all))  # (by the log: who may be kept)
    # How many floors lie under each tick's level: tick k is speech at floor j (sorted) when r[k] > j.
    r = np.searchsorted(fs, level, side="left").astype(np.int64) if n_f else np.zeros(n, np.int64)
    said = np.flatnonzero(r > 0)
    # (and a beat the guide spoke in that no floor here hears: a missed onset at every floor)
    kept = np.flatnonzero(
        (np.searchsorted(said, k0_all) < np.searchsorted(said, ka_all)) | (spoke_all & (ka_all > k0_all))
    )
    b_n = kept.size
    k0, ka, term_s = k0_all[kept], ka_all[kept], base["term_t"][kept]
    cause0, stop0, declared0 = base["cause"][kept], base["stop"][kept], base["declared"][kept]
    own0, linger0 = base["own_stop"][kept], base["linger"][kept]
    bound_s = np.broadcast_to(bound0_all[kept], (n_f, b_n)).copy()
    code = np.broadcast_to(code0_all[kept], (n_f, b_n)).copy()
    # Every floor's runs of speech, [s, e], ordered by floor then tick (keys j * n + tick).
    r_before = np.concatenate([[0], r[:-1]]).astype(np.int64)
    r_after = np.concatenate([r[1:], [0]]).astype(np.int64)
    run_start = _floor_edges(np.maximum(r - r_before, 0), r_before, n)
    run_end = _floor_edges(np.maximum(r - r_after, 0), r_after, n)
    n_runs = run_start.size
    if not n_runs:
        # No floor hears a tick: every kept beat is one the guide spoke in that none hears (a missed onset).
        nan, no_tick, never = (
            np.full((n_f, b_n), np.nan),
            np.full((n_f, b_n), -1, np.int64),
            np.full((n_f, b_n), -np.inf),
        )
        return FloorTable(
            given, t, kept.astype(np.int64), k0, np.zeros((n_f, b_n), bool), nan, never, never.copy(),
            np.zeros((n_f, b_n)), no_tick, np.broadcast_to(base["kb"][kept], (n_f, b_n)).copy(),
            np.broadcast_to(cause0, (n_f, b_n)).astype(np.int8), code.astype(np.int8), np.zeros((n_f, b_n), bool),
            nan.copy(), {}, None, np.broadcast_to(spoke_all[kept], (n_f, b_n)).copy(),
        )  # fmt: skip
    s, e = run_start % n if n else run_start, run_end % n if n else run_end
    # The quiet after run i, to run i + 1 at the same floor: its reach (to the tick before the next word) and gap.
    same = (run_start[1:] // max(n, 1)) == (run_start[:-1] // max(n, 1))
    nxt = np.minimum(s[1:], n - 1) if n else s[1:]
    reach = np.append(np.where(same, t[np.maximum(nxt - 1, 0)] - t[e[:-1]], -np.inf), -np.inf)
    gap = np.append(np.where(same, t[nxt] - t[e[:-1]], -np.inf), -np.inf)
    jn = (np.arange(n_f, dtype=np.int64) * n)[:, None]
    last_run = max(n_runs - 1, 0)
    # Runs joined across dips between words, at each floor (an acknowledgment's words: see span_bounds, analyse).
    follows = np.append(same, False)  # run i + 1 is at the same floor
    join, chain = _chains(s, e, t, follows)

    def speech_at(k: NDArray[np.int64]) -> NDArray[np.bool_]:
        return (k >= 0) & (k < n) & (r[np.clip(k, 0, max(n - 1, 0))] > np.arange(n_f)[:, None])

    def last_before(k: NDArray[np.int64]) -> NDArray[np.int64]:
        """The last run at each floor that starts before tick ``k`` (-1: none)."""
        found = np.searchsorted(run_start, jn + k, side="left") - 1
        return np.where((found >= 0) & (run_start[np.maximum(found, 0)] >= jn), found, -1)

    # The first run that reaches k0 (holding the clock's first speech tick, if it starts before ka).
    ia = np.minimum(np.searchsorted(run_end, jn + k0, side="left"), last_run)
    lives = (n_runs > 0) & (np.searchsorted(run_end, jn + k0, side="left") < n_runs) & (run_start[ia] < jn + ka)
    start = np.where(lives, np.maximum(s[ia], k0), -1)
    # An acknowledgment of the next beat bounds this one where it began (see span_bounds).
    kraw = np.searchsorted(t, bound0_all[kept], side="left")
    terminal = (code0_all[kept] == BOUND_KINDS.index("terminal")) & (kraw > 0) & (kraw < n)
    before_next = last_before(kraw)
    first = s[chain[np.maximum(before_next, 0)]]
    ack_bound = terminal & _in_progress_at(t, s, e, follows, before_next, kraw) & (t[first] > term_s)
    bound_s = np.where(ack_bound, t[first], bound_s)
    code = np.where(ack_bound, BOUND_KINDS.index("acknowledgment"), code)
    kb = _bound_ticks(t, bound_s, code, k0, ka)
    guide_spoke = _spoke_in(sound, k0, np.maximum(kb, k0))  # (each floor's spans: acknowledgments bound them)
    spoken = lives & (start < kb)
    ib = np.maximum(np.searchsorted(run_start, jn + kb, side="left") - 1, 0)
    lw = np.where(spoken, np.minimum(e[ib], kb - 1), -1)
    # The quiets inside the span (runs ia .. ib - 1 end before the last word), and a narration's pauses: those
    # past an acknowledgment that overlaps the terminal response, if one does. The acknowledgment runs on across
    # dips between words, to the first pause at or after its first run (``g``); the narration's pauses follow it.
    ia, ib = np.where(spoken, ia, 0), np.where(spoken, ib, 0)
    need = _segment_max(reach, ia, ib, -np.inf)
    ack = _in_progress_at(t, s, e, follows, last_before(k0), k0)
    pauses = np.flatnonzero(~join)  # (each floor's last run is never joined, so one is found at or after ia)
    g = pauses[np.searchsorted(pauses, ia)]
    pause = _segment_max(gap, np.where(ack, g + 1, ia), ib, 0.0)
    lw_c = np.maximum(lw, 0)
    room = np.where(spoken & (lw < kb - 1), t[np.maximum(kb - 1, 0)] - t[lw_c], -np.inf)
    wait = np.where(spoken & (start > k0), t[np.maximum(start - 1, 0)] - term_s, np.nan)
    at_bound = speech_at(kb)
    after_word = np.where(spoken, bound_s - t[lw_c], np.nan)
    spans = base["spans"]
    cause = np.broadcast_to(cause0, (n_f, b_n)).copy()
    page = spoken & (cause == CAUSE_NAMES.index(PAGE))
    # A bound the page caused moves with the replayed declaration (see _moved): the silence after the last word
    # continues, unless the guide spoke on past it (the next run at this floor follows the last word within the
    # beat's longest pause, at least a dip), whose beat is analysed on its own, as one a pause touches is.
    nx = np.minimum(ib + 1, last_run)
    follows_on = (ib + 1 < n_runs) & (run_start[nx] < jn + n) & (s[nx] < ka) & (s[nx] >= kb)
    gap_on = t[np.minimum(s[nx], max(n - 1, 0))] - t[lw_c]
    on_time = np.abs(bound_s - (declared0 + linger0)) <= PROMPT_ON_TIME_S  # (NaN where not declared: False)
    soon = on_time & (t[np.minimum(s[nx], max(n - 1, 0))] < bound_s + RESPONSE_MIN_S)
    # (where the provider said when the beat's own audio drained, speech that begins before it is the beat's)
    soon |= t[np.minimum(s[nx], max(n - 1, 0))] < np.nan_to_num(own0, nan=-np.inf)
    on = page & ((e[ib] >= kb) | (follows_on & ((gap_on <= np.maximum(pause, MIN_GAP_S) + EPS_S) | soon)))
    on |= page & (stop0 == 0)  # (the recording's end bounds it: see _moved)
    # A floor that hears sound at the page's declaration, on into the bound, stalls whatever the bound (see
    # _analyse_beat): analysed on its own.
    kd = np.searchsorted(t, np.nan_to_num(declared0, nan=np.inf), side="left")
    at_kd = (kd < n) & (r[np.minimum(kd, max(n - 1, 0))] > np.arange(n_f)[:, None])
    on |= spoken & at_kd & (kd >= k0) & (kd < kb) & (e[ib] >= kb - 1)
    room = np.where(page & ~on, np.inf, room)
    paused: dict[tuple[int, int], BeatAnalysis] = {}
    touched = np.zeros(b_n, bool)
    if spans:
        # A beat a pause touches counts only unpaused time: analysed floor by floor.
        last_t = np.where(ka > k0, t[np.maximum(ka - 1, 0)], term_s)
        for lo_p, hi_p in spans:
            touched |= (lo_p <= last_t) & (hi_p > term_s)
    if bump is not None and b_n and n:
        # A floor that hears the room's noise in a beat's life tells its words from the bumps: analysed on its own.
        loudest = _segment_max(np.append(np.where(bump, level, 0.0), 0.0), k0, np.maximum(ka, k0), 0.0)
        on |= spoken & (fs[:, None] < loudest[None, :])
    silence = np.full((n_f, b_n), np.nan)
    for j in range(n_f):
        alone = np.flatnonzero(touched | on[j])
        if not alone.size:
            continue
        speech = r > j
        idx = np.flatnonzero(speech)
        for i in alone.tolist():
            a = _analyse_beat(
                int(kept[i]), float(term_s[i]), float(bound_s[j, i]), BOUND_KINDS[code[j, i]], int(k0[i]),
                int(ka[i]), t, speech, idx, spans, CAUSE_NAMES[int(cause0[i])], int(stop0[i]), float(declared0[i]),
                float(own0[i]), float(linger0[i]), bump,
            )  # fmt: skip
            spoken[j, i] = a.spoken
            if not a.spoken:
                continue
            paused[int(order[j]), i] = a  # by the floor's place as given
            wait[j, i] = np.nan if a.wait_s is None else a.wait_s
            need[j, i], room[j, i], pause[j, i], silence[j, i] = a.need_s, a.room_s, a.pause_s, a.silence_s
            lw[j, i], kb[j, i] = a.last_word_tick, a.bound_tick
            at_bound[j, i] = a.speech_at_bound
            after_word[j, i] = a.bound_s - a.last_word_s  # type: ignore[operator]
            cause[j, i], code[j, i] = CAUSE_NAMES.index(a.cause), BOUND_KINDS.index(a.bound)
    back = np.argsort(order, kind="stable")  # to the floors' given order
    return FloorTable(
        given, t, kept.astype(np.int64), k0, spoken[back], wait[back], need[back], room[back], pause[back], lw[back],
        kb[back], cause[back].astype(np.int8), code[back].astype(np.int8), at_bound[back], after_word[back], paused,
        silence[back] if np.isfinite(silence).any() else None, guide_spoke[back],
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Decision:
    """What the clock does in one beat with one setting.

    Attributes
    ----------
    outcome : str
        One of :data:`OUTCOMES`: ``ok``; ``premature`` (declared quiet, then
        the guide spoke again within the span); ``stalled`` (the guide spoke
        and quiet was not declared before the bound); ``outpaced`` (the
        page's ``end`` came before the clock declared quiet, after the guide
        had finished); ``missed-onset`` (the clock gave up waiting, yet the
        guide spoke within the span); ``silent`` (no speech in the span);
        ``unheard`` (the clock never saw a tick of the beat); ``aborted``
        (the page's ``end`` came before the clock declared quiet, the guide
        still speaking).
    declared_tick, last_word_tick : int or None
        Where the clock declared quiet, and the last word it had seen then.
    """

    outcome: str
    declared_tick: int | None = None
    last_word_tick: int | None = None


@dataclass(frozen=True, slots=True)
class Decisions:
    """The clock's decisions in every beat for many quiet times at once (see :func:`decide_quiets`).

    Attributes
    ----------
    quiets_s : ndarray of float64, shape (n_quiets,)
    outcome : ndarray of int8, shape (n_beats, n_quiets)
        Indices into :data:`OUTCOMES`.
    declared_tick, last_word_tick : ndarray of int64, shape (n_beats, n_quiets)
        -1 where the clock did not declare quiet.
    """

    quiets_s: NDArray[np.float64]
    outcome: NDArray[np.int8]
    declared_tick: NDArray[np.int64]
    last_word_tick: NDArray[np.int64]


def decide_quiets(
    analysis: FloorAnalysis,
    *,
    quiets_s: Sequence[float],
    onset_timeout_s: float,
    narration_pause_s: float | None = None,
) -> Decisions:
    """The clock's decision in every beat for each quiet time, from one :func:`analyse`.

    Gives the tick-by-tick replay's decisions (the tests hold it to
    :func:`replay_ticks` on every setting of a grid): every beat is judged for
    every quiet time at once by the one judge (:func:`_judge`, which
    :meth:`FloorTable.outcomes` shares), and where the clock declares quiet
    is found per beat: a quiet time only decides which quiet run first lasts
    long enough, and where in it the count reaches it.

    ``narration_pause_s`` is ``P`` (see :func:`narration_pause_s`): an
    ``end`` the clock waits past is ``aborted`` when the beat's last word is
    closer to it than ``P`` (or speech is at its tick), else ``outpaced``.
    Default: this recording's own (``analysis.narration_pause_s``); callers
    judging recordings together pass the largest over them at this floor.
    """
    pause = analysis.narration_pause_s if narration_pause_s is None else narration_pause_s
    q = np.asarray(quiets_s, dtype=np.float64)
    for value in q.tolist():
        _check_times(value, onset_timeout_s)
    n_b, n_q = len(analysis.beats), q.size
    outcome = np.empty((n_b, n_q), np.int8)
    declared = np.full((n_b, n_q), -1, np.int64)
    word = np.full((n_b, n_q), -1, np.int64)
    t = analysis.t_s
    target = q - EPS_S
    # A beat without speech in the clock's life is unheard (no tick of it) or silent, whatever the setting.
    outcome[:] = CODE[SILENT] if analysis.guide_spoke is None else unspoken_codes(analysis.guide_spoke)[:, None]
    unheard = analysis.unheard
    if unheard is None:
        unheard = np.array([i for i, b in enumerate(analysis.beats) if b.life_end_tick <= b.first_tick], np.int64)
    outcome[unheard] = CODE[UNHEARD]
    heard, judged = _judge_heard(analysis, target, onset_timeout_s, pause)
    outcome[heard] = judged
    found = [analysis.beats[i] for i in heard]
    # Where the clock declares quiet: the first run whose reach gets to each target (a search in the reaches'
    # running maximum), and the first tick in it at which the count does.
    for i, b, codes in zip(heard, found, judged):
        if not b.spoken or codes[0] == CODE[MISSED_ONSET]:
            continue
        if b.room_s == float("inf") and b.last_word_tick is not None:
            # The page's bound moved: past the inner quiets, the clock declares in the silence after the last word.
            ok = codes == CODE[OK]
            declared[i, ok] = [_declare_moved(b, t, float(x)) for x in target[ok].tolist()]
            word[i, ok] = b.last_word_tick
            if ok.all():
                continue  # (else the premature ones, as below)
        best = np.maximum.accumulate(b.run_reach_s) if b.run_reach_s.size else np.zeros(0)
        r = np.searchsorted(best, target, side="left")
        reached = (r < best.size) & (declared[i] < 0)
        if not reached.any():
            continue
        rf = r[reached]
        w, e = b.run_word[rf], b.run_end[rf]
        if b.count_s is None:
            d = _first_reaching(t, w, target[reached])
        else:
            d = np.array([_first_counted(b, int(wj), int(ej), tj) for wj, ej, tj in zip(w, e, target[reached])])
        declared[i, reached] = d
        word[i, reached] = w
    return Decisions(q, outcome, declared, word)


def _judge_heard(
    analysis: FloorAnalysis, target: NDArray[np.float64], onset_timeout_s: float, pause: float
) -> tuple[list[int], NDArray[np.int8]]:
    """The beats with speech in the clock's life that it sees a tick of, and their outcome codes for each target
    (``quiet time - 1 ns``), by the one judge (every other beat is unheard or silent, whatever the setting)."""
    active = analysis.active_beats().tolist()
    heard = [i for i in active if analysis.beats[i].life_end_tick > analysis.beats[i].first_tick]
    found = [analysis.beats[i] for i in heard]
    aw = [(b.bound_s - b.last_word_s) if b.spoken and b.last_word_s is not None else np.nan for b in found]
    undone = undone_codes(
        np.array([CAUSE_NAMES.index(b.cause) for b in found], np.int8),
        np.array([BOUND_KINDS.index(b.bound) for b in found], np.int8),
        np.array([b.speech_at_bound for b in found], bool), np.array(aw, np.float64), pause,
    )  # fmt: skip
    spoken = np.array([b.spoken for b in found], bool)
    wait = np.array([np.nan if b.wait_s is None else b.wait_s for b in found], np.float64)
    need = np.array([b.need_s for b in found], np.float64)
    room = np.array([b.room_s for b in found], np.float64)
    silence = np.array([b.silence_s for b in found], np.float64)
    spoke = np.array([b.guide_spoke for b in found], bool)
    return heard, judge(spoken, wait, need, room, undone, target, onset_timeout_s, silence, spoke)


def failing_beats(
    analysis: FloorAnalysis,
    *,
    quiets_s: Sequence[float],
    onset_timeout_s: float,
    narration_pause_s: float | None = None,
) -> NDArray[np.int64]:
    """How many beats fail (:data:`FAILURES`) at each quiet time: :func:`decide_quiets`'s outcomes, counted
    without a row per beat (only a beat with speech in the clock's life can fail)."""
    pause = analysis.narration_pause_s if narration_pause_s is None else narration_pause_s
    q = np.asarray(quiets_s, dtype=np.float64)
    for value in q.tolist():
        _check_times(value, onset_timeout_s)
    heard, codes = _judge_heard(analysis, q - EPS_S, onset_timeout_s, pause)
    failing = np.isin(codes, [CODE[x] for x in FAILURES]).sum(axis=0).astype(np.int64)
    if analysis.guide_spoke is not None:
        # A beat the guide spoke in of which the floor hears nothing is a missed onset at every quiet time.
        unseen = np.zeros(len(analysis.beats), bool)
        unseen[heard] = True
        if analysis.unheard is not None:
            unseen[analysis.unheard] = True
        else:
            unseen[[i for i, b in enumerate(analysis.beats) if b.life_end_tick <= b.first_tick]] = True
        idle = unspoken_codes(analysis.guide_spoke[~unseen])
        failing += int(np.count_nonzero(np.isin(idle, [CODE[x] for x in FAILURES])))
    return failing


def _judge_ticks(b: BeatAnalysis, declared: NDArray[np.int64], undone: np.int8) -> NDArray[np.int8]:
    """The outcome of declaring a beat with speech over at each tick: ``undone`` at or past the span's bound,
    premature when the guide speaks after it within the span (a later last word), else ok."""
    later = declared < (b.last_word_tick if b.last_word_tick is not None else -1)
    return np.where(declared >= b.bound_tick, undone, np.where(later, CODE[PREMATURE], CODE[OK])).astype(np.int8)


def judge_declared(
    b: BeatAnalysis,
    declared_tick: int | None,
    *,
    onset_timeout_s: float,
    narration_pause_s: float,
    quiet_s: float | None = None,
) -> str:
    """The outcome of a beat whose clock declared it over at ``declared_tick`` (None: never), as :func:`decide`
    judges its own declarations: unheard, silent and missed onsets first (a beat the guide spoke in that the floor
    hears none of is a missed onset: :attr:`BeatAnalysis.guide_spoke`), then the tick against the span.

    Any rule that ends beats (:mod:`clock.core.recommend.rules`) is judged here, so its outcomes mean what the level
    clock's do. ``narration_pause_s`` is ``P``, as for :func:`decide_quiets`.
    """
    if b.life_end_tick <= b.first_tick:
        return UNHEARD
    if b.start_tick is None or b.start_tick >= b.bound_tick:
        return OUTCOMES[int(unspoken_codes(b.guide_spoke))]
    if b.wait_s is not None and b.wait_s >= onset_timeout_s - EPS_S:
        return MISSED_ONSET
    if (declared_tick is None or declared_tick >= b.bound_tick) and b.room_s == float("inf"):
        return OK  # (the page's bound moved: the silence after the last word runs on until the clock declares)
    undone = CODE[b.undone(narration_pause_s)]
    if quiet_s is not None:
        undone = np.int8(silence_held(undone, b.silence_s >= quiet_s - EPS_S))
    tick = np.array([b.bound_tick if declared_tick is None else declared_tick], np.int64)
    return OUTCOMES[int(_judge_ticks(b, tick, undone)[0])]


def decide(
    analysis: FloorAnalysis, *, quiet_s: float, onset_timeout_s: float, narration_pause_s: float | None = None
) -> tuple[Decision, ...]:
    """The clock's decision in every beat for one setting (see :func:`decide_quiets`).

    Parameters
    ----------
    analysis : FloorAnalysis
    quiet_s, onset_timeout_s : float
    narration_pause_s : float, optional
        ``P`` of the recordings judged together (default: this recording's own).

    Returns
    -------
    tuple of Decision
        One per beat.
    """
    found = decide_quiets(
        analysis, quiets_s=[quiet_s], onset_timeout_s=onset_timeout_s, narration_pause_s=narration_pause_s
    )
    return tuple(
        Decision(OUTCOMES[int(code)], None if d < 0 else int(d), None if w < 0 else int(w))
        for code, d, w in zip(found.outcome[:, 0], found.declared_tick[:, 0], found.last_word_tick[:, 0])
    )


def _declare_moved(b: BeatAnalysis, t: NDArray[np.float64], target: float) -> int:
    """Where the clock declares a beat whose bound the page caused, once past its inner quiets: the first tick at
    which the (unpaused) quiet since the last word reaches ``target``, the silence running on at the level it had
    (the last tick of the trace where the recording ends first)."""
    assert b.last_word_tick is not None
    if b.count_s is not None:
        return min(_first_counted(b, b.last_word_tick, b.life_end_tick, target), t.size - 1)
    return int(_first_reaching(t, np.array([b.last_word_tick]), np.array([target]))[0])


def _first_counted(b: BeatAnalysis, w: int, e: int, target: float) -> int:
    """With pauses: the first tick of a run at which the clock's own count reaches ``target``."""
    assert b.count_s is not None and b.start_tick is not None
    c = b.count_s[w + 1 - b.start_tick : e - b.start_tick]
    found = np.flatnonzero(c >= target)
    # (None there: the page's bound moved, and the silence runs on past the beat's life: the life's last tick)
    return w + 1 + int(found[0]) if found.size else max(e - 1, w + 1)


def _first_reaching(t: NDArray[np.float64], w: NDArray[np.int64], target: NDArray[np.float64]) -> NDArray[np.int64]:
    """For each run, the first tick k > w with ``t[k] - t[w] >= target`` (the replay's float comparison)."""
    # Tick times are frames over the rate (irregular by up to a render quantum), so start from
    # where the sum lands in the times themselves.
    k = np.maximum(w + 1, np.searchsorted(t, t[w] + target, side="left"))
    k = np.minimum(k, t.size - 1)
    # The estimate is within a tick or two of the answer; settle it with the replay's own subtraction.
    for _ in range(4):
        back = (k - 1 > w) & (t[np.maximum(k - 1, 0)] - t[w] >= target)
        if not back.any():
            break
        k = np.where(back, k - 1, k)
    for _ in range(4):
        ahead = (t[k] - t[w] < target) & (k + 1 < t.size)
        if not ahead.any():
            break
        k = np.where(ahead, k + 1, k)
    return k


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
        together at this floor (:func:`narration_pause_s`): an ``end`` the
        clock waits past is ``aborted`` within it of the last word, else
        ``outpaced``. Default: this recording's own.
    rule, hangover_s : optional
        The rule the clock runs (see :func:`replay_ticks`; default: the level clock).

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
    n = trace.n_ticks
    end_s = float(t[-1]) + trace.tick_s if n else 0.0
    _warn_outside(events, end_s)
    logged = [e.t_s for e in events.of_kind("clock.quiet")]
    signals = _ProviderIndex(events)
    pauses = _PauseClock.from_events(events)
    terminals = events.terminals
    stops = beat_stops(events, analysis)

    def beat(j: int) -> Beat:
        a, rb, term = analysis.beats[j], played[j], terminals[j]
        time = lambda k: None if k is None else float(t[k])  # noqa: E731
        onset, last_word, ack_last = time(a.onset_tick), time(a.last_word_tick), time(a.ack_end_tick)
        narration_gaps = []
        if a.spoken and a.onset_tick is not None:  # (a beat without speech has no runs: nothing to visit)
            for w, e in zip(a.run_word[a.inner].tolist(), a.run_end[a.inner].tolist()):
                if w >= a.onset_tick:
                    narration_gaps.append((float(t[w]), float(t[e])))
        silence = None if (ack_last is None or onset is None) else onset - ack_last
        declared = rb.quiet_declared_s
        declared_tick = None if declared is None else int(np.searchsorted(t, declared, "left"))
        outcome = judge_declared(
            a, declared_tick, onset_timeout_s=onset_timeout_s, narration_pause_s=pause, quiet_s=quiet_s
        )
        # (the flags say the one judge's outcome: no second verdict)
        premature, stalled, missed = outcome == PREMATURE, outcome == STALLED, outcome == MISSED_ONSET
        if outcome == OK and a.room_s == float("inf") and (declared_tick is None or declared_tick >= a.bound_tick):
            # The page's bound moved: the clock declares in the silence after the beat's last word.
            k = _declare_moved(a, t, quiet_s - EPS_S)
            rb = replace(rb, last_word_s=last_word, quiet_declared_s=float(t[k]),
                         prompt_allowed_s=float(t[k]) + (term.linger_s or 0.0))  # fmt: skip
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
            gaps_s=tuple(b - w for w, b in narration_gaps),
            gap_at_s=tuple(w for w, _ in narration_gaps),
            quiet_gaps_s=tuple(pauses.unpaused(w, b) for w, b in narration_gaps),
            premature_risk=bool(silence is not None and silence >= quiet_s - EPS_S),
            replay=rb,
            premature=premature,
            logged_quiet_s=_first_in(logged, term.t_s, a.bound_s),
            linger_s=term.linger_s,
            bound=a.bound,
            stalled=stalled,
            missed_onset=missed,
            outcome=outcome,
            narration_pause_s=pause if a.ended_by_page else None,
            speech_at_end=a.speech_at_bound if a.ended_by_page else False,
            cause=a.cause,
            past_bound=a.past_bound,
            after_early_end=a.after_early_end,
            rule_stopped_s=stops[j].t_s,
            rule_stopped_line=stops[j].line,
            rule_stopped_assumed=stops[j].assumed,
            rule_stopped_risk=stops[j].risk,
            dead_air_s=(
                pauses.unpaused(rb.last_word_s, rb.quiet_declared_s)
                if outcome == OK and rb.quiet_declared_s is not None and rb.last_word_s is not None
                else None
            ),
            **signals.of(term, a.bound_s, rb),
        )

    # The beats with speech in the clock's life are made now; every other beat (unheard or silent) when read.
    kept = {j: beat(j) for j in analysis.active_beats().tolist()}
    unheard = analysis.unheard if analysis.unheard is not None else np.zeros(0, np.int64)
    return BeatList(len(terminals), kept, beat, unheard)


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


def provider_stopped(events: EventLog, analysis: FloorAnalysis) -> tuple[float | None, ...]:
    """Each beat's provider ``output_audio_buffer.stopped`` (as :attr:`Beat.provider_stopped_s` finds it), or None."""
    if not events.of_kind("output_audio_buffer.stopped"):
        return (None,) * len(analysis.beats)
    signals = _ProviderIndex(events)
    found = (
        signals._signal("output_audio_buffer.stopped", term, b.bound_s)
        for b, term in zip(analysis.beats, events.terminals)
    )
    return tuple(None if e is None else e.t_s for e in found)


@dataclass(frozen=True, slots=True)
class BeatStop:
    """The provider event a rule acts on in one beat (:func:`beat_stops`).

    Attributes
    ----------
    t_s : float or None
        The event used (None: the beat had none of its own while it was open).
    line : int or None
        Its line in the event log.
    assumed : bool
        The log gives no ids to tell the beat's own event (on the event or on the
        terminal response): the first event in the beat was assumed to be its own.
    others : int
        Other events of the kind applied while the beat was open: another
        response's (by id, skipped), or, where the event was assumed, those after it.
    risk : bool
        The event was assumed and another response's event may have been taken for
        it: another event lay in the beat, or an acknowledgment overlapped the beat.
    """

    t_s: float | None = None
    line: int | None = None
    assumed: bool = False
    others: int = 0
    risk: bool = False


_NO_STOP = BeatStop()


def beat_stops(events: EventLog, analysis: FloorAnalysis) -> tuple[BeatStop, ...]:
    """Each beat's own provider event as the page's clock applies it (what a rule acts on).

    The first event of :attr:`EventLog.stop_kind` applied (at a tick of the
    trace) while the beat is open (after its terminal response, before the next
    ``prompt``, terminal response or ``end``), in the log's order, whose
    ``response_id`` is the beat's terminal response's; where either has no id,
    the first one is assumed (:attr:`BeatStop.assumed`). What
    :func:`replay_ticks` gives the beat it has open. A page's own
    ``clock.stopped`` lines are what its clock applied, after a ``prompt`` too
    (the page chose which event to tell it): the replay follows them.
    """
    n = len(analysis.beats)
    t = analysis.t_s
    stop_kind = events.stop_kind
    if not events.of_kind(stop_kind):
        return (_NO_STOP,) * n
    used: list[Event | None] = [None] * n
    others = [0] * n
    ids: list[str | None] = [None] * n
    beat = -1
    open_ = False
    for e in events.events:
        if e.kind == "terminal":
            beat, open_ = beat + 1, True
            ids[beat] = e.response_id
        elif e.kind == "end" or (e.kind == "prompt" and stop_kind != PAGE_STOP):
            open_ = False
        elif e.kind == stop_kind and open_ and np.searchsorted(t, e.t_s, side="left") < t.size:
            if used[beat] is None and _own_stop(ids[beat], e):
                used[beat] = e
            else:
                others[beat] += 1
    out = []
    for j, found in enumerate(used):
        if found is None and not others[j]:
            out.append(_NO_STOP)
            continue
        assumed = found is not None and (ids[j] is None or found.response_id is None)
        ack = analysis.beats[j].ack_end_tick is not None
        out.append(
            BeatStop(
                None if found is None else found.t_s,
                None if found is None else found.line,
                assumed,
                others[j],
                assumed and (others[j] > 0 or ack),
            )
        )
    return tuple(out)


def rule_stopped(events: EventLog, analysis: FloorAnalysis) -> tuple[float | None, ...]:
    """Each beat's own provider event as the page's clock applies it (:func:`beat_stops`), or None.

    (The provider's own attribution by response id wherever it lies in the beat's span,
    :func:`provider_stopped`, is what the views report beside it.)
    """
    return tuple(s.t_s for s in beat_stops(events, analysis))


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


class _ProviderIndex:
    """The provider's own signals of a log (OpenAI Realtime), found per beat in logarithmic time."""

    _KINDS = ("output_audio_buffer.stopped", "output_audio_buffer.cleared", "input_audio_buffer.speech_started")

    def __init__(self, events: EventLog) -> None:
        self._all: dict[str, tuple[list[float], list[Event]]] = {}
        self._anonymous: dict[str, tuple[list[float], list[Event]]] = {}
        self._mine: dict[str, dict[str, Event]] = {}
        for kind in self._KINDS:
            found = events.of_kind(kind)
            self._all[kind] = ([e.t_s for e in found], list(found))
            anon = [e for e in found if e.response_id is None]
            self._anonymous[kind] = ([e.t_s for e in anon], anon)
            mine: dict[str, Event] = {}
            for e in found:
                if e.response_id is not None:
                    mine.setdefault(e.response_id, e)
            self._mine[kind] = mine

    @staticmethod
    def _first(table: tuple[list[float], list[Event]], lo: float, hi: float) -> Event | None:
        times, found = table
        at = bisect_left(times, lo)
        return found[at] if at < len(times) and times[at] < hi else None

    def _signal(self, kind: str, term: Event, until: float) -> Event | None:
        if term.response_id is not None:
            # The beat's own response's event, wherever it is; else the first unattributed one in the span.
            # An event after the beat's bound is not the beat's (the next response's, or a late one).
            mine = self._mine[kind].get(term.response_id)
            if mine is not None and term.t_s <= mine.t_s < until:
                return mine
            return self._first(self._anonymous[kind], term.t_s, until)
        return self._first(self._all[kind], term.t_s, until)

    def of(self, term: Event, span_end: float, rb: ReplayBeat) -> dict[str, Any]:
        """The provider's own signals in a beat, as :class:`Beat` fields.

        * ``provider_stopped_s``: the ``output_audio_buffer.stopped`` of the beat's
          response (same ``response_id``) in the beat's span, or else the first one
          without an id in the span;
        * ``barge_in_s``: the first ``input_audio_buffer.speech_started`` in the
          span before the beat ended (the replay's declaration, or the span's end);
        * ``cleared_s``: the first ``output_audio_buffer.cleared`` in the span (or of
          the beat's response).
        """
        stopped = self._signal("output_audio_buffer.stopped", term, span_end)
        cleared = self._signal("output_audio_buffer.cleared", term, span_end)
        ended = rb.quiet_declared_s if rb.quiet_declared_s is not None else span_end
        barge = self._first(self._all["input_audio_buffer.speech_started"], term.t_s, ended)
        return {
            "response_id": term.response_id,
            "provider_stopped_s": None if stopped is None else stopped.t_s,
            "barge_in_s": None if barge is None else barge.t_s,
            "cleared_s": None if cleared is None else cleared.t_s,
        }
