"""Emulation of the Web Audio ``AnalyserNode``, as Chromium computes it.

Pure numpy: no file access, no command line, no plotting.

What is exact and what is not
-----------------------------
* **Time-domain data** (``getFloatTimeDomainData``, ``getByteTimeDomainData``)
  is bit-exact: the browser copies float32 samples out of a ring buffer, and
  the byte conversion is ``trunc(clamp(f32(128 * f32(1 + x)), 0, 255))``.
* **Down-mixing** to mono follows the spec's "speakers" rules in float32, in
  the order Chromium's ``AudioBus::SumFrom`` adds the channels; bit-exact.
* **Frequency data** follows Chromium's ``RealtimeAnalyser::DoFFTAnalysis``
  step by step (float32 window product, magnitudes in double, smoothing in
  double rounded to float32 once per read, ``20 * log10f``), but the FFT is
  numpy's, not Chromium's PFFFT, so float values agree to float32 rounding
  (relative error around 1e-6), not to the bit, and a byte value can differ
  by one where the exact value sits on an integer boundary.

Frame positions
---------------
A read at frame position ``F`` sees the frames ``[F - fft_size, F)`` of the
mono signal, with zeros before frame 0 (the ring buffer starts zeroed). In a
browser ``F`` is always a multiple of the render quantum (128 frames); the
functions here accept any ``F >= 0`` so they can also be used between quanta.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidParameterError, InvalidSignalError

__all__ = [
    "RENDER_QUANTUM_FRAMES",
    "GRID_MAX_ABS",
    "Analyser",
    "AnalyserOptions",
    "GridBlock",
    "blackman_window",
    "byte_frequency_data",
    "byte_time_domain_data",
    "decibels",
    "downmix_pcm16",
    "downmix_to_mono",
    "fft_magnitudes",
    "peak_of_windows",
    "rms_of_windows",
    "rms_tile",
    "smooth_magnitudes",
    "sums_in_order",
    "time_domain_windows",
]

#: Frames in one Web Audio render quantum (the default ``renderSizeHint``).
RENDER_QUANTUM_FRAMES = 128

_MIN_FFT_SIZE = 32
_MAX_FFT_SIZE = 32768
_SQRT_HALF = np.float32(np.sqrt(0.5))


@dataclass(frozen=True, slots=True)
class AnalyserOptions:
    """The settable attributes of an ``AnalyserNode``, validated as the browser does.

    Parameters
    ----------
    fft_size : int
        Power of two in ``[32, 32768]``; default 2048.
    smoothing_time_constant : float
        In ``[0, 1]``; default 0.8.
    min_decibels, max_decibels : float
        ``min_decibels < max_decibels``; defaults -100 and -30.

    Raises
    ------
    InvalidParameterError
        Where the browser throws ``IndexSizeError``.
    """

    fft_size: int = 2048
    smoothing_time_constant: float = 0.8
    min_decibels: float = -100.0
    max_decibels: float = -30.0

    def __post_init__(self) -> None:
        n = self.fft_size
        if (
            isinstance(n, bool)
            or not isinstance(n, (int, np.integer))
            or not _MIN_FFT_SIZE <= n <= _MAX_FFT_SIZE
            or n & (n - 1)
        ):
            raise InvalidParameterError(f"fft_size must be a power of two in [32, 32768], got {n!r}")
        tau = self.smoothing_time_constant
        if not (0.0 <= tau <= 1.0):
            raise InvalidParameterError(f"smoothing_time_constant must be in [0, 1], got {tau!r}")
        lo, hi = self.min_decibels, self.max_decibels
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise InvalidParameterError(f"min_decibels must be < max_decibels (both finite), got {lo!r} and {hi!r}")


def _as_float32_signal(samples: ArrayLike, name: str = "samples") -> NDArray[np.float32]:
    arr = np.asarray(samples)
    if arr.ndim != 1:
        raise InvalidSignalError(f"{name} must be 1-D (mono), got shape {arr.shape}")
    if arr.dtype != np.float32:
        if not np.issubdtype(arr.dtype, np.floating) and not np.issubdtype(arr.dtype, np.integer):
            raise InvalidSignalError(f"{name} must be numeric, got dtype {arr.dtype}")
        arr = arr.astype(np.float32)
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InvalidSignalError(f"{name} has a non-finite value at index {bad}")
    return arr


def downmix_to_mono(channels: ArrayLike) -> NDArray[np.float32]:
    """Down-mix ``(frames, channels)`` samples to mono by the Web Audio "speakers" rules.

    Parameters
    ----------
    channels : array_like, shape (n_frames, n_channels) or (n_frames,)
        Samples, time first (soundfile's layout). Converted to float32.

    Returns
    -------
    ndarray of float32, shape (n_frames,)

    Notes
    -----
    In float32, adding in Chromium's order (``AudioBus::SumFromByDownMixing``):

    1. one channel: copied;
    2. two: ``0.5*L + 0.5*R`` (bit-identical to ``(L + R) / 2``);
    3. four: ``0.25*L + 0.25*R + 0.25*SL + 0.25*SR``;
    4. six (5.1, order L R C LFE SL SR): ``sqrt(1/2)*L + sqrt(1/2)*R + C + 0.5*SL + 0.5*SR``;
    5. any other count: the spec's discrete rule, the first channel only.

    Examples
    --------
    >>> downmix_to_mono([[1.0, 0.0], [0.5, 0.5]]).tolist()
    [0.5, 0.5]
    """
    x = np.asarray(channels, dtype=np.float32)
    if x.ndim == 1:
        return x
    if x.ndim != 2:
        raise InvalidSignalError(f"samples must be (frames, channels), got shape {x.shape}")
    n_channels = x.shape[1]
    if n_channels == 1:
        return np.ascontiguousarray(x[:, 0])
    weights: list[tuple[int, np.float32 | None]]  # (channel, gain); None adds the channel as it is
    if n_channels == 2:
        weights = [(0, np.float32(0.5)), (1, np.float32(0.5))]
    elif n_channels == 4:
        weights = [(c, np.float32(0.25)) for c in range(4)]
    elif n_channels == 6:
        weights = [(0, _SQRT_HALF), (1, _SQRT_HALF), (2, None), (4, np.float32(0.5)), (5, np.float32(0.5))]
    else:
        return np.ascontiguousarray(x[:, 0])
    out = np.zeros(x.shape[0], dtype=np.float32)
    for channel, gain in weights:
        out += x[:, channel] if gain is None else gain * x[:, channel]
    return out


#: The largest magnitude of a :class:`GridBlock`'s integers (four 16-bit channels summed).
GRID_MAX_ABS = 2**17


@dataclass(frozen=True, slots=True)
class GridBlock:
    """Mono samples that are exact multiples of a power of two: sample ``i`` is ``values[i] * 2**-exponent``.

    16-bit PCM stays on such a grid through the down-mix (:func:`downmix_pcm16`),
    and there every level sum is exact whatever the order it is added in, so
    :mod:`clock.core.levels` computes the page's RMS from integer prefix sums
    instead of a loop per window (see :func:`downmix_pcm16` for why).

    Parameters
    ----------
    values : ndarray of int16 or int32, shape (n,)
        At most :data:`GRID_MAX_ABS` in magnitude (checked for int32).
    exponent : int
        In ``[0, 64]``.

    Raises
    ------
    InvalidSignalError
        Values of another type or shape, or larger than the bound.
    """

    values: NDArray[np.int16] | NDArray[np.int32]
    exponent: int

    def __post_init__(self) -> None:
        v = self.values
        if not isinstance(v, np.ndarray) or v.ndim != 1 or v.dtype not in (np.int16, np.int32):
            raise InvalidSignalError("grid values must be a 1-D int16 or int32 array")
        if not 0 <= self.exponent <= 64:
            raise InvalidParameterError(f"grid exponent must be in [0, 64], got {self.exponent!r}")
        if v.dtype == np.int32 and v.size and max(int(v.max()), -int(v.min())) > GRID_MAX_ABS:
            raise InvalidSignalError(f"grid values must be at most {GRID_MAX_ABS} in magnitude")

    def __len__(self) -> int:
        return int(self.values.shape[0])

    @property
    def size(self) -> int:
        """Number of samples."""
        return len(self)

    def to_float32(self) -> NDArray[np.float32]:
        """The samples (exact: the integers fit float32's 24 bits, and the scale is a power of two)."""
        return np.multiply(self.values, np.float32(2.0**-self.exponent), dtype=np.float32)


def downmix_pcm16(pcm: NDArray[np.int16]) -> GridBlock | None:
    """The down-mix of 16-bit PCM as exact integers, or None where it leaves the grid (5.1).

    ``pcm`` is ``(frames, channels)``; each sample reads ``v / 32768``. The
    result equals :func:`downmix_to_mono` of those floats, bit for bit:

    * mono, and the discrete rule (first channel): ``v * 2**-15``;
    * stereo: ``0.5*L`` is ``a * 2**-16`` and ``0.5*L + 0.5*R`` is
      ``(a + b) * 2**-16`` exactly in float32 (``|a + b| <= 2**16`` needs 17
      of float32's 24 bits, and no value is small enough to be denormal);
    * quad: every partial sum of ``0.25*x`` is ``m * 2**-17`` with
      ``|m| <= 2**17``, exact for the same reason;
    * 5.1 scales L and R by float32 ``sqrt(1/2)``, which rounds: None.

    Why the grid makes levels cheap: a square is ``m**2 * 2**(-2 * exponent)``
    with ``m**2 <= 2**34``, so every partial sum of a window of at most 32768
    samples (the largest ``fftSize``) is an integer below ``2**49`` times
    ``2**(-2 * exponent)``, exact in float64. The page's sequential float64
    loop therefore makes no rounding at all, and equals any other exact sum
    of the same integers, such as a difference of prefix sums.
    """
    n_channels = pcm.shape[1]
    if n_channels == 2:
        return GridBlock(pcm[:, 0].astype(np.int32) + pcm[:, 1], 16)
    if n_channels == 4:
        total = pcm[:, 0].astype(np.int32)
        for c in range(1, 4):
            total += pcm[:, c]
        return GridBlock(total, 17)
    if n_channels == 6:
        return None
    return GridBlock(np.ascontiguousarray(pcm[:, 0]), 15)


def time_domain_windows(
    samples: NDArray[np.float32], frames: ArrayLike, *, fft_size: int, offset_frames: int = 0
) -> NDArray[np.float32]:
    """What ``getFloatTimeDomainData`` returns at each frame position.

    Parameters
    ----------
    samples : ndarray of float32, shape (n,)
        Mono signal; ``samples[i]`` is frame ``offset_frames + i``.
    frames : array_like of int, shape (t,)
        Frame positions ``F``; each read sees frames ``[F - fft_size, F)``.
    fft_size : int
        Window length ``N``.
    offset_frames : int, optional
        Frame number of ``samples[0]``. Frames before ``offset_frames`` that a
        window reaches must not exist, i.e. ``offset_frames`` is 0 (zeros
        before the start) or the caller has kept ``fft_size`` frames of history.

    Returns
    -------
    ndarray of float32, shape (t, fft_size)
        Row ``k`` is the window for ``frames[k]``, oldest sample first.
    """
    f = np.asarray(frames, dtype=np.int64).reshape(-1)
    pad = np.zeros(fft_size, dtype=np.float32) if offset_frames == 0 else np.empty(0, np.float32)
    base = offset_frames - pad.size
    buf = np.concatenate([pad, samples]) if pad.size else samples
    starts = f - fft_size - base
    if f.size and (starts.min() < 0 or starts.max() + fft_size > buf.size):
        raise InvalidParameterError(
            f"frame positions must lie in [{offset_frames + fft_size - pad.size}, "
            f"{offset_frames + samples.size}], got {int(f.min())}..{int(f.max())}"
        )
    view = np.lib.stride_tricks.sliding_window_view(buf, fft_size)
    return view[starts]


def rms_of_windows(windows: NDArray[np.float32]) -> NDArray[np.float64]:
    """Root mean square of each row, as a page computes it in JavaScript.

    ``sum += x[i] * x[i]`` from the oldest sample to the newest in float64,
    then ``Math.sqrt(sum / N)``. Each square of a float32 is exact in float64;
    the sum is accumulated strictly in order (:func:`sums_in_order`), so the
    result is bit-identical to the JavaScript loop (numpy's pairwise ``sum``
    is not). A window of zeros gives exactly 0.0.

    Parameters
    ----------
    windows : ndarray of float32, shape (t, n)

    Returns
    -------
    ndarray of float64, shape (t,)
    """
    t, n = windows.shape
    total = np.empty(t, dtype=np.float64)
    step = rms_tile(n)
    tile = np.empty((n, step), dtype=np.float64)
    for start in range(0, t, step):
        rows = windows[start : start + step]
        cols = tile[:, : rows.shape[0]]
        np.multiply(rows.T, rows.T, out=cols, dtype=np.float64)  # exact: a float32 squared fits a float64
        total[start : start + rows.shape[0]] = sums_in_order(cols)
    return np.sqrt(total / n)


def rms_tile(n: int) -> int:
    """Windows of ``n`` samples summed at once: a tile of their squares (1 MB) stays in a core's cache."""
    return max(2, 131072 // n)


def _reduce_adds_in_order() -> bool:
    """Whether ``np.add.reduce(x, axis=0)`` of a C-ordered (n, t) float64 array, t >= 2, adds row by row.

    numpy sums pairwise only along the axis that is contiguous in memory (the
    note on ``numpy.sum``); along the outer axis it adds each row to the
    running sums in turn, which is the page's loop for every column. Checked
    once on the numbers where the two orders differ: 1 followed by halves of
    its last bit stays 1 in order, and grows when the halves are summed first.
    """
    col = np.full(64, 2.0**-53)
    col[0] = 1.0
    return bool(np.all(np.add.reduce(np.stack([col, col], axis=1), axis=0) == 1.0))


_REDUCE_IN_ORDER = _reduce_adds_in_order()


def sums_in_order(columns: NDArray[np.float64]) -> NDArray[np.float64]:
    """The sum of each column of a C-ordered (n, t) float64 array, adding its rows strictly in order.

    ``s = 0; s += x[0]; s += x[1]; ...`` per column, as a JavaScript loop
    adds: bit-identical to it, whatever the values. One pass of
    ``np.add.reduce`` over the outer axis (see :func:`_reduce_adds_in_order`);
    ``np.add.accumulate``, which is in order by definition, where that does
    not hold (a single column, or a numpy that sums otherwise).
    """
    if columns.shape[1] >= 2 and _REDUCE_IN_ORDER and columns.strides[1] == columns.itemsize:
        return np.add.reduce(columns, axis=0)
    return np.add.accumulate(columns, axis=0)[-1] if columns.shape[0] else np.zeros(columns.shape[1])


def peak_of_windows(windows: NDArray[np.float32]) -> NDArray[np.float64]:
    """Largest absolute sample of each row, as float64 (exact)."""
    return np.abs(windows).max(axis=1).astype(np.float64)


def byte_time_domain_data(samples: ArrayLike) -> NDArray[np.uint8]:
    """``getByteTimeDomainData``: ``trunc(clamp(f32(128 * f32(1 + x)), 0, 255))``.

    Computed in float32 as Chromium's C++ does, so a tiny negative ``x``
    rounds ``1 + x`` to 1.0 and gives 128, not 127.

    Examples
    --------
    >>> byte_time_domain_data([0.0, -1e-9, 1.0, -1.0, 2.0]).tolist()
    [128, 128, 255, 0, 255]
    """
    x = np.asarray(samples, dtype=np.float32)
    scaled = np.float32(128) * (x + np.float32(1))
    return np.trunc(np.clip(scaled.astype(np.float64), 0.0, 255.0)).astype(np.uint8)


def blackman_window(fft_size: int) -> NDArray[np.float32]:
    """Chromium's Blackman window: computed in double with denominator ``N``, stored as float32.

    ``w[n] = 0.42 - 0.5 cos(2 pi n/N) + 0.08 cos(4 pi n/N)``; ``w[0] = 0``
    and ``w[N/2] = 1``.
    """
    x = np.arange(fft_size, dtype=np.float64) / fft_size
    two_pi = 2.0 * np.pi
    w = 0.42 - 0.5 * np.cos(two_pi * x) + 0.08 * np.cos(two_pi * 2.0 * x)
    return w.astype(np.float32)


def fft_magnitudes(windows: NDArray[np.float32]) -> NDArray[np.float64]:
    """Unsmoothed magnitudes ``|X[k]| / N`` for ``k < N/2`` of each windowed row.

    The window product is a float32 multiply (as in Chromium); the real and
    imaginary parts are rounded to float32 (PFFFT's output type) before the
    magnitude is taken in double. The imaginary part of bin 0 is zero (where
    Chromium blows away the packed Nyquist term).
    """
    n = windows.shape[1]
    windowed = windows * blackman_window(n)
    spectrum = np.fft.rfft(windowed.astype(np.float64), axis=1)[:, : n // 2]
    re = spectrum.real.astype(np.float32).astype(np.float64)
    im = spectrum.imag.astype(np.float32).astype(np.float64)
    im[:, 0] = 0.0
    return np.hypot(re, im) * (1.0 / n)


def smooth_magnitudes(
    magnitudes: NDArray[np.float64],
    previous: NDArray[np.float32],
    *,
    smoothing_time_constant: float,
) -> NDArray[np.float32]:
    """Apply the per-read smoothing to successive reads.

    ``Xs = f32(tau * Xs_prev + (1 - tau) * |X|)`` in double, once per read
    (row), starting from ``previous``; a non-finite result becomes 0.

    Parameters
    ----------
    magnitudes : ndarray of float64, shape (t, n/2)
        One row per read, in read order.
    previous : ndarray of float32, shape (n/2,)
        The smoothed magnitudes before the first row (zeros for a new node).
    smoothing_time_constant : float
        ``tau`` in ``[0, 1]``.

    Returns
    -------
    ndarray of float32, shape (t, n/2)
        The smoothed magnitudes after each read; the last row is the new state.
    """
    k = float(np.clip(smoothing_time_constant, 0.0, 1.0))
    out = np.empty(magnitudes.shape, dtype=np.float32)
    state = previous
    for row in range(magnitudes.shape[0]):
        value = (k * state.astype(np.float64) + (1.0 - k) * magnitudes[row]).astype(np.float32)
        value[~np.isfinite(value)] = 0.0
        out[row] = state = value
    return out


def decibels(smoothed: NDArray[np.float32]) -> NDArray[np.float32]:
    """``getFloatFrequencyData``: ``20 * log10f(m)`` in float32; 0 gives -inf."""
    with np.errstate(divide="ignore"):
        return np.float32(20) * np.log10(np.asarray(smoothed, dtype=np.float32))


def byte_frequency_data(db: NDArray[np.float32], *, min_decibels: float, max_decibels: float) -> NDArray[np.uint8]:
    """``getByteFrequencyData`` from float dB values, as Chromium converts them.

    ``trunc(clamp(255 * (dB - min) * (1 / (max - min)), 0, 255))`` in double.
    Chromium multiplies by the reciprocal where the spec divides; the two can
    differ by one at an exact integer boundary. -inf gives 0.
    """
    scale = 1.0 / (max_decibels - min_decibels)
    scaled = 255.0 * (np.asarray(db, dtype=np.float64) - min_decibels) * scale
    return np.trunc(np.clip(scaled, 0.0, 255.0)).astype(np.uint8)


class Analyser:
    """A stateful emulator of one ``AnalyserNode`` fed with a known mono signal.

    The browser's node keeps smoothing state between frequency reads, so this
    object does too; everything else is delegated to the pure functions of
    this module. Reads must come in time order, as they do in a page.

    Parameters
    ----------
    samples : array_like, shape (n,)
        The mono float32 signal the node receives, frame 0 first.
    options : AnalyserOptions, optional
        The node's attributes.

    Examples
    --------
    >>> node = Analyser(np.ones(4096, np.float32), AnalyserOptions(fft_size=32))
    >>> node.get_float_time_domain_data(128)[:2].tolist()
    [1.0, 1.0]
    """

    def __init__(self, samples: ArrayLike, options: AnalyserOptions | None = None) -> None:
        self.samples = _as_float32_signal(samples)
        self.options = options or AnalyserOptions()
        self._smoothed = np.zeros(self.options.fft_size // 2, dtype=np.float32)
        self._last_analysis_frame = -1

    def _window(self, frame: int) -> NDArray[np.float32]:
        if not 0 <= frame <= self.samples.size:
            raise InvalidParameterError(f"frame must be in [0, {self.samples.size}], got {frame}")
        return time_domain_windows(self.samples, [frame], fft_size=self.options.fft_size)[0]

    def get_float_time_domain_data(self, frame: int) -> NDArray[np.float32]:
        """The ``fft_size`` frames before ``frame``, oldest first (a copy)."""
        return self._window(frame).copy()

    def get_byte_time_domain_data(self, frame: int) -> NDArray[np.uint8]:
        """Byte time-domain data at ``frame`` (see :func:`byte_time_domain_data`)."""
        return byte_time_domain_data(self._window(frame))

    def _analyse(self, frame: int) -> NDArray[np.float32]:
        # Chromium analyses at most once per render quantum: a second read at
        # the same position returns the stored magnitudes, smoothed once.
        if frame > self._last_analysis_frame:
            mags = fft_magnitudes(self._window(frame)[np.newaxis, :])
            self._smoothed = smooth_magnitudes(
                mags, self._smoothed, smoothing_time_constant=self.options.smoothing_time_constant
            )[0]
            self._last_analysis_frame = frame
        elif frame < self._last_analysis_frame:
            raise InvalidParameterError(
                f"reads must come in time order: frame {frame} after frame {self._last_analysis_frame}"
            )
        return self._smoothed

    def get_float_frequency_data(self, frame: int) -> NDArray[np.float32]:
        """Smoothed spectrum in dB at ``frame`` (smooths once per new position)."""
        return decibels(self._analyse(frame))

    def get_byte_frequency_data(self, frame: int) -> NDArray[np.uint8]:
        """Byte spectrum at ``frame`` (smooths once per new position)."""
        return byte_frequency_data(
            decibels(self._analyse(frame)),
            min_decibels=self.options.min_decibels,
            max_decibels=self.options.max_decibels,
        )
