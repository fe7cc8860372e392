"""The emulation against the real thing: Chromium's AnalyserNode in an OfflineAudioContext.

One page renders each case's known buffer through an AnalyserNode (one
OfflineAudioContext per case, one browser for them all), suspends the context
at tick times k/60 s, and at each suspension reads all four getters and the
page's RMS loop. Time-domain data, byte time-domain data, the RMS and the
suspension frames must match the emulation bit for bit; frequency data
(Chromium's FFT is PFFFT, ours numpy's) within Chromium's own tolerance.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from browser import POST_JS, run_page

from clock.core.analyser import Analyser, AnalyserOptions, downmix_pcm16, downmix_to_mono
from clock.core.levels import levels
from clock.core.ticks import Ticks

N_TICKS = 24


PAGE = """
async function run(i, plan) {
  const data = new Float32Array(await (await fetch(`/audio/${i}`)).arrayBuffer());
  const [frames, channels, rate] = [plan.frames, plan.channels, plan.rate];
  const ctx = new OfflineAudioContext(channels, frames, rate);
  const buffer = ctx.createBuffer(channels, frames, rate);
  for (let c = 0; c < channels; c++) buffer.copyToChannel(data.subarray(c * frames, (c + 1) * frames), c);
  const source = new AudioBufferSourceNode(ctx, {buffer});
  const analyser = new AnalyserNode(ctx, {fftSize: plan.fft_size, smoothingTimeConstant: plan.smoothing});
  source.connect(analyser).connect(ctx.destination);
  const reads = [];
  for (let k = 1; k <= N_TICKS; k++) {
    ctx.suspend(k / 60).then(() => {
      const time = new Float32Array(analyser.fftSize), bytes = new Uint8Array(analyser.fftSize);
      const freq = new Float32Array(analyser.frequencyBinCount), fbytes = new Uint8Array(analyser.frequencyBinCount);
      analyser.getFloatTimeDomainData(time);
      analyser.getByteTimeDomainData(bytes);
      analyser.getFloatFrequencyData(freq);
      analyser.getByteFrequencyData(fbytes);
      let sum = 0;
      for (let i = 0; i < time.length; i++) sum += time[i] * time[i];
      reads.push({frame: Math.round(ctx.currentTime * rate), time: Array.from(time), bytes: Array.from(bytes),
                  freq: Array.from(freq, v => v === -Infinity ? null : v), fbytes: Array.from(fbytes),
                  rms: Math.sqrt(sum / time.length)});
      ctx.resume();
    });
  }
  source.start(0);
  await ctx.startRendering();
  return reads;
}
(async () => {
  const out = [];
  for (const [i, plan] of PLANS.entries()) out.push(await run(i, plan));
  await post('/done', JSON.stringify(out));
})();
"""


def _signal(rng: np.random.Generator, rate: int, n_channels: int) -> np.ndarray:
    """Speech-like bursts with a wide dynamic range, exact-zero gaps, and a quiet tail."""
    n = int(0.5 * rate)
    t = np.arange(n) / rate
    envelope = np.where((t * 7) % 1 < 0.6, 10 ** rng.uniform(-3.5, -0.7), 0.0)
    x = rng.standard_normal((n, n_channels)) * envelope[:, None]
    return x.astype(np.float32)


CASES = [
    pytest.param(48000, 1, 2048, 0.8, id="48k-mono-2048"),
    pytest.param(44100, 2, 2048, 0.8, id="44k-stereo-2048"),
    pytest.param(48000, 4, 1024, 0.5, id="48k-quad-1024"),
    pytest.param(48000, 6, 512, 0.0, id="48k-5.1-512"),
    pytest.param(22050, 3, 256, 0.8, id="22k-3ch-discrete-256"),
]


#: 16-bit samples (v / 32768), whose levels come from their integers (GridBlock): channels, fftSize.
PCM16_CASES = [pytest.param(n, f, id=f"pcm16-{n}ch-{f}") for n, f in [(1, 2048), (2, 32768), (4, 128), (3, 32)]]
PCM16_IDS = {case.id for case in PCM16_CASES}


def _pcm16(n_channels: int) -> np.ndarray:
    """The 16-bit samples of one exact-path case, full scale included."""
    pcm = (_signal(np.random.default_rng(16), 48000, n_channels) * 32768).clip(-32768, 32767).astype(np.int16)
    pcm[3000:9000] = -32768
    return pcm


def _channels(rate: int, n_channels: int) -> np.ndarray:
    """The signal of one case (each from the same seed)."""
    return _signal(np.random.default_rng(440), rate, n_channels)


@pytest.fixture(scope="module")
def page_reads():
    """Every case's reads, from one page (each case in its own OfflineAudioContext)."""
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    plans, files = [], {}
    cases = [(case.id, case.values) for case in CASES]
    cases += [(case.id, (48000, case.values[0], case.values[1], 0.8)) for case in PCM16_CASES]
    for i, (case_id, (rate, n_channels, fft_size, smoothing)) in enumerate(cases):
        channels = _pcm16(n_channels) * np.float32(1 / 32768) if case_id in PCM16_IDS else _channels(rate, n_channels)
        files[f"/audio/{i}"] = np.ascontiguousarray(channels.T, dtype="<f4").tobytes()  # channel after channel
        plans.append({"frames": channels.shape[0], "channels": n_channels, "rate": rate, "fft_size": fft_size})
        plans[-1]["smoothing"] = smoothing
    head = f"const N_TICKS = {N_TICKS}, PLANS = {json.dumps(plans)};"
    html = f"<!DOCTYPE html><html><body><script>{POST_JS}\n{head}\n{PAGE}</script></body></html>"
    done = json.loads(run_page(html, timeout_s=120, files=files)["/done"])
    return {case_id: r for (case_id, _), r in zip(cases, done)}


@pytest.mark.parametrize("rate,n_channels,fft_size,smoothing", CASES)
def test_emulation_matches_chromium(page_reads, request, rate, n_channels, fft_size, smoothing):
    channels = _channels(rate, n_channels)
    reads = page_reads[request.node.callspec.id]
    assert len(reads) == N_TICKS
    mono = downmix_to_mono(channels)
    options = AnalyserOptions(fft_size=fft_size, smoothing_time_constant=smoothing)

    # Suspension frames follow the ceil rule of Ticks, exactly.
    frames = [r["frame"] for r in reads]
    assert frames == Ticks(Fraction(1, 60)).frames(np.arange(1, N_TICKS + 1), rate).tolist()

    node = Analyser(mono, options)
    trace = levels(mono, rate, options=options)
    by_frame = dict(zip(trace.frames.tolist(), trace.level.tolist()))
    for r in reads:
        f = r["frame"]
        # Time-domain data (down-mix included) and bytes: bit-exact.
        np.testing.assert_array_equal(node.get_float_time_domain_data(f), np.array(r["time"], np.float32))
        np.testing.assert_array_equal(node.get_byte_time_domain_data(f), np.array(r["bytes"], np.uint8))
        # The page's RMS loop and our rms metric: bit-exact.
        assert by_frame[f] == r["rms"]
        # Frequency data, smoothed across these successive reads: Chromium's FFT is
        # PFFFT, so only within float rounding (its own tests allow 3e-5 relative).
        ours = node.get_float_frequency_data(f).astype(np.float64)
        theirs = np.array([-np.inf if v is None else v for v in r["freq"]])
        assert np.array_equal(np.isneginf(ours), np.isneginf(theirs))
        keep = np.isfinite(theirs) & (theirs > -100)
        np.testing.assert_allclose(ours[keep], theirs[keep], rtol=3e-5, atol=1e-4)
        byte_diff = np.abs(node.get_byte_frequency_data(f).astype(int) - np.array(r["fbytes"]))
        assert byte_diff.max(initial=0) <= 1


@pytest.mark.parametrize("n_channels,fft_size", PCM16_CASES)
def test_the_exact_path_for_16_bit_pcm_matches_chromium(page_reads, request, n_channels, fft_size):
    # 16-bit samples (v / 32768) rendered by Chromium; the levels from their integers (GridBlock), full scale included.
    pcm = _pcm16(n_channels)
    channels = pcm * np.float32(1 / 32768)
    reads = page_reads[request.node.callspec.id]
    assert len(reads) == N_TICKS
    grid = downmix_pcm16(pcm)
    assert grid is not None
    np.testing.assert_array_equal(grid.to_float32(), downmix_to_mono(channels))
    trace = levels(grid, 48000, options=AnalyserOptions(fft_size=fft_size))
    by_frame = dict(zip(trace.frames.tolist(), trace.level.tolist()))
    assert [by_frame[r["frame"]] for r in reads] == [r["rms"] for r in reads]
