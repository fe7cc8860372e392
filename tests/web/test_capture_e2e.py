"""End to end in a real browser: capture as docs/capture.md says, then analyse with speechclock.

A page in headless Chromium plays a synthetic voice (an OscillatorNode gated
on and off at known times) into a MediaStream, records it with the recorder
helper of docs/capture.js (the file users copy, loaded verbatim), runs its own clock on an
AnalyserNode with the level function of docs/capture.md, logs the terminal
response and the clock's decision the same way, and posts the WebM and the
event log back. speechclock must decode that WebM, find the utterances and
gaps within one tick, and its replay must agree with the page's live clock
within one tick plus the recorder's latency.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser import POST_JS, run_page

DOC = Path(__file__).resolve().parents[2] / "docs" / "capture.md"
HELPERS = Path(__file__).resolve().parents[2] / "docs" / "capture.js"
TICK = 1 / 60
# (start, end) of each utterance in seconds after the terminal response.
UTTERANCES = [(0.30, 0.80), (1.10, 1.60), (2.30, 2.80), (3.70, 4.20)]
GAPS = [b[0] - a[1] for a, b in zip(UTTERANCES, UTTERANCES[1:])]  # 0.3, 0.7, 0.9 s
QUIET_S = 1.2  # the page's clock: longer than every gap
WINDOW_S = 2048 / 48000


def capture_helper() -> str:
    """docs/capture.js, the file users copy into their page."""
    helper = HELPERS.read_text()
    assert "function startRecorderCapture" in helper and "function startLosslessCapture" in helper
    return helper


def doc_block(marker: str) -> str:
    """The JavaScript block of docs/capture.md that contains ``marker``, verbatim."""
    blocks = re.findall(r"```js\n(.*?)```", DOC.read_text(), re.S)
    return next(b for b in blocks if marker in b)


def page() -> str:
    plan = json.dumps(UTTERANCES)
    return f"""<!DOCTYPE html><html><body><script>
{POST_JS}
{capture_helper()}
(async () => {{
  const ctx = new AudioContext({{sampleRate: 48000}});
  await ctx.resume();
  const voice = new OscillatorNode(ctx, {{frequency: 330}});
  const gate = new GainNode(ctx, {{gain: 0}});
  const remote = ctx.createMediaStreamDestination();   // stands in for the remote WebRTC stream
  voice.connect(gate).connect(remote);
  voice.start();
  const capture = startRecorderCapture(remote.stream);
  // The page's own clock, with the level function of docs/capture.md.
  const audioContext = ctx, remoteStream = remote.stream;
  // Section 1's analyser, on the source of the stream; then section 2's level.
  const source = audioContext.createMediaStreamSource(remoteStream);
  const analyser = new AnalyserNode(audioContext);
  source.connect(analyser);
  {doc_block("function level()")}
  let state = "idle", lastWord = 0;
  // How late the page ran, measured rather than assumed: the longest interval between two ticks,
  // and the range of the audio clock's lag behind the wall clock (a busy machine stalls rendering,
  // and the recorder's timeline, stamped by the wall clock, then runs ahead of the schedule).
  const wall0 = performance.now(), audio0 = ctx.currentTime;
  let lastTick = wall0, maxTickMs = 0, lagMinMs = Infinity, lagMaxMs = -Infinity;
  setInterval(() => {{
    const now = performance.now(), speech = level() > 0.003;
    const lagMs = (now - wall0) - (ctx.currentTime - audio0) * 1000;
    lagMinMs = Math.min(lagMinMs, lagMs); lagMaxMs = Math.max(lagMaxMs, lagMs);
    maxTickMs = Math.max(maxTickMs, now - lastTick); lastTick = now;
    if (state === "waiting" && speech) {{ state = "speaking"; lastWord = now; }}
    else if (state === "speaking") {{
      if (speech) lastWord = now;
      else if (now - lastWord >= {QUIET_S * 1000}) {{ state = "idle"; capture.log("clock.quiet"); }}
    }}
  }}, 1000 / 60);
  await new Promise(r => setTimeout(r, 700));           // let the recorder start
  const t0 = ctx.currentTime + 0.05;
  setTimeout(() => {{ capture.log("terminal_response", {{linger_s: 0.5}}); state = "waiting"; }}, 50);
  for (const [a, b] of {plan}) {{
    gate.gain.setValueAtTime(0.2, t0 + a);
    gate.gain.setValueAtTime(0, t0 + b);
  }}
  await new Promise(r => setTimeout(r, {(UTTERANCES[-1][1] + QUIET_S + 1.0) * 1000}));
  capture.log("end");
  const {{audio, events, names}} = await capture.stop();
  await post('/audio', audio);
  await post('/events', events);
  await post('/done', JSON.stringify({{mime: audio.type, names, outputLatency: ctx.outputLatency,
                                        maxTickMs, lagMinMs, lagMaxMs}}));
}})();
</script></body></html>"""


def test_capture_guide_recording_is_analysed_within_one_tick(chromium, tmp_path, cli):
    posted = run_page(page())
    meta = json.loads(posted["/done"])
    assert meta["mime"].startswith("audio/webm")
    # On a busy machine rendering stalls, and the recording drifts from the schedule by at most the
    # range of the audio clock's lag the page measured (about 0 on a quiet machine); the page's own
    # clock and its log run late by at most its longest tick past one tick, plus that drift.
    drift = (meta["lagMaxMs"] - meta["lagMinMs"]) / 1000
    late = max(0.0, meta["maxTickMs"] / 1000 - TICK) + drift
    # A unique name per session, its extension from the recorder's actual mimeType.
    assert re.fullmatch(r"session-\d{8}T\d{6}Z-[0-9a-f]{8}\.webm", meta["names"]["audio"])
    assert meta["names"]["events"] == meta["names"]["audio"][: -len(".webm")] + ".events.jsonl"
    rec = tmp_path / "tour.webm"
    rec.write_bytes(posted["/audio"])
    (tmp_path / "tour.events.jsonl").write_bytes(posted["/events"])

    info = json.loads(cli("info", rec, "--format", "json").stdout)
    assert info["codec"] == "opus" and info["sample_rate_hz"] == 48000

    seg = json.loads(cli("segments", rec, "--format", "json").stdout)
    found = seg["segments"]
    assert len(found) == len(UTTERANCES)
    # The recording starts a little after the page's clock: take that offset from
    # the first onset at render-quantum resolution, then hold every boundary to it.
    offset = found[0]["onset_quantum_s"] - UTTERANCES[0][0]
    eps = 0.005  # codec ramp and one render quantum
    for s, (a, b) in zip(found, UTTERANCES):
        assert a + offset - eps - drift <= s["onset_quantum_s"] <= a + offset + eps + drift
        # The clock's tick sees the onset within one tick of it ...
        assert s["onset_quantum_s"] - eps <= s["onset_s"] <= s["onset_quantum_s"] + TICK + eps
        # ... and the last word until the speech has left the analyser's window.
        lo, hi = b + offset + WINDOW_S - TICK - eps - drift, b + offset + WINDOW_S + eps + drift
        assert lo <= s["last_word_s"] <= hi
    long_gaps = [g for g in seg["gaps_s"] if g >= 0.15]
    assert len(long_gaps) == len(GAPS)

    beats = json.loads(cli("beats", rec, "--format", "json", "--quiet-time", QUIET_S).stdout)["beats"]
    (beat,) = beats
    # Against the log, times also carry the recorder's start-up latency.
    assert beat["onset_latency_s"] == pytest.approx(UTTERANCES[0][0], abs=TICK + 0.15 + late)
    assert beat["gaps_s"] == pytest.approx(long_gaps, abs=1e-9)
    # The page's own clock, polling its analyser live, and speechclock's replay
    # of the recording declare the beat over at the same time, within one tick
    # plus the recorder's latency and the page timer's jitter; on a busy machine, plus how late the
    # page measured its own ticks and its audio clock to run.
    assert beat["logged_quiet_s"] is not None and beat["quiet_declared_s"] is not None
    assert abs(beat["replay_vs_logged_s"]) <= TICK + 0.1 + late
