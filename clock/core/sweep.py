"""Sweep the floor and the quiet time: what each setting would have done to the recordings.

Pure numpy. The level traces are computed once; each setting only replays
the clock over them, so a sweep costs one decode per recording whatever its
size.

For each (floor, quiet) setting, over every beat of every recording:

* ``n_premature``: beats the clock would end while the guide was still
  talking (speech resumed after the declared quiet, before the next
  terminal response or prompt);
* ``n_premature_risk``: acknowledgments whose silence reaches the quiet time;
* ``n_no_onset``: beats with no speech within the onset timeout;
* the latency the clock adds after the last word (declared - last word):
  mean, p95 and max over the beats it declared.

The **recommended** setting has the fewest premature ends, then the fewest
premature risks and missed onsets, then the least mean added latency (ties:
the shorter quiet time, then the lower floor). The **Pareto front** holds the
settings no other setting beats on both premature ends and mean latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameterError
from .beats import beats
from .derive import Observation

__all__ = ["MAX_GRID_VALUES", "MAX_SWEEP_POINTS", "SweepPoint", "SweepResult", "grid", "sweep"]

#: The most values one range gives, and the most settings one sweep replays.
MAX_GRID_VALUES = 1000
MAX_SWEEP_POINTS = 10000

# The largest magnitude of a range bound or step (floors are at most 1, quiet times an hour).
_MAX_GRID_ABS = 10**6


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """What one setting does to the recordings."""

    floor: float
    quiet_s: float
    n_beats: int
    n_premature: int
    n_premature_risk: int
    n_no_onset: int
    n_declared: int
    latency_mean_s: float | None
    latency_p95_s: float | None
    latency_max_s: float | None

    @property
    def key(self) -> tuple[float, ...]:
        """The recommendation order (smaller is better)."""
        mean = float("inf") if self.latency_mean_s is None else self.latency_mean_s
        return (self.n_premature, self.n_premature_risk + self.n_no_onset, mean, self.quiet_s, self.floor)


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Every setting of a sweep, the recommended one and the Pareto front.

    Attributes
    ----------
    floors, quiets_s : tuple of float
        The grid, in order.
    points : tuple of SweepPoint
        One per (floor, quiet), floors outer.
    recommended : SweepPoint or None
    pareto : tuple of SweepPoint
        Sorted by premature ends.
    n_recordings : int
    """

    floors: tuple[float, ...]
    quiets_s: tuple[float, ...]
    points: tuple[SweepPoint, ...]
    recommended: SweepPoint | None
    pareto: tuple[SweepPoint, ...]
    n_recordings: int

    def matrix(self, field: str) -> np.ndarray:
        """A field as a (n_floors, n_quiets) array (NaN where None)."""
        values = [np.nan if getattr(p, field) is None else getattr(p, field) for p in self.points]
        return np.array(values, dtype=np.float64).reshape(len(self.floors), len(self.quiets_s))


def grid(spec: str) -> tuple[float, ...]:
    """Parse ``LO:HI:STEP`` (inclusive, as exact decimals) or a single value.

    Every part is a finite number of at most 10**6 (no ``nan``, ``inf`` or
    huge exponents), ``LO <= HI``, ``STEP > 0``, and the range holds at most
    :data:`MAX_GRID_VALUES` values.

    Examples
    --------
    >>> grid("2.0:2.6:0.2")
    (2.0, 2.2, 2.4, 2.6)
    """
    from decimal import Decimal, DecimalException, InvalidOperation, localcontext

    if len(spec) > 200:
        raise InvalidParameterError(f"a range must be LO:HI:STEP or a number, got {spec[:40]!r}...")
    try:
        parts = [Decimal(p) for p in spec.split(":")]
    except InvalidOperation:
        raise InvalidParameterError(f"a range must be LO:HI:STEP or a number, got {spec!r}") from None
    if not all(p.is_finite() and p.copy_abs() <= _MAX_GRID_ABS for p in parts):
        raise InvalidParameterError(f"a range needs finite numbers of at most {_MAX_GRID_ABS:g}, got {spec!r}")
    if len(parts) == 1:
        return (float(parts[0]),)
    if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
        raise InvalidParameterError(f"a range must be LO:HI:STEP with LO <= HI and STEP > 0, got {spec!r}")
    lo, hi, step = parts
    with localcontext() as ctx:
        ctx.prec = 60
        try:
            count = (hi - lo) / step
        except DecimalException:  # a step so small the count overflows
            count = Decimal(MAX_GRID_VALUES)
        if count >= MAX_GRID_VALUES:
            raise InvalidParameterError(
                f"a range of more than {MAX_GRID_VALUES} values is too many (at most {MAX_GRID_VALUES}): {spec!r}"
            )
        n = int(count) + 1
        return tuple(float(lo + i * step) for i in range(n))


def _point(obs: Sequence[Observation], floor: float, quiet_s: float, onset_timeout_s: float) -> SweepPoint:
    n = premature = risk = no_onset = 0
    added: list[float] = []
    for o in obs:
        if o.events is None or not o.events.terminals:
            continue
        for b in beats(o.trace, o.events, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s):
            n += 1
            premature += b.premature
            risk += b.premature_risk
            no_onset += b.no_onset
            if b.added_latency_s is not None:
                added.append(b.added_latency_s)
    lat = np.array(added)
    return SweepPoint(
        floor,
        quiet_s,
        n,
        premature,
        risk,
        no_onset,
        int(lat.size),
        float(lat.mean()) if lat.size else None,
        float(np.percentile(lat, 95)) if lat.size else None,
        float(lat.max()) if lat.size else None,
    )


def sweep(
    observations: Sequence[Observation],
    *,
    floors: Sequence[float],
    quiets_s: Sequence[float],
    onset_timeout_s: float = 10.0,
) -> SweepResult:
    """Replay every (floor, quiet) setting over the recordings.

    Parameters
    ----------
    observations : sequence of Observation
        Recordings with event logs (those without are skipped).
    floors, quiets_s : sequence of float
    onset_timeout_s : float

    Returns
    -------
    SweepResult

    Raises
    ------
    InvalidParameterError
        An empty grid, a negative floor or a non-positive quiet time.
    """
    if not floors or not quiets_s:
        raise InvalidParameterError("a sweep needs at least one floor and one quiet time")
    points = tuple(_point(observations, float(f), float(q), onset_timeout_s) for f in floors for q in quiets_s)
    scored = [p for p in points if p.n_beats]
    recommended = min(scored, key=lambda p: p.key) if scored else None
    pareto: list[SweepPoint] = []
    for p in sorted(scored, key=lambda p: p.key):
        lat = p.latency_mean_s if p.latency_mean_s is not None else float("inf")
        if all(
            not (
                q.n_premature <= p.n_premature
                and (q.latency_mean_s or float("inf")) <= lat
                and (q.n_premature, q.latency_mean_s) != (p.n_premature, p.latency_mean_s)
            )
            for q in scored
        ):
            if not any((q.n_premature, q.latency_mean_s) == (p.n_premature, p.latency_mean_s) for q in pareto):
                pareto.append(p)
    return SweepResult(
        tuple(map(float, floors)),
        tuple(map(float, quiets_s)),
        points,
        recommended,
        tuple(sorted(pareto, key=lambda p: p.n_premature)),
        len(observations),
    )
