// Built from clock/web/src/ by clock/web/build.py: edit the source, then rebuild.
"use strict";
Object.defineProperty(exports, "__esModule", { value: true });  // its default export is exports.default
const SPEECHCLOCK_VERSION = 6;
// The AudioWorklet's module (src/core.js, src/worklet.js), as text made at build time.
const SPEECHCLOCK_WORKLET_SOURCE = "// Built from clock/web/src/ by clock/web/build.py: edit the source, then rebuild.\n// speech-clock's page clock: what both threads run (the decisions, the down-mix, the level, the tick\n// frames). clock/web/build.py puts this text in the main thread's builds and, as text, in the\n// AudioWorklet's module (SPEECHCLOCK_WORKLET_SOURCE). No BigInt literals: a bundle may target ES2017.\n\n// The decisions, tick by tick: the replay's arithmetic in its order. Shared by the main thread (the\n// poll path) and the audio thread (the build puts this file's text into the worklet's module), so\n// it refers to nothing outside this file.\nclass SpeechClockCore {\n  constructor(setting, rate) {\n    this.floor = setting.floor;\n    this.quietS = setting.quiet_s;\n    this.onsetTimeoutS = setting.onset_timeout_s;\n    this.rule = setting.rule;\n    this.hangoverS = setting.hangover_s === null ? setting.quiet_s : setting.hangover_s;\n    this.rate = rate;\n    this.state = \"idle\";     // \"idle\", \"waiting\" or \"speaking\"\n    this.beat = null;        // the open beat: {terminal_s, linger_s, start_s, last_word_s, stopped_s, late}\n    this.beats = [];         // every closed beat, as replay_ticks' ReplayBeat fields (and how it ended)\n    this.lastTickS = -Infinity;\n    this.queue = [];         // events not yet applied, in time order\n    this.pauses = [];        // closed paused intervals [lo, hi] that can still overlap the open beat\n    this.pausedSince = null;\n    this.readyAtS = null;\n    this.out = [];           // [type, detail] to emit, in order\n  }\n\n  // An event at t_s (seconds); one at or before a tick already decided is timed one frame after it.\n  // Returns its time.\n  push(kind, t_s, fields) {\n    let t = t_s;\n    if (t <= this.lastTickS) t = this.lastTickS + 1 / this.rate;\n    const e = { kind, t_s: t, linger_s: fields && fields.linger_s != null ? fields.linger_s : null, reason: (fields && fields.reason) || null };\n    let i = this.queue.length;\n    while (i > 0 && this.queue[i - 1].t_s > t) i--;\n    this.queue.splice(i, 0, e);\n    return t;\n  }\n\n  emit(type, detail) { this.out.push([type, detail]); }\n\n  setState(to, t) {\n    if (to === this.state) return;\n    const from = this.state;\n    this.state = to;\n    this.emit(\"state\", { t_s: t, from, to });\n  }\n\n  // Whether the rule ends the beat at an unpaused quiet tick, quiet seconds after the last word\n  // (told: the provider's event has arrived). clock/core/replay.py _quiet_ends.\n  quietEnds(told, quiet) {\n    if (this.rule === \"level+stopped\" && told) return quiet >= this.hangoverS - 1e-9;\n    if (quiet >= this.quietS - 1e-9) return true;\n    return told && (this.rule === \"stopped\" || (this.rule === \"stopped+quiet\" && quiet >= this.hangoverS - 1e-9));\n  }\n\n  // The decision at one tick, from a level read at time now (seconds). Returns the beat's\n  // state at this tick, as replay_ticks records it: \"idle\", \"waiting\" (also at the tick it\n  // gives up), \"speaking\", or \"quiet\" (declared at this tick).\n  tick(level, now, late) {\n    this.lastTickS = now;\n    while (this.queue.length && this.queue[0].t_s <= now) this.apply(this.queue.shift());\n    if (this.readyAtS !== null && now >= this.readyAtS) {\n      const at = this.readyAtS;\n      this.readyAtS = null;\n      this.emit(\"ready\", { t_s: now, prompt_allowed_s: at });\n    }\n    const b = this.beat;\n    if (b === null) return \"idle\";\n    if (late) b.late = true;\n    const speech = level > this.floor;\n    // The event alone ends the beat at any unpaused tick from its first word on, speech or not.\n    const alone = this.rule === \"stopped\" && b.stopped_s !== null && this.pausedSince === null;\n    if (b.start_s === null) {\n      if (speech) {\n        b.start_s = b.last_word_s = now;\n        this.emit(\"speaking\", { t_s: now, level, terminal_s: b.terminal_s });\n        this.setState(\"speaking\", now);\n        return alone ? this.declare(now) : \"speaking\";\n      }\n      if (this.unpaused(b.terminal_s, now) >= this.onsetTimeoutS - 1e-9) {\n        const beat = this.close({ no_onset: true, ended: \"onset-timeout\" });\n        this.emit(\"onset-timeout\", { t_s: now, terminal_s: b.terminal_s, beat });\n        this.setState(\"idle\", now);\n      }\n      return \"waiting\";\n    }\n    if (speech) {\n      b.last_word_s = now;\n      return alone ? this.declare(now) : \"speaking\";\n    }\n    if (this.pausedSince === null && this.quietEnds(b.stopped_s !== null, this.unpaused(b.last_word_s, now))) {\n      return this.declare(now);\n    }\n    return \"speaking\";\n  }\n\n  // The beat is over at this tick.\n  declare(now) {\n    const beat = this.close({ declared: now, ended: \"quiet\" });\n    this.emit(\"quiet\", { t_s: now, ...beat });\n    this.setState(\"idle\", now);\n    if (now >= beat.prompt_allowed_s) this.emit(\"ready\", { t_s: now, prompt_allowed_s: beat.prompt_allowed_s });\n    else this.readyAtS = beat.prompt_allowed_s;\n    return \"quiet\";\n  }\n\n  apply(e) {\n    if (e.kind === \"terminal\") {\n      if (this.beat !== null) {\n        const beat = this.close({ aborted: true, ended: \"superseded\" });\n        this.emit(\"aborted\", { t_s: e.t_s, reason: \"superseded\", beat });\n      }\n      this.beat = { terminal_s: e.t_s, linger_s: e.linger_s, start_s: null, last_word_s: null, stopped_s: null, late: false };\n      this.readyAtS = null;\n      // Paused intervals that ended before this beat can no longer change a count.\n      this.pauses = this.pauses.filter(([, hi]) => hi > e.t_s);\n      this.setState(\"waiting\", e.t_s);\n    } else if (e.kind === \"pause\") {\n      if (this.pausedSince === null) this.pausedSince = e.t_s;\n    } else if (e.kind === \"resume\") {\n      if (this.pausedSince !== null) this.pauses.push([this.pausedSince, e.t_s]);\n      this.pausedSince = null;\n    } else if (e.kind === \"stopped\") {\n      if (this.beat !== null && this.beat.stopped_s === null) this.beat.stopped_s = e.t_s;\n    } else if (e.kind === \"end\" && this.beat !== null) {\n      const reason = e.reason || \"end\";\n      const beat = this.close({ aborted: true, ended: reason });\n      this.emit(reason === \"end\" ? \"aborted\" : \"ended\", { t_s: e.t_s, reason, beat });\n      this.setState(\"idle\", e.t_s);\n    }\n  }\n\n  // Seconds of [a, b] outside every paused interval (the replay's arithmetic, in its order).\n  unpaused(a, b) {\n    let paused = 0;\n    const spans = this.pausedSince === null ? this.pauses : [...this.pauses, [this.pausedSince, b]];\n    for (const [lo, hi] of spans) paused += Math.max(0, Math.min(b, hi) - Math.max(a, lo));\n    return (b - a) - paused;\n  }\n\n  close({ declared = null, no_onset = false, aborted = false, ended = \"open\" }) {\n    const b = this.beat;\n    const beat = {\n      terminal_s: b.terminal_s, start_s: b.start_s, last_word_s: b.last_word_s, quiet_declared_s: declared,\n      no_onset, aborted, prompt_allowed_s: declared === null ? null : declared + (b.linger_s || 0),\n      stopped_s: b.stopped_s, ended, late: b.late,\n    };\n    this.beats.push(beat);\n    this.beat = null;\n    return beat;\n  }\n\n  // The beat still open (if any) as replay_ticks leaves it at the end of a recording.\n  finish() {\n    if (this.beat !== null) this.close({});\n    for (const e of this.queue) {\n      if (e.kind === \"terminal\") {\n        this.beats.push({ terminal_s: e.t_s, start_s: null, last_word_s: null, quiet_declared_s: null,\n                          no_onset: true, aborted: false, prompt_allowed_s: null, stopped_s: null, ended: \"open\",\n                          late: false });\n      }\n    }\n    this.queue = [];\n    return this.beats;\n  }\n}\n\n// Down-mix one render quantum to mono as the AnalyserNode does (the spec's speakers rules,\n// float32 in Chromium's order; clock/core/analyser.py downmix_to_mono) into out. Self-contained.\nfunction speechclockDownmix(channels, out) {\n  const f = Math.fround, n = out.length, k = channels.length;\n  if (k === 0) { out.fill(0); return; }\n  if (k === 2 || k === 4 || k === 6) {\n    const weights = k === 2 ? [[0, 0.5], [1, 0.5]] : k === 4 ? [[0, 0.25], [1, 0.25], [2, 0.25], [3, 0.25]]\n      : [[0, f(Math.SQRT1_2)], [1, f(Math.SQRT1_2)], [2, 1], [4, 0.5], [5, 0.5]];\n    out.fill(0);\n    for (const [c, w] of weights) {\n      const x = channels[c];\n      for (let i = 0; i < n; i++) out[i] = f(out[i] + (w === 1 ? x[i] : f(w * x[i])));\n    }\n    return;\n  }\n  out.set(channels[0]);  // one channel, or the discrete rule: the first\n}\n\n// The level of a window: RMS summed in float64 from the oldest sample (bit-exact with the tool's).\nfunction speechclockLevel(data) {\n  let sum = 0;\n  for (let i = 0; i < data.length; i++) sum += data[i] * data[i];\n  return Math.sqrt(sum / data.length);\n}\n\n// The frame of tick k: ceil(k * num * rate / (den * 128)) * 128, in exact integers. Self-contained.\nfunction speechclockTickFrame(k, num, den, rate) {\n  const q = BigInt(k) * num * BigInt(rate), d = den * BigInt(128);\n  return Number((q + d - BigInt(1)) / d) * 128;\n}\n\n// speech-clock's page clock on the audio thread: the AudioWorklet processor \"speechclock-clock\".\n// clock/web/build.py makes the worklet's module from core.js and this file, as text at build time\n// (SPEECHCLOCK_WORKLET_SOURCE in the builds, and speechclock-worklet.js for a page that loads it by\n// URL): the main thread never hands the audio thread the toString() of code a bundler rewrote.\n//\n// Messages to the main thread, in order: {ready} once constructed; {tick} at each tick (with the\n// core's open beat, pauses and queue, so that the main thread can take over if this thread fails);\n// {jump} when the context's frame moved past quanta this processor was never called for (a frozen\n// or starved audio thread); {applied} for each event it queued; {synced}; {finished}.\n\n// A second module on the same AudioWorkletGlobalScope (a second clock on one context) finds the name taken\n// (registerProcessor throws NotSupportedError) and uses the first.\ntry {\n  registerProcessor(\"speechclock-clock\", class extends AudioWorkletProcessor {\n    constructor(options) {\n      super();\n      const o = options.processorOptions;\n      this.setting = o.setting;\n      this.num = BigInt(o.tick[0]);\n      this.den = BigInt(o.tick[1]);\n      this.core = new SpeechClockCore(o.setting, sampleRate);\n      // Events told before start(), already logged at their times: queued before the first tick.\n      for (const e of o.events) this.core.push(e.kind, e.t_s, e);\n      this.received = o.events.length;  // events received (those above, then one per {event} message)\n      this.n = o.setting.fft_size;\n      this.ring = new Float32Array(this.n);\n      this.window = new Float32Array(this.n);\n      this.mono = new Float32Array(128);\n      this.pos = 0;           // ring index of the oldest frame\n      this.next = null;       // the frame the next call should start at\n      this.k = 0;             // the next tick\n      this.frameK = 0;\n      this.posted = 0;        // tick messages sent\n      this.stopped = false;\n      this.port.onmessage = (e) => {\n        const m = e.data;\n        if (m.event) {\n          this.received += 1;\n          const t = this.core.push(m.event.kind, m.event.t_s, m.event);\n          this.port.postMessage({ applied: Object.assign({}, m.event, { t_s: t }) });\n        } else if (m.sync !== undefined) {\n          this.port.postMessage({ synced: m.sync });\n        } else if (m.finish) {\n          this.stopped = true;\n          this.port.postMessage({ finished: this.core.finish(), ticks: this.posted });\n        }\n      };\n      this.port.postMessage({ ready: true });\n    }\n    tickAt(frame) {\n      for (let i = 0; i < this.n; i++) this.window[i] = this.ring[(this.pos + i) % this.n];\n      const level = speechclockLevel(this.window);\n      const state = this.core.tick(level, frame / sampleRate, false);\n      const out = this.core.out;\n      this.core.out = [];\n      const c = this.core;\n      const core = { beat: c.beat, pauses: c.pauses, pausedSince: c.pausedSince, readyAtS: c.readyAtS, queue: c.queue,\n                     received: this.received };\n      this.port.postMessage({ tick: { frame, level, state, out, core } });\n      this.posted += 1;\n      this.k += 1;\n      this.frameK = speechclockTickFrame(this.k, this.num, this.den, sampleRate);\n    }\n    append(block) {\n      for (let i = 0; i < block.length; i++) {\n        this.ring[this.pos] = block[i];\n        this.pos = (this.pos + 1) % this.n;\n      }\n    }\n    process(inputs) {\n      if (this.stopped) return false;\n      const frame = currentFrame;\n      if (this.next === null) {\n        // The first tick at or after the first frame this worklet sees (earlier ones it cannot read).\n        while (speechclockTickFrame(this.k, this.num, this.den, sampleRate) < frame) this.k += 1;\n        this.frameK = speechclockTickFrame(this.k, this.num, this.den, sampleRate);\n        this.next = frame;\n      }\n      // Every call is one render quantum: this.next counts the calls. currentFrame only tells\n      // of calls that never came, when it is ahead of that count (it can lag behind it for a\n      // few calls under load and catch up, which is no gap). Quanta this worklet was not called\n      // for read as silence (and ticks among them still decide); the main thread is told of the jump.\n      if (this.next < frame) this.port.postMessage({ jump: { frame: this.next, frames: frame - this.next } });\n      while (this.next < frame) {\n        while (this.frameK <= this.next) this.tickAt(this.frameK);\n        this.mono.fill(0);\n        this.append(this.mono);\n        this.next += 128;\n      }\n      while (this.frameK <= this.next) this.tickAt(this.frameK);\n      speechclockDownmix(inputs[0] || [], this.mono);\n      this.append(this.mono);\n      this.next += 128;\n      while (this.frameK <= this.next) this.tickAt(this.frameK);\n      return true;\n    }\n  });\n} catch (err) {\n  if (!(err && err.name === \"NotSupportedError\")) throw err;\n}\n";
// speech-clock's page clock: what both threads run (the decisions, the down-mix, the level, the tick
// frames). clock/web/build.py puts this text in the main thread's builds and, as text, in the
// AudioWorklet's module (SPEECHCLOCK_WORKLET_SOURCE). No BigInt literals: a bundle may target ES2017.

// The decisions, tick by tick: the replay's arithmetic in its order. Shared by the main thread (the
// poll path) and the audio thread (the build puts this file's text into the worklet's module), so
// it refers to nothing outside this file.
class SpeechClockCore {
  constructor(setting, rate) {
    this.floor = setting.floor;
    this.quietS = setting.quiet_s;
    this.onsetTimeoutS = setting.onset_timeout_s;
    this.rule = setting.rule;
    this.hangoverS = setting.hangover_s === null ? setting.quiet_s : setting.hangover_s;
    this.rate = rate;
    this.state = "idle";     // "idle", "waiting" or "speaking"
    this.beat = null;        // the open beat: {terminal_s, linger_s, start_s, last_word_s, stopped_s, late}
    this.beats = [];         // every closed beat, as replay_ticks' ReplayBeat fields (and how it ended)
    this.lastTickS = -Infinity;
    this.queue = [];         // events not yet applied, in time order
    this.pauses = [];        // closed paused intervals [lo, hi] that can still overlap the open beat
    this.pausedSince = null;
    this.readyAtS = null;
    this.out = [];           // [type, detail] to emit, in order
  }

  // An event at t_s (seconds); one at or before a tick already decided is timed one frame after it.
  // Returns its time.
  push(kind, t_s, fields) {
    let t = t_s;
    if (t <= this.lastTickS) t = this.lastTickS + 1 / this.rate;
    const e = { kind, t_s: t, linger_s: fields && fields.linger_s != null ? fields.linger_s : null, reason: (fields && fields.reason) || null };
    let i = this.queue.length;
    while (i > 0 && this.queue[i - 1].t_s > t) i--;
    this.queue.splice(i, 0, e);
    return t;
  }

  emit(type, detail) { this.out.push([type, detail]); }

  setState(to, t) {
    if (to === this.state) return;
    const from = this.state;
    this.state = to;
    this.emit("state", { t_s: t, from, to });
  }

  // Whether the rule ends the beat at an unpaused quiet tick, quiet seconds after the last word
  // (told: the provider's event has arrived). clock/core/replay.py _quiet_ends.
  quietEnds(told, quiet) {
    if (this.rule === "level+stopped" && told) return quiet >= this.hangoverS - 1e-9;
    if (quiet >= this.quietS - 1e-9) return true;
    return told && (this.rule === "stopped" || (this.rule === "stopped+quiet" && quiet >= this.hangoverS - 1e-9));
  }

  // The decision at one tick, from a level read at time now (seconds). Returns the beat's
  // state at this tick, as replay_ticks records it: "idle", "waiting" (also at the tick it
  // gives up), "speaking", or "quiet" (declared at this tick).
  tick(level, now, late) {
    this.lastTickS = now;
    while (this.queue.length && this.queue[0].t_s <= now) this.apply(this.queue.shift());
    if (this.readyAtS !== null && now >= this.readyAtS) {
      const at = this.readyAtS;
      this.readyAtS = null;
      this.emit("ready", { t_s: now, prompt_allowed_s: at });
    }
    const b = this.beat;
    if (b === null) return "idle";
    if (late) b.late = true;
    const speech = level > this.floor;
    // The event alone ends the beat at any unpaused tick from its first word on, speech or not.
    const alone = this.rule === "stopped" && b.stopped_s !== null && this.pausedSince === null;
    if (b.start_s === null) {
      if (speech) {
        b.start_s = b.last_word_s = now;
        this.emit("speaking", { t_s: now, level, terminal_s: b.terminal_s });
        this.setState("speaking", now);
        return alone ? this.declare(now) : "speaking";
      }
      if (this.unpaused(b.terminal_s, now) >= this.onsetTimeoutS - 1e-9) {
        const beat = this.close({ no_onset: true, ended: "onset-timeout" });
        this.emit("onset-timeout", { t_s: now, terminal_s: b.terminal_s, beat });
        this.setState("idle", now);
      }
      return "waiting";
    }
    if (speech) {
      b.last_word_s = now;
      return alone ? this.declare(now) : "speaking";
    }
    if (this.pausedSince === null && this.quietEnds(b.stopped_s !== null, this.unpaused(b.last_word_s, now))) {
      return this.declare(now);
    }
    return "speaking";
  }

  // The beat is over at this tick.
  declare(now) {
    const beat = this.close({ declared: now, ended: "quiet" });
    this.emit("quiet", { t_s: now, ...beat });
    this.setState("idle", now);
    if (now >= beat.prompt_allowed_s) this.emit("ready", { t_s: now, prompt_allowed_s: beat.prompt_allowed_s });
    else this.readyAtS = beat.prompt_allowed_s;
    return "quiet";
  }

  apply(e) {
    if (e.kind === "terminal") {
      if (this.beat !== null) {
        const beat = this.close({ aborted: true, ended: "superseded" });
        this.emit("aborted", { t_s: e.t_s, reason: "superseded", beat });
      }
      this.beat = { terminal_s: e.t_s, linger_s: e.linger_s, start_s: null, last_word_s: null, stopped_s: null, late: false };
      this.readyAtS = null;
      // Paused intervals that ended before this beat can no longer change a count.
      this.pauses = this.pauses.filter(([, hi]) => hi > e.t_s);
      this.setState("waiting", e.t_s);
    } else if (e.kind === "pause") {
      if (this.pausedSince === null) this.pausedSince = e.t_s;
    } else if (e.kind === "resume") {
      if (this.pausedSince !== null) this.pauses.push([this.pausedSince, e.t_s]);
      this.pausedSince = null;
    } else if (e.kind === "stopped") {
      if (this.beat !== null && this.beat.stopped_s === null) this.beat.stopped_s = e.t_s;
    } else if (e.kind === "end" && this.beat !== null) {
      const reason = e.reason || "end";
      const beat = this.close({ aborted: true, ended: reason });
      this.emit(reason === "end" ? "aborted" : "ended", { t_s: e.t_s, reason, beat });
      this.setState("idle", e.t_s);
    }
  }

  // Seconds of [a, b] outside every paused interval (the replay's arithmetic, in its order).
  unpaused(a, b) {
    let paused = 0;
    const spans = this.pausedSince === null ? this.pauses : [...this.pauses, [this.pausedSince, b]];
    for (const [lo, hi] of spans) paused += Math.max(0, Math.min(b, hi) - Math.max(a, lo));
    return (b - a) - paused;
  }

  close({ declared = null, no_onset = false, aborted = false, ended = "open" }) {
    const b = this.beat;
    const beat = {
      terminal_s: b.terminal_s, start_s: b.start_s, last_word_s: b.last_word_s, quiet_declared_s: declared,
      no_onset, aborted, prompt_allowed_s: declared === null ? null : declared + (b.linger_s || 0),
      stopped_s: b.stopped_s, ended, late: b.late,
    };
    this.beats.push(beat);
    this.beat = null;
    return beat;
  }

  // The beat still open (if any) as replay_ticks leaves it at the end of a recording.
  finish() {
    if (this.beat !== null) this.close({});
    for (const e of this.queue) {
      if (e.kind === "terminal") {
        this.beats.push({ terminal_s: e.t_s, start_s: null, last_word_s: null, quiet_declared_s: null,
                          no_onset: true, aborted: false, prompt_allowed_s: null, stopped_s: null, ended: "open",
                          late: false });
      }
    }
    this.queue = [];
    return this.beats;
  }
}

// Down-mix one render quantum to mono as the AnalyserNode does (the spec's speakers rules,
// float32 in Chromium's order; clock/core/analyser.py downmix_to_mono) into out. Self-contained.
function speechclockDownmix(channels, out) {
  const f = Math.fround, n = out.length, k = channels.length;
  if (k === 0) { out.fill(0); return; }
  if (k === 2 || k === 4 || k === 6) {
    const weights = k === 2 ? [[0, 0.5], [1, 0.5]] : k === 4 ? [[0, 0.25], [1, 0.25], [2, 0.25], [3, 0.25]]
      : [[0, f(Math.SQRT1_2)], [1, f(Math.SQRT1_2)], [2, 1], [4, 0.5], [5, 0.5]];
    out.fill(0);
    for (const [c, w] of weights) {
      const x = channels[c];
      for (let i = 0; i < n; i++) out[i] = f(out[i] + (w === 1 ? x[i] : f(w * x[i])));
    }
    return;
  }
  out.set(channels[0]);  // one channel, or the discrete rule: the first
}

// The level of a window: RMS summed in float64 from the oldest sample (bit-exact with the tool's).
function speechclockLevel(data) {
  let sum = 0;
  for (let i = 0; i < data.length; i++) sum += data[i] * data[i];
  return Math.sqrt(sum / data.length);
}

// The frame of tick k: ceil(k * num * rate / (den * 128)) * 128, in exact integers. Self-contained.
function speechclockTickFrame(k, num, den, rate) {
  const q = BigInt(k) * num * BigInt(rate), d = den * BigInt(128);
  return Number((q + d - BigInt(1)) / d) * 128;
}

// speech-clock's reference page clock, the main thread's part: with core.js (the decisions, shared
// with the audio thread) and worklet.js (the audio thread's processor) the one source of
// speechclock.js (classic script), speechclock.mjs (ES module) and speechclock.cjs (CommonJS);
// clock/web/build.py writes them. docs/clock.md explains it. The build defines SPEECHCLOCK_VERSION
// (package.json's major version) and SPEECHCLOCK_WORKLET_SOURCE (core.js and worklet.js as text,
// made at build time: no bundler or minifier can rewrite a string the audio thread runs).
//
// It decides exactly as `speechclock` replays (clock/core/replay.py replay_ticks), tick for tick:
// tick k reads the level at frame F_k = ceil(k * tick_s * rate / 128) * 128 (the first render
// quantum boundary at or after k * tick_s), and its time is F_k / rate.
//
//   idle -> terminalResponse() -> waiting -> (first tick with level > floor) speaking
//   -> quiet at the first tick where the unpaused time since the last word reaches quiet_s;
//   then linger_s before the next prompt. pause() freezes the quiet count and the onset
//   timeout, resume() continues them, end() aborts the beat. A beat still waiting after
//   onset_timeout_s (unpaused) gives up. An event is applied before the first tick at or
//   after its time; elapsed times are compared with quiet_s allowing 1 ns for rounding.
//
// A rule (config.rule, clock/core/thresholds.py RULES) may end a beat sooner once providerStopped()
// told the open beat the provider's output_audio_buffer.stopped; the level clock bounds every
// rule. "stopped+quiet": the quiet since the last word reaches hangover_s; "stopped": at once
// (any unpaused tick from the first word on); "level+stopped": the quiet time becomes hangover_s.

const SPEECHCLOCK_DEFAULTS = {
  floor: 0.003, quiet_s: 2.5, onset_timeout_s: 10.0, tick_s: "1/60", fft_size: 2048, rule: "level", hangover_s: null,
};
// The rules, and those with a hangover.
const SPEECHCLOCK_RULES = ["level", "stopped+quiet", "stopped", "level+stopped"];
const SPEECHCLOCK_HANGOVER_RULES = ["stopped+quiet", "level+stopped"];

// The config, checked: one Error naming the first bad key. tick_s becomes an exact ratio
// [numerator, denominator] (a decimal as written, "1/60" as a ratio), as speechclock.toml reads it.
function speechclockConfig(config) {
  if (config === null || typeof config !== "object") throw new TypeError(`speechclock: config must be an object, got ${config}`);
  for (const key of Object.keys(config)) {
    if (!(key in SPEECHCLOCK_DEFAULTS)) {
      throw new RangeError(`speechclock: config.${key} is not a setting (the settings: ${Object.keys(SPEECHCLOCK_DEFAULTS).join(", ")})`);
    }
  }
  const get = (key) => (config[key] === undefined ? SPEECHCLOCK_DEFAULTS[key] : config[key]);
  const bad = (key, want) => new RangeError(`speechclock: config.${key} must be ${want}, got ${JSON.stringify(config[key])}`);
  const positive = (key) => {
    const v = get(key);
    if (!(typeof v === "number" && v > 0 && Number.isFinite(v))) throw bad(key, "a finite number > 0");
    return v;
  };
  const floor = positive("floor");
  const quietS = positive("quiet_s");
  let onsetTimeoutS = get("onset_timeout_s");
  if (onsetTimeoutS === null) onsetTimeoutS = Infinity;  // null: wait forever (JSON has no Infinity)
  if (!(typeof onsetTimeoutS === "number" && onsetTimeoutS > 0)) throw bad("onset_timeout_s", "a number > 0, or null to wait forever");
  const tick = get("tick_s");
  const text = typeof tick === "number" ? String(tick) : typeof tick === "string" ? tick.trim() : "";
  let ratio = null;
  let m = /^(\d+)\s*\/\s*(\d+)$/.exec(text);
  if (m) ratio = [BigInt(m[1]), BigInt(m[2])];
  else if ((m = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,3}))?$/.exec(text)) && (m[1] || m[2])) {
    const digits = (m[1] || "") + (m[2] || "");
    const exp = Number(m[3] || 0) - (m[2] || "").length;
    // BigInt() and no BigInt literals or **: a bundle may target ES2017.
    const pow10 = (n) => BigInt(`1${"0".repeat(n)}`);
    ratio = exp >= 0 ? [BigInt(digits) * pow10(exp), BigInt(1)] : [BigInt(digits), pow10(-exp)];
  }
  if (!ratio || ratio[0] <= BigInt(0) || ratio[1] <= BigInt(0)) throw bad("tick_s", 'seconds > 0, a number or a ratio such as "1/60"');
  const fft = get("fft_size");
  if (!(Number.isInteger(fft) && fft >= 32 && fft <= 32768 && (fft & (fft - 1)) === 0)) {
    throw bad("fft_size", "a power of two from 32 to 32768");
  }
  const rule = get("rule");
  if (!SPEECHCLOCK_RULES.includes(rule)) throw bad("rule", `one of ${SPEECHCLOCK_RULES.map((r) => `"${r}"`).join(", ")}`);
  const hangover = get("hangover_s");
  if (SPEECHCLOCK_HANGOVER_RULES.includes(rule)) {
    if (!(typeof hangover === "number" && hangover > 0 && Number.isFinite(hangover))) {
      throw bad("hangover_s", `a finite number > 0 with rule "${rule}"`);
    }
    // The level clock bounds every rule: a hangover at or above the quiet time never ends a beat sooner.
    if (hangover >= quietS) throw bad("hangover_s", `under quiet_s (${quietS} s) with rule "${rule}"`);
  } else if (hangover !== null) {
    throw bad("hangover_s", `null with rule "${rule}" (it has no hangover)`);
  }
  return {
    floor, quiet_s: quietS, onset_timeout_s: onsetTimeoutS, tick: ratio, tick_s: Number(ratio[0]) / Number(ratio[1]),
    fft_size: fft, rule, hangover_s: hangover,
  };
}

// Read an analyser's time-domain data and the frame the read is logged at: the context's frame,
// the same before and after the read, or it reads again (null when it never was: decide nothing).
// Chromium writes the analyser's window while it renders a quantum and advances the context's
// frame after the render, so a read that lands in between holds the window ending one render
// quantum (128 frames) after the logged frame; no read from the main thread can tell the two apart.
function speechclockReadAnalyser(analyser, data, audioContext) {
  const now = () => Math.round(audioContext.currentTime * audioContext.sampleRate);
  for (let attempt = 0; attempt < 4; attempt++) {
    const before = now();
    analyser.getFloatTimeDomainData(data);
    if (now() === before) return before;
  }
  return null;
}

class SpeechClock extends EventTarget {
  // analyser: the AnalyserNode on the guide's remote audio. options: {capture, path ("auto",
  // "worklet" or "poll"), source (the node the analyser reads; default: the analyser's output,
  // which is its input unchanged), track (the remote MediaStreamTrack; default: the source's),
  // workletUrl (where the page serves speechclock-worklet.js; default: the build's text as a blob:
  // URL)}.
  constructor(analyser, config = {}, options = {}) {
    super();
    const setting = speechclockConfig(config);
    if (!analyser || typeof analyser.getFloatTimeDomainData !== "function") {
      throw new TypeError("speechclock: the first argument must be the AnalyserNode on the guide's audio");
    }
    const path = options.path === undefined ? "auto" : options.path;
    if (!["auto", "worklet", "poll"].includes(path)) throw new RangeError(`speechclock: options.path must be "auto", "worklet" or "poll", got ${JSON.stringify(path)}`);
    this.setting = setting;
    this.floor = setting.floor;
    this.quietS = setting.quiet_s;
    this.onsetTimeoutS = setting.onset_timeout_s;
    this.tickS = setting.tick_s;
    this.analyser = analyser;
    this.audioContext = analyser.context;
    this.rate = this.audioContext.sampleRate;
    this.capture = options.capture || null;
    this.source = options.source || null;
    this.track = options.track || (this.source && this.source.mediaStream ? this.source.mediaStream.getAudioTracks()[0] : null) || null;
    this.wanted = path;
    this.workletUrl = options.workletUrl || null;
    this.path = null;          // "worklet" or "poll", once started
    analyser.fftSize = setting.fft_size;
    this.data = new Float32Array(setting.fft_size);
    this.core = new SpeechClockCore(setting, this.rate);
    this.lastLevel = null;     // the level of the last tick
    this.lastFrame = null;     // the frame of the last tick
    this.timer = null;
    this.node = null;
    this.syncs = new Map();
    this.finished = null;
    this.finishedWith = null;
    this.ticksSeen = 0;
    this.contextState = this.audioContext.state;
    this.onContextState = () => this.contextChanged();
    this.onTrack = (e) => this.watchTrack(e.type);
    // A track that starts muted (every remote WebRTC track, until its first packets) has not stopped:
    // only a mute after it was unmuted ends the open beat.
    this.onUnmute = () => { this.trackDone = false; this.trackHeard = true; };
    this.trackDone = false;
    this.trackHeard = false;
    this.sent = [];            // events handed to the audio thread: {id, event, logged}
    this.snapshot = null;      // the audio thread's core at its last tick
    this.frozenAt = null;      // when the page was frozen: [context seconds, wall milliseconds]
    this.onFreeze = () => { this.frozenAt = [this.nowS(), typeof performance !== "undefined" ? performance.now() : Date.now()]; };
    this.onResume = () => this.unfrozen();
  }

  get state() { return this.core.state; }
  get beats() { return this.core.beats; }
  get lastTickS() { return this.core.lastTickS; }

  config() {
    const s = this.setting;
    return { floor: s.floor, quiet_s: s.quiet_s, onset_timeout_s: Number.isFinite(s.onset_timeout_s) ? s.onset_timeout_s : null,
             tick_s: `${s.tick[0]}/${s.tick[1]}`, fft_size: s.fft_size, rule: s.rule, hangover_s: s.hangover_s };
  }

  // The clock's time: the AudioContext's frame over its rate.
  nowS() { return Math.round(this.audioContext.currentTime * this.rate) / this.rate; }

  // Start deciding: on the audio thread where AudioWorklet is available (path "auto" or
  // "worklet"), else by polling the analyser every tick_s. Resolves to the clock. A worklet that
  // cannot start (its module refused, e.g. by a Content-Security-Policy, or its processor failing)
  // falls back to polling, with a "fallback" event and a clock.fallback line in the log.
  async start() {
    if (this.path !== null) return this;
    const ctx = this.audioContext;
    const worklet = this.wanted !== "poll" && ctx.audioWorklet && typeof AudioWorkletNode === "function";
    if (this.wanted === "worklet" && !worklet) throw new Error("speechclock: this browser has no AudioWorklet (use path \"poll\")");
    if (ctx.addEventListener) ctx.addEventListener("statechange", this.onContextState);
    if (this.track && this.track.addEventListener) {
      this.track.addEventListener("ended", this.onTrack);
      this.track.addEventListener("mute", this.onTrack);
      this.track.addEventListener("unmute", this.onUnmute);
    }
    if (typeof document !== "undefined" && document.addEventListener) {
      document.addEventListener("freeze", this.onFreeze);
      document.addEventListener("resume", this.onResume);
    }
    let failed = null;
    if (worklet) {
      try {
        await this.startWorklet();
      } catch (err) {
        failed = err;
      }
    }
    if (!worklet || failed) this.startPoll();
    this.logSetting();
    if (failed) this.fellBack(failed);
    return this;
  }

  async startWorklet() {
    const ctx = this.audioContext;
    const url = this.workletUrl || URL.createObjectURL(new Blob([SPEECHCLOCK_WORKLET_SOURCE], { type: "text/javascript" }));
    try { await ctx.audioWorklet.addModule(url); } finally { if (!this.workletUrl) URL.revokeObjectURL(url); }
    const s = this.setting;
    const events = this.core.queue;
    const node = new AudioWorkletNode(ctx, "speechclock-clock", {
      numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1],
      processorOptions: { setting: { floor: s.floor, quiet_s: s.quiet_s, onset_timeout_s: s.onset_timeout_s, fft_size: s.fft_size,
                                     rule: s.rule, hangover_s: s.hangover_s },
                          tick: [String(s.tick[0]), String(s.tick[1])], events },
    });
    // Events told before start() were logged at their times.
    this.sent = events.map((event, id) => ({ id, event, logged: true }));
    this.core.queue = [];
    this.node = node;
    let started;
    const ready = new Promise((resolve, reject) => {
      started = resolve;
      node.onprocessorerror = () => reject(new Error("the audio thread's processor failed to start"));
    });
    this.onReady = started;
    node.port.onmessage = (e) => this.message(e.data);
    try {
      await ready;
    } catch (err) {
      this.node = null;
      this.recover();
      throw err;
    }
    node.onprocessorerror = () => this.fallBackNow(new Error("the audio thread's processor failed"));
    (this.source || this.analyser).connect(node);
    node.connect(ctx.destination);  // silent; connected so that the context pulls it
    this.path = "worklet";
  }

  startPoll() {
    this.path = "poll";
    this.timer = setInterval(() => this.poll(), this.tickS * 1000);
  }

  // The events the audio thread had not applied when it failed go to this thread's core, which takes
  // over from the audio thread's last tick (its open beat, pauses and queue).
  recover() {
    const snap = this.snapshot;
    const core = this.core;
    let from = 0;
    if (snap) {
      core.beat = snap.beat;
      core.pauses = snap.pauses;
      core.pausedSince = snap.pausedSince;
      core.readyAtS = snap.readyAtS;
      core.queue = snap.queue;
      from = snap.received;
    }
    for (const { event, logged } of this.sent.slice(from)) {
      const t = core.push(event.kind, event.t_s, event);
      if (!logged) this.logEvent(Object.assign({}, event, { t_s: t }));
    }
    this.sent = [];
  }

  // The worklet failed after it started: this thread decides from here on.
  fallBackNow(err) {
    const node = this.node;
    if (!node) return;
    this.node = null;
    try { node.disconnect(); } catch (e) { /* disconnected already */ }
    try { (this.source || this.analyser).disconnect(node); } catch (e) { /* not connected */ }
    this.recover();
    this.path = "poll";
    this.fellBack(err);
    if (this.finished) {
      // A finish() waiting for the audio thread's reply gets this thread's beats (and nothing polls after it).
      const resolve = this.finished;
      this.finished = null;
      resolve(this.core.finish());
    } else {
      this.startPoll();
    }
  }

  fellBack(err) {
    const t = this.nowS();
    const reason = String(err && err.message || err);
    if (typeof console !== "undefined") console.warn(`speechclock: the AudioWorklet path failed (${reason}); polling the analyser instead`);
    this.dispatchEvent(new CustomEvent("fallback", { detail: { t_s: t, from: "worklet", to: "poll", reason } }));
    if (this.capture) this.capture.log("clock.fallback", { frame: Math.round(t * this.rate), path: "poll", reason });
  }

  // The page was frozen (document "freeze", then "resume"): for how long, and how far the context's time moved
  // meanwhile (Chromium stops rendering a frozen page's audio: the context's time stands still).
  unfrozen() {
    if (this.frozenAt === null) return;
    const [from, wall] = this.frozenAt;
    this.frozenAt = null;
    const t = this.nowS();
    const frozenS = ((typeof performance !== "undefined" ? performance.now() : Date.now()) - wall) / 1000;
    this.dispatchEvent(new CustomEvent("frozen", { detail: { t_s: t, frozen_at_s: from, gap_s: t - from, frozen_s: frozenS } }));
    if (this.capture) {
      this.capture.log("clock.frozen", { frame: Math.round(t * this.rate), gap_frames: Math.round((t - from) * this.rate),
                                         frozen_s: Math.round(frozenS * 1000) / 1000 });
    }
  }

  stop() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (typeof document !== "undefined" && document.removeEventListener) {
      document.removeEventListener("freeze", this.onFreeze);
      document.removeEventListener("resume", this.onResume);
    }
    if (this.audioContext.removeEventListener) this.audioContext.removeEventListener("statechange", this.onContextState);
    if (this.track && this.track.removeEventListener) {
      this.track.removeEventListener("ended", this.onTrack);
      this.track.removeEventListener("mute", this.onTrack);
      this.track.removeEventListener("unmute", this.onUnmute);
    }
    return this;
  }

  logSetting() {
    if (this.capture) this.capture.log("clock.setting", { ...this.config(), path: this.path, clock_version: SPEECHCLOCK_VERSION });
  }

  // --- the page tells the clock what happened (each at t_s, default now)
  terminalResponse({ linger_s = null, t_s, response_id = null } = {}) {
    this.beatResponse = response_id;
    this.promptedSince = false;
    return this.event("terminal", t_s, { linger_s, response_id });
  }
  pause({ t_s } = {}) { return this.event("pause", t_s); }
  resume({ t_s } = {}) { return this.event("resume", t_s); }
  end({ t_s } = {}) { return this.event("end", t_s); }
  prompt({ t_s } = {}) { this.promptedSince = true; return this.event("prompt", t_s); }
  // The provider said output_audio_buffer.stopped: the open beat has its event (a rule may end it sooner). Only
  // the beat's own counts, as the replay takes it: none after the page's prompt, none of another response (an
  // acknowledgment's) where both ids are known. Returns its time, or null where it is not the beat's.
  providerStopped({ t_s, response_id = null } = {}) {
    if (this.promptedSince) return null;
    if (response_id !== null && this.beatResponse != null && response_id !== this.beatResponse) return null;
    return this.event("stopped", t_s);
  }

  event(kind, t_s, fields = {}) {
    const t = t_s === undefined ? this.nowS() : t_s;
    // Who caused a prompt or an end told now (the tool's replay moves the page's own with its declaration): the
    // page, once its clock has declared the beat it ends; the visitor (a question, a barge-in, End) before that.
    // One told ahead of its time is left to the log's clock.quiet lines (the clock has not decided up to it).
    if ((kind === "prompt" || kind === "end") && this.beatOpened && t_s === undefined) {
      fields = { ...fields, cause: this.beatDeclared ? "page" : "visitor" };
    }
    if (kind === "terminal") { this.beatOpened = true; this.beatDeclared = false; }
    if (kind === "prompt") {  // only logged
      this.logEvent({ kind, t_s: t, ...fields });
      return t;
    }
    if (this.node) {
      // The audio thread applies it before its first tick at or after t (or, if it has decided
      // that tick already, one frame after it) and says when: the log gets that time.
      const event = Object.assign({ kind, t_s: t }, fields);
      this.sent.push({ id: this.sent.length, event, logged: false });
      this.node.port.postMessage({ event: Object.assign({ id: this.sent.length - 1 }, event) });
      return t;
    }
    const at = t_s === undefined ? this.core.push(kind, t, fields) : this.pushGiven(kind, t, fields);
    this.logEvent({ kind, t_s: at, ...fields });
    return at;
  }

  // An event with its own time (it may lie before the last tick: the queue applies it next).
  pushGiven(kind, t, fields) {
    const e = { kind, t_s: t, linger_s: fields.linger_s != null ? fields.linger_s : null, reason: fields.reason || null };
    const q = this.core.queue;
    let i = q.length;
    while (i > 0 && q[i - 1].t_s > t) i--;
    q.splice(i, 0, e);
    return t;
  }

  logEvent(e) {
    if (!this.capture) return;
    const type = { terminal: "terminal_response", stopped: "clock.stopped" }[e.kind] || e.kind;
    const extra = {};
    if (e.kind === "terminal" && e.linger_s != null) extra.linger_s = e.linger_s;
    if (e.kind === "terminal" && e.response_id != null) extra.response_id = e.response_id;
    if (e.reason) extra.reason = e.reason;
    if (e.cause) extra.cause = e.cause;
    // The first frame at or after its time: the replay applies it before the same tick the clock did.
    this.capture.log(type, { frame: Math.ceil(e.t_s * this.rate - 1e-6), ...extra });
  }

  // A promise that resolves once the audio thread has every event posted so far.
  sync() {
    if (!this.node) return Promise.resolve();
    const id = this.syncs.size + 1 + Math.random();
    return new Promise((resolve) => { this.syncs.set(id, resolve); this.node.port.postMessage({ sync: id }); });
  }

  message(m) {
    if (m.ready) {
      if (this.onReady) this.onReady();
      this.onReady = null;
    } else if (m.tick) {
      this.ticksSeen += 1;
      const { frame, level, state, out } = m.tick;
      this.snapshot = m.tick.core;
      this.lastLevel = level;
      this.lastFrame = frame;
      this.core.lastTickS = frame / this.rate;
      this.replayOut(out, state);
      if (this.capture) this.capture.logLevel(level, { frame });
      this.watchTrack();
      this.dispatch(out);
      this.dispatchEvent(new CustomEvent("tick", { detail: { t_s: frame / this.rate, frame, level, state } }));
    } else if (m.applied) {
      const sent = this.sent[m.applied.id];
      if (sent) sent.logged = true;
      const applied = Object.assign({}, m.applied);
      delete applied.id;
      this.logEvent(applied);
    } else if (m.jump) {
      // The audio thread was not called for these quanta (a frozen page, a starved audio thread): it read them as
      // silence and decided their ticks on it.
      const { frame, frames } = m.jump;
      this.dispatchEvent(new CustomEvent("jump", { detail: { t_s: frame / this.rate, frame, gap_s: frames / this.rate } }));
      if (this.capture) this.capture.log("clock.jump", { frame, gap_frames: frames });
    } else if (m.synced !== undefined) {
      const resolve = this.syncs.get(m.synced);
      this.syncs.delete(m.synced);
      if (resolve) resolve();
    } else if (m.finished) {
      this.finishedWith = m;
    }
    // The audio thread's messages can arrive out of order with its reply to finish(): finish()
    // resolves once every tick it sent has arrived.
    const done = this.finishedWith;
    if (done && this.ticksSeen >= done.ticks && this.finished) {
      this.finished(done.finished);
      this.finished = null;
    }
  }

  // Mirror the audio thread's decisions in this thread's core (state, beats) from its outputs.
  replayOut(out, state) {
    for (const [type, detail] of out) {
      if (type === "state") this.core.state = detail.to;
      if (detail.beat) this.core.beats.push(detail.beat);
      else if (type === "quiet") {
        const { t_s, ...beat } = detail;
        this.core.beats.push(beat);
      }
    }
    this.lastState = state;
  }

  dispatch(out) {
    for (const [type, detail] of out) {
      if (type === "quiet") this.beatDeclared = true;
      this.dispatchEvent(new CustomEvent(type, { detail }));
      if (this.capture) {
        const name = { speaking: "clock.speaking", quiet: "clock.quiet", "onset-timeout": "clock.onset_timeout" }[type];
        if (name) this.capture.log(name, { frame: Math.round(detail.t_s * this.rate) });
      }
    }
  }

  // --- the polling path: read the analyser, decide. Returns the beat's state at this tick.
  poll() {
    this.watchTrack();
    const frame = speechclockReadAnalyser(this.analyser, this.data, this.audioContext);
    // No stable frame (the audio thread kept rendering), or no new audio (a suspended context).
    if (frame === null || (this.lastFrame !== null && frame === this.lastFrame)) return this.lastState || "idle";
    const level = speechclockLevel(this.data);
    const tickFrames = this.tickS * this.rate;
    const late = this.lastFrame !== null && frame - this.lastFrame > 2 * tickFrames;
    if (late) {
      this.dispatchEvent(new CustomEvent("late", { detail: { t_s: frame / this.rate, gap_s: (frame - this.lastFrame) / this.rate, frame } }));
      if (this.capture) this.capture.log("clock.late", { frame, gap_frames: frame - this.lastFrame });
    }
    this.lastFrame = frame;
    this.lastLevel = level;
    if (this.capture) this.capture.logLevel(level, { frame });
    const state = this.core.tick(level, frame / this.rate, late);
    const out = this.core.out;
    this.core.out = [];
    this.lastState = state;
    this.dispatch(out);
    this.dispatchEvent(new CustomEvent("tick", { detail: { t_s: frame / this.rate, frame, level, state } }));
    return state;
  }

  // The beat the clock has open when the audio stops (the track ended, was stopped or muted):
  // ended, never quiet. Checked on its events and at every tick (track.stop() fires no event).
  watchTrack() {
    const track = this.track;
    if (!track || this.trackDone) return;
    if (!track.muted) this.trackHeard = true;
    const kind = track.readyState === "ended" ? "ended" : track.muted && this.trackHeard ? "mute" : null;
    if (kind === null) return;
    this.trackDone = true;
    const t = this.nowS();
    this.event("end", undefined, { reason: kind === "mute" ? "track-muted" : "track-ended" });
    this.dispatchEvent(new CustomEvent("track", { detail: { t_s: t, type: kind } }));
  }

  contextChanged() {
    const to = this.audioContext.state;
    const from = this.contextState;
    this.contextState = to;
    const t = this.nowS();
    if (to !== "running" && from === "running") {
      this.dispatchEvent(new CustomEvent("suspended", { detail: { t_s: t, state: to } }));
      if (this.capture) this.capture.log("clock.suspended", { frame: Math.round(t * this.rate), state: to });
    } else if (to === "running" && from !== "running") {
      this.dispatchEvent(new CustomEvent("resumed", { detail: { t_s: t } }));
      if (this.capture) this.capture.log("clock.resumed", { frame: Math.round(t * this.rate) });
    }
  }

  // Close the open beat; resolves to every beat (on the worklet path, once the audio thread has).
  finish() {
    this.stop();
    // A closed AudioContext runs no audio thread: its last decisions are the ones mirrored here. (An
    // OfflineAudioContext is "closed" once rendered; its audio thread still answers.)
    const offline = typeof OfflineAudioContext === "function" && this.audioContext instanceof OfflineAudioContext;
    if (!this.node || (this.audioContext.state === "closed" && !offline)) return Promise.resolve(this.core.finish());
    return new Promise((resolve) => {
      this.finished = (beats) => { this.core.beats.splice(0, this.core.beats.length, ...beats); resolve(this.core.beats); };
      this.node.port.postMessage({ finish: true });
    });
  }

  // Decide on a level read elsewhere, at t_s (no analyser read): for tests and custom loops.
  tick(level, t_s) {
    const state = this.core.tick(level, t_s, false);
    const out = this.core.out;
    this.core.out = [];
    this.lastLevel = level;
    this.lastState = state;
    this.dispatch(out);
    return state;
  }
}

SpeechClock.version = SPEECHCLOCK_VERSION;
SpeechClock.defaults = SPEECHCLOCK_DEFAULTS;

exports.SpeechClock = SpeechClock;
exports.SpeechClockCore = SpeechClockCore;
exports.speechclockConfig = speechclockConfig;
exports.speechclockLevel = speechclockLevel;
exports.speechclockDownmix = speechclockDownmix;
exports.SPEECHCLOCK_VERSION = SPEECHCLOCK_VERSION;
exports.default = SpeechClock;
