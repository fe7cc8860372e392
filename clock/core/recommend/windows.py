"""Per recording: its ticks told apart into speech and silence without a floor, its levels and its window of floors.

Pure numpy. What :func:`clock.core.recommend.engine.derive` computes once per
recording (see :mod:`clock.core.recommend.engine` for the method), the
windows that meet, and the ladders of floors over recordings' levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..events import EventLog, Label
from ..levels import LevelTrace
from ..model import Margins, Observation
from ..spans import span_ends_s
from ..speech import TickClasses, classify, clear_level
from .floor_math import db, floor_ladder, nice_floors, target_floor

#: The robust high percentile of a recording's silence that a floor must clear.
NOISE_PERCENTILE = 99.0


def beat_spans(trace: LevelTrace, events: EventLog) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Each beat's span of ticks ``[lo, hi)``, from its log alone: the terminal response to its bound (the next
    prompt, terminal response or ``end``, or the recording's end; :func:`clock.core.spans.span_bounds` at no
    floor)."""
    t = trace.t_s
    end_s = float(t[-1]) + trace.tick_s if t.size else 0.0
    bounds = span_ends_s(events, t_s=t, speech=None, end_s=end_s)
    lo = np.searchsorted(t, np.array([e.t_s for e in events.terminals], np.float64), side="left")
    return lo.astype(np.int64), np.searchsorted(t, bounds, side="left").astype(np.int64)


def classify_ticks(
    trace: LevelTrace,
    *,
    labels: Sequence[Label] | None = None,
    events: EventLog | None = None,
    speech_range_db: float = 20.0,
) -> TickClasses:
    """Tell speech ticks from silence ticks without using a floor (:func:`clock.core.speech.classify`); with a log,
    speech only inside its beats' spans."""
    classes = classify(trace, labels=labels, speech_range_db=speech_range_db)
    speech, n = classes.speech.copy(), trace.n_ticks
    if events is not None and events.terminals:
        lo, hi = beat_spans(trace, events)
        inside = np.zeros(n + 1, np.int64)
        np.add.at(inside, lo, 1)
        np.add.at(inside, hi, -1)
        speech &= np.cumsum(inside)[:-1] > 0
    return TickClasses(speech, classes.silence & ~speech, classes.method, classes.split_level)


@dataclass(frozen=True, slots=True)
class RecordingLevels:
    """One recording's levels, told apart without a floor, and the floors that work for it.

    Attributes
    ----------
    name : str
    method : {"labels", "split"}
    n_speech_ticks, n_silence_ticks : int
    exact_zero_share : float
        Share of its silence ticks that read exactly 0.
    speech_low : float or None
        The ``speech_percentile`` percentile of its speech levels.
    speech_median : float or None
    noise_median, noise_high : float or None
        The median and the 99th percentile of its silence levels (None when
        it has no silence tick).
    noise_loudest_s : float or None
        Where its loudest silence tick is (to look at, not to rely on).
    window : (float, float) or None
        Floors above ``noise_high`` and ``floor_margin_db`` below
        ``speech_low``; None when there are none.
    verdict : str or None
        Why there is no window, in words.
    speech_quantiles, noise_quantiles : dict
        Percentiles p1, p5, p25, p50, p75, p95, p99 of its speech and silence
        levels (empty without ticks), for plots and reports.
    """

    name: str
    method: str
    n_speech_ticks: int
    n_silence_ticks: int
    exact_zero_share: float
    speech_low: float | None
    speech_median: float | None
    noise_median: float | None
    noise_high: float | None
    noise_loudest_s: float | None
    window: tuple[float, float] | None
    verdict: str | None
    speech_quantiles: dict[str, float] = field(default_factory=dict)
    noise_quantiles: dict[str, float] = field(default_factory=dict)


#: The percentiles a recording's speech and silence levels are summarised by.
QUANTILES = (1.0, 5.0, 25.0, 50.0, 75.0, 95.0, 99.0)


def _quantiles(values: NDArray[np.float64]) -> dict[str, float]:
    if not values.size:
        return {}
    return {f"p{q:g}": float(v) for q, v in zip(QUANTILES, np.percentile(values, QUANTILES))}


def recording_levels(obs: Observation, margins: Margins | None = None) -> tuple[RecordingLevels, TickClasses]:
    """Classify one recording's ticks and find its floor window (see the module notes).

    Returns
    -------
    RecordingLevels
    TickClasses
        Which ticks were taken as speech and as silence.
    """
    margins = margins or Margins()
    classes = classify_ticks(obs.trace, labels=obs.labels, events=obs.events, speech_range_db=margins.speech_range_db)
    level = obs.trace.level
    speech = level[classes.speech]
    silence = level[classes.silence]
    low = float(np.percentile(speech, margins.speech_percentile)) if speech.size else None
    noise_high = float(np.percentile(silence, NOISE_PERCENTILE)) if silence.size else None
    loudest = None
    if silence.size:
        loudest = float(obs.trace.t_s[np.flatnonzero(classes.silence)[int(np.argmax(silence))]])
    window, verdict = None, None
    if low is None:
        verdict = "no speech ticks, so no floor can be derived from it"
    else:
        hi = low * 10 ** (-margins.floor_margin_db / 20)
        lo = noise_high or 0.0
        if lo < hi:
            window = (lo, hi)
        else:
            verdict = (
                f"its noise (p{NOISE_PERCENTILE:g} {db(lo):.1f} dBFS) reaches within {margins.floor_margin_db:g} dB "
                f"of its speech (p{margins.speech_percentile:g} {db(low):.1f} dBFS), so a level-floor clock cannot "
                "work on it; it contributes no gap or quiet-time evidence"
            )
    rec = RecordingLevels(
        name=obs.name,
        method=classes.method,
        n_speech_ticks=int(speech.size),
        n_silence_ticks=int(silence.size),
        exact_zero_share=float(np.count_nonzero(silence == 0) / silence.size) if silence.size else 0.0,
        speech_low=low,
        speech_median=float(np.median(speech)) if speech.size else None,
        noise_median=float(np.median(silence)) if silence.size else None,
        noise_high=noise_high,
        noise_loudest_s=loudest,
        window=window,
        verdict=verdict,
        speech_quantiles=_quantiles(speech),
        noise_quantiles=_quantiles(silence),
    )
    return rec, classes


def clear_floor(rec: RecordingLevels) -> float | None:
    """The lowest floor clear of this recording's room (:func:`clock.core.speech.clear_level` of the median of its
    silence ticks).

    Where the guide spoke, as a floor hears it without reaching into the
    room: 0 over a room of exact zeros (every non-zero tick is heard). The
    median, not the 99th percentile: a quieter voice that the level split
    takes for silence reaches the high percentile long before it moves the
    median. None without silence ticks.
    """
    return None if rec.noise_median is None else clear_level(rec.noise_median)


def own_floor(rec: RecordingLevels) -> float | None:
    """Where this recording's narrations are seen to end: its own floor, kept 6 dB clear of its noise.

    The floor the recording would get on its own, but at least twice its
    noise (so noise bumps after a last word are not taken for speech), and
    at most 6 dB below its speech median.
    """
    if rec.speech_median is None:
        return None
    own = None
    if rec.window is not None and rec.speech_low is not None:
        target, _ = target_floor(rec.window[0], rec.window[1], rec.speech_low)
        nice = nice_floors(rec.window[0], rec.window[1], target)
        own = nice[0] if nice else target
    clear = 2 * (rec.noise_high or 0.0)
    ref = max(own or 0.0, clear)
    own = min(ref, rec.speech_median / 2) if ref > 0 else None
    # Under its own noise, a "last word" may be noise: no end to hold other floors to.
    return own if own is not None and own > (rec.noise_high or 0.0) else None


def full_ladder(
    levels: Sequence[RecordingLevels], members: Sequence[int], rooms: dict[int, float] | None = None
) -> tuple[float, float, list[float]]:
    """Floors about 1 dB apart from the lowest noise to the highest speech median of these recordings.

    ``rooms`` gives, for a recording whose noise (p99) is a quieter voice the level split takes for silence, the
    noise of its room (:meth:`clock.core.recommend.corpus.Corpus.quiet_voice`): the ladder reaches under that voice.
    """
    rooms = rooms or {}
    noises = [x for i in members for x in (levels[i].noise_median, rooms.get(i, levels[i].noise_high)) if x]
    tops = [x for i in members if (x := levels[i].speech_median)]
    if not tops:
        return 0.0, 0.0, []
    hi = max(tops)
    lo = min(noises) if noises else hi * 1e-3
    return lo, hi, floor_ladder(lo, hi)


def meeting_group(levels: Sequence[RecordingLevels], members: Sequence[int]) -> list[int]:
    """The largest group of recordings whose windows share a floor (ties: the widest overlap)."""
    with_window = [i for i in members if levels[i].window is not None]
    best: list[int] = []
    best_width = -1.0
    for i in with_window:
        lo = levels[i].window[0]  # type: ignore[index]
        # Every window containing a floor just above this lower edge.
        group = [j for j in with_window if levels[j].window[0] <= lo < levels[j].window[1]]  # type: ignore[index]
        top = min(levels[j].window[1] for j in group)  # type: ignore[index]
        bottom = max(levels[j].window[0] for j in group)  # type: ignore[index]
        width = db(top) - db(bottom) if bottom > 0 else float("inf")
        if len(group) > len(best) or (len(group) == len(best) and width > best_width):
            best, best_width = group, width
    return sorted(best)
