"""Per recording: its ticks told apart into speech and silence without a floor, its levels and its window of floors.

Pure numpy. Part of the recommendation engine (see :mod:`clock.core.derive`
for the whole method): what :func:`clock.core.derive.derive` computes once per
recording, and the arithmetic of floors inside windows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .agreement import Agreement
from .events import EventLog, Label
from .levels import LevelTrace
from .segments import MIN_GAP_S
from .spans import span_ends_s
from .speech import CLEAR_DB, TickClasses, classify
from .thresholds import check_bounded

__all__ = [
    "MARGIN_BOUNDS",
    "Margins",
    "Observation",
    "RecordingLevels",
    "TickClasses",
    "classify_ticks",
    "equivalents",
    "recording_levels",
]

#: The robust high percentile of a recording's silence that a floor must clear.
NOISE_PERCENTILE = 99.0
_MAX_CANDIDATES = 48


#: The largest value of each margin (they are at least 0): a margin of 1e308 is no margin.
MARGIN_BOUNDS = {
    "quiet_margin_s": (60.0, " s"),
    "floor_margin_db": (60.0, " dB"),
    "onset_margin_s": (3600.0, " s"),
    "min_gap_s": (60.0, " s"),
    "speech_range_db": (120.0, " dB"),
    "min_saving_s": (60.0, " s"),
}


@dataclass(frozen=True, slots=True)
class Margins:
    """How far the recommendations stand from the evidence, and what counts as a gap.

    Attributes
    ----------
    quiet_margin_s : float
        Added to the longest gap for the quiet time; a narration gap fails
        the check when it reaches ``quiet_s - quiet_margin_s``.
    floor_margin_db : float
        The speech low percentile must be this far above the floor (the
        window's upper edge, and a check).
    onset_margin_s : float
        Added to the longest onset latency for the onset timeout.
    min_gap_s : float
        Shorter gaps are dips inside words, left out of the gap distribution
        (the maximum is still over every gap).
    speech_percentile : float
        The low percentile of speech levels the floor is set below.
    speech_range_db : float
        Speech ticks are within this many dB of their utterance's median.
    min_saving_s : float
        derive names a rule on the provider's event only where it saves at
        least this much median dead air against the level clock, at the
        recommended setting and at the committed one.
    """

    quiet_margin_s: float = 0.2
    floor_margin_db: float = 3.0
    onset_margin_s: float = 2.0
    min_gap_s: float = MIN_GAP_S
    speech_percentile: float = 5.0
    speech_range_db: float = 20.0
    min_saving_s: float = 0.3

    def __post_init__(self) -> None:
        for name, (high, unit) in MARGIN_BOUNDS.items():
            check_bounded(getattr(self, name), name, 0.0, high, unit)
        if not (0 < self.speech_percentile < 100):
            raise InvalidParameterError(f"speech_percentile must be in (0, 100), got {self.speech_percentile!r}")


@dataclass(frozen=True, slots=True)
class Observation:
    """One recording as the derivation sees it.

    Attributes
    ----------
    name : str
    trace : LevelTrace
    events : EventLog or None
    labels : sequence of Label or None
    meta : dict
        Metadata from the config (voice, model, ...), for grouping; the log's
        ``session`` line fills in what the config does not say.
    agreement : Agreement or None
        The page's logged levels against the recording's (when the log has
        ``clock.level`` readings).
    """

    name: str
    trace: LevelTrace
    events: EventLog | None = None
    labels: tuple[Label, ...] | None = None
    meta: dict[str, object] = field(default_factory=dict)
    agreement: Agreement | None = None

    @property
    def has_beats(self) -> bool:
        """Whether its event log holds a terminal response."""
        return self.events is not None and bool(self.events.terminals)


def _beat_spans(trace: LevelTrace, events: EventLog) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
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
        lo, hi = _beat_spans(trace, events)
        inside = np.zeros(n + 1, np.int64)
        np.add.at(inside, lo, 1)
        np.add.at(inside, hi, -1)
        speech &= np.cumsum(inside)[:-1] > 0
    return TickClasses(speech, classes.silence & ~speech, classes.method, classes.split_level)


def _db(x: float) -> float:
    """20 log10(x); -inf for 0, inf for inf."""
    if x == float("inf"):
        return x
    return 20 * math.log10(x) if x > 0 else float("-inf")


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
                f"its noise (p{NOISE_PERCENTILE:g} {_db(lo):.1f} dBFS) reaches within {margins.floor_margin_db:g} dB "
                f"of its speech (p{margins.speech_percentile:g} {_db(low):.1f} dBFS), so a level-floor clock cannot "
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


def _nice_floors(lo: float, hi: float, target: float) -> list[float]:
    """Floors of two significant digits strictly inside (lo, hi), nearest ``target`` (in dB) first.

    Three digits when the window is too narrow for two; below 1/1000 of
    ``hi`` nothing is offered.
    """
    bottom = max(lo, hi * 1e-3)
    found: list[Decimal] = []
    for digits in (2, 3):
        for exp in range(math.floor(math.log10(bottom)), math.floor(math.log10(hi)) + 1):
            for m in range(10 ** (digits - 1), 10**digits):
                v = Decimal(m).scaleb(exp - digits + 1)
                if lo < float(v) < hi:
                    found.append(v)
        if found:
            break
    ranked = sorted(set(found), key=lambda v: (abs(math.log(float(v) / target)), v))
    return [float(v) for v in ranked[:_MAX_CANDIDATES]]


def _ladder(lo: float, hi: float, *, exclude: Sequence[float] = ()) -> list[float]:
    """Floors of two significant digits from just above ``lo`` up to below ``hi``, about 1 dB apart."""
    out: list[float] = []
    k = 1
    while True:
        v = float(f"{lo * 10 ** (k / 20):.2g}")
        k += 1
        if v >= hi or k > 200:
            return out
        if v > lo and v not in out and v not in exclude:
            out.append(v)


def _meeting_group(levels: Sequence[RecordingLevels], members: Sequence[int]) -> list[int]:
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
        width = _db(top) - _db(bottom) if bottom > 0 else float("inf")
        if len(group) > len(best) or (len(group) == len(best) and width > best_width):
            best, best_width = group, width
    return sorted(best)


def _target(lo: float, hi: float, speech_low: float) -> tuple[float, str]:
    """Where in a window (lo, hi) a floor goes: 6 dB below the speech low, or the middle if that is nearer the noise."""
    target_db = min(_db(hi), _db(speech_low) - 20 * math.log10(2))
    if lo > 0 and target_db - _db(lo) < _db(hi) - target_db:
        return 10 ** (
            (_db(lo) + _db(hi)) / 40
        ), "the middle of the window in dB (6 dB below speech is nearer the noise)"
    return 10 ** (target_db / 20), "6 dB below the lowest speech p{p}"


def _clear_floor(rec: RecordingLevels) -> float | None:
    """The lowest floor clear of this recording's room: ``CLEAR_DB`` over the median of its silence ticks.

    Where the guide spoke, as a floor hears it without reaching into the
    room: 0 over a room of exact zeros (every non-zero tick is heard). The
    median, not the 99th percentile: a quieter voice that the level split
    takes for silence reaches the high percentile long before it moves the
    median. None without silence ticks.
    """
    return None if rec.noise_median is None else rec.noise_median * 10 ** (CLEAR_DB / 20)


def _own_floor(rec: RecordingLevels) -> float | None:
    """Where this recording's narrations are seen to end: its own floor, kept 6 dB clear of its noise.

    The floor the recording would get on its own, but at least twice its
    noise (so noise bumps after a last word are not taken for speech), and
    at most 6 dB below its speech median.
    """
    if rec.speech_median is None:
        return None
    own = None
    if rec.window is not None and rec.speech_low is not None:
        target, _ = _target(rec.window[0], rec.window[1], rec.speech_low)
        nice = _nice_floors(rec.window[0], rec.window[1], target)
        own = nice[0] if nice else target
    clear = 2 * (rec.noise_high or 0.0)
    ref = max(own or 0.0, clear)
    own = min(ref, rec.speech_median / 2) if ref > 0 else None
    # Under its own noise, a "last word" may be noise: no end to hold other floors to.
    return own if own is not None and own > (rec.noise_high or 0.0) else None


def equivalents(floor: float) -> dict[str, float]:
    """A floor in other systems' units.

    Returns
    -------
    dict
        ``dbfs``: 20 log10(floor); ``auditok_energy_threshold``: auditok's
        log energy, 20 log10 of the RMS of int16 samples; ``hark_threshold_db``:
        hark's level (max of getFloatFrequencyData) for a pure tone at this
        RMS: its peak bin reads 20 log10(0.42/2 * sqrt(2) * floor).
    """
    return {
        "dbfs": 20 * math.log10(floor),
        "auditok_energy_threshold": 20 * math.log10(floor * 32768),
        "hark_threshold_db": 20 * math.log10(0.21 * math.sqrt(2) * floor),
    }
