"""speechclock.js decides as the replay does, tick for tick, in headless Chromium.

The page clock (clock/web/speechclock.js, also docs/speechclock.js) runs in an
OfflineAudioContext over the bundled recordings and over constructed and random
tours (pauses while speaking and waiting, an acknowledgment over the terminal
response, aborted beats, silent beats, events exactly on a tick), suspended at
every tick of the trace. Its level, its state at every tick and every beat's
decisions must equal :func:`clock.core.replay.replay_ticks`; a failure names the
first tick where they part. Each rule that ends a beat sooner on the provider's
``output_audio_buffer.stopped`` runs the same way over tours whose provider says
it early, late or not at all, held to the replay, to :mod:`clock.core.recommend.rules`
and to how the tours were made; its log is what ``check`` needs to hold it.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from browser import LOOPBACK_JS, POST_JS, WEBRTC_FLAGS, DevTools, run_page
from page_clock import (
    BEAT_FIELDS,
    EVERY_RULE,
    HANGOVER_S,
    PATHS,
    PROVIDER_QUIET_S,
    bundled_cases,
    constructed_tour,
    first_parting,
    offline_page,
    parting,
    provider_cases,
    random_tours,
)

from clock.core.agreement import page_trace
from clock.core.analyser import RENDER_QUANTUM_FRAMES
from clock.core.analysis import analyse
from clock.core.check import check_corpus
from clock.core.model import Margins
from clock.core.provider import rule_stopped
from clock.core.recommend.rules import replay_rule
from clock.core.replay import replay_ticks
from clock.core.tally import NO_EVENT
from clock.core.thresholds import LEVEL, LEVEL_AFTER_STOPPED, STOPPED, STOPPED_QUIET
from clock.io.recording import read_recording
from clock.run.corpus import load_corpus
from clock.web import PAGE_KEYS, script

ROOT = Path(__file__).resolve().parents[2]


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


# --- offline: every case in one page, both paths reading one OfflineAudioContext ---------------------


@pytest.fixture(scope="module")
def offline():
    """Every offline case and what the page did with it, from one browser."""
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    level = bundled_cases() + [constructed_tour(s) for s in range(3)] + random_tours(5) + random_tours(6)
    provider = provider_cases()
    rules = [c for c, _ in provider] + random_tours(7, rules=True)
    html, files = offline_page(level + rules)
    results = json.loads(run_page(html, timeout_s=600, files=files)["/done"])
    assert len(results) == len(level) + len(rules)
    return {
        "level": list(zip(level, results[: len(level)])),
        "rules": list(zip(rules, results[len(level) :])),
        "truth": {c.name: truth for c, truth in provider},
    }


def test_page_clock_decides_as_the_replay_tick_for_tick(offline):
    partings = [f"{path}: {p}" for c, r in offline["level"] for path in PATHS if (p := first_parting(c, r[path][0]))]
    assert not partings, "\n".join(partings)
    # The cases reach every path of the clock.
    outcomes = [b for _, r in offline["level"] for path in PATHS for b in r[path][0]["beats"]]
    assert any(b["aborted"] for b in outcomes) and any(b["no_onset"] for b in outcomes)
    assert sum(b["quiet_declared_s"] is not None for b in outcomes) >= 10


def test_page_clock_runs_every_rule_as_the_replay_tick_for_tick(offline):
    """Each rule, on both paths, over tours with pauses, ends and the provider's event early, late or missing:
    the page's level and state at every tick, and every beat, are :func:`replay_ticks`' with that rule, and every
    beat's decision is :mod:`clock.core.recommend.rules`' (which derive recommends from)."""
    partings, checked = [], 0
    for c, r in offline["rules"]:
        assert [k for k, _ in c.rules] == [k for k, _ in EVERY_RULE]
        th = c.thresholds
        a = analyse(c.trace(), c.events, floor=th.floor)
        stopped = rule_stopped(c.events, a)
        for j, rule in enumerate(c.rules):
            found = replay_rule([(c.name, a, stopped)], c.rule(rule), onset_timeout_s=th.onset_timeout_s)
            for path in PATHS:
                mine = r[path][j]
                if p := first_parting(c, mine, rule):
                    partings.append(f"{path}: {p}")
                for cost in found.beats:
                    beat = mine["beats"][cost.index]
                    assert beat["stopped_s"] in (None, stopped[cost.index]), (c.name, rule, path, cost, beat)
                    if cost.outcome not in ("silent", "missed-onset"):
                        assert beat["quiet_declared_s"] == cost.declared_s, (c.name, rule, path, cost, beat)
                        checked += 1
    assert not partings, "\n".join(partings)
    assert checked > 100


# A tick's longest interval (896 frames at 48 kHz), and how long the voice must be in the analyser's window to read
# above floor 0.003 (tests/core/test_rules.py enter_s: a square wave at RMS 0.05).
TICK = 896 / 48000
ENTER_S = (int(2048 * (0.003 / 0.05) ** 2) + 1) / 48000


def test_each_rule_ends_each_constructed_beat_when_its_event_and_hangover_say(offline):
    """By construction: the analyser stops hearing a beat's last word at ``heard_s`` (tests/sessions.py), and the
    provider's event came at ``stopped_s`` (from 0.5 s before to 1 s after, or never). Each rule ends the beat at the
    first tick once its condition holds, and the level clock's quiet time at the latest; the event alone, early,
    ends it while the guide still speaks (premature)."""
    n_early = n_late = n_missing = 0
    for c, r in offline["rules"]:
        truth = offline["truth"].get(c.name)
        if truth is None:
            continue
        a = analyse(c.trace(), c.events, floor=c.thresholds.floor)
        stopped = rule_stopped(c.events, a)
        for j, (kind, h) in enumerate(c.rules):
            found = replay_rule([(c.name, a, stopped)], c.rule((kind, h)), onset_timeout_s=10.0)
            assert len(found.beats) == len(truth)
            for cost in found.beats:
                b = truth[cost.index]
                level = b.heard_s + PROVIDER_QUIET_S
                if b.stopped_s is None or kind == LEVEL:
                    wait = level
                elif kind == STOPPED:
                    wait = min(b.stopped_s, level)
                else:
                    assert h == HANGOVER_S
                    wait = min(max(b.stopped_s, b.heard_s + h), level)
                for path in PATHS:
                    declared = r[path][j]["beats"][cost.index]["quiet_declared_s"]
                    assert wait - TICK - ENTER_S <= declared <= wait + TICK, (c.name, kind, path, b, declared)
                early = b.stopped_s is not None and b.stopped_s < b.heard_s - ENTER_S - 2 * TICK
                if b.stopped_s is None and kind in (STOPPED, STOPPED_QUIET):
                    assert cost.outcome == NO_EVENT, (c.name, cost, b)
                elif kind == STOPPED and early:
                    assert cost.outcome == "premature", (c.name, cost, b)
                elif kind != STOPPED or b.stopped_s is None or b.stopped_s >= b.heard_s:
                    # (The event alone within two ticks of the last word may end the beat on either side of it.)
                    assert cost.outcome == "ok" and cost.dead_air_s is not None, (c.name, kind, cost, b)
                if kind == LEVEL:
                    n_missing += b.stopped_s is None
                    n_early += early
                    n_late += b.stopped_s is not None and b.stopped_s > b.heard_s
    # The tours reach the event early, late and missing.
    assert n_early and n_late and n_missing


def test_the_page_logs_what_check_needs_to_hold_its_rule(offline, tmp_path):
    """A worklet clock with a capture logs its setting (its rule included), the provider's event as it applied it
    (``clock.stopped``) and its decisions: ``check`` replays them at that setting and rule and finds each logged
    decision at its tick; told the level clock instead, it finds the rule's sooner ones off."""
    told: dict[str, tuple[str, str]] = {}  # recording: (the rule the page ran, the rule its log says)
    for c, r in offline["rules"]:
        if c.name not in offline["truth"]:
            continue
        for j, (kind, h) in enumerate(c.rules):
            lines = r["worklet"][j]["lines"]
            (setting,) = [x for x in lines if x["type"] == "clock.setting"]
            assert (setting["rule"], setting["hangover_s"], setting["path"]) == (kind, h, "worklet")
            assert setting["quiet_s"] == c.thresholds.quiet_s == PROVIDER_QUIET_S
            # Each of the provider's events, at the first frame at or after the time the clock applied it.
            stops = [x["frame"] for x in lines if x["type"] == "clock.stopped"]
            assert stops == [int(np.ceil(e.t_s * c.rate)) for e in c.events.of_kind("output_audio_buffer.stopped")]
            for said in [kind] + ([LEVEL] if kind != LEVEL else []):
                name = f"{c.name}-{kind}-as-{said}"
                told[f"{name}.wav"] = (kind, said)
                sf.write(str(tmp_path / f"{name}.wav"), c.samples, c.rate, subtype="FLOAT")
                start = {"type": "recording.started", "t": 0, "frame": 0, "sample_rate_hz": c.rate}
                start["capture"] = "worklet"
                say = {"rule": said, "hangover_s": h if said == kind else None}
                log = [x | say if x["type"] == "clock.setting" else x for x in lines]
                # In time order, as a live page logs them (this page told its clock every event up front).
                log = [start, *sorted(log, key=lambda x: x["frame"])]
                (tmp_path / f"{name}.events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in log))
    observations = load_corpus([tmp_path]).observations
    assert sorted(o.name for o in observations) == sorted(told)
    thresholds = offline["rules"][0][0].thresholds
    results = check_corpus(observations, thresholds=thresholds, margins=Margins())
    for name, (kind, said) in told.items():
        logged = [x for x in results if x.recording == name and x.check == "logged-quiet"]
        agree = [x for x in results if x.recording == name and x.check == "level-agreement"]
        assert all(x.passed for x in agree), agree  # the levels the page logged are the recording's, exactly
        assert logged and all(x.applicable for x in logged), logged
        if said == kind:
            assert all(x.passed for x in logged), logged
            assert kind == LEVEL or f"rule {kind}" in logged[0].detail, logged[0].detail
        else:
            # Replayed as the level clock, the page's sooner decisions are off by more than a tick.
            assert not any(x.passed for x in logged), logged


# --- live: the clock on the receiving side of a two-RTCPeerConnection loopback ------------------

RATE = 48000
LIVE = {"floor": 0.003, "quiet_s": 0.6, "onset_timeout_s": 1.0, "tick_s": "1/60", "fft_size": 2048}
# The clocks of each live page: its path and rule (the rules told the provider's event, and hold to it).
VISIBLE = [
    ("worklet", {"rule": LEVEL_AFTER_STOPPED, "hangover_s": 0.3}),
    ("poll", {"rule": STOPPED_QUIET, "hangover_s": 0.3}),
]
HIDDEN = [("worklet", {})]
# Seconds after the sender starts: where its voice plays (tests/signals.py voice: speech from 0.2 s after the start
# to 1.05, 0.71, 1.05 and 1.12 s later), and what the page tells the clocks.
SPEECH = [(0.4, 3), (2.6, 2), (4.6, 3), (7.4, 3)]
PAGE_EVENTS = [
    (0.3, "terminalResponse", {"linger_s": 0.3}),
    (1.9, "pause", {}),  # the quiet count freezes, so the 1.15 s gap does not end the beat
    (2.7, "resume", {}),
    (3.6, "providerStopped", {}),  # the provider says its buffer stopped: the rules may end the beat sooner
    (4.5, "terminalResponse", {}),
    (5.3, "end", {}),  # aborted while speaking
    (6.0, "terminalResponse", {}),  # silent: the onset timeout
    (7.8, "terminalResponse", {"linger_s": 0.25}),  # an acknowledgment is playing
    (8.8, "providerStopped", {}),
]
SESSION_S = 9.8


def live_page(tag: str, clocks: list[tuple[str, dict]], *, front: str | None = None) -> str:
    """A page whose clocks (one capture each) listen to a voice over a WebRTC loopback, told the same events; it
    posts what it saw under ``/{tag}-...``. With ``front``, once its clocks run it opens that page in a tab in front
    of itself (so it is hidden from then on), and ends the run (``/done``) once that page has said it is done."""
    from signals import voice

    x = np.zeros(int(SESSION_S * RATE), np.float32)
    for i, (at, syllables) in enumerate(SPEECH):
        v = voice(RATE, seed=20 + i, syllables=syllables, amplitude=0.3)
        x[int(at * RATE) : int(at * RATE) + v.size] = v[: x.size - int(at * RATE)]
    pcm = base64.b64encode(x.astype("<f4").tobytes()).decode("ascii")
    setup = [(path, LIVE | rule) for path, rule in clocks]
    return f"""<!DOCTYPE html><html><body><script>
{POST_JS}
{LOOPBACK_JS}
{(ROOT / "docs" / "capture.js").read_text()}
{(ROOT / "docs" / "speechclock.js").read_text()}
(async () => {{
  const RATE = {RATE}, TAG = '{tag}', FRONT = {json.dumps(front)};
  const visibility = [document.visibilityState];
  document.addEventListener('visibilitychange', () => visibility.push(document.visibilityState));
  const tabs = new BroadcastChannel('live');
  const frontDone = new Promise((resolve) => {{ tabs.onmessage = resolve; }});
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

  // The receiving page, as docs/clock.md says: one clock (and capture) per path asked for.
  const audioContext = new AudioContext({{sampleRate: RATE}});
  await audioContext.resume();
  const source = audioContext.createMediaStreamSource(remoteStream);
  const clocks = [];
  for (const [path, config] of {json.dumps(setup)}) {{
    const analyser = new AnalyserNode(audioContext, {{fftSize: 2048}});
    source.connect(analyser);
    const capture = await startLosslessCapture(audioContext, source);
    // The clock reads the node the capture records (as docs/clock.md's example does), so both see the same frames.
    const clock = new SpeechClock(analyser, config, {{capture, path, source}});
    const one = {{clock, capture, path, ticks: []}};
    clock.addEventListener('tick', (e) => one.ticks.push([e.detail.frame, e.detail.state]));
    clocks.push(one);
  }}
  await new Promise((r) => setTimeout(r, 500));   // the analyser's window lies inside the captures
  for (const one of clocks) {{
    await one.clock.start();
    if (one.clock.path !== one.path) throw new Error(`start() chose ${{one.clock.path}}`);
  }}
  // The test opens the other page in a tab over this one: this one is hidden from now on.
  if (FRONT) await post('/front', location.origin + FRONT);
  const voice = new AudioBufferSourceNode(send, {{buffer}});
  voice.connect(out);
  voice.start(send.currentTime + 0.05);
  for (const [at, method, fields] of {json.dumps(PAGE_EVENTS)}) {{
    setTimeout(() => {{ for (const one of clocks) one.clock[method](fields); }}, 50 + at * 1000);
  }}
  await new Promise((r) => setTimeout(r, 50 + {SESSION_S} * 1000));
  const done = [];
  for (const [i, one] of clocks.entries()) {{
    const beats = await one.clock.finish();
    const a = await one.capture.stop();
    await post(`/${{TAG}}-audio-${{i}}`, a.audio);
    await post(`/${{TAG}}-events-${{i}}`, a.events);
    done.push({{ticks: one.ticks, beats, names: a.names}});
  }}
  await post(`/${{TAG}}`, JSON.stringify({{clocks: done, visibility}}));
  if (FRONT) {{
    await frontDone;
    await post('/done', '');
  }} else tabs.postMessage('done');
}})();
</script></body></html>"""


def front(tools: DevTools, url: bytes) -> None:
    """Open ``url`` in a tab in front of the page: the page is hidden (``visibilityState`` "hidden")."""
    tools.send("Target.createTarget", {"url": url.decode()})


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """The live pages' clocks, each with its capture written as the page saves it: the hidden page's, and those of
    the page in front of it, both live at once in one browser."""
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    pages = {"hidden": HIDDEN, "visible": VISIBLE}
    html = live_page("hidden", HIDDEN, front="/visible.html")
    files = {"/visible.html": live_page("visible", VISIBLE).encode()}
    posted = run_page(html, files=files, flags=tuple(WEBRTC_FLAGS), devtools={"/front": front})
    found = {}
    for tag, clocks in pages.items():
        done = json.loads(posted[f"/{tag}"])
        folder = tmp_path_factory.mktemp(tag)
        for i, one in enumerate(done["clocks"]):
            one["audio"] = folder / one["names"]["audio"]
            one["audio"].write_bytes(posted[f"/{tag}-audio-{i}"])
            (folder / one["names"]["events"]).write_bytes(posted[f"/{tag}-events-{i}"])
            one["path"], one["rule"] = clocks[i][0], clocks[i][1].get("rule", LEVEL)
        found[tag] = done
    return found


def in_frames(beat: dict, offset: int) -> dict:
    """A beat's times in frames of the capture (the page's are the context's, from its frame 0: ``offset``)."""
    return {f: (v if not f.endswith("_s") or v is None else round(v * RATE) - offset) for f, v in beat.items()}


RAMP_PAGE = """<!DOCTYPE html><html><body><script>
{clock}
{post}
const RAMP = 480000;  // 10 s
(async () => {{
  const ctx = new AudioContext({{sampleRate: 48000}});
  await ctx.resume();
  // A node rendered after the analyser that takes most of each quantum: reads land mid-render more often.
  const busy = `registerProcessor('busy', class extends AudioWorkletProcessor {{
    process() {{ const t = Date.now() + 1.5; while (Date.now() < t) {{}} return true; }} }});`;
  await ctx.audioWorklet.addModule(URL.createObjectURL(new Blob([busy], {{type: 'application/javascript'}})));
  // Sample n of the ramp is (n + 1) / 2^16: the last sample a read holds names the frame its window ends at.
  const buffer = ctx.createBuffer(1, RAMP, 48000);
  buffer.getChannelData(0).forEach((_, n, d) => {{ d[n] = (n + 1) / 65536; }});
  const ramp = new AudioBufferSourceNode(ctx, {{buffer}});
  const analyser = new AnalyserNode(ctx, {{fftSize: 2048}});
  ramp.connect(analyser).connect(new GainNode(ctx, {{gain: 0}})).connect(ctx.destination);
  ramp.connect(new AudioWorkletNode(ctx, 'busy')).connect(ctx.destination);
  const at = Math.ceil((ctx.currentTime + 0.1) * 48000 / 128) * 128;
  ramp.start(at / 48000);
  const clock = new SpeechClock(analyser, {{floor: 0.003, quiet_s: 2.5, tick_s: '1/60'}}, {{path: 'poll'}});
  const reads = [];
  clock.addEventListener('tick', (e) => reads.push([e.detail.frame, at + Math.round(clock.data[2047] * 65536)]));
  await new Promise((r) => setTimeout(r, 150));
  await clock.start();
  // Reads whose frame puts their window and the next quantum's all in the ramp: a late timer or a slow audio
  // thread can put a read before it starts or after it ends (the frame, not the data, says which). Poll until
  // 120 of them, the ramp's end, or a minute.
  const inside = ([frame]) => frame >= at + 2048 && frame + 256 <= at + RAMP;
  const until = performance.now() + 60000;
  while (reads.filter(inside).length < 120 && ctx.currentTime * 48000 < at + RAMP && performance.now() < until) {{
    clock.poll();
    await new Promise((r) => setTimeout(r, 0));
  }}
  clock.stop();
  await post('/reads', JSON.stringify(reads.filter(inside)));
  await post('/done', '');
}})();
</script></body></html>"""


@pytest.mark.slow
def test_a_poll_reads_the_window_at_its_frame_or_a_quantum_later_as_chromium_advances_currenttime_after_rendering():
    """What a poll's logged frame promises, found out in headless Chromium: a realtime context plays a ramp whose
    samples name their frames, and every read the clock's poll path decided on (its ``tick`` event, ``clock.data``
    still the window it read) holds the window ending at the frame it reports or one render quantum (128 frames)
    later: Chromium writes the analyser's window while it renders a quantum and advances ``currentTime`` after the
    render, so a read in between cannot tell (the live test holds captures to the same bound). A read the context's
    frame moved under is never decided on; how often a read lands ahead depends on the machine, so it is not
    asserted."""
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    reads = json.loads(run_page(RAMP_PAGE.format(clock=script(), post=POST_JS))["/reads"])  # inside the ramp
    assert len(reads) >= 50
    elsewhere = [(frame, end) for frame, end in reads if end - frame not in (0, RENDER_QUANTUM_FRAMES)]
    assert not elsewhere, f"{len(elsewhere)} of {len(reads)} reads end elsewhere, first (frame, end): {elsewhere[0]}"


@pytest.mark.slow
@pytest.mark.parametrize("tag", ["visible", "hidden"])
def test_page_clock_live_over_webrtc_decides_as_the_replay_of_its_capture_a_poll_reading_at_most_a_quantum_ahead(
    live, tag
):
    """Each clock of the page (the worklet with a rule, polling with another; hidden, the worklet) decides at
    every tick as the replay of its own capture, at the setting and rule its log says it ran.

    The worklet reads every tick's window on the audio thread: its level is the capture's, bit for bit. A poll
    reads from the main thread, and Chromium writes the analyser's window while it renders a quantum but advances
    ``currentTime`` only after the render (``AdvanceCurrentSampleFrame`` after the graph and its automatic pull
    nodes, in the destination handler's ``Render``). A read that lands in between holds the window one quantum
    after the frame it is logged at, more often the busier the machine. So a poll's level is the capture's at its
    frame or one quantum later, and the poll decided every tick as the replay of the levels it read.
    """
    hidden, done = tag == "hidden", live[tag]
    assert [one["path"] for one in done["clocks"]] == [path for path, _ in (HIDDEN if hidden else VISIBLE)]
    for one in done["clocks"]:
        rec = read_recording(one["audio"], quantum=True)
        log = rec.events
        assert log is not None and log.start is not None and log.start.exact
        said = log.setting
        assert said is not None and (said.path, said.rule) == (one["path"], one["rule"])
        assert said.rule == LEVEL or log.stop_kind == "clock.stopped"  # told the provider's event, it logged it
        start = log.start.frame
        trace = page_trace(rec.quantum, log.readings, start=log.start, ticks=rec.trace.ticks)
        # The page's ticks inside the capture (the first ones read a window that began before it).
        state_at = {frame - start: state for frame, state in one["ticks"]}
        level_at = {r.frame: r.level for r in log.readings}
        frames = trace.frames.tolist()
        assert len(frames) >= 0.9 * len(one["ticks"])
        levels = [level_at[f] for f in frames]
        states = [state_at[f] for f in frames]
        if one["path"] == "poll":
            quanta = trace.frames // RENDER_QUANTUM_FRAMES
            later = np.append(rec.quantum.level, np.nan)[quanta + 1]
            off = [k for k, (lv, at, nxt) in enumerate(zip(levels, trace.level, later)) if lv not in (at, nxt)]
            assert not off, (
                f"poll tick {off[0]} (frame {frames[off[0]]}): page level {levels[off[0]]!r}, the capture's "
                f"{trace.level[off[0]]!r} at its frame and {later[off[0]]!r} a quantum later"
            )
            trace = replace(trace, level=np.array(levels, np.float64))
        played = replay_ticks(
            trace,
            log,
            floor=LIVE["floor"],
            quiet_s=LIVE["quiet_s"],
            onset_timeout_s=LIVE["onset_timeout_s"],
            rule=said.rule,
            hangover_s=said.hangover_s,
        )
        ours = [in_frames({f: getattr(b, f) for f in BEAT_FIELDS}, 0) for b in played.beats]
        theirs = [in_frames({f: b[f] for f in BEAT_FIELDS}, start) for b in one["beats"]]
        found = parting(f"loopback {one['path']} {one['rule']}", trace, played, levels, states, ours, theirs)
        assert found is None, found
        # Which outcomes the session reached depends on the live timers (not asserted); that the page
        # decided every tick as the replay of its own capture does not. It was told of four terminal
        # responses, so it closed four beats.
        assert len(one["beats"]) == 4
    # The page in front stayed visible; the other was hidden once its clocks ran.
    assert done["visibility"] == (["visible", "hidden"] if hidden else ["visible"])
    if hidden:
        # The page was hidden the whole session (its timers throttled), yet the audio thread decided
        # at every tick: no tick is missing between the first and the last.
        ticks = [f for f, _ in done["clocks"][0]["ticks"]]
        expected = [
            (-(-k * 800 // 128)) * 128 for k in range(round(ticks[0] / 800), round(ticks[0] / 800) + len(ticks))
        ]
        assert ticks == expected


def test_the_page_takes_only_the_beat_s_own_provider_event_as_the_replay_does():
    """An acknowledgment's ``output_audio_buffer.stopped`` (another response's id) inside the beat, and the beat's
    own event told after the page's next prompt, are not the beat's: speechclock.js's ``providerStopped``
    ignores them as :func:`replay_ticks` does, on both paths, every rule, tick for tick."""
    from browser import CHROMIUM

    from clock.core.events import Event, EventLog
    from clock.core.provider import beat_stops

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    base = random_tours(7, rules=True)[0]
    events: list[Event] = []
    beat = -1
    for e in base.events.events:
        if e.kind == "terminal":
            beat += 1
            events.append(replace(e, response_id=f"r{beat}"))
            events.append(Event("stopped", "output_audio_buffer.stopped", e.t_s + 0.05, None, None, f"ack{beat}"))
        elif e.kind == "output_audio_buffer.stopped":
            events.append(replace(e, response_id=f"r{beat}"))
        elif e.kind == "prompt" and beat >= 0:
            events.append(e)
            late = Event("stopped", "output_audio_buffer.stopped", e.t_s + 0.1, None, None, f"r{beat}")
            events.append(late)
        else:
            events.append(e)
    events = [replace(e, kind="output_audio_buffer.stopped") if e.kind == "stopped" else e for e in events]
    log = EventLog(tuple(sorted(events, key=lambda e: e.t_s)))
    case = replace(base, name="own-events", events=log)
    html, files = offline_page([case])
    (result,) = json.loads(run_page(html, timeout_s=300, files=files)["/done"])
    a = analyse(case.trace(), log, floor=case.thresholds.floor)
    own = [s.t_s for s in beat_stops(log, a)]
    acks = {e.t_s for e in log.events if (e.response_id or "").startswith("ack")}
    assert acks and not acks & set(own)
    partings = [
        f"{p}: {x}"
        for p in PATHS
        for j, rule in enumerate(case.rules)
        if (x := first_parting(case, result[p][j], rule))
    ]
    assert not partings, "\n".join(partings)
    told = [b["stopped_s"] for p in PATHS for b in result[p][1]["beats"]]
    assert not acks & set(told)
