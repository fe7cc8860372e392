"""Conformance vectors for the AnalyserNode emulation, derived from the spec and Chromium."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from signals import fround, js_rms, sine

from clock.core import analyser as analyser_module
from clock.core.analyser import (
    GRID_MAX_ABS,
    Analyser,
    AnalyserOptions,
    GridBlock,
    blackman_window,
    byte_frequency_data,
    byte_time_domain_data,
    downmix_pcm16,
    downmix_to_mono,
    rms_of_windows,
    sums_in_order,
    time_domain_windows,
)
from clock.errors import InvalidParameterError, InvalidSignalError

# --- options -----------------------------------------------------------------


def test_defaults_are_the_browsers():
    o = AnalyserOptions()
    assert (o.fft_size, o.smoothing_time_constant, o.min_decibels, o.max_decibels) == (2048, 0.8, -100.0, -30.0)


@pytest.mark.parametrize("n", [32, 64, 2048, 32768])
def test_every_power_of_two_in_range_is_accepted(n):
    assert AnalyserOptions(fft_size=n).fft_size == n


@pytest.mark.parametrize("n", [-1, 0, 1, 16, 33, 100, 2049, 65536, True, 2048.0])
def test_invalid_fft_size_raises_naming_the_value(n):
    with pytest.raises(InvalidParameterError, match="fft_size must be a power of two"):
        AnalyserOptions(fft_size=n)


@pytest.mark.parametrize("tau", [-0.1, 1.1, float("nan")])
def test_invalid_smoothing_raises(tau):
    with pytest.raises(InvalidParameterError, match="smoothing_time_constant"):
        AnalyserOptions(smoothing_time_constant=tau)


@pytest.mark.parametrize("lo,hi", [(-30.0, -30.0), (-10.0, -50.0), (float("-inf"), 0.0)])
def test_min_decibels_must_be_below_max(lo, hi):
    with pytest.raises(InvalidParameterError, match="min_decibels must be < max_decibels"):
        AnalyserOptions(min_decibels=lo, max_decibels=hi)


def test_smoothing_bounds_are_allowed():
    assert AnalyserOptions(smoothing_time_constant=0.0).smoothing_time_constant == 0.0
    assert AnalyserOptions(smoothing_time_constant=1.0).smoothing_time_constant == 1.0


# --- time-domain window ------------------------------------------------------


@pytest.mark.parametrize("frame", [0, 128, 1024, 2048, 2176, 4096])
def test_window_covers_exactly_the_fft_size_frames_before_f(frame):
    # Index-coded signal: x[i] = i + 1, so a 0 in the window means "before the file".
    x = np.arange(1, 4097, dtype=np.float32)
    node = Analyser(x, AnalyserOptions(fft_size=2048))
    got = node.get_float_time_domain_data(frame)
    expected = np.array([i + 1 if i >= 0 else 0 for i in range(frame - 2048, frame)], np.float32)
    np.testing.assert_array_equal(got, expected)


def test_window_beyond_the_signal_is_refused():
    node = Analyser(np.zeros(256, np.float32), AnalyserOptions(fft_size=32))
    with pytest.raises(InvalidParameterError, match="frame must be in"):
        node.get_float_time_domain_data(384)


def test_non_finite_samples_are_refused():
    x = np.zeros(300, np.float32)
    x[17] = np.nan
    with pytest.raises(InvalidSignalError, match="index 17"):
        Analyser(x)


# --- silence -----------------------------------------------------------------


def test_silence_reads_as_the_spec_says():
    node = Analyser(np.zeros(8192, np.float32))
    assert np.all(node.get_float_time_domain_data(4096) == 0.0)
    assert np.all(node.get_byte_time_domain_data(4096) == 128)
    db = node.get_float_frequency_data(4096)
    assert db.shape == (1024,) and np.all(np.isneginf(db))
    assert np.all(node.get_byte_frequency_data(4224) == 0)


def test_frequency_data_of_silence_after_sound_decays_by_tau_per_read():
    # Time data of zeros after a tone: the smoothed magnitude falls by tau per read,
    # so each read is 20*log10(0.8) = -1.94 dB below the previous one.
    x = np.concatenate([sine(0.5, 1000, 0.1, 48000), np.zeros(48000, np.float32)])
    node = Analyser(x)
    node.get_float_frequency_data(4800)  # inside the tone
    a = node.get_float_frequency_data(4800 + 128 * 40).max()  # window all zeros now
    b = node.get_float_frequency_data(4800 + 128 * 41).max()
    assert b - a == pytest.approx(20 * math.log10(0.8), abs=1e-3)


# --- byte conversions --------------------------------------------------------


def _byte_time_oracle(x: float) -> int:
    # Chromium: double scaled = 128 * (value + 1) with value a float: float32 arithmetic.
    scaled = fround(128.0 * fround(x + 1.0))
    return int(max(0.0, min(255.0, scaled)))


@pytest.mark.parametrize(
    "x,expected",
    [
        (0.0, 128),
        (-1e-9, 128),
        (-(2**-26), 128),
        (-(2**-24), 127),
        (-(2**-7), 127),
        (2**-7, 129),
        (1.0, 255),
        (0.9999, 255),
        (-1.0, 0),
        (-1.5, 0),
        (1.5, 255),
        (-0.5, 64),
        (0.5, 192),
    ],
)
def test_byte_time_domain_edges(x, expected):
    assert byte_time_domain_data([x]).tolist() == [expected]
    assert _byte_time_oracle(x) == expected


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, 64, elements=st.floats(-2, 2, width=32)))
def test_byte_time_domain_matches_float32_oracle(x):
    assert byte_time_domain_data(x).tolist() == [_byte_time_oracle(float(v)) for v in x]


@pytest.mark.parametrize(
    "db,expected",
    [(-100.0, 0), (-30.0, 255), (-20.0, 255), (-101.0, 0), (float("-inf"), 0), (-65.0, 127), (-100.0 + 70 / 255, 1)],
)
def test_byte_frequency_edges(db, expected):
    out = byte_frequency_data(np.array([db], np.float32), min_decibels=-100.0, max_decibels=-30.0)
    assert out.tolist() == [expected]


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, 32, elements=st.floats(-140, 10, width=32)), st.floats(-120, -40), st.floats(1, 80))
def test_byte_frequency_differs_from_spec_division_by_at_most_one(db, lo, width):
    # Chromium multiplies by 1/(max-min); the spec divides. Only exact boundaries may differ.
    hi = lo + width
    ours = byte_frequency_data(db, min_decibels=lo, max_decibels=hi).astype(int)
    spec = np.floor(np.clip(255 * (db.astype(np.float64) - lo) / (hi - lo), 0, 255)).astype(int)
    assert np.all(np.abs(ours - spec) <= 1)


# --- frequency data ----------------------------------------------------------


def test_blackman_window_is_periodic_with_denominator_n():
    w = blackman_window(2048)
    assert w.dtype == np.float32
    assert w[0] == np.float32(0.42 - 0.5 + 0.08)  # ~1.4e-17 in double, the float32 of that
    assert w[1024] == 1.0
    n = np.arange(2048)
    ref = 0.42 - 0.5 * np.cos(2 * np.pi * n / 2048) + 0.08 * np.cos(4 * np.pi * n / 2048)
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-7)


def _reference_db(window: np.ndarray) -> np.ndarray:
    # Port of Chromium's web-test reference (realtimeanalyser-testing.js): Blackman
    # window, FFT, |X|/N, 20*log10, in double.
    n = window.size
    k = np.arange(n)
    w = 0.42 - 0.5 * np.cos(2 * np.pi * k / n) + 0.08 * np.cos(4 * np.pi * k / n)
    spectrum = np.fft.fft(window.astype(np.float64) * w)[: n // 2]
    with np.errstate(divide="ignore"):
        return 20 * np.log10(np.abs(spectrum) / n)


@pytest.mark.parametrize("order", [5, 7, 9, 11, 13, 15])
def test_float_frequency_data_within_float_rounding_of_reference_unsure_of_pffft_last_bits(order):
    # Chromium's FFT is PFFFT (float32); ours is numpy's. We match the algorithm
    # step by step but not PFFFT's rounding, so we hold to Chromium's own test
    # tolerances (relative error up to 3e-5 on values above -100 dB), not to the bit.
    n = 2**order
    rate = 32768
    t = np.arange(4 * n) / rate
    saw = (2 * ((440 * t) % 1.0) - 1).astype(np.float32)
    node = Analyser(saw, AnalyserOptions(fft_size=n, smoothing_time_constant=0.0))
    got = node.get_float_frequency_data(2 * n).astype(np.float64)
    ref = _reference_db(saw[n : 2 * n])
    keep = ref > -100
    np.testing.assert_allclose(got[keep], ref[keep], rtol=3e-5)


def test_full_scale_sine_peak_bin_and_level():
    # WPT realtimeanalyser-fft-scaling: a 0 dBFS sine at fs/32 peaks in bin N/32
    # at >= -13.56 dB (the periodic Blackman's 20*log10(0.42/2)).
    n = 1024
    rate = 44100
    x = sine(1.0, rate / 32, 0.1, rate)
    db = Analyser(x, AnalyserOptions(fft_size=n, smoothing_time_constant=0.0)).get_float_frequency_data(n)
    assert int(np.argmax(db)) == n // 32
    assert db.max() >= -13.56


def _periodic_signal() -> np.ndarray:
    # Period 128 frames, so every quantum boundary sees the same window.
    one = np.sin(2 * np.pi * 3 * np.arange(128) / 128) * 0.25
    return np.tile(one, 64).astype(np.float32)


def test_smoothing_is_once_per_read_not_per_quantum():
    x = _periodic_signal()
    tau = 0.5
    node = Analyser(x, AnalyserOptions(fft_size=256, smoothing_time_constant=tau))
    fresh = Analyser(x, AnalyserOptions(fft_size=256, smoothing_time_constant=0.0))
    raw = 10 ** (fresh.get_float_frequency_data(1024).astype(np.float64) / 20)
    first = 10 ** (node.get_float_frequency_data(1024).astype(np.float64) / 20)
    # Ten quanta later, one read: smoothed once more, not ten times.
    second = 10 ** (node.get_float_frequency_data(1024 + 1280).astype(np.float64) / 20)
    big = raw > 1e-3
    np.testing.assert_allclose(first[big], (1 - tau) * raw[big], rtol=1e-5)
    np.testing.assert_allclose(second[big], (1 - tau**2) * raw[big], rtol=1e-5)


def test_reads_in_the_same_quantum_return_the_same_data():
    node = Analyser(_periodic_signal(), AnalyserOptions(fft_size=256))
    a = node.get_float_frequency_data(2048)
    b = node.get_float_frequency_data(2048)
    c = node.get_byte_frequency_data(2048)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c, byte_frequency_data(a, min_decibels=-100, max_decibels=-30))


def test_frequency_reads_must_go_forward_in_time():
    node = Analyser(_periodic_signal())
    node.get_float_frequency_data(4096)
    with pytest.raises(InvalidParameterError, match="time order"):
        node.get_float_frequency_data(2048)


# --- down-mix ----------------------------------------------------------------


def _channels(rng, n_channels):
    return rng.uniform(-1, 1, size=(1000, n_channels)).astype(np.float32)


def test_stereo_downmix_is_half_the_sum_in_float32(rng):
    x = _channels(rng, 2)
    expected = ((x[:, 0].astype(np.float64) + x[:, 1]) / 2).astype(np.float32)
    np.testing.assert_array_equal(downmix_to_mono(x), expected)


def test_quad_downmix_adds_quarter_channels_in_order(rng):
    x = _channels(rng, 4)
    acc = np.zeros(1000, np.float32)
    for c in range(4):
        acc = (acc + np.float32(0.25) * x[:, c]).astype(np.float32)
    np.testing.assert_array_equal(downmix_to_mono(x), acc)
    np.testing.assert_allclose(downmix_to_mono(x), x.mean(axis=1), atol=1e-6)


def test_five_one_downmix_drops_lfe(rng):
    x = _channels(rng, 6)
    expected = np.sqrt(0.5) * (x[:, 0] + x[:, 1]) + x[:, 2] + 0.5 * (x[:, 4] + x[:, 5])
    got = downmix_to_mono(x)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    y = x.copy()
    y[:, 3] = 1.0  # LFE has no effect
    np.testing.assert_array_equal(downmix_to_mono(y), got)


@pytest.mark.parametrize("n_channels", [3, 5, 8])
def test_other_channel_counts_keep_the_first_channel(rng, n_channels):
    x = _channels(rng, n_channels)
    np.testing.assert_array_equal(downmix_to_mono(x), x[:, 0])


def test_mono_passes_through(rng):
    x = _channels(rng, 1)
    np.testing.assert_array_equal(downmix_to_mono(x), x[:, 0])


# --- RMS as the page computes it --------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float32, (3, 256), elements=st.floats(-1, 1, width=32)),
    st.integers(-30, 0),
)
def test_rms_is_bit_identical_to_the_javascript_loop(x, exponent):
    windows = x * np.float32(2.0**exponent)
    got = rms_of_windows(windows)
    assert [float(v) for v in got] == [js_rms(w) for w in windows]


def test_rms_order_matters_and_we_follow_the_loop(rng):
    # Wide dynamic range makes pairwise and sequential sums differ; we must
    # agree with the loop, not with numpy's pairwise sum.
    w = (rng.standard_normal((40, 2048)) * np.exp(rng.uniform(-20, 0, (40, 2048)))).astype(np.float32)
    got = rms_of_windows(w)
    assert [float(v) for v in got] == [js_rms(row) for row in w]
    pairwise = np.sqrt(np.sum(w.astype(np.float64) ** 2, axis=1) / 2048)
    assert np.any(pairwise != got)  # the test distinguishes the two orders


def _loop_sums(columns: np.ndarray) -> list[float]:
    """Each column summed as a JavaScript loop adds: 0, then every row in order."""
    out = []
    for j in range(columns.shape[1]):
        total = 0.0
        for v in columns[:, j].tolist():
            total += v
        out.append(total)
    return out


@pytest.mark.parametrize("n", [1, 32, 2048, 32768])
@pytest.mark.parametrize("t", [1, 2, 3, 17])
def test_sums_in_order_are_the_loops_sums(rng, n, t):
    # A wide dynamic range, so that any other order (pairwise, blocked) rounds differently somewhere.
    x = (rng.standard_normal((n, t)) * np.exp(rng.uniform(-30, 0, (n, t)))) ** 2
    assert sums_in_order(x).tolist() == _loop_sums(x)


def test_sums_in_order_without_numpys_row_by_row_reduce_are_the_same(rng, monkeypatch):
    x = (rng.standard_normal((2048, 5)) * np.exp(rng.uniform(-30, 0, (2048, 5)))) ** 2
    fast = sums_in_order(x).tolist()
    monkeypatch.setattr(analyser_module, "_REDUCE_IN_ORDER", False)
    assert sums_in_order(x).tolist() == fast == _loop_sums(x)


def test_the_check_on_numpys_reduce_tells_the_orders_apart():
    # What the check sums: in order it stays 1; numpy's pairwise sum of the same column does not.
    col = np.full(64, 2.0**-53)
    col[0] = 1.0
    assert analyser_module._reduce_adds_in_order()  # this numpy adds row by row: the fast path is the one tested
    assert np.add.reduce(col) != 1.0  # the contiguous axis is summed pairwise: the check would see it


# --- 16-bit PCM on its grid ----------------------------------------------------


def _pcm(rng, frames: int, channels: int) -> np.ndarray:
    x = rng.integers(-32768, 32768, (frames, channels)).astype(np.int16)
    x[:7] = -32768
    x[7:14] = 32767
    x[14:21] = 0
    x[21:28, 0] = 1
    x[21:28, -1] = -1  # a stereo sum of zero, of one
    return x


@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5, 8])
def test_the_pcm16_down_mix_on_its_grid_is_the_float_down_mix(rng, channels):
    pcm = _pcm(rng, 5000, channels)
    grid = downmix_pcm16(pcm)
    assert grid is not None
    floats = downmix_to_mono(pcm * np.float32(1 / 32768))
    assert grid.to_float32().dtype == np.float32
    np.testing.assert_array_equal(grid.to_float32(), floats)
    assert np.all(np.abs(grid.values.astype(np.int64)) <= GRID_MAX_ABS)
    assert grid.exponent == {2: 16, 4: 17}.get(channels, 15)


def test_the_5_1_down_mix_leaves_the_grid(rng):
    pcm = _pcm(rng, 100, 6)
    assert downmix_pcm16(pcm) is None
    floats = downmix_to_mono(pcm * np.float32(1 / 32768))
    assert not np.array_equal(floats * np.float32(2**17), np.rint(floats * np.float32(2**17)))  # off every grid


def test_grid_blocks_refuse_what_is_not_small_integers():
    with pytest.raises(InvalidSignalError, match="int16 or int32"):
        GridBlock(np.zeros(4, np.float32), 15)  # type: ignore[arg-type]
    with pytest.raises(InvalidSignalError, match="int16 or int32"):
        GridBlock(np.zeros((4, 2), np.int16), 15)
    with pytest.raises(InvalidSignalError, match="at most"):
        GridBlock(np.array([0, GRID_MAX_ABS + 1], np.int32), 17)
    with pytest.raises(InvalidParameterError, match="exponent"):
        GridBlock(np.zeros(4, np.int16), 65)
    assert len(GridBlock(np.array([-GRID_MAX_ABS, GRID_MAX_ABS], np.int32), 17)) == 2


def test_time_domain_windows_refuses_frames_outside_the_buffer():
    with pytest.raises(InvalidParameterError, match="frame positions"):
        time_domain_windows(np.zeros(100, np.float32), [200], fft_size=32)
