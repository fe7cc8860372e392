"""Derive's chooser of a setting inside the valid region, by the one margin policy.

Pure numpy. :func:`place_on_grid` places the engine's setting on a replayed
grid of floors, quiet times and onset timeouts: the setting no failing one
comes within both margins of, nearest the engine's floor with the least
quiet time; then the floor in the run of floors that end every beat right at
that setting. Each candidate is ranked by the one margin policy
(:func:`clock.core.recommend.margin.margin_tier`, which compare's tuning
ranks its settings by too), then by derive's tie-break: nearest the engine's
floor, then the least quiet time. What this module holds is how derive
measures the margins on its grid: on one floor's axis the quiet time that
keeps the quiet margin from both edges (:func:`quiet_on_axis`), across
floors the one that keeps it at every floor within the floor margin
(:func:`boxed_quiet`), and the floor margin held to the failing floors found
between the grid's.

Why derive does not hand a grid of failure counts to
:func:`clock.core.recommend.margin.choose_setting` (compare's chooser), which
ranks by the same policy: derive knows its edges, compare samples them.
Along the quiet time, each floor's replay gives the exact run of quiet times
that end every beat right (``need_s < q <= room_s``), and derive's quiet time
is the least one the margin clear of them (rounded up to 0.05 s where that
keeps it), or the run's centre to 0.01 s; on a ladder of quiet times the
edges are known only to a step, and the chooser measures the margin from
the last valid step (the edge lies anywhere in the step past it), so
sampling derive's axis would move its quiet time by up to a step or give up
margin it has. Along the floor, derive's floor is not held to the grid's
floors: the failing floor nearest a candidate is bisected to ``EDGE_DB``
(only for the best candidate: each step is a replay), and the floor is then
placed between grid floors (:func:`clock.core.recommend.floor.place_floor`),
so a run of floors 6.1 dB wide leaves derive room for a 3 dB margin, while on a
fixed list of thresholds (Silero's probabilities, webrtcvad's modes) no
listed threshold keeps it and the run's centre is the best there is. The
policy (the tiers, and a tie-break the caller gives) is one; how far a
setting stands from an edge is measured where each caller knows it.
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import NamedTuple

import numpy as np

from ..model import CLEAR_S, EPS_S, Margins
from ..times import clock_time, round_up
from .corpus import Corpus, Setting
from .evidence import counted
from .floor import PlacedFloor, place_floor
from .floor_math import db, sig_digits
from .grid import EDGE_DB, GRID_DB, Grid, GridFloor, build_grid
from .margin import margin_tier
from .replay import count_failing


def place_on_grid(
    corpus: Corpus, members: list[int], chosen: Setting, notes: list[str], *, floor_margin: bool = True
) -> Setting:
    """The setting chosen on a replayed grid of floors, quiet times and onset timeouts.

    Floors in ``GRID_DB`` steps through the engine's floor, from the lowest
    noise to the highest speech median; at each, one analysis per recording
    (cached: the leave-one-out runs share them) gives, as the replay decides
    (:meth:`clock.core.beat_analysis.BeatAnalysis.allows`), the quiet times that end
    every beat right (``need < q <= room``) and the onset timeouts (above
    the longest wait: that axis is separable). A floor at which a beat the
    engine's floor hears (or the guide spoke in: :meth:`Corpus.spoke`) goes
    unheard, which hides a narration's end or takes an acknowledgment for
    narration (:meth:`Corpus.misread`), or which lies at or under a
    recording's noise (p99) that the engine's floor clears, fails; the grid
    reaches the first floor past the lowest noise and the highest speech
    median. Where a setting's floor margin turns on it, the failing floor
    nearest it is found between two grid floors by bisection (``EDGE_DB``).
    Recommended, nearest the engine's floor and then with the
    least quiet time: a setting no failing one comes within both margins of
    (its quiet time ``quiet_margin_s`` clear at every floor closer than
    ``floor_margin_db``, and no failing floor that close along the floor
    axis; :func:`boxed_quiet`); else one at least the margins from every
    failing setting along each axis through it, where an axis whose valid
    run is narrower than twice its margin gives the run's centre, said with
    both edges; else any setting that ends every beat right, with a warning.
    The onset timeout is the formula's at the floor (``onset_margin_s`` over
    the longest latency). The formula's quiet time (longest gap + margin,
    rounded up to 0.05 s) stays where it keeps the margins.

    The floor is then placed at that quiet time and timeout: the run of
    floors that end every beat right around it (:class:`FloorRange`), its
    edges found outward on the grid and, within ``2 * floor_margin_db +
    GRID_DB`` of the floor, by bisection to ``EDGE_DB`` (every point, the
    edges and the floors within the margin of the floor replayed by
    :func:`clock.core.decide.failing_beats`, the one judge); at least
    ``floor_margin_db`` inside both edges where the run allows it (the
    engine's floor where it does, else two significant digits nearest it),
    else the run's centre in dB, with a warning naming the floor.
    """
    if chosen.quiet_s is None or chosen.onset_timeout_s is None:
        return chosen  # nothing recommended for the quiet time or the timeout: no grid to place it on
    grid = build_grid(corpus, members, chosen.floor)
    if grid is None or not grid.rows[grid.at0].ok:
        return chosen
    candidates = [c for j in range(len(grid.rows)) if (c := _candidate(grid, j, corpus.margins, chosen.quiet_s))]
    if not candidates:
        return chosen
    best = _settle(grid, candidates, corpus.margins.floor_margin_db)
    placed = place_floor(grid, best.j, best.quiet_s, best.timeout_s, corpus.margins, keep_quiet_margin=best.q_kept)
    boxed = best.boxed and _still_boxed(grid, placed, best.quiet_s, corpus.margins)
    rule = _quiet_rule(grid, chosen, placed, best, boxed=boxed)
    floor_rule = _floor_rule(grid, placed, best.quiet_s, corpus.margins.floor_margin_db)
    if floor_margin and not placed.run.keeps(placed.floor):
        notes.append(placed.run.warning(placed.floor, best.quiet_s))
    found = placed.run.evidence(placed.floor, best.quiet_s, best.timeout_s)
    q, timeout, floor = best.quiet_s, best.timeout_s, placed.floor
    return replace(
        chosen, floor=floor, quiet_s=q, onset_timeout_s=timeout, quiet_rule=rule, floor_rule=floor_rule, run=found
    )


def quiet_on_axis(g: GridFloor, margin: float, tick_s: float) -> tuple[float, bool]:
    """The quiet time at one floor of the grid: the least at least ``margin`` from every failing one (rounded up
    to 0.05 s where that keeps it), or, where the run is narrower than twice the margin, its centre (to 0.01 s).
    Returns it and whether the margin is kept."""
    need, room = g.need_s, g.room_s
    if room - need >= 2 * margin - EPS_S:
        # The longest gap runs to the next speech tick, a tick past the last quiet tick (check holds gaps to it).
        gap = need + tick_s
        q = round_up(gap + margin + CLEAR_S, "0.05")
        if room - q < margin - EPS_S:
            q = round_up(gap + margin + CLEAR_S, "0.001")
        return q, True
    centre = (need + room) / 2
    for step in ("0.01", "0.001"):
        near = float((Decimal(repr(centre)) / Decimal(step)).to_integral_value() * Decimal(step))
        if need < near - EPS_S <= room:
            return near, False
    return round(centre, 9), False


def boxed_quiet(
    grid: list[GridFloor], j: int, margin: float, fmargin: float, tick_s: float, formula: float | None
) -> float | None:
    """The least quiet time at floor ``grid[j]`` that stays ``margin`` from every failing quiet time at every floor
    closer than ``fmargin`` dB (so no failing setting is within both margins of it), or None when none does.

    Rounded up to 0.05 s where that keeps it (the formula's own value first, when it does)."""
    rows = [g for i, g in enumerate(grid) if i == j or abs(i - j) * GRID_DB < fmargin - EPS_S]  # itself at 0 dB
    if not all(g.ok for g in rows):
        return None
    lo = max(g.need_s for g in rows) + tick_s + margin + CLEAR_S
    hi = min(g.room_s for g in rows) - margin
    if formula is not None and lo <= formula <= hi + EPS_S:
        return formula
    for step in ("0.05", "0.001"):
        q = round_up(lo, step)
        if q <= hi + EPS_S:
            return q
    return None


class _Candidate(NamedTuple):
    """A setting on one floor of the grid, ranked: ``tier`` (0: no failing setting within both margins; 1: the
    margins kept along each axis, or the run's centre where narrower; 2: any that ends every beat right), then
    nearest the engine's floor, then the least quiet time."""

    tier: int
    distance: int
    quiet_s: float
    k: int
    j: int
    q_kept: bool
    timeout_s: float
    lo: int | None
    hi: int | None
    boxed: bool
    centred: bool
    q_narrow: bool


def _candidate(grid: Grid, j: int, margins: Margins, formula: float) -> _Candidate | None:
    """The setting at floor ``grid.rows[j]``, ranked, or None where no setting there ends every beat right.

    Its quiet time keeps the margins in a box (:func:`boxed_quiet`), else along its floor's axis
    (:func:`quiet_on_axis`; the formula's at the engine's floor where it keeps the margin from both edges); its
    onset timeout is the formula's over the floor's latencies and waits.
    """
    g, at0 = grid.rows[j], grid.at0
    if not g.ok:
        return None
    margin, fmargin = margins.quiet_margin_s, margins.floor_margin_db
    q, q_kept = quiet_on_axis(g, margin, grid.tick_s)
    if j == at0 and formula - g.need_s >= margin - EPS_S and g.room_s - formula >= margin - EPS_S:
        q, q_kept = formula, True
    boxed = boxed_quiet(grid.rows, j, margin, fmargin, grid.tick_s, formula if j == at0 else None)
    if boxed is not None:
        q, q_kept = boxed, True
    timeout = g.timeout(margins.onset_margin_s)
    if timeout is None:
        return None
    valid = [x.allows(q, timeout) for x in grid.rows]
    if not valid[j]:
        return None
    lo = next((i for i in range(j, -1, -1) if not valid[i]), None)
    hi = next((i for i in range(j, len(grid.rows)) if not valid[i]), None)
    d_lo = float("inf") if lo is None else (j - lo) * GRID_DB
    d_hi = float("inf") if hi is None else (hi - j) * GRID_DB
    f_kept = d_lo >= fmargin - EPS_S and d_hi >= fmargin - EPS_S
    narrow = lo is not None and hi is not None and (hi - lo) * GRID_DB < 2 * fmargin - EPS_S
    centred = narrow and abs(j - (lo + hi) / 2) <= 0.5 + EPS_S  # type: ignore[operator]
    q_narrow = g.room_s - g.need_s < 2 * margin - EPS_S
    tier = margin_tier(
        boxed=boxed is not None,
        quiet_kept=q_kept,
        quiet_centred=q_narrow,
        threshold_kept=f_kept,
        threshold_centred=centred,
    )
    k = grid.ks[j]
    return _Candidate(tier, abs(k), q, k, j, q_kept, timeout, lo, hi, boxed is not None, centred, q_narrow)


def _nearest_failing(grid: Grid, j: int, i: int | None, q: float, timeout: float, fmargin: float) -> GridFloor | None:
    """The failing floor nearest ``grid.rows[j]`` at this setting: ``grid.rows[i]``, or, where the margin turns on
    it, one between it and the grid floor next to it towards ``j`` (which the setting passes), by bisection."""
    rows = grid.rows
    if i is None or (abs(j - i) - 1) * GRID_DB >= fmargin - EPS_S or abs(j - i) * GRID_DB < fmargin - EPS_S:
        return None if i is None else rows[i]
    good, found = rows[i + 1 if i < j else i - 1].floor, rows[i]
    while abs(db(found.floor) - db(good)) > EDGE_DB:
        g = grid.fresh(float(np.sqrt(good * found.floor)))
        good, found = (g.floor, found) if g.allows(q, timeout) else (good, g)
    return found


def _settle(grid: Grid, candidates: list[_Candidate], fmargin: float) -> _Candidate:
    """The best candidate, its floor margin held to the failing floors between the grid's (re-ranked where they
    change it): how far the nearest failing floor lies on each side, and whether the valid run is narrower than
    twice the margin (its centre is then within a grid step)."""
    settled: set[int] = set()
    while True:
        best = min(candidates)
        if best.j in settled:
            return best
        j = best.j
        lo_g = _nearest_failing(grid, j, best.lo, best.quiet_s, best.timeout_s, fmargin)
        hi_g = _nearest_failing(grid, j, best.hi, best.quiet_s, best.timeout_s, fmargin)
        d_lo, d_hi = (float("inf") if e is None else abs(db(grid.rows[j].floor) - db(e.floor)) for e in (lo_g, hi_g))
        f_kept = d_lo >= fmargin - EPS_S and d_hi >= fmargin - EPS_S
        narrow = d_lo + d_hi < 2 * fmargin - EPS_S
        centred = narrow and abs(d_lo - d_hi) <= GRID_DB + EPS_S
        settled.add(j)
        tier = margin_tier(
            boxed=best.boxed,
            quiet_kept=best.q_kept,
            quiet_centred=best.q_narrow,
            threshold_kept=f_kept,
            threshold_centred=centred,
        )
        candidates[candidates.index(best)] = best._replace(tier=tier)


def _still_boxed(grid: Grid, placed: PlacedFloor, q: float, margins: Margins) -> bool:
    """Whether the quiet time keeps its margin at every floor closer than the floor margin around the floor placed
    (held again where the floor moved off the grid's)."""
    if placed.floor == placed.grid_row.floor:
        return True
    margin, fmargin = margins.quiet_margin_s, margins.floor_margin_db
    rows = [x for x in grid.rows if abs(db(x.floor) - db(placed.floor)) < fmargin - EPS_S] + [placed.row]
    return all(x.ok for x in rows) and (
        max(x.need_s for x in rows) + grid.tick_s + margin + CLEAR_S
        <= q + EPS_S
        <= min(x.room_s for x in rows) - margin
    )


def _quiet_rule(grid: Grid, chosen: Setting, placed: PlacedFloor, best: _Candidate, *, boxed: bool) -> str:
    """How the quiet time was chosen, in words, with the formula's value beside it (and what that fails)."""
    corpus, q, g, floor = grid.corpus, best.quiet_s, placed.row, placed.floor
    margin, fmargin = corpus.margins.quiet_margin_s, corpus.margins.floor_margin_db
    where = (
        ""
        if g.room_at is None
        else f"; the {g.room_at[2]} after the last word at {g.room_at[0]}:{clock_time(g.room_at[1])}"
    )
    bounds = (
        f"the longest silence it must bridge {g.need_s:.3f} s, the shortest room before a bound {g.room_s:.3f} s{where}"
    )
    if q == chosen.quiet_s and floor == grid.f0:
        rule = chosen.quiet_rule
    elif boxed:
        rule = (
            f"the least quiet time {margin:g} s from every failing one at every floor closer than {fmargin:g} dB, on a "
            f"replayed grid of floors and quiet times ({bounds})"
        )
    elif best.q_kept:
        rule = f"the least quiet time {margin:g} s from every failing one on a replayed grid of quiet times ({bounds})"
    else:
        rule = (
            f"the centre of the quiet times that end every beat right: {q:g} s is {q - g.need_s:.2f} s above the "
            f"longest silence it must bridge ({g.need_s:.3f} s), {g.room_s - q:.2f} s below the shortest room before a "
            f"bound "
            f"({g.room_s:.3f} s{where}); a {margin:g} s margin cannot be held on both sides"
        )
    # The formula stays as evidence: the longest gap plus the margin, rounded up to 0.05 s.
    analyses = [corpus.analysis(i, floor) for i in grid.logged]
    longest = max((x for a in analyses for _, _, x, _ in a.gaps()), default=None)
    plain = None if longest is None else round_up(longest + margin + CLEAR_S, "0.05")
    if plain is not None and plain != q:
        fails = count_failing(analyses, plain, best.timeout_s)
        rule += f" (the formula, longest gap {longest:.3f} s + margin {margin:g} s, gives {plain:g} s" + (
            f", which fails {counted(fails, 'beats')})" if fails else ")"
        )
    return rule


def _floor_rule(grid: Grid, placed: PlacedFloor, q: float, fmargin: float) -> str:
    """How the floor was placed in the run, in words (empty: the engine's floor stands)."""
    run, floor, options, f0 = placed.run, placed.floor, placed.options, grid.f0
    moved, kept, said = floor != f0, run.keeps(floor), run.said()
    if run.narrow and floor in options[:2]:
        return (
            f"the centre in dB of the floors that end every beat right at quiet {q:g} s ({said}); a {fmargin:g} dB "
            "margin cannot be held on both sides"
        )
    if moved and kept:
        lead = "the floor nearest" if floor == options[0] else "a floor near"
        digits = f", to {sig_digits(floor)} significant digits" if sig_digits(floor) <= 3 else ""
        return f"{lead} {f0:g} at least {fmargin:g} dB from every failing floor at quiet {q:g} s{digits} ({said})"
    if moved:
        return f"{floor:g} on the replayed grid, which ends every beat right at quiet {q:g} s ({said})"
    return ""
