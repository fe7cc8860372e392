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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .events import Label
from .levels import LevelTrace

__all__ = ["LabelMatch", "Segment", "Segmentation", "label_errors", "runs", "segments"]


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
    """

    floor: float
    tick_s: float
    segments: tuple[Segment, ...]
    gaps_s: tuple[float, ...]

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


def _check_floor(floor: float) -> float:
    floor = float(floor)
    if not np.isfinite(floor) or floor < 0:
        raise InvalidParameterError(f"floor must be a finite level >= 0, got {floor!r}")
    return floor


def segments(trace: LevelTrace, *, floor: float, quantum: LevelTrace | None = None) -> Segmentation:
    """Find the speech segments of a level trace.

    Parameters
    ----------
    trace : LevelTrace
        The level at the clock's cadence.
    floor : float
        A tick is speech when ``level > floor`` (strictly).
    quantum : LevelTrace, optional
        The same recording read every render quantum (128 frames), for the
        boundaries at quantum resolution.

    Returns
    -------
    Segmentation

    Raises
    ------
    InvalidParameterError
        A negative or non-finite floor, or a quantum trace of another rate.

    Examples
    --------
    >>> from clock.core.levels import LevelTrace, Ticks
    >>> from fractions import Fraction
    >>> tr = LevelTrace(np.arange(6) * 128, np.array([0, .1, .1, 0, 0, .1]), 48000, Ticks(Fraction(1, 10)))
    >>> seg = segments(tr, floor=0.003)
    >>> [(s.onset_s, s.last_word_s) for s in seg.segments], seg.gaps_s
    ([(0.1, 0.2), (0.5, 0.5)], (0.30000000000000004,))
    """
    floor = _check_floor(floor)
    if quantum is not None and quantum.sample_rate_hz != trace.sample_rate_hz:
        raise InvalidParameterError(
            f"quantum trace rate {quantum.sample_rate_hz} Hz differs from the trace's {trace.sample_rate_hz} Hz"
        )
    t = trace.t_s
    speech = trace.level > floor
    found = []
    q_frames = quantum.frames if quantum is not None else np.zeros(0, np.int64)
    q_speech = quantum.level > floor if quantum is not None else np.zeros(0, bool)
    for start, end in runs(speech).tolist():
        onset_q = offset_q = None
        if q_frames.size:
            # Between the neighbouring quiet ticks' frames, where the level crossed.
            lo = int(trace.frames[start - 1]) if start > 0 else -1
            hi = int(trace.frames[end + 1]) if end + 1 < trace.n_ticks else int(q_frames[-1]) + 1
            inside = (q_frames > lo) & (q_frames < hi) & q_speech
            idx = np.flatnonzero(inside)
            if idx.size:
                onset_q = float(q_frames[idx[0]]) / trace.sample_rate_hz
                offset_q = float(q_frames[idx[-1]]) / trace.sample_rate_hz
        found.append(Segment(start, end, float(t[start]), float(t[end]), onset_q, offset_q))
    gaps = tuple(b.onset_s - a.last_word_s for a, b in zip(found, found[1:]))
    return Segmentation(floor, trace.tick_s, tuple(found), gaps)


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
    for label in labels:
        inside = [
            seg
            for seg in segmentation.segments
            if min(seg.last_word_s + tick, label.end_s) - max(seg.onset_s, label.start_s) > 0
        ]
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
