"""Sweep the floor and the quiet time: what each setting would have done to the recordings.

Pure numpy. The level traces are computed once. Each recording's beats are
analysed at every floor of the grid at once
(:func:`clock.core.floors.analyse_floors`: the order of the ticks by level does
not change with the floor, so every floor's runs of speech come from one pass,
and each beat's summary at every floor from searches in them), and every
quiet time at every floor is judged at once from those summaries by the one
judge (:meth:`clock.core.floors.FloorTable.outcomes`, which gives the
tick-by-tick replay's decisions; tests hold it to :func:`clock.core.replay.replay_ticks`
on every setting). A sweep of 1,000 settings costs about what a few settings
cost, not one analysis per floor; its points are made from the grid's arrays
(:attr:`SweepResult.columns`) when first read.

For each (floor, quiet) setting, over every beat of every recording with an
event log:

* ``n_premature``: beats the clock would end while the guide was still
  talking;
* ``n_stalled``: beats where the guide spoke and the clock would not declare
  quiet within the silence it had: before a bound that does not move with
  the clock's declaration (in a log that does not say who caused its
  bounds, the next prompt, terminal response or the end of the recording;
  a bound the page caused moves: :mod:`clock.core.causes`);
* ``n_missed_onset``: beats whose onset the clock would give up waiting for;
* ``n_outpaced`` and ``n_aborted``: beats the visitor ended (a prompt or
  ``end`` before the page's clock declared) after the guide had finished, or
  while it still spoke; ``n_superseded`` and ``n_recording_ended``: beats a
  terminal response superseded or the recording's end cut first. None is a
  failure: the setting did not end them. ``P``, which tells aborted from
  outpaced, is the longest narration pause of the beat's own recording at that floor
  (:func:`clock.core.analysis.narration_pause_s`);
* the latency the clock adds after the last word (declared - last word),
  over the beats it ends right: mean, p95 and max. Means are compared as
  exact sums of ticks, never as floats. Measured from the last word the
  clock hears at that floor, it is the quiet time give or take a tick;
* so also the time from the beat's last word as ``derive`` hears speech (the
  label track, or the recording's level split: the same for every setting)
  to the declared quiet, mean and max: what a visitor waits, which a floor
  that hears trailing noise as speech lengthens.

The **recommended** setting is the one recommendation engine's
(:func:`clock.core.recommend.engine.derive`), the same as ``derive`` prints, whether or
not it lies on the grid; the grid shows how the corpus responds around it.
The **Pareto front** holds the grid settings no other setting beats on both
failing beats and mean added latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from decimal import Decimal, DecimalException, InvalidOperation, localcontext
from fractions import Fraction
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .floors import analyse_floors
from .model import Margins, Observation
from .outcome import FAILURES, OK, OUTCOMES, SILENT, UNHEARD
from .recommend.engine import derive
from .recommend.evidence import Derivation
from .recommend.windows import classify_ticks
from .tally import Tally, field_name, tally_by_setting
from .thresholds import DEFAULT_ONSET_TIMEOUT_S, Thresholds, check_floor, check_wait_s

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
    tally : Tally
        How its beats ended: every beat the clock heard (``n_beats``), each
        an outcome of :data:`clock.core.outcome.OUTCOMES`. ``n_aborted``:
        beats the visitor ended while the guide was still speaking;
        ``n_outpaced``: beats the visitor ended after the guide had finished,
        before the clock declared quiet (the visitor did not wait);
        ``n_superseded``, ``n_recording_ended``: beats a terminal response
        superseded, or the recording's end cut, before the clock declared
        quiet (not the setting's doing). None of them is a failure;
        ``n_failed`` (:data:`clock.core.outcome.FAILURES`) are premature
        ends, stalls and missed onsets.
    latency_mean_s, latency_p95_s, latency_max_s : float or None
        Added latency (declared - last word) over the beats ended right.
    latency_ticks : int
        The sum of those latencies in ticks (exact; the mean's numerator).
    after_speech_mean_s, after_speech_max_s : float or None
        Declared quiet minus the beat's last speech tick as ``derive`` tells
        speech (labels or level split, the same at every setting), over the
        beats ended right.
    """

    #: Its output's fields, in order (:func:`clock.core.tally.record`): its own, and its tally's counts.
    RECORD: ClassVar[tuple[str, ...]] = (
        "floor", "quiet_s", "n_beats", "n_ok", "n_premature", "n_stalled", "n_missed_onset", "latency_mean_s",
        "latency_p95_s", "latency_max_s", "latency_ticks", "n_aborted", "after_speech_mean_s", "after_speech_max_s",
        "n_outpaced", "n_superseded", "n_recording_ended",
    )  # fmt: skip

    floor: float
    quiet_s: float
    tally: Tally
    latency_mean_s: float | None
    latency_p95_s: float | None
    latency_max_s: float | None
    latency_ticks: int
    after_speech_mean_s: float | None = None
    after_speech_max_s: float | None = None

    @property
    def mean_ticks(self) -> Fraction | None:
        """The mean added latency in ticks, exactly."""
        return Fraction(self.latency_ticks, self.tally.n_ok) if self.tally.n_ok else None


#: The :attr:`SweepResult.columns` of a point's tally: the count of each outcome, by its field's name.
COUNT_COLUMNS = tuple(field_name(kind) for kind in OUTCOMES)
#: The :attr:`SweepResult.columns` of a point's other fields, after its setting and tally.
VALUE_COLUMNS = tuple(f.name for f in fields(SweepPoint) if f.name not in ("floor", "quiet_s", "tally"))


@dataclass(frozen=True, slots=True)
class SweepResult:
    """Every setting of a sweep, the recommended one and the Pareto front.

    Attributes
    ----------
    floors, quiets_s : tuple of float
        The grid, in order.
    onset_timeout_s : float
    columns : dict of str to ndarray
        Per (floor, quiet), floors outer: the count of each outcome (:data:`COUNT_COLUMNS`), ``n_beats``,
        and every other :class:`SweepPoint` field but the setting (:data:`VALUE_COLUMNS`); NaN where a
        point's field is None.
    derivation : Derivation
        The recommendation engine's result (see :attr:`recommended`).
    pareto : tuple of SweepPoint
        Sorted by failing beats.
    n_recordings : int
    """

    floors: tuple[float, ...]
    quiets_s: tuple[float, ...]
    onset_timeout_s: float
    columns: dict[str, NDArray] = field(compare=False)
    derivation: Derivation
    pareto: tuple[SweepPoint, ...]
    n_recordings: int
    _points: list[tuple[SweepPoint, ...]] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def points(self) -> tuple[SweepPoint, ...]:
        """One :class:`SweepPoint` per (floor, quiet), floors outer (made from :attr:`columns` when first read)."""
        if not self._points:
            self._points.append(_as_points(self.floors, self.quiets_s, self.columns, range(self.size)))
        return self._points[0]

    @property
    def size(self) -> int:
        """The number of settings."""
        return len(self.floors) * len(self.quiets_s)

    @property
    def recommended(self) -> tuple[float | None, float | None, float | None]:
        """(floor, quiet_s, onset_timeout_s), as :func:`clock.core.recommend.engine.derive` recommends."""
        return self.derivation.setting

    def point(self, floor: float, quiet_s: float) -> SweepPoint | None:
        """The grid point of a setting, if it lies on the grid."""
        if floor not in self.floors or quiet_s not in self.quiets_s:
            return None
        return self.points[self.floors.index(floor) * len(self.quiets_s) + self.quiets_s.index(quiet_s)]

    def matrix(self, field: str) -> np.ndarray:
        """A field as a (n_floors, n_quiets) array (NaN where None)."""
        if field in ("floor", "quiet_s"):
            values = np.array([getattr(p, field) for p in self.points], np.float64)
        else:
            values = self.columns[field].astype(np.float64)
        return values.reshape(len(self.floors), len(self.quiets_s))


def _as_points(
    floors: Sequence[float], quiets_s: Sequence[float], columns: dict[str, NDArray], which: Sequence[int]
) -> tuple[SweepPoint, ...]:
    """The points of the grid at the indices ``which`` (floors outer), from its columns."""
    at = np.asarray(which, np.int64)
    counts = np.stack([columns[name][at] for name in COUNT_COLUMNS], axis=1).tolist()
    values = [[None if v != v else v for v in columns[name][at].tolist()] for name in VALUE_COLUMNS]  # NaN: None
    n_q = len(quiets_s)
    return tuple(
        SweepPoint(floors[x // n_q], quiets_s[x % n_q], Tally(tuple(c)), *row)
        for x, c, row in zip(at.tolist(), counts, zip(*values))
    )


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


def _last_speech_tick(said: NDArray[np.bool_], first: NDArray[np.int64], bound: NDArray[np.int64]) -> NDArray:
    """Per beat and floor, the last tick in ``[first, bound)`` that ``said`` calls speech; -1 when none."""
    last = np.maximum.accumulate(np.where(said, np.arange(said.size), -1)) if said.size else np.zeros(0, np.int64)
    found = last[np.clip(bound - 1, 0, max(said.size - 1, 0))] if said.size else np.full(bound.shape, -1)
    return np.where((bound > 0) & (found >= first), found, -1)


def _by_setting(key: NDArray[np.int64], values: NDArray[np.float64], n: int, *, p95: bool) -> list[NDArray]:
    """The mean, max (and 95th percentile, as ``np.percentile``'s linear method) of ``values`` per setting
    ``key``, NaN where a setting has none. A setting's mean sums its values in the order given, so it does not
    depend on the other settings of the grid."""
    counts = np.bincount(key, minlength=n)
    some = np.flatnonzero(counts)
    m = counts[some]
    starts = np.cumsum(m) - m
    mean, top, p = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    if not some.size:
        return [mean, top, p] if p95 else [mean, top]
    small = key.astype(np.int16) if n <= 2**15 else key  # a stable sort of small keys is a radix sort
    # Each setting's values together, in the order given.
    grouped = values[np.argsort(small, kind="stable")]
    mean[some] = np.add.reduceat(grouped, starts) / m
    if not p95:
        top[some] = np.maximum.reduceat(grouped, starts)
        return [mean, top]
    ascending = np.argsort(values)
    ranked = values[ascending[np.argsort(small[ascending], kind="stable")]]  # each setting's values, ascending
    top[some] = ranked[starts + m - 1]
    # The value at (m - 1) * 0.95 in the sorted values, interpolated as numpy's percentile does.
    at = (m - 1) * 0.95
    below = np.floor(at)
    last = at >= m - 1
    lo = starts + np.where(last, m - 1, below).astype(np.int64)
    hi = starts + np.where(last, m - 1, below + 1).astype(np.int64)
    gamma = at - np.where(last, -1.0, below)
    diff = ranked[hi] - ranked[lo]
    p[some] = np.where(gamma >= 0.5, ranked[hi] - diff * (1 - gamma), ranked[lo] + diff * gamma)
    return [mean, top, p]


#: At most this many (floor, beat, quiet time) outcomes are judged at once: a sweep of many settings over a log of
#: many beats goes a block of floors at a time.
_BLOCK_OUTCOMES = 2**23


def _points(
    observations: Sequence[Observation],
    speech: Sequence[NDArray[np.bool_] | None],
    floors: Sequence[float],
    quiets_s: Sequence[float],
    onset_timeout_s: float,
) -> dict[str, NDArray]:
    """Every setting of the grid, as :attr:`SweepResult.columns`: each recording's beats analysed at many floors
    at once (:func:`clock.core.floors.analyse_floors`) and every quiet time judged at once, a block of floors at a
    time (a beat's outcomes at a floor depend on the other recordings only through ``P`` at that floor)."""
    judged = [(o, said) for o, said in zip(observations, speech) if o.has_beats and said is not None]
    # The most beats that can be heard: the clock's lives do not overlap, so at most one per tick.
    most = 0
    for o, _ in judged:
        assert o.events is not None
        most += min(len(o.events.terminals), o.trace.n_ticks)
    per_block = max(1, _BLOCK_OUTCOMES // max(1, most * len(quiets_s)))
    blocks = [
        _block(judged, floors[lo : lo + per_block], quiets_s, onset_timeout_s)
        for lo in range(0, len(floors), per_block)
    ]
    return {name: np.concatenate([block[name] for block in blocks]) for name in blocks[0]}


def _block(
    judged: Sequence[tuple[Observation, NDArray[np.bool_] | None]],
    floors: Sequence[float],
    quiets_s: Sequence[float],
    onset_timeout_s: float,
) -> dict[str, NDArray]:
    """The settings of some floors (see :func:`_points`)."""
    n_f, n_q = len(floors), len(quiets_s)
    n = n_f * n_q
    q = np.asarray(quiets_s, np.float64)
    tables = [analyse_floors(o.trace, o.events, floors=floors) for o, _ in judged]  # type: ignore[arg-type]
    # Every recording's beats side by side (floor, beat, quiet time), each judged by its own recording.
    found = [
        tab.outcomes(quiets_s=q, onset_timeout_s=onset_timeout_s, narration_pause_s=tab.narration_pause_s)
        for tab in tables
    ]
    every = np.concatenate(found, axis=1) if found else np.zeros((n_f, 0, n_q), np.int8)
    setting = np.arange(n, dtype=np.int64).reshape(n_f, 1, n_q)
    counts = tally_by_setting(every, setting, n)
    # The beats a table leaves out end the same way at every setting: silent, or unheard.
    for tab in tables:
        silent, unheard = tab.left_out
        counts[SILENT] = counts[SILENT] + silent
        counts[UNHEARD] = counts[UNHEARD] + unheard
    keys, added, ticks, after_keys, after = [], [], [], [], []
    for (_, said), tab, outcome in zip(judged, tables, found):
        j, i, k = np.nonzero(outcome == OUTCOMES.index(OK))  # the beats ended right: floor, beat, quiet time
        declared = tab.declared_ticks(j, i, q[k])
        word = tab.last_word_tick[j, i]
        t = tab.t_s
        key = j * n_q + k
        keys.append(key)
        added.append(t[declared] - t[word])
        ticks.append(declared - word)
        assert said is not None
        last = _last_speech_tick(said, tab.first_tick[i], tab.bound_tick[j, i])
        heard = last >= 0
        after_keys.append(key[heard])
        after.append(t[declared[heard]] - t[last[heard]])
    key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    lat_mean, lat_max, lat_p95 = _by_setting(key, np.concatenate(added) if added else np.zeros(0), n, p95=True)
    tick_sum = np.zeros(n, np.int64)
    np.add.at(tick_sum, key, np.concatenate(ticks) if ticks else np.zeros(0, np.int64))
    after_key = np.concatenate(after_keys) if after_keys else np.zeros(0, np.int64)
    wait_mean, wait_max = _by_setting(after_key, np.concatenate(after) if after else np.zeros(0), n, p95=False)
    # The beats heard, as :attr:`clock.core.tally.Tally.n_beats` counts them.
    n_heard = np.sum([c for kind, c in counts.items() if kind != UNHEARD], axis=0)
    return {field_name(kind): c for kind, c in counts.items()} | {
        "n_beats": n_heard, "latency_mean_s": lat_mean, "latency_p95_s": lat_p95, "latency_max_s": lat_max,
        "latency_ticks": tick_sum, "after_speech_mean_s": wait_mean, "after_speech_max_s": wait_max,
    }  # fmt: skip


def _pareto(columns: dict[str, NDArray]) -> NDArray[np.int64]:
    """The settings no other beats on both failing beats and mean latency (exact), one per distinct pair, as
    indices into the grid sorted by failing beats.

    A pair is on the front when its mean is the least among the settings that fail as many beats, and less
    than every mean of the settings that fail fewer; of the settings that share it, the first in the grid.
    Means are ratios of whole ticks to whole beats, compared exactly.
    """
    ok, ticks = columns["n_ok"], columns["latency_ticks"]
    failed = np.sum([columns[field_name(kind)] for kind in FAILURES], axis=0)
    scored = np.flatnonzero((columns["n_beats"] > 0) & (ok > 0))
    # Rounding keeps the means' order, so the least exact mean of each count is among the least rounded ones.
    mean = ticks[scored] / ok[scored]
    front = []
    best: Fraction | None = None  # the least mean of the settings that fail fewer beats
    for f in np.unique(failed[scored]).tolist():
        group = failed[scored] == f
        tied = scored[group][mean[group] == mean[group].min()]
        least = min(Fraction(int(a), int(b)) for a, b in set(zip(ticks[tied].tolist(), ok[tied].tolist())))
        if best is not None and least >= best:
            continue
        best = least
        first = tied[ticks[tied] * least.denominator == ok[tied] * least.numerator][0]
        front.append(int(first))
    return np.array(front, np.int64)


def sweep(
    observations: Sequence[Observation],
    *,
    floors: Sequence[float],
    quiets_s: Sequence[float],
    onset_timeout_s: float = DEFAULT_ONSET_TIMEOUT_S,
    margins: Margins | None = None,
    derivation: Derivation | None = None,
    committed: Thresholds | None = None,
) -> SweepResult:
    """Replay every (floor, quiet) setting over the recordings.

    Parameters
    ----------
    observations : sequence of Observation
        Recordings with event logs (those without are skipped on the grid).
    floors, quiets_s : sequence of float
    onset_timeout_s : float
    margins : Margins, optional
        For the recommendation (see :func:`clock.core.recommend.engine.derive`).
    derivation : Derivation, optional
        The recommendation, when the caller has already derived it from the
        same observations and margins.
    committed : Thresholds, optional
        The setting the page runs, for the recommendation's rules (see
        :func:`clock.core.recommend.engine.derive`).

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
    columns = _points(observations, speech, floors_f, quiets_f, onset_timeout_s)
    derivation = derivation if derivation is not None else derive(observations, margins=margins, committed=committed)
    pareto = _as_points(floors_f, quiets_f, columns, _pareto(columns).tolist())
    return SweepResult(floors_f, quiets_f, onset_timeout_s, columns, derivation, pareto, len(observations))
