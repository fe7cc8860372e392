"""Derive the floor, the quiet time and the onset timeout from recordings, with the evidence.

Pure numpy. This is the one recommendation engine: ``derive``, ``sweep``,
``report``, the notebook and the API all call :func:`derive`. One recording
is an observation, not a claim: every number carries the count it rests on,
which recording drives it and what it would be without that recording, and
the recommended setting is replayed over the whole corpus before it is
returned.

Telling speech from noise without assuming a floor
--------------------------------------------------
The floor being derived is never used to decide which ticks are speech:

1. **labels** (ground truth, when a recording has an Audacity label track):
   a tick is *speech* when its analyser window lies inside a labelled
   utterance, *silence* when its window stays clear of every utterance by
   0.1 s before it and 0.5 s after it (word tails and codec decay are not
   silence);
2. **exact-zero runs**: a tick whose level is exactly 0 is silence;
3. **split** (without labels): a two-mode split of the log-levels of the
   non-zero ticks (Otsu's threshold); runs above it, joined across dips
   shorter than 0.3 s, are the utterances; silence keeps the same guard
   from them as with labels.

A speech tick is also within ``speech_range_db`` (20 dB) of its utterance's
median, and, when the recording has an event log, inside a beat.

Per recording: a floor window
-----------------------------
* **noise**: the median and the 99th percentile of its silence ticks (not
  the single loudest tick);
* **speech low**: the ``speech_percentile`` (5th) percentile of its speech
  ticks;
* **window**: floors above the noise's 99th percentile and at least
  ``floor_margin_db`` (3 dB) below its speech low. A recording whose noise
  reaches that high has no window: a level-floor clock cannot work on it,
  and it contributes no floor, gap or quiet-time evidence.

The corpus
----------
* **floor**: inside the intersection of the windows (the largest group of
  recordings whose windows meet; the others are named): 6 dB below the
  lowest speech low, unless that is closer to the noise edge than to the
  speech edge, then the middle of the intersection in dB; a two-significant-
  digit value near it that the replay accepts (below).
* **quiet time**: at that floor, the longest gap the clock must bridge inside
  a beat (a narration's inter-sentence gaps, and the silence between an
  overlapping acknowledgment and the narration), unpaused time only, plus
  ``quiet_margin_s`` (0.2 s), rounded up to 0.05 s; but never more than the
  quiet left after the last word before the beat's bound (the next prompt,
  terminal response or ``end``), or the clock would stall.
* **onset timeout**: the longest onset latency plus ``onset_margin_s`` (2 s),
  rounded up to 0.5 s.

Every candidate setting is checked with :func:`clock.core.beats.decide` (the
replay's decisions) on every beat; the first floor, nearest the preferred
one, at which a quiet time and timeout end every beat right is recommended.
When none does, the setting that fails the fewest beats is, and each failing
beat is named with its reason. Gap evidence comes from gaps inside beats
only; a recording without an event log contributes all its gaps (and says
so), one whose log has no terminal response contributes none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_CEILING, Decimal

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .agreement import Agreement
from .beats import FAILURES, MISSED_ONSET, OK, PREMATURE, STALLED, FloorAnalysis, analyse, beats, decide, span_bounds
from .events import EventLog, Label
from .levels import LevelTrace
from .segments import runs, segments
from .thresholds import Thresholds, check_bounded

__all__ = [
    "MARGIN_BOUNDS",
    "Comparison",
    "Derivation",
    "FloorEvidence",
    "GapEvidence",
    "Margins",
    "Observation",
    "OnsetEvidence",
    "Outcome",
    "RecordingLevels",
    "Stability",
    "TickClasses",
    "Unsatisfied",
    "classify_ticks",
    "derive",
    "equivalents",
    "judge",
    "recording_levels",
]

PERCENTILES = (("min", 0.0), ("p0.1", 0.1), ("p1", 1.0), ("p5", 5.0), ("p50", 50.0), ("p95", 95.0), ("max", 100.0))
#: Fewer than these make the evidence thin.
THIN = {"gaps": 30, "speech_ticks": 1000, "silence_ticks": 1000, "beats": 10, "recordings": 3}
#: The robust high percentile of a recording's silence that a floor must clear.
NOISE_PERCENTILE = 99.0
#: Silence keeps this far from speech: before an utterance, and after it (tails).
GUARD_BEFORE_S, GUARD_AFTER_S = 0.1, 0.5
#: A window of floors narrower than this (dB) is flagged.
NARROW_DB = 6.0
#: Without a prompt in the log, a beat's room ends this long before the next response (when no log shows it).
DEFAULT_PROMPT_DELAY_S = 1.0
#: Candidate floors inside the windows, and in all, tried before settling for the setting failing fewest beats.
MAX_PRIMARY = 8
MAX_FLOORS_TRIED = 40
FEWEST_FAILURES = "fewest failing beats: no setting ends every beat right"
_EPS_S = 1e-9
_MAX_CANDIDATES = 48
#: ``derive(prefer=...)``: settings that replay right -> (the index of the one to take, a note for the floor rule).
Prefer = Callable[[list[tuple[float, float, float]]], tuple[int, str]]


#: The largest value of each margin (they are at least 0): a margin of 1e308 is no margin.
MARGIN_BOUNDS = {
    "quiet_margin_s": (60.0, " s"),
    "floor_margin_db": (60.0, " dB"),
    "onset_margin_s": (3600.0, " s"),
    "min_gap_s": (60.0, " s"),
    "speech_range_db": (120.0, " dB"),
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
    """

    quiet_margin_s: float = 0.2
    floor_margin_db: float = 3.0
    onset_margin_s: float = 2.0
    min_gap_s: float = 0.15
    speech_percentile: float = 5.0
    speech_range_db: float = 20.0

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


@dataclass(frozen=True, slots=True)
class TickClasses:
    """Which ticks of one trace are speech and which are silence.

    Attributes
    ----------
    speech, silence : ndarray of bool, shape (n_ticks,)
    method : {"labels", "split"}
    split_level : float or None
        The two-mode split, when used.
    """

    speech: NDArray[np.bool_]
    silence: NDArray[np.bool_]
    method: str
    split_level: float | None


def _otsu_log_split(levels: NDArray[np.float64]) -> float | None:
    """Otsu's threshold on log10 of positive levels (None when fewer than 2 distinct values)."""
    logs = np.log10(levels[levels > 0])
    if logs.size < 2 or logs.min() == logs.max():
        return None
    hist, edges = np.histogram(logs, bins=256)
    centres = (edges[:-1] + edges[1:]) / 2
    w0 = np.cumsum(hist)
    w1 = w0[-1] - w0
    s0 = np.cumsum(hist * centres)
    m0 = s0 / np.maximum(w0, 1)
    m1 = (s0[-1] - s0) / np.maximum(w1, 1)
    k = int(np.argmax(w0 * w1 * (m0 - m1) ** 2))
    return float(10 ** edges[k + 1])


def _near(mask: NDArray[np.bool_], before: int, after: int) -> NDArray[np.bool_]:
    """Ticks within ``before`` ticks before, or ``after`` ticks after, a True tick."""
    n = mask.size
    csum = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
    k = np.arange(n)
    lo = np.maximum(0, k - after)
    hi = np.minimum(n, k + before + 1)
    return (csum[hi] - csum[lo]) > 0


def classify_ticks(
    trace: LevelTrace,
    *,
    labels: Sequence[Label] | None = None,
    events: EventLog | None = None,
    speech_range_db: float = 20.0,
) -> TickClasses:
    """Tell speech ticks from silence ticks without using a floor (see the module notes)."""
    t = trace.t_s
    level = trace.level
    window_s = trace.options.fft_size / trace.sample_rate_hz
    n = trace.n_ticks
    zero = level == 0.0
    groups: list[NDArray[np.int64]] = []
    if labels:
        method, split = "labels", None
        touched = np.zeros(n, bool)
        for lab in labels:
            touched |= (t + GUARD_BEFORE_S > lab.start_s) & (t - window_s - GUARD_AFTER_S < lab.end_s)
            groups.append(np.flatnonzero((t - window_s >= lab.start_s) & (t <= lab.end_s)))
        silence = ~touched | zero
    else:
        method = "split"
        split = _otsu_log_split(level)
        above = level > split if split is not None else ~zero
        tick = trace.tick_s
        near = _near(above, math.ceil(GUARD_BEFORE_S / tick), math.ceil(GUARD_AFTER_S / tick))
        silence = ~near | zero
        # Runs above the split, joined across dips shorter than 0.3 s, are the utterances.
        merged: list[list[int]] = []
        for a, b in runs(above).tolist():
            if merged and t[a] - t[merged[-1][1]] < 0.3:
                merged[-1][1] = b
            else:
                merged.append([a, b])
        # As with labels, keep the ticks whose window lies inside the utterance:
        # a run starts when the window first reaches speech and ends when it leaves.
        starts = np.searchsorted(t, [t[a] + window_s for a, _ in merged], side="left")
        ends = np.searchsorted(t, [t[b] - window_s for _, b in merged], side="right")
        groups = [np.arange(a, b) for a, b in zip(starts.tolist(), ends.tolist())]
    speech = np.zeros(n, bool)
    ratio = 10 ** (-speech_range_db / 20)
    for idx in groups:
        if idx.size == 0:
            continue
        vals = level[idx]
        positive = vals[vals > 0]
        if positive.size == 0:
            continue
        speech[idx[vals >= np.median(positive) * ratio]] = True
    speech &= ~zero
    if events is not None and events.terminals:
        in_beats = np.zeros(n, bool)
        end_s = float(t[-1]) + trace.tick_s if n else 0.0
        for term, (span_end, _) in zip(events.terminals, span_bounds(events, t_s=t, speech=None, end_s=end_s)):
            lo, hi = np.searchsorted(t, [term.t_s, span_end], side="left")
            in_beats[lo:hi] = True
        speech &= in_beats
    return TickClasses(speech, silence & ~speech, method, split)


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


@dataclass(frozen=True, slots=True)
class FloorEvidence:
    """The recordings' floor windows and the recommended floor.

    Attributes
    ----------
    recordings : tuple of RecordingLevels
        Every recording, in order.
    window : (float, float) or None
        The intersection of the windows of the recordings that meet.
    lower_by, upper_by : str or None
        The recordings that set the intersection's edges.
    outside : tuple of str
        Recordings whose window does not meet the others'.
    no_window : tuple of str
        Recordings with no window at all.
    floor : float or None
    rule : str
        How it was reached.
    above_db, below_db : float or None
        The floor's distance to the window's lower (noise) and upper
        (speech) edge; inf above a noise of exact zero.
    n_speech_ticks, n_silence_ticks : int
        Over the recordings inside the window.
    speech : dict
        Their pooled speech-level percentiles (min ... max).
    speech_percentile : float
    floor_margin_db : float
        The window's upper edge stands this far below the speech low.
    methods : dict
        How many recordings were classified by labels, and by the split.
    exact_zero_share : float
    thin : bool
    """

    recordings: tuple[RecordingLevels, ...]
    window: tuple[float, float] | None
    lower_by: str | None
    upper_by: str | None
    outside: tuple[str, ...]
    no_window: tuple[str, ...]
    floor: float | None
    rule: str
    above_db: float | None
    below_db: float | None
    n_speech_ticks: int
    n_silence_ticks: int
    speech: dict[str, float]
    speech_percentile: float
    floor_margin_db: float
    methods: dict[str, int]
    exact_zero_share: float
    thin: bool


@dataclass(frozen=True, slots=True)
class GapEvidence:
    """The gaps the clock must bridge inside beats, and the recommended quiet time.

    Attributes
    ----------
    n_gaps : int
        Narration gaps of at least ``min_gap_s`` (the distribution's n).
    n_all_gaps : int
        Every narration gap, short dips included.
    floor : float or None
        The floor they were measured at.
    p50_s, p90_s, p99_s : float or None
    max_gap_s : float or None
        Over every gap the clock bridges (acknowledgment silences included).
    longest : tuple of (str, float, float)
        The five longest: recording, time of the last word, gap.
    n_ack : int
        Silences between an overlapping acknowledgment and its narration.
    ack_max_s : float or None
    room_s : float or None
        The least quiet left after a beat's last word before its bound: a
        quiet time above it stalls that beat.
    room_at : (str, float) or None
        Where: recording and last word.
    unlogged : tuple of str
        Recordings without an event log, all of whose gaps were counted.
    quiet_margin_s : float
    quiet_s : float or None
        The recommendation.
    rule : str
    p_exceed_rule_of_three : float or None
        95 % upper bound on the chance a future gap exceeds the longest seen
        (3/n; None with fewer than 4 gaps, where it says nothing).
    p_exceed_tail : float or None
        Exponential-tail estimate of the chance a future gap exceeds ``quiet_s``.
    gaps_s : tuple of float
        The narration gaps of at least ``min_gap_s`` (for plots).
    thin : bool
    """

    n_gaps: int
    n_all_gaps: int
    floor: float | None
    min_gap_s: float
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    max_gap_s: float | None
    longest: tuple[tuple[str, float, float], ...]
    n_ack: int
    ack_max_s: float | None
    room_s: float | None
    room_at: tuple[str, float] | None
    unlogged: tuple[str, ...]
    quiet_margin_s: float
    quiet_s: float | None
    rule: str
    p_exceed_rule_of_three: float | None
    p_exceed_tail: float | None
    gaps_s: tuple[float, ...]
    thin: bool


@dataclass(frozen=True, slots=True)
class OnsetEvidence:
    """Latency from terminal response to the narration's onset, and the onset timeout."""

    n_beats: int
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    slowest: tuple[str, float, float] | None
    onset_margin_s: float
    onset_timeout_s: float | None
    thin: bool


@dataclass(frozen=True, slots=True)
class Unsatisfied:
    """A beat the recommended setting does not end right, and why.

    Attributes
    ----------
    recording : str
    beat : int
    t_s : float
        Where to look.
    outcome : str
        ``premature``, ``stalled`` or ``missed-onset``.
    reason : str
    """

    recording: str
    beat: int
    t_s: float
    outcome: str
    reason: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """The recommended setting, replayed over every recording with an event log.

    Attributes
    ----------
    n_recordings, n_beats : int
    n_ok, n_premature, n_stalled, n_missed_onset, n_silent : int
    unsatisfied : tuple of Unsatisfied
    """

    n_recordings: int
    n_beats: int
    n_ok: int
    n_premature: int
    n_stalled: int
    n_missed_onset: int
    n_silent: int
    unsatisfied: tuple[Unsatisfied, ...]

    @property
    def n_failed(self) -> int:
        """Premature ends, stalls and missed onsets."""
        return self.n_premature + self.n_stalled + self.n_missed_onset


@dataclass(frozen=True, slots=True)
class Comparison:
    """Another setting (the committed one, or a candidate), replayed as the recommendation is.

    Attributes
    ----------
    label : str
        ``committed`` (the config's) or ``candidate`` (given on the command line).
    floor, quiet_s, onset_timeout_s : float
    outcome : Outcome or None
        Its replay over every recording with beats (None when none has).
    """

    label: str
    floor: float
    quiet_s: float
    onset_timeout_s: float
    outcome: Outcome | None


@dataclass(frozen=True, slots=True)
class Stability:
    """Which recording drives a number, and the number without it (leave one recording out).

    Attributes
    ----------
    quantity : {"floor", "quiet_s", "onset_timeout_s"}
    value : float or None
    driver : str or None
        The recording that decides it.
    without : float or None
        The recommendation with that recording left out.
    """

    quantity: str
    value: float | None
    driver: str | None
    without: float | None


@dataclass(frozen=True, slots=True)
class Derivation:
    """Everything ``derive`` found, for one group of recordings.

    Attributes
    ----------
    group : str
    recordings : tuple of str
    floor : FloorEvidence
    gaps : GapEvidence
    onsets : OnsetEvidence
    outcome : Outcome or None
        The recommendation replayed (None when nothing was recommended or
        no recording has beats).
    stability : tuple of Stability
    warnings : tuple of str
    compared : Comparison or None
        The setting it was asked to compare with (``derive(compare=...)``).
    """

    group: str
    recordings: tuple[str, ...]
    floor: FloorEvidence
    gaps: GapEvidence
    onsets: OnsetEvidence
    outcome: Outcome | None
    stability: tuple[Stability, ...]
    warnings: tuple[str, ...]
    compared: Comparison | None = None

    @property
    def setting(self) -> tuple[float | None, float | None, float | None]:
        """(floor, quiet_s, onset_timeout_s) as recommended."""
        return self.floor.floor, self.gaps.quiet_s, self.onsets.onset_timeout_s


# --- arithmetic -----------------------------------------------------------------


def _round_up(x: float, step: str) -> float:
    """``x`` rounded up to a multiple of ``step``, in decimal arithmetic (2.30000001 -> 2.35 for 0.05)."""
    q = Decimal(step)
    # Nine decimals absorb float noise: 2.3 + 0.2 is 2.4999999999999996.
    d = Decimal(repr(x)).quantize(Decimal("1e-9"))
    return float((d / q).to_integral_value(rounding=ROUND_CEILING) * q)


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


def _tail_exceedance(gaps: NDArray[np.float64], q: float) -> float | None:
    """P(gap > q) from an exponential tail over the 75th percentile (None with < 5 exceedances)."""
    u = float(np.percentile(gaps, 75))
    excess = gaps[gaps > u] - u
    if excess.size < 5 or excess.mean() <= 0:
        return None
    return float(excess.size / gaps.size * math.exp(-(q - u) / excess.mean()))


def _percentiles(values: NDArray[np.float64]) -> dict[str, float]:
    return {name: float(np.percentile(values, q)) for name, q in PERCENTILES} if values.size else {}


# --- the engine -------------------------------------------------------------------


@dataclass
class _Corpus:
    """What the engine computes once per recording, shared by the leave-one-out runs."""

    obs: list[Observation]
    levels: list[RecordingLevels]
    speech: list[NDArray[np.float64]]
    silence: list[NDArray[np.float64]]
    margins: Margins
    analyses: dict[tuple[int, float], FloorAnalysis] = field(default_factory=dict)
    own: dict[int, float | None] = field(default_factory=dict)
    times: dict[int, NDArray[np.float64]] = field(default_factory=dict)

    def own_floor(self, i: int) -> float | None:
        if i not in self.own:
            self.own[i] = _own_floor(self.levels[i])
        return self.own[i]

    def analysis(self, i: int, floor: float) -> FloorAnalysis:
        """One recording's beats at one floor, analysed once (the tick times shared by every floor)."""
        key = (i, floor)
        if key not in self.analyses:
            o = self.obs[i]
            assert o.events is not None
            if i not in self.times:
                self.times[i] = o.trace.t_s
            self.analyses[key] = analyse(o.trace, o.events, floor=floor, t_s=self.times[i])
        return self.analyses[key]


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


@dataclass(frozen=True)
class _Setting:
    floor: float
    quiet_s: float | None
    onset_timeout_s: float | None
    failures: int
    quiet_rule: str
    extended: bool = False
    note: str = ""


@dataclass
class _AtFloor:
    """At one floor: the gaps, the room after last words, the waits and latencies of every beat."""

    gaps: list[tuple[str, float, float, bool]]  # recording, last word, gap, narration (logged beats)
    unlogged_gaps: list[tuple[str, float, float]]  # recording, last word, gap (recordings without a log)
    latencies: list[tuple[str, float, float]]  # recording, terminal, latency
    rooms: list[tuple[str, float, float]]  # recording, last word, room (less the prompt delay where unlogged)
    waits: list[float]
    needs: list[float]
    hidden: list[tuple[str, int, float]]  # recording, beat, narration end hidden by this floor (s)
    analyses: list[FloorAnalysis]


def _target(lo: float, hi: float, speech_low: float) -> tuple[float, str]:
    """Where in a window (lo, hi) a floor goes: 6 dB below the speech low, or the middle if that is nearer the noise."""
    target_db = min(_db(hi), _db(speech_low) - 20 * math.log10(2))
    if lo > 0 and target_db - _db(lo) < _db(hi) - target_db:
        return 10 ** (
            (_db(lo) + _db(hi)) / 40
        ), "the middle of the window in dB (6 dB below speech is nearer the noise)"
    return 10 ** (target_db / 20), "6 dB below the lowest speech p{p}"


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
    return min(ref, rec.speech_median / 2) if ref > 0 else None


def _prompt_delay(corpus: _Corpus, members: Sequence[int]) -> float:
    """The median time from a prompt to its terminal response, over the logs that have both."""
    delays = []
    for i in members:
        events = corpus.obs[i].events
        if events is None:
            continue
        prompt = None
        for e in events.of_kind("prompt", "terminal"):
            if e.kind == "prompt":
                prompt = e.t_s
            elif prompt is not None:
                delays.append(e.t_s - prompt)
                prompt = None
    return float(np.median(delays)) if delays else DEFAULT_PROMPT_DELAY_S


def _at_floor(corpus: _Corpus, members: Sequence[int], floor: float, *, prompt_delay_s: float = 0.0) -> _AtFloor:
    out = _AtFloor([], [], [], [], [], [], [], [])
    for i in members:
        o = corpus.obs[i]
        if not o.has_beats:
            if o.events is None:
                seg = segments(o.trace, floor=floor)
                out.unlogged_gaps.extend((o.name, s.last_word_s, g) for s, g in zip(seg.segments, seg.gaps_s))
            continue
        a = corpus.analysis(i, floor)
        out.analyses.append(a)
        out.gaps.extend((o.name, w, g, narration) for _, w, g, narration in a.gaps())
        own = corpus.own_floor(i)
        ref = corpus.analysis(i, own) if own is not None and own < floor else None
        for b in a.beats:
            if ref is not None and ref.beats[b.index].spoken:
                r = ref.beats[b.index]
                seen = float(ref.t_s[r.last_word_tick])  # type: ignore[index]
                now = float(a.t_s[b.last_word_tick]) if b.spoken and b.last_word_tick is not None else float("-inf")
                out.hidden.append((o.name, b.index, seen - now))
            if not b.spoken:
                continue
            out.needs.append(b.need_s)
            if b.onset_tick is not None:
                out.latencies.append((o.name, b.terminal_s, float(a.t_s[b.onset_tick]) - b.terminal_s))
            if b.last_word_tick is not None:
                # Without the prompt in the log, the page prompted some time before the next response.
                unknown = b.bound in ("terminal", "acknowledgment")
                out.rooms.append(
                    (o.name, float(a.t_s[b.last_word_tick]), b.room_s - (prompt_delay_s if unknown else 0))
                )
            if b.wait_s is not None:
                out.waits.append(b.wait_s)
    return out


def _failing_beats(analyses: list[FloorAnalysis], quiet_s: float, onset_timeout_s: float) -> int:
    return sum(
        d.outcome in FAILURES for a in analyses for d in decide(a, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s)
    )


def _choose_quiet(c: _AtFloor, margin: float) -> tuple[float | None, str]:
    """The quiet time at one floor: the longest gap plus the margin, within the room the beats leave.

    Gaps inside logged beats must be bridged (the replay holds the quiet time
    to them); gaps of recordings without a log count too, but never push the
    quiet time past the room a logged beat leaves before its bound.
    """
    logged = max((g for _, _, g, _ in c.gaps), default=None)
    unlogged = max((g for _, _, g in c.unlogged_gaps), default=None)
    longest = max((g for g in (logged, unlogged) if g is not None), default=None)
    if longest is None:
        return None, "no gap inside a beat"
    room = min((r for _, _, r in c.rooms), default=None)
    need = max(c.needs, default=float("-inf"))
    preferred = _round_up(longest + margin, "0.05")
    rule = f"longest gap {longest:.3f} s + margin {margin:g} s, rounded up to 0.05 s"
    if room is None or preferred <= room + _EPS_S:
        return preferred, rule
    if logged is not None and unlogged is not None and unlogged > logged:
        honoured = _round_up(logged + margin, "0.05")
        if honoured <= room + _EPS_S:
            return honoured, (
                f"longest gap inside a logged beat {logged:.3f} s + margin {margin:g} s, rounded up to 0.05 s "
                f"(a gap of {unlogged:.3f} s in a recording without a log would stall a logged beat)"
            )
    base = logged if logged is not None else longest
    if need >= room or base >= room:
        return preferred, rule
    # The margin does not fit before the nearest bound: halfway between the longest gap and the room.
    middle = Decimal(repr(_round_up((base + room) / 2, "0.05")))
    for k in range(0, 200):
        q = float(middle - Decimal("0.05") * k)
        if need < q - _EPS_S <= room:
            return q, (
                f"halfway between the longest gap {base:.3f} s and the least room after a last word {room:.3f} s "
                f"(the margin {margin:g} s does not fit), rounded to 0.05 s"
            )
    return round(
        room, 9
    ), f"the least room after a last word, {room:.3f} s (the longest gap {base:.3f} s leaves no margin)"


def _timeout(latencies: list[tuple[str, float, float]], waits: list[float], margin: float) -> float | None:
    if not latencies and not waits:
        return None
    longest = max([x for _, _, x in latencies] + waits)
    return _round_up(longest + margin, "0.5")


def _hidden_ends(c: _AtFloor, quiet_s: float | None, margin_s: float) -> int:
    """Beats whose narration end this floor hides for so long that the clock would declare quiet before it.

    The end is the last word each recording shows at its own floor (clear of
    its noise); the clock declares ``quiet_s`` after the last word it sees,
    which must come at least ``margin_s`` after that end.
    """
    allowed = (quiet_s if quiet_s is not None else 0.0) - margin_s
    return sum(h > max(allowed, margin_s) for _, _, h in c.hidden)


def _evaluate(corpus: _Corpus, members: list[int], floor: float, delay_s: float) -> tuple[_Setting, _AtFloor]:
    """The setting at one floor and how many beats it fails (the replay's failures, and hidden narration ends)."""
    margins = corpus.margins
    c = _at_floor(corpus, members, floor, prompt_delay_s=delay_s)
    quiet, quiet_rule = _choose_quiet(c, margins.quiet_margin_s)
    timeout = _timeout(c.latencies, c.waits, margins.onset_margin_s)
    hidden = _hidden_ends(c, quiet, margins.quiet_margin_s)
    if quiet is None or timeout is None:
        return _Setting(floor, quiet, timeout, hidden, quiet_rule), c
    return _Setting(floor, quiet, timeout, hidden + _failing_beats(c.analyses, quiet, timeout), quiet_rule), c


def _search(
    corpus: _Corpus,
    members: list[int],
    primary: list[float],
    extended: list[float],
    *,
    strict: bool = False,
    prefer: Prefer | None = None,
) -> _Setting | None:
    """The first candidate floor at which a setting ends every beat right; else the one failing fewest beats.

    With ``strict``, only a setting that ends every beat right is returned (else None). With ``prefer``,
    every primary floor's setting that ends every beat right is handed to it, and it picks one.
    """
    delay = _prompt_delay(corpus, members)
    best: _Setting | None = None
    right: list[_Setting] = []
    for n, (floor, is_extended) in enumerate([(f, False) for f in primary] + [(f, True) for f in extended]):
        if right and is_extended:
            break
        setting, c = _evaluate(corpus, members, floor, delay)
        setting = _Setting(
            setting.floor, setting.quiet_s, setting.onset_timeout_s, setting.failures, setting.quiet_rule, is_extended
        )
        if setting.failures == 0:
            if prefer is None or is_extended or setting.quiet_s is None or setting.onset_timeout_s is None:
                return setting
            right.append(setting)
            continue
        if not strict and setting.quiet_s is not None and setting.onset_timeout_s is not None:
            # The quiet time that fails the fewest beats at this floor.
            options = {setting.quiet_s} | {round(r, 9) for _, _, r in c.rooms if r > 0}
            options |= {_round_up(x + 0.01, "0.05") for x in c.needs if x > 0}
            for q in sorted(options):
                hidden = _hidden_ends(c, q, corpus.margins.quiet_margin_s)
                f = hidden + _failing_beats(c.analyses, q, setting.onset_timeout_s)
                if best is None or f < best.failures:
                    best = _Setting(floor, q, setting.onset_timeout_s, f, FEWEST_FAILURES, is_extended)
        if n >= MAX_FLOORS_TRIED and (best is not None or strict):
            break
    if right and prefer is not None:
        pick, note = prefer([(x.floor, x.quiet_s, x.onset_timeout_s) for x in right])  # type: ignore[misc]
        return replace(right[pick], note=note)
    return best


def derive(
    observations: Sequence[Observation],
    *,
    margins: Margins | None = None,
    group: str = "all",
    compare: Thresholds | None = None,
    compare_label: str = "committed",
    prefer: Prefer | None = None,
) -> Derivation:
    """Derive the floor, the quiet time and the onset timeout from recordings, and replay them.

    Parameters
    ----------
    observations : sequence of Observation
    margins : Margins, optional
    group : str
        A name for this group (``--by voice`` gives one per voice).
    compare : Thresholds, optional
        Another setting to replay the same way, beside the recommendation
        (``Derivation.compared``): the committed one, or a candidate.
    compare_label : str
        What ``compare`` is (``committed`` or ``candidate``).
    prefer : callable, optional
        Given every setting (floor, quiet_s, onset_timeout_s) of the primary
        floors that ends every beat right, returns the index of the one to
        recommend and a note for the floor's rule (``derive --prefer robust``:
        :func:`clock.io.stress.robust_preference`). Default: the first, nearest
        the evidence's floor.

    Returns
    -------
    Derivation
        The recommendation (``Derivation.setting``), its evidence, its
        replay over the corpus, and how stable it is.
    """
    margins = margins or Margins()
    obs = list(observations)
    parts = [recording_levels(o, margins) for o in obs]
    corpus = _Corpus(
        obs,
        [rec for rec, _ in parts],
        [o.trace.level[c.speech] for o, (_, c) in zip(obs, parts)],
        [o.trace.level[c.silence] for o, (_, c) in zip(obs, parts)],
        margins,
    )
    members = list(range(len(obs)))
    found = _derive(corpus, members, group, stability=True, prefer=prefer)
    if compare is None:
        return found
    floor, quiet, timeout = compare.floor, compare.quiet_s, compare.onset_timeout_s
    outcome = _replay_outcome(corpus, members, floor, quiet, timeout)
    return replace(
        found,
        compared=Comparison(compare_label, floor, quiet, timeout, outcome if outcome.n_recordings else None),
    )


def _derive(
    corpus: _Corpus, members: list[int], group: str, *, stability: bool, prefer: Prefer | None = None
) -> Derivation:
    margins = corpus.margins
    obs, levels = corpus.obs, corpus.levels
    notes: list[str] = []
    meeting = _meeting_group(levels, members)
    windowed = [i for i in members if levels[i].window is not None]
    no_window = tuple(obs[i].name for i in members if levels[i].window is None)
    outside = tuple(obs[i].name for i in windowed if i not in meeting)
    window = lower_by = upper_by = None
    primary: list[float] = []
    extended: list[float] = []
    floor_rule = "no floor: no recording has a window of floors that separate its speech from its noise"
    if meeting:
        lo_i = max(meeting, key=lambda i: (levels[i].window[0], -i))  # type: ignore[index]
        hi_i = min(meeting, key=lambda i: (levels[i].window[1], i))  # type: ignore[index]
        lo, hi = levels[lo_i].window[0], levels[hi_i].window[1]  # type: ignore[index]
        window, lower_by, upper_by = (lo, hi), obs[lo_i].name, obs[hi_i].name
        speech_low = min(levels[i].speech_low or hi for i in meeting)
        target, floor_rule = _target(lo, hi, speech_low)
        floor_rule = floor_rule.format(p=f"{margins.speech_percentile:g}")
        primary = _nice_floors(lo, hi, target) or [target]
        width = _db(hi) - _db(lo)
        if width < NARROW_DB:
            notes.append(
                f"the floors that work for every recording span only {width:.1f} dB ({lo:.4g} .. {hi:.4g}, set by "
                f"{obs[lo_i].name} and {obs[hi_i].name}): a small change in a voice's or a room's level breaks it"
            )
        # Above every recording's noise and below every voice's median, in steps of about 1 dB: floors the
        # replay may still accept when the windows do not all meet, or when none inside them works.
        noise = max(levels[i].window[0] for i in windowed)  # type: ignore[index]
        top = min(levels[i].speech_median or 0.0 for i in windowed)
        if top > noise:
            extended = _ladder(noise if noise > 0 else hi, top, exclude=primary[:MAX_PRIMARY])
        primary = primary[:MAX_PRIMARY]
    unlogged_meeting = [i for i in meeting if obs[i].events is None]
    judged = sorted(set(windowed) | set(unlogged_meeting))
    chosen = _search(corpus, judged, primary, extended, prefer=prefer) if primary else None
    # Recordings whose noise reaches their speech's low percentile may still be served by a floor above their
    # noise (the percentile counts word edges): try them too, and keep them only if nothing then fails.
    rescued: list[int] = []
    hopeless = [i for i in members if levels[i].window is None and obs[i].has_beats and levels[i].speech_median]
    if hopeless and (chosen is None or chosen.failures == 0):
        everyone = sorted(set(judged) | set(hopeless))
        noise_all = max((levels[i].noise_high or 0.0) for i in everyone)
        top_all = min(levels[i].speech_median or 0.0 for i in everyone)
        wider = extended + _ladder(noise_all, top_all, exclude=primary + extended) if top_all > noise_all else extended
        found = _search(corpus, everyone, primary, wider, strict=True)
        if found is not None:
            chosen, judged, rescued = found, everyone, hopeless
    for i in members:
        rec = levels[i]
        if rec.window is not None or not rec.verdict:
            continue
        if i in rescued and chosen is not None:
            noise_db, speech_db = _db(rec.noise_high or 0.0), _db(rec.speech_low or 0.0)
            notes.append(
                f"{obs[i].name}: its noise (p{NOISE_PERCENTILE:g} {noise_db:.1f} dBFS) reaches within "
                f"{margins.floor_margin_db:g} dB of its speech (p{margins.speech_percentile:g} {speech_db:.1f} dBFS), "
                f"yet the floor {chosen.floor:g} stands above its noise and still ends its beats right "
                "(check will fail its speech level)"
            )
        else:
            notes.append(f"{obs[i].name}: {rec.verdict}")
    floor = chosen.floor if chosen is not None else None
    if chosen is not None:
        if chosen.failures:
            floor_rule = FEWEST_FAILURES
        elif chosen.extended:
            floor_rule = (
                "the lowest floor above every recording's noise (p99) that the replay accepts and that hides "
                "no narration's end (the windows do not all meet)"
            )
        elif chosen.note:
            floor_rule += f", rounded to 2 significant digits; {chosen.note}"
        elif floor != primary[0]:
            floor_rule += f"; the replay rejected {primary[0]:g}, {floor:g} is the nearest floor it accepts"
        else:
            floor_rule += ", rounded to 2 significant digits"
    for i in windowed:
        lo_w, hi_w = levels[i].window  # type: ignore[misc]
        name = obs[i].name
        if floor is None or lo_w < floor < hi_w:
            if i not in meeting:
                notes.append(f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'")
            continue
        if floor >= hi_w:
            notes.append(
                f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'; the floor "
                f"{floor:g} is {_db(floor) - _db(hi_w):.1f} dB above its speech edge, so its quietest speech is under "
                "the floor (check will fail its speech level)"
            )
        else:
            notes.append(
                f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'; its noise "
                f"(p{NOISE_PERCENTILE:g} {lo_w:.4g}) reaches the floor {floor:g}"
            )
    floor_ev = _floor_evidence(
        corpus, members, meeting, window, lower_by, upper_by, outside, no_window, floor, floor_rule
    )
    gaps_ev, onsets_ev, outcome = _gap_onset_outcome(corpus, members, judged, chosen, notes)
    for what, n, need in (
        ("gaps", gaps_ev.n_gaps, THIN["gaps"]),
        ("beats", onsets_ev.n_beats, THIN["beats"]),
        ("recordings", len(members), THIN["recordings"]),
    ):
        if n < need:
            notes.append(f"thin evidence: {_count(n, what)} (fewer than {need})")
    stab: tuple[Stability, ...] = ()
    if stability:
        stab = _stability(corpus, members, group, floor_ev, gaps_ev, onsets_ev)
    return Derivation(
        group, tuple(obs[i].name for i in members), floor_ev, gaps_ev, onsets_ev, outcome, stab, tuple(notes)
    )


def _count(n: int, noun: str) -> str:
    """``1 gap``, ``2 gaps`` (nouns given in the plural)."""
    return f"{n} {noun if n != 1 else noun[:-1]}"


def _floor_evidence(
    corpus: _Corpus,
    members: list[int],
    meeting: list[int],
    window: tuple[float, float] | None,
    lower_by: str | None,
    upper_by: str | None,
    outside: tuple[str, ...],
    no_window: tuple[str, ...],
    floor: float | None,
    rule: str,
) -> FloorEvidence:
    sp = np.concatenate([corpus.speech[i] for i in meeting]) if meeting else np.zeros(0)
    si = np.concatenate([corpus.silence[i] for i in meeting]) if meeting else np.zeros(0)
    methods: dict[str, int] = {}
    for i in members:
        methods[corpus.levels[i].method] = methods.get(corpus.levels[i].method, 0) + 1
    above = below = None
    if floor is not None and window is not None:
        above = _db(floor) - _db(window[0]) if window[0] > 0 else float("inf")
        below = _db(window[1]) - _db(floor)
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
        speech=_percentiles(sp),
        speech_percentile=corpus.margins.speech_percentile,
        floor_margin_db=corpus.margins.floor_margin_db,
        methods=methods,
        exact_zero_share=float(np.count_nonzero(si == 0) / si.size) if si.size else 0.0,
        thin=sp.size < THIN["speech_ticks"] or si.size < THIN["silence_ticks"],
    )


def _gap_onset_outcome(
    corpus: _Corpus, members: list[int], judged: list[int], chosen: _Setting | None, notes: list[str]
) -> tuple[GapEvidence, OnsetEvidence, Outcome | None]:
    margins = corpus.margins
    obs = corpus.obs
    for i in members:
        o = obs[i]
        if o.events is not None and not o.events.terminals:
            has_prompts = bool(o.events.of_kind("prompt"))
            notes.append(
                f"{o.name}: its event log has {'prompts but ' if has_prompts else ''}no terminal response, "
                "so it has no beats and contributes no narration gaps"
            )
    unlogged = tuple(obs[i].name for i in judged if obs[i].events is None)
    if unlogged:
        notes.append(
            f"no event log for {_count(len(unlogged), 'recordings')} ({', '.join(unlogged[:3])}"
            f"{', ...' if len(unlogged) > 3 else ''}): all their gaps were counted as narration gaps"
        )
    floor = None if chosen is None else chosen.floor
    c = _at_floor(corpus, judged, floor) if floor is not None else _AtFloor([], [], [], [], [], [], [], [])
    all_gaps = c.gaps + [(name, w, g, True) for name, w, g in c.unlogged_gaps]
    narration = [(name, w, g) for name, w, g, is_narration in all_gaps if is_narration]
    acks = [g for _, _, g, is_narration in all_gaps if not is_narration]
    g_all = np.array([g for _, _, g in narration])
    g = g_all[g_all >= margins.min_gap_s]
    bridged = [g for _, _, g, _ in all_gaps]
    room = min(c.rooms, key=lambda r: (r[2], r[0], r[1])) if c.rooms else None
    quiet = None if chosen is None else chosen.quiet_s
    gaps_ev = GapEvidence(
        n_gaps=int(g.size),
        n_all_gaps=int(g_all.size),
        floor=floor,
        min_gap_s=margins.min_gap_s,
        p50_s=float(np.percentile(g, 50)) if g.size else None,
        p90_s=float(np.percentile(g, 90)) if g.size else None,
        p99_s=float(np.percentile(g, 99)) if g.size else None,
        max_gap_s=max(bridged) if bridged else None,
        longest=tuple(sorted(narration, key=lambda x: (-x[2], x[0], x[1]))[:5]),
        n_ack=len(acks),
        ack_max_s=max(acks) if acks else None,
        room_s=None if room is None else room[2],
        room_at=None if room is None else (room[0], room[1]),
        unlogged=unlogged,
        quiet_margin_s=margins.quiet_margin_s,
        quiet_s=quiet,
        rule="" if chosen is None else chosen.quiet_rule,
        p_exceed_rule_of_three=3 / g.size if g.size > 3 else None,
        p_exceed_tail=_tail_exceedance(g, quiet) if (g.size and quiet is not None) else None,
        gaps_s=tuple(float(x) for x in g),
        thin=g.size < THIN["gaps"],
    )
    latencies = c.latencies
    lat = np.array([x for _, _, x in latencies])
    timeout = None if chosen is None else chosen.onset_timeout_s
    onsets_ev = OnsetEvidence(
        n_beats=int(lat.size),
        p50_s=float(np.percentile(lat, 50)) if lat.size else None,
        p95_s=float(np.percentile(lat, 95)) if lat.size else None,
        max_s=float(lat.max()) if lat.size else None,
        slowest=max(latencies, key=lambda x: x[2]) if latencies else None,
        onset_margin_s=margins.onset_margin_s,
        onset_timeout_s=timeout,
        thin=lat.size < THIN["beats"],
    )
    outcome = None
    if floor is not None and quiet is not None and timeout is not None:
        outcome = _replay_outcome(corpus, members, floor, quiet, timeout)
        if outcome.n_failed:
            notes.append(
                f"the recommendation fails {_count(outcome.n_failed, 'beats')} of {outcome.n_beats}: "
                "no setting ends every beat right (see the failing beats)"
            )
    return gaps_ev, onsets_ev, outcome


def _replay_outcome(corpus: _Corpus, members: list[int], floor: float, quiet: float, timeout: float) -> Outcome:
    """The recommendation replayed tick by tick over every recording with beats."""
    counts = dict.fromkeys((OK, PREMATURE, STALLED, MISSED_ONSET, "silent"), 0)
    failing: list[Unsatisfied] = []
    n_rec = n_beats = 0
    for i in members:
        o = corpus.obs[i]
        if not o.has_beats:
            continue
        n_rec += 1
        assert o.events is not None
        # The replay warns (once per recording and cause) about events outside the recording.
        found = beats(o.trace, o.events, floor=floor, quiet_s=quiet, onset_timeout_s=timeout)
        a = corpus.analysis(i, floor)
        for b, ba in zip(found, a.beats):
            if b.outcome == "unheard":
                continue
            n_beats += 1
            counts[b.outcome if b.outcome in counts else "silent"] += 1
            if b.outcome in FAILURES:
                failing.append(_why(o.name, b, ba, a, floor, quiet, timeout, corpus.levels[i]))
    return Outcome(
        n_rec,
        n_beats,
        counts[OK],
        counts[PREMATURE],
        counts[STALLED],
        counts[MISSED_ONSET],
        counts["silent"],
        tuple(failing),
    )


def judge(
    observations: Sequence[Observation],
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float,
    margins: Margins | None = None,
) -> Outcome:
    """One setting replayed over recordings and counted as :func:`derive` counts its recommendation's replay.

    The one judge of a replay: ``derive`` (its recommendation and the
    compared setting) and ``stress`` (every transformed corpus) both count
    outcomes here.
    """
    obs = list(observations)
    margins = margins or Margins()
    corpus = _Corpus(obs, _LazyLevels(obs, margins), [], [], margins)  # type: ignore[arg-type]
    return _replay_outcome(corpus, list(range(len(obs))), floor, quiet_s, onset_timeout_s)


class _LazyLevels(Sequence[RecordingLevels]):
    """A recording's levels, computed only when a failing beat's reason needs them."""

    def __init__(self, obs: list[Observation], margins: Margins) -> None:
        self._obs, self._margins = obs, margins
        self._done: dict[int, RecordingLevels] = {}

    def __len__(self) -> int:
        return len(self._obs)

    def __getitem__(self, i):  # type: ignore[no-untyped-def,override]
        if i not in self._done:
            self._done[i] = recording_levels(self._obs[i], self._margins)[0]
        return self._done[i]


def _why(name, b, ba, a, floor, quiet, timeout, rec) -> Unsatisfied:  # type: ignore[no-untyped-def]
    t = a.t_s
    noise = "" if rec.noise_high is None else f" (its noise p{NOISE_PERCENTILE:g} is {rec.noise_high:.4g})"
    if b.outcome == PREMATURE:
        longest = ba.need_s
        reason = f"a quiet of {longest:.3f} s inside the beat reaches the quiet time {quiet:g} s"
        return Unsatisfied(name, b.index, float(b.quiet_declared_s), PREMATURE, reason)
    if b.outcome == MISSED_ONSET:
        reason = f"the guide starts {ba.wait_s:.3f} s after the terminal response, past the timeout {timeout:g} s"
        return Unsatisfied(name, b.index, b.terminal_s, MISSED_ONSET, reason)
    last = None if ba.last_word_tick is None else float(t[ba.last_word_tick])
    if ba.room_s == float("-inf"):
        reason = f"the level stays above the floor {floor:g} until the {ba.bound}{noise}"
    else:
        reason = (
            f"only {ba.room_s:.3f} s of quiet after the last word before the {ba.bound} at {ba.bound_s:.3f} s, "
            f"less than the quiet time {quiet:g} s"
        )
    return Unsatisfied(name, b.index, last if last is not None else b.terminal_s, STALLED, reason)


def _stability(
    corpus: _Corpus,
    members: list[int],
    group: str,
    floor_ev: FloorEvidence,
    gaps_ev: GapEvidence,
    onsets_ev: OnsetEvidence,
) -> tuple[Stability, ...]:
    """Leave the driving recording of each number out and derive again."""
    names = {corpus.obs[i].name: i for i in members}
    floor_driver = None
    if floor_ev.floor is not None and floor_ev.window is not None:
        above = floor_ev.above_db if floor_ev.above_db is not None else float("inf")
        below = floor_ev.below_db if floor_ev.below_db is not None else float("inf")
        floor_driver = floor_ev.lower_by if above < below else floor_ev.upper_by
    quiet_driver = gaps_ev.longest[0][0] if gaps_ev.longest else None
    onset_driver = onsets_ev.slowest[0] if onsets_ev.slowest else None
    without: dict[str, Derivation] = {}
    for driver in (floor_driver, quiet_driver, onset_driver):
        if driver is not None and driver not in without and len(members) > 1:
            rest = [i for i in members if i != names[driver]]
            without[driver] = _derive(corpus, rest, group, stability=False)

    def entry(quantity: str, value: float | None, driver: str | None, pick: int) -> Stability:
        other = without.get(driver) if driver is not None else None
        return Stability(quantity, value, driver, None if other is None else other.setting[pick])

    return (
        entry("floor", floor_ev.floor, floor_driver, 0),
        entry("quiet_s", gaps_ev.quiet_s, quiet_driver, 1),
        entry("onset_timeout_s", onsets_ev.onset_timeout_s, onset_driver, 2),
    )


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
