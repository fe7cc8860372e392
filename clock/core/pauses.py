"""The pause clock: paused intervals of a log, and the unpaused time the clock counts.

``pause`` freezes the quiet count (and the onset timeout), ``resume`` continues it. :class:`PauseClock` applies
a log's pauses in order and answers the unpaused seconds of an interval, as the tick replay
(:mod:`clock.core.replay`) counts them; :func:`unpaused`, :func:`unpaused_each` and :func:`paused_at` answer the
same for many ticks at once, with the same float operations in the same order, for the vectorised analyses
(:mod:`clock.core.beat_analysis`, :mod:`clock.core.recommend.rules`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .events import EventLog

__all__ = ["PauseClock", "pause_spans", "paused_at", "unpaused", "unpaused_each"]


class PauseClock:
    """Paused intervals, to count only unpaused time."""

    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []
        self.since: float | None = None

    def pause(self, t: float) -> None:
        """A ``pause`` at ``t`` (a second one before a resume changes nothing)."""
        if self.since is None:
            self.since = t

    def resume(self, t: float) -> None:
        """A ``resume`` at ``t``: the open paused interval ends there."""
        if self.since is not None:
            self.intervals.append((self.since, t))
            self.since = None

    @property
    def paused(self) -> bool:
        """Whether a pause is open."""
        return self.since is not None

    @classmethod
    def from_events(cls, events: EventLog) -> PauseClock:
        """Every pause and resume of a log, applied in order."""
        clock = cls()
        for e in events.of_kind("pause", "resume"):
            (clock.pause if e.kind == "pause" else clock.resume)(e.t_s)
        return clock

    def unpaused(self, a: float, b: float) -> float:
        """Seconds of [a, b] outside every paused interval."""
        if not self.intervals and self.since is None:
            return b - a  # (nothing paused: the same float as subtracting no paused time)
        spans = self.intervals + ([(self.since, b)] if self.since is not None else [])
        paused = sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in spans)
        return (b - a) - paused


def pause_spans(events: EventLog) -> tuple[tuple[float, float], ...]:
    """Paused intervals of a log (an unresumed pause runs to infinity)."""
    clock = PauseClock.from_events(events)
    spans = list(clock.intervals)
    if clock.since is not None:
        spans.append((clock.since, float("inf")))
    return tuple(spans)


def unpaused(a: float, b: NDArray[np.float64], spans: tuple[tuple[float, float], ...]) -> NDArray[np.float64]:
    """``PauseClock.unpaused(a, b)`` for many ``b``, with the same float operations in the same order."""
    paused = np.zeros_like(b)
    for lo, hi in spans:
        paused = paused + np.maximum(0.0, np.minimum(b, hi) - max(a, lo))
    return (b - a) - paused


def paused_at(t: NDArray[np.float64], spans: tuple[tuple[float, float], ...]) -> NDArray[np.bool_]:
    """Whether the clock is paused at each tick (events at a tick's time apply before it)."""
    out = np.zeros(t.size, bool)
    for lo, hi in spans:
        out |= (t >= lo) & (t < hi)
    return out


def unpaused_each(
    a: NDArray[np.float64], b: NDArray[np.float64], spans: tuple[tuple[float, float], ...]
) -> NDArray[np.float64]:
    """:func:`unpaused` for pairs ``a[i]``, ``b[i]`` (the same float operations, element by element)."""
    paused = np.zeros_like(b)
    for lo, hi in spans:
        paused = paused + np.maximum(0.0, np.minimum(b, hi) - np.maximum(a, lo))
    return (b - a) - paused
