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
import math
import re
from pathlib import Path

import soundfile as sf
from browser import POST_JS, WEBRTC_FLAGS, run_page

from clock.io.events import read_events
from clock.web import script

DOCS = Path(__file__).resolve().parents[2] / "docs"
FLAGS = (*WEBRTC_FLAGS, "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream")


def blocks(doc: str) -> list[str]:
    return re.findall(r"```js\n(.*?)```", (DOCS / doc).read_text(encoding="utf-8"), re.S)


# The far side: a voice (a tone, gated) into a peer connection.
FAR = """
function farSide(auto = true) {
  const ctx = new AudioContext();
  const out = ctx.createMediaStreamDestination();
  const voice = new OscillatorNode(ctx, {frequency: 220});
  const gate = new GainNode(ctx, {gain: 0});
  voice.connect(gate).connect(out);
  voice.start();
  const pc = new RTCPeerConnection();
  pc.addTrack(out.stream.getAudioTracks()[0], out.stream);
  // Half a second of voice, starting 0.3 s from now.
  pc.speak = () => {
    const t = ctx.currentTime + 0.3;
    gate.gain.setValueAtTime(0.1, t);
    gate.gain.setValueAtTime(0, t + 0.5);
  };
  if (auto) pc.speak();
  return pc;
}
const gathered = (pc) => new Promise((resolve) => {
  if (pc.iceGatheringState === 'complete') resolve();
  pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve());
});
"""


def run_blocks(code: list[str], before: str, after: str, between: dict[int, str] | None = None) -> dict:
    """Run the blocks in order in one async scope, ``before`` them, ``between[i]`` before block ``i`` (from 1: what
    the page and the far side do meanwhile) and ``after`` them; returns what the page posted, ``/done`` parsed."""
    steps = "\n".join(f"{(between or {}).get(i + 1, '')}\n  step = {i + 1};\n{block}" for i, block in enumerate(code))
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
    posted = run_page(html, timeout_s=120, flags=FLAGS)
    return {**posted, "/done": json.loads(posted["/done"])}


def max_tick_gap_s(events: Path, rate: int) -> float:
    """The longest interval between two clock.level readings of a log (the page's timer ticks), in seconds."""
    lines = [json.loads(line) for line in events.read_text().splitlines() if '"clock.level"' in line]
    frames = [line["frame"] for line in lines]
    return max(b - a for a, b in zip(frames, frames[1:])) / rate


def passes_check_at_the_pages_ticks(cli, folder: Path, audio: Path, events: Path) -> None:
    """The capture passes ``check``: its ``logged-quiet`` allows the page's own tick intervals.

    Replayed at the page's own ticks (its clock.level frames: ``beats --page-ticks``), the tool decides at the
    page's tick, to the frame. ``check``'s ``logged-quiet`` replays on the recording's regular grid instead, which
    starts at the capture's first frame, and allows one tick: the page's ticks (a timer's, which a busy page
    delays; or the worklet's, on the context's grid, offset from the recording's) can put the page's last word and
    its declaration each up to an interval between ticks away from the replay's, so that check may fail by up to
    the longest interval between the page's ticks plus the replay's; every other check passes.
    """
    (at_page,) = json.loads(cli("beats", audio, "--format", "json", "--page-ticks").stdout)["beats"]
    assert at_page["logged_quiet_s"] is not None and at_page["quiet_declared_s"] == at_page["logged_quiet_s"]
    rate = sf.info(str(audio)).samplerate
    # The replay's longest interval between ticks at 1/60 s: 896 frames at 48 kHz.
    bound = max_tick_gap_s(events, rate) + 128 * math.ceil(rate / 60 / 128) / rate + 1e-6
    results = json.loads(cli("check", folder, "--format", "json").stdout)["results"]
    # check allows the page's tick intervals in its logged-quiet comparison: the capture passes every check.
    assert [r["line"] for r in results if r["applicable"] and not r["passed"]] == []
    for r in results:
        if r["check"] == "logged-quiet" and r["applicable"]:
            assert r["measured"] is None or r["measured"] <= bound, r["line"]


CHECK_CONFIG = """[thresholds]
floor = 0.003
quiet_s = 2.5
onset_timeout_s = 10.0
tick_s = "1/60"
fft_size = 2048

[agreement]
lossless_tolerance = 0.0
"""


def test_every_capture_md_example_runs_as_written_and_its_capture_passes_check(chromium, cli, tmp_path):
    code = blocks("capture.md")
    # Section 1 (the helper, then the session started and the page's handlers), 2 (the level), 3 (the clock, and
    # the end of the session).
    assert len(code) == 4 and "captureSession(pc" in code[1] and "endSession" in code[3]
    before = """
  // The page's own peer connection and events channel, connected to the far side.
  const far = farSide(false);
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
    # Once the page's clock ticks: the backend's terminal response, then the guide speaks for half a second; the
    # session ends once the page's clock (section 3's) has heard the speech and declared the beat over.
    after = """
  onTerminalResponse();
  far.speak();
  let heard = false;
  while (!(heard && lastWord === null)) {
    await new Promise((r) => setTimeout(r, 50));
    heard = heard || lastWord !== null;
  }
  const result = await endSession();
  await post('/audio', result.audio);
  await post('/events', result.events);
  await post('/done', JSON.stringify({steps: step, names: result.names}));
"""
    posted = run_blocks(code, before, after)
    done = posted["/done"]
    assert done["steps"] == len(code)
    audio = tmp_path / done["names"]["audio"]
    audio.write_bytes(posted["/audio"])
    (tmp_path / done["names"]["events"]).write_bytes(posted["/events"])
    (tmp_path / "speechclock.toml").write_text(CHECK_CONFIG)
    data = json.loads(cli("beats", audio, "--format", "json").stdout)
    a = data["agreement"]
    # Every reading of section 2's level is the capture's, bit for bit: the analyser reads what it records.
    assert a["n_compared"] >= 0.9 * a["n_readings"] > 100
    assert a["exact"] and a["n_exact"] == a["n_compared"] and a["n_floor_disagree"] == 0
    (beat,) = data["beats"]
    assert beat["logged_quiet_s"] is not None
    passes_check_at_the_pages_ticks(cli, tmp_path, audio, tmp_path / done["names"]["events"])


def test_every_clock_md_example_runs_as_written_and_its_capture_passes_check(chromium, cli, tmp_path):
    code = blocks("clock.md")
    assert len(code) >= 2 and any("startGuide" in b for b in code)
    before = """
  // A stand-in for OpenAI's Realtime endpoint: answers the offer with a local peer connection
  // that plays a voice and sends terminal response.done events on the events channel.
  const realFetch = window.fetch.bind(window);
  window.fetch = async (url, init) => {
    if (!String(url).startsWith('https://api.openai.com/v1/realtime/calls')) return realFetch(url, init);
    const far = farSide(false);
    far.ondatachannel = (e) => {
      const channel = e.channel;
      // The guide's response: response.done, half a second of voice (from 0.3 s on), and its audio buffer's
      // output_audio_buffer.stopped as the voice ends.
      window.respond = () => {
        channel.send(JSON.stringify({type: 'response.done', response: {id: 'resp_1', output: []}}));
        far.speak();
        const stopped = JSON.stringify({type: 'output_audio_buffer.stopped', response_id: 'resp_1'});
        setTimeout(() => channel.send(stopped), 800);
      };
    };
    await far.setRemoteDescription({type: 'offer', sdp: init.body});
    await far.setLocalDescription(await far.createAnswer());
    await gathered(far);
    return new Response(far.localDescription.sdp, {status: 201, headers: {'Content-Type': 'application/sdp'}});
  };
"""
    after = """
  const guide = await startGuide('ek_test');
  const heard = [];
  for (const type of ['state', 'speaking', 'quiet', 'ended', 'track', 'fallback']) {
    guide.clock.addEventListener(type, (e) => heard.push(type === 'state' ? `state:${e.detail.to}` : type));
  }
  const quiet = new Promise((resolve) => guide.clock.addEventListener('quiet', resolve, {once: true}));
  // The guide responds once the page runs: its response.done opens a beat, it speaks, its audio drains.
  window.respond();
  await quiet;
  const saved = await guide.capture.stop();
  await post('/audio', saved.audio);
  await post('/done', JSON.stringify({steps: step, path: guide.clock.path, heard, beats: guide.clock.beats,
                                      events: saved.events, names: saved.names}));
"""
    posted = run_blocks(code, before, after)
    done = posted["/done"]
    assert done["steps"] == len(code)
    assert done["path"] == "worklet"
    # The remote track started muted (no end for that): the beat opened, heard the guide and ended quiet.
    assert done["heard"] == ["state:waiting", "speaking", "state:speaking", "quiet", "state:idle"]
    (beat,) = done["beats"]
    assert beat["ended"] == "quiet" and beat["stopped_s"] is not None
    # The capture the example saves passes check at the setting the page logged.
    audio = tmp_path / done["names"]["audio"]
    audio.write_bytes(posted["/audio"])
    (tmp_path / done["names"]["events"]).write_text(done["events"])
    (tmp_path / "speechclock.toml").write_text(CHECK_CONFIG)
    passes_check_at_the_pages_ticks(cli, tmp_path, audio, tmp_path / done["names"]["events"])
    # The page logs the response.done and its clock a terminal_response for it: the tool reads one beat of the
    # pair, named by the provider's response.
    told = [json.loads(line) for line in done["events"].splitlines() if '"terminal_response"' in line]
    terminals = read_events(tmp_path / done["names"]["events"]).terminals
    assert len(told) == len(terminals) == 1 and terminals[0].response_id == "resp_1"
    # The page logs each response.done and its clock a terminal_response for it: the tool reads one beat of each
    # pair, named by the provider's response.
    log = tmp_path / "guide.events.jsonl"
    log.write_text(done["events"])
    told = [json.loads(line) for line in done["events"].splitlines() if '"terminal_response"' in line]
    terminals = read_events(log).terminals
    assert told and len(terminals) == len(told)
    assert {e.response_id for e in terminals} == {"resp_1"}
