"""Sweep the floor and the quiet time: what each setting would have done to the recordings.

Pure numpy. The level traces are computed once. For each floor, each
recording's beats are analysed once (:func:`clock.core.beats.analyse`: the
speech mask, its runs and the pause bookkeeping), and every quiet time is
answered from that analysis (:func:`clock.core.beats.decide`, which gives the
tick-by-tick replay's decisions), so a sweep costs one analysis per floor,
not one replay per setting.

For each (floor, quiet) setting, over every beat of every recording with an
event log:

* ``n_premature``: beats the clock would end while the guide was still
  talking;
* ``n_stalled``: beats where the guide spoke and the clock would not declare
  quiet before the next prompt, terminal response, ``end`` or the end of the
  recording (the tour would wait);
* ``n_missed_onset``: beats whose onset the clock would give up waiting for;
* the latency the clock adds after the last word (declared - last word),
  over the beats it ends right: mean, p95 and max. Means are compared as
  exact sums of ticks, never as floats.

The **recommended** setting is the one recommendation engine's
(:func:`clock.core.derive.derive`), the same as ``derive`` prints, whether or
not it lies on the grid; the grid shows how the corpus responds around it.
The **Pareto front** holds the grid settings no other setting beats on both
failing beats and mean added latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .beats import DEFAULT_ONSET_TIMEOUT_S, MISSED_ONSET, OK, OUTCOMES, PREMATURE, STALLED, analyse, decide_quiets
from .derive import Derivation, Margins, Observation, derive

__all__ = ["MAX_GRID", "SweepPoint", "SweepResult", "grid", "sweep"]

#: At most this many values in one range.
MAX_GRID = 1000


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """What one setting does to the recordings.

    Attributes
    ----------
    floor, quiet_s : float
    n_beats : int
        Beats in which the guide spoke.
    n_ok, n_premature, n_stalled, n_missed_onset : int
    latency_mean_s, latency_p95_s, latency_max_s : float or None
        Added latency (declared - last word) over the beats ended right.
    latency_ticks : int
        The sum of those latencies in ticks (exact; the mean's numerator).
    """

    floor: float
    quiet_s: float
    n_beats: int
    n_ok: int
    n_premature: int
    n_stalled: int
    n_missed_onset: int
    latency_mean_s: float | None
    latency_p95_s: float | None
    latency_max_s: float | None
    latency_ticks: int

    @property
    def n_failed(self) -> int:
        """Premature ends, stalls and missed onsets."""
        return self.n_premature + self.n_stalled + self.n_missed_onset

    @property
    def mean_ticks(self) -> Fraction | None:
        """The mean added latency in ticks, exactly."""
        return Fraction(self.latency_ticks, self.n_ok) if self.n_ok else None


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Every setting of a sweep, the recommended one and the Pareto front.

    Attributes
    ----------
    floors, quiets_s : tuple of float
        The grid, in order.
    onset_timeout_s : float
    points : tuple of SweepPoint
        One per (floor, quiet), floors outer.
    derivation : Derivation
        The recommendation engine's result (see :attr:`recommended`).
    pareto : tuple of SweepPoint
        Sorted by failing beats.
    n_recordings : int
    """

    floors: tuple[float, ...]
    quiets_s: tuple[float, ...]
    onset_timeout_s: float
    points: tuple[SweepPoint, ...]
    derivation: Derivation
    pareto: tuple[SweepPoint, ...]
    n_recordings: int

    @property
    def recommended(self) -> tuple[float | None, float | None, float | None]:
        """(floor, quiet_s, onset_timeout_s), as :func:`clock.core.derive.derive` recommends."""
        return self.derivation.setting

    def point(self, floor: float, quiet_s: float) -> SweepPoint | None:
        """The grid point of a setting, if it lies on the grid."""
        for p in self.points:
            if p.floor == floor and p.quiet_s == quiet_s:
                return p
        return None

    def matrix(self, field: str) -> np.ndarray:
        """A field as a (n_floors, n_quiets) array (NaN where None)."""
        values = [np.nan if getattr(p, field) is None else getattr(p, field) for p in self.points]
        return np.array(values, dtype=np.float64).reshape(len(self.floors), len(self.quiets_s))


def grid(spec: str) -> tuple[float, ...]:
    """Parse ``LO:HI:STEP`` (inclusive, as exact decimals) or a single value.

    Raises
    ------
    InvalidParameterError
        Not numbers, not finite, LO > HI, STEP <= 0, or more than
        :data:`MAX_GRID` values.

    Examples
    --------
    >>> grid("2.0:2.6:0.2")
    (2.0, 2.2, 2.4, 2.6)
    """
    try:
        parts = [Decimal(p.strip()) for p in spec.split(":")]
    except InvalidOperation:
        raise InvalidParameterError(f"a range must be LO:HI:STEP or a number, got {spec!r}") from None
    if not all(p.is_finite() for p in parts):
        raise InvalidParameterError(f"a range must be finite numbers, got {spec!r}")
    if len(parts) == 1:
        return (float(parts[0]),)
    if len(parts) != 3 or parts[2] <= 0 or parts[1] < parts[0]:
        raise InvalidParameterError(f"a range must be LO:HI:STEP with LO <= HI and STEP > 0, got {spec!r}")
    lo, hi, step = parts
    count = (hi - lo) / step
    if count >= MAX_GRID:
        raise InvalidParameterError(f"a range of more than {MAX_GRID} values is too many: {spec!r}")
    return tuple(float(lo + i * step) for i in range(int(count) + 1))


def _points(
    observations: Sequence[Observation], floor: float, quiets_s: Sequence[float], onset_timeout_s: float
) -> list[SweepPoint]:
    """Every quiet time at one floor, each recording analysed once and every quiet time decided at once."""
    n_q = len(quiets_s)
    counts = np.zeros((4, n_q), np.int64)
    added: list[NDArray[np.float64]] = []
    ticks = np.zeros(n_q, np.int64)
    codes = [OUTCOMES.index(name) for name in (OK, PREMATURE, STALLED, MISSED_ONSET)]
    for o in observations:
        if not o.has_beats:
            continue
        assert o.events is not None
        a = analyse(o.trace, o.events, floor=floor)
        found = decide_quiets(a, quiets_s=quiets_s, onset_timeout_s=onset_timeout_s)
        for row, code in enumerate(codes):
            counts[row] += (found.outcome == code).sum(axis=0)
        ok = found.outcome == codes[0]
        lat = np.where(ok, a.t_s[found.declared_tick] - a.t_s[found.last_word_tick], np.nan)
        added.append(lat)
        ticks += np.where(ok, found.declared_tick - found.last_word_tick, 0).sum(axis=0)
    lat_all = np.concatenate(added) if added else np.full((0, n_q), np.nan)
    out = []
    for j, q in enumerate(quiets_s):
        lat = lat_all[:, j]
        lat = lat[~np.isnan(lat)]
        ok, premature, stalled, missed = (int(x) for x in counts[:, j])
        out.append(
            SweepPoint(
                floor,
                q,
                ok + premature + stalled + missed,
                ok,
                premature,
                stalled,
                missed,
                float(lat.mean()) if lat.size else None,
                float(np.percentile(lat, 95)) if lat.size else None,
                float(lat.max()) if lat.size else None,
                int(ticks[j]),
            )
        )
    return out


def _pareto(points: Sequence[SweepPoint]) -> tuple[SweepPoint, ...]:
    """Settings no other beats on both failing beats and mean latency (exact), one per distinct pair."""
    scored = [p for p in points if p.n_beats and p.mean_ticks is not None]
    front: dict[tuple[int, Fraction], SweepPoint] = {}
    for p in scored:
        key = (p.n_failed, p.mean_ticks)
        dominated = any(
            q.n_failed <= p.n_failed
            and q.mean_ticks <= p.mean_ticks  # type: ignore[operator]
            and (q.n_failed, q.mean_ticks) != key
            for q in scored
        )
        if not dominated and key not in front:
            front[key] = p  # type: ignore[index]
    return tuple(sorted(front.values(), key=lambda p: (p.n_failed, p.mean_ticks, p.quiet_s, p.floor)))


def sweep(
    observations: Sequence[Observation],
    *,
    floors: Sequence[float],
    quiets_s: Sequence[float],
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S,
    margins: Margins | None = None,
    derivation: Derivation | None = None,
) -> SweepResult:
    """Replay every (floor, quiet) setting over the recordings.

    Parameters
    ----------
    observations : sequence of Observation
        Recordings with event logs (those without are skipped on the grid).
    floors, quiets_s : sequence of float
    onset_timeout_s : float
    margins : Margins, optional
        For the recommendation (see :func:`clock.core.derive.derive`).
    derivation : Derivation, optional
        The recommendation, when the caller has already derived it from the
        same observations and margins.

    Returns
    -------
    SweepResult

    Raises
    ------
    InvalidParameterError
        An empty grid, a floor outside [0, 1], or a quiet time that is not a
        positive finite number.
    """
    if not floors or not quiets_s:
        raise InvalidParameterError("a sweep needs at least one floor and one quiet time")
    for f in floors:
        if not (0 <= f <= 1):
            raise InvalidParameterError(f"sweep floors must be levels in [0, 1], got {f!r}")
    for q in quiets_s:
        if not (0 < q < float("inf")):
            raise InvalidParameterError(f"sweep quiet times must be positive numbers of seconds, got {q!r}")
    floors_f = tuple(float(f) for f in floors)
    quiets_f = tuple(float(q) for q in quiets_s)
    points: list[SweepPoint] = []
    for f in floors_f:
        points.extend(_points(observations, f, quiets_f, onset_timeout_s))
    derivation = derivation if derivation is not None else derive(observations, margins=margins)
    return SweepResult(
        floors_f,
        quiets_f,
        onset_timeout_s,
        tuple(points),
        derivation,
        _pareto(points),
        len(observations),
    )
