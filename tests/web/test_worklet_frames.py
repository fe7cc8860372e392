"""The worklets count render quanta by their calls; ``currentFrame`` only tells of quanta they were never called for.

Under load, Chromium's ``currentFrame`` was seen to lag behind a worklet's calls for a
few quanta as another worklet node started, and then catch up: the capture worklet
read the catch-up as quanta it was never called for and put silence in the file, so
the file ran 256 frames late against the page's readings from then on (a live WebRTC
test parted from the replay on a busy machine). Here both worklets (the capture's, in
docs/capture.js, and the page clock's) run in a page on stubbed globals, called once
per quantum with ``currentFrame`` exact, lagging and catching up, and skipping two
quanta. Deterministic: no audio thread, no timers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import POST_JS, run_page

from clock.web import script

ROOT = Path(__file__).resolve().parents[2]
N_CALLS = 64
EXACT = [128 * i for i in range(N_CALLS)]
# Calls 10 and 11 see the frame of call 9; call 12 sees its own again (the lag caught up).
LAGGING = [EXACT[9] if i in (10, 11) else f for i, f in enumerate(EXACT)]
# Two quanta never called for, after call 19.
SKIPPING = EXACT[:20] + [f + 256 for f in EXACT[20:]]

PAGE = """
var currentFrame = 0;
var sampleRate = 48000;
class AudioWorkletProcessor {
  constructor() { this.sent = []; this.port = { postMessage: (m) => this.sent.push(m) }; }
}
function load(source) {
  const found = {};
  new Function("registerProcessor", "AudioWorkletProcessor", source)((name, cls) => { found[name] = cls; },
                                                                      AudioWorkletProcessor);
  return found;
}
// Call i carries the value (i + 1) / 64 in every sample of both channels.
function quantum(i) { const c = new Float32Array(128).fill((i + 1) / 64); return [[c, c.slice()]]; }
function capture(frames) {
  const Capture = load(SPEECHCLOCK_PROCESSOR)["speechclock-capture"];
  const p = new Capture({ processorOptions: { chunkFrames: 1 << 20 } });
  frames.forEach((f, i) => { currentFrame = f; p.process(quantum(i)); });
  p.port.onmessage({ data: "stop" });
  const data = [];
  for (const m of p.sent) if (Array.isArray(m.channels)) data.push(...m.channels[0]);
  return { data, gaps: p.sent.filter((m) => m.gap !== undefined), start: p.sent.find((m) => m.start !== undefined) };
}
function clock(frames) {
  const Clock = load(SPEECHCLOCK_WORKLET_SOURCE)["speechclock-clock"];
  const setting = { floor: 0.003, quiet_s: 0.5, onset_timeout_s: 10, fft_size: 2048, rule: "level", hangover_s: null };
  const p = new Clock({ processorOptions: { setting, tick: ["1", "60"], events: [] } });
  frames.forEach((f, i) => { currentFrame = f; p.process(quantum(i)); });
  return { ticks: p.sent.filter((m) => m.tick).map((m) => [m.tick.frame, m.tick.level]),
           jumps: p.sent.filter((m) => m.jump).map((m) => m.jump) };
}
const out = {};
for (const [name, frames] of Object.entries(FRAMES)) out[name] = { capture: capture(frames), clock: clock(frames) };
post('/done', JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def ran():
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    frames = {"exact": EXACT, "lagging": LAGGING, "skipping": SKIPPING}
    html = (
        "<!DOCTYPE html><html><body><script>"
        + POST_JS
        + (ROOT / "docs" / "capture.js").read_text(encoding="utf-8")
        + "\n"
        + f"\nconst SPEECHCLOCK_WORKLET_SOURCE = {json.dumps(script('speechclock-worklet.js'))};"
        + f"\nconst FRAMES = {json.dumps(frames)};\n"
        + PAGE
        + "</script></body></html>"
    )
    return json.loads(run_page(html, timeout_s=300)["/done"])


def values(calls) -> list[float]:
    """The file's samples when each call's quantum is in it, in order (a skipped quantum as 128 zeros)."""
    return [v for i in calls for v in [0.0 if i is None else (i + 1) / 64] * 128]  # (exact in float32)


def test_a_capture_whose_current_frame_lags_and_catches_up_holds_every_quantum_and_no_gap(ran):
    exact, lagging = ran["exact"]["capture"], ran["lagging"]["capture"]
    assert exact["gaps"] == [] and exact["start"]["start"] == 0
    assert exact["data"] == values(range(N_CALLS))
    assert lagging == exact


def test_a_capture_puts_silence_where_quanta_were_never_called_for(ran):
    skipped = ran["skipping"]["capture"]
    assert skipped["gaps"] == [{"gap": EXACT[20], "frames": 256}]
    assert skipped["data"] == values([*range(20), None, None, *range(20, N_CALLS)])


def test_the_page_clock_ticks_as_with_exact_frames_when_current_frame_lags(ran):
    exact, lagging = ran["exact"]["clock"]["ticks"], ran["lagging"]["clock"]["ticks"]
    assert len(exact) >= 60 * N_CALLS * 128 // 48000 - 1
    assert lagging == exact
    assert ran["exact"]["clock"]["jumps"] == ran["lagging"]["clock"]["jumps"] == []
    # Two skipped quanta read as silence: every tick still comes, at the same frames.
    assert [f for f, _ in ran["skipping"]["clock"]["ticks"]][: len(exact)] == [f for f, _ in exact]


def test_the_page_clock_tells_the_main_thread_of_quanta_it_was_never_called_for(ran):
    # The jump in context time (a frozen or starved audio thread) is one message, at the first frame it missed.
    assert ran["skipping"]["clock"]["jumps"] == [{"frame": EXACT[20], "frames": 256}]
