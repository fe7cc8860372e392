"""Cases for speechclock.js against the replay: bundled recordings and constructed tours.

A case is mono samples, an event log and the thresholds. :func:`offline_page`
builds one page that runs many cases in headless Chromium, each through an
OfflineAudioContext (suspended at every tick of the trace, the events handed
to the clock with their own times); :func:`first_parting` holds the page's
levels, per-tick states and beats to :func:`replay_ticks` and names the first
tick where they part.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tours import RATE, random_corpus, words

from clock.core.beats import Replay, replay_ticks
from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace, Ticks, levels
from clock.core.thresholds import Thresholds
from clock.io.config import read_config
from clock.io.decode import iter_blocks, probe
from clock.io.events import events_path_for, read_events
from clock.web import page_config, script

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"
#: What the page reports at each tick, as ``Replay.state`` codes (quiet: declared at that tick).
STATE_CODES = {"idle": 0, "waiting": 1, "speaking": 2, "quiet": 3}
#: The events the clock acts on.
CLOCK_KINDS = ("terminal", "pause", "resume", "end")


@dataclass
class Case:
    name: str
    samples: np.ndarray  # mono float32
    rate: int
    events: EventLog
    thresholds: Thresholds

    def trace(self) -> LevelTrace:
        return levels(self.samples, self.rate, ticks=Ticks(self.thresholds.tick_s))

    def page_events(self) -> list[dict]:
        return [
            {"kind": e.kind, "t_s": e.t_s, "linger_s": e.linger_s} for e in self.events.events if e.kind in CLOCK_KINDS
        ]


def bundled_cases() -> list[Case]:
    """The bundled recordings, with their logs and the committed thresholds."""
    th = read_config(RECORDINGS / "speechclock.toml").thresholds
    cases = []
    for path in sorted(RECORDINGS.iterdir()):
        if path.suffix not in (".webm", ".ogg", ".wav"):
            continue
        info = probe(path)
        samples = np.concatenate(list(iter_blocks(info)))
        events = read_events(events_path_for(path))
        cases.append(Case(path.name, samples, info.sample_rate_hz, events, th))
    return cases


def _log(items: list[tuple[str, float] | tuple[str, float, float]]) -> EventLog:
    events = [Event(k, k, t, i + 1, rest[0] if rest else None) for i, (k, t, *rest) in enumerate(items)]
    return EventLog(tuple(sorted(events, key=lambda e: e.t_s)))


def constructed_tour(seed: int) -> Case:
    """Every path of the clock, at known times: pauses while speaking and while waiting,
    an acknowledgment over the terminal response, an aborted beat (``end``), a beat cut by
    the next terminal response, a silent beat (onset timeout), events exactly on a tick,
    and a pause still open at the end of the recording."""
    rng = np.random.default_rng(seed)
    level = 0.05
    pieces: list[tuple[float, float]] = [
        (1.0, 1.5), (5.2, 1.3),  # beat 1: a 2.7 s gap, 2.2 s of it paused
        (10.2, 0.8), (11.6, 1.9),  # beat 2: an acknowledgment over the terminal response at 10.5
        (17.5, 2.5),  # beat 3: aborted by end at 18.5
        (30.0, 1.2),  # beat 5: onset after a paused wait
        (34.3, 2.0), (35.6, 1.0),  # beat 6: cut by the next terminal at 35.0 (beat 7)
        (40.2, 1.5),  # beat 8: a pause from 42.0 never resumed
    ]  # fmt: skip
    events = [
        ("terminal", 0.5, 0.5), ("pause", 2.8), ("resume", 5.0),
        ("prompt", 10.0), ("terminal", 10.5, 1.0),
        ("terminal", 17.0), ("end", 18.5),
        ("terminal", 21.0),  # silent: times out at 24
        ("terminal", 26.0), ("pause", 26.5), ("resume", 1710 / 60),  # exactly on tick 1710
        ("terminal", 34.0), ("terminal", 35.0, 0.25),
        ("terminal", 2400 / 60), ("pause", 42.0),
    ]  # fmt: skip
    duration = 46.0
    x = np.zeros(int(duration * RATE))
    for at, length in pieces:
        w = words(rng, length, level)
        i = int(at * RATE)
        x[i : i + w.size] += w[: x.size - i]
    th = Thresholds(floor=0.003, quiet_s=1.0 + 0.25 * (seed % 3), onset_timeout_s=3.0)
    return Case(f"constructed-{seed}", x.astype(np.float32), RATE, _log(events), th)


def random_tours(seed: int) -> list[Case]:
    """tests/tours.py's random tours (comfort noise, noisy pauses, acknowledgments, damaged logs),
    with random pauses, ends and thresholds added."""
    rng = np.random.default_rng(seed + 1000)
    cases = []
    for tour in random_corpus(seed):
        if not tour.has_log:
            continue
        duration = tour.samples.size / RATE
        items: list = [(e["kind"], e["t"]) for e in tour.events]
        for _ in range(int(rng.integers(0, 4))):
            a = float(rng.uniform(0, duration))
            items += [("pause", a), ("resume", a + float(rng.uniform(0.1, 3.0)))]
        if rng.random() < 0.5:
            items.append(("end", float(rng.uniform(0, duration))))
        th = Thresholds(
            floor=float(10 ** rng.uniform(-3.5, -1.8)),
            quiet_s=float(rng.choice([0.5, 1.0, 1.5, 2.5])),
            onset_timeout_s=float(rng.choice([1.0, 3.0, 10.0])),
        )
        cases.append(Case(f"random-{seed}-{tour.name}", tour.samples.astype(np.float32), RATE, _log(items), th))
    return cases


def offline_page(cases: list[Case], *, paths: tuple[str, ...] = ("poll", "worklet")) -> tuple[str, dict[str, bytes]]:
    """One page running every case through an OfflineAudioContext on each path of the clock.

    The samples are served at /audio/i. The poll path suspends the context at every nominal
    tick time ``k * tick_s`` (it stops at the first render-quantum boundary at or after it) and
    calls ``poll()``, which reads the analyser and takes the frame it read as the tick's time;
    events are handed to it with their own times just before the tick they precede. The worklet
    path is ``start()``'s default: it is told every event up front and the context renders
    straight through; it decides on the audio thread. The result is a list per case, one entry
    per path, in ``paths`` order.
    """
    plans = []
    files = {}
    for i, case in enumerate(cases):
        trace = case.trace()
        files[f"/audio/{i}"] = np.ascontiguousarray(case.samples, dtype="<f4").tobytes()
        plans.append(
            {
                "rate": case.rate,
                "config": page_config(case.thresholds),
                "suspend": trace.ticks.time_s(trace.tick).tolist(),
                "last_frame": int(trace.frames[-1]) if trace.n_ticks else 0,
                "events": case.page_events(),
            }
        )
    html = f"""<!DOCTYPE html><html><body><script>
{script()}
const post = (path, body) => fetch(path, {{method: 'POST', body}});
window.onerror = (msg, src, line) => {{ post('/error', `${{msg}} at ${{line}}`); }};
window.onunhandledrejection = (e) => {{ post('/error', String(e.reason && e.reason.stack || e.reason)); }};
function graph(pcm, plan, length) {{
  const ctx = new OfflineAudioContext(1, length, plan.rate);
  const buffer = ctx.createBuffer(1, pcm.length, plan.rate);
  buffer.copyToChannel(pcm, 0);
  const source = new AudioBufferSourceNode(ctx, {{buffer}});
  const analyser = new AnalyserNode(ctx);
  source.connect(analyser).connect(ctx.destination);
  source.start(0);
  return {{ctx, analyser}};
}}
function listen(clock) {{
  const heard = [];
  for (const type of ['speaking', 'quiet', 'onset-timeout', 'ready']) {{
    clock.addEventListener(type, (e) => heard.push([type, e.detail.t_s]));
  }}
  return heard;
}}
async function poll(pcm, plan) {{
  // After the last tick the analyser reads zeros, as the trace does past the recording's end.
  const {{ctx, analyser}} = graph(pcm, plan, plan.last_frame + 256);
  const clock = new SpeechClock(analyser, plan.config, {{path: 'poll'}});
  const heard = listen(clock), levels = [], states = [];
  let next = 0;
  const hand = (upTo) => {{
    for (; next < plan.events.length && plan.events[next].t_s <= upTo; next++) {{
      const e = plan.events[next];
      clock.event(e.kind, e.t_s, e.kind === 'terminal' ? {{linger_s: e.linger_s}} : {{}});
    }}
  }};
  const at = (k) => ctx.suspend(plan.suspend[k]).then(() => {{
    hand(ctx.currentTime);
    states.push(clock.poll());
    levels.push(clock.lastLevel);
    if (k + 1 < plan.suspend.length) at(k + 1);
    ctx.resume();
  }});
  if (plan.suspend.length) at(0);
  await ctx.startRendering();
  hand(Infinity);
  return {{levels, states, heard, beats: await clock.finish()}};
}}
async function worklet(pcm, plan) {{
  // The context ends at the trace's last tick, so the clock decides at exactly the trace's ticks.
  const {{ctx, analyser}} = graph(pcm, plan, Math.max(128, plan.last_frame));
  const clock = new SpeechClock(analyser, plan.config);
  const heard = listen(clock), levels = [], states = [];
  clock.addEventListener('tick', (e) => {{ levels.push(e.detail.level); states.push(e.detail.state); }});
  for (const e of plan.events) clock.event(e.kind, e.t_s, e.kind === 'terminal' ? {{linger_s: e.linger_s}} : {{}});
  await clock.start();
  if (clock.path !== 'worklet') throw new Error(`start() chose ${{clock.path}}`);
  await clock.sync();
  await ctx.startRendering();
  const beats = await clock.finish();
  return {{levels: levels.slice(0, plan.suspend.length), states: states.slice(0, plan.suspend.length), heard, beats}};
}}
(async () => {{
  const plans = {json.dumps(plans)};
  const results = [];
  for (let i = 0; i < plans.length; i++) {{
    const pcm = new Float32Array(await (await fetch(`/audio/${{i}}`)).arrayBuffer());
    const one = [];
    for (const path of {json.dumps(list(paths))}) one.push(await (path === 'poll' ? poll : worklet)(pcm, plans[i]));
    results.push(one);
  }}
  await post('/done', JSON.stringify(results));
}})();
</script></body></html>"""
    return html, files


#: The fields of a beat compared (replay_ticks' ReplayBeat, speechclock.js's beats).
BEAT_FIELDS = ("terminal_s", "start_s", "last_word_s", "quiet_declared_s", "no_onset", "aborted", "prompt_allowed_s")


def first_parting(case: Case, result: dict) -> str | None:
    """Where the page's clock and :func:`replay_ticks` part over one offline case (None: they never do)."""
    trace = case.trace()
    th = case.thresholds
    played = replay_ticks(trace, case.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s)
    ours = [{f: getattr(b, f) for f in BEAT_FIELDS} for b in played.beats]
    theirs = [{f: b[f] for f in BEAT_FIELDS} for b in result["beats"]]
    found = parting(case.name, trace, played, result["levels"], result["states"], ours, theirs)
    if found is not None:
        return found
    heard = [(kind, t) for kind, t in result["heard"]]
    expected = sorted(events_of(played, trace.t_s), key=lambda e: e[1])
    if heard != expected:
        return f"{case.name}: the page's events {heard[:12]}... differ from the replay's {expected[:12]}..."
    return None


def events_of(played: Replay, t_s: np.ndarray) -> list[tuple[str, float]]:
    """The events speechclock.js should emit for a replay: speaking at each start, quiet at each
    declaration, onset-timeout at each tick the clock gave up, ready at the first tick at or after
    prompt_allowed_s before the next terminal response."""
    out: list[tuple[str, float]] = []
    waiting = {int(k) for k in np.flatnonzero(played.state == 1)}
    terminals = [b.terminal_s for b in played.beats]
    for i, b in enumerate(played.beats):
        if b.start_s is not None:
            out.append(("speaking", b.start_s))
        if b.quiet_declared_s is not None:
            out.append(("quiet", b.quiet_declared_s))
        if b.prompt_allowed_s is not None:
            k = int(np.searchsorted(t_s, b.prompt_allowed_s, side="left"))
            later = terminals[i + 1] if i + 1 < len(terminals) else float("inf")
            # The ready tick must come before the next terminal response is applied.
            if k < t_s.size and t_s[k] < later:
                out.append(("ready", float(t_s[k])))
        if b.no_onset and b.terminal_s <= t_s[-1]:
            # The tick it gave up: its last waiting tick.
            k = max(
                k for k in waiting if t_s[k] >= b.terminal_s and (i + 1 >= len(terminals) or t_s[k] < terminals[i + 1])
            )
            out.append(("onset-timeout", float(t_s[k])))
    return out


def parting(
    name: str, trace: LevelTrace, played: Replay, levels: list, states: list[str], ours: list, theirs: list
) -> str | None:
    """The first tick where the page's levels or states part from the replay's, or else the first
    beat (as dicts of :data:`BEAT_FIELDS`: the replay's ``ours``, the page's ``theirs``)."""
    t = trace.t_s
    page_levels = np.array(levels, np.float64)
    page_states = np.array([STATE_CODES[s] for s in states], np.int8)
    if page_levels.size != trace.n_ticks:
        return f"{name}: the page ran {page_levels.size} ticks, the trace has {trace.n_ticks}"
    for k in range(trace.n_ticks):
        if page_levels[k] != trace.level[k] or page_states[k] != played.state[k]:
            return (
                f"{name}: first parting at tick {k} ({t[k]:.6f} s): page level {float(page_levels[k])!r} "
                f"state {states[k]}, replay level {float(trace.level[k])!r} state {int(played.state[k])} "
                f"(0 idle, 1 waiting, 2 speaking, 3 quiet)"
            )
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            declared = a["quiet_declared_s"]
            tick = None if declared is None else int(np.searchsorted(t, declared))
            return f"{name}: beat {i + 1} (declared tick {tick}): replay {a}, page {b}"
    if len(ours) != len(theirs):
        return f"{name}: replay has {len(ours)} beats, the page {len(theirs)}"
    return None
