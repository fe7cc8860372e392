"""Every JavaScript example in docs/clock.md and docs/capture.md runs as written, in headless Chromium.

Each ```js block is extracted verbatim. A doc's blocks run in order in one async scope (later
blocks use what earlier ones define, as the doc reads), after docs/capture.js and
speechclock.js are loaded; a block that throws fails the test with its number. The page
around them is only what the docs say is the page's own: a peer connection and its events
channel (`pc`, `dataChannel`) over a loopback, whose far side plays a voice; for clock.md's
OpenAI Realtime page, a stand-in for the Realtime endpoint answers `fetch` with the SDP of a
local peer connection that plays a voice and sends `response.done` on the data channel.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from browser import POST_JS, WEBRTC_FLAGS, run_page

from clock.io.events import read_events
from clock.web import script

DOCS = Path(__file__).resolve().parent.parent / "docs"
FLAGS = (*WEBRTC_FLAGS, "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream")


def blocks(doc: str) -> list[str]:
    return re.findall(r"```js\n(.*?)```", (DOCS / doc).read_text(encoding="utf-8"), re.S)


# The far side: a voice (a tone, gated) into a peer connection.
FAR = """
function farSide() {
  const ctx = new AudioContext();
  const out = ctx.createMediaStreamDestination();
  const voice = new OscillatorNode(ctx, {frequency: 220});
  const gate = new GainNode(ctx, {gain: 0});
  voice.connect(gate).connect(out);
  voice.start();
  const t = ctx.currentTime + 0.3;
  gate.gain.setValueAtTime(0.1, t);
  gate.gain.setValueAtTime(0, t + 0.5);
  const pc = new RTCPeerConnection();
  pc.addTrack(out.stream.getAudioTracks()[0], out.stream);
  return pc;
}
const gathered = (pc) => new Promise((resolve) => {
  if (pc.iceGatheringState === 'complete') resolve();
  pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
});
"""


def run_blocks(code: list[str], before: str, after: str) -> dict:
    steps = "\n".join(f"  step = {i + 1};\n{block}" for i, block in enumerate(code))
    html = f"""<!DOCTYPE html><html><body><script>
{POST_JS}
{(DOCS / "capture.js").read_text(encoding="utf-8")}
{script()}
{FAR}
let step = 0;
(async () => {{
  try {{
{before}
{steps}
{after}
  }} catch (e) {{
    await post('/error', `example ${{step}}: ${{e && e.stack || e}}`);
  }}
}})();
</script></body></html>"""
    return json.loads(run_page(html, timeout_s=30, flags=FLAGS)["/done"])


def test_every_capture_md_example_runs_as_written(chromium):
    code = blocks("capture.md")
    assert len(code) >= 4
    before = """
  // The page's own peer connection and events channel, connected to the far side.
  const far = farSide();
  const pc = new RTCPeerConnection();
  const dataChannel = pc.createDataChannel('oai-events');
  far.onicecandidate = (e) => e.candidate && pc.addIceCandidate(e.candidate);
  pc.onicecandidate = (e) => e.candidate && far.addIceCandidate(e.candidate);
  pc.addTransceiver('audio', {direction: 'recvonly'});
  setTimeout(async () => {
    await pc.setLocalDescription(await pc.createOffer());
    await far.setRemoteDescription(pc.localDescription);
    await far.setLocalDescription(await far.createAnswer());
    await pc.setRemoteDescription(far.localDescription);
  }, 0);
"""
    after = """
  await new Promise((r) => setTimeout(r, 300));   // section 3's clock ticks a few times
  await post('/done', JSON.stringify({steps: step, lines: result.events.split('\\n').length}));
"""
    done = run_blocks(code, before, after)
    assert done["steps"] == len(code)
    assert done["lines"] > 8


def test_every_clock_md_example_runs_as_written(chromium, tmp_path):
    code = blocks("clock.md")
    assert len(code) >= 2 and any("startGuide" in b for b in code)
    before = """
  // A stand-in for OpenAI's Realtime endpoint: answers the offer with a local peer connection
  // that plays a voice and sends terminal response.done events on the events channel.
  const realFetch = window.fetch.bind(window);
  window.fetch = async (url, init) => {
    if (!String(url).startsWith('https://api.openai.com/v1/realtime/calls')) return realFetch(url, init);
    const far = farSide();
    far.ondatachannel = (e) => {
      const channel = e.channel;
      // A server sends its events whenever they happen: here one response.done every 0.5 s, each followed by
      // its audio buffer's output_audio_buffer.stopped.
      const done = JSON.stringify({type: 'response.done', response: {id: 'resp_1', output: []}});
      const stopped = JSON.stringify({type: 'output_audio_buffer.stopped', response_id: 'resp_1'});
      setInterval(() => {
        if (channel.readyState !== 'open') return;
        channel.send(done);
        setTimeout(() => channel.readyState === 'open' && channel.send(stopped), 100);
      }, 500);
    };
    await far.setRemoteDescription({type: 'offer', sdp: init.body});
    await far.setLocalDescription(await far.createAnswer());
    await gathered(far);
    return new Response(far.localDescription.sdp, {status: 201, headers: {'Content-Type': 'application/sdp'}});
  };
"""
    after = """
  const guide = await startGuide('ek_test');
  // The far side's response.done opens a beat: the clock goes from idle to waiting.
  if (guide.clock.state === 'idle') {
    await new Promise((resolve) => guide.clock.addEventListener('state', resolve, {once: true}));
  }
  const state = guide.clock.state;
  // Its output_audio_buffer.stopped reaches the clock: a beat (closed when the next response.done supersedes it)
  // was told it.
  while (!guide.clock.beats.some((b) => b.stopped_s !== null)) await new Promise((r) => setTimeout(r, 50));
  const saved = await guide.capture.stop();
  await post('/done', JSON.stringify({steps: step, path: guide.clock.path, state, events: saved.events}));
"""
    done = run_blocks(code, before, after)
    assert done["steps"] == len(code)
    assert done["path"] == "worklet" and done["state"] in ("waiting", "speaking")
    # The page logs each response.done and its clock a terminal_response for it: the tool reads one beat of each
    # pair, named by the provider's response.
    log = tmp_path / "guide.events.jsonl"
    log.write_text(done["events"])
    told = [json.loads(line) for line in done["events"].splitlines() if '"terminal_response"' in line]
    terminals = read_events(log).terminals
    assert told and len(terminals) == len(told)
    assert {e.response_id for e in terminals} == {"resp_1"}
