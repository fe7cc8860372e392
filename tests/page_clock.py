"""Cases for speechclock.js against the replay: bundled recordings and constructed tours.

A case is mono samples, an event log, the thresholds and the rules to run. :func:`offline_page`
builds one page that runs many cases in headless Chromium, each through one OfflineAudioContext
that both paths of the clock read at once, one clock per rule on each (the poll path suspended at
every tick of the trace, the events handed to it with their own times; the worklet path told every
event up front); :func:`first_parting` holds the page's levels, per-tick states and beats to
:func:`replay_ticks` and names the first tick where they part.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from construction import RATE, words
from sessions import ProviderBeat, provider_tour
from tours import random_corpus

from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace, levels
from clock.core.recommend.rules import Rule
from clock.core.replay import Replay, replay_ticks
from clock.core.thresholds import LEVEL, LEVEL_AFTER_STOPPED, STOPPED, STOPPED_QUIET, Thresholds
from clock.core.ticks import Ticks
from clock.io.config import read_config
from clock.io.decode import iter_blocks, probe
from clock.io.events import events_path_for, read_events
from clock.web import page_config, script

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"
#: What the page reports at each tick, as ``Replay.state`` codes (quiet: declared at that tick).
STATE_CODES = {"idle": 0, "waiting": 1, "speaking": 2, "quiet": 3}
#: The events the clock acts on (and ``prompt``, which it only logs).
CLOCK_KINDS = ("terminal", "pause", "resume", "end", "prompt")
#: The paths of the clock, in the order :func:`offline_page` reports them.
PATHS = ("poll", "worklet")
#: A rule the page runs: its kind and its hangover (None for the rules without one).
PageRule = tuple[str, float | None]
#: The level clock alone.
LEVEL_ONLY: tuple[PageRule, ...] = ((LEVEL, None),)
#: The provider tours' quiet time, and every rule the page runs on a case with the provider's events.
PROVIDER_QUIET_S, HANGOVER_S = 1.5, 0.35
EVERY_RULE: tuple[PageRule, ...] = (
    (LEVEL, None),
    (STOPPED_QUIET, HANGOVER_S),
    (STOPPED, None),
    (LEVEL_AFTER_STOPPED, HANGOVER_S),
)
#: The provider's event, as a log names it.
STOP = "output_audio_buffer.stopped"


@dataclass
class Case:
    name: str
    samples: np.ndarray  # mono float32
    rate: int
    events: EventLog
    thresholds: Thresholds
    #: The rules the page runs on this case, one clock each (their quiet time is the thresholds').
    rules: tuple[PageRule, ...] = LEVEL_ONLY
    #: The worklet clocks log to a capture (its lines come back as ``lines``), as a page's capture.js would.
    capture: bool = False
    _trace: LevelTrace | None = field(default=None, init=False, repr=False)
    _replays: dict[PageRule, Replay] = field(default_factory=dict, init=False, repr=False)

    def trace(self) -> LevelTrace:
        """The levels at the clock's ticks (computed once)."""
        if self._trace is None:
            self._trace = levels(self.samples, self.rate, ticks=Ticks(self.thresholds.tick_s))
        return self._trace

    def page_events(self) -> list[dict]:
        """The events as the page is told them: the provider's event as ``stopped`` (``providerStopped()``)."""
        stop = self.events.stop_kind
        return [
            {
                "kind": "stopped" if e.kind == stop else e.kind,
                "t_s": e.t_s,
                "linger_s": e.linger_s,
                "response_id": e.response_id,
            }  # fmt: skip
            for e in self.events.events
            if e.kind in CLOCK_KINDS or e.kind == stop
        ]

    def rule(self, rule: PageRule) -> Rule:
        return Rule(rule[0], self.thresholds.quiet_s, rule[1])

    def replay(self, rule: PageRule) -> Replay:
        """:func:`replay_ticks` with this rule (computed once)."""
        if rule not in self._replays:
            th = self.thresholds
            self._replays[rule] = replay_ticks(
                self.trace(),
                self.events,
                floor=th.floor,
                quiet_s=th.quiet_s,
                onset_timeout_s=th.onset_timeout_s,
                rule=rule[0],
                hangover_s=rule[1],
            )
        return self._replays[rule]


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


def random_tours(seed: int, *, rules: bool = False) -> list[Case]:
    """tests/tours.py's random tours (comfort noise, noisy pauses, acknowledgments, damaged logs),
    with random pauses, ends and thresholds added; with ``rules``, each under :data:`EVERY_RULE`, its provider
    saying ``output_audio_buffer.stopped`` from 0.5 s before each narration's end to 1 s after it, or not at all."""
    rng = np.random.default_rng(seed + 1000)
    provider = np.random.default_rng(seed + 2000)
    cases = []
    for tour in random_corpus(seed):
        if not tour.has_log:
            continue
        duration = tour.samples.size / RATE
        items: list = [(e.kind, e.t_s) for e in tour.log.events]
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
        if rules:
            for truth in tour.beats:
                if not truth.silent and provider.random() < 0.75:
                    items.append((STOP, truth.narration_end_s + float(provider.uniform(-0.5, 1.0))))
        name = f"random-{seed}-{tour.name}"
        samples = tour.samples.astype(np.float32)
        cases.append(Case(name, samples, RATE, _log(items), th, EVERY_RULE if rules else LEVEL_ONLY))
    return cases


def provider_cases(seeds: tuple[int, ...] = (40, 41, 42)) -> list[tuple[Case, list[ProviderBeat]]]:
    """tests/sessions.py's provider tours, each under :data:`EVERY_RULE` with its truth: the provider says
    ``output_audio_buffer.stopped`` from 0.5 s before the analyser stops hearing each beat's last word to 1 s after
    it (the last seed's tour misses half of them). The worklet clocks log to a capture (``Case.capture``)."""
    out = []
    for i, seed in enumerate(seeds):
        session, truth = provider_tour(seed, missing=0.5 if i == len(seeds) - 1 else 0.0)
        th = Thresholds(floor=0.003, quiet_s=PROVIDER_QUIET_S, onset_timeout_s=10.0)
        case = Case(f"provider-{seed}", session.samples(), session.rate, session.log(), th, EVERY_RULE, capture=True)
        out.append((case, truth))
    return out


def offline_page(cases: list[Case], *, library: str | None = None) -> tuple[str, dict[str, bytes]]:
    """One page running every case through an OfflineAudioContext, on both paths of the clock at once.

    ``library`` is the script that defines ``SpeechClock`` on the page (default: the classic script; a bundle of
    a page that imports the package and sets ``window.SpeechClock``).

    The samples are served at /audio/i. Per case, one context renders them through an
    AnalyserNode that every clock reads, one clock per rule on each path. The poll path suspends
    the context at every nominal tick time ``k * tick_s`` (it stops at the first render-quantum
    boundary at or after it) and calls ``poll()``, which reads the analyser and takes the frame it
    read as the tick's time; events are handed to it with their own times just before the tick
    they precede. The worklet path is ``start()``'s default: it is told every event up front and
    decides on the audio thread as the context renders. The context ends one render quantum
    after the trace's last tick, so neither path ticks again. The result is, per case,
    ``{path: [one result per rule]}``.
    """
    plans = []
    files = {}
    for i, case in enumerate(cases):
        trace = case.trace()
        files[f"/audio/{i}"] = np.ascontiguousarray(case.samples, dtype="<f4").tobytes()
        plans.append(
            {
                "rate": case.rate,
                "configs": [page_config(case.thresholds, rule=case.rule(rule)) for rule in case.rules],
                "capture": case.capture,
                "suspend": trace.ticks.time_s(trace.tick).tolist(),
                "last_frame": int(trace.frames[-1]) if trace.n_ticks else 0,
                "events": case.page_events(),
            }
        )
    html = f"""<!DOCTYPE html><html><body><script>
{script() if library is None else library}
</script><script>
const post = (path, body) => fetch(path, {{method: 'POST', body}});
window.onerror = (msg, src, line) => {{ post('/error', `${{msg}} at ${{line}}`); }};
window.onunhandledrejection = (e) => {{ post('/error', String(e.reason && e.reason.stack || e.reason)); }};
function listen(clock) {{
  const heard = [];
  for (const type of ['speaking', 'quiet', 'onset-timeout', 'ready']) {{
    clock.addEventListener(type, (e) => heard.push([type, e.detail.t_s]));
  }}
  return heard;
}}
// What capture.js's log gets from the clock (a line without a frame is at frame 0).
function capture(lines) {{
  return {{
    log: (type, fields = {{}}) => lines.push({{type, frame: 0, ...fields}}),
    logLevel: (level, fields = {{}}) => {{
      lines.push({{type: 'clock.level', level, ...fields}});
      return fields.frame;
    }},
  }};
}}
// As a page tells the clock, through its methods (the provider's event only as the beat's own: providerStopped).
const tell = (clock, e) => (
  e.kind === 'terminal' ? clock.terminalResponse({{t_s: e.t_s, linger_s: e.linger_s, response_id: e.response_id}})
  : e.kind === 'stopped' ? clock.providerStopped({{t_s: e.t_s, response_id: e.response_id}})
  : e.kind === 'prompt' ? clock.prompt({{t_s: e.t_s}})
  : clock.event(e.kind, e.t_s, {{}}));
async function run(pcm, plan) {{
  // One quantum past the last tick: the poll path can suspend there, and no path reaches another tick (ticks are at
  // least two quanta apart at the rates of the cases).
  const ctx = new OfflineAudioContext(1, plan.last_frame + 128, plan.rate);
  const buffer = ctx.createBuffer(1, pcm.length, plan.rate);
  buffer.copyToChannel(pcm, 0);
  const source = new AudioBufferSourceNode(ctx, {{buffer}});
  const analyser = new AnalyserNode(ctx);
  source.connect(analyser).connect(ctx.destination);
  source.start(0);
  const n = plan.suspend.length;
  const polled = plan.configs.map((config) => {{
    const clock = new SpeechClock(analyser, config, {{path: 'poll'}});
    return {{clock, heard: listen(clock), levels: [], states: []}};
  }});
  const worklets = [];
  for (const config of plan.configs) {{
    const lines = plan.capture ? [] : null;
    const clock = new SpeechClock(analyser, config, {{capture: lines && capture(lines)}});
    const one = {{clock, heard: listen(clock), levels: [], states: [], lines}};
    clock.addEventListener('tick', (e) => {{ one.levels.push(e.detail.level); one.states.push(e.detail.state); }});
    for (const e of plan.events) tell(clock, e);
    await clock.start();
    if (clock.path !== 'worklet') throw new Error(`start() chose ${{clock.path}}`);
    await clock.sync();
    worklets.push(one);
  }}
  let next = 0;
  const hand = (upTo) => {{
    for (; next < plan.events.length && plan.events[next].t_s <= upTo; next++) {{
      for (const p of polled) tell(p.clock, plan.events[next]);
    }}
  }};
  const at = (k) => ctx.suspend(plan.suspend[k]).then(() => {{
    hand(ctx.currentTime);
    for (const p of polled) {{ p.states.push(p.clock.poll()); p.levels.push(p.clock.lastLevel); }}
    if (k + 1 < n) at(k + 1);
    ctx.resume();
  }});
  if (n) at(0);
  await ctx.startRendering();
  hand(Infinity);
  const out = {{poll: [], worklet: []}};
  for (const p of polled) {{
    const beats = await p.clock.finish();
    out.poll.push({{levels: p.levels, states: p.states, heard: p.heard, beats}});
  }}
  for (const w of worklets) {{
    const beats = await w.clock.finish();
    const [levels, states] = [w.levels.slice(0, n), w.states.slice(0, n)];
    out.worklet.push({{levels, states, heard: w.heard, beats, lines: w.lines}});
  }}
  return out;
}}
(async () => {{
  const plans = {json.dumps(plans)};
  const results = [];
  for (let i = 0; i < plans.length; i++) {{
    const pcm = new Float32Array(await (await fetch(`/audio/${{i}}`)).arrayBuffer());
    results.push(await run(pcm, plans[i]));
  }}
  await post('/done', JSON.stringify(results));
}})();
</script></body></html>"""
    return html, files


#: The fields of a beat compared (replay_ticks' ReplayBeat, speechclock.js's beats).
BEAT_FIELDS = (
    "terminal_s",
    "start_s",
    "last_word_s",
    "quiet_declared_s",
    "no_onset",
    "aborted",
    "prompt_allowed_s",
    "stopped_s",
)


def first_parting(case: Case, result: dict, rule: PageRule = LEVEL_ONLY[0]) -> str | None:
    """Where the page's clock running ``rule`` and :func:`replay_ticks` part over one offline case (None: never)."""
    trace = case.trace()
    played = case.replay(rule)
    ours = [{f: getattr(b, f) for f in BEAT_FIELDS} for b in played.beats]
    theirs = [{f: b[f] for f in BEAT_FIELDS} for b in result["beats"]]
    name = case.name if rule[0] == LEVEL else f"{case.name} ({rule[0]})"
    found = parting(name, trace, played, result["levels"], result["states"], ours, theirs)
    if found is not None:
        return found
    heard = [(kind, t) for kind, t in result["heard"]]
    expected = sorted(events_of(played, trace.t_s), key=lambda e: e[1])
    if heard != expected:
        return f"{name}: the page's events {heard[:12]}... differ from the replay's {expected[:12]}..."
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
