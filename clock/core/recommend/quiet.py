"""The quiet time: the longest gap the clock must bridge plus the margin, within the room the beats leave.

Pure numpy. The formula's quiet time at one floor (:func:`choose_quiet`), the
gap evidence behind the recommendation, the chance a future gap exceeds it,
and where ``check`` waives the gap margin (:func:`gap_margin_waived`).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
from numpy.typing import NDArray

from ..model import CLEAR_S, EPS_S
from ..times import clock_time, round_up
from .corpus import AtFloor, Corpus, Setting
from .evidence import THIN, GapEvidence


def choose_quiet(c: AtFloor, margin: float) -> tuple[float | None, str]:
    """The quiet time at one floor: the longest gap plus the margin, within the room the beats leave.

    Gaps inside logged beats must be bridged (the replay holds the quiet time
    to them); gaps of recordings without a log count too, but never push the
    quiet time past the room a logged beat leaves before its bound.
    """
    logged = max((g for _, _, g, _ in c.gaps), default=None)
    unlogged = max((g for _, _, g in c.unlogged_gaps), default=None)
    longest = max((g for g in (logged, unlogged) if g is not None), default=None)
    if longest is None:
        return None, "no gap inside a beat"
    room = min((r for _, _, r in c.rooms), default=None)
    need = max(c.needs, default=float("-inf"))
    preferred = round_up(longest + margin + CLEAR_S, "0.05")
    rule = f"longest gap {longest:.3f} s + margin {margin:g} s, rounded up to 0.05 s"
    if room is None or preferred <= room + EPS_S:
        return preferred, rule
    if logged is not None and unlogged is not None and unlogged > logged:
        honoured = round_up(logged + margin + CLEAR_S, "0.05")
        if honoured <= room + EPS_S:
            return honoured, (
                f"longest gap inside a logged beat {logged:.3f} s + margin {margin:g} s, rounded up to 0.05 s "
                f"(a gap of {unlogged:.3f} s in a recording without a log would stall a logged beat)"
            )
    base = logged if logged is not None else longest
    if need >= room or base >= room:
        return preferred, rule
    # The margin does not fit before the nearest bound: halfway between the longest gap and the room.
    middle = Decimal(repr(round_up((base + room) / 2, "0.05")))
    for k in range(0, 200):
        q = float(middle - Decimal("0.05") * k)
        if need < q - EPS_S <= room:
            return q, (
                f"halfway between the longest gap {base:.3f} s and the least room after a last word {room:.3f} s "
                f"(the margin {margin:g} s does not fit), rounded to 0.05 s"
            )
    return round(
        room, 9
    ), f"the least room after a last word, {room:.3f} s (the longest gap {base:.3f} s leaves no margin)"


#: A tail whose exceedances spread less than this (s) has no scale to extrapolate (gaps nearly identical).
_TAIL_SCALE_MIN_S = 1e-6


def _tail_exceedance(gaps: NDArray[np.float64], q: float) -> float | None:
    """P(gap > q) from an exponential tail over the 75th percentile.

    None where there is no tail to extrapolate: fewer than 5 exceedances,
    ``q`` at or below the 75th percentile (the fit says nothing there), or
    gaps over it nearly identical (their mean excess under
    ``_TAIL_SCALE_MIN_S``, e.g. bursts exactly every 3 s), where the fit's
    scale is float noise.
    """
    u = float(np.percentile(gaps, 75))
    excess = gaps[gaps > u] - u
    if excess.size < 5:
        return None
    scale = float(excess.mean())
    if q <= u or scale < _TAIL_SCALE_MIN_S:
        return None
    return float(excess.size / gaps.size * math.exp(-(q - u) / scale))


def gap_margin_waived(quiet_s: float, need_s: float, room_s: float, *, margin_s: float, tick_s: float) -> bool:
    """Whether ``check``'s gap check notes, rather than fails, a gap within ``margin_s`` of ``quiet_s``.

    Only where no quiet time could keep the margin on both sides: the quiet
    times that end every beat right (the replay's ``need_s < q <= room_s``,
    :meth:`clock.core.analysis.FloorAnalysis.quiet_range` over the recordings
    judged together) span less than twice the margin, ``quiet_s`` lies
    inside them, and no more than a tick below their centre (what ``derive``
    recommends there). Where a wider run could have held the margin, or
    the quiet time sits nearer the longest gap than the centre, the gap
    fails.
    """
    return (
        need_s < quiet_s - EPS_S <= room_s
        and room_s - need_s < 2 * margin_s - EPS_S
        and quiet_s - need_s >= (room_s - need_s) / 2 - tick_s - EPS_S
    )


def gap_evidence(
    corpus: Corpus, judged: list[int], chosen: Setting | None, c: AtFloor, notes: list[str]
) -> GapEvidence:
    """The gaps the clock must bridge at the chosen floor (``c``, over ``judged``) and the quiet time, with a note
    where the quiet time does not keep its margin over the longest gap inside a logged beat."""
    margins, obs = corpus.margins, corpus.obs
    unlogged = tuple(obs[i].name for i in judged if obs[i].events is None)
    all_gaps = c.gaps + [(name, w, g, True) for name, w, g in c.unlogged_gaps]
    narration = [(name, w, g) for name, w, g, is_narration in all_gaps if is_narration]
    acks = [g for _, _, g, is_narration in all_gaps if not is_narration]
    g_all = np.array([g for _, _, g in narration])
    g = g_all[g_all >= margins.min_gap_s]
    bridged = [g for _, _, g, _ in all_gaps]
    room = min(c.rooms, key=lambda r: (r[2], r[0], r[1])) if c.rooms else None
    quiet = None if chosen is None else chosen.quiet_s
    # The gaps the replay and check hold the quiet time to: those inside logged beats.
    longest_bridged = max((g for _, _, g, _ in c.gaps), default=None)
    left = None if quiet is None or longest_bridged is None else quiet - longest_bridged
    kept = left is None or left > margins.quiet_margin_s + EPS_S
    if not kept and left is not None:
        assert chosen is not None and quiet is not None and longest_bridged is not None
        tick = float(obs[judged[0]].trace.tick_s) if judged else 0.0
        notes.append(_margin_note(c, chosen.floor, quiet, longest_bridged, room, margins.quiet_margin_s, tick))
    return GapEvidence(
        n_gaps=int(g.size),
        n_all_gaps=int(g_all.size),
        floor=None if chosen is None else chosen.floor,
        min_gap_s=margins.min_gap_s,
        p50_s=float(np.percentile(g, 50)) if g.size else None,
        p90_s=float(np.percentile(g, 90)) if g.size else None,
        p99_s=float(np.percentile(g, 99)) if g.size else None,
        max_gap_s=max(bridged) if bridged else None,
        longest=tuple(sorted(narration, key=lambda x: (-x[2], x[0], x[1]))[:5]),
        n_ack=len(acks),
        ack_max_s=max(acks) if acks else None,
        room_s=None if room is None else room[2],
        room_at=None if room is None else (room[0], room[1]),
        unlogged=unlogged,
        quiet_margin_s=margins.quiet_margin_s,
        quiet_s=quiet,
        rule="" if chosen is None else chosen.quiet_rule,
        p_exceed_rule_of_three=3 / g.size if g.size > 3 else None,
        p_exceed_tail=_tail_exceedance(g, quiet) if (g.size and quiet is not None) else None,
        gaps_s=tuple(float(x) for x in g),
        thin=g.size < THIN["gaps"],
        margin_left_s=left,
        margin_kept=kept,
    )


def _margin_note(
    c: AtFloor,
    floor: float,
    quiet: float,
    longest_bridged: float,
    room: tuple[str, float, float] | None,
    margin_s: float,
    tick_s: float,
) -> str:
    """Why the quiet time does not keep its margin over the longest gap inside a logged beat, and what ``check``'s
    gap check will make of it."""
    left = quiet - longest_bridged
    where = "" if room is None else f" (the beat whose last word is at {room[0]}:{clock_time(room[1])} leaves "
    where += "" if room is None else f"{room[2]:.3f} s of quiet before its bound)"
    # check's gap check holds the narration's gaps (not an acknowledgment's silence) to quiet - margin.
    limit = (quiet or 0.0) - margin_s - 1e-9
    held = sum(g >= limit for _, _, g, is_narration in c.gaps if is_narration)
    ranges = [a.quiet_range(narration_pause_s=a.narration_pause_s) for a in c.analyses]
    need_s = max((r[0] for r in ranges), default=float("-inf"))
    room_s = min((r[1] for r in ranges), default=float("inf"))
    says = (
        "no quiet time keeps the margin on both sides (the quiet times that end every beat right span "
        f"{need_s:.3f} .. {room_s:.3f} s), so check's gap check passes "
        f"{'that gap' if held == 1 else f'{held} gaps'} with a note"
        if held and gap_margin_waived(quiet or 0.0, need_s, room_s, margin_s=margin_s, tick_s=tick_s)
        else f"check's gap check fails {'that gap' if held == 1 else f'{held} gaps'}"
        if held
        else "the longest is an acknowledgment's silence, so check's gap check (narration gaps) still passes"
    )
    return (
        f"the margin is not kept: at floor {floor:g}, the quiet time {quiet:g} s leaves {left:.3f} s over the "
        f"longest gap inside a logged beat ({longest_bridged:.3f} s), not the margin "
        f"{margin_s:g} s{where}; {says}"
    )
