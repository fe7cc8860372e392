"""Beats: the onset after each terminal response, the narration's gaps, and the clock replay.

Pure numpy. Times are in seconds on the audio timeline.

A beat opens at a terminal response ``T`` and spans until the next terminal
response or ``prompt`` event (or the end of the recording).

**Analysis** (what happened in the recording):

* If the tick at or after ``T`` is speech and so was the tick before it, an
  acknowledgment overlaps the terminal response (``ack_overlap``); its last
  word is the end of that run of speech.
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

**Replay** (what the browser clock would do, tick by tick):

idle -> (terminal response) waiting -> (first tick above the floor) speaking
-> done at the first tick where the unpaused time since the last word
reaches ``quiet_s``; then ``linger_s`` before the next prompt is allowed.
``pause`` freezes the quiet count (and the onset timeout), ``resume``
continues it, ``end`` aborts the beat. A beat still waiting after
``onset_timeout_s`` (unpaused) is ``no_onset``. A declared beat is
``premature`` when speech starts again after the declaration and before the
beat's span ends. Events at a time ``<= t`` are applied before tick ``t``.
Comparisons of elapsed time against ``quiet_s`` allow 1 ns for float rounding.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError, SpeechClockWarning
from .events import Event, EventLog
from .levels import LevelTrace
from .segments import _check_floor, runs

__all__ = [
    "DONE",
    "IDLE",
    "SPEAKING",
    "WAITING",
    "Beat",
    "Replay",
    "ReplayBeat",
    "beats",
    "replay",
    "replay_ticks",
    "span_ends",
]

_EPS_S = 1e-9


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
    """

    terminal_s: float
    start_s: float | None
    last_word_s: float | None
    quiet_declared_s: float | None
    no_onset: bool
    aborted: bool
    prompt_allowed_s: float | None


@dataclass(frozen=True, slots=True)
class Beat:
    """One beat: the analysis of the recording and the replayed clock's decision.

    See the module notes for each field's meaning; ``None`` where a value
    does not apply.
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
    response_id: str | None = None
    provider_stopped_s: float | None = None
    barge_in_s: float | None = None
    cleared_s: float | None = None

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
    beats : tuple of ReplayBeat
    state : ndarray of int8, shape (n_ticks,)
        ``IDLE``, ``WAITING``, ``SPEAKING``, or ``DONE`` at the tick a beat
        was declared quiet.
    quiet_count_s : ndarray of float64, shape (n_ticks,)
        Unpaused seconds since the last word while speaking (0 otherwise).
    """

    beats: tuple[ReplayBeat, ...]
    state: NDArray[np.int8]
    quiet_count_s: NDArray[np.float64]


@dataclass
class _Open:
    """The beat the clock is in."""

    terminal_s: float
    linger_s: float | None
    start_s: float | None = None
    last_word_s: float | None = None

    def close(self, *, declared: float | None = None, no_onset: bool = False, aborted: bool = False) -> ReplayBeat:
        allowed = None if declared is None else declared + (self.linger_s or 0.0)
        return ReplayBeat(self.terminal_s, self.start_s, self.last_word_s, declared, no_onset, aborted, allowed)


def replay_ticks(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float = float("inf"),
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
        Give up waiting for speech after this long (default: never).

    Returns
    -------
    Replay
        One :class:`ReplayBeat` per terminal response, in order, and the
        clock's state at every tick.
    """
    floor = _check_floor(floor)
    _check_times(quiet_s, onset_timeout_s)
    t = trace.t_s
    speech = trace.level > floor
    queue = list(events.events)
    pauses = _PauseClock()
    done: list[ReplayBeat] = []
    states = np.zeros(trace.n_ticks, np.int8)
    quiet_count = np.zeros(trace.n_ticks, np.float64)
    cur: _Open | None = None
    ei = 0
    for k in range(trace.n_ticks):
        now = float(t[k])
        while ei < len(queue) and queue[ei].t_s <= now:
            e = queue[ei]
            ei += 1
            if e.kind == "terminal":
                if cur is not None:
                    done.append(cur.close(aborted=True))
                cur = _Open(e.t_s, e.linger_s)
            elif e.kind == "pause":
                pauses.pause(e.t_s)
            elif e.kind == "resume":
                pauses.resume(e.t_s)
            elif e.kind == "end" and cur is not None:
                done.append(cur.close(aborted=True))
                cur = None
        if cur is None:
            continue
        if cur.start_s is None:
            states[k] = WAITING
            if speech[k]:
                cur.start_s = cur.last_word_s = now
                states[k] = SPEAKING
            elif pauses.unpaused(cur.terminal_s, now) >= onset_timeout_s - _EPS_S:
                done.append(cur.close(no_onset=True))
                cur = None
            continue
        states[k] = SPEAKING
        if speech[k]:
            cur.last_word_s = now
            continue
        assert cur.last_word_s is not None
        quiet_count[k] = pauses.unpaused(cur.last_word_s, now)
        if not pauses.paused and quiet_count[k] >= quiet_s - _EPS_S:
            states[k] = DONE
            done.append(cur.close(declared=now))
            cur = None
    if cur is not None:
        done.append(cur.close())
    # Terminal responses after the last tick never reach the clock.
    done.extend(ReplayBeat(e.t_s, None, None, None, True, False, None) for e in queue[ei:] if e.kind == "terminal")
    states.flags.writeable = False
    quiet_count.flags.writeable = False
    return Replay(tuple(done), states, quiet_count)


def replay(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float = float("inf"),
) -> list[ReplayBeat]:
    """The replayed clock's beats (see :func:`replay_ticks`)."""
    return list(replay_ticks(trace, events, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s).beats)


def span_ends(events: EventLog, end_s: float) -> list[float]:
    """Each terminal's span end: the next terminal or prompt after it, or ``end_s``."""
    bounds = [e.t_s for e in events.of_kind("terminal", "prompt")]
    ends = []
    for term in events.terminals:
        later = [b for b in bounds if b > term.t_s]
        ends.append(min(later) if later else end_s)
    return ends


def beats(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float = float("inf"),
) -> list[Beat]:
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
        How long the clock waits for speech (default: forever).

    Returns
    -------
    list of Beat
        One per terminal response, in time order.

    Warns
    -----
    SpeechClockWarning
        An event after the end of the recording, or before its start.
    """
    played = replay(trace, events, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s)
    t = trace.t_s
    speech = trace.level > floor
    n = trace.n_ticks
    end_s = float(t[-1]) + trace.tick_s if n else 0.0
    for e in events.events:
        if e.t_s > end_s or e.t_s < 0:
            where = f"{events.source}:{e.line}" if events.source and e.line else "event log"
            when = (
                f"after the end of the recording ({end_s:.3f} s)" if e.t_s > end_s else "before the recording started"
            )
            warnings.warn(f"{where}: {e.type} at {e.t_s:.3f} s is {when}", SpeechClockWarning, stacklevel=2)
    logged = [e.t_s for e in events.of_kind("clock.quiet")]
    pauses = _PauseClock.from_events(events)
    result = []
    for index, (term, span_end, rb) in enumerate(zip(events.terminals, span_ends(events, end_s), played)):
        k0 = int(np.searchsorted(t, term.t_s - _EPS_S, side="left"))
        in_span = (t >= t[k0] if k0 < n else np.zeros(n, bool)) & (t < span_end)
        ack = bool(0 < k0 < n and speech[k0] and speech[k0 - 1])
        ack_last = None
        search_from = k0
        if ack:
            run_end = k0 + int(np.argmin(speech[k0:])) - 1 if not speech[k0:].all() else n - 1
            ack_last = float(t[run_end])
            search_from = run_end + 1
        onset_k = _first_rising_edge(speech, search_from, in_span)
        onset = None if onset_k is None else float(t[onset_k])
        last_word = None
        gaps: list[tuple[float, float]] = []  # (last word, next onset)
        if onset_k is not None:
            narration = speech & in_span
            narration[:onset_k] = False
            spans = runs(narration)
            last_word = float(t[spans[-1, 1]])
            gaps = [(float(t[a]), float(t[b])) for a, b in zip(spans[:-1, 1], spans[1:, 0])]
        silence = None if (ack_last is None or onset is None) else onset - ack_last
        premature = False
        if rb.quiet_declared_s is not None:
            after = (t > rb.quiet_declared_s) & (t < span_end) & speech
            premature = bool(after.any())
        logged_quiet = next((q for q in logged if term.t_s <= q < span_end), None)
        result.append(
            Beat(
                index=index,
                terminal_s=term.t_s,
                span_end_s=span_end,
                onset_s=onset,
                onset_latency_s=None if onset is None else onset - term.t_s,
                ack_overlap=ack,
                ack_last_word_s=ack_last,
                ack_silence_s=silence,
                last_word_s=last_word,
                gaps_s=tuple(b - a for a, b in gaps),
                gap_at_s=tuple(a for a, _ in gaps),
                quiet_gaps_s=tuple(pauses.unpaused(a, b) for a, b in gaps),
                premature_risk=bool(silence is not None and silence >= quiet_s - _EPS_S),
                replay=rb,
                premature=premature,
                logged_quiet_s=logged_quiet,
                linger_s=term.linger_s,
                **_provider_signals(events, term, span_end, rb),
            )
        )
    return result


def _provider_signals(events: EventLog, term: Event, span_end: float, rb: ReplayBeat) -> dict[str, Any]:
    """The provider's own signals in a beat (OpenAI Realtime), as :class:`Beat` fields.

    * ``provider_stopped_s``: the ``output_audio_buffer.stopped`` of the beat's
      response (same ``response_id``), or else the first one in the beat's span;
    * ``barge_in_s``: the first ``input_audio_buffer.speech_started`` in the
      span before the beat ended (the replay's declaration, or the span's end);
    * ``cleared_s``: the first ``output_audio_buffer.cleared`` in the span (or of
      the beat's response).
    """

    def first(kind: str, until: float) -> Event | None:
        found = [e for e in events.of_kind(kind) if term.t_s <= e.t_s < until]
        if term.response_id is not None:
            mine = [e for e in events.of_kind(kind) if e.response_id == term.response_id]
            found = mine or [e for e in found if e.response_id is None or e.response_id == term.response_id]
        return found[0] if found else None

    stopped = first("output_audio_buffer.stopped", span_end)
    cleared = first("output_audio_buffer.cleared", span_end)
    ended = rb.quiet_declared_s if rb.quiet_declared_s is not None else span_end
    barge = next((e for e in events.of_kind("input_audio_buffer.speech_started") if term.t_s <= e.t_s < ended), None)
    return {
        "response_id": term.response_id,
        "provider_stopped_s": None if stopped is None else stopped.t_s,
        "barge_in_s": None if barge is None else barge.t_s,
        "cleared_s": None if cleared is None else cleared.t_s,
    }


def _first_rising_edge(speech: NDArray[np.bool_], start: int, allowed: NDArray[np.bool_]) -> int | None:
    """First tick k >= start, inside ``allowed``, that is speech after a quiet tick."""
    prev = np.concatenate([[False], speech[:-1]])
    edges = speech & ~prev & allowed
    edges[:start] = False
    found = np.flatnonzero(edges)
    return int(found[0]) if found.size else None
