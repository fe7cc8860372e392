// Built from clock/web/src/speechclock.js by clock/web/build.py: edit the source, then rebuild.
(function (root) {
"use strict";
if (root.SpeechClock && root.SpeechClock.version !== undefined) return;  // loaded already
// speech-clock's reference page clock: the one source of speechclock.js (classic script) and
// speechclock.mjs (ES module); clock/web/build.py writes both. docs/clock.md explains it.
//
// It decides exactly as `speechclock` replays (clock/core/beats.py replay_ticks), tick for tick:
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
// A rule (config.rule, clock/core/beats.py RULES) may end a beat sooner once providerStopped()
// told the open beat the provider's output_audio_buffer.stopped; the level clock bounds every
// rule. "stopped+quiet": the quiet since the last word reaches hangover_s; "stopped": at once
// (any unpaused tick from the first word on); "level+stopped": the quiet time becomes hangover_s.

const SPEECHCLOCK_VERSION = 5;
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
    ratio = exp >= 0 ? [BigInt(digits) * 10n ** BigInt(exp), 1n] : [BigInt(digits), 10n ** BigInt(-exp)];
  }
  if (!ratio || ratio[0] <= 0n || ratio[1] <= 0n) throw bad("tick_s", 'seconds > 0, a number or a ratio such as "1/60"');
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

// The decisions, tick by tick: the replay's arithmetic in its order. Self-contained (the
// AudioWorklet gets its source text), so it refers to nothing outside itself.
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
  // (told: the provider's event has arrived). clock/core/beats.py _quiet_ends.
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
  const q = BigInt(k) * num * BigInt(rate), d = den * 128n;
  return Number((q + d - 1n) / d) * 128;
}

// The AudioWorklet module: the clock on the audio thread. Its source text becomes the module.
function speechclockProcessorModule() {
  registerProcessor("speechclock-clock", class extends AudioWorkletProcessor {
    constructor(options) {
      super();
      const o = options.processorOptions;
      this.setting = o.setting;
      this.num = BigInt(o.tick[0]);
      this.den = BigInt(o.tick[1]);
      this.core = new SpeechClockCore(o.setting, sampleRate);
      // Events told before start(), already logged at their times: queued before the first tick.
      for (const e of o.events) this.core.push(e.kind, e.t_s, e);
      this.n = o.setting.fft_size;
      this.ring = new Float32Array(this.n);
      this.window = new Float32Array(this.n);
      this.mono = new Float32Array(128);
      this.pos = 0;           // ring index of the oldest frame
      this.next = null;       // the frame the next call should start at
      this.k = 0;             // the next tick
      this.frameK = 0;
      this.posted = 0;        // tick messages sent
      this.stopped = false;
      this.port.onmessage = (e) => {
        const m = e.data;
        if (m.event) {
          const t = this.core.push(m.event.kind, m.event.t_s, m.event);
          this.port.postMessage({ applied: { ...m.event, t_s: t } });
        } else if (m.sync !== undefined) {
          this.port.postMessage({ synced: m.sync });
        } else if (m.finish) {
          this.stopped = true;
          this.port.postMessage({ finished: this.core.finish(), ticks: this.posted });
        }
      };
    }
    tickAt(frame) {
      for (let i = 0; i < this.n; i++) this.window[i] = this.ring[(this.pos + i) % this.n];
      let sum = 0;
      for (let i = 0; i < this.n; i++) sum += this.window[i] * this.window[i];
      const level = Math.sqrt(sum / this.n);
      const state = this.core.tick(level, frame / sampleRate, false);
      const out = this.core.out;
      this.core.out = [];
      this.port.postMessage({ tick: { frame, level, state, out } });
      this.posted += 1;
      this.k += 1;
      this.frameK = speechclockTickFrame(this.k, this.num, this.den, sampleRate);
    }
    append(block) {
      for (let i = 0; i < block.length; i++) {
        this.ring[this.pos] = block[i];
        this.pos = (this.pos + 1) % this.n;
      }
    }
    process(inputs) {
      if (this.stopped) return false;
      const frame = currentFrame;
      if (this.next === null) {
        // The first tick at or after the first frame this worklet sees (earlier ones it cannot read).
        while (speechclockTickFrame(this.k, this.num, this.den, sampleRate) < frame) this.k += 1;
        this.frameK = speechclockTickFrame(this.k, this.num, this.den, sampleRate);
        this.next = frame;
      }
      // Every call is one render quantum: this.next counts the calls. currentFrame only tells
      // of calls that never came, when it is ahead of that count (it can lag behind it for a
      // few calls under load and catch up, which is no gap). Quanta this worklet was not called
      // for read as silence (and ticks among them still decide).
      while (this.next < frame) {
        while (this.frameK <= this.next) this.tickAt(this.frameK);
        this.mono.fill(0);
        this.append(this.mono);
        this.next += 128;
      }
      while (this.frameK <= this.next) this.tickAt(this.frameK);
      speechclockDownmix(inputs[0] || [], this.mono);
      this.append(this.mono);
      this.next += 128;
      while (this.frameK <= this.next) this.tickAt(this.frameK);
      return true;
    }
  });
}

function speechclockWorkletSource() {
  return [
    `const SpeechClockCore = ${SpeechClockCore.toString()};`,
    speechclockDownmix.toString(),
    speechclockTickFrame.toString(),
    `(${speechclockProcessorModule.toString()})();`,
  ].join("\n");
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
  // which is its input unchanged), track (the remote MediaStreamTrack; default: the source's)}.
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
    this.onUnmute = () => { this.trackDone = false; };
    this.trackDone = false;
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
  // "worklet"), else by polling the analyser every tick_s. Resolves to the clock.
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
    if (worklet) {
      const url = URL.createObjectURL(new Blob([speechclockWorkletSource()], { type: "application/javascript" }));
      try { await ctx.audioWorklet.addModule(url); } finally { URL.revokeObjectURL(url); }
      const s = this.setting;
      this.node = new AudioWorkletNode(ctx, "speechclock-clock", {
        numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1],
        processorOptions: { setting: { floor: s.floor, quiet_s: s.quiet_s, onset_timeout_s: s.onset_timeout_s, fft_size: s.fft_size,
                                       rule: s.rule, hangover_s: s.hangover_s },
                            tick: [String(s.tick[0]), String(s.tick[1])], events: this.core.queue },
      });
      this.core.queue = [];
      this.node.port.onmessage = (e) => this.message(e.data);
      (this.source || this.analyser).connect(this.node);
      this.node.connect(ctx.destination);  // silent; connected so that the context pulls it
      this.path = "worklet";
    } else {
      this.path = "poll";
      this.timer = setInterval(() => this.poll(), this.tickS * 1000);
    }
    this.logSetting();
    return this;
  }

  stop() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
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
  terminalResponse({ linger_s = null, t_s } = {}) { return this.event("terminal", t_s, { linger_s }); }
  pause({ t_s } = {}) { return this.event("pause", t_s); }
  resume({ t_s } = {}) { return this.event("resume", t_s); }
  end({ t_s } = {}) { return this.event("end", t_s); }
  prompt({ t_s } = {}) { return this.event("prompt", t_s); }
  // The provider said output_audio_buffer.stopped: the open beat has its event (a rule may end it sooner).
  providerStopped({ t_s } = {}) { return this.event("stopped", t_s); }

  event(kind, t_s, fields = {}) {
    const t = t_s === undefined ? this.nowS() : t_s;
    if (kind === "prompt") {  // only logged
      this.logEvent({ kind, t_s: t });
      return t;
    }
    if (this.node) {
      // The audio thread applies it before its first tick at or after t (or, if it has decided
      // that tick already, one frame after it) and says when: the log gets that time.
      this.node.port.postMessage({ event: { kind, t_s: t, ...fields } });
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
    if (e.reason) extra.reason = e.reason;
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
    if (m.tick) {
      this.ticksSeen += 1;
      const { frame, level, state, out } = m.tick;
      this.lastLevel = level;
      this.lastFrame = frame;
      this.core.lastTickS = frame / this.rate;
      this.replayOut(out, state);
      if (this.capture) this.capture.logLevel(level, { frame });
      this.watchTrack();
      this.dispatch(out);
      this.dispatchEvent(new CustomEvent("tick", { detail: { t_s: frame / this.rate, frame, level, state } }));
    } else if (m.applied) {
      this.logEvent(m.applied);
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
    const kind = track.readyState === "ended" ? "ended" : track.muted ? "mute" : null;
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

  root.SpeechClock = SpeechClock;
  root.SpeechClockCore = SpeechClockCore;
  root.speechclockConfig = speechclockConfig;
  root.speechclockLevel = speechclockLevel;
  root.speechclockDownmix = speechclockDownmix;
  root.SPEECHCLOCK_VERSION = SPEECHCLOCK_VERSION;
})(typeof globalThis !== "undefined" ? globalThis : this);
