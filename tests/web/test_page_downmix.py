"""The page clock's level is the tool's, down-mix included, on both paths (headless Chromium).

Random float32 samples in 1, 2, 3, 4 and 6 channels play through an AnalyserNode in an
OfflineAudioContext. The worklet path down-mixes each render quantum itself (the spec's
speakers rules, float32 in Chromium's order); the polling path reads the analyser, which
down-mixes natively. At every tick both must equal, bit for bit, the tool's level of
:func:`clock.core.analyser.downmix_to_mono` of the same samples.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from browser import POST_JS, run_page

from clock.core.analyser import downmix_to_mono
from clock.core.levels import levels
from clock.web import script

RATE = 48000
COUNTS = (1, 2, 3, 4, 6)
N_FRAMES = 24000


def samples(channels: int) -> np.ndarray:
    rng = np.random.default_rng(channels)
    x = (rng.standard_normal((N_FRAMES, channels)) * 0.2).astype(np.float32)
    x[: N_FRAMES // 3] *= np.float32(1e-3)  # quiet and loud stretches
    return x


PAGE = """
async function run(path, channels) {
  const pcm = new Float32Array(await (await fetch(`/audio/${channels}`)).arrayBuffer());
  const frames = pcm.length / channels;
  const ctx = new OfflineAudioContext(channels, LAST + 256, RATE);
  const buffer = ctx.createBuffer(channels, frames, RATE);
  for (let c = 0; c < channels; c++) buffer.copyToChannel(pcm.filter((_, i) => i % channels === c), c);
  const source = new AudioBufferSourceNode(ctx, {buffer});
  const analyser = new AnalyserNode(ctx);
  source.connect(analyser);
  analyser.connect(ctx.destination);
  source.start();
  const clock = new SpeechClock(analyser, {}, {path});
  const read = [];
  clock.addEventListener('tick', (e) => read.push([e.detail.frame, e.detail.level]));
  if (path === 'worklet') {
    await clock.start();
    await ctx.startRendering();
    await clock.finish();
  } else {
    const at = (k) => ctx.suspend(k / 60).then(() => {
      clock.poll();
      if ((k + 1) / 60 * RATE < LAST) at(k + 1);
      ctx.resume();
    });
    at(0);
    await ctx.startRendering();
  }
  return read;
}
(async () => {
  const out = {};
  for (const path of ['worklet', 'poll']) for (const n of COUNTS) out[`${path}-${n}`] = await run(path, n);
  await post('/done', JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def read():
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    files = {f"/audio/{n}": samples(n).astype("<f4").tobytes() for n in COUNTS}
    head = f"const RATE = {RATE}, LAST = {N_FRAMES}, COUNTS = {json.dumps(list(COUNTS))};"
    html = f"<!DOCTYPE html><html><body><script>{POST_JS}\n{script()}\n{head}\n{PAGE}</script></body></html>"
    return json.loads(run_page(html, timeout_s=120, files=files)["/done"])


@pytest.mark.parametrize("path", ["worklet", "poll"])
@pytest.mark.parametrize("channels", COUNTS)
def test_the_page_level_is_the_tools_down_mix_included(read, path, channels):
    trace = levels(downmix_to_mono(samples(channels)), RATE)
    tool = dict(zip(trace.frames.tolist(), trace.level.tolist()))
    page = [(f, v) for f, v in read[f"{path}-{channels}"] if f <= N_FRAMES]
    assert len(page) >= trace.n_ticks - 1 > 20
    parted = [(f, v, tool.get(f)) for f, v in page if tool.get(f) != v]
    assert not parted, f"{len(parted)} ticks differ; first (frame, page, tool): {parted[0]}"
    assert any(v > 0.1 for _, v in page) and any(0 < v < 0.001 for _, v in page)
