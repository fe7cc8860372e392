"""Where a beat begins and ends: its life in ticks, its span's bound, and an acknowledgment that moves the bound.

A beat opens at a terminal response ``T`` and spans until the next
``prompt``, terminal response or ``end`` event (or the end of the
recording); see :func:`span_bounds` for an acknowledgment of the next beat.
The clock sees the beat from the tick its terminal response applies at until the next terminal response or an
``end`` the page did not cause aborts it (its life, :data:`STOPS`).

Speech is in progress at a tick (:func:`in_progress`: speech there and at the tick before, or only a dip between
words) is the one rule of an acknowledgment, this beat's at its terminal response and the next beat's, which
bounds this one; runs of speech joined across dips between words are :func:`chains`.

What every floor's analysis of a log shares (each beat's life and its bound without speech) is found once per log
and trace (:func:`log_base`) and kept with the log.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .causes import bound_causes, own_stopped, page_declared, page_ends
from .events import EventLog
from .levels import LevelTrace
from .outcome import BOUND_KINDS
from .pauses import pause_spans, unpaused_each
from .segments import runs, word_gaps

__all__ = [
    "STOPS",
    "acknowledged",
    "bound_ticks",
    "chains",
    "in_progress",
    "in_progress_at",
    "log_base",
    "span_bounds",
    "span_ends_s",
]


_NO_RUNS = np.zeros((0, 2), np.int64)


#: What ends a beat's life (``_lives``): the end of the trace, the next terminal response, an ``end``.
STOPS = ("trace end", "terminal", "end")


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
    """What an analysis needs of a log at any floor, as arrays (made once per log and trace: :func:`log_base`)."""
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
    ends it (:data:`STOPS`)."""
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
        moved, moved_s = acknowledged(out_s, out_k, log["term_t"], t_s, speech)
        out_s[moved] = moved_s
        out_k[moved] = code["acknowledgment"]
    return out_s, out_k


def acknowledged(
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
    chain = chains(starts, ends, t_s, follows)[1]
    kk = k[bounded]
    r = np.searchsorted(starts, kk, side="left") - 1  # the last run that starts before the tick (-1: none)
    first = starts[chain[np.maximum(r, 0)]]
    ack = in_progress_at(t_s, starts, ends, follows, r, kk) & (t_s[first] > term_t[bounded])
    return bounded[ack], t_s[first[ack]]


def in_progress(t: NDArray[np.float64], before: Any, after: Any, k: Any) -> NDArray[np.bool_]:
    """Whether speech is in progress at tick ``k``: speech at ``k`` and at the tick before it, or only a dip between
    words there (:func:`clock.core.segments.word_gaps`: the quiet from ``before``, the last speech tick before
    ``k``, to ``after``, the first at or after it, is shorter than ``MIN_GAP_S``). -1 stands for no such tick;
    vectorised over ``before``, ``after`` and ``k``.

    The one rule of an acknowledgment: this beat's at its terminal response (:func:`clock.core.analysis.analyse`,
    :func:`clock.core.floors.analyse_floors`), and the next beat's, which bounds this one (:func:`span_bounds`).
    """
    before, after = np.asarray(before), np.asarray(after)
    pair = np.stack([np.maximum(before, 0), np.maximum(after, 0)])  # (as two runs of one tick: the quiet between)
    across = (before == k - 1) & (after == k)
    return np.asarray((before >= 0) & (after >= 0) & (across | word_gaps(pair, pair, t)[0]), bool)


def in_progress_at(
    t: NDArray[np.float64],
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    follows: NDArray[np.bool_],
    r: NDArray[np.int64],
    k: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """:func:`in_progress` at ticks ``k`` from runs of speech ``[starts, ends]`` (ticks), ``r`` the last run that
    starts before each tick (-1: none), ``follows[i]`` whether run ``i + 1`` is of the same mask (floor)."""
    some = r >= 0
    rr = np.maximum(r, 0)
    nxt = np.minimum(rr + 1, max(starts.size - 1, 0))
    before = np.where(some, np.minimum(ends[rr], k - 1), -1)
    after = np.where(some & (ends[rr] >= k), k, np.where(some & follows[rr], starts[nxt], -1))
    return in_progress(t, before, after, k)


def chains(
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


def log_base(trace: LevelTrace, events: EventLog, t: NDArray[np.float64]) -> dict[str, Any]:
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


def _make_log_base(events: EventLog, t: NDArray[np.float64], end_s: float) -> dict[str, Any]:
    n = t.size
    log = _log_arrays(events, t)
    k0, ka, stop = _lives(log, n)
    bound_s, code = _span_bound_arrays(events, t_s=t, speech=None, end_s=end_s, log=log)
    spans = pause_spans(events)
    term_t = log["term_t"]
    last = t[np.maximum(ka - 1, 0)] if n else term_t
    wait = np.where(ka > k0, unpaused_each(term_t, last, spans), np.nan)
    return {
        "t_s": t, "end_s": end_s, "k0": k0, "ka": ka, "stop": stop, "cause": log["cause"], "term_t": term_t,
        "declared": log["declared"], "own_stop": log["own_stop"], "linger": log["linger"],
        "spans": spans, "bound_s": bound_s,
        "code": code, "kb": bound_ticks(t, bound_s, code, k0, ka), "wait": wait,
        "unheard": np.flatnonzero(ka <= k0).astype(np.int64), "after_end": int(np.count_nonzero(k0 >= n)),
    }  # fmt: skip


def bound_ticks(
    t: NDArray[np.float64], bound_s: NDArray[np.float64], code: NDArray[np.int8], k0: NDArray[np.int64], ka: NDArray
) -> NDArray[np.int64]:
    """Each span's ``bound_tick``: the first tick at or after its bound, within the clock's life."""
    kb = np.where(code == BOUND_KINDS.index("recording end"), ka, np.minimum(np.searchsorted(t, bound_s), ka))
    return np.maximum(kb, k0).astype(np.int64)
