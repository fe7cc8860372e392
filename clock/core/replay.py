"""The tick replay: what the browser clock would do, tick by tick (:func:`replay_ticks`).

Pure numpy. Times are in seconds on the audio timeline.

idle -> (terminal response) waiting -> (first tick above the floor) speaking
-> done at the first tick where the unpaused time since the last word
reaches ``quiet_s``; then ``linger_s`` before the next prompt is allowed.
``pause`` freezes the quiet count (and the onset timeout), ``resume``
continues it, ``end`` aborts the beat. A beat still waiting after
``onset_timeout_s`` (unpaused) is ``no_onset``. Events at a time ``<= t`` are
applied before tick ``t``. Comparisons of elapsed time against ``quiet_s``
allow 1 ns for float rounding.

**Rules** (:data:`clock.core.thresholds.RULES`; ``speechclock.js`` runs each as the replay does,
and :mod:`clock.core.recommend.rules` replays them over whole corpora): the level clock
above (``level``), or a rule told the provider's ``output_audio_buffer.stopped``
(:attr:`clock.core.events.EventLog.stop_kind`), which may end the beat sooner.
A beat's event is its own (:func:`clock.core.provider.beat_stops`): the first one applied while
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

**The page's declarations** (:func:`page_declarations`): a log that does not say where the page's clock declared
each beat quiet, but says the setting it ran (or follows the committed one), gets them from this replay, so the
causes of its bounds are known (:mod:`clock.core.causes`).

The replay is the reference: :func:`clock.core.decide.decide` answers every setting from one analysis per
floor without replaying, and the tests hold it to :func:`replay_ticks` on every setting of a grid.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .causes import page_ends
from .events import Event, EventLog
from .levels import LevelTrace
from .made import Made
from .model import EPS_S
from .pauses import PauseClock
from .segments import check_floor
from .thresholds import (
    DEFAULT_ONSET_TIMEOUT_S,
    LEVEL,
    LEVEL_AFTER_STOPPED,
    STOPPED,
    STOPPED_QUIET,
    Thresholds,
    check_rule,
)

__all__ = [
    "DONE",
    "IDLE",
    "PAGE_STOP",
    "PROMPT_ON_TIME_S",
    "SPEAKING",
    "WAITING",
    "Replay",
    "ReplayBeat",
    "check_times",
    "own_stop",
    "page_declarations",
    "replay",
    "replay_ticks",
]


#: Per-tick clock states in :class:`Replay` (``state`` array codes).
IDLE, WAITING, SPEAKING, DONE = 0, 1, 2, 3


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
        (:func:`clock.core.provider.beat_stops`).
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


def check_times(quiet_s: float, onset_timeout_s: float) -> None:
    """Raise InvalidParameterError unless the quiet time is finite and > 0 and the onset timeout > 0."""
    if not (np.isfinite(quiet_s) and quiet_s > 0):
        raise InvalidParameterError(f"quiet_s must be > 0, got {quiet_s!r}")
    if not (onset_timeout_s > 0):
        raise InvalidParameterError(f"onset_timeout_s must be > 0, got {onset_timeout_s!r}")


#: The event a page that runs ``speechclock.js`` logs when it tells its clock the provider's event (the clock applied
#: it in the beat it had open, and the replay follows the page there: the page chose which event to tell it).
PAGE_STOP = "clock.stopped"


#: A page's prompt comes this close to its clock's declaration plus the beat's linger (the page prompts on "ready").
PROMPT_ON_TIME_S = 0.05


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


def own_stop(response_id: str | None, e: Event) -> bool:
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


class _Clock:
    """The replayed clock between ticks: the beat it has open, its pauses, the beats it closed, and its state at
    every tick so far."""

    def __init__(
        self, events: EventLog, n_ticks: int, *, quiet_s: float, onset_timeout_s: float, rule: str, hangover_s: float
    ) -> None:
        self.quiet_s, self.onset_timeout_s, self.rule, self.hangover_s = quiet_s, onset_timeout_s, rule, hangover_s
        self.stop_kind = events.stop_kind
        self.moved = page_ends(events)  # (the page's own ends move with the replayed declaration: they abort nothing)
        self.pauses = PauseClock()
        self.done = _Closed(events.terminals)
        self.states = np.zeros(n_ticks, np.int8)
        self.quiet_count = np.zeros(n_ticks, np.float64)
        self.cur: _Open | None = None

    def apply(self, e: Event, i: int) -> None:
        """Apply the log's ``i``-th event ``e`` (before the first tick at or after its time)."""
        cur = self.cur
        if e.kind == "terminal":
            if cur is not None:
                self.done.add(cur, aborted=True)
            self.cur = _Open(e.t_s, e.linger_s, response_id=e.response_id)
        elif e.kind == "prompt" and cur is not None and self.stop_kind != PAGE_STOP:
            cur.bounded = True
        elif e.kind == "pause":
            self.pauses.pause(e.t_s)
        elif e.kind == "resume":
            self.pauses.resume(e.t_s)
        elif e.kind == "end" and cur is not None and i not in self.moved:
            self.done.add(cur, aborted=True)
            self.cur = None
        elif e.kind == self.stop_kind and cur is not None and cur.stopped_s is None and not cur.bounded:
            if own_stop(cur.response_id, e):
                cur.stopped_s = e.t_s

    def tick(self, k: int, now: float, spoken: bool) -> None:
        """Decide tick ``k`` (at ``now``; ``spoken``: the level is above the floor) in the open beat."""
        cur = self.cur
        assert cur is not None
        # The event alone ends the beat at any unpaused tick from its first word on, speech or not.
        alone = self.rule == STOPPED and cur.stopped_s is not None and not self.pauses.paused
        if cur.start_s is None:
            self._wait(k, now, spoken, alone)
            return
        self.states[k] = SPEAKING
        if spoken:
            cur.last_word_s = now
            if alone:
                self._declare(k, now)
            return
        assert cur.last_word_s is not None
        count = self.quiet_count[k] = self.pauses.unpaused(cur.last_word_s, now)
        told = cur.stopped_s is not None
        if not self.pauses.paused and _quiet_ends(self.rule, told, count, self.quiet_s, self.hangover_s):
            self._declare(k, now)

    def _wait(self, k: int, now: float, spoken: bool, alone: bool) -> None:
        """A tick of a beat still waiting for speech: it starts speaking, gives up at the onset timeout, or waits."""
        cur = self.cur
        assert cur is not None
        self.states[k] = WAITING
        if spoken:
            cur.start_s = cur.last_word_s = now
            self.states[k] = SPEAKING
            if alone:
                self._declare(k, now)
        elif self.pauses.unpaused(cur.terminal_s, now) >= self.onset_timeout_s - EPS_S:
            self.done.add(cur, no_onset=True)
            self.cur = None

    def _declare(self, k: int, now: float) -> None:
        """The clock declares the open beat over at tick ``k``."""
        assert self.cur is not None
        self.states[k] = DONE
        self.done.add(self.cur, declared=now)
        self.cur = None

    def finish(self, unapplied: Sequence[Event]) -> Replay:
        """The replay, once the ticks ran out: the beat still open closes, and terminal responses after the last
        tick (``unapplied``) never reach the clock."""
        if self.cur is not None:
            self.done.add(self.cur)
        for e in unapplied:
            if e.kind == "terminal":
                self.done.add(_Open(e.t_s, None), no_onset=True)
        self.states.flags.writeable = False
        self.quiet_count.flags.writeable = False
        return Replay(self.done.beats(), self.states, self.quiet_count)


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
        One of :data:`clock.core.thresholds.RULES` (default: the level clock).
    hangover_s : float, optional
        The rule's hangover (:func:`check_rule`).

    Returns
    -------
    Replay
        One :class:`ReplayBeat` per terminal response, in order, and the
        clock's state at every tick.
    """
    floor = check_floor(floor)
    check_times(quiet_s, onset_timeout_s)
    check_rule(rule, hangover_s)
    hangover = quiet_s if hangover_s is None else hangover_s
    clock = _Clock(
        events, trace.n_ticks, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s, rule=rule, hangover_s=hangover
    )
    t_s, above = trace.t_s, trace.level > floor
    queue = events.events
    ei, n_events = 0, len(queue)
    for k in range(trace.n_ticks):
        if k % _TICKS_READ == 0:  # the ticks as Python values, a block at a time (a long trace stays arrays)
            t, speech = t_s[k : k + _TICKS_READ].tolist(), above[k : k + _TICKS_READ].tolist()
        now = t[k % _TICKS_READ]
        while ei < n_events and queue[ei].t_s <= now:
            clock.apply(queue[ei], ei)
            ei += 1
        if clock.cur is not None:
            clock.tick(k, now, speech[k % _TICKS_READ])
    return clock.finish(queue[ei:])


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
