"""speechclock.js's lifecycle in headless Chromium: aborts, state changes, late polls, a suspended
context, a stopped track.

Decisions are held in an OfflineAudioContext (deterministic). The live parts assert only what
the clock guarantees whatever the machine's load: a suspended context renders no frames, so
it decides nothing and its time counts toward no timeout (the timeout comes at the first tick
its context time reaches it, however long the suspension lasted); a stopped track ends the
open beat at the next tick, long before its quiet time could pass. The live parts run at once.
"""

from __future__ import annotations

import json

import pytest
from browser import POST_JS, run_page

from clock.web import script

TIMEOUT_S = 0.5
PAGE = (
    f"const TIMEOUT_S = {TIMEOUT_S};\n"
    + """
const RATE = 48000;
function offline(seconds) {
  const ctx = new OfflineAudioContext(1, seconds * RATE, RATE);
  const voice = new OscillatorNode(ctx, {frequency: 220});
  const gate = new GainNode(ctx, {gain: 0});
  for (const [a, b] of [[0.2, 0.4], [0.6, 1.2]]) { gate.gain.setValueAtTime(0.1, a); gate.gain.setValueAtTime(0, b); }
  const analyser = new AnalyserNode(ctx);
  voice.connect(gate).connect(analyser).connect(ctx.destination);
  voice.start();
  return {ctx, analyser};
}
function record(clock, types) {
  const seen = [];
  for (const type of types) clock.addEventListener(type, (e) => seen.push([type, e.detail]));
  return seen;
}
const TYPES = ['state', 'speaking', 'quiet', 'aborted', 'ended', 'onset-timeout', 'late'];
async function aborts(path) {
  // A terminal response at 0.1 s, a second one at 0.5 s while the guide speaks, end() at 0.9 s.
  const {ctx, analyser} = offline(2);
  const clock = new SpeechClock(analyser, {quiet_s: 0.15}, {path});
  const seen = record(clock, TYPES);
  const events = [['terminal', 0.1], ['terminal', 0.5], ['end', 0.9]];
  if (path === 'worklet') {
    for (const [kind, t] of events) clock.event(kind, t);
    await clock.start();
    await clock.sync();
    await ctx.startRendering();
  } else {
    let next = 0;
    const at = (k) => ctx.suspend(k / 60).then(() => {
      for (; next < events.length && events[next][1] <= ctx.currentTime; next++) {
        clock.event(events[next][0], events[next][1]);
      }
      clock.poll();
      if (k < 110) at(k + 1);
      ctx.resume();
    });
    at(0);
    await ctx.startRendering();
  }
  return {seen, beats: await clock.finish()};
}
async function late() {
  // The poll path misses ticks 20..24: the read at tick 25 comes 6 ticks after the last.
  const {ctx, analyser} = offline(1);
  const clock = new SpeechClock(analyser, {quiet_s: 2}, {path: 'poll'});
  const seen = record(clock, TYPES);
  clock.event('terminal', 0.05);
  const at = (k) => ctx.suspend(k / 60).then(() => {
    if (k < 20 || k >= 25) clock.poll();
    if (k < 50) at(k + 1);
    ctx.resume();
  });
  at(0);
  await ctx.startRendering();
  return {seen: seen.filter(([type]) => type === 'late'), beats: await clock.finish()};
}
const until = (clock, type) => new Promise((resolve) => {
  clock.addEventListener(type, (e) => resolve(e.detail), {once: true});
});
async function suspended(path) {
  // A live context suspended, then told a terminal response: no onset timeout while it stays suspended for
  // twice the timeout on the wall clock.
  const ctx = new AudioContext({sampleRate: RATE});
  await ctx.resume();
  const analyser = new AnalyserNode(ctx);
  new ConstantSourceNode(ctx, {offset: 0}).connect(analyser);
  const clock = new SpeechClock(analyser, {onset_timeout_s: TIMEOUT_S}, {path});
  const seen = record(clock, [...TYPES, 'suspended', 'resumed']);
  const ticks = [];
  clock.addEventListener('tick', (e) => ticks.push(e.detail.t_s));
  await clock.start();
  const gone = until(clock, 'suspended');
  await ctx.suspend();
  await gone;
  clock.terminalResponse();
  await new Promise((r) => setTimeout(r, 2000 * TIMEOUT_S));
  const whileSuspended = seen.map(([type]) => type);
  const back = until(clock, 'resumed');
  await ctx.resume();
  await back;
  const timeout = await until(clock, 'onset-timeout');
  const beats = await clock.finish();
  await ctx.close();
  return {whileSuspended, timeout, ticks, beats, types: seen.map(([type]) => type)};
}
async function stopped(path) {
  // The guide's track stops while it speaks: the beat ends as ended, never quiet.
  const send = new AudioContext({sampleRate: RATE});
  const out = send.createMediaStreamDestination();
  const voice = new OscillatorNode(send, {frequency: 220});
  voice.connect(new GainNode(send, {gain: 0.1})).connect(out);
  voice.start();
  const ctx = new AudioContext({sampleRate: RATE});
  await Promise.all([send.resume(), ctx.resume()]);
  const source = ctx.createMediaStreamSource(out.stream);
  const analyser = new AnalyserNode(ctx);
  source.connect(analyser);
  const clock = new SpeechClock(analyser, {quiet_s: 2.5}, {path, source});
  const seen = record(clock, TYPES);
  await clock.start();
  const speaking = until(clock, 'speaking');
  clock.terminalResponse();
  await speaking;
  const ended = until(clock, 'ended');
  out.stream.getAudioTracks()[0].stop();
  const detail = await ended;
  const beats = await clock.finish();
  await Promise.all([send.close(), ctx.close()]);
  return {detail, beats, types: seen.map(([type]) => type)};
}
async function causes() {
  // A terminal response at 0.1 s; the clock (quiet 0.15 s) declares in the 0.4-0.6 s pause and the page prompts
  // then (its own prompt); a second terminal response at 0.7 s, and a prompt at 0.9 s while the guide speaks (the
  // visitor's). Each told now, as a live page tells them.
  const {ctx, analyser} = offline(2);
  const lines = [];
  const capture = {
    log: (type, fields = {}) => lines.push({type, ...fields}),
    logLevel: (level, fields = {}) => fields.frame,
  };
  const clock = new SpeechClock(analyser, {quiet_s: 0.15}, {path: 'poll', capture});
  let declared = false, step = 0;
  clock.addEventListener('quiet', () => { declared = true; });
  const at = (k) => ctx.suspend(k / 60).then(() => {
    const now = ctx.currentTime;
    if (step === 0 && now >= 0.1) { clock.terminalResponse(); step = 1; }
    else if (step === 1 && declared) { clock.prompt(); step = 2; }
    else if (step === 2 && now >= 0.7) { clock.terminalResponse(); step = 3; }
    else if (step === 3 && now >= 0.9) { clock.prompt(); step = 4; }
    clock.poll();
    if (k < 110) at(k + 1);
    ctx.resume();
  });
  at(0);
  await ctx.startRendering();
  await clock.finish();
  return lines.filter((x) => x.type === 'prompt');
}
(async () => {
  const out = {};
  out.causes = await causes();
  for (const path of ['poll', 'worklet']) out[`aborts-${path}`] = await aborts(path);
  out.late = await late();
  // The live parts at once (each on its own contexts).
  const live = [];
  for (const path of ['poll', 'worklet']) {
    live.push(suspended(path).then((r) => { out[`suspended-${path}`] = r; }));
    live.push(stopped(path).then((r) => { out[`stopped-${path}`] = r; }));
  }
  await Promise.all(live);
  await post('/done', JSON.stringify(out));
})();
"""
)


@pytest.fixture(scope="module")
def results():
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    html = f"<!DOCTYPE html><html><body><script>{POST_JS}\n{script()}\n{PAGE}</script></body></html>"
    return json.loads(run_page(html, timeout_s=120)["/done"])


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_end_and_a_superseding_terminal_emit_aborted_and_each_state_change_one_state(results, path):
    r = results[f"aborts-{path}"]
    aborted = [d["reason"] for kind, d in r["seen"] if kind == "aborted"]
    assert aborted == ["superseded", "end"]
    changes = [(d["from"], d["to"]) for kind, d in r["seen"] if kind == "state"]
    # The second terminal response takes speaking to waiting in one change, not two.
    assert changes == [
        ("idle", "waiting"),
        ("waiting", "speaking"),
        ("speaking", "waiting"),
        ("waiting", "speaking"),
        ("speaking", "idle"),
    ]
    assert not any(kind == "quiet" for kind, _ in r["seen"])
    assert [b["ended"] for b in r["beats"]] == ["superseded", "end"]
    assert all(b["aborted"] and b["quiet_declared_s"] is None for b in r["beats"])


def test_a_late_poll_emits_late_and_marks_the_beat(results):
    r = results["late"]
    (late,) = [d for _, d in r["seen"]]
    # Ticks 19 and 25 read at frames 15232 and 20096 (the first quantum boundaries at or after k * 800).
    assert late["frame"] == 20096 and late["gap_s"] == pytest.approx((20096 - 15232) / 48000)
    (beat,) = r["beats"]
    assert beat["late"]


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_a_suspended_context_emits_suspended_and_its_time_counts_toward_no_timeout(results, path):
    r = results[f"suspended-{path}"]
    assert "suspended" in r["whileSuspended"] and "onset-timeout" not in r["whileSuspended"]
    assert r["types"].index("resumed") < r["types"].index("onset-timeout")
    (beat,) = r["beats"]
    assert beat["no_onset"] and beat["ended"] == "onset-timeout"
    # On the context's clock the timeout came at the first tick the timeout after the terminal response, though
    # twice that passed on the wall clock while the context was suspended (and however late the ticks came).
    terminal, at, ticks = r["timeout"]["terminal_s"], r["timeout"]["t_s"], r["ticks"]
    k = ticks.index(at)
    assert ticks[k] - terminal >= TIMEOUT_S - 1e-9 > ticks[k - 1] - terminal


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_a_stopped_track_ends_the_open_beat_as_ended_never_quiet(results, path):
    r = results[f"stopped-{path}"]
    assert r["detail"]["reason"] == "track-ended"
    (beat,) = r["beats"]
    assert beat["ended"] == "track-ended" and beat["aborted"] and beat["quiet_declared_s"] is None
    assert "quiet" not in r["types"]


def test_a_prompt_told_now_says_who_caused_it_the_page_after_its_clock_declared_else_the_visitor(results):
    assert [x.get("cause") for x in results["causes"]] == ["page", "visitor"]
