"""The one chooser of a setting inside the valid region, with one margin policy.

Pure numpy. :func:`place_on_grid` places the engine's setting on a replayed
grid of floors, quiet times and onset timeouts: the setting no failing one
comes within both margins of, nearest the engine's floor with the least
quiet time; then the floor in the run of floors that end every beat right at
that setting.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..beats import failing_beats
from ..model import CLEAR_S, EPS_S
from ..times import clock_time, round_up
from .corpus import Corpus, Setting, prompt_delay
from .evidence import FloorRun, counted
from .floor import FloorRange, floor_edge, refine_edge
from .floors import db, sig_digits
from .grid import EDGE_DB, GRID_DB, MAX_GRID_FLOORS, GridFloor, boxed_quiet, grid_floor, noise_cleared, quiet_on_axis
from .onset import onset_timeout
from .replay import count_failing
from .windows import full_ladder


def place_on_grid(
    corpus: Corpus, members: list[int], chosen: Setting, notes: list[str], *, floor_margin: bool = True
) -> Setting:
    """The setting chosen on a replayed grid of floors, quiet times and onset timeouts.

    Floors in ``GRID_DB`` steps through the engine's floor, from the lowest
    noise to the highest speech median; at each, one analysis per recording
    (cached: the leave-one-out runs share them) gives, as the replay decides
    (:meth:`clock.core.beats.BeatAnalysis.allows`), the quiet times that end
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
    :func:`clock.core.beats.failing_beats`, the one judge); at least
    ``floor_margin_db`` inside both edges where the run allows it (the
    engine's floor where it does, else two significant digits nearest it),
    else the run's centre in dB, with a warning naming the floor.
    """
    margins = corpus.margins
    margin, fmargin = margins.quiet_margin_s, margins.floor_margin_db
    f0 = chosen.floor
    if chosen.quiet_s is None or chosen.onset_timeout_s is None:
        return chosen  # nothing recommended for the quiet time or the timeout: no grid to place it on
    logged = [i for i in members if corpus.obs[i].has_beats]
    if not logged or any(corpus.obs[i].events is None for i in members):
        return chosen
    delay = prompt_delay(corpus, members)
    # Where the guide spoke: heard at the engine's floor, or as derive tells speech without the floor.
    spoke_at = [corpus.analysis(i, f0).spoken() | corpus.spoke(i) for i in logged]
    lo_l, hi_l, _ = full_ladder(corpus.levels, [i for i in members if corpus.levels[i].speech_median is not None])
    step = 10 ** (GRID_DB / 20)
    # Down to the first grid floor at or under the lowest noise, and up past the highest speech median: the failing
    # floors nearest the engine's are on the grid.
    down = min(MAX_GRID_FLOORS, max(0, int(np.ceil(np.log(f0 / lo_l) / np.log(step))))) if lo_l > 0 else 0
    up = min(MAX_GRID_FLOORS, max(0, int(np.ceil(np.log(min(hi_l, 1.0) / f0) / np.log(step))))) if hi_l > 0 else 0
    tick = float(corpus.obs[logged[0]].trace.tick_s)

    def at(k: int) -> GridFloor:
        return grid_floor(corpus, logged, f0 if k == 0 else float(f0 * step**k), spoke_at, delay, f0)

    # Outward from the engine's floor, down to the first floor under a recording's noise and up to the first at
    # which a beat goes unheard (floors past them fail too; the margin needs the nearest failing floor).
    noise = noise_cleared(corpus, logged, f0)
    below: list[GridFloor] = []
    for k in range(-1, -down - 1, -1):
        below.append(at(k))
        if below[-1].floor <= noise:
            break
    above: list[GridFloor] = []
    for k in range(1, up + 1):
        above.append(at(k))
        if above[-1].unheard:
            break
    grid = [*reversed(below), at(0), *above]
    ks = list(range(-len(below), len(above) + 1))
    at0 = len(below)
    g0 = grid[at0]
    if not g0.ok:
        return chosen
    # The formula's quiet time at the engine's floor, where it keeps the margin from both edges.
    formula = chosen.quiet_s
    candidates = []
    for j, g in enumerate(grid):
        if not g.ok:
            continue
        q, q_kept = quiet_on_axis(g, margin, tick)
        if j == at0 and formula - g.need_s >= margin - EPS_S and g.room_s - formula >= margin - EPS_S:
            q, q_kept = formula, True
        boxed = boxed_quiet(grid, j, margin, fmargin, tick, formula if j == at0 else None)
        if boxed is not None:
            q, q_kept = boxed, True
        timeout = onset_timeout(
            [("", 0.0, g.latency_s)] if g.latency_s > float("-inf") else [],
            [g.wait_s] if g.wait_s > float("-inf") else [],
            margins.onset_margin_s,
        )
        if timeout is None:
            continue
        valid = [x.allows(q, timeout) for x in grid]
        if not valid[j]:
            continue
        lo = next((i for i in range(j, -1, -1) if not valid[i]), None)
        hi = next((i for i in range(j, len(grid)) if not valid[i]), None)
        d_lo = float("inf") if lo is None else (j - lo) * GRID_DB
        d_hi = float("inf") if hi is None else (hi - j) * GRID_DB
        f_kept = d_lo >= fmargin - EPS_S and d_hi >= fmargin - EPS_S
        narrow = lo is not None and hi is not None and (hi - lo) * GRID_DB < 2 * fmargin - EPS_S
        centred = narrow and abs(j - (lo + hi) / 2) <= 0.5 + EPS_S  # type: ignore[operator]
        q_narrow = g.room_s - g.need_s < 2 * margin - EPS_S
        tier = 0 if boxed is not None and f_kept else 1 if (q_kept or q_narrow) and (f_kept or centred) else 2
        candidates.append(
            (tier, abs(ks[j]), q, ks[j], j, q_kept, timeout, lo, hi, boxed is not None, centred, q_narrow)
        )
    if not candidates:
        return chosen

    def nearest(j: int, i: int | None, q: float, timeout: float) -> GridFloor | None:
        """The failing floor nearest ``grid[j]`` at this setting: ``grid[i]``, or, where the margin turns on it, one
        between ``grid[i]`` and the grid floor next to it towards ``j`` (which the setting passes), by bisection."""
        if i is None or (abs(j - i) - 1) * GRID_DB >= fmargin - EPS_S or abs(j - i) * GRID_DB < fmargin - EPS_S:
            return None if i is None else grid[i]
        good, found = grid[i + 1 if i < j else i - 1].floor, grid[i]
        while abs(db(found.floor) - db(good)) > EDGE_DB:
            g = grid_floor(corpus, logged, float(np.sqrt(good * found.floor)), spoke_at, delay, f0)
            good, found = (g.floor, found) if g.allows(q, timeout) else (good, g)
        return found

    # The chosen setting's floor margin, held to the failing floors between the grid's (re-placed where they change
    # it): how far the nearest failing floor lies on each side, and whether the valid run is narrower than twice the
    # margin (its centre is then within a grid step).
    nearest_failing: dict[int, tuple[GridFloor | None, GridFloor | None, bool]] = {}
    while True:
        best = min(candidates)
        tier, _, q, k, j, q_kept, timeout, lo, hi, boxed, centred, q_narrow = best
        if j in nearest_failing:
            break
        lo_g, hi_g = nearest(j, lo, q, timeout), nearest(j, hi, q, timeout)
        d_lo, d_hi = (float("inf") if e is None else abs(db(grid[j].floor) - db(e.floor)) for e in (lo_g, hi_g))
        f_kept = d_lo >= fmargin - EPS_S and d_hi >= fmargin - EPS_S
        narrow = d_lo + d_hi < 2 * fmargin - EPS_S
        centred = narrow and abs(d_lo - d_hi) <= GRID_DB + EPS_S
        nearest_failing[j] = (lo_g, hi_g, narrow)
        tier = 0 if boxed and f_kept else 1 if (q_kept or q_narrow) and (f_kept or centred) else 2
        candidates[candidates.index(best)] = (tier, *best[1:])
    g = grid[j]

    def at_floor(f: float) -> GridFloor:
        return next((x for x in grid if x.floor == f), None) or grid_floor(corpus, logged, f, spoke_at, delay, f0)

    # Floors the replay (the one judge) fails at this setting though the grid's reading of their beats allows it.
    judged_bad: set[float] = set()

    def allowed(x: GridFloor) -> bool:
        """The grid's reading of floor ``x`` at the chosen quiet time and timeout: every beat heard, no end hidden,
        above the noise, the quiet time between the longest silence and the least room, the timeout over the
        waits."""
        return x.allows(q, timeout) and x.floor not in judged_bad

    def ends_right(x: GridFloor) -> bool:
        """Whether floor ``x`` ends every beat right at the chosen quiet time and timeout: the grid's reading and
        the replay's outcomes (:func:`failing_beats`)."""
        if not allowed(x):
            return False
        if any(failing_beats(corpus.analysis(i, x.floor), quiets_s=[q], onset_timeout_s=timeout)[0] for i in logged):
            judged_bad.add(x.floor)
            return False
        return True

    # The floors that end every beat right at this quiet time and timeout, around the chosen one: outward on the
    # grid to the first that does not, then, where an edge lies near enough to bear on the floor margin, by
    # bisection (each point replayed). The floors the margin is claimed over (those within it of the floor placed)
    # and the edges are replayed; one the replay fails is taken as failing, and the run found again.
    reach = 2 * fmargin + GRID_DB
    for _ in range(4):
        edges = [floor_edge(grid, j, step, allowed, ends_right, at_floor, (g.floor, f0), reach) for step in (-1, 1)]
        run = FloorRange(edges[0], edges[1], fmargin)
        if run.unsure:
            # Whether the run holds the margin on both sides turns on where exactly its edges are: closer.
            edges = [refine_edge(e, ends_right, at_floor, EDGE_DB / 10) for e in edges]
            run = FloorRange(edges[0], edges[1], fmargin)
        # Where the run holds the margin on both sides: the floor nearest the engine's (two significant digits where
        # one fits) at least the margin inside each edge; else the run's centre in dB.
        options = run.options(f0, g.floor if k != 0 else None)
        floor, g_f = g.floor, g
        for option in options:
            x = at_floor(option)
            if x is g:
                break  # the grid's own floor: its quiet time and timeout were chosen there
            if not ends_right(x):
                continue
            if q_kept and not (q - x.need_s >= margin - EPS_S and x.room_s - q >= margin - EPS_S):
                continue  # the quiet time's margin, kept at the grid's floor, is not at this one
            own = onset_timeout(
                [("", 0.0, x.latency_s)] if x.latency_s > float("-inf") else [],
                [x.wait_s] if x.wait_s > float("-inf") else [],
                margins.onset_margin_s,
            )
            if own is not None and own > timeout + EPS_S:
                continue
            floor, g_f = option, x
            break
        claimed = [x for x in grid if abs(db(x.floor) - db(floor)) < fmargin + EPS_S or x.floor in run.oks()]
        if all(ends_right(x) for x in claimed if allowed(x)) or g.floor in judged_bad:
            break
    moved = floor != f0
    if boxed and floor != g.floor:
        # The quiet time's margin at every floor closer than the floor margin, held again around the floor placed.
        rows = [x for x in grid if abs(db(x.floor) - db(floor)) < fmargin - EPS_S] + [g_f]
        boxed = all(x.ok for x in rows) and (
            max(x.need_s for x in rows) + tick + margin + CLEAR_S <= q + EPS_S <= min(x.room_s for x in rows) - margin
        )
    g = g_f
    where = (
        ""
        if g.room_at is None
        else f"; the {g.room_at[2]} after the last word at {g.room_at[0]}:{clock_time(g.room_at[1])}"
    )
    bounds = (
        f"the longest silence it must bridge {g.need_s:.3f} s, the shortest room before a bound {g.room_s:.3f} s{where}"
    )
    if q == formula and not moved:
        rule = chosen.quiet_rule
    elif boxed:
        rule = (
            f"the least quiet time {margin:g} s from every failing one at every floor closer than {fmargin:g} dB, on a "
            f"replayed grid of floors and quiet times ({bounds})"
        )
    elif q_kept:
        rule = f"the least quiet time {margin:g} s from every failing one on a replayed grid of quiet times ({bounds})"
    else:
        rule = (
            f"the centre of the quiet times that end every beat right: {q:g} s is {q - g.need_s:.2f} s above the "
            f"longest silence it must bridge ({g.need_s:.3f} s), {g.room_s - q:.2f} s below the shortest room before a "
            f"bound "
            f"({g.room_s:.3f} s{where}); a {margin:g} s margin cannot be held on both sides"
        )
    # The formula stays as evidence: the longest gap plus the margin, rounded up to 0.05 s.
    longest = max((x for a in (corpus.analysis(i, floor) for i in logged) for _, _, x, _ in a.gaps()), default=None)
    plain = None if longest is None else round_up(longest + margin + CLEAR_S, "0.05")
    if plain is not None and plain != q:
        fails = count_failing([corpus.analysis(i, floor) for i in logged], plain, timeout)
        rule += f" (the formula, longest gap {longest:.3f} s + margin {margin:g} s, gives {plain:g} s" + (
            f", which fails {counted(fails, 'beats')})" if fails else ")"
        )
    kept = run.keeps(floor)
    said = run.said()
    floor_rule = ""
    if run.narrow and floor in options[:2]:
        floor_rule = (
            f"the centre in dB of the floors that end every beat right at quiet {q:g} s ({said}); a {fmargin:g} dB "
            "margin cannot be held on both sides"
        )
    elif moved and kept:
        lead = "the floor nearest" if floor == options[0] else "a floor near"
        digits = f", to {sig_digits(floor)} significant digits" if sig_digits(floor) <= 3 else ""
        floor_rule = f"{lead} {f0:g} at least {fmargin:g} dB from every failing floor at quiet {q:g} s{digits} ({said})"
    elif moved:
        floor_rule = f"{floor:g} on the replayed grid, which ends every beat right at quiet {q:g} s ({said})"
    if floor_margin and not kept:
        notes.append(run.warning(floor, q))
    d_lo, d_hi = run.distances(floor)
    found = FloorRun(
        q,
        timeout,
        None if run.lo.fails is None else run.lo.ok,
        None if run.hi.fails is None else run.hi.ok,
        None if run.lo.fails is None else run.lo.fails.floor,
        None if run.hi.fails is None else run.hi.fails.floor,
        None if run.lo.fails is None else d_lo,
        None if run.hi.fails is None else d_hi,
        kept,
    )
    return replace(
        chosen, floor=floor, quiet_s=q, onset_timeout_s=timeout, quiet_rule=rule, floor_rule=floor_rule, run=found
    )
