"""Derive the floor, the quiet time and the onset timeout from recordings, with the evidence.

Pure numpy. One recording is an observation, not a claim: every number
carries the count it rests on, and thin evidence is flagged.

Telling speech from silence without assuming a floor
----------------------------------------------------
The floor being derived is never used to decide which ticks are speech:

1. **labels** (ground truth, when a recording has an Audacity label track):
   a tick is *silence* when its analyser window, widened by a guard of
   0.1 s for codec pre-echo and decay tails, touches no labelled utterance;
   it is a *speech candidate* when its window lies inside one.
2. **exact-zero runs**: a tick whose level is exactly 0 is silence (its
   whole window is digital silence).
3. **split** (when there are no labels): a two-mode split of the log-levels
   of the non-zero ticks (Otsu's threshold on a histogram of log10 levels);
   ticks below it and 0.1 s away from any tick above it are silence, runs
   of ticks above it are speech candidates.

Speech candidates include the pauses between words inside an utterance; a
candidate is a *speech tick* when its level is within ``speech_range_db``
(20 dB) of the median level of its utterance (or run). When a recording has
an event log, only ticks inside beats (from each terminal response to the
next terminal response or prompt) count as speech.

Rules
-----
* **floor** = the ``speech_percentile`` (5th) percentile of speech levels
  divided by 2 (6 dB below it), rounded down to two significant digits; it
  must sit at least 6 dB above the silence ceiling (the highest silence
  level). If it cannot, the geometric mean of the two (rounded the same way)
  is recommended and flagged; if speech is not above silence at all, no
  floor is recommended.
* **quiet time** = the longest inter-sentence gap (measured at the
  recommended floor, counting only unpaused time) + ``quiet_margin_s``
  (0.2 s), rounded up to 0.05 s. The chance that a future gap exceeds it is
  bounded by the rule of three (3/n, 95 % confidence, n gaps) and estimated
  from an exponential tail fitted to the gaps above their 75th percentile.
* **onset timeout** = the longest onset latency + ``onset_margin_s`` (2 s),
  rounded up to 0.5 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .agreement import Agreement
from .beats import beats, span_ends
from .events import EventLog, Label
from .levels import LevelTrace
from .segments import runs, segments

__all__ = [
    "Derivation",
    "FloorEvidence",
    "GapEvidence",
    "Margins",
    "Observation",
    "OnsetEvidence",
    "TickClasses",
    "classify_ticks",
    "derive",
    "equivalents",
]

PERCENTILES = (("min", 0.0), ("p0.1", 0.1), ("p1", 1.0), ("p5", 5.0), ("p50", 50.0), ("p95", 95.0), ("max", 100.0))
#: Fewer than these make the evidence thin.
THIN = {"gaps": 30, "speech_ticks": 1000, "silence_ticks": 1000, "beats": 10, "recordings": 3}


@dataclass(frozen=True, slots=True)
class Margins:
    """How far the recommendations stand from the evidence, and what counts as a gap.

    Attributes
    ----------
    quiet_margin_s : float
        Added to the longest gap for the quiet time; a narration gap fails
        the check when it reaches ``quiet_s - quiet_margin_s``.
    floor_margin_db : float
        The check requires the speech percentile to be this far above the floor.
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
        for name in ("quiet_margin_s", "floor_margin_db", "onset_margin_s", "min_gap_s", "speech_range_db"):
            value = getattr(self, name)
            if not (0 <= value < float("inf")):
                raise InvalidParameterError(f"{name} must be a finite number >= 0, got {value!r}")
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


def classify_ticks(
    trace: LevelTrace,
    *,
    labels: Sequence[Label] | None = None,
    events: EventLog | None = None,
    speech_range_db: float = 20.0,
    guard_s: float = 0.1,
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
            touched |= (t + guard_s > lab.start_s) & (t - window_s - guard_s < lab.end_s)
            groups.append(np.flatnonzero((t - window_s >= lab.start_s) & (t <= lab.end_s)))
        silence = ~touched | zero
    else:
        method = "split"
        split = _otsu_log_split(level)
        above = level > split if split is not None else ~zero
        # Silence keeps the same guard from speech as with labels.
        reach = int(math.ceil(guard_s / trace.tick_s))
        near = np.convolve(above.astype(np.int64), np.ones(2 * reach + 1, np.int64), mode="same") > 0
        silence = ~near | zero
        # Runs above the split, joined across dips shorter than 0.3 s, are the utterances.
        spans = runs(above)
        merged: list[list[int]] = []
        for a, b in spans.tolist():
            if merged and t[a] - t[merged[-1][1]] < 0.3:
                merged[-1][1] = b
            else:
                merged.append([a, b])
        # As with labels, keep the ticks whose window lies inside the utterance:
        # a run starts when the window first reaches speech and ends when it leaves.
        groups = [np.flatnonzero((t >= t[a] + window_s) & (t <= t[b] - window_s)) for a, b in merged]
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
        for term, span_end in zip(events.terminals, span_ends(events, end_s)):
            in_beats |= (t >= term.t_s) & (t < span_end)
        speech &= in_beats
    return TickClasses(speech, silence & ~speech, method, split)


@dataclass(frozen=True, slots=True)
class FloorEvidence:
    """Level evidence and the recommended floor.

    Attributes
    ----------
    n_recordings, n_speech_ticks, n_silence_ticks : int
    methods : dict
        How many recordings were classified by labels, and by the split.
    silence_ceiling : float
        The highest level on a silence tick.
    silence_ceiling_at : tuple of (str, float) or None
        Where it is: recording and time.
    exact_zero_share : float
        Share of silence ticks that read exactly 0.
    speech : dict
        Speech-level percentiles: min, p0.1, p1, p5, p50, p95, max.
    floor : float or None
        The recommendation (None when speech does not rise above silence).
    rule : str
        How it was reached.
    speech_margin_db, silence_margin_db : float or None
        Separation of the floor below the speech percentile and above the
        silence ceiling (inf when the ceiling is 0).
    thin : bool
    """

    n_recordings: int
    n_speech_ticks: int
    n_silence_ticks: int
    methods: dict[str, int]
    silence_ceiling: float
    silence_ceiling_at: tuple[str, float] | None
    exact_zero_share: float
    speech: dict[str, float]
    speech_percentile: float
    floor: float | None
    rule: str
    speech_margin_db: float | None
    silence_margin_db: float | None
    thin: bool


@dataclass(frozen=True, slots=True)
class GapEvidence:
    """Inter-sentence gaps and the recommended quiet time.

    Attributes
    ----------
    n_gaps : int
        Gaps of at least ``min_gap_s`` (the distribution's n).
    n_all_gaps : int
        Every gap, short dips included.
    p50_s, p90_s, p99_s : float or None
    max_gap_s : float or None
        Over every gap.
    longest : tuple of (str, float, float)
        The five longest: recording, time of the last word, gap.
    quiet_s : float or None
        The recommendation.
    p_exceed_rule_of_three : float or None
        95 % upper bound on the chance a future gap exceeds the longest seen.
    p_exceed_tail : float or None
        Exponential-tail estimate of the chance a future gap exceeds ``quiet_s``.
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
    quiet_margin_s: float
    quiet_s: float | None
    p_exceed_rule_of_three: float | None
    p_exceed_tail: float | None
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
class Derivation:
    """Everything ``derive`` found, for one group of recordings."""

    group: str
    recordings: tuple[str, ...]
    floor: FloorEvidence
    gaps: GapEvidence
    onsets: OnsetEvidence
    warnings: tuple[str, ...]


def _round_down_2sig(x: float) -> float:
    if x <= 0:
        return x
    e = math.floor(math.log10(x)) - 1
    return float(f"{math.floor(x / 10**e)}e{e}")


def _round_up(x: float, step: float) -> float:
    return round(math.ceil(round(x / step, 9)) * step, 9)


def _db(ratio: float) -> float:
    return float("inf") if ratio == float("inf") else 20 * math.log10(ratio)


def _floor_evidence(obs: Sequence[Observation], margins: Margins) -> FloorEvidence:
    speech_levels, silence_levels = [], []
    methods: dict[str, int] = {}
    ceiling, ceiling_at, zeros = 0.0, None, 0
    for o in obs:
        classes = classify_ticks(o.trace, labels=o.labels, events=o.events, speech_range_db=margins.speech_range_db)
        methods[classes.method] = methods.get(classes.method, 0) + 1
        speech_levels.append(o.trace.level[classes.speech])
        sil = o.trace.level[classes.silence]
        silence_levels.append(sil)
        zeros += int(np.count_nonzero(sil == 0))
        if sil.size and sil.max() > ceiling:
            k = int(np.flatnonzero(classes.silence)[np.argmax(sil)])
            ceiling, ceiling_at = float(sil.max()), (o.name, float(o.trace.t_s[k]))
    sp = np.concatenate(speech_levels) if speech_levels else np.zeros(0)
    si = np.concatenate(silence_levels) if silence_levels else np.zeros(0)
    pct = {name: float(np.percentile(sp, q)) for name, q in PERCENTILES} if sp.size else {}
    low = float(np.percentile(sp, margins.speech_percentile)) if sp.size else None
    floor: float | None
    if low is None or low <= ceiling:
        floor, rule = None, "no floor: speech does not rise above silence" if low is not None else "no speech ticks"
    else:
        floor = _round_down_2sig(low / 2)
        rule = f"p{margins.speech_percentile:g} of speech / 2, rounded down to 2 significant digits"
        if floor < 2 * ceiling:
            floor = _round_down_2sig(math.sqrt(low * ceiling))
            rule = (
                f"geometric mean of p{margins.speech_percentile:g} of speech and the silence ceiling, "
                "rounded down to 2 significant digits (thin separation)"
            )
    return FloorEvidence(
        n_recordings=len(obs),
        n_speech_ticks=int(sp.size),
        n_silence_ticks=int(si.size),
        methods=methods,
        silence_ceiling=ceiling,
        silence_ceiling_at=ceiling_at,
        exact_zero_share=zeros / si.size if si.size else 0.0,
        speech=pct,
        speech_percentile=margins.speech_percentile,
        floor=floor,
        rule=rule,
        speech_margin_db=None if floor is None or low is None else _db(low / floor),
        silence_margin_db=None if floor is None else (_db(floor / ceiling) if ceiling > 0 else float("inf")),
        thin=sp.size < THIN["speech_ticks"] or si.size < THIN["silence_ticks"],
    )


def _tail_exceedance(gaps: NDArray[np.float64], q: float) -> float | None:
    """P(gap > q) from an exponential tail over the 75th percentile (None with < 5 exceedances)."""
    u = float(np.percentile(gaps, 75))
    excess = gaps[gaps > u] - u
    if excess.size < 5 or excess.mean() <= 0:
        return None
    return float(excess.size / gaps.size * math.exp(-(q - u) / excess.mean()))


def derive(
    observations: Sequence[Observation],
    *,
    margins: Margins | None = None,
    fallback_floor: float = 0.003,
    quiet_s: float = 2.5,
    group: str = "all",
) -> Derivation:
    """Derive the floor, the quiet time and the onset timeout from recordings.

    Parameters
    ----------
    observations : sequence of Observation
    margins : Margins, optional
    fallback_floor : float
        Used to measure gaps only when no floor can be recommended.
    quiet_s : float
        The quiet time the replay uses while measuring onsets (it does not
        change the gaps or latencies measured).
    group : str
        A name for this group (``--by voice`` gives one per voice).

    Returns
    -------
    Derivation
    """
    margins = margins or Margins()
    notes: list[str] = []
    floor_ev = _floor_evidence(observations, margins)
    floor = floor_ev.floor if floor_ev.floor is not None else fallback_floor
    if floor_ev.floor is None:
        notes.append(f"{floor_ev.rule}; gaps measured at the fallback floor {fallback_floor}")
    all_gaps: list[tuple[str, float, float]] = []
    latencies: list[tuple[str, float, float]] = []
    unlogged: list[str] = []
    for o in observations:
        if o.events is not None and o.events.terminals:
            for b in beats(o.trace, o.events, floor=floor, quiet_s=quiet_s):
                all_gaps.extend((o.name, at, g) for at, g in zip(b.gap_at_s, b.quiet_gaps_s))
                if b.onset_latency_s is not None:
                    latencies.append((o.name, b.terminal_s, b.onset_latency_s))
        else:
            seg = segments(o.trace, floor=floor)
            all_gaps.extend((o.name, s.last_word_s, g) for s, g in zip(seg.segments, seg.gaps_s))
            unlogged.append(o.name)
    if unlogged:
        notes.append(
            f"no event log for {len(unlogged)} recording(s) ({', '.join(unlogged[:3])}"
            f"{', ...' if len(unlogged) > 3 else ''}): every gap in them counts as a narration gap"
        )
    g_all = np.array([g for _, _, g in all_gaps])
    g = g_all[g_all >= margins.min_gap_s]
    longest = tuple(sorted(all_gaps, key=lambda x: (-x[2], x[0], x[1]))[:5])
    max_gap = float(g_all.max()) if g_all.size else None
    quiet = None if max_gap is None else _round_up(max_gap + margins.quiet_margin_s, 0.05)
    gaps_ev = GapEvidence(
        n_gaps=int(g.size),
        n_all_gaps=int(g_all.size),
        floor=floor,
        min_gap_s=margins.min_gap_s,
        p50_s=float(np.percentile(g, 50)) if g.size else None,
        p90_s=float(np.percentile(g, 90)) if g.size else None,
        p99_s=float(np.percentile(g, 99)) if g.size else None,
        max_gap_s=max_gap,
        longest=longest,
        quiet_margin_s=margins.quiet_margin_s,
        quiet_s=quiet,
        p_exceed_rule_of_three=min(1.0, 3 / g.size) if g.size else None,
        p_exceed_tail=_tail_exceedance(g, quiet) if (g.size and quiet is not None) else None,
        thin=g.size < THIN["gaps"],
    )
    lat = np.array([x for _, _, x in latencies])
    slowest = max(latencies, key=lambda x: x[2]) if latencies else None
    onsets_ev = OnsetEvidence(
        n_beats=int(lat.size),
        p50_s=float(np.percentile(lat, 50)) if lat.size else None,
        p95_s=float(np.percentile(lat, 95)) if lat.size else None,
        max_s=float(lat.max()) if lat.size else None,
        slowest=slowest,
        onset_margin_s=margins.onset_margin_s,
        onset_timeout_s=_round_up(float(lat.max()) + margins.onset_margin_s, 0.5) if lat.size else None,
        thin=lat.size < THIN["beats"],
    )
    for what, n, need in (
        ("gaps", gaps_ev.n_gaps, THIN["gaps"]),
        ("beats", onsets_ev.n_beats, THIN["beats"]),
        ("recordings", len(observations), THIN["recordings"]),
    ):
        if n < need:
            notes.append(f"thin evidence: {n} {what} (fewer than {need})")
    if floor_ev.speech_margin_db is not None and floor_ev.rule.endswith("(thin separation)"):
        notes.append("thin separation between speech and silence levels")
    return Derivation(group, tuple(o.name for o in observations), floor_ev, gaps_ev, onsets_ev, tuple(notes))


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
