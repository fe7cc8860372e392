"""Every floor at once: a recording's beats at many floors (:func:`analyse_floors`, :class:`FloorTable`).

A sweep asks every quiet time at every floor. Which ticks are speech changes with the floor, but the order of
the ticks by level does not: ``r[k]``, the number of floors under tick k's level, says at once at which floors
tick k is speech (``r[k] > j``), so every floor's runs of speech come from one pass over the ticks, and each
beat's summary at every floor (where the clock starts, the last word, the longest quiet inside the span, the
room after the last word) from searches in those runs. Acknowledgments follow the one rule
:func:`clock.core.analysis.analyse` follows (:func:`clock.core.spans.in_progress` at a terminal response, runs
joined across dips between words by :func:`clock.core.spans.chains`), on every floor's runs at once. A beat a
pause touches, or one whose bound the page caused and whose narration may run past it, is analysed floor by
floor (:func:`clock.core.beat_analysis.analyse_beat`). Tests hold it to :func:`clock.core.analysis.analyse`
field by field (on acknowledgments with dips between their words too) and, with :meth:`FloorTable.outcomes`, to
the tick-by-tick replay on every setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .beat_analysis import RESPONSE_MIN_S, BeatAnalysis, analyse_beat
from .causes import CAUSE_NAMES, PAGE
from .decide import first_counted, first_reaching
from .events import EventLog
from .levels import LevelTrace
from .model import EPS_S
from .outcome import BOUND_KINDS, judge, undone_codes, visitor
from .replay import PROMPT_ON_TIME_S
from .segments import MIN_GAP_S, check_floor
from .spans import bound_ticks, chains, in_progress_at, log_base
from .speech import log_guide, spoke_in

__all__ = ["FloorTable", "analyse_floors"]


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
        :attr:`clock.core.analysis.FloorAnalysis.guide_spoke` at each floor (its spans).
    paused : dict
        ``(floor index, kept index)`` -> the :class:`BeatAnalysis` of a spoken beat analysed on its own: one a
        pause touches (its quiet is counted tick by tick), or one whose narration ran on past the page's bound.
    left_out : tuple of int
        The beats of the log the table does not keep (silent or unheard at every floor): how many have a tick in
        their life (silent) and how many have none (unheard).
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
    left_out: tuple[int, int] = (0, 0)

    def declared_ticks(
        self, floor_index: NDArray[np.int64], kept_index: NDArray[np.int64], quiet_s: NDArray[np.float64]
    ) -> NDArray[np.int64]:
        """Where the clock declares quiet in beats it ends right (outcome ok), one per triple: the first tick after
        the last word at which the quiet counted reaches the quiet time."""
        target = np.asarray(quiet_s, np.float64) - EPS_S
        d = first_reaching(self.t_s, self.last_word_tick[floor_index, kept_index], target)
        for (j, i), b in self.paused.items():
            assert b.last_word_tick is not None
            if b.count_s is None:  # (no pause touches it: counted as the rest are)
                continue
            for x in np.flatnonzero((floor_index == j) & (kept_index == i)).tolist():
                d[x] = first_counted(b, b.last_word_tick, b.life_end_tick, float(target[x]))
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
        """Each kept beat's outcome (indices into :data:`clock.core.outcome.OUTCOMES`) at every floor and quiet
        time, shape ``(n_floors, n_kept, n_quiets)``, as :func:`clock.core.decide.decide_quiets` judges them;
        ``narration_pause_s`` is ``P`` at each floor."""
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

    What :func:`clock.core.analysis.analyse` finds at one floor, for many: one pass over the ticks for all floors,
    then one search per beat and floor, with no loop over floors (a beat a pause touches is analysed floor by
    floor).

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
            check_floor(f)  # (raises, naming the first floor that is not a level)
    order = np.argsort(given, kind="stable")
    fs = given[order]
    t, level = trace.t_s, trace.level
    base = log_base(trace, events, t)
    bump, sound = log_guide(trace, events)
    spoke_all = spoke_in(sound, base["k0"], np.maximum(base["kb"], base["k0"]))  # (by the log: who may be kept)
    # How many floors lie under each tick's level: tick k is speech at floor j (sorted) when r[k] > j.
    r = np.searchsorted(fs, level, side="left").astype(np.int64) if fs.size else np.zeros(t.size, np.int64)
    said = np.flatnonzero(r > 0)
    # (and a beat the guide spoke in that no floor here hears: a missed onset at every floor)
    k0_all, ka_all = base["k0"], base["ka"]
    kept = np.flatnonzero(
        (np.searchsorted(said, k0_all) < np.searchsorted(said, ka_all)) | (spoke_all & (ka_all > k0_all))
    )
    run_start, run_end = _run_edges(r, t.size)
    if not run_start.size:
        return _heard_nowhere(given, t, base, kept, spoke_all)
    left = _left_out(base, kept)
    runs = _floor_runs(t, r, fs.size, run_start, run_end)
    grid = _summaries(runs, base, kept, sound)
    alone = _page_bounds(runs, base, kept, grid)
    alone |= _touched(t, base, kept)[None, :]
    if bump is not None and kept.size and t.size:
        # A floor that hears the room's noise in a beat's life tells its words from the bumps: analysed on its own.
        k0, ka = k0_all[kept], ka_all[kept]
        loudest = _segment_max(np.append(np.where(bump, level, 0.0), 0.0), k0, np.maximum(ka, k0), 0.0)
        alone |= grid.spoken & (fs[:, None] < loudest[None, :])
    paused = _analyse_alone(runs, base, kept, grid, alone, order, bump)
    back = np.argsort(order, kind="stable")  # to the floors' given order
    g = grid
    return FloorTable(
        given, t, kept.astype(np.int64), k0_all[kept], g.spoken[back], g.wait[back], g.need[back], g.room[back],
        g.pause[back], g.lw[back], g.kb[back], g.cause[back].astype(np.int8), g.code[back].astype(np.int8),
        g.at_bound[back], g.after_word[back], paused, g.silence[back] if np.isfinite(g.silence).any() else None,
        g.guide_spoke[back], left,
    )  # fmt: skip


def _left_out(base: dict[str, Any], kept: NDArray[np.int64]) -> tuple[int, int]:
    """The beats not kept: how many have a tick in their life (silent at every floor), how many none (unheard)."""
    life = np.asarray(base["ka"] > base["k0"], bool)
    left = np.ones(life.size, bool)
    left[kept] = False
    return int((life & left).sum()), int((~life & left).sum())


def _heard_nowhere(
    given: NDArray[np.float64],
    t: NDArray[np.float64],
    base: dict[str, Any],
    kept: NDArray[np.int64],
    spoke_all: NDArray[np.bool_],
) -> FloorTable:
    """The table where no floor hears a tick: every kept beat is one the guide spoke in that none hears (a missed
    onset)."""
    n_f, b_n = given.size, kept.size
    nan, no_tick, never = (
        np.full((n_f, b_n), np.nan),
        np.full((n_f, b_n), -1, np.int64),
        np.full((n_f, b_n), -np.inf),
    )
    code = np.broadcast_to(base["code"][kept], (n_f, b_n)).copy()
    return FloorTable(
        given, t, kept.astype(np.int64), base["k0"][kept], np.zeros((n_f, b_n), bool), nan, never, never.copy(),
        np.zeros((n_f, b_n)), no_tick, np.broadcast_to(base["kb"][kept], (n_f, b_n)).copy(),
        np.broadcast_to(base["cause"][kept], (n_f, b_n)).astype(np.int8), code.astype(np.int8),
        np.zeros((n_f, b_n), bool), nan.copy(), {}, None, np.broadcast_to(spoke_all[kept], (n_f, b_n)).copy(),
        _left_out(base, kept),
    )  # fmt: skip


def _run_edges(r: NDArray[np.int64], n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every floor's runs of speech: their first and last ticks, as keys ``j * n + tick`` ordered by floor then
    tick (``r[k]``: the floors under tick ``k``'s level)."""
    r_before = np.concatenate([[0], r[:-1]]).astype(np.int64)
    r_after = np.concatenate([r[1:], [0]]).astype(np.int64)
    return _floor_edges(np.maximum(r - r_before, 0), r_before, n), _floor_edges(np.maximum(r - r_after, 0), r_after, n)


@dataclass(frozen=True, slots=True)
class _FloorRuns:
    """Every floor's runs of speech ``[s, e]`` (ticks), ordered by floor then tick (``start`` and ``end``: keys
    ``j * n + tick``), with the quiet after each run to the next at the same floor (``reach``: to the tick before
    the next word; ``gap``: to the next word; -inf after a floor's last run), and the runs joined across dips
    between words (``join``, ``chain``: :func:`clock.core.spans.chains`)."""

    t: NDArray[np.float64]
    r: NDArray[np.int64]
    n_f: int
    start: NDArray[np.int64]
    end: NDArray[np.int64]
    s: NDArray[np.int64]
    e: NDArray[np.int64]
    reach: NDArray[np.float64]
    gap: NDArray[np.float64]
    jn: NDArray[np.int64]
    follows: NDArray[np.bool_]
    join: NDArray[np.bool_]
    chain: NDArray[np.int64]

    @property
    def n_runs(self) -> int:
        """How many runs all floors hold."""
        return int(self.start.size)

    @property
    def last_run(self) -> int:
        """The index of the last run (0 where there is none)."""
        return max(self.n_runs - 1, 0)

    def speech_at(self, k: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Whether tick ``k`` is speech, at each floor."""
        n = self.t.size
        return (k >= 0) & (k < n) & (self.r[np.clip(k, 0, max(n - 1, 0))] > np.arange(self.n_f)[:, None])

    def last_before(self, k: NDArray[np.int64]) -> NDArray[np.int64]:
        """The last run at each floor that starts before tick ``k`` (-1: none)."""
        found = np.searchsorted(self.start, self.jn + k, side="left") - 1
        return np.where((found >= 0) & (self.start[np.maximum(found, 0)] >= self.jn), found, -1)


def _floor_runs(
    t: NDArray[np.float64], r: NDArray[np.int64], n_f: int, run_start: NDArray[np.int64], run_end: NDArray[np.int64]
) -> _FloorRuns:
    """Every floor's runs of speech (:func:`_run_edges`), with the quiets between them and their chains."""
    n = t.size
    s, e = run_start % n if n else run_start, run_end % n if n else run_end
    # The quiet after run i, to run i + 1 at the same floor: its reach (to the tick before the next word) and gap.
    same = (run_start[1:] // max(n, 1)) == (run_start[:-1] // max(n, 1))
    nxt = np.minimum(s[1:], n - 1) if n else s[1:]
    reach = np.append(np.where(same, t[np.maximum(nxt - 1, 0)] - t[e[:-1]], -np.inf), -np.inf)
    gap = np.append(np.where(same, t[nxt] - t[e[:-1]], -np.inf), -np.inf)
    jn = (np.arange(n_f, dtype=np.int64) * n)[:, None]
    # Runs joined across dips between words, at each floor (an acknowledgment's words: see span_bounds, analyse).
    follows = np.append(same, False)  # run i + 1 is at the same floor
    join, chain = chains(s, e, t, follows)
    return _FloorRuns(t, r, n_f, run_start, run_end, s, e, reach, gap, jn, follows, join, chain)


@dataclass(slots=True)
class _Grid:
    """Each kept beat's summary at every sorted floor, arrays of shape ``(n_floors, n_kept)``: what
    :class:`FloorTable` gives, with each span's bound (``bound_s``) and the run holding its last word (``ib``)."""

    spoken: NDArray[np.bool_]
    wait: NDArray[np.float64]
    need: NDArray[np.float64]
    room: NDArray[np.float64]
    pause: NDArray[np.float64]
    lw: NDArray[np.int64]
    kb: NDArray[np.int64]
    cause: NDArray[np.int8]
    code: NDArray[np.int64]
    at_bound: NDArray[np.bool_]
    after_word: NDArray[np.float64]
    bound_s: NDArray[np.float64]
    ib: NDArray[np.int64]
    guide_spoke: NDArray[np.bool_]
    silence: NDArray[np.float64]

    def put(self, j: int, i: int, a: BeatAnalysis) -> None:
        """Kept beat ``i`` at floor ``j`` as analysed on its own (a spoken one)."""
        self.wait[j, i] = np.nan if a.wait_s is None else a.wait_s
        self.need[j, i], self.room[j, i], self.pause[j, i], self.silence[j, i] = (
            a.need_s, a.room_s, a.pause_s, a.silence_s,
        )  # fmt: skip
        self.lw[j, i], self.kb[j, i] = a.last_word_tick, a.bound_tick  # type: ignore[assignment]
        self.at_bound[j, i] = a.speech_at_bound
        self.after_word[j, i] = a.bound_s - a.last_word_s  # type: ignore[operator]
        self.cause[j, i], self.code[j, i] = CAUSE_NAMES.index(a.cause), BOUND_KINDS.index(a.bound)


def _ack_bounds(
    runs: _FloorRuns, base: dict[str, Any], kept: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """Each kept beat's bound at every floor: ``(bound_s, kind code, bound tick)``. An acknowledgment of the next
    beat bounds it where it began (see :func:`clock.core.spans.span_bounds`)."""
    t, n, shape = runs.t, runs.t.size, (runs.n_f, kept.size)
    bound0, code0 = base["bound_s"][kept], base["code"][kept]
    bound_s = np.broadcast_to(bound0, shape).copy()
    code = np.broadcast_to(code0, shape).copy()
    kraw = np.searchsorted(t, bound0, side="left")
    terminal = (code0 == BOUND_KINDS.index("terminal")) & (kraw > 0) & (kraw < n)
    before_next = runs.last_before(kraw)
    first = runs.s[runs.chain[np.maximum(before_next, 0)]]
    moved = in_progress_at(t, runs.s, runs.e, runs.follows, before_next, kraw) & (t[first] > base["term_t"][kept])
    ack_bound = terminal & moved
    bound_s = np.where(ack_bound, t[first], bound_s)
    code = np.where(ack_bound, BOUND_KINDS.index("acknowledgment"), code)
    return bound_s, code, bound_ticks(t, bound_s, code, base["k0"][kept], base["ka"][kept])


def _summaries(runs: _FloorRuns, base: dict[str, Any], kept: NDArray[np.int64], sound: NDArray[np.int32]) -> _Grid:
    """Each kept beat at every floor from searches in the runs: where the clock starts, the last word, the longest
    quiet inside the span, the narration's longest pause, the room after the last word, the wait for speech."""
    t, jn, s, e = runs.t, runs.jn, runs.s, runs.e
    k0, ka, term_s = base["k0"][kept], base["ka"][kept], base["term_t"][kept]
    # The first run that reaches k0 (holding the clock's first speech tick, if it starts before ka).
    reaching = np.searchsorted(runs.end, jn + k0, side="left")
    ia = np.minimum(reaching, runs.last_run)
    lives = (runs.n_runs > 0) & (reaching < runs.n_runs) & (runs.start[ia] < jn + ka)
    start = np.where(lives, np.maximum(s[ia], k0), -1)
    bound_s, code, kb = _ack_bounds(runs, base, kept)
    guide_spoke = spoke_in(sound, k0, np.maximum(kb, k0))  # (each floor's spans: acknowledgments bound them)
    spoken = lives & (start < kb)
    ib = np.maximum(np.searchsorted(runs.start, jn + kb, side="left") - 1, 0)
    lw = np.where(spoken, np.minimum(e[ib], kb - 1), -1)
    # The quiets inside the span (runs ia .. ib - 1 end before the last word), and a narration's pauses: those
    # past an acknowledgment that overlaps the terminal response, if one does. The acknowledgment runs on across
    # dips between words, to the first pause at or after its first run (``g``); the narration's pauses follow it.
    ia, ib = np.where(spoken, ia, 0), np.where(spoken, ib, 0)
    need = _segment_max(runs.reach, ia, ib, -np.inf)
    ack = in_progress_at(t, s, e, runs.follows, runs.last_before(k0), k0)
    pauses = np.flatnonzero(~runs.join)  # (each floor's last run is never joined, so one is found at or after ia)
    g = pauses[np.searchsorted(pauses, ia)]
    pause = _segment_max(runs.gap, np.where(ack, g + 1, ia), ib, 0.0)
    lw_c = np.maximum(lw, 0)
    room = np.where(spoken & (lw < kb - 1), t[np.maximum(kb - 1, 0)] - t[lw_c], -np.inf)
    wait = np.where(spoken & (start > k0), t[np.maximum(start - 1, 0)] - term_s, np.nan)
    cause = np.broadcast_to(base["cause"][kept], (runs.n_f, kept.size)).copy()
    return _Grid(
        spoken, wait, need, room, pause, lw, kb, cause, code, runs.speech_at(kb),
        np.where(spoken, bound_s - t[lw_c], np.nan), bound_s, ib, guide_spoke, np.full(spoken.shape, np.nan),
    )  # fmt: skip


def _page_bounds(runs: _FloorRuns, base: dict[str, Any], kept: NDArray[np.int64], grid: _Grid) -> NDArray[np.bool_]:
    """A bound the page caused moves with the replayed declaration (see :mod:`clock.core.beat_analysis`): the
    silence after the last word continues (the grid's room becomes inf), unless the guide spoke on past it (the
    next run at this floor follows the last word within the beat's longest pause, at least a dip), or the floor
    hears sound at the page's declaration on into the bound. Returns where a beat must be analysed on its own."""
    t, n, jn, s, e, ib, kb = runs.t, runs.t.size, runs.jn, runs.s, runs.e, grid.ib, grid.kb
    k0, ka = base["k0"][kept], base["ka"][kept]
    declared0, own0, linger0 = base["declared"][kept], base["own_stop"][kept], base["linger"][kept]
    page = grid.spoken & (grid.cause == CAUSE_NAMES.index(PAGE))
    nx = np.minimum(ib + 1, runs.last_run)
    follows_on = (ib + 1 < runs.n_runs) & (runs.start[nx] < jn + n) & (s[nx] < ka) & (s[nx] >= kb)
    next_s = t[np.minimum(s[nx], max(n - 1, 0))]
    gap_on = next_s - t[np.maximum(grid.lw, 0)]
    on_time = np.abs(grid.bound_s - (declared0 + linger0)) <= PROMPT_ON_TIME_S  # (NaN where not declared: False)
    soon = on_time & (next_s < grid.bound_s + RESPONSE_MIN_S)
    # (where the provider said when the beat's own audio drained, speech that begins before it is the beat's)
    soon |= next_s < np.nan_to_num(own0, nan=-np.inf)
    on = page & ((e[ib] >= kb) | (follows_on & ((gap_on <= np.maximum(grid.pause, MIN_GAP_S) + EPS_S) | soon)))
    on |= page & (base["stop"][kept] == 0)  # (the recording's end bounds it: see beat_analysis._moved)
    # A floor that hears sound at the page's declaration, on into the bound, stalls whatever the bound (see
    # analyse_beat): analysed on its own.
    kd = np.searchsorted(t, np.nan_to_num(declared0, nan=np.inf), side="left")
    at_kd = (kd < n) & (runs.r[np.minimum(kd, max(n - 1, 0))] > np.arange(runs.n_f)[:, None])
    on |= grid.spoken & at_kd & (kd >= k0) & (kd < kb) & (e[ib] >= kb - 1)
    grid.room = np.where(page & ~on, np.inf, grid.room)
    return np.asarray(on, bool)


def _touched(t: NDArray[np.float64], base: dict[str, Any], kept: NDArray[np.int64]) -> NDArray[np.bool_]:
    """The kept beats a pause touches: they count only unpaused time, so each is analysed floor by floor."""
    touched = np.zeros(kept.size, bool)
    if base["spans"]:
        k0, ka, term_s = base["k0"][kept], base["ka"][kept], base["term_t"][kept]
        last_t = np.where(ka > k0, t[np.maximum(ka - 1, 0)], term_s)
        for lo_p, hi_p in base["spans"]:
            touched |= (lo_p <= last_t) & (hi_p > term_s)
    return touched


def _analyse_alone(
    runs: _FloorRuns,
    base: dict[str, Any],
    kept: NDArray[np.int64],
    grid: _Grid,
    alone: NDArray[np.bool_],
    order: NDArray[np.int64],
    bump: NDArray[np.bool_] | None,
) -> dict[tuple[int, int], BeatAnalysis]:
    """Analyse each beat marked ``alone`` at its floor on its own (:func:`clock.core.beat_analysis.analyse_beat`),
    into the grid; returns the spoken ones by ``(floor index as given, kept index)`` (:attr:`FloorTable.paused`)."""
    t, spans = runs.t, base["spans"]
    paused: dict[tuple[int, int], BeatAnalysis] = {}
    for j in range(runs.n_f):
        here = np.flatnonzero(alone[j])
        if not here.size:
            continue
        speech = runs.r > j
        idx = np.flatnonzero(speech)
        for i in here.tolist():
            b = int(kept[i])
            a = analyse_beat(
                b, float(base["term_t"][b]), float(grid.bound_s[j, i]), BOUND_KINDS[grid.code[j, i]],
                int(base["k0"][b]), int(base["ka"][b]), t, speech, idx, spans, CAUSE_NAMES[int(base["cause"][b])],
                int(base["stop"][b]), float(base["declared"][b]), float(base["own_stop"][b]),
                float(base["linger"][b]), bump,
            )  # fmt: skip
            grid.spoken[j, i] = a.spoken
            if a.spoken:
                paused[int(order[j]), i] = a  # by the floor's place as given
                grid.put(j, i, a)
    return paused
