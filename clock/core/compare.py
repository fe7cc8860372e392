"""Other endpointers on the same beats: each one's decisions, by the level clock's own replay.

Pure numpy. An endpointer (a VAD: webrtcvad, Silero, an energy detector)
gives one speech decision per frame of ``frame_len`` samples at
``rate_hz``. :func:`decisions_trace` turns them into a level-like trace on
the clock's tick grid (:data:`SPEECH_LEVEL` where the latest frame complete
at the tick's frame is speech, :data:`SILENCE_LEVEL` elsewhere), so that
:func:`clock.core.beats.analyse` and :func:`~clock.core.beats.decide_quiets`
replay it at :data:`DECISION_FLOOR` exactly as they replay the level clock:
wait for onset after the terminal response, then end after a silence duration.

Every endpointer, the level clock among them, is judged against one
reference of when the guide spoke (:class:`Reference`: the labels when the
recording has them, else the level clock's speech runs at its floor):

``premature``
    it declared the end, and the reference has speech after that, within the span;
``stalled``
    the reference has speech, and it did not declare the end before the span's bound;
``aborted``
    the same, but the bound is the page's ``end``: the page ended the beat
    while the endpointer still heard the guide (neither right nor a failure,
    as for the level clock);
``missed-onset``
    the reference has speech, and it never heard the guide start (it gave up,
    or heard nothing in the span).

Its **silence duration** is tuned on the corpus by replaying a ladder of
quiet times (:data:`QUIET_LADDER_S`): the shortest one with the fewest
failures, plus derive's quiet margin when that fails no more beats.
**Added latency** is the declaration minus the reference's last word, over
the beats it ended right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .beats import (
    ABORTED,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    PREMATURE,
    SILENT,
    STALLED,
    UNHEARD,
    FloorAnalysis,
    analyse,
    decide_quiets,
)
from .derive import Observation
from .events import Label
from .levels import LevelTrace

__all__ = [
    "LEVEL_CLOCK",
    "DECISION_FLOOR",
    "QUIET_LADDER_S",
    "SILENCE_LEVEL",
    "SPEECH_LEVEL",
    "EndpointerResult",
    "FrameDecisions",
    "Judged",
    "Reference",
    "decisions_trace",
    "compare_endpointers",
    "energy_frames",
    "hangover",
    "judge_all",
    "judge_beat",
    "summarise",
    "tune_quiet",
]

#: The level of a tick an endpointer calls speech, and of one it calls silence; the floor between them.
SPEECH_LEVEL, SILENCE_LEVEL, DECISION_FLOOR = 1.0, 1e-3, 0.03
#: The level clock's name among the endpointers.
LEVEL_CLOCK = "level"
#: The quiet times every endpointer's silence duration is chosen from (0.05 s steps up to 6 s).
QUIET_LADDER_S = tuple(round(0.05 * k, 2) for k in range(1, 121))


def decisions_trace(trace: LevelTrace, speech: NDArray[np.bool_], *, frame_len: int, rate_hz: int) -> LevelTrace:
    """An endpointer's per-frame decisions on the clock's tick grid, as a level trace.

    Tick ``k`` reads the latest decision whose frame is complete at the
    tick's frame ``trace.frames[k]`` (a streaming detector has seen no later
    audio); before the first complete frame it reads silence.

    Parameters
    ----------
    trace : LevelTrace
        The level clock's trace (its ticks, frames and rate).
    speech : ndarray of bool, shape (n_frames,)
        The endpointer's decision for each consecutive frame.
    frame_len : int
        Samples per frame, at ``rate_hz``.
    rate_hz : int
        The rate the endpointer ran at (the audio is resampled to it).
    """
    done = (trace.frames.astype(np.int64) * rate_hz) // (trace.sample_rate_hz * frame_len)
    j = np.minimum(done, speech.size) - 1
    heard = np.zeros(j.size, bool)
    ok = j >= 0
    heard[ok] = speech[j[ok]]
    level = np.where(heard, SPEECH_LEVEL, SILENCE_LEVEL)
    return LevelTrace(trace.frames, level, trace.sample_rate_hz, trace.ticks, "decisions", trace.options)


def energy_frames(samples: NDArray[np.float32], *, frame_len: int, threshold_db: float) -> NDArray[np.bool_]:
    """An energy detector's loud frames, as auditok's: the frame's energy in dB
    (``10 log10(mean(x**2))`` of the samples as 16-bit values) reaches ``threshold_db``.

    ``samples`` are float in [-1, 1]; only whole frames are judged.
    """
    n = samples.size // frame_len
    x = samples[: n * frame_len].astype(np.float64).reshape(n, frame_len) * 32768.0
    with np.errstate(divide="ignore"):
        energy = 10 * np.log10(np.mean(x * x, axis=1))
    return np.asarray(energy >= threshold_db, dtype=bool)


def hangover(loud: NDArray[np.bool_], frames: int) -> NDArray[np.bool_]:
    """Speech runs on for ``frames`` quiet frames after the last loud one (auditok's ``max_silence``)."""
    idx = np.where(loud, np.arange(loud.size), -(frames + 1))
    last = np.maximum.accumulate(idx) if loud.size else idx
    return np.asarray(np.arange(loud.size) - last <= frames, dtype=bool)


@dataclass(frozen=True, slots=True)
class Reference:
    """When the guide spoke in one recording, and where each beat's span ends.

    Attributes
    ----------
    spans : tuple of (float, float)
        Speech from start to end, seconds.
    source : str
        ``labels`` or ``level`` (the level clock's speech runs at its floor).
    bounds_s : tuple of float
        Each beat's span end (the level clock's analysis).
    terminals_s : tuple of float
    """

    spans: tuple[tuple[float, float], ...]
    source: str
    bounds_s: tuple[float, ...]
    terminals_s: tuple[float, ...]

    @classmethod
    def of(cls, level: FloorAnalysis, labels: Sequence[Label] | None, window_s: float) -> Reference:
        """From labels (each extended by the analyser's window, which hears a word that long), or else
        from the level clock's speech runs at its floor."""
        if labels:
            spans = tuple((lab.start_s, lab.end_s + window_s) for lab in labels)
            source = "labels"
        else:
            runs = []
            for b in level.beats:
                if b.start_tick is None:
                    continue
                words = np.concatenate([[b.start_tick], b.run_end]).tolist()
                ends = np.concatenate([b.run_word, [b.last_word_tick or b.start_tick]]).tolist()
                runs += [(float(level.t_s[a]), float(level.t_s[e])) for a, e in zip(words, ends) if e >= a]
            spans, source = tuple(sorted(set(runs))), "level"
        return cls(spans, source, tuple(b.bound_s for b in level.beats), tuple(b.terminal_s for b in level.beats))

    def spoken(self, i: int) -> tuple[tuple[float, float], ...]:
        """The speech within beat ``i``'s span."""
        lo, hi = self.terminals_s[i], self.bounds_s[i]
        return tuple((a, b) for a, b in self.spans if b > lo and a < hi)


@dataclass(frozen=True, slots=True)
class Judged:
    """One beat's outcome against the reference, and the latency added after its last word (ok beats)."""

    outcome: str
    added_latency_s: float | None = None


def judge_beat(
    reference: Reference,
    i: int,
    t_s: NDArray[np.float64],
    own: str,
    declared_tick: int,
    *,
    ended_by_page: bool = False,
) -> Judged:
    """Beat ``i`` against the reference (see the module notes).

    ``own`` is the outcome of the endpointer's replay in its own view (an
    index of :data:`~clock.core.beats.OUTCOMES` as a name), ``declared_tick``
    the tick it declared the end at (-1: never); ``ended_by_page``, whether
    the page's ``end`` bounds the beat (undeclared by then, it is aborted).
    """
    undone = ABORTED if ended_by_page else STALLED
    spoken = reference.spoken(i)
    if own == UNHEARD:
        return Judged(UNHEARD)
    if not spoken:
        return Judged(SILENT)
    if own in (SILENT, MISSED_ONSET):
        return Judged(MISSED_ONSET)
    if declared_tick < 0:
        return Judged(undone)
    declared = float(t_s[declared_tick])
    if declared >= reference.bounds_s[i]:
        return Judged(undone)
    if any(b > declared for _, b in spoken):
        return Judged(PREMATURE)
    return Judged(OK, declared - max(b for _, b in spoken))


def judge_all(
    references: Sequence[Reference],
    analyses: Sequence[FloorAnalysis],
    *,
    quiets_s: Sequence[float],
    onset_timeout_s: float,
) -> list[list[list[Judged]]]:
    """Per quiet time, per recording, per beat: the outcome against the reference."""
    out: list[list[list[Judged]]] = [[] for _ in quiets_s]
    for ref, a in zip(references, analyses):
        d = decide_quiets(a, quiets_s=quiets_s, onset_timeout_s=onset_timeout_s)
        for q in range(len(quiets_s)):
            out[q].append(
                [
                    judge_beat(
                        ref,
                        i,
                        a.t_s,
                        OUTCOMES[int(d.outcome[i, q])],
                        int(d.declared_tick[i, q]),
                        ended_by_page=a.beats[i].ended_by_page,
                    )
                    for i in range(len(a.beats))
                ]
            )
    return out


def _failures(judged: list[list[Judged]]) -> int:
    return sum(j.outcome in (PREMATURE, STALLED, MISSED_ONSET) for rec in judged for j in rec)


def tune_quiet(
    references: Sequence[Reference],
    analyses: Sequence[FloorAnalysis],
    *,
    onset_timeout_s: float,
    margin_s: float,
    quiets_s: Sequence[float] = QUIET_LADDER_S,
) -> tuple[float, list[list[Judged]]]:
    """The silence duration for one endpointer: the shortest quiet time with the fewest failures,
    plus ``margin_s`` (derive's quiet margin) when that fails no more beats; and its judged beats."""
    judged = judge_all(references, analyses, quiets_s=quiets_s, onset_timeout_s=onset_timeout_s)
    failures = [_failures(j) for j in judged]
    best = int(np.argmin(failures))
    quiet = float(quiets_s[best])
    padded = round(quiet + margin_s, 9)
    with_margin = judge_all(references, analyses, quiets_s=[padded], onset_timeout_s=onset_timeout_s)[0]
    if _failures(with_margin) <= failures[best]:
        return padded, with_margin
    return quiet, judged[best]


@dataclass(frozen=True, slots=True)
class EndpointerResult:
    """One endpointer at its tuned silence duration, over the corpus.

    Attributes
    ----------
    name : str
    quiet_s : float
        Its silence duration (tuned).
    n_beats, n_ok, n_premature, n_stalled, n_missed_onset, n_silent, n_aborted : int
    added_latency_median_s, added_latency_p95_s : float or None
        After the reference's last word, over the beats it ended right.
    cpu_s_per_hour : float or None
        CPU seconds it took per hour of audio (None: not measured; the level
        clock's trace comes from the decoder and the trace cache).
    """

    name: str
    quiet_s: float
    n_beats: int
    n_ok: int
    n_premature: int
    n_stalled: int
    n_missed_onset: int
    n_silent: int
    added_latency_median_s: float | None
    added_latency_p95_s: float | None
    cpu_s_per_hour: float | None
    n_aborted: int = 0

    @property
    def n_failed(self) -> int:
        """Premature ends, stalls and missed onsets."""
        return self.n_premature + self.n_stalled + self.n_missed_onset


def summarise(
    name: str, quiet_s: float, judged: list[list[Judged]], *, cpu_s: float | None, audio_s: float
) -> EndpointerResult:
    """The counts and latencies of one endpointer's judged beats."""
    flat = [j for rec in judged for j in rec]
    count = {o: sum(j.outcome == o for j in flat) for o in OUTCOMES}
    lat = np.array([j.added_latency_s for j in flat if j.added_latency_s is not None], np.float64)
    return EndpointerResult(
        name,
        quiet_s,
        len(flat),
        count[OK],
        count[PREMATURE],
        count[STALLED],
        count[MISSED_ONSET],
        count[SILENT],
        float(np.median(lat)) if lat.size else None,
        float(np.percentile(lat, 95)) if lat.size else None,
        None if cpu_s is None else cpu_s * 3600.0 / audio_s if audio_s > 0 else 0.0,
        count[ABORTED],
    )


@dataclass(frozen=True, slots=True)
class FrameDecisions:
    """One endpointer's decisions over one recording.

    Attributes
    ----------
    name : str
    speech : ndarray of bool
        One decision per consecutive frame of ``frame_len`` samples at ``rate_hz``.
    frame_len, rate_hz : int
    cpu_s : float
        CPU seconds it took.
    """

    name: str
    speech: NDArray[np.bool_]
    frame_len: int
    rate_hz: int
    cpu_s: float


def compare_endpointers(
    observations: Sequence[Observation],
    decisions: Sequence[Sequence[FrameDecisions]],
    *,
    floor: float,
    onset_timeout_s: float,
    margin_s: float,
) -> tuple[EndpointerResult, ...]:
    """The level clock at ``floor`` and each endpointer, tuned and judged on the same beats.

    Parameters
    ----------
    observations : sequence of Observation
        The recordings (those without terminal responses in a log are skipped).
    decisions : sequence of sequence of FrameDecisions
        Per observation, every endpointer's decisions (the same names in the same order).
    floor : float
        The level clock's floor (derive's recommendation).
    onset_timeout_s : float
        How long every endpointer waits for speech after a terminal response.
    margin_s : float
        Derive's quiet margin, added to each tuned silence duration when it fails no more beats.

    Returns
    -------
    tuple of EndpointerResult
        The level clock first, then the endpointers in the order given.
    """
    keep = [i for i, o in enumerate(observations) if o.has_beats]
    refs, level_analyses, audio_s = [], [], 0.0
    for i in keep:
        o = observations[i]
        assert o.events is not None
        a = analyse(o.trace, o.events, floor=floor)
        window_s = o.trace.options.fft_size / o.trace.sample_rate_hz
        refs.append(Reference.of(a, o.labels, window_s))
        level_analyses.append(a)
        audio_s += o.trace.n_ticks * o.trace.tick_s
    results = []
    quiet, judged = tune_quiet(refs, level_analyses, onset_timeout_s=onset_timeout_s, margin_s=margin_s)
    results.append(summarise(LEVEL_CLOCK, quiet, judged, cpu_s=None, audio_s=audio_s))
    names = [d.name for d in decisions[keep[0]]] if keep else []
    for n, name in enumerate(names):
        analyses, cpu_s = [], 0.0
        for i in keep:
            o, d = observations[i], decisions[i][n]
            assert o.events is not None and d.name == name
            trace = decisions_trace(o.trace, d.speech, frame_len=d.frame_len, rate_hz=d.rate_hz)
            analyses.append(analyse(trace, o.events, floor=DECISION_FLOOR))
            cpu_s += d.cpu_s
        quiet, judged = tune_quiet(refs, analyses, onset_timeout_s=onset_timeout_s, margin_s=margin_s)
        results.append(summarise(name, quiet, judged, cpu_s=cpu_s, audio_s=audio_s))
    return tuple(results)
