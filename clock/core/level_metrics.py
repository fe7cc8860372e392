"""The level metrics over the analyser's windows, as the level engine computes them tick by tick.

``rms`` is the page's loop over each window, gathered a tile at a time, and,
for 16-bit PCM (:class:`~clock.core.analyser.GridBlock`), the same sums from
exact integer prefix sums (:class:`GridSums`); ``peak`` is the largest
``|x|``; ``byte-mean`` and ``max-db`` read the smoothed spectrum. See
:mod:`clock.core.levels` for what each metric is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
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

__all__ = ["METRICS", "GridSums", "Metric", "MetricState", "Scratch", "metric_function", "rms_metric"]

METRICS = ("rms", "peak", "byte-mean", "max-db")

# A metric maps (buffer, window starts, state, options) to (levels, state). The
# window of a tick is ``buffer[start : start + fft_size]``; state is the
# analyser's smoothed magnitudes for the frequency metrics, the reused work
# arrays for rms, None for peak.
MetricState = Any
Metric = Callable[
    [NDArray[np.float32], NDArray[np.int64], MetricState, AnalyserOptions], tuple[NDArray[np.float64], MetricState]
]


def _windows(buf: NDArray[np.float32], starts: NDArray[np.int64], n: int) -> NDArray[np.float32]:
    return np.lib.stride_tricks.sliding_window_view(buf, n)[starts]


def _granule(n: int) -> int:
    """Windows of ``n`` frames that end on render-quantum boundaries start on multiples of this."""
    return min(RENDER_QUANTUM_FRAMES, n)


def _granule_offset(starts: NDArray[np.int64], g: int) -> int | None:
    """The offset of every start past a multiple of ``g`` (None when they differ; never for ticks)."""
    off = int(starts[0] % g) if starts.size else 0
    return off if np.all(starts % g == off) else None


class Scratch:
    """Work arrays the RMS reuses from block to block.

    Fresh temporaries of a block's size on every block make the C allocator
    map and unmap memory each time (hundreds of thousands of page faults an
    hour); reused ones cost nothing after the first block.
    """

    def __init__(self) -> None:
        self.arrays: dict[str, NDArray[Any]] = {}

    def take(self, name: str, shape: tuple[int, ...], dtype: Any) -> NDArray[Any]:
        """A work array of ``shape`` and ``dtype`` under ``name``: the kept one, grown when too small."""
        size = math.prod(shape)
        have = self.arrays.get(name)
        if have is None or have.size < size:
            have = self.arrays[name] = np.empty(size, dtype)
        return have[:size].reshape(shape)


def rms_metric(buf, starts, state, options):  # type: ignore[no-untyped-def]
    """The page's loop over each window (:func:`~clock.core.analyser.rms_of_windows`), one tile at a time.

    A window ending on a quantum boundary is whole granules (:func:`_granule`)
    of the buffer, so a tile of windows is gathered granule by granule and
    squared into the (frames, windows) order :func:`sums_in_order` adds in,
    without copying each window first.
    """
    n = options.fft_size
    scratch = state if isinstance(state, Scratch) else Scratch()
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


class GridSums:
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

    def push(self, block: GridBlock, floats: NDArray[np.float32], pos: int, scratch: Scratch) -> bool:
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


_METRIC_FUNCS: dict[str, Metric] = {"rms": rms_metric, "peak": _peak, "byte-mean": _byte_mean, "max-db": _max_db}


def metric_function(metric: str) -> Metric:
    """The function that computes ``metric`` (one of :data:`METRICS`).

    Raises
    ------
    InvalidParameterError
        Unknown metric.
    """
    try:
        return _METRIC_FUNCS[metric]
    except KeyError:
        raise InvalidParameterError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}") from None
