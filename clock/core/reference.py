"""The reference an endpointer is judged against, and each recording prepared for the comparison.

Pure numpy. The reference (:class:`Reference`) is not a contestant: the
recording's labels (each extended by the analyser's window, which hears a
word that long), else its speech by a two-mode split of its level (Otsu's
threshold on the log-levels, the floor-free split derive tells speech from
noise with), runs joined across dips shorter than :data:`REFERENCE_JOIN_S`
and kept when at least :data:`REFERENCE_MIN_S` long. :func:`prepare` keeps
only the beats the clock hears, and the terminal that bounds each (see
:mod:`clock.core.compare` for how a beat is judged against the reference).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .beats import (
    FloorAnalysis,
    analyse,
)
from .decisions import DECISION_FLOOR, SILENCE_LEVEL, SPEECH_LEVEL
from .events import EventLog, Label
from .levels import LevelTrace
from .model import Observation
from .segments import runs
from .speech import otsu_log_split

__all__ = ["REFERENCE_JOIN_S", "REFERENCE_MIN_S", "Prepared", "Reference", "prepare", "reference_sources"]

#: The reference without labels: speech runs joined across dips shorter than this, and at least this long.
REFERENCE_JOIN_S, REFERENCE_MIN_S = 0.3, 0.1


def _merged(starts: NDArray[np.float64], ends: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The union of intervals, as sorted disjoint intervals."""
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    a, b = starts[order], ends[order]
    reach = np.maximum.accumulate(b)
    new = np.concatenate([[True], a[1:] > reach[:-1]])
    group = np.cumsum(new) - 1
    out_b = np.full(int(group[-1]) + 1, -np.inf)
    np.maximum.at(out_b, group, b)
    return a[new], out_b


@dataclass(frozen=True, slots=True)
class Reference:
    """When the guide spoke in one recording (see the module notes), as sorted disjoint spans.

    Attributes
    ----------
    starts_s, ends_s : ndarray of float64
    source : str
        ``labels``, or ``split`` (the level's two-mode split, joined and smoothed).
    split : float or None
        The level the split put between noise and speech (``split`` only).
    """

    starts_s: NDArray[np.float64]
    ends_s: NDArray[np.float64]
    source: str
    split: float | None = None

    @classmethod
    def from_labels(cls, labels: Sequence[Label], window_s: float) -> Reference:
        """Each label, extended by the analyser's window (it hears a word that long)."""
        a = np.array([lab.start_s for lab in labels], np.float64)
        b = np.array([lab.end_s + window_s for lab in labels], np.float64)
        return cls(*_merged(a, b), "labels")

    @classmethod
    def from_level(cls, trace: LevelTrace) -> Reference:
        """The ticks above the two-mode split of the level, joined across short dips, short runs dropped."""
        split = otsu_log_split(trace.level)
        if split is None or trace.n_ticks == 0:
            empty = np.zeros(0, np.float64)
            return cls(empty, empty, "split", split)
        t = trace.t_s
        found = runs(trace.level > split)
        a, b = t[found[:, 0]], t[found[:, 1]]
        if a.size:
            firsts = np.flatnonzero(np.concatenate([[True], a[1:] - b[:-1] >= REFERENCE_JOIN_S - 1e-9]))
            lasts = np.concatenate([firsts[1:] - 1, [a.size - 1]])
            a, b = a[firsts], b[lasts]
            keep = b - a >= REFERENCE_MIN_S - 1e-9
            a, b = a[keep], b[keep]
        return cls(a, b, "split", split)

    @classmethod
    def of(cls, observation: Observation) -> Reference:
        """The labels when the recording has them, else the level's split."""
        trace = observation.trace
        if observation.labels:
            return cls.from_labels(observation.labels, trace.options.fft_size / trace.sample_rate_hz)
        return cls.from_level(trace)

    def speech_at(self, t_s: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Whether each time lies in a span."""
        k = np.searchsorted(self.starts_s, t_s, side="right") - 1
        inside = k >= 0
        inside[inside] = t_s[inside] <= self.ends_s[k[inside]]
        return inside

    def within(self, lo_s: NDArray[np.float64], hi_s: NDArray[np.float64]) -> tuple[NDArray[np.bool_], NDArray]:
        """Per interval (lo, hi): whether a span meets it, and the latest end of those that do."""
        first = np.searchsorted(self.ends_s, lo_s, side="right")
        last = np.searchsorted(self.starts_s, hi_s, side="left") - 1
        has = last >= first
        end = np.full(lo_s.size, -np.inf)
        end[has] = self.ends_s[last[has]]
        return has, end


def reference_sources(observations: Sequence[Observation]) -> dict[str, int]:
    """How many recordings with beats are judged against their labels, and how many against the split."""
    found = {"labels": 0, "split": 0}
    for o in observations:
        if o.has_beats:
            found["labels" if o.labels else "split"] += 1
    return found


@dataclass(frozen=True, slots=True)
class Prepared:
    """One recording made ready for every contestant: the beats the clock hears, and the reference.

    Attributes
    ----------
    trace : LevelTrace
    events : EventLog
        The log without the terminal responses no tick hears, except one that bounds a heard beat.
    heard : ndarray of bool
        Per terminal of ``events``: the clock sees a tick of its beat.
    n_beats, n_dropped : int
        Terminal responses of the whole log, and those left out of ``events`` (unheard).
    has_speech, last_word_s, bound_s : ndarray
        Per terminal of ``events``: the reference has speech in the span, its
        latest end there, and where the span ends (the reference's speech
        deciding an overlapping acknowledgment, as :func:`~clock.core.spans.span_bounds` does for the clock).
    source : str
        The reference's source.
    audio_s : float
    reference : FloorAnalysis
        The reference's beats: :func:`~clock.core.analysis.analyse` of a trace
        whose level is the reference's speech at each tick (its narration
        pauses give ``P``; its speech at each bound and last word tell an
        aborted beat from an outpaced one).
    """

    trace: LevelTrace
    events: EventLog
    heard: NDArray[np.bool_]
    n_beats: int
    n_dropped: int
    has_speech: NDArray[np.bool_]
    last_word_s: NDArray[np.float64]
    bound_s: NDArray[np.float64]
    source: str
    audio_s: float
    reference: FloorAnalysis


def prepare(observation: Observation) -> Prepared:
    """The recording's reference, and its log cut to the beats the clock can hear (see the module notes).

    A terminal response is heard when a tick lies between the tick it is
    applied at and the one its next ``terminal`` or ``end`` is applied at.
    Kept: every event that is not a terminal response, every heard terminal
    response, and the one after each heard one (the next stop, or the bound of
    its span). Each kept beat is analysed as in the whole log.
    """
    o = observation
    assert o.events is not None
    trace, queue = o.trace, o.events.events
    t = trace.t_s
    n = len(queue)
    kinds = np.array([e.kind for e in queue], dtype=object)
    applied = np.searchsorted(t, np.array([e.t_s for e in queue], np.float64), side="left")
    is_term = kinds == "terminal"
    stops = np.flatnonzero(is_term | (kinds == "end"))
    at = np.searchsorted(stops, np.arange(n), side="right")
    life_end = np.full(n, t.size, np.int64)
    has_next = at < stops.size
    life_end[has_next] = applied[stops[at[has_next]]]
    heard_all = is_term & (life_end > applied)
    terms = np.flatnonzero(is_term)
    keep_term = heard_all[terms] | np.concatenate([[False], heard_all[terms[:-1]]])[: terms.size]
    keep = ~is_term
    keep[terms[keep_term]] = True
    events = replace(o.events, events=tuple(e for e, k in zip(queue, keep.tolist()) if k))
    heard = heard_all[terms[keep_term]]
    ref = Reference.of(o)
    # The reference's beats, as the clock's replay analyses a level: its speech decides each span's bound.
    level = np.where(ref.speech_at(t), SPEECH_LEVEL, SILENCE_LEVEL)
    mask = LevelTrace(trace.frames, level, trace.sample_rate_hz, trace.ticks, "reference", trace.options)
    reference = analyse(mask, events, floor=DECISION_FLOOR, t_s=t)
    bound_s = np.array([b.bound_s for b in reference.beats], np.float64)
    terminal_s = np.array([e.t_s for e in events.terminals], np.float64)
    has, last = ref.within(terminal_s, bound_s)
    return Prepared(
        trace, events, heard, int(terms.size), int((~keep_term).sum()), has, last, bound_s, ref.source,
        trace.n_ticks * trace.tick_s, reference,
    )  # fmt: skip
