"""The provider's signals in each beat (OpenAI Realtime, when logged): the event a rule acts on, and the provider's own.

* :func:`beat_stops`: the beat's own ``output_audio_buffer.stopped`` (or the page's ``clock.stopped``) as the
  page's clock applies it, the event a rule acts on (:mod:`clock.core.replay`);
* :class:`ProviderIndex`: when the provider said the beat's audio buffer stopped (``provider_stopped_s``, against
  the measured last word), and whether a barge-in (``barge_in_s``) or a cleared buffer (``cleared_s``) cut the
  beat, by response id.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np

from .analysis import FloorAnalysis
from .events import Event, EventLog
from .replay import PAGE_STOP, ReplayBeat, own_stop

__all__ = ["BeatStop", "ProviderIndex", "beat_stops", "provider_stopped", "rule_stopped"]


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
    :func:`clock.core.replay.replay_ticks` gives the beat it has open. A page's own
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
            if used[beat] is None and own_stop(ids[beat], e):
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


def provider_stopped(events: EventLog, analysis: FloorAnalysis) -> tuple[float | None, ...]:
    """Each beat's provider ``output_audio_buffer.stopped`` (as :attr:`clock.core.beats.Beat.provider_stopped_s`
    finds it), or None."""
    if not events.of_kind("output_audio_buffer.stopped"):
        return (None,) * len(analysis.beats)
    signals = ProviderIndex(events)
    found = (
        signals._signal("output_audio_buffer.stopped", term, b.bound_s)
        for b, term in zip(analysis.beats, events.terminals)
    )
    return tuple(None if e is None else e.t_s for e in found)


class ProviderIndex:
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
        """The provider's own signals in a beat, as :class:`clock.core.beats.Beat` fields.

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
