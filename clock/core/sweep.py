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
* ``n_outpaced``: beats the page ended (``end``) after the guide had
  finished, before the clock declared quiet (a failure: the clock was slower
  than the visitor);
* ``n_aborted``: beats the page ended (``end``) while the guide was still
  speaking (not a failure, and not a beat ended right); ``P``, which tells
  the two apart, is the longest narration pause of all the recordings at
  that floor (:func:`clock.core.beats.narration_pause_s`);
* the latency the clock adds after the last word (declared - last word),
  over the beats it ends right: mean, p95 and max. Means are compared as
  exact sums of ticks, never as floats. Measured from the last word the
  clock hears at that floor, it is the quiet time give or take a tick;
* so also the time from the beat's last word as ``derive`` hears speech (the
  label track, or the recording's level split: the same for every setting)
  to the declared quiet, mean and max: what a visitor waits, which a floor
  that hears trailing noise as speech lengthens.

The **recommended** setting is the one recommendation engine's
(:func:`clock.core.derive.derive`), the same as ``derive`` prints, whether or
not it lies on the grid; the grid shows how the corpus responds around it.
The **Pareto front** holds the grid settings no other setting beats on both
failing beats and mean added latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, DecimalException, InvalidOperation, localcontext
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .beats import (
    ABORTED,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    OUTPACED,
    PREMATURE,
    STALLED,
    FloorAnalysis,
    analyse,
    decide_quiets,
    narration_pause_s,
)
from .derive import Derivation, Margins, Observation, classify_ticks, derive
from .thresholds import DEFAULT_ONSET_TIMEOUT_S, check_floor, check_wait_s

__all__ = ["MAX_GRID_VALUES", "MAX_SWEEP_POINTS", "SweepPoint", "SweepResult", "grid", "sweep"]

#: The most values one range gives, and the most settings one sweep replays.
MAX_GRID_VALUES = 1000
MAX_SWEEP_POINTS = 10000

# The largest magnitude of a range bound or step (floors are at most 1, quiet times an hour).
_MAX_GRID_ABS = 10**6


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """What one setting does to the recordings.

    Attributes
    ----------
    floor, quiet_s : float
    n_beats : int
        Beats in which the guide spoke.
    n_ok, n_premature, n_stalled, n_missed_onset : int
    n_aborted : int
        Beats the page ended while the guide was still speaking (not failures).
    n_outpaced : int
        Beats the page ended after the guide had finished, before the clock
        declared quiet (failures).
    latency_mean_s, latency_p95_s, latency_max_s : float or None
        Added latency (declared - last word) over the beats ended right.
    latency_ticks : int
        The sum of those latencies in ticks (exact; the mean's numerator).
    after_speech_mean_s, after_speech_max_s : float or None
        Declared quiet minus the beat's last speech tick as ``derive`` tells
        speech (labels or level split, the same at every setting), over the
        beats ended right.
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
    n_aborted: int = 0
    after_speech_mean_s: float | None = None
    after_speech_max_s: float | None = None
    n_outpaced: int = 0

    @property
    def n_failed(self) -> int:
        """Premature ends, stalls, outpaced ends and missed onsets."""
        return self.n_premature + self.n_stalled + self.n_outpaced + self.n_missed_onset

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

    Every part is a finite number of at most 10**6 (no ``nan``, ``inf`` or
    huge exponents), ``LO <= HI``, ``STEP > 0``, and the range holds at most
    :data:`MAX_GRID_VALUES` values.

    Raises
    ------
    InvalidParameterError
        When it is not.

    Examples
    --------
    >>> grid("2.0:2.6:0.2")
    (2.0, 2.2, 2.4, 2.6)
    """
    if len(spec) > 200:
        raise InvalidParameterError(f"a range must be LO:HI:STEP or a number, got {spec[:40]!r}...")
    try:
        parts = [Decimal(p.strip()) for p in spec.split(":")]
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


def _last_speech_s(o: Observation, speech: NDArray[np.bool_], a: FloorAnalysis) -> NDArray[np.float64]:
    """Per beat, the time of its last speech tick (as derive tells speech) within its span; NaN when none."""
    out = np.full(len(a.beats), np.nan)
    for i, b in enumerate(a.beats):
        ticks = np.flatnonzero(speech[b.first_tick : b.bound_tick])
        if ticks.size:
            out[i] = o.trace.t_s[b.first_tick + ticks[-1]]
    return out


def _points(
    observations: Sequence[Observation],
    speech: Sequence[NDArray[np.bool_] | None],
    floor: float,
    quiets_s: Sequence[float],
    onset_timeout_s: float,
) -> list[SweepPoint]:
    """Every quiet time at one floor, each recording analysed once and every quiet time decided at once."""
    n_q = len(quiets_s)
    codes = [OUTCOMES.index(name) for name in (OK, PREMATURE, STALLED, MISSED_ONSET, ABORTED, OUTPACED)]
    counts = np.zeros((len(codes), n_q), np.int64)
    added: list[NDArray[np.float64]] = []
    after: list[NDArray[np.float64]] = []
    ticks = np.zeros(n_q, np.int64)
    judged = [(o, said) for o, said in zip(observations, speech) if o.has_beats and said is not None]
    analyses = [analyse(o.trace, o.events, floor=floor) for o, _ in judged]  # type: ignore[arg-type]
    pause = narration_pause_s(analyses)
    for (o, said), a in zip(judged, analyses):
        found = decide_quiets(a, quiets_s=quiets_s, onset_timeout_s=onset_timeout_s, narration_pause_s=pause)
        for row, code in enumerate(codes):
            counts[row] += (found.outcome == code).sum(axis=0)
        ok = found.outcome == codes[0]
        declared = a.t_s[found.declared_tick]
        added.append(np.where(ok, declared - a.t_s[found.last_word_tick], np.nan))
        after.append(np.where(ok, declared - _last_speech_s(o, said, a)[:, None], np.nan))
        ticks += np.where(ok, found.declared_tick - found.last_word_tick, 0).sum(axis=0)
    lat_all = np.concatenate(added) if added else np.full((0, n_q), np.nan)
    after_all = np.concatenate(after) if after else np.full((0, n_q), np.nan)
    out = []
    for j, q in enumerate(quiets_s):
        lat = lat_all[:, j]
        lat = lat[~np.isnan(lat)]
        waits = after_all[:, j]
        waits = waits[~np.isnan(waits)]
        ok, premature, stalled, missed, aborted, outpaced = (int(x) for x in counts[:, j])
        out.append(
            SweepPoint(
                floor,
                q,
                ok + premature + stalled + missed + aborted + outpaced,
                ok,
                premature,
                stalled,
                missed,
                float(lat.mean()) if lat.size else None,
                float(np.percentile(lat, 95)) if lat.size else None,
                float(lat.max()) if lat.size else None,
                int(ticks[j]),
                aborted,
                float(waits.mean()) if waits.size else None,
                float(waits.max()) if waits.size else None,
                outpaced,
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
        An empty grid, more than :data:`MAX_SWEEP_POINTS` settings, a floor
        outside [0, 1], or a quiet time outside (0, 3600] s.
    """
    if not floors or not quiets_s:
        raise InvalidParameterError("a sweep needs at least one floor and one quiet time")
    if len(floors) * len(quiets_s) > MAX_SWEEP_POINTS:
        raise InvalidParameterError(f"a sweep of more than {MAX_SWEEP_POINTS} settings is too many")
    floors_f = tuple(check_floor(f, "sweep floor") for f in floors)
    quiets_f = tuple(check_wait_s(q, "sweep quiet time") for q in quiets_s)
    margins = margins if margins is not None else Margins()
    speech = [
        classify_ticks(o.trace, labels=o.labels, events=o.events, speech_range_db=margins.speech_range_db).speech
        if o.has_beats
        else None
        for o in observations
    ]
    points: list[SweepPoint] = []
    for f in floors_f:
        points.extend(_points(observations, speech, f, quiets_f, onset_timeout_s))
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
