"""speechclock.js on a remote WebRTC track, and in a page that is frozen, in headless Chromium.

A remote track starts muted (until its first packets arrive): that is no end. The page here tells the clock its
terminal response before ``start()``, on a track still muted, as a page that wires the clock in ``ontrack`` does;
the beat must end quiet after the far side speaks, and the log must hold no ``end``. Once the track was unmuted,
a mute (the far side stops sending: the transceiver renegotiated ``inactive``) ends the open beat as
``track-muted``. A page frozen through the DevTools protocol (``Page.setWebLifecycleState``: the page's
``freeze``, then ``resume``) emits ``frozen`` with the context time that passed and logs ``clock.frozen``, on both
paths. What is asserted holds whatever the machine's load: each step waits for the event it needs.
"""

from __future__ import annotations

import json
import time

import pytest
from browser import POST_JS, WEBRTC_FLAGS, DevTools, run_page

from clock.web import script

FREEZE_S = 0.5

PAGE = """
const RATE = 48000;
const until = (target, type) => new Promise((resolve) => {
  target.addEventListener(type, (e) => resolve(e.detail), {once: true});
});
function capture(lines) {
  return {log: (type, fields = {}) => lines.push({type, ...fields}), logLevel: () => undefined};
}
async function negotiate(pc1, pc2) {
  await pc1.setLocalDescription(await pc1.createOffer());
  await pc2.setRemoteDescription(pc1.localDescription);
  await pc2.setLocalDescription(await pc2.createAnswer());
  await pc1.setRemoteDescription(pc2.localDescription);
}
async function remote(path) {
  const send = new AudioContext({sampleRate: RATE});
  const out = send.createMediaStreamDestination();
  const voice = new OscillatorNode(send, {frequency: 220});
  const gate = new GainNode(send, {gain: 0});
  voice.connect(gate).connect(out);
  voice.start();
  const ctx = new AudioContext({sampleRate: RATE});
  await Promise.all([send.resume(), ctx.resume()]);
  const pc1 = new RTCPeerConnection(), pc2 = new RTCPeerConnection();
  pc1.onicecandidate = (e) => e.candidate && pc2.addIceCandidate(e.candidate);
  pc2.onicecandidate = (e) => e.candidate && pc1.addIceCandidate(e.candidate);
  pc1.addTrack(out.stream.getAudioTracks()[0], out.stream);
  const lines = [];
  const started = new Promise((resolve) => {
    pc2.ontrack = (e) => {
      // The page wires its clock as the track arrives, muted, and has its terminal response already.
      const mutedAtStart = e.track.muted;
      // Chromium renders a remote stream into Web Audio only while a media element plays it.
      const player = new Audio();
      player.muted = true;
      player.srcObject = e.streams[0];
      player.play();
      const source = ctx.createMediaStreamSource(e.streams[0]);
      const analyser = new AnalyserNode(ctx);
      source.connect(analyser);
      const clock = new SpeechClock(analyser, {quiet_s: 0.3}, {path, source, capture: capture(lines)});
      const seen = [];
      for (const type of ['track', 'ended', 'aborted', 'quiet', 'speaking']) {
        clock.addEventListener(type, (ev) => seen.push([type, ev.detail]));
      }
      clock.terminalResponse();
      resolve(clock.start().then(() => ({clock, seen, mutedAtStart, track: e.track})));
    };
  });
  await negotiate(pc1, pc2);
  const {clock, seen, mutedAtStart, track} = await started;
  const quiet = until(clock, 'quiet');
  if (track.muted) await until(track, 'unmute');
  const t = send.currentTime + 0.1;
  gate.gain.setValueAtTime(0.1, t);
  gate.gain.setValueAtTime(0, t + 0.4);
  await quiet;
  const before = lines.map((l) => l.type);
  // The far side stops sending: the remote track mutes, and the open beat ends.
  clock.terminalResponse();
  const ended = until(clock, 'ended');
  pc1.getTransceivers()[0].direction = 'inactive';
  await negotiate(pc1, pc2);
  const detail = await ended;
  const beats = await clock.finish();
  pc1.close(); pc2.close();
  await Promise.all([send.close(), ctx.close()]);
  return {mutedAtStart, before, detail, beats, seen: seen.map(([type, d]) => [type, d.type || d.reason || null])};
}
async function frozen() {
  const ctx = new AudioContext({sampleRate: RATE});
  await ctx.resume();
  const analyser = new AnalyserNode(ctx);
  new ConstantSourceNode(ctx, {offset: 0}).connect(analyser);
  const clocks = [];
  for (const path of ['poll', 'worklet']) {
    const lines = [];
    const clock = new SpeechClock(analyser, {}, {path, capture: capture(lines)});
    const seen = [];
    clock.addEventListener('frozen', (e) => seen.push(e.detail));
    await clock.start();
    clocks.push({path, clock, lines, seen});
  }
  // Frozen once the context has run for a while.
  await new Promise((resolve) => {
    const check = () => (ctx.currentTime > 0.3 ? resolve() : setTimeout(check, 20));
    check();
  });
  const wall = performance.now();
  const resumed = until(document, 'resume');
  await post('/freeze', '');
  await resumed;
  const wall_s = (performance.now() - wall) / 1000;
  const out = {};
  for (const {path, clock, lines, seen} of clocks) {
    await clock.finish();
    out[path] = {seen, lines: lines.filter((l) => l.type === 'clock.frozen'), rate: clock.rate};
  }
  await ctx.close();
  return {wall_s, clocks: out};
}
(async () => {
  const out = {};
  for (const path of ['poll', 'worklet']) out[`remote-${path}`] = await remote(path);
  out.frozen = await frozen();
  await post('/done', JSON.stringify(out));
})();
"""


def freeze(tools: DevTools, _body: bytes) -> None:
    """Freeze the page for FREEZE_S, then make it active again (the Page Lifecycle API's freeze and resume)."""
    pages = [t for t in tools.send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
    session = tools.send("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True})["sessionId"]
    tools.send("Page.setWebLifecycleState", {"state": "frozen"}, session=session)
    time.sleep(FREEZE_S)
    tools.send("Page.setWebLifecycleState", {"state": "active"}, session=session)


@pytest.fixture(scope="module")
def results():
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    html = f"<!DOCTYPE html><html><body><script>{POST_JS}\n{script()}\n{PAGE}</script></body></html>"
    posted = run_page(html, timeout_s=120, flags=tuple(WEBRTC_FLAGS), devtools={"/freeze": freeze})
    return json.loads(posted["/done"])


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_a_remote_track_that_starts_muted_is_no_end(results, path):
    r = results[f"remote-{path}"]
    assert r["mutedAtStart"], "the remote track was not muted when the clock started: the test proves nothing"
    # Until the far side stopped sending: no end logged, no track event, and the beat ended quiet.
    assert "end" not in r["before"] and "clock.quiet" in r["before"]
    first = r["beats"][0]
    assert first["ended"] == "quiet" and not first["aborted"]
    quiet_at = r["seen"].index(["quiet", None])
    assert ["track", "mute"] not in r["seen"][:quiet_at]


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_a_track_muted_after_it_was_unmuted_ends_the_open_beat(results, path):
    r = results[f"remote-{path}"]
    assert r["detail"]["reason"] == "track-muted"
    assert [b["ended"] for b in r["beats"]] == ["quiet", "track-muted"]
    assert r["seen"].count(["track", "mute"]) == 1


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_a_frozen_page_emits_frozen_and_logs_the_context_time_that_passed(results, path):
    r = results["frozen"]
    one = r["clocks"][path]
    (seen,) = one["seen"]
    (line,) = one["lines"]
    # The page was frozen for about FREEZE_S of wall time (within what the page measured around it); the context time
    # that passed meanwhile (Chromium stops a frozen page's audio) is in the log, in frames.
    # (The page's freeze event and the DevTools command's reply race: at least most of FREEZE_S lies between them.)
    assert FREEZE_S / 2 <= seen["frozen_s"] <= r["wall_s"] + 0.001
    assert abs(line["frozen_s"] - seen["frozen_s"]) <= 0.0005 + 1e-9  # the log's milliseconds
    assert line["gap_frames"] == round(seen["gap_s"] * one["rate"])
    assert 0 <= seen["gap_s"] <= seen["frozen_s"] + 0.05
    # Chromium renders no audio for a frozen page (docs/clock.md says so): its context's time barely moved.
    assert seen["gap_s"] < seen["frozen_s"] / 2
    assert seen["frozen_at_s"] > 0.3
