"""Level traces: the level a page's clock reads from its analyser at each tick.

Pure numpy: no file access, no command line, no plotting.

Ticks and frames
----------------
Tick ``k`` (k = 0, 1, 2, ...) happens at time ``k * period_s``. The analyser
data a read sees ends on a render-quantum boundary (128 frames), so the tick
is mapped to the frame

* ``F_k = ceil(k * period_s * rate / 128) * 128`` (``align="ceil"``, the rule
  ``OfflineAudioContext.suspend`` follows: the first boundary at or after the
  tick time), or
* ``F_k = floor(k * period_s * rate / 128) * 128`` (``align="floor"``: the last
  boundary a real-time context has finished rendering).

The arithmetic is exact (the period is a :class:`fractions.Fraction`), so
frame positions never drift: at 48 kHz with a period of 1/60 s, tick 4 lands
on frame 3200.

**A tick's time is its frame divided by the rate** (``F_k / rate``, one
float64 division), not ``k * period_s``: that is the time a page can measure
(the frame its analyser read belongs to, over ``sampleRate``), and the time
``speechclock.js`` decides at. At 48 kHz and 1/60 s, tick 1 is at 896 / 48000
s (0.018667 s), not 1/60 s; quiet times are differences of such times, so 150
ticks after a last word span 119,936 or 120,064 frames depending on the last
word's tick (up to 2.7 ms either side of 2.5 s). A trace holds every tick whose frame lies within the recording
(``F_k <= n_frames``), and every tick whose nominal time lies inside it
(``k * period_s < duration``, strictly) though its frame does not: the window
of such a tick runs past the last sample, and those frames read as zero, as
the analyser's next render quanta would be silent once the audio has ended.
A tick whose nominal time is exactly the duration is held only when its frame
is within the recording (2.0 s at 48 kHz: tick 120, frame 96000; at 44.1 kHz
tick 120's frame, 88320, lies past the 88200th, and the trace ends at tick
119).

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

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError, InvalidSignalError
from .analyser import (
    GRID_MAX_ABS,
    RENDER_QUANTUM_FRAMES,
    AnalyserOptions,
    GridBlock,
    byte_frequency_data,
    decibels,
    fft_magnitudes,
    peak_of_windows,
    rms_of_windows,
    rms_tile,
    smooth_magnitudes,
    sums_in_order,
)

__all__ = [
    "DEFAULT_TICK_S",
    "Block",
    "GridBlock",
    "frame_times_s",
    "METRICS",
    "LevelTrace",
    "SignalSummary",
    "Ticks",
    "LevelChunk",
    "LevelStream",
    "iter_levels",
    "iter_multi_levels",
    "levels",
    "multi_levels",
    "parse_period",
    "summarize",
    "trace_of",
    "trace_of_levels",
]

#: The page clock polls its analyser on a timer (speechclock.js: setInterval), 60 times a second by default.
DEFAULT_TICK_S = Fraction(1, 60)

METRICS = ("rms", "peak", "byte-mean", "max-db")

Align = Literal["ceil", "floor"]

#: What the level engine takes: mono float32 samples, or 16-bit PCM's exact integers.
Block = NDArray[np.float32] | GridBlock


# A period as Fraction reads it (a ratio, or a decimal with an exponent), with
# the exponent kept small: Fraction("1e999999999") would compute 10**999999999.
_PERIOD_TEXT = re.compile(r"\s*[+-]?(?:\d+\s*/\s*\d+|(?:\d+\.?\d*|\.\d+)(?:[eE](?P<exp>[+-]?\d+))?)\s*")
_MAX_PERIOD_TEXT = 64
_MAX_EXPONENT = 400


def parse_period(text: str | float | Fraction) -> Fraction:
    """Parse a tick period in seconds exactly: ``"1/60"``, ``"0.05"``, ``1``.

    A decimal string is taken at its written value (``"0.1"`` is exactly
    1/10); a float is taken at its exact binary value. A string holds at
    most 64 characters and an exponent of at most 400.

    Raises
    ------
    InvalidParameterError
        Not a number, or not > 0.
    """
    bad = InvalidParameterError(f"tick period must be a number of seconds like 1/60 or 0.05, got {text!r:.40}")
    if isinstance(text, str):
        m = _PERIOD_TEXT.fullmatch(text) if len(text) <= _MAX_PERIOD_TEXT else None
        if m is None or (m["exp"] is not None and abs(int(m["exp"])) > _MAX_EXPONENT):
            raise bad
    try:
        value = Fraction(text) if not isinstance(text, str) else Fraction(text.strip().replace(" ", ""))
    except (ValueError, ZeroDivisionError, TypeError, OverflowError):
        raise bad from None
    if value <= 0:
        raise InvalidParameterError(f"tick period must be > 0 s, got {text!r:.40}")
    return value


@dataclass(frozen=True, slots=True)
class Ticks:
    """A polling cadence: tick ``k`` at ``k * period_s``, read at a quantum boundary.

    Parameters
    ----------
    period_s : Fraction
        Seconds between ticks (exact).
    align : {"ceil", "floor"}
        Which render-quantum boundary a tick reads (see the module notes).
    """

    period_s: Fraction = DEFAULT_TICK_S
    align: Align = "ceil"

    def __post_init__(self) -> None:
        if not isinstance(self.period_s, Fraction):
            object.__setattr__(self, "period_s", parse_period(self.period_s))
        elif self.period_s <= 0:
            raise InvalidParameterError(f"tick period must be > 0 s, got {self.period_s}")
        if self.align not in ("ceil", "floor"):
            raise InvalidParameterError(f"align must be 'ceil' or 'floor', got {self.align!r}")

    @classmethod
    def every_frames(cls, n_frames: int, sample_rate_hz: int, *, align: Align = "ceil") -> Ticks:
        """A cadence of one tick every ``n_frames`` frames at ``sample_rate_hz``."""
        if n_frames < 1:
            raise InvalidParameterError(f"tick frames must be >= 1, got {n_frames}")
        return cls(Fraction(n_frames, sample_rate_hz), align)

    def frames(self, k: NDArray[np.int64], sample_rate_hz: int) -> NDArray[np.int64]:
        """Frame positions ``F_k`` of ticks ``k`` (exact integer arithmetic)."""
        k = np.asarray(k, dtype=np.int64)
        num = self.period_s.numerator * sample_rate_hz
        den = self.period_s.denominator * RENDER_QUANTUM_FRAMES
        k_max = int(k.max()) if k.size else 0
        if max(k_max * num, num, den) >= 2**62:
            # Would overflow int64: exact Python integers instead.
            q = [(-(-int(i) * num // den) if self.align == "ceil" else int(i) * num // den) for i in k]
            return np.asarray(q, dtype=np.int64) * RENDER_QUANTUM_FRAMES
        # In place on one array: a trace of hours holds millions of ticks.
        out = k * num
        if self.align == "ceil":
            np.negative(out, out=out)
            np.floor_divide(out, den, out=out)
            np.negative(out, out=out)
        else:
            np.floor_divide(out, den, out=out)
        out *= RENDER_QUANTUM_FRAMES
        return out

    def time_s(self, k: NDArray[np.int64]) -> NDArray[np.float64]:
        """Nominal tick times ``k * period_s`` in seconds (rounded once to float64).

        Not the time a tick decides at: that is its frame over the rate
        (:attr:`LevelTrace.t_s`, :func:`frame_times_s`).
        """
        k = np.asarray(k, dtype=np.int64)
        return k * self.period_s.numerator / self.period_s.denominator


def frame_times_s(frames: NDArray[np.int64], sample_rate_hz: int) -> NDArray[np.float64]:
    """The time of each frame in seconds, ``frame / rate`` (one float64 division, as JavaScript's).

    The time of a tick everywhere: in the replay, in ``speechclock.js``
    (``frame / sampleRate``) and in every number the tool prints.
    """
    return np.asarray(frames, dtype=np.int64) / float(sample_rate_hz)


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


# A metric maps (buffer, window starts, state, options) to (levels, state). The
# window of a tick is ``buffer[start : start + fft_size]``; state is the
# analyser's smoothed magnitudes for the frequency metrics, the reused work
# arrays for rms, None for peak.
_State = Any
_Metric = Callable[
    [NDArray[np.float32], NDArray[np.int64], _State, AnalyserOptions], tuple[NDArray[np.float64], _State]
]

# The most frames the engine takes at once (a longer block is cut): its work
# arrays stay small, and the grid's prefix sums stay exact (below, _GridSums).
_MAX_PIECE_FRAMES = 1 << 18


def _windows(buf: NDArray[np.float32], starts: NDArray[np.int64], n: int) -> NDArray[np.float32]:
    return np.lib.stride_tricks.sliding_window_view(buf, n)[starts]


def _granule(n: int) -> int:
    """Windows of ``n`` frames that end on render-quantum boundaries start on multiples of this."""
    return min(RENDER_QUANTUM_FRAMES, n)


def _granule_offset(starts: NDArray[np.int64], g: int) -> int | None:
    """The offset of every start past a multiple of ``g`` (None when they differ; never for ticks)."""
    off = int(starts[0] % g) if starts.size else 0
    return off if np.all(starts % g == off) else None


class _Scratch:
    """Work arrays the RMS reuses from block to block.

    Fresh temporaries of a block's size on every block make the C allocator
    map and unmap memory each time (hundreds of thousands of page faults an
    hour); reused ones cost nothing after the first block.
    """

    def __init__(self) -> None:
        self.arrays: dict[str, NDArray[Any]] = {}

    def take(self, name: str, shape: tuple[int, ...], dtype: Any) -> NDArray[Any]:
        size = math.prod(shape)
        have = self.arrays.get(name)
        if have is None or have.size < size:
            have = self.arrays[name] = np.empty(size, dtype)
        return have[:size].reshape(shape)


def _rms(buf, starts, state, options):  # type: ignore[no-untyped-def]
    """The page's loop over each window (:func:`~clock.core.analyser.rms_of_windows`), one tile at a time.

    A window ending on a quantum boundary is whole granules (:func:`_granule`)
    of the buffer, so a tile of windows is gathered granule by granule and
    squared into the (frames, windows) order :func:`sums_in_order` adds in,
    without copying each window first.
    """
    n = options.fft_size
    scratch = state if isinstance(state, _Scratch) else _Scratch()
    g = _granule(n)
    off = _granule_offset(starts, g)
    if off is None:
        return rms_of_windows(_windows(buf, starts, n)), scratch
    granules = buf[off : off + (buf.size - off) // g * g].reshape(-1, g)
    k = n // g
    step = rms_tile(n)
    first = (starts - off) // g
    total = np.empty(starts.size)
    each = np.arange(k)[:, None]
    for at in range(0, starts.size, step):
        tile = first[at : at + step]
        gathered = np.take(granules, each + tile, axis=0, out=scratch.take("gathered", (k, tile.size, g), np.float32))
        squares = scratch.take("squares", (k, g, tile.size), np.float64)
        np.multiply(gathered.transpose(0, 2, 1), gathered.transpose(0, 2, 1), out=squares, dtype=np.float64)
        total[at : at + tile.size] = sums_in_order(squares.reshape(n, tile.size))
    return np.sqrt(total / n), scratch


class _GridSums:
    """The RMS of windows of 16-bit PCM (:class:`GridBlock`) from exact prefix sums of integer squares.

    Bit-identical to the page's loop (see :func:`~clock.core.analyser.downmix_pcm16`):
    every window sum is an integer ``S`` below ``2**49`` times
    ``2**(-2 * exponent)``, which the loop reaches without rounding. Here the
    squares are summed per granule (``g`` frames, every window is whole
    granules: :func:`_granule`), a few thousand samples at a time so they stay
    in cache; ``S`` is a difference of prefix sums of the granule sums, all
    integers held exactly in float64 (one block's granules and the ``n / g``
    before them sum to below ``(2**18 + 2**15 + g) * 2**34 < 2**53``), and the
    level is ``sqrt(S * 2**(-2 * exponent) / n)``, the loop's last two
    operations.

    Keeps, between blocks, the sums of the last ``n / g`` whole granules (the
    windows reach back into them) and the samples of the granule not yet
    whole, as long as the blocks stay on one grid.
    """

    # Samples squared and summed at once: 128 KB of float64.
    _CHUNK = 1 << 14

    def __init__(self, n: int) -> None:
        self.n, self.g, self.k = n, _granule(n), n // _granule(n)
        # Granules j * g .. (j + 1) * g; before frame 0 everything is zero.
        self.sums: NDArray[np.float64] | None = np.zeros(self.k)  # granules [whole - k, whole)
        self.carry = np.zeros(0)  # the samples of granule ``whole`` so far
        self.whole = 0
        self.exponent: int | None = None
        self.base = 0  # the granule prefix[0] starts at
        self.prefix = np.zeros(1)

    def push(self, block: GridBlock, floats: NDArray[np.float32], pos: int, scratch: _Scratch) -> bool:
        """Take the block that starts at frame ``pos``; False when it cannot be summed on its grid.

        ``floats`` are the ``n`` samples before ``pos``: where the sums start
        again after float blocks or a change of grid, if they are on it.
        """
        e = block.exponent
        if self.sums is None or self.exponent not in (None, e):
            if not self._restart(floats, pos, e):
                return False
        g, values = self.g, block.values
        assert self.sums is not None
        sums: list[NDArray[np.float64]] = [self.sums]
        at = 0
        if self.carry.size:  # the granule the last block left open
            at = min(g - self.carry.size, values.size)
            self.carry = np.concatenate([self.carry, values[:at]])
            if self.carry.size == g:
                sums.append(np.array([np.dot(self.carry, self.carry)]))
                self.carry = np.zeros(0)
        stop = at + (values.size - at) // g * g
        for start in range(at, stop, self._CHUNK):
            part = scratch.take("grid", (min(self._CHUNK, stop - start),), np.float64)
            part[:] = values[start : start + part.size]  # exact: integers below 2**17
            rows = part.reshape(-1, g)
            sums.append(np.einsum("ij,ij->i", rows, rows))  # exact: integers below 2**41, in any order
        if stop < values.size:
            self.carry = values[stop:].astype(np.float64)
        granules = np.concatenate(sums)
        self.base = self.whole - self.k
        self.whole += granules.size - self.k
        self.prefix = np.zeros(granules.size + 1)
        np.cumsum(granules, out=self.prefix[1:])
        self.sums, self.exponent = granules[-self.k :].copy(), e
        return True

    def _restart(self, floats: NDArray[np.float32], pos: int, e: int) -> bool:
        """The sums from the ``n`` float samples before ``pos``, if they are on the grid ``2**-e``."""
        ints = floats.astype(np.float64) * 2.0**e
        if not np.array_equal(np.rint(ints), ints) or np.abs(ints).max(initial=0.0) > GRID_MAX_ABS:
            self.sums = None
            return False
        n, g, k = self.n, self.g, self.k
        c = pos % g
        self.whole = pos // g
        whole = ints[g - c : n - c].reshape(k - 1, g)  # granules whole - k + 1 .. whole - 1
        # Granule whole - k is only partly in view; no window of a later tick reaches it.
        self.sums = np.concatenate([[0.0], np.einsum("ij,ij->i", whole, whole)])
        self.carry = ints[n - c :]
        return True

    def invalidate(self) -> None:
        """A float block came: the sums start again from the floats at the next grid block."""
        self.sums = None

    def levels(self, frames: NDArray[np.int64]) -> NDArray[np.float64]:
        """The level of the window ending at each of ``frames`` (multiples of the granule, as ticks are)."""
        n, g = self.n, self.g
        last = frames // g - self.base
        total = (self.prefix[last] - self.prefix[last - self.k]) * 2.0 ** (-2 * self.exponent)  # type: ignore[operator]
        return np.sqrt(total / n)


def _peak(buf, starts, state, options):  # type: ignore[no-untyped-def]
    return peak_of_windows(_windows(buf, starts, options.fft_size)), None


def _smoothed(buf, starts, state, options):  # type: ignore[no-untyped-def]
    prev = np.zeros(options.fft_size // 2, np.float32) if state is None else state
    return smooth_magnitudes(
        fft_magnitudes(_windows(buf, starts, options.fft_size)),
        prev,
        smoothing_time_constant=options.smoothing_time_constant,
    )


def _max_db(buf, starts, state, options):  # type: ignore[no-untyped-def]
    smoothed = _smoothed(buf, starts, state, options)
    return decibels(smoothed).max(axis=1).astype(np.float64), smoothed[-1]


def _byte_mean(buf, starts, state, options):  # type: ignore[no-untyped-def]
    smoothed = _smoothed(buf, starts, state, options)
    data = byte_frequency_data(decibels(smoothed), min_decibels=options.min_decibels, max_decibels=options.max_decibels)
    return data.mean(axis=1, dtype=np.float64), smoothed[-1]


_METRIC_FUNCS: dict[str, _Metric] = {"rms": _rms, "peak": _peak, "byte-mean": _byte_mean, "max-db": _max_db}


def _check_metric(metric: str) -> _Metric:
    try:
        return _METRIC_FUNCS[metric]
    except KeyError:
        raise InvalidParameterError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}") from None


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
        self.func = _check_metric(metric)
        self.options = options
        self.n = options.fft_size
        # buf[:n] holds frames [pos - n, pos); a block is copied in after them.
        # The buffer is reused from block to block (fresh large arrays each
        # block cost page faults).
        self.buf = np.zeros(self.n + RENDER_QUANTUM_FRAMES, dtype=np.float32)
        self.pos = 0
        self.next_tick = 0
        self.state: _State = _Scratch() if self.func is _rms else None
        # 16-bit PCM's exact path, for the rms (the other metrics read its floats).
        self.grid = _GridSums(self.n) if self.func is _rms else None

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
