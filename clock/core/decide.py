"""Every setting's decisions from one analysis: where the clock declares each beat quiet, and its outcome.

:func:`decide_quiets` answers the outcome of any quiet time and onset timeout from
one :func:`clock.core.analysis.analyse` per floor, without replaying tick by tick; it gives the
same decisions as :func:`clock.core.replay.replay_ticks` (the tests hold it to the replay on every
setting of a grid). :func:`judge_declared` judges a declaration any rule made, :func:`failing_beats` counts the
failures; every outcome is the one judge's (:mod:`clock.core.outcome`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .analysis import FloorAnalysis
from .beat_analysis import BeatAnalysis
from .causes import CAUSE_NAMES
from .model import EPS_S
from .outcome import (
    BOUND_KINDS,
    CODE,
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    PREMATURE,
    SILENT,
    UNHEARD,
    judge,
    silence_held,
    undone_codes,
    unspoken_codes,
)
from .replay import check_times

__all__ = [
    "Decision",
    "Decisions",
    "decide",
    "decide_quiets",
    "declare_moved",
    "failing_beats",
    "first_counted",
    "first_reaching",
    "judge_declared",
]


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
    """The clock's decision in every beat for each quiet time, from one :func:`clock.core.analysis.analyse`.

    Gives the tick-by-tick replay's decisions (the tests hold it to
    :func:`clock.core.replay.replay_ticks` on every setting of a grid): every beat is judged for
    every quiet time at once by the one judge (:func:`clock.core.outcome.judge`, which
    :meth:`clock.core.floors.FloorTable.outcomes` shares), and where the clock declares quiet
    is found per beat: a quiet time only decides which quiet run first lasts
    long enough, and where in it the count reaches it.

    ``narration_pause_s`` is ``P`` (see :func:`clock.core.analysis.narration_pause_s`): an
    ``end`` the clock waits past is ``aborted`` when the beat's last word is
    closer to it than ``P`` (or speech is at its tick), else ``outpaced``.
    Default: this recording's own (``analysis.narration_pause_s``); callers
    judging recordings together pass the largest over them at this floor.
    """
    pause = analysis.narration_pause_s if narration_pause_s is None else narration_pause_s
    q = np.asarray(quiets_s, dtype=np.float64)
    for value in q.tolist():
        check_times(value, onset_timeout_s)
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
            declared[i, ok] = [declare_moved(b, t, float(x)) for x in target[ok].tolist()]
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
            d = first_reaching(t, w, target[reached])
        else:
            d = np.array([first_counted(b, int(wj), int(ej), tj) for wj, ej, tj in zip(w, e, target[reached])])
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
        check_times(value, onset_timeout_s)
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


def declare_moved(b: BeatAnalysis, t: NDArray[np.float64], target: float) -> int:
    """Where the clock declares a beat whose bound the page caused, once past its inner quiets: the first tick at
    which the (unpaused) quiet since the last word reaches ``target``, the silence running on at the level it had
    (the last tick of the trace where the recording ends first)."""
    assert b.last_word_tick is not None
    if b.count_s is not None:
        return min(first_counted(b, b.last_word_tick, b.life_end_tick, target), t.size - 1)
    return int(first_reaching(t, np.array([b.last_word_tick]), np.array([target]))[0])


def first_counted(b: BeatAnalysis, w: int, e: int, target: float) -> int:
    """With pauses: the first tick of a run at which the clock's own count reaches ``target``."""
    assert b.count_s is not None and b.start_tick is not None
    c = b.count_s[w + 1 - b.start_tick : e - b.start_tick]
    found = np.flatnonzero(c >= target)
    # (None there: the page's bound moved, and the silence runs on past the beat's life: the life's last tick)
    return w + 1 + int(found[0]) if found.size else max(e - 1, w + 1)


def first_reaching(t: NDArray[np.float64], w: NDArray[np.int64], target: NDArray[np.float64]) -> NDArray[np.int64]:
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
