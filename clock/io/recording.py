"""One recording, read once: its header, its level traces and its event log."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.analyser import RENDER_QUANTUM_FRAMES, AnalyserOptions
from ..core.events import EventLog
from ..core.levels import LevelTrace, Ticks, multi_levels
from .decode import AudioInfo, iter_blocks, probe
from .events import events_path_for, read_events

if TYPE_CHECKING:
    from .cache import TraceCache

__all__ = ["Recording", "envelope", "read_recording"]


@dataclass(frozen=True, slots=True)
class Recording:
    """A decoded recording, as the clock saw it.

    Attributes
    ----------
    info : AudioInfo
    trace : LevelTrace
        The level at the clock's cadence.
    quantum : LevelTrace or None
        The level every render quantum (when asked for).
    events : EventLog or None
        The event log (None when there is none).
    """

    info: AudioInfo
    trace: LevelTrace
    quantum: LevelTrace | None
    events: EventLog | None

    @property
    def name(self) -> str:
        """The recording's file name."""
        return Path(self.info.path).name


def read_recording(
    path: str | os.PathLike[str],
    *,
    ticks: Ticks | None = None,
    options: AnalyserOptions | None = None,
    metric: str = "rms",
    context_rate_hz: int | None = None,
    quantum: bool = False,
    events: str | os.PathLike[str] | None = None,
    lenient: bool = False,
    cache: TraceCache | None = None,
) -> Recording:
    """Decode a recording once and compute its level trace(s); read its event log.

    Parameters
    ----------
    path : path-like
    ticks : Ticks, optional
        The clock's cadence (default 1/60 s).
    options : AnalyserOptions, optional
    metric : str, optional
    context_rate_hz : int, optional
        Resample to this ``AudioContext`` rate first.
    quantum : bool
        Also compute the level every render quantum (for boundaries at 128-frame
        resolution).
    events : path-like, optional
        The event log; by default ``NAME.events.jsonl`` beside the recording,
        if present.
    lenient : bool
        Skip malformed event lines with a warning.
    cache : TraceCache, optional
        Take the traces from this cache when it holds them for this content
        and these options; keep them there otherwise (see :mod:`clock.io.cache`).

    Returns
    -------
    Recording
    """

    def decode() -> tuple[AudioInfo, list[LevelTrace]]:
        info = probe(path)
        rate = context_rate_hz or info.sample_rate_hz
        cadences = [ticks or Ticks()]
        if quantum:
            cadences.append(Ticks.every_frames(RENDER_QUANTUM_FRAMES, rate))
        traces = multi_levels(
            iter_blocks(info, context_rate_hz=context_rate_hz), rate, ticks=cadences, metric=metric, options=options
        )
        return info, traces

    if cache is None:
        info, traces = decode()
    else:
        cadence = ticks or Ticks()
        params = {
            "ticks": [str(cadence.period_s), cadence.align],
            "quantum": quantum,
            "metric": metric,
            "options": asdict(options or AnalyserOptions()),
            "context_rate_hz": context_rate_hz,
        }
        info, traces = cache.traces(path, params, decode)
    log_path = events if events is not None else events_path_for(path)
    log = read_events(log_path, lenient=lenient) if log_path is not None else None
    return Recording(info, traces[0], traces[1] if quantum else None, log)


def envelope(
    path: str | os.PathLike[str], *, bin_s: float = 0.01, context_rate_hz: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The waveform's min and max in bins of ``bin_s`` seconds, decoded block by block.

    Returns
    -------
    times_s, lows, highs : ndarray of float64
        Bin centres and the extremes of the mono samples in each bin.
    """
    info = probe(path)
    rate = context_rate_hz or info.sample_rate_hz
    size = max(1, int(round(bin_s * rate)))
    lows: list[np.ndarray] = []
    highs: list[np.ndarray] = []
    carry = np.zeros(0, np.float32)
    for block in iter_blocks(info, context_rate_hz=context_rate_hz):
        data = np.concatenate([carry, block])
        whole = data.size // size * size
        shaped = data[:whole].reshape(-1, size)
        lows.append(shaped.min(axis=1))
        highs.append(shaped.max(axis=1))
        carry = data[whole:]
    if carry.size:
        lows.append(carry.min(keepdims=True))
        highs.append(carry.max(keepdims=True))
    lo = np.concatenate(lows).astype(np.float64) if lows else np.zeros(0)
    hi = np.concatenate(highs).astype(np.float64) if highs else np.zeros(0)
    return (np.arange(lo.size) + 0.5) * size / rate, lo, hi
