"""One recording, read once: its header, its level traces and its event log."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..core.analyser import RENDER_QUANTUM_FRAMES, AnalyserOptions
from ..core.levels import Block, LevelChunk, LevelTrace, Ticks, iter_multi_levels, trace_of
from ..errors import RecordingError
from .decode import AudioInfo, iter_blocks, iter_level_blocks, probe

if TYPE_CHECKING:
    from ..core.events import EventLog
    from ..core.segments import QuantumSpeech
    from .cache import TraceCache

__all__ = [
    "MAX_RATE_HZ",
    "MIN_RATE_HZ",
    "MIN_SOURCE_RATE_HZ",
    "Recording",
    "analysis_rate",
    "envelope",
    "read_recording",
]

#: The rates an ``AudioContext`` runs at (the analyser's rate: the recording's, or ``--context-rate``).
MIN_RATE_HZ = 3000
MAX_RATE_HZ = 768000

#: The lowest rate of a recording resampled to ``--context-rate``.
MIN_SOURCE_RATE_HZ = 1000


def analysis_rate(info: AudioInfo, context_rate_hz: int | None = None) -> int:
    """The rate the analyser runs at: ``context_rate_hz``, else the recording's, within an AudioContext's range.

    Raises
    ------
    RecordingError
        A recording whose rate no AudioContext runs at, with no context rate given.
    """
    rate = context_rate_hz or info.sample_rate_hz
    if context_rate_hz and not MIN_SOURCE_RATE_HZ <= info.sample_rate_hz:
        # Resampling 1 Hz to 48 kHz would turn a small file into an endless one.
        raise RecordingError(
            f"{info.path}: sample rate {info.sample_rate_hz} Hz is too low to resample (at least {MIN_SOURCE_RATE_HZ})"
        )
    if not MIN_RATE_HZ <= rate <= MAX_RATE_HZ:
        raise RecordingError(
            f"{info.path}: sample rate {rate} Hz is outside an AudioContext's range "
            f"[{MIN_RATE_HZ}, {MAX_RATE_HZ}] (give --context-rate to resample)"
        )
    return rate


@dataclass(frozen=True, slots=True)
class Recording:
    """A decoded recording, as the clock saw it.

    Attributes
    ----------
    info : AudioInfo
    trace : LevelTrace
        The level at the clock's cadence.
    quantum : LevelTrace, QuantumSpeech or None
        The level every render quantum (when asked for), or which quanta are
        speech at one floor (when the floor was given: one bit per quantum).
    events : EventLog or None
        The event log (None when there is none).
    n_frames : int or None
        Frames decoded (at the analysis rate).
    """

    info: AudioInfo
    trace: LevelTrace
    quantum: LevelTrace | QuantumSpeech | None
    events: EventLog | None
    n_frames: int | None = None

    @property
    def name(self) -> str:
        """The recording's file name."""
        return Path(self.info.path).name

    @property
    def duration_s(self) -> float:
        """Length in seconds (frames decoded, else the last tick)."""
        if self.n_frames is not None:
            return self.n_frames / self.trace.sample_rate_hz
        return float(self.trace.t_s[-1]) if self.trace.n_ticks else 0.0


def read_recording(
    path: str | os.PathLike[str],
    *,
    ticks: Ticks | None = None,
    options: AnalyserOptions | None = None,
    metric: str = "rms",
    context_rate_hz: int | None = None,
    quantum: bool = False,
    quantum_floor: float | None = None,
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
        resolution); always done when the log holds ``clock.level`` readings.
    quantum_floor : float, optional
        Keep only whether each quantum is above this floor (one bit per
        quantum, a :class:`~clock.core.segments.QuantumSpeech`) instead of the
        whole render-quantum trace: what ``segments`` needs, in 1/128 of the memory.
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
    from .events import events_path_for, read_events

    log_path = events if events is not None else events_path_for(path)
    log = read_events(log_path, lenient=lenient) if log_path is not None else None  # before the long decode
    # Page-logged levels are compared at render-quantum resolution.
    quantum = quantum or bool(log is not None and log.readings)
    cadences = [ticks or Ticks()]
    if cache is not None and quantum_floor is None:
        # From the trace cache (the corpus commands): the header and every cadence's trace.
        def decode() -> tuple[AudioInfo, list[LevelTrace]]:
            found = _decode(path, cadences, quantum, None, metric, options, context_rate_hz)
            return found.info, [found.trace] + ([found.quantum] if isinstance(found.quantum, LevelTrace) else [])

        cadence = cadences[0]
        params = {
            "ticks": [str(cadence.period_s), cadence.align],
            "quantum": quantum,
            "metric": metric,
            "options": asdict(options or AnalyserOptions()),
            "context_rate_hz": context_rate_hz,
        }
        info, traces = cache.traces(path, params, decode)
        # The header's length is the decoded length unless the recording was resampled or gives none.
        n_frames = info.n_frames if context_rate_hz in (None, info.sample_rate_hz) else None
        return Recording(info, traces[0], traces[1] if quantum else None, log, n_frames)
    found = _decode(path, cadences, quantum, quantum_floor, metric, options, context_rate_hz)
    return Recording(found.info, found.trace, found.quantum, log, found.n_frames)


@dataclass(frozen=True, slots=True)
class _Decoded:
    info: AudioInfo
    trace: LevelTrace
    quantum: LevelTrace | QuantumSpeech | None
    n_frames: int


def _decode(
    path: str | os.PathLike[str],
    cadences: list[Ticks],
    quantum: bool,
    quantum_floor: float | None,
    metric: str,
    options: AnalyserOptions | None,
    context_rate_hz: int | None,
) -> _Decoded:
    """Decode once, streaming: the trace at the clock's cadence and, when asked, every render quantum."""
    info = probe(path)
    rate = analysis_rate(info, context_rate_hz)
    cadences = list(cadences)
    if quantum:
        cadences.append(Ticks.every_frames(RENDER_QUANTUM_FRAMES, rate))
    counted = _Counted(iter_level_blocks(info, context_rate_hz=context_rate_hz))
    chunks = iter_multi_levels(counted, rate, ticks=cadences, metric=metric, options=options)
    main: list[LevelChunk] = []
    quanta: list[LevelChunk] = []
    if quantum and quantum_floor is not None:
        from ..core.segments import QuantumSpeech

        q: LevelTrace | QuantumSpeech | None = QuantumSpeech.from_chunks(
            _split(chunks, main), floor=quantum_floor, sample_rate_hz=rate
        )
    else:
        for i, chunk in chunks:
            (main if i == 0 else quanta).append(chunk)
        q = trace_of(quanta, rate, cadences[-1], metric, options) if quantum else None
    trace = trace_of(main, rate, cadences[0], metric, options)
    return _Decoded(info, trace, q, counted.n_frames)


class _Counted:
    """Blocks passed through, counting their frames."""

    def __init__(self, blocks: Iterator[Block]) -> None:
        self.blocks = blocks
        self.n_frames = 0

    def __iter__(self) -> Iterator[Block]:
        for block in self.blocks:
            self.n_frames += len(block)
            yield block


def _split(chunks: Iterator[tuple[int, LevelChunk]], main: list[LevelChunk]) -> Iterator[LevelChunk]:
    """The second cadence's chunks; the first's go into ``main``."""
    for i, chunk in chunks:
        if i == 0:
            main.append(chunk)
        else:
            yield chunk


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
    rate = analysis_rate(info, context_rate_hz)
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
