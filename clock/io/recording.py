"""One recording, read once: its header, its level traces and its event log."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..core.analyser import RENDER_QUANTUM_FRAMES, AnalyserOptions, GridBlock
from ..core.levels import Block, LevelChunk, LevelTrace, iter_multi_levels, trace_of_levels
from ..core.ticks import Ticks
from ..errors import RecordingError
from .decode import AudioInfo, iter_blocks, iter_level_blocks, probe

if TYPE_CHECKING:
    from ..core.events import EventLog
    from ..core.segments import QuantumSpeech

__all__ = [
    "MAX_RATE_HZ",
    "MIN_RATE_HZ",
    "MIN_SOURCE_RATE_HZ",
    "Recording",
    "TraceStore",
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
    envelope : (times_s, lows, highs) or None
        The waveform's min and max in bins (see :func:`envelope`), when asked for.
    """

    info: AudioInfo
    trace: LevelTrace
    quantum: LevelTrace | QuantumSpeech | None
    events: EventLog | None
    n_frames: int | None = None
    envelope: Envelope | None = None

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
    cache: TraceStore | None = None,
    envelope_bins: int | None = None,
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
    cache : TraceStore, optional
        Take the traces from this cache when it holds them for this content
        and these options; keep them there otherwise (see :mod:`clock.run.cache`).
    envelope_bins : int, optional
        Also the waveform's envelope, from the same decode: min and max in
        bins of 10 ms, twice as long whenever there would be more than
        ``2 * envelope_bins`` of them (what a plot draws from). With
        ``cache``, only when the traces were not in it (nothing is decoded
        then: the envelope is None).

    Returns
    -------
    Recording
    """
    from .events import events_path_for, read_events, warn_milliseconds

    log_path = events if events is not None else events_path_for(path)
    log = read_events(log_path, lenient=lenient) if log_path is not None else None  # before the long decode
    how = _HowToDecode(
        # Page-logged levels are compared at render-quantum resolution.
        [ticks or Ticks()],
        quantum or bool(log is not None and log.readings),
        metric,
        options,
        context_rate_hz,
        envelope_bins,
        # A 16-bit lossless capture holds the analyser's floats by Chromium's int16 rule: read it back by that rule.
        bool(log is not None and log.start is not None and log.start.webrtc_int16),
    )
    if cache is not None and quantum_floor is None:
        made = _cached_recording(path, how, log, cache)
    else:
        found = _decode_as(path, how, quantum_floor)
        made = Recording(found.info, found.trace, found.quantum, log, found.n_frames, found.envelope)
    warn_milliseconds(log, made.duration_s)
    return made


class TraceStore(Protocol):
    """Where level traces are kept between runs (:class:`clock.run.cache.TraceCache` is one)."""

    def traces(
        self,
        source: Any,
        params: Mapping[str, Any],
        compute: Callable[[], tuple[AudioInfo, list[LevelTrace]]],
    ) -> tuple[AudioInfo, list[LevelTrace]]:
        """The header and traces of ``source`` with ``params``: kept ones, or ``compute()``'s (then kept)."""


@dataclass(frozen=True, slots=True)
class _HowToDecode:
    """What shapes a recording's traces: the cadences, the render-quantum trace, the metric and the analyser."""

    cadences: list[Ticks]
    quantum: bool
    metric: str
    options: AnalyserOptions | None
    context_rate_hz: int | None
    envelope_bins: int | None
    webrtc_int16: bool


def _cached_recording(
    path: str | os.PathLike[str], how: _HowToDecode, log: EventLog | None, cache: TraceStore
) -> Recording:
    """A recording from the trace cache (the corpus commands): the header and every cadence's trace, decoded
    only when the cache does not hold them for this content and these options."""
    wave: list[Envelope | None] = [None]  # the envelope of a decode made here (not kept in the cache)

    def decode() -> tuple[AudioInfo, list[LevelTrace]]:
        found = _decode_as(path, how, None)
        wave[0] = found.envelope
        return found.info, [found.trace] + ([found.quantum] if isinstance(found.quantum, LevelTrace) else [])

    cadence = how.cadences[0]
    params = {
        "ticks": [str(cadence.period_s), cadence.align],
        "quantum": how.quantum,
        "metric": how.metric,
        "options": asdict(how.options or AnalyserOptions()),
        "context_rate_hz": how.context_rate_hz,
    }
    if how.webrtc_int16:
        params["int16"] = "webrtc"
    info, traces = cache.traces(path, params, decode)
    # The header's length is the decoded length unless the recording was resampled or gives none.
    n_frames = info.n_frames if how.context_rate_hz in (None, info.sample_rate_hz) else None
    return Recording(info, traces[0], traces[1] if how.quantum else None, log, n_frames, wave[0])


def _decode_as(path: str | os.PathLike[str], how: _HowToDecode, quantum_floor: float | None) -> _Decoded:
    """:func:`_decode` with ``how``'s options (``quantum_floor``: one bit per quantum instead of its level)."""
    return _decode(
        path,
        how.cadences,
        how.quantum,
        quantum_floor,
        how.metric,
        how.options,
        how.context_rate_hz,
        how.envelope_bins,
        webrtc_int16=how.webrtc_int16,
    )


@dataclass(frozen=True, slots=True)
class _Decoded:
    info: AudioInfo
    trace: LevelTrace
    quantum: LevelTrace | QuantumSpeech | None
    n_frames: int
    envelope: Envelope | None = None


def _decode(
    path: str | os.PathLike[str],
    cadences: list[Ticks],
    quantum: bool,
    quantum_floor: float | None,
    metric: str,
    options: AnalyserOptions | None,
    context_rate_hz: int | None,
    envelope_bins: int | None = None,
    *,
    webrtc_int16: bool = False,
) -> _Decoded:
    """Decode once, streaming: the trace at the clock's cadence and, when asked, every render quantum."""
    info = probe(path)
    rate = analysis_rate(info, context_rate_hz)
    cadences = list(cadences)
    if quantum:
        cadences.append(Ticks.every_frames(RENDER_QUANTUM_FRAMES, rate))
    wave = _Envelope(rate, 0.01, max_bins=envelope_bins) if envelope_bins is not None else None
    counted = _Counted(iter_level_blocks(info, context_rate_hz=context_rate_hz, webrtc_int16=webrtc_int16), wave)
    chunks = iter_multi_levels(counted, rate, ticks=cadences, metric=metric, options=options)
    # The levels only, while decoding: the frames are the ticks', made once at the end.
    main, quanta = _Levels(), _Levels()
    if quantum and quantum_floor is not None:
        from ..core.segments import QuantumSpeech

        q: LevelTrace | QuantumSpeech | None = QuantumSpeech.from_chunks(
            _split(chunks, main), floor=quantum_floor, sample_rate_hz=rate
        )
    else:
        for i, chunk in chunks:
            (main if i == 0 else quanta).add(chunk.level)
        q = trace_of_levels(quanta.array(), rate, cadences[-1], metric, options) if quantum else None
    trace = trace_of_levels(main.array(), rate, cadences[0], metric, options)
    return _Decoded(info, trace, q, counted.n_frames, None if wave is None else wave.result())


class _Levels:
    """A trace's levels as they come, in one array that grows in place.

    Room for an hour's ticks (at 1/60 s) is reserved at first and doubled when
    full: memory the operating system gives a page at a time, as it is
    written, so a long recording never holds its levels twice (as a list of
    chunks joined at the end would), and a short one costs what it holds.
    """

    def __init__(self) -> None:
        self.buf = np.empty(216_000)
        self.n = 0

    def add(self, level: np.ndarray) -> None:
        if self.n + level.size > self.buf.size:
            grown = np.empty(max(2 * self.buf.size, self.n + level.size))
            grown[: self.n] = self.buf[: self.n]
            self.buf = grown
        self.buf[self.n : self.n + level.size] = level
        self.n += level.size

    def array(self) -> np.ndarray:
        return self.buf[: self.n]


class _Counted:
    """Blocks passed through, counting their frames (and taking the waveform's envelope, if given one)."""

    def __init__(self, blocks: Iterator[Block], wave: _Envelope | None = None) -> None:
        self.blocks = blocks
        self.wave = wave
        self.n_frames = 0

    def __iter__(self) -> Iterator[Block]:
        for block in self.blocks:
            self.n_frames += len(block)
            if self.wave is not None:
                self.wave.add(block.to_float32() if isinstance(block, GridBlock) else block)
            yield block


def _split(chunks: Iterator[tuple[int, LevelChunk]], main: _Levels) -> Iterator[LevelChunk]:
    """The second cadence's chunks; the first's levels go into ``main``."""
    for i, chunk in chunks:
        if i == 0:
            main.add(chunk.level)
        else:
            yield chunk


#: The waveform's envelope: bin centres in seconds, and the least and greatest sample in each bin.
Envelope = tuple[np.ndarray, np.ndarray, np.ndarray]


class _Envelope:
    """A waveform's min and max in bins of ``bin_s``, block by block.

    With ``max_bins``, whenever there are more than ``2 * max_bins`` bins,
    neighbours are merged (bins twice as long), so memory stays bounded
    whatever the length; bins start at multiples of their length from the
    first sample, as if they had been that long from the start.
    """

    def __init__(self, rate: int, bin_s: float, *, max_bins: int | None = None) -> None:
        self.rate = rate
        self.size = max(1, int(round(bin_s * rate)))
        self.max_bins = max_bins
        self.lows: list[np.ndarray] = []
        self.highs: list[np.ndarray] = []
        self.n_bins = 0
        # The last bin, while it is not whole: its extremes and how many samples it has.
        self.part: tuple[float, float, int] | None = None

    def add(self, block: np.ndarray) -> None:
        x = block
        if self.part is not None:
            low, high, count = self.part
            head, x = x[: self.size - count], x[self.size - count :]
            if head.size:
                low, high, count = min(low, float(head.min())), max(high, float(head.max())), count + head.size
            self.part = (low, high, count)
            if count < self.size:
                return
            self._whole(np.array([low], np.float32), np.array([high], np.float32))
            self.part = None
        whole = x.size // self.size * self.size
        if whole:
            shaped = x[:whole].reshape(-1, self.size)
            self._whole(shaped.min(axis=1), shaped.max(axis=1))
        if whole < x.size:
            rest = x[whole:]
            self.part = (float(rest.min()), float(rest.max()), rest.size)
        while self.max_bins is not None and self.n_bins > 2 * self.max_bins:
            self._coarsen()

    def _whole(self, lows: np.ndarray, highs: np.ndarray) -> None:
        self.lows.append(lows)
        self.highs.append(highs)
        self.n_bins += lows.size

    def _coarsen(self) -> None:
        lows, highs = np.concatenate(self.lows), np.concatenate(self.highs)
        if lows.size % 2:  # the last whole bin is the first half of a longer bin still open
            low, high, count = float(lows[-1]), float(highs[-1]), self.size
            if self.part is not None:
                low, high, count = min(low, self.part[0]), max(high, self.part[1]), count + self.part[2]
            self.part = (low, high, count)
            lows, highs = lows[:-1], highs[:-1]
        self.lows = [lows.reshape(-1, 2).min(axis=1)]
        self.highs = [highs.reshape(-1, 2).max(axis=1)]
        self.n_bins = self.lows[0].size
        self.size *= 2

    def result(self) -> Envelope:
        lows, highs = list(self.lows), list(self.highs)
        if self.part is not None:
            lows.append(np.array([self.part[0]], np.float32))
            highs.append(np.array([self.part[1]], np.float32))
        lo = np.concatenate(lows).astype(np.float64) if lows else np.zeros(0)
        hi = np.concatenate(highs).astype(np.float64) if highs else np.zeros(0)
        return (np.arange(lo.size) + 0.5) * self.size / self.rate, lo, hi


def envelope(path: str | os.PathLike[str], *, bin_s: float = 0.01, context_rate_hz: int | None = None) -> Envelope:
    """The waveform's min and max in bins of ``bin_s`` seconds, decoded block by block.

    Returns
    -------
    times_s, lows, highs : ndarray of float64
        Bin centres and the extremes of the mono samples in each bin.
    """
    info = probe(path)
    rate = analysis_rate(info, context_rate_hz)
    wave = _Envelope(rate, bin_s)
    for block in iter_blocks(info, context_rate_hz=context_rate_hz):
        wave.add(block)
    return wave.result()
