"""Speech segments and the gaps between them, as the clock sees them.

Pure numpy. A tick is **speech** when its level is strictly greater than the
floor (``level > floor``): a level equal to the floor is quiet, so a floor of
0 makes exact digital silence quiet and anything else speech.

A segment is a maximal run of speech ticks. Its ``onset_s`` is the time of its
first tick and its ``last_word_s`` the time of its last tick (the last tick
above the floor). A gap is measured the way the clock measures quiet: from
one segment's last word to the next segment's onset, so a single quiet tick
between two speech ticks is a gap of two tick periods. Every gap is kept,
including dips inside words; views filter by length.

Boundaries at render-quantum resolution come from a second trace read every
128 frames (``Ticks.every_frames(128, rate)``): ``onset_quantum_s`` is the
first quantum above the floor after the previous quiet tick, and
``offset_quantum_s`` the last quantum above the floor before the next quiet
tick: where a continuously polled analyser would first and last see speech.
That trace can be kept whole (a :class:`~clock.core.levels.LevelTrace`) or,
for long recordings, as one bit per quantum at the floor
(:class:`QuantumSpeech`: 0.5 MB for three hours at 48 kHz, where the trace
takes 64 MB). Either way the segmentation takes time linear in the length.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .analyser import RENDER_QUANTUM_FRAMES
from .events import Label
from .levels import LevelChunk, LevelTrace
from .model import EPS_S, MIN_GAP_S

__all__ = [
    "LabelMatch",
    "QuantumSpeech",
    "Segment",
    "Segmentation",
    "check_floor",
    "label_errors",
    "runs",
    "segments",
    "word_gaps",
]


@dataclass(frozen=True, slots=True)
class Segment:
    """One run of speech ticks.

    Attributes
    ----------
    onset_tick, last_word_tick : int
        First and last tick above the floor.
    onset_s, last_word_s : float
        Their times.
    onset_quantum_s, offset_quantum_s : float or None
        The same boundaries at render-quantum resolution (None when no
        quantum-resolution trace was given).
    """

    onset_tick: int
    last_word_tick: int
    onset_s: float
    last_word_s: float
    onset_quantum_s: float | None = None
    offset_quantum_s: float | None = None

    @property
    def duration_s(self) -> float:
        """``last_word_s - onset_s`` (0 for a single-tick segment)."""
        return self.last_word_s - self.onset_s


@dataclass(frozen=True, slots=True)
class Segmentation:
    """The segments of a trace at one floor, and the gaps between them.

    Attributes
    ----------
    floor : float
    tick_s : float
    segments : tuple of Segment
    gaps_s : tuple of float
        ``segments[i + 1].onset_s - segments[i].last_word_s`` for each i.
    min_gap_s, min_speech_s : float
        Gaps shorter than ``min_gap_s`` were merged, then segments shorter
        than ``min_speech_s`` dropped (0 and 0: every run, as the clock sees it).
    """

    floor: float
    tick_s: float
    segments: tuple[Segment, ...]
    gaps_s: tuple[float, ...]
    min_gap_s: float = 0.0
    min_speech_s: float = 0.0

    @property
    def n_segments(self) -> int:
        """Number of segments."""
        return len(self.segments)


def runs(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Start and end (inclusive) indices of the runs of True in ``mask``, shape (n_runs, 2).

    Examples
    --------
    >>> runs(np.array([0, 1, 1, 0, 1], bool)).tolist()
    [[1, 2], [4, 4]]
    """
    m = np.asarray(mask, dtype=bool)
    edges = np.diff(np.concatenate([[False], m, [False]]).astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1) - 1
    return np.stack([starts, ends], axis=1).astype(np.int64)


@dataclass(frozen=True, slots=True)
class QuantumSpeech:
    """Which render quanta are speech at one floor, one bit each.

    Quantum ``k`` is the analyser read at frame ``128 * k`` (``k = 0, 1, ...``),
    as ``Ticks.every_frames(128, rate)`` reads it; its bit is ``level > floor``.

    Attributes
    ----------
    floor : float
    sample_rate_hz : int
    n_quanta : int
    bits : ndarray of uint8
        ``numpy.packbits`` of the speech flags (big-endian bit order).
    """

    floor: float
    sample_rate_hz: int
    n_quanta: int
    bits: NDArray[np.uint8]

    @classmethod
    def from_chunks(cls, chunks: Iterable[LevelChunk], *, floor: float, sample_rate_hz: int) -> QuantumSpeech:
        """Pack the consecutive chunks of a render-quantum trace as they come (memory: one bit per quantum)."""
        floor = check_floor(floor)
        packed: list[NDArray[np.uint8]] = []
        carry = np.zeros(0, bool)
        n = 0
        for chunk in chunks:
            expected = (np.arange(chunk.frames.size) + chunk.first_tick) * RENDER_QUANTUM_FRAMES
            if chunk.first_tick != n or not np.array_equal(chunk.frames, expected):
                raise InvalidParameterError("a QuantumSpeech needs the trace read every 128 frames from frame 0")
            flags = np.concatenate([carry, chunk.level > floor])
            whole = flags.size // 8 * 8
            packed.append(np.packbits(flags[:whole]))
            carry = flags[whole:]
            n += chunk.frames.size
        packed.append(np.packbits(carry))
        return cls(floor, int(sample_rate_hz), n, np.concatenate(packed))

    @classmethod
    def from_trace(cls, trace: LevelTrace, *, floor: float) -> QuantumSpeech:
        """The speech bits of a render-quantum trace (``Ticks.every_frames(128, rate)``)."""
        return cls.from_chunks(
            [LevelChunk(0, trace.frames, trace.level)], floor=floor, sample_rate_hz=trace.sample_rate_hz
        )

    def first_last(self, after_frame: int, before_frame: int) -> tuple[int, int] | None:
        """Frames of the first and last speech quantum strictly between two frames, or None."""
        q = RENDER_QUANTUM_FRAMES
        k0 = max(0, after_frame // q + 1)
        k1 = min(self.n_quanta - 1, -(-before_frame // q) - 1)
        if k1 < k0:
            return None
        flags = np.unpackbits(self.bits[k0 // 8 : k1 // 8 + 1])[k0 % 8 : k0 % 8 + k1 - k0 + 1]
        idx = np.flatnonzero(flags)
        if not idx.size:
            return None
        return (k0 + int(idx[0])) * q, (k0 + int(idx[-1])) * q


def check_floor(floor: float) -> float:
    """``floor`` as a float, or InvalidParameterError where it is not a finite level >= 0."""
    floor = float(floor)
    if not np.isfinite(floor) or floor < 0:
        raise InvalidParameterError(f"floor must be a finite level >= 0, got {floor!r}")
    return floor


def segments(
    trace: LevelTrace,
    *,
    floor: float,
    quantum: LevelTrace | QuantumSpeech | None = None,
    min_gap_s: float = 0.0,
    min_speech_s: float = 0.0,
) -> Segmentation:
    """Find the speech segments of a level trace.

    Parameters
    ----------
    trace : LevelTrace
        The level at the clock's cadence.
    floor : float
        A tick is speech when ``level > floor`` (strictly).
    quantum : LevelTrace or QuantumSpeech, optional
        The same recording read every render quantum (128 frames), for the
        boundaries at quantum resolution (as a trace, or its speech bits at
        this floor).
    min_gap_s : float
        Merge segments whose gap is shorter (a dip between words, not a
        pause); 0 keeps every run, as the clock counts quiet.
    min_speech_s : float
        Then drop segments shorter than this (a click, a breath).

    Returns
    -------
    Segmentation

    Raises
    ------
    InvalidParameterError
        A negative or non-finite floor, a quantum trace of another rate,
        quantum speech bits found at another floor, or a negative or
        non-finite ``min_gap_s`` or ``min_speech_s``.

    Examples
    --------
    >>> from clock.core.levels import LevelTrace
    >>> from clock.core.ticks import Ticks
    >>> from fractions import Fraction
    >>> # ticks every 0.1 s at 12.8 kHz: tick k at frame 1280 k (a render-quantum boundary), at k / 10 s
    >>> tr = LevelTrace(np.arange(6) * 1280, np.array([0, .1, .1, 0, 0, .1]), 12800, Ticks(Fraction(1, 10)))
    >>> seg = segments(tr, floor=0.003)
    >>> [(s.onset_s, s.last_word_s) for s in seg.segments], seg.gaps_s
    ([(0.1, 0.2), (0.5, 0.5)], (0.3,))
    """
    floor = check_floor(floor)
    for name, value in (("min_gap_s", min_gap_s), ("min_speech_s", min_speech_s)):
        if not (np.isfinite(value) and value >= 0):
            raise InvalidParameterError(f"{name} must be a finite number of seconds >= 0, got {value!r}")
    if quantum is not None and quantum.sample_rate_hz != trace.sample_rate_hz:
        raise InvalidParameterError(
            f"quantum trace rate {quantum.sample_rate_hz} Hz differs from the trace's {trace.sample_rate_hz} Hz"
        )
    if isinstance(quantum, QuantumSpeech) and quantum.floor != floor:
        raise InvalidParameterError(f"quantum speech was found at floor {quantum.floor}, not {floor}")
    t = trace.t_s
    found_runs = runs(trace.level > floor)
    bounds = _quantum_bounds(trace, found_runs, quantum, floor) if quantum is not None else None
    rate = trace.sample_rate_hz
    found = []
    for i, (start, end) in enumerate(found_runs.tolist()):
        onset_q = offset_q = None
        edge = bounds[i] if bounds is not None else None
        if edge is not None:
            onset_q, offset_q = edge[0] / rate, edge[1] / rate
        found.append(Segment(start, end, float(t[start]), float(t[end]), onset_q, offset_q))
    join = word_gaps(found_runs[:, 0], found_runs[:, 1], t, min_gap_s=min_gap_s) if found else np.zeros(0, bool)
    found = [s for s in _merged(found, join) if s.duration_s >= min_speech_s - EPS_S]
    gaps = tuple(b.onset_s - a.last_word_s for a, b in zip(found, found[1:]))
    return Segmentation(floor, trace.tick_s, tuple(found), gaps, float(min_gap_s), float(min_speech_s))


def word_gaps(
    run_starts: NDArray[np.int64],
    run_ends: NDArray[np.int64],
    t_s: NDArray[np.float64],
    *,
    min_gap_s: float = MIN_GAP_S,
) -> NDArray[np.bool_]:
    """Which quiets between consecutive runs of speech are dips between words rather than pauses.

    ``run_starts`` and ``run_ends`` are the first and last tick of each run
    (in order); the quiet after run ``i`` is measured as the clock and
    :func:`segments` measure a gap, from its last word to the next run's
    onset (``t_s[run_starts[i + 1]] - t_s[run_ends[i]]``), and is a dip
    between words when shorter than ``min_gap_s`` (as :func:`segments`
    merges them with ``min_gap_s``). Returns one flag per gap
    (``len(run_starts) - 1``).
    """
    return np.asarray(t_s[run_starts[1:]] - t_s[run_ends[:-1]] < min_gap_s - EPS_S, dtype=bool)


def _merged(found: list[Segment], join: NDArray[np.bool_]) -> list[Segment]:
    """Segments with every gap ``join`` flags (:func:`word_gaps`) closed (onset of the first, last word of the last)."""
    out: list[Segment] = []
    for i, s in enumerate(found):
        if i and join[i - 1]:
            a = out[-1]
            out[-1] = Segment(
                a.onset_tick, s.last_word_tick, a.onset_s, s.last_word_s, a.onset_quantum_s, s.offset_quantum_s
            )
        else:
            out.append(s)
    return out


def _quantum_bounds(
    trace: LevelTrace, found_runs: NDArray[np.int64], quantum: LevelTrace | QuantumSpeech, floor: float
) -> list[tuple[int, int] | None]:
    """For each run of speech ticks, the first and last speech quantum between its neighbouring quiet ticks.

    One pass: each run looks only between the frames of the quiet ticks around it.
    """
    if found_runs.size == 0:
        return []
    if isinstance(quantum, QuantumSpeech):
        last_q = (quantum.n_quanta - 1) * RENDER_QUANTUM_FRAMES
    else:
        last_q = int(quantum.frames[-1]) if quantum.n_ticks else -1
    starts, ends = found_runs[:, 0], found_runs[:, 1]
    frames = trace.frames
    # Between the neighbouring quiet ticks' frames, where the level crossed (the last run: to the end).
    lo = np.where(starts > 0, frames[np.maximum(starts - 1, 0)], -1)
    hi = np.where(ends + 1 < trace.n_ticks, frames[np.minimum(ends + 1, trace.n_ticks - 1)], last_q + 1)
    if isinstance(quantum, QuantumSpeech):
        return [quantum.first_last(int(a), int(b)) for a, b in zip(lo.tolist(), hi.tolist())]
    speech = quantum.frames[quantum.level > floor]
    first = np.searchsorted(speech, lo, side="right")
    last = np.searchsorted(speech, hi, side="left") - 1
    return [(int(speech[i]), int(speech[j])) if i <= j else None for i, j in zip(first.tolist(), last.tolist())]


@dataclass(frozen=True, slots=True)
class LabelMatch:
    """A ground-truth label and the segment that best overlaps it.

    Attributes
    ----------
    label_start_s, label_end_s : float
    text : str
    onset_error_s, offset_error_s : float or None
        ``segment.onset_s - label_start_s`` and ``segment.last_word_s -
        label_end_s`` (None when no segment overlaps the label).
    """

    label_start_s: float
    label_end_s: float
    text: str
    onset_error_s: float | None
    offset_error_s: float | None


def label_errors(segmentation: Segmentation, labels: Sequence[Label]) -> list[LabelMatch]:
    """Onset and offset errors of the segments against ground-truth labels.

    A label's onset is compared with the first segment that overlaps it, and
    its end with the last one (an utterance may dip below the floor between
    words, so several segments can fall inside one label). Segments are taken
    as ``[onset_s, last_word_s]`` widened by one tick.
    """
    out = []
    tick = segmentation.tick_s
    segs = segmentation.segments
    ends = [seg.last_word_s + tick for seg in segs]  # ascending: segments are in time order and disjoint
    for label in labels:
        inside = []
        j = bisect_right(ends, label.start_s)  # the first segment that ends after the label starts
        while j < len(segs) and segs[j].onset_s < label.end_s:
            seg = segs[j]
            if min(ends[j], label.end_s) - max(seg.onset_s, label.start_s) > 0:
                inside.append(seg)
            j += 1
        out.append(
            LabelMatch(
                label.start_s,
                label.end_s,
                label.text,
                inside[0].onset_s - label.start_s if inside else None,
                inside[-1].last_word_s - label.end_s if inside else None,
            )
        )
    return out
