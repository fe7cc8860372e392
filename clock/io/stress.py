"""``speechclock stress``: each recording changed along each axis, replayed, where :mod:`clock.io.workers` says.

One task per recording (decoded once, lazily: a recording whose lines are
all answered by its level trace is not decoded): every line of every
setting searched for its first failing value (see :mod:`clock.core.stress`);
the changed traces are shared by the settings. The corpus's margins are
combined from the recordings' in corpus order, so a run gives the same
result serially, with ``jobs`` processes or on Dask.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.derive import Margins, Observation, Outcome, derive, judge
from ..core.levels import LevelTrace, levels
from ..core.stress import (
    AXES,
    UNCHANGED,
    Failure,
    Line,
    LineMargin,
    SettingStress,
    StressResult,
    add_noise,
    apply_gain,
    combine,
    failure_of,
    first_failure,
    line_margin,
    margin_line,
    pink_noise,
    recording_seed,
    robust_score,
    stretch_gaps,
    unheard,
)
from ..core.stress import lines as axis_lines
from ..core.thresholds import Thresholds
from .cache import TraceCache, resolve_cache
from .decode import AudioInfo, iter_blocks, probe
from .transforms import LOSS_BITRATE_KBPS, Encoded, decode, encode, lost_packets, reencode
from .workers import Workers, run_ordered

__all__ = ["Setting", "robust_preference", "settings_for", "stress", "stress_observations"]

#: (label, floor, quiet_s, onset_timeout_s)
Setting = tuple[str, float, float, float]


def settings_for(
    observations: Sequence[Observation],
    committed: Thresholds,
    *,
    label: str = "committed",
    margins: Margins | None = None,
    recommended: bool = True,
) -> list[Setting]:
    """The committed (or candidate) setting and, when asked and derive recommends one, derive's recommendation."""
    out: list[Setting] = [(label, committed.floor, committed.quiet_s, committed.onset_timeout_s)]
    if recommended:
        floor, quiet, timeout = derive(observations, margins=margins).setting
        if floor is not None and quiet is not None and timeout is not None:
            out.append(("recommended", floor, quiet, timeout))
    return out


@dataclass(frozen=True, slots=True)
class _Task:
    source: Any  # the recording's path or URL
    obs: Observation
    settings: tuple[Setting, ...]
    lines: tuple[Line, ...]
    search: str
    seed: int
    margins: Margins
    cache: TraceCache | None = None


_Found = tuple[int | None, Failure | None]


class _Changed:
    """One recording's changed versions, computed once each (and its samples decoded once, when first needed)."""

    def __init__(self, task: _Task) -> None:
        self.task = task
        self.seed = recording_seed(task.seed, task.obs.name)
        self._samples: NDArray[np.float32] | None = None
        self._noise: NDArray[np.float32] | None = None
        self._encoded: Encoded | None = None
        self._memo: dict[tuple[Any, ...], tuple[Observation, Callable[[float], float] | None]] = {}

    @property
    def trace(self) -> LevelTrace:
        return self.task.obs.trace

    def samples(self) -> NDArray[np.float32]:
        if self._samples is None:
            blocks = list(iter_blocks(self.task.source))
            self._samples = np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
        return self._samples

    def _levels(self, x: NDArray[np.float32]) -> LevelTrace:
        t = self.trace
        return levels(x, t.sample_rate_hz, ticks=t.ticks, metric=t.metric, options=t.options)

    def _loss(self, pct: float, burst: bool) -> NDArray[np.float32]:
        """The loss axis: one encode at :data:`LOSS_BITRATE_KBPS`, decoded with each pattern of lost packets."""
        if self._encoded is None:
            self._encoded = encode(self.samples(), self.trace.sample_rate_hz, bitrate_kbps=LOSS_BITRATE_KBPS)
        lost = lost_packets(len(self._encoded.packets), pct, burst=burst, seed=self.seed)
        return decode(self._encoded, lost)

    def _samples_at(self, line: Line, value: float) -> NDArray[np.float32]:
        """The decoded samples changed to ``value`` on ``line`` (gain, noise, codec or loss)."""
        x = self.samples()
        rate = self.trace.sample_rate_hz
        if line.axis == "gain":
            return apply_gain(x, value)
        if line.axis == "noise":
            if self._noise is None:
                self._noise = pink_noise(x.size, rate, seed=self.seed)
            return add_noise(x, self._noise, value)
        if line.axis == "codec":
            return reencode(x, rate, bitrate_kbps=value, dtx=line.variant == "dtx-on")
        return self._loss(value, line.variant == "burst")

    def _cached(self, line: Line, value: float) -> LevelTrace:
        """The level trace of the changed samples: from the trace cache (no decoding) or computed and kept there."""
        cache = self.task.cache
        if cache is None:
            return self._levels(self._samples_at(line, value))
        t = self.trace
        seeded = line.axis in ("noise", "loss")
        params = {
            "stress": [line.axis, line.variant, value, self.seed if seeded else None],
            "ticks": [str(t.ticks.period_s), t.ticks.align],
            "metric": t.metric,
            "options": asdict(t.options),
        }

        def compute() -> tuple[AudioInfo, list[LevelTrace]]:
            return probe(self.task.source), [self._levels(self._samples_at(line, value))]

        return cache.traces(self.task.source, params, compute)[1][0]

    def changed(self, line: Line, value: float, floor: float) -> tuple[Observation, Callable[[float], float] | None]:
        """The recording changed to ``value`` on ``line`` (and the map back to its timeline, for pauses)."""
        key: tuple[Any, ...] = (line.axis, line.variant, value) + ((floor,) if line.axis == "pause" else ())
        if key in self._memo:
            return self._memo[key]
        obs = self.task.obs
        back = None
        if line.axis == "pause":
            assert obs.events is not None
            extra = int(round(value / 1000.0 / self.trace.tick_s))
            trace, events, back = stretch_gaps(self.trace, obs.events, floor=floor, extra_ticks=extra)
            found = replace(obs, trace=trace, events=events)
        else:
            found = replace(obs, trace=self._cached(line, value))
        self._memo[key] = (found, back)
        return found, back


def _line_failure(changed: _Changed, line: Line, setting: Setting, unchanged: Outcome) -> _Found:
    """The first failing value of ``line`` for one setting on one recording, and its first failing beat."""
    _, floor, quiet, timeout = setting
    task = changed.task
    failures: dict[int, Failure] = {}

    def fails(i: int) -> bool:
        obs, back = changed.changed(line, line.values[i], floor)
        out = judge([obs], floor=floor, quiet_s=quiet, onset_timeout_s=timeout, margins=task.margins)
        if out.n_failed:
            u = out.unsatisfied[0]
            failures[i] = failure_of(u, t_s=None if back is None else back(u.t_s))
        elif out.n_ok < unchanged.n_ok:
            failures[i] = unheard(task.obs, obs, floor=floor)
        return i in failures

    index = first_failure(len(line.values), fails, search=task.search)
    return index, None if index is None else failures[index]


def _stress_task(task: _Task) -> tuple[list[Outcome], list[list[_Found]]]:
    """One recording: its unchanged outcome per setting, and per setting and line its first failure."""
    changed = _Changed(task)
    outcomes: list[Outcome] = []
    found: list[list[_Found]] = []
    for setting in task.settings:
        _, floor, quiet, timeout = setting
        unchanged = judge([task.obs], floor=floor, quiet_s=quiet, onset_timeout_s=timeout, margins=task.margins)
        outcomes.append(unchanged)
        if unchanged.n_failed:
            first = failure_of(unchanged.unsatisfied[0])
            found.append([(UNCHANGED, first) for _ in task.lines])
        else:
            found.append([_line_failure(changed, line, setting, unchanged) for line in task.lines])
    return outcomes, found


def _sum_outcomes(outcomes: Sequence[Outcome]) -> Outcome:
    """Per-recording outcomes added up as one corpus's (the judge's fields, in its order)."""
    n = len(outcomes)
    return Outcome(
        n,
        sum(o.n_beats for o in outcomes),
        sum(o.n_ok for o in outcomes),
        sum(o.n_premature for o in outcomes),
        sum(o.n_stalled for o in outcomes),
        sum(o.n_missed_onset for o in outcomes),
        sum(o.n_silent for o in outcomes),
        tuple(u for o in outcomes for u in o.unsatisfied),
    )


def stress_observations(
    sources: Sequence[Any],
    observations: Sequence[Observation],
    settings: Sequence[Setting],
    *,
    axes: Sequence[str] = AXES,
    search: str = "bisect",
    seed: int = 0,
    margins: Margins | None = None,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | None = None,
) -> StressResult:
    """The margins of each setting over recordings (``sources[i]`` is where ``observations[i]`` is decoded from).

    Recordings without beats are left out. ``progress`` is called with each
    replayed recording's index (among those with beats) as it finishes.
    ``cache`` keeps the changed recordings' level traces (keyed by the
    recording's content, the change and its seed): a second run decodes
    nothing.
    """
    pairs = [(s, o) for s, o in zip(sources, observations) if o.has_beats]
    tick_s = pairs[0][1].trace.tick_s if pairs else 1 / 60
    todo_lines = axis_lines(tick_s=tick_s, axes=axes) if pairs else ()  # nothing to replay: no margin to claim
    tasks = [_Task(s, o, tuple(settings), todo_lines, search, seed, margins or Margins(), cache) for s, o in pairs]
    done = run_ordered(_stress_task, tasks, workers=workers, progress=progress)
    out = []
    for k, (label, floor, quiet, timeout) in enumerate(settings):
        per_rec: list[tuple[LineMargin, ...]] = []
        for _, found in done:
            per_rec.append(tuple(line_margin(line, i, f) for line, (i, f) in zip(todo_lines, found[k])))
        margins_k = tuple(combine(line, [found[k][j] for _, found in done]) for j, line in enumerate(todo_lines))
        unchanged = _sum_outcomes([outcomes[k] for outcomes, _ in done])
        out.append(SettingStress(label, floor, quiet, timeout, unchanged, margins_k, tuple(per_rec)))
    return StressResult(tuple(o.name for _, o in pairs), tuple(out), search, seed)


def stress(
    corpus: Any,
    *,
    settings: Sequence[Setting] | None = None,
    axes: Sequence[str] = AXES,
    search: str = "bisect",
    seed: int = 0,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> StressResult:
    """How far each setting holds as the corpus changes: a quieter voice, a noisier room, a codec, lost packets.

    Parameters
    ----------
    corpus : Corpus
        From :func:`clock.load_corpus`.
    settings : sequence of (label, floor, quiet_s, onset_timeout_s), optional
        Default: the config's committed setting and derive's recommendation.
    axes : sequence of str
        Some of ``gain``, ``noise``, ``codec``, ``loss``, ``pause``.
    search : {"bisect", "step"}
    seed : int
        Seeds the noise and the lost packets (with each recording's name).
    jobs, scheduler :
        Where the recordings are replayed (see :class:`~clock.io.workers.Workers`).
    progress : callable, optional
        Called with each recording's index as it finishes.
    cache : TraceCache, path-like, bool or None
        Where the changed recordings' level traces are kept (as
        :func:`clock.load_corpus` takes it; True: the user's cache folder).

    Examples
    --------
    >>> corpus = clock.load_corpus(["recordings"])   # doctest: +SKIP
    >>> result = clock.stress(corpus, axes=["gain"])  # doctest: +SKIP
    >>> result.settings[0].margins[0].holds_to       # doctest: +SKIP
    -7.0
    """
    obs = list(corpus.observations)
    cfg = corpus.config
    if settings is None:
        settings = settings_for(obs, cfg.thresholds, margins=cfg.margins)
    return stress_observations(
        [r.info.path for r in corpus.recordings],
        obs,
        settings,
        axes=axes,
        search=search,
        seed=seed,
        margins=cfg.margins,
        workers=Workers(jobs=jobs, scheduler=scheduler),
        progress=progress,
        cache=usable_cache(cache, scheduler),
    )


def usable_cache(
    spec: TraceCache | str | os.PathLike[str] | bool | None, scheduler: str | None = None
) -> TraceCache | None:
    """The trace cache the tasks use: none on a remote Dask cluster (its folder is this machine's), or unwritable."""
    if scheduler is not None and not scheduler.startswith("local"):
        return None
    found = resolve_cache(spec)
    return found if found is not None and found.writable() else None


def robust_preference(
    sources: Sequence[Any],
    observations: Sequence[Observation],
    *,
    axes: Sequence[str] = AXES,
    seed: int = 0,
    margins: Margins | None = None,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | None = None,
) -> Callable[[list[tuple[float, float, float]]], tuple[int, str]]:
    """``derive(prefer=...)`` for ``--prefer robust``: the setting with the widest smallest margin.

    Every setting that replays right is stressed (in one pass over the
    recordings); the one whose smallest share of a line held
    (:func:`~clock.core.stress.robust_score`) is largest wins, the first
    (nearest the evidence's floor) on a tie; the note names the line that
    limits it.
    """

    def prefer(candidates: list[tuple[float, float, float]]) -> tuple[int, str]:
        settings = [(f"floor {f:g}", f, q, t) for f, q, t in candidates]
        result = stress_observations(
            sources,
            observations,
            settings,
            axes=axes,
            seed=seed,
            margins=margins,
            workers=workers,
            progress=progress,
            cache=cache,
        )
        scores = [robust_score(s) for s in result.settings]
        pick = max(range(len(scores)), key=lambda i: (scores[i], -i))
        lim = result.settings[pick].limiting
        held = "every line holds over its whole range"
        if lim is not None and lim.first_failure is not None:
            held = f"{lim.margin_fraction:.0%} of its {lim.name} line holds, the least of its lines: {margin_line(lim)}"
        note = (
            f"preferred for robustness: of the {len(candidates)} settings that replay right, its smallest margin is "
            f"the widest ({held})"
        )
        return pick, note

    return prefer
