"""Level traces: tick-to-frame mapping, metrics, streaming."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from signals import js_rms, sine

from clock.core import level_metrics
from clock.core import levels as levels_module
from clock.core.analyser import Analyser, AnalyserOptions, GridBlock, downmix_pcm16
from clock.core.levels import LevelStream, iter_levels, levels, summarize
from clock.core.ticks import Ticks, parse_period
from clock.errors import InvalidParameterError, InvalidSignalError

SMALL = AnalyserOptions(fft_size=256)


# --- ticks -------------------------------------------------------------------


def test_sixty_hertz_ticks_at_48k_land_on_exact_quantum_boundaries():
    frames = Ticks().frames(np.arange(8), 48000).tolist()
    # 800 frames per tick, rounded up to a multiple of 128: tick 4 is exactly 3200.
    assert frames == [0, 896, 1664, 2432, 3200, 4096, 4864, 5632]


def test_floor_alignment_takes_the_last_finished_quantum():
    assert Ticks(align="floor").frames(np.arange(6), 48000).tolist() == [0, 768, 1536, 2304, 3200, 3968]


def test_tick_frames_cadence():
    ticks = Ticks.every_frames(441, 44100)
    assert ticks.period_s == Fraction(1, 100)
    assert ticks.frames(np.arange(4), 44100).tolist() == [0, 512, 896, 1408]


@settings(max_examples=300, deadline=None)
@given(
    st.fractions(min_value=Fraction(1, 1000), max_value=Fraction(5)).filter(lambda f: f > 0),
    st.sampled_from([8000, 16000, 22050, 24000, 44100, 48000, 96000]),
    st.integers(0, 10**12),
    st.sampled_from(["ceil", "floor"]),
)
def test_tick_to_frame_mapping_never_drifts(period, rate, k, align):
    exact = Fraction(k) * period * rate / 128
    quanta = math.ceil(exact) if align == "ceil" else math.floor(exact)
    got = Ticks(period, align).frames(np.array([k]), rate)
    assert int(got[0]) == quanta * 128


@pytest.mark.parametrize("text,value", [("1/60", Fraction(1, 60)), ("0.1", Fraction(1, 10)), ("1", Fraction(1))])
def test_parse_period_is_exact(text, value):
    assert parse_period(text) == value


@pytest.mark.parametrize("text", ["0", "-1", "abc", "1/0", ""])
def test_parse_period_rejects(text):
    with pytest.raises(InvalidParameterError, match="tick period"):
        parse_period(text)


def test_trace_holds_every_tick_whose_frame_is_within_the_recording():
    n = 48000  # 1 s: the last tick at or before frame 48000
    trace = levels(np.zeros(n, np.float32), 48000)
    assert trace.frames[-1] <= n
    assert Ticks().frames(np.array([trace.n_ticks]), 48000)[0] > n
    assert trace.n_ticks == 61  # ticks 0..60, tick 60 at exactly frame 48000


# --- metrics -----------------------------------------------------------------


def test_step_signal_proves_the_window_is_the_frames_before_f():
    # 0 up to frame S, then 1.0: rms at frame F is sqrt(clip(F - S, 0, N) / N).
    s, n = 1000, 256
    x = np.zeros(6000, np.float32)
    x[s:] = 1.0
    trace = levels(x, 48000, options=SMALL, ticks=Ticks.every_frames(128, 48000))
    expected = [math.sqrt(min(max(f - s, 0), n) / n) for f in trace.frames.tolist()]
    assert trace.level.tolist() == expected


@pytest.mark.parametrize("metric", ["rms", "peak"])
def test_digital_silence_reads_exactly_zero(metric):
    x = np.concatenate([sine(0.5, 440, 0.5, 48000), np.zeros(48000, np.float32)])
    trace = levels(x, 48000, metric=metric)
    silent = trace.frames >= 24000 + 2048
    assert np.all(trace.level[silent] == 0.0)
    assert np.all(trace.level[(trace.frames > 2048) & (trace.frames < 24000)] > 0.1)


def test_frequency_metrics_on_silence():
    x = np.zeros(48000, np.float32)
    assert np.all(levels(x, 48000, metric="byte-mean").level == 0.0)
    assert np.all(np.isneginf(levels(x, 48000, metric="max-db").level))


@pytest.mark.parametrize("metric", ["byte-mean", "max-db"])
def test_frequency_metrics_equal_successive_analyser_reads(metric):
    # The trace smooths once per tick, exactly as a node read once per tick.
    x = sine(0.1, 500, 0.5, 48000)
    x[12000:] *= 0.01
    trace = levels(x, 48000, metric=metric, options=SMALL)
    node = Analyser(x, SMALL)
    for frame, level in zip(trace.frames.tolist(), trace.level.tolist()):
        if metric == "max-db":
            expected = float(node.get_float_frequency_data(frame).max())
        else:
            expected = float(node.get_byte_frequency_data(frame).mean(dtype=np.float64))
        assert level == expected or (math.isinf(level) and math.isinf(expected))


def test_sine_rms_is_amplitude_over_root_two():
    trace = levels(sine(0.2, 750, 1.0, 48000), 48000)  # 750 Hz: 2048 frames hold 32 periods
    np.testing.assert_allclose(trace.level[5:], 0.2 / math.sqrt(2), rtol=1e-6)


# Normal float32 values (or 0), so a power-of-two gain is exact on every sample.
NORMAL = st.one_of(st.just(0.0), st.floats(2.0**-100, 1, width=32), st.floats(-1, -(2.0**-100), width=32))


@settings(max_examples=40, deadline=None)
@given(arrays(np.float32, 3000, elements=NORMAL), st.integers(-8, 8))
def test_rms_is_nonnegative_and_scales_exactly_with_power_of_two_gain(x, e):
    a = levels(x, 48000, options=SMALL).level
    b = levels(x * np.float32(2.0**e), 48000, options=SMALL).level
    assert np.all(a >= 0)
    np.testing.assert_array_equal(b, a * 2.0**e)


@settings(max_examples=40, deadline=None)
@given(arrays(np.float32, 3000, elements=st.floats(-1, 1, width=32)), st.floats(0.01, 0.99))
def test_rms_scales_linearly_with_any_gain(x, gain):
    a = levels(x, 48000, options=SMALL).level
    b = levels((x * gain).astype(np.float32), 48000, options=SMALL).level
    np.testing.assert_allclose(b, a * gain, rtol=1e-5, atol=1e-12)


def test_rms_trace_equals_the_page_loop_on_each_window(rng):
    x = (rng.standard_normal(20000) * np.exp(rng.uniform(-12, 0, 20000))).astype(np.float32)
    trace = levels(x, 48000, options=SMALL)
    node = Analyser(x, SMALL)
    assert trace.level.tolist() == [js_rms(node.get_float_time_domain_data(f)) for f in trace.frames.tolist()]


@pytest.mark.parametrize("metric", ["rms", "peak", "byte-mean", "max-db"])
@pytest.mark.parametrize("block", [1, 127, 1000, 65536])
def test_block_size_does_not_change_a_single_bit(rng, metric, block):
    x = (rng.standard_normal(30000) * 0.1).astype(np.float32)
    whole = levels(x, 48000, metric=metric, options=SMALL)
    blocks = (x[i : i + block] for i in range(0, x.size, block))
    chunked = levels(blocks, 48000, metric=metric, options=SMALL)
    np.testing.assert_array_equal(chunked.frames, whole.frames)
    np.testing.assert_array_equal(chunked.level, whole.level)


def _cut(x, sizes):
    edges = np.cumsum([0, *sizes])
    assert edges[-1] == len(x)
    return [x[a:b] for a, b in zip(edges[:-1], edges[1:])]


def _grid_blocks(grid: GridBlock, sizes) -> list[GridBlock]:
    return [GridBlock(v, grid.exponent) for v in _cut(grid.values, sizes)]


@pytest.mark.parametrize("fft_size", [32, 64, 128, 256, 2048, 32768])
@pytest.mark.parametrize("channels", [1, 2, 4])
@pytest.mark.parametrize("align", ["ceil", "floor"])
def test_16_bit_pcm_on_its_grid_is_the_page_loop_for_every_window(rng, fft_size, channels, align):
    # The exact integer path (GridBlock) against the same samples as floats, whose path is the loop
    # (tests above), and against the loop itself on a sample of ticks; blocks of every size, one of
    # them shorter than a window, one longer than the engine's piece.
    pcm = rng.integers(-32768, 32768, (300_000, channels)).astype(np.int16)
    pcm[1000:40000] = -32768  # full scale: the largest window sums there are (2**49 at fftSize 32768, four channels)
    pcm[50000:60000] = 0
    grid = downmix_pcm16(pcm)
    assert grid is not None
    floats = grid.to_float32()
    options = AnalyserOptions(fft_size=fft_size)
    ticks = Ticks(Fraction(1, 60), align)
    sizes = [5, 20000, 17, 270_000, 9978]
    exact = levels(_grid_blocks(grid, sizes), 48000, ticks=ticks, options=options)
    general = levels(floats, 48000, ticks=ticks, options=options)
    np.testing.assert_array_equal(exact.frames, general.frames)
    assert exact.level.tolist() == general.level.tolist()
    node = Analyser(floats, options)
    for i in np.linspace(0, exact.n_ticks - 2, 40).astype(int).tolist():
        assert exact.level[i] == js_rms(node.get_float_time_domain_data(int(exact.frames[i])))
    assert np.any(exact.level == 1.0)  # the full-scale stretch was reached, exactly


def test_grid_and_float_blocks_mix_without_changing_a_bit(rng):
    # A grid, then floats off it, then the grid again, another grid (exponent), and blocks shorter than a window.
    k = rng.integers(-3000, 3000, 120_000).astype(np.int16)
    mono = GridBlock(k, 15)
    x = mono.to_float32()
    x[41234] = np.float32(0.1)  # off the grid
    stereo = downmix_pcm16(np.stack([k, k // 3], axis=1))
    assert stereo is not None and stereo.exponent == 16
    y = np.concatenate([x[:60000], stereo.to_float32()[60000:]])
    blocks = [
        GridBlock(k[:30000], 15),
        x[30000:45000],
        GridBlock(k[45000:45100], 15),
        GridBlock(k[45100:50000], 15),
        GridBlock(k[50000:60000], 15),
        GridBlock(stereo.values[60000:60300], 16),
        GridBlock(stereo.values[60300:], 16),
    ]
    grid_levels = level_metrics.GridSums.levels
    calls = []

    def counted(self, frames):
        calls.append(frames.size)
        return grid_levels(self, frames)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(level_metrics.GridSums, "levels", counted)
        trace = levels(blocks, 48000, options=SMALL)
    assert len(calls) >= 4  # the grid blocks with ticks took the exact path
    whole = levels(y, 48000, options=SMALL)
    assert trace.level.tolist() == whole.level.tolist()
    node = Analyser(y, SMALL)
    assert trace.level.tolist() == [js_rms(node.get_float_time_domain_data(f)) for f in trace.frames.tolist()]


@pytest.mark.parametrize("metric", ["rms", "peak", "byte-mean", "max-db"])
def test_every_metric_reads_a_grid_block_as_its_floats(rng, metric):
    grid = GridBlock(rng.integers(-32768, 32768, 30000).astype(np.int16), 15)
    a = levels(grid, 48000, metric=metric, options=SMALL)
    b = levels(grid.to_float32(), 48000, metric=metric, options=SMALL)
    np.testing.assert_array_equal(a.level, b.level)
    stream = LevelStream(48000, metric=metric, options=SMALL)
    chunks = stream.feed(GridBlock(grid.values[:7000], 15)) + stream.feed(grid.values[7000:] / np.float32(32768))
    chunks += stream.finish()
    np.testing.assert_array_equal(np.concatenate([c.level for c in chunks]), b.level)


def test_a_block_longer_than_a_piece_is_cut_without_changing_a_bit(rng):
    n = levels_module._MAX_PIECE_FRAMES * 2 + 12345
    x = (rng.standard_normal(n) * 0.1).astype(np.float32)
    whole = levels(x, 48000, options=SMALL)
    blocks = levels(_cut(x, [1000, n - 1000]), 48000, options=SMALL)
    assert whole.level.tolist() == blocks.level.tolist()
    node = Analyser(x, SMALL)
    for i in (0, 1, whole.n_ticks // 2, whole.n_ticks - 2):
        assert whole.level[i] == js_rms(node.get_float_time_domain_data(int(whole.frames[i])))


def test_iter_levels_yields_consecutive_ticks():
    x = np.zeros(48000 * 3, np.float32)
    chunks = list(iter_levels((x[i : i + 5000] for i in range(0, x.size, 5000)), 48000))
    firsts = [c.first_tick for c in chunks]
    sizes = [c.frames.size for c in chunks]
    assert firsts == list(np.cumsum([0] + sizes[:-1]))
    assert sum(sizes) == 181


def test_non_finite_block_is_an_error_naming_the_frame():
    x = np.zeros(5000, np.float32)
    x[4321] = np.inf
    with pytest.raises(InvalidSignalError, match="frame 4321"):
        levels(x, 48000)


def test_unknown_metric_lists_the_choices():
    with pytest.raises(InvalidParameterError, match="rms, peak, byte-mean, max-db"):
        levels(np.zeros(10, np.float32), 48000, metric="loudness")


def test_trace_arrays_are_read_only():
    trace = levels(np.zeros(4800, np.float32), 48000)
    with pytest.raises(ValueError):
        trace.level[0] = 1.0


def test_summarize_counts_exact_zeros_peak_and_rms():
    x = np.array([0, 0, 0.5, -0.5], np.float32)
    s = summarize([x[:1], x[1:]], 4)
    assert (s.n_frames, s.exact_zero_share, s.peak, s.rms, s.duration_s) == (4, 0.5, 0.5, math.sqrt(0.125), 1.0)
    assert s.peak_dbfs == pytest.approx(-6.0206, abs=1e-4)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.float32, 6000, elements=st.floats(-1, 1, width=32)),
    st.integers(0, 3000),
    st.integers(2048, 3000),
    st.sampled_from(["rms", "peak"]),
)
def test_every_window_inside_digital_silence_reads_exactly_zero(x, start, length, metric):
    x = x.copy()
    x[start : start + length] = 0.0
    trace = levels(x, 48000, metric=metric)
    inside = (trace.frames - 2048 >= start) & (trace.frames <= start + length)
    assert np.all(trace.level[inside] == 0.0)
    assert np.all(trace.level >= 0.0)


def test_one_huge_block_is_as_exact_as_many_small_ones():
    # 16-bit samples at full scale: in one block their running sum of squares
    # passes 2**22, where float64 prefix sums stop being exact; the result must
    # still equal the sequential loop's (as the per-block computation does).
    x = np.where(np.arange(2**24) % 3 == 0, 1.0, -32767 / 32768).astype(np.float32)
    whole = levels(x, 48000)
    blocks = levels((x[i : i + 65536] for i in range(0, x.size, 65536)), 48000)
    np.testing.assert_array_equal(whole.level, blocks.level)
    node = Analyser(x[:20000], AnalyserOptions())
    assert whole.level[10] == js_rms(node.get_float_time_domain_data(int(whole.frames[10])))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**7), st.sampled_from([44100, 48000]))
def test_floor_alignment_models_a_realtime_read_unsure_which_quantum_the_page_sees(k, rate):
    # Unsure: in a real-time context the main thread reads whatever quantum the
    # audio thread last finished; the spec leaves it loose, and a callback burst
    # can put it a few quanta behind. --align floor models "the last boundary at
    # or before the tick", ceil the OfflineAudioContext.suspend rule (checked
    # against Chromium in test_browser_analyser). They are at most one quantum apart.
    ceil = int(Ticks().frames(np.array([k]), rate)[0])
    floor = int(Ticks(align="floor").frames(np.array([k]), rate)[0])
    exact = Fraction(k, 60) * rate
    assert floor <= exact <= ceil and ceil - floor in (0, 128)


@pytest.mark.parametrize("n", [1000, 48000 - 1, 48000 + 1, 48850])
def test_a_tick_inside_the_recording_reads_zeros_past_its_end(n):
    # The tick rule at the end: tick k is in the trace when its time k/60 s is
    # inside the recording, even if its quantum boundary F_k lies past the last
    # sample; those frames read as zero (the analyser's next quanta are silent).
    x = np.full(n, 0.25, np.float32)
    trace = levels(x, 48000, options=AnalyserOptions(fft_size=256))
    k_last = trace.n_ticks - 1
    assert Fraction(k_last, 60) * 48000 < n or trace.frames[-1] <= n
    assert Fraction(k_last + 1, 60) * 48000 >= n  # the next tick's time is not inside
    f = int(trace.frames[-1])
    padded = np.concatenate([x, np.zeros(max(0, f - n), np.float32)])
    node = Analyser(padded, AnalyserOptions(fft_size=256))
    assert trace.level[-1] == js_rms(node.get_float_time_domain_data(f))
    if f > n:  # the window ran past the end: part of it read zeros
        assert 0 < trace.level[-1] < 0.25


def test_the_tail_rule_holds_for_blocks_and_for_every_engine():
    x = np.full(48850, 0.25, np.float32)
    whole = levels(x, 48000)
    blocks = levels([x[:30000], x[30000:]], 48000)
    np.testing.assert_array_equal(whole.frames, blocks.frames)
    np.testing.assert_array_equal(whole.level, blocks.level)
    streamed = list(iter_levels([x[:30000], x[30000:]], 48000))
    assert sum(c.frames.size for c in streamed) == whole.n_ticks
    assert whole.frames[-1] == 48896 > x.size  # tick 61 (frame 48800 < 48850) reads at 48896
    floor = levels(x, 48000, ticks=Ticks(align="floor"))
    assert floor.frames[-1] <= x.size  # floor alignment never reads past the end
