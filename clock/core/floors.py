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
            check_floor(f)  # (raises, naming the first floor that is not a level)
    order = np.argsort(given, kind="stable")
    fs = given[order]
    t, level = trace.t_s, trace.level
    n, n_f = t.size, fs.size
    base = log_base(trace, events, t)
    bump, sound = log_guide(trace, events)
    k0_all, ka_all, bound0_all, code0_all = base["k0"], base["ka"], base["bound_s"], base["code"]
    spoke_all = spoke_in(sound, k0_all, np.maximum(base["kb"], k0_all))  # (by the log: who may be kept)
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
    join, chain = chains(s, e, t, follows)

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
    ack_bound = terminal & in_progress_at(t, s, e, follows, before_next, kraw) & (t[first] > term_s)
    bound_s = np.where(ack_bound, t[first], bound_s)
    code = np.where(ack_bound, BOUND_KINDS.index("acknowledgment"), code)
    kb = bound_ticks(t, bound_s, code, k0, ka)
    guide_spoke = spoke_in(sound, k0, np.maximum(kb, k0))  # (each floor's spans: acknowledgments bound them)
    spoken = lives & (start < kb)
    ib = np.maximum(np.searchsorted(run_start, jn + kb, side="left") - 1, 0)
    lw = np.where(spoken, np.minimum(e[ib], kb - 1), -1)
    # The quiets inside the span (runs ia .. ib - 1 end before the last word), and a narration's pauses: those
    # past an acknowledgment that overlaps the terminal response, if one does. The acknowledgment runs on across
    # dips between words, to the first pause at or after its first run (``g``); the narration's pauses follow it.
    ia, ib = np.where(spoken, ia, 0), np.where(spoken, ib, 0)
    need = _segment_max(reach, ia, ib, -np.inf)
    ack = in_progress_at(t, s, e, follows, last_before(k0), k0)
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
    # analyse_beat): analysed on its own.
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
            a = analyse_beat(
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
