"""speechclock.js decides as the replay does, tick for tick, in headless Chromium.

The page clock (clock/web/speechclock.js, also docs/speechclock.js) runs in an
OfflineAudioContext over the bundled recordings and over constructed and random
tours (pauses while speaking and waiting, an acknowledgment over the terminal
response, aborted beats, silent beats, events exactly on a tick), suspended at
every tick of the trace. Its level, its state at every tick and every beat's
decisions must equal :func:`clock.core.beats.replay_ticks`; a failure names the
first tick where they part.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from browser import LOOPBACK_JS, POST_JS, WEBRTC_FLAGS, DevTools, run_page
from page_clock import BEAT_FIELDS, bundled_cases, constructed_tour, first_parting, offline_page, parting, random_tours

from clock.core.agreement import page_trace
from clock.core.beats import replay_ticks
from clock.io.recording import read_recording
from clock.web import PAGE_KEYS, script

ROOT = Path(__file__).resolve().parent.parent


def test_docs_script_is_the_shipped_one_not_a_copy():
    docs = ROOT / "docs" / "speechclock.js"
    assert docs.is_symlink() and docs.read_text(encoding="utf-8") == script()


def test_derive_js_is_the_recommendation_with_the_keys_the_clock_reads(cli):
    recordings = ROOT / "recordings"
    text = cli("derive", recordings, "--format", "js", "--no-progress").stdout
    assert text.startswith("// speechclock: derive ")
    config = json.loads(text.split("const SPEECHCLOCK_CONFIG = ", 1)[1].rstrip().rstrip(";"))
    assert tuple(config) == PAGE_KEYS
    recommended = json.loads(cli("derive", recordings, "--format", "json", "--no-progress").stdout)["groups"][0]
    assert {k: config[k] for k in recommended["recommended"]} == recommended["recommended"]
    assert config["tick_s"] == "1/60" and config["fft_size"] == 2048


def test_page_clock_decides_as_the_replay_tick_for_tick(chromium):
    cases = bundled_cases() + [constructed_tour(s) for s in range(3)] + random_tours(5) + random_tours(6)
    html, files = offline_page(cases)
    results = json.loads(run_page(html, timeout_s=300, files=files)["/done"])
    assert len(results) == len(cases)
    partings = [
        f"{path}: {p}"
        for c, both in zip(cases, results)
        for path, r in zip(("poll", "worklet"), both)
        if (p := first_parting(c, r))
    ]
    assert not partings, "\n".join(partings)
    # The cases reach every path of the clock.
    outcomes = [b for both in results for r in both for b in r["beats"]]
    assert any(b["aborted"] for b in outcomes) and any(b["no_onset"] for b in outcomes)
    assert sum(b["quiet_declared_s"] is not None for b in outcomes) >= 10


# --- live: the clock on the receiving side of a two-RTCPeerConnection loopback ------------------

RATE = 48000
LIVE = {"floor": 0.003, "quiet_s": 1.0, "onset_timeout_s": 2.0, "tick_s": "1/60", "fft_size": 2048}
# Seconds after the sender starts: where its voice plays, and what the page tells the clock.
SPEECH = [(0.6, 4), (4.3, 3), (7.3, 3), (12.8, 4)]
PAGE_EVENTS = [
    (0.3, "terminalResponse", {"linger_s": 0.5}),
    (2.6, "pause", {}),  # the quiet count freezes, so the 1.7 s gap does not end the beat
    (4.0, "resume", {}),
    (7.0, "terminalResponse", {}),
    (8.0, "end", {}),  # aborted while speaking
    (10.0, "terminalResponse", {}),  # silent: the onset timeout
    (13.0, "terminalResponse", {"linger_s": 0.25}),  # an acknowledgment is playing
]
SESSION_S = 16.5


def live_page(path: str, *, hidden: bool = False) -> str:
    from signals import voice

    x = np.zeros(int(SESSION_S * RATE), np.float32)
    for i, (at, syllables) in enumerate(SPEECH):
        v = voice(RATE, seed=20 + i, syllables=syllables, amplitude=0.3)
        x[int(at * RATE) : int(at * RATE) + v.size] = v[: x.size - int(at * RATE)]
    pcm = base64.b64encode(x.astype("<f4").tobytes()).decode("ascii")
    return f"""<!DOCTYPE html><html><body><script>
{POST_JS}
{LOOPBACK_JS}
{(ROOT / "docs" / "capture.js").read_text()}
{(ROOT / "docs" / "speechclock.js").read_text()}
(async () => {{
  const RATE = {RATE}, PATH = '{path}', HIDDEN = {json.dumps(hidden)};
  const visibility = [];
  document.addEventListener('visibilitychange', () => visibility.push(document.visibilityState));
  const send = new AudioContext({{sampleRate: RATE}});
  const bytes = Uint8Array.from(atob('{pcm}'), (c) => c.charCodeAt(0));
  const samples = new Float32Array(bytes.buffer);
  const buffer = send.createBuffer(1, samples.length, RATE);
  buffer.copyToChannel(samples, 0);
  const out = send.createMediaStreamDestination();
  const remoteStream = await loopback(out.stream);
  const player = new Audio();
  player.muted = true;
  player.srcObject = remoteStream;
  await player.play();

  // The receiving page, as docs/clock.md says.
  const audioContext = new AudioContext({{sampleRate: RATE}});
  await audioContext.resume();
  const source = audioContext.createMediaStreamSource(remoteStream);
  const analyser = new AnalyserNode(audioContext, {{fftSize: 2048}});
  source.connect(analyser);
  const capture = await startLosslessCapture(audioContext, source);
  const clock = new SpeechClock(analyser, {json.dumps(LIVE)}, {{capture, path: PATH}});
  const heard = [];
  for (const type of ['speaking', 'quiet', 'onset-timeout', 'ready']) {{
    clock.addEventListener(type, (e) => heard.push([type, e.detail.t_s]));
  }}
  await new Promise((r) => setTimeout(r, 500));   // the analyser's window lies inside the capture
  const ticks = [];
  clock.addEventListener('tick', (e) => ticks.push([e.detail.frame, e.detail.state]));
  await clock.start();
  if (HIDDEN) await post('/hide', '');  // the test opens another tab over this one: it is hidden from now on
  if (clock.path !== PATH) throw new Error(`start() chose ${{clock.path}}`);
  const voice = new AudioBufferSourceNode(send, {{buffer}});
  voice.connect(out);
  voice.start(send.currentTime + 0.05);
  for (const [at, method, fields] of {json.dumps(PAGE_EVENTS)}) {{
    setTimeout(() => clock[method](fields), 50 + at * 1000);
  }}
  await new Promise((r) => setTimeout(r, 50 + {SESSION_S} * 1000));
  const beats = await clock.finish();
  const a = await capture.stop();
  await post('/audio', a.audio);
  await post('/events', a.events);
  await post('/done', JSON.stringify({{ticks, beats, heard, names: a.names, visibility}}));
}})();
</script></body></html>"""


def hide(tools: DevTools) -> None:
    """Open a tab in front of the page: the page is hidden (``visibilityState`` "hidden")."""
    tools.send("Target.createTarget", {"url": "about:blank"})


@pytest.mark.slow
@pytest.mark.parametrize(("path", "hidden"), [("worklet", False), ("poll", False), ("worklet", True)])
def test_page_clock_live_over_webrtc_decides_as_the_replay_of_its_capture(chromium, tmp_path, path, hidden):
    devtools = {"/hide": hide} if hidden else None
    posted = run_page(live_page(path, hidden=hidden), flags=tuple(WEBRTC_FLAGS), devtools=devtools)
    done = json.loads(posted["/done"])
    audio = tmp_path / done["names"]["audio"]
    audio.write_bytes(posted["/audio"])
    (tmp_path / done["names"]["events"]).write_bytes(posted["/events"])
    rec = read_recording(audio, quantum=True)
    log = rec.events
    assert log is not None and log.start is not None and log.start.exact
    start = log.start.frame
    trace = page_trace(rec.quantum, log.readings, start=log.start, ticks=rec.trace.ticks)
    th = LIVE
    played = replay_ticks(trace, log, floor=th["floor"], quiet_s=th["quiet_s"], onset_timeout_s=th["onset_timeout_s"])
    # The page's ticks inside the capture (the first ones read a window that began before it).
    state_at = {frame - start: state for frame, state in done["ticks"]}
    level_at = {r.frame: r.level for r in log.readings}
    frames = trace.frames.tolist()
    assert len(frames) >= 0.9 * len(done["ticks"])
    levels = [level_at[f] for f in frames]
    states = [state_at[f] for f in frames]
    # Beats in frames of the capture (the page's times are the context's, from its frame 0).
    fields = [f for f in BEAT_FIELDS if f.endswith("_s")]

    def in_frames(beat: dict, offset: int) -> dict:
        return {f: (beat[f] if f not in fields or beat[f] is None else round(beat[f] * RATE) - offset) for f in beat}

    ours = [in_frames({f: getattr(b, f) for f in BEAT_FIELDS}, 0) for b in played.beats]
    theirs = [in_frames({f: b[f] for f in BEAT_FIELDS}, start) for b in done["beats"]]
    found = parting("loopback", trace, played, levels, states, ours, theirs)
    assert found is None, found
    if hidden:
        # The page was hidden the whole session (its timers throttled), yet the audio thread decided
        # at every tick: no tick is missing between the first and the last.
        assert done["visibility"] == ["hidden"]
        ticks = [f for f, _ in done["ticks"]]
        expected = [
            (-(-k * 800 // 128)) * 128 for k in range(round(ticks[0] / 800), round(ticks[0] / 800) + len(ticks))
        ]
        assert ticks == expected
    # Which outcomes the session reached depends on the live timers (not asserted); that the page
    # decided every tick as the replay of its own capture does not. It was told of four terminal
    # responses, so it closed four beats.
    assert len(done["beats"]) == 4
