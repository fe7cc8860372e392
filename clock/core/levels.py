"""Level traces: the level a page's clock reads from its analyser at each tick.

Pure numpy: no file access, no command line, no plotting.

The clock's cadence, and the frame each tick reads at (the time a page
measures), are :mod:`clock.core.ticks`'s; the metrics' arithmetic is
:mod:`clock.core.level_metrics`'s.

Metrics
-------
``rms``
    ``sqrt(mean(x**2))`` over the float32 time-domain data, summed in float64
    from the oldest sample as a JavaScript loop does (what the clock uses;
    bit-exact, and exactly 0.0 on digital silence).
``peak``
    ``max(|x|)`` over the time-domain data (bit-exact).
``byte-mean``
    Mean of ``getByteFrequencyData`` (smoothing once per tick).
``max-db``
    Maximum of ``getFloatFrequencyData`` in dB (-inf on silence).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError, InvalidSignalError
from .analyser import RENDER_QUANTUM_FRAMES, AnalyserOptions, GridBlock
from .level_metrics import GridSums, MetricState, Scratch, metric_function, rms_metric
from .ticks import Ticks, frame_times_s

__all__ = [
    "Block",
    "LevelChunk",
    "LevelStream",
    "LevelTrace",
    "SignalSummary",
    "iter_levels",
    "iter_multi_levels",
    "levels",
    "multi_levels",
    "summarize",
    "trace_of",
    "trace_of_levels",
]

#: What the level engine takes: mono float32 samples, or 16-bit PCM's exact integers.
Block = NDArray[np.float32] | GridBlock


@dataclass(frozen=True, slots=True)
class LevelTrace:
    """The level a page reads at each tick.

    Attributes
    ----------
    frames : ndarray of int64, shape (n_ticks,)
        ``F_k``, the frame each tick's analyser window ends at.
    level : ndarray of float64, shape (n_ticks,)
        The metric at each tick.
    sample_rate_hz : int
    ticks : Ticks
    metric : str
    options : AnalyserOptions
    """

    frames: NDArray[np.int64]
    level: NDArray[np.float64]
    sample_rate_hz: int
    ticks: Ticks = field(default_factory=Ticks)
    metric: str = "rms"
    options: AnalyserOptions = field(default_factory=AnalyserOptions)

    def __post_init__(self) -> None:
        for name in ("frames", "level"):
            arr = np.asarray(getattr(self, name))
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        if self.frames.shape != self.level.shape:
            raise InvalidSignalError(
                f"frames and level must have the same shape, got {self.frames.shape} and {self.level.shape}"
            )

    @property
    def n_ticks(self) -> int:
        """Number of ticks."""
        return int(self.level.size)

    @property
    def tick(self) -> NDArray[np.int64]:
        """Tick indices ``0 .. n_ticks - 1``."""
        return np.arange(self.n_ticks, dtype=np.int64)

    @property
    def t_s(self) -> NDArray[np.float64]:
        """Tick times in seconds: the frame each tick's level was read at, divided by the rate.

        This is the time a page measures (``currentTime``, or the frame its
        read belongs to, over ``sampleRate``), so the replay's times and the
        page clock's are one clock (see the module notes).
        """
        return frame_times_s(self.frames, self.sample_rate_hz)

    @property
    def tick_s(self) -> float:
        """The tick period in seconds, as a float."""
        return float(self.ticks.period_s)


# The most frames the engine takes at once (a longer block is cut): its work
# arrays stay small, and the grid's prefix sums stay exact (clock.core.level_metrics.GridSums).
_MAX_PIECE_FRAMES = 1 << 18


@dataclass(frozen=True, slots=True)
class LevelChunk:
    """Consecutive ticks of a trace, as :func:`iter_levels` yields them."""

    first_tick: int
    frames: NDArray[np.int64]
    level: NDArray[np.float64]


class _Engine:
    """Turns consecutive mono blocks (float32, or :class:`GridBlock`) into the ticks of one trace."""

    # The most ticks computed at once (a cadence far faster than the render quantum has many per block).
    _BATCH = 4096

    def __init__(self, sample_rate_hz: int, ticks: Ticks, metric: str, options: AnalyserOptions) -> None:
        self.rate = sample_rate_hz
        self.ticks = ticks
        self.func = metric_function(metric)
        self.options = options
        self.n = options.fft_size
        # buf[:n] holds frames [pos - n, pos); a block is copied in after them.
        # The buffer is reused from block to block (fresh large arrays each
        # block cost page faults).
        self.buf = np.zeros(self.n + RENDER_QUANTUM_FRAMES, dtype=np.float32)
        self.pos = 0
        self.next_tick = 0
        self.state: MetricState = Scratch() if self.func is rms_metric else None
        # 16-bit PCM's exact path, for the rms (the other metrics read its floats).
        self.grid = GridSums(self.n) if self.func is rms_metric else None

    def _last_tick(self, end: int, before_frame: int | None) -> int:
        """The last tick whose frame is at most ``end`` and, if given, whose time is before ``before_frame``.

        Exact integer arithmetic (see :meth:`Ticks.frames`); -1 when there is none.
        """
        period = self.ticks.period_s
        num, den = period.numerator * self.rate, period.denominator * RENDER_QUANTUM_FRAMES
        q = end // RENDER_QUANTUM_FRAMES  # the last quantum boundary at or before ``end``
        # ceil: ceil(k num / den) <= q, i.e. k num <= q den; floor: floor(k num / den) <= q, i.e. k num < (q + 1) den.
        last = q * den // num if self.ticks.align == "ceil" else ((q + 1) * den - 1) // num
        if before_frame is not None:
            # k * period < before_frame / rate
            last = min(last, (before_frame * period.denominator - 1) // (period.numerator * self.rate))
        return last

    def feed(self, block: Block, *, before_frame: int | None = None) -> Iterator[LevelChunk]:
        size = len(block)
        if size <= _MAX_PIECE_FRAMES:
            yield from self._feed(block, before_frame)
            return
        for at in range(0, size, _MAX_PIECE_FRAMES):
            cut = slice(at, at + _MAX_PIECE_FRAMES)
            piece = GridBlock(block.values[cut], block.exponent) if isinstance(block, GridBlock) else block[cut]
            yield from self._feed(piece, before_frame)

    def _feed(self, block: Block, before_frame: int | None) -> Iterator[LevelChunk]:
        n, size = self.n, len(block)
        end = self.pos + size
        if self.buf.size < n + size:  # grown to the largest block (at most a piece)
            grown = np.zeros(n + size, dtype=np.float32)
            grown[:n] = self.buf[:n]
            self.buf = grown
        buf = self.buf[: n + size]
        exact = False
        if isinstance(block, GridBlock) and self.grid is not None:
            exact = self.grid.push(block, buf[:n], self.pos, self.state)
        elif self.grid is not None:
            self.grid.invalidate()
        if not exact:
            buf[n:] = block.to_float32() if isinstance(block, GridBlock) else block
        last = self._last_tick(end, before_frame)
        while self.next_tick <= last:
            k = np.arange(self.next_tick, min(last + 1, self.next_tick + self._BATCH), dtype=np.int64)
            frames = self.ticks.frames(k, self.rate)
            if exact:
                assert self.grid is not None
                level = self.grid.levels(frames)
            else:
                # buf[0] is frame pos - n, so the window ending at F starts at F - pos.
                level, self.state = self.func(buf, frames - self.pos, self.state, self.options)
            yield LevelChunk(self.next_tick, frames, level)
            self.next_tick += frames.size
        if exact:  # the floats of the last n samples, for a block that leaves the grid
            tail = min(n, size)
            buf[-tail:] = GridBlock(block.values[-tail:], block.exponent).to_float32()  # type: ignore[union-attr]
        self.buf[:n] = buf[-n:]
        self.pos = end

    def finish(self) -> Iterator[LevelChunk]:
        """The ticks whose time is inside the recording but whose window runs past its end.

        The frames after the last sample read as zero (the analyser's next
        quanta are silent). With ``align="ceil"`` such a tick's frame is less
        than one render quantum past its time, so one quantum of zeros holds
        every such window's end.
        """
        end = self.pos
        yield from self.feed(np.zeros(RENDER_QUANTUM_FRAMES, np.float32), before_frame=end)


def _checked_blocks(blocks: Iterable[Block], sample_rate_hz: int) -> Iterator[Block]:
    if int(sample_rate_hz) != sample_rate_hz or sample_rate_hz <= 0:
        raise InvalidParameterError(f"sample rate must be a positive integer, got {sample_rate_hz!r}")
    pos = 0
    for block in blocks:
        if isinstance(block, GridBlock):  # integers: finite
            pos += block.size
            yield block
            continue
        block = np.asarray(block)
        if block.ndim != 1:
            raise InvalidSignalError(f"blocks must be 1-D (mono), got shape {block.shape}")
        block = block.astype(np.float32, copy=False)
        if not (np.isfinite(block.min(initial=0.0)) and np.isfinite(block.max(initial=0.0))):  # NaN reaches both
            at = pos + int(np.flatnonzero(~np.isfinite(block))[0])
            raise InvalidSignalError(f"non-finite sample (NaN or infinity) at frame {at} ({at / sample_rate_hz:.3f} s)")
        pos += block.size
        yield block


def iter_levels(
    blocks: Iterable[Block],
    sample_rate_hz: int,
    *,
    ticks: Ticks | None = None,
    metric: str = "rms",
    options: AnalyserOptions | None = None,
) -> Iterator[LevelChunk]:
    """Compute a level trace block by block (memory independent of length).

    Parameters
    ----------
    blocks : iterable of (ndarray of float32, or GridBlock)
        Consecutive mono blocks (e.g. :func:`clock.io.decode.iter_blocks`);
        16-bit PCM as a :class:`GridBlock` takes the exact integer path for
        ``rms``, with the same result, bit for bit.
    sample_rate_hz : int
        The rate of the samples (the ``AudioContext``'s rate).
    ticks : Ticks, optional
        The polling cadence (default: 1/60 s, ceil).
    metric : {"rms", "peak", "byte-mean", "max-db"}
    options : AnalyserOptions, optional

    Yields
    ------
    LevelChunk
        The ticks whose frame falls within the samples seen so far.

    Raises
    ------
    InvalidSignalError
        A block holds a NaN or infinity, or is not 1-D.
    InvalidParameterError
        Unknown metric, or a rate that is not a positive integer.
    """
    engine = _Engine(int(sample_rate_hz), ticks or Ticks(), metric, options or AnalyserOptions())
    for block in _checked_blocks(blocks, sample_rate_hz):
        yield from engine.feed(block)
    yield from engine.finish()


def iter_multi_levels(
    samples: Block | Iterable[Block],
    sample_rate_hz: int,
    *,
    ticks: Sequence[Ticks],
    metric: str = "rms",
    options: AnalyserOptions | None = None,
) -> Iterator[tuple[int, LevelChunk]]:
    """Several level traces of one signal at different cadences, in one pass, chunk by chunk.

    Yields
    ------
    (int, LevelChunk)
        The index of the cadence in ``ticks``, and its next ticks.
    """
    options = options or AnalyserOptions()
    engines = [_Engine(int(sample_rate_hz), t, metric, options) for t in ticks]
    blocks = [samples] if isinstance(samples, (np.ndarray, GridBlock)) else samples
    for block in _checked_blocks(blocks, sample_rate_hz):
        for i, engine in enumerate(engines):
            for chunk in engine.feed(block):
                yield i, chunk
    for i, engine in enumerate(engines):
        for chunk in engine.finish():
            yield i, chunk


def trace_of(
    chunks: Iterable[LevelChunk],
    sample_rate_hz: int,
    ticks: Ticks,
    metric: str = "rms",
    options: AnalyserOptions | None = None,
) -> LevelTrace:
    """A level trace from its consecutive chunks."""
    parts = list(chunks)
    frames = np.concatenate([c.frames for c in parts]) if parts else np.zeros(0, np.int64)
    level = np.concatenate([c.level for c in parts]) if parts else np.zeros(0, np.float64)
    return LevelTrace(frames, level, int(sample_rate_hz), ticks, metric, options or AnalyserOptions())


def trace_of_levels(
    level: NDArray[np.float64],
    sample_rate_hz: int,
    ticks: Ticks,
    metric: str = "rms",
    options: AnalyserOptions | None = None,
) -> LevelTrace:
    """A level trace from the levels of its ticks from tick 0 (their frames are the ticks').

    The same trace as :func:`trace_of` of its chunks, in less memory on a
    long recording: the frames need not be kept while decoding.
    """
    frames = np.empty(level.size, np.int64)
    for at in range(0, level.size, 1 << 16):  # as each chunk's were, a few at a time
        k = np.arange(at, min(at + (1 << 16), level.size), dtype=np.int64)
        frames[at : at + k.size] = ticks.frames(k, int(sample_rate_hz))
    return LevelTrace(frames, level, int(sample_rate_hz), ticks, metric, options or AnalyserOptions())


def multi_levels(
    samples: Block | Iterable[Block],
    sample_rate_hz: int,
    *,
    ticks: Sequence[Ticks],
    metric: str = "rms",
    options: AnalyserOptions | None = None,
) -> list[LevelTrace]:
    """Several level traces of one signal at different cadences, in one pass.

    Used to see a recording both at the clock's cadence and at render-quantum
    resolution (``Ticks.every_frames(128, rate)``) while decoding it once.

    Returns
    -------
    list of LevelTrace
        One per entry of ``ticks``, in order.
    """
    options = options or AnalyserOptions()
    parts: list[list[LevelChunk]] = [[] for _ in ticks]
    for i, chunk in iter_multi_levels(samples, sample_rate_hz, ticks=ticks, metric=metric, options=options):
        parts[i].append(chunk)
    return [trace_of(chunks, sample_rate_hz, t, metric, options) for t, chunks in zip(ticks, parts)]


def levels(
    samples: Block | Iterable[Block],
    sample_rate_hz: int,
    *,
    ticks: Ticks | None = None,
    metric: str = "rms",
    options: AnalyserOptions | None = None,
) -> LevelTrace:
    """The level trace of a mono signal (an array, or an iterable of blocks).

    Parameters
    ----------
    samples : ndarray of float32, shape (n,), GridBlock, or an iterable of such blocks
    sample_rate_hz : int
    ticks : Ticks, optional
        Default: every 1/60 s, ceil alignment.
    metric : {"rms", "peak", "byte-mean", "max-db"}
    options : AnalyserOptions, optional
        Default: fftSize 2048, smoothing 0.8, -100..-30 dB.

    Returns
    -------
    LevelTrace

    Raises
    ------
    InvalidSignalError
        A NaN or infinite sample (the message gives its frame and time).
    InvalidParameterError
        Unknown metric, or a rate that is not a positive integer.

    Examples
    --------
    >>> x = np.zeros(4800, np.float32); x[2000:] = 0.5
    >>> trace = levels(x, 48000, options=AnalyserOptions(fft_size=256))
    >>> trace.frames[:4].tolist(), trace.level[:4].tolist()
    ([0, 896, 1664, 2432], [0.0, 0.0, 0.0, 0.5])
    """
    return multi_levels(samples, sample_rate_hz, ticks=[ticks or Ticks()], metric=metric, options=options)[0]


@dataclass(frozen=True, slots=True)
class SignalSummary:
    """Whole-recording statistics of a mono signal.

    Attributes
    ----------
    n_frames : int
    sample_rate_hz : int
    exact_zero_share : float
        Share of samples that are exactly 0.0 (digital silence).
    peak : float
        Largest ``|x|``.
    rms : float
        Root mean square over the whole signal.
    """

    n_frames: int
    sample_rate_hz: int
    exact_zero_share: float
    peak: float
    rms: float

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.n_frames / self.sample_rate_hz

    @property
    def peak_dbfs(self) -> float:
        """Peak in dB relative to full scale (1.0); -inf for silence."""
        return _dbfs(self.peak)

    @property
    def rms_dbfs(self) -> float:
        """RMS in dB relative to full scale (1.0); -inf for silence."""
        return _dbfs(self.rms)


def _dbfs(value: float) -> float:
    return float("-inf") if value <= 0 else 20.0 * float(np.log10(value))


def summarize(blocks: Iterable[NDArray[np.float32]], sample_rate_hz: int) -> SignalSummary:
    """Exact-zero share, peak and RMS of a signal given block by block."""
    n = zeros = 0
    peak = 0.0
    energy = 0.0
    for block in blocks:
        block = np.asarray(block, dtype=np.float32)
        n += block.size
        zeros += int(np.count_nonzero(block == 0.0))
        if block.size:
            peak = max(peak, float(np.abs(block).max()))
            energy += float(np.dot(block.astype(np.float64), block.astype(np.float64)))
    rms = float(np.sqrt(energy / n)) if n else 0.0
    return SignalSummary(n, int(sample_rate_hz), zeros / n if n else 0.0, peak, rms)


class LevelStream:
    """:func:`iter_levels` pushed block by block: :meth:`feed` each block, then :meth:`finish`.

    For a caller that computes several traces from one pass over the samples
    (``speechclock stress`` changes one decode many ways); the ticks are the
    ones :func:`iter_levels` gives for the same samples, bit for bit, however
    they are split into blocks.

    Parameters
    ----------
    sample_rate_hz : int
    ticks : Ticks, optional
    metric : {"rms", "peak", "byte-mean", "max-db"}
    options : AnalyserOptions, optional
    """

    def __init__(
        self,
        sample_rate_hz: int,
        *,
        ticks: Ticks | None = None,
        metric: str = "rms",
        options: AnalyserOptions | None = None,
    ) -> None:
        self._rate = int(sample_rate_hz)
        self._engine = _Engine(self._rate, ticks or Ticks(), metric, options or AnalyserOptions())

    def feed(self, block: Block) -> list[LevelChunk]:
        """The ticks that ``block`` (the next samples) completes."""
        out: list[LevelChunk] = []
        for checked in _checked_blocks([block], self._rate):
            out += self._engine.feed(checked)
        return out

    def finish(self) -> list[LevelChunk]:
        """The last ticks (those whose window runs past the end)."""
        return list(self._engine.finish())
