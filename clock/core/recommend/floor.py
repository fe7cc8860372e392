"""The floor's evidence, and the run of floors that end every beat right at a setting.

Pure numpy. :class:`FloorRange` is the run around a floor, its edges found by
replay (:func:`floor_edge`, :func:`refine_edge`), and where a floor keeps the
floor margin inside it; :func:`floor_evidence` is the windows and the floor
as ``derive`` reports them. :func:`place_floor` places the floor in the run
at a chosen setting, each floor judged by the grid's reading of its beats and
then by the replay (:class:`RunJudge`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..decide import failing_beats
from ..model import EPS_S, Margins
from .corpus import Corpus
from .evidence import THIN, FloorEvidence, FloorRun
from .floor_math import db, nice_floors, round_sig
from .grid import EDGE_DB, GRID_DB, Grid, GridFloor

#: A window of floors narrower than this (dB) is flagged.
NARROW_DB = 6.0


PERCENTILES = (("min", 0.0), ("p0.1", 0.1), ("p1", 1.0), ("p5", 5.0), ("p50", 50.0), ("p95", 95.0), ("max", 100.0))


def percentiles(values: NDArray[np.float64]) -> dict[str, float]:
    """The levels' ``PERCENTILES`` (min ... max), by name; empty without values."""
    return {name: float(np.percentile(values, q)) for name, q in PERCENTILES} if values.size else {}


def floor_evidence(
    corpus: Corpus,
    members: list[int],
    meeting: list[int],
    window: tuple[float, float] | None,
    lower_by: str | None,
    upper_by: str | None,
    outside: tuple[str, ...],
    no_window: tuple[str, ...],
    floor: float | None,
    rule: str,
    run: FloorRun | None = None,
) -> FloorEvidence:
    """The windows of floors and the floor, as ``derive`` reports them (levels pooled over the windows that meet)."""
    sp = np.concatenate([corpus.speech[i] for i in meeting]) if meeting else np.zeros(0)
    si = np.concatenate([corpus.silence[i] for i in meeting]) if meeting else np.zeros(0)
    methods: dict[str, int] = {}
    for i in members:
        methods[corpus.levels[i].method] = methods.get(corpus.levels[i].method, 0) + 1
    above = below = None
    if floor is not None and window is not None:
        above = db(floor) - db(window[0]) if window[0] > 0 else float("inf")
        below = db(window[1]) - db(floor)
    return FloorEvidence(
        recordings=tuple(corpus.levels[i] for i in members),
        window=window,
        lower_by=lower_by,
        upper_by=upper_by,
        outside=outside,
        no_window=no_window,
        floor=floor,
        rule=rule,
        above_db=above,
        below_db=below,
        n_speech_ticks=int(sp.size),
        n_silence_ticks=int(si.size),
        speech=percentiles(sp),
        speech_percentile=corpus.margins.speech_percentile,
        floor_margin_db=corpus.margins.floor_margin_db,
        methods=methods,
        exact_zero_share=float(np.count_nonzero(si == 0) / si.size) if si.size else 0.0,
        thin=sp.size < THIN["speech_ticks"] or si.size < THIN["silence_ticks"],
        run=run,
    )


#: The most floors tried, nearest the engine's, where the floor is placed inside the run that keeps its margin.
MAX_TRIED = 4


@dataclass(frozen=True, slots=True)
class FloorEdge:
    """Where the floors that end every beat right at a setting stop, on one side of the chosen floor: ``ok`` is the
    last floor found to, ``fails`` the first that does not (None: none of the grid fails on this side)."""

    ok: float
    fails: GridFloor | None


def floor_edge(
    grid: list[GridFloor],
    j: int,
    step: int,
    allowed: Callable[[GridFloor], bool],
    ends_right: Callable[[GridFloor], bool],
    at_floor: Callable[[float], GridFloor],
    near: tuple[float, ...],
    reach_db: float,
) -> FloorEdge:
    """From ``grid[j]`` outward in ``step`` to the first grid floor the grid's reading does not allow (``allowed``),
    then, where the edge lies within ``reach_db`` of a floor of ``near``, by bisection (in dB, each point replayed:
    ``ends_right``) to within ``EDGE_DB`` of it; a farther edge stays between two floors of the grid."""
    i = j
    while 0 <= i + step < len(grid) and allowed(grid[i + step]):
        i += step
    if not 0 <= i + step < len(grid):
        return FloorEdge(grid[i].floor, None)
    edge = FloorEdge(grid[i].floor, grid[i + step])
    if min(abs(db(grid[i].floor) - db(f)) for f in near) > reach_db + EPS_S:
        return edge
    return refine_edge(edge, ends_right, at_floor, EDGE_DB)


def refine_edge(
    e: FloorEdge, ends_right: Callable[[GridFloor], bool], at_floor: Callable[[float], GridFloor], tol_db: float
) -> FloorEdge:
    """The edge bisected (in dB) until its floor that ends every beat right and its failing one are ``tol_db``
    apart."""
    ok, bad = e.ok, e.fails
    while bad is not None and abs(db(bad.floor) - db(ok)) > tol_db + 1e-12:
        x = at_floor(float(np.sqrt(ok * bad.floor)))
        ok, bad = (x.floor, bad) if ends_right(x) else (ok, x)
    return FloorEdge(ok, bad)


@dataclass(frozen=True, slots=True)
class FloorRange:
    """The run of floors that end every beat right at one setting, between two edges (:class:`FloorEdge`), and
    where in it a floor keeps ``margin_db`` from every failing one."""

    lo: FloorEdge
    hi: FloorEdge
    margin_db: float

    @property
    def width_db(self) -> float:
        """From the lowest floor found to end every beat right to the highest (inf where a side has no failing
        floor)."""
        if self.lo.fails is None or self.hi.fails is None:
            return float("inf")
        return db(self.hi.ok) - db(self.lo.ok)

    @property
    def narrow(self) -> bool:
        """Narrower than twice the margin: no floor keeps it from both edges."""
        return self.width_db < 2 * self.margin_db - EPS_S

    @property
    def unsure(self) -> bool:
        """Whether the margin fits between the failing floors found, but not between those that end beats right."""
        if not self.narrow:
            return False
        assert self.lo.fails is not None and self.hi.fails is not None
        return db(self.hi.fails.floor) - db(self.lo.fails.floor) >= 2 * self.margin_db - EPS_S

    def oks(self) -> tuple[float, ...]:
        """Its edges' floors that end every beat right (where a failing one lies past them)."""
        return tuple(e.ok for e in (self.lo, self.hi) if e.fails is not None)

    def distances(self, floor: float) -> tuple[float, float]:
        """How far (dB) ``floor`` lies inside the floors found to end every beat right, below and above (inf on a
        side with no failing floor)."""
        d_lo = db(floor) - db(self.lo.ok) if self.lo.fails is not None else float("inf")
        d_hi = db(self.hi.ok) - db(floor) if self.hi.fails is not None else float("inf")
        return d_lo, d_hi

    def keeps(self, floor: float) -> bool:
        """Every floor within the margin of ``floor`` lies between two floors that end every beat right."""
        return min(self.distances(floor)) >= self.margin_db - EPS_S

    def options(self, target: float, grid_floor: float | None) -> list[float]:
        """Floors to place, best first: where the run holds the margin on both sides, the engine's floor
        (``target``) if it keeps it, else two-significant-digit floors (three where none fits; else the floor
        nearest ``target`` that keeps it) inside the edges less the margin, nearest ``target``; where the run is
        narrower, its centre in dB (to three digits); the grid's floor (``grid_floor``, to three digits) last."""
        last = [float(f"{grid_floor:.3g}"), grid_floor] if grid_floor is not None else [target]
        if self.narrow:
            centre = (db(self.lo.ok) + db(self.hi.ok)) / 2
            return [float(f"{10 ** (centre / 20):.3g}"), 10 ** (centre / 20), *last]
        if self.keeps(target) and grid_floor is None:
            return [target]
        lo = db(self.lo.ok) + self.margin_db if self.lo.fails is not None else db(target) - 40
        hi = db(self.hi.ok) - self.margin_db if self.hi.fails is not None else min(db(target) + 40, 0.0)
        inside = nice_floors(10 ** ((lo - 1e-6) / 20), 10 ** ((hi + 1e-6) / 20), target)
        # Where no floor of three digits fits (the run just twice the margin), the floor nearest the target that
        # keeps it.
        clamped = 10 ** (min(max(db(target), lo), hi) / 20)
        return [x for x in [*inside, clamped] if self.keeps(x)][:MAX_TRIED] + last

    def said(self) -> str:
        """The run in words: its edges and the failing floors beyond them, each rounded to three digits away from
        the floors that end every beat right (a failing one further out, one that ends them right further in),
        and how closely each edge was found."""
        ends = []
        for e, out in ((self.lo, False), (self.hi, True)):
            if e.fails is None:
                edge = round_sig(e.ok, up=not out)
                ends.append(f"none of the grid's floors {'up' if out else 'down'} to {edge} fails")
                continue
            gap = abs(db(e.fails.floor) - db(e.ok))
            how = f"{gap:.2g} dB from the last that does" if gap > EDGE_DB + 1e-9 else f"within {EDGE_DB:g} dB"
            ends.append(f"{round_sig(e.fails.floor, up=out)} {e.fails.why} ({how})")
        width = "" if self.width_db == float("inf") else f", {self.width_db:.1f} dB"
        return (
            f"replayed, the floors from {round_sig(self.lo.ok, up=True)} to {round_sig(self.hi.ok, up=False)} end "
            f"every beat right{width}; {'; '.join(ends)}"
        )

    def evidence(self, floor: float, quiet_s: float, onset_timeout_s: float) -> FloorRun:
        """The run as derive reports it (:class:`clock.core.recommend.evidence.FloorRun`), around ``floor``."""
        d_lo, d_hi = self.distances(floor)
        lo, hi = self.lo, self.hi
        return FloorRun(
            quiet_s,
            onset_timeout_s,
            None if lo.fails is None else lo.ok,
            None if hi.fails is None else hi.ok,
            None if lo.fails is None else lo.fails.floor,
            None if hi.fails is None else hi.fails.floor,
            None if lo.fails is None else d_lo,
            None if hi.fails is None else d_hi,
            self.keeps(floor),
        )

    def warning(self, floor: float, quiet_s: float) -> str:
        """Why ``floor`` does not keep the margin, naming it and the failing floors it is nearest."""
        near = [
            f"{abs(db(floor) - db(e.fails.floor)):.1f} dB from the failing floor {round_sig(e.fails.floor, up=out)}"
            for e, out in ((self.lo, False), (self.hi, True))
            if e.fails is not None and abs(db(floor) - db(e.fails.floor)) < self.margin_db - EPS_S
        ]
        head = (
            " and ".join(near)
            if near
            else f"only {min(self.distances(floor)):.1f} dB inside the floors found to end every beat right"
        )
        why = (
            f"the floors that end every beat right span {self.width_db:.1f} dB, under twice the margin; {floor:g} is "
            "their centre in dB"
            if self.narrow
            else "no floor that keeps it ends every beat right with this quiet time's margin and onset timeout"
        )
        return (
            f"the floor {floor:g} at quiet {quiet_s:g} s is {head}: the {self.margin_db:g} dB floor margin could not "
            f"be kept ({why}; {self.said()})"
        )


@dataclass
class RunJudge:
    """Which floors end every beat right at one quiet time and onset timeout: the grid's reading of their beats,
    then the replay's outcomes (:func:`clock.core.decide.failing_beats`, the one judge). A floor the replay fails
    though the grid's reading allows it is remembered (``judged_bad``)."""

    grid: Grid
    quiet_s: float
    onset_timeout_s: float
    judged_bad: set[float] = field(default_factory=set)

    def allowed(self, x: GridFloor) -> bool:
        """The grid's reading of floor ``x`` at the chosen quiet time and timeout: every beat heard, no end hidden,
        above the noise, the quiet time between the longest silence and the least room, the timeout over the
        waits."""
        return x.allows(self.quiet_s, self.onset_timeout_s) and x.floor not in self.judged_bad

    def ends_right(self, x: GridFloor) -> bool:
        """Whether floor ``x`` ends every beat right at the chosen quiet time and timeout: the grid's reading and
        the replay's outcomes."""
        if not self.allowed(x):
            return False
        corpus, q, timeout = self.grid.corpus, self.quiet_s, self.onset_timeout_s
        if any(
            failing_beats(corpus.analysis(i, x.floor), quiets_s=[q], onset_timeout_s=timeout)[0]
            for i in self.grid.logged
        ):
            self.judged_bad.add(x.floor)
            return False
        return True


@dataclass(frozen=True)
class PlacedFloor:
    """Where the floor went in the run (``run``) at a setting chosen on grid row ``grid_row``: the floor, its row
    (read afresh where it lies between the grid's), and the floors tried, best first (``options``)."""

    floor: float
    row: GridFloor
    grid_row: GridFloor
    run: FloorRange
    options: list[float]


def _first_option(
    judge: RunJudge, g: GridFloor, options: list[float], margins: Margins, *, keep_quiet_margin: bool
) -> tuple[float, GridFloor]:
    """The first of ``options`` that ends every beat right and keeps what the grid's floor ``g`` kept: the quiet
    time's margin (where kept there), and an onset timeout no longer than the one chosen; else ``g``'s floor."""
    q, margin = judge.quiet_s, margins.quiet_margin_s
    for option in options:
        x = judge.grid.at_floor(option)
        if x is g:
            break  # the grid's own floor: its quiet time and timeout were chosen there
        if not judge.ends_right(x):
            continue
        if keep_quiet_margin and not (q - x.need_s >= margin - EPS_S and x.room_s - q >= margin - EPS_S):
            continue  # the quiet time's margin, kept at the grid's floor, is not at this one
        own = x.timeout(margins.onset_margin_s)
        if own is not None and own > judge.onset_timeout_s + EPS_S:
            continue
        return option, x
    return g.floor, g


def place_floor(
    grid: Grid, j: int, quiet_s: float, onset_timeout_s: float, margins: Margins, *, keep_quiet_margin: bool
) -> PlacedFloor:
    """The floor placed at a setting chosen on grid row ``j``, in the run of floors that end every beat right.

    The run, around the grid's floor: outward on the grid to the first that does not, then, where an edge lies near
    enough to bear on the floor margin, by bisection (each point replayed). Where the run holds the margin on both
    sides, the floor nearest the engine's (two significant digits where one fits) at least the margin inside each
    edge; else the run's centre in dB. The floors the margin is claimed over (those within it of the floor placed)
    and the edges are replayed; one the replay fails is taken as failing, and the run found again.
    """
    fmargin, g, f0 = margins.floor_margin_db, grid.rows[j], grid.f0
    judge = RunJudge(grid, quiet_s, onset_timeout_s)
    reach = 2 * fmargin + GRID_DB
    for _ in range(4):
        edges = [
            floor_edge(grid.rows, j, step, judge.allowed, judge.ends_right, grid.at_floor, (g.floor, f0), reach)
            for step in (-1, 1)
        ]
        run = FloorRange(edges[0], edges[1], fmargin)
        if run.unsure:
            # Whether the run holds the margin on both sides turns on where exactly its edges are: closer.
            edges = [refine_edge(e, judge.ends_right, grid.at_floor, EDGE_DB / 10) for e in edges]
            run = FloorRange(edges[0], edges[1], fmargin)
        options = run.options(f0, g.floor if grid.ks[j] != 0 else None)
        floor, row = _first_option(judge, g, options, margins, keep_quiet_margin=keep_quiet_margin)
        claimed = [x for x in grid.rows if abs(db(x.floor) - db(floor)) < fmargin + EPS_S or x.floor in run.oks()]
        if all(judge.ends_right(x) for x in claimed if judge.allowed(x)) or g.floor in judge.judged_bad:
            break
    return PlacedFloor(floor, row, g, run, options)
