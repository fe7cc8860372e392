// speech-clock's reference page clock. Copy this file into your page; docs/clock.md explains it.
//
// It decides exactly as `speechclock` replays (clock/core/beats.py replay_ticks), tick for tick:
//
//   idle -> terminalResponse() -> waiting -> (first tick with level > floor) speaking
//   -> quiet at the first tick where the unpaused time since the last word reaches quiet_s;
//   then linger_s before the next prompt. pause() freezes the quiet count and the onset
//   timeout, resume() continues them, end() aborts the beat. A beat still waiting after
//   onset_timeout_s (unpaused) gives up. An event is applied before the first tick at or
//   after its time; elapsed times are compared with quiet_s allowing 1 ns for rounding.
//
//   const clock = new SpeechClock(analyser, config, {capture});
//   clock.addEventListener("quiet", (e) => ...);   // also "speaking", "onset-timeout", "ready"
//   clock.start();                                   // polls every tick_s
//   clock.terminalResponse({linger_s});              // the backend's terminal response arrived
//   clock.pause(); clock.resume(); clock.end(); clock.stop();
//
// config: the [thresholds] keys of speechclock.toml (floor, quiet_s, onset_timeout_s,
// tick_s as seconds or "1/60", fft_size), as `speechclock derive --format js` writes them.
// With capture.js's capture given, every level read and every decision is logged.

const SPEECHCLOCK_CLOCK_VERSION = 1;
const SPEECHCLOCK_EPS_S = 1e-9;

// tick_s as the toml writes it: a number of seconds, or an exact ratio such as "1/60".
function speechclockSeconds(value) {
  if (typeof value === "number") return value;
  const m = /^\s*(\d+(?:\.\d*)?)\s*\/\s*(\d+(?:\.\d*)?)\s*$/.exec(String(value));
  return m ? Number(m[1]) / Number(m[2]) : Number(value);
}

class SpeechClock extends EventTarget {
  constructor(analyser, config = {}, options = {}) {
    super();
    const number = (key, fallback) => {
      let v = config[key] === undefined ? fallback : config[key];
      if (v === null && key === "onset_timeout_s") v = Infinity;  // null: wait forever (JSON has no Infinity)
      if (!(typeof v === "number" && (v > 0 || key === "floor") && !Number.isNaN(v))) {
        throw new Error(`speechclock: ${key} must be a number${key === "floor" ? "" : " > 0"}, got ${v}`);
      }
      return v;
    };
    this.floor = number("floor", 0.003);
    this.quietS = number("quiet_s", 2.5);
    this.onsetTimeoutS = number("onset_timeout_s", 10.0);  // Infinity waits forever
    this.tickS = speechclockSeconds(config.tick_s === undefined ? "1/60" : config.tick_s);
    if (!(this.tickS > 0 && Number.isFinite(this.tickS))) throw new Error(`speechclock: tick_s must be > 0, got ${config.tick_s}`);
    this.analyser = analyser;
    this.capture = options.capture || null;
    this.audioContext = analyser ? analyser.context : options.audioContext || null;
    if (analyser && config.fft_size) analyser.fftSize = config.fft_size;
    this.data = analyser ? new Float32Array(analyser.fftSize) : null;
    this.state = "idle";       // "idle", "waiting" or "speaking"
    this.beat = null;          // the open beat: {terminal_s, linger_s, start_s, last_word_s}
    this.beats = [];           // every closed beat, as replay_ticks' ReplayBeat fields
    this.lastTickS = -Infinity;
    this.lastLevel = null;     // the level of the last poll()
    this.queue = [];           // events not yet applied, in time order
    this.pauses = [];          // closed paused intervals [lo, hi] that can still overlap the open beat
    this.pausedSince = null;
    this.readyAtS = null;
    this.timer = null;
  }

  config() {
    return { floor: this.floor, quiet_s: this.quietS, onset_timeout_s: this.onsetTimeoutS, tick_s: this.tickS };
  }

  // The clock's time: seconds of the AudioContext (its frame / rate), or what the caller gives.
  nowS() {
    const ctx = this.audioContext;
    return ctx ? Math.round(ctx.currentTime * ctx.sampleRate) / ctx.sampleRate : performance.now() / 1000;
  }

  // --- the page tells the clock what happened (each at t_s, default now)
  terminalResponse({ linger_s = null, t_s } = {}) { this.event("terminal", t_s, { linger_s }); }
  pause({ t_s } = {}) { this.event("pause", t_s); }
  resume({ t_s } = {}) { this.event("resume", t_s); }
  end({ t_s } = {}) { this.event("end", t_s); }
  prompt({ t_s } = {}) { this.event("prompt", t_s); }

  event(kind, t_s, fields = {}) {
    // An event that comes after a tick is applied at the next one: its time is never
    // at or before a tick already decided (so the log replays as the clock decided).
    let t = t_s === undefined ? this.nowS() : t_s;
    if (t_s === undefined && t <= this.lastTickS) t = this.lastTickS + 1 / this.rate();
    this.queue.push({ kind, t_s: t, ...fields });
    if (this.capture) {
      const type = kind === "terminal" ? "terminal_response" : kind;
      const extra = kind === "terminal" && fields.linger_s != null ? { linger_s: fields.linger_s } : {};
      this.capture.log(type, { ...this.stamp(t), ...extra });
    }
  }

  rate() { return this.audioContext ? this.audioContext.sampleRate : 1e6; }

  stamp(t) {
    return this.audioContext ? { frame: Math.round(t * this.audioContext.sampleRate) } : { t: t };
  }

  // --- polling
  start() {
    if (this.timer === null) this.timer = setInterval(() => this.poll(), this.tickS * 1000);
    return this;
  }

  stop() {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    return this;
  }

  // Read the analyser (RMS of its float time-domain data, summed as docs/capture.md does)
  // and decide. Returns what tick() returns.
  poll(t_s) {
    let frame;
    if (typeof speechclockRead === "function" && this.audioContext) {
      frame = speechclockRead(this.analyser, this.data, this.audioContext);
    } else {
      this.analyser.getFloatTimeDomainData(this.data);
    }
    let sum = 0;
    for (let i = 0; i < this.data.length; i++) sum += this.data[i] * this.data[i];
    const level = Math.sqrt(sum / this.data.length);
    this.lastLevel = level;
    const now = t_s !== undefined ? t_s : frame !== undefined ? frame / this.audioContext.sampleRate : this.nowS();
    if (this.capture) this.capture.logLevel(level, this.stamp(now));
    return this.tick(level, now);
  }

  // --- the decision at one tick, from a level read at time now (seconds). Returns the beat's
  // state at this tick, as replay_ticks records it: "idle" (no beat open), "waiting" (also at
  // the tick it gives up), "speaking", or "quiet" (declared at this tick).
  tick(level, now) {
    this.lastTickS = now;
    while (this.queue.length && this.queue[0].t_s <= now) this.apply(this.queue.shift());
    if (this.readyAtS !== null && now >= this.readyAtS) {
      const at = this.readyAtS;
      this.readyAtS = null;
      this.emit("ready", { t_s: now, prompt_allowed_s: at });
    }
    const b = this.beat;
    if (b === null) return "idle";
    const speech = level > this.floor;
    if (b.start_s === null) {
      if (speech) {
        b.start_s = b.last_word_s = now;
        this.state = "speaking";
        this.emit("speaking", { t_s: now, level, terminal_s: b.terminal_s });
        this.log("clock.speaking", now);
      } else if (this.unpaused(b.terminal_s, now) >= this.onsetTimeoutS - SPEECHCLOCK_EPS_S) {
        this.close({ no_onset: true });
        this.emit("onset-timeout", { t_s: now, terminal_s: b.terminal_s });
        this.log("clock.onset_timeout", now);
      }
      return b.start_s === null ? "waiting" : "speaking";
    }
    if (speech) {
      b.last_word_s = now;
      return "speaking";
    }
    if (this.pausedSince === null && this.unpaused(b.last_word_s, now) >= this.quietS - SPEECHCLOCK_EPS_S) {
      const beat = this.close({ declared: now });
      this.emit("quiet", { t_s: now, ...beat });
      this.log("clock.quiet", now);
      if (now >= beat.prompt_allowed_s) this.emit("ready", { t_s: now, prompt_allowed_s: beat.prompt_allowed_s });
      else this.readyAtS = beat.prompt_allowed_s;
      return "quiet";
    }
    return "speaking";
  }

  apply(e) {
    if (e.kind === "terminal") {
      if (this.beat !== null) this.close({ aborted: true });
      this.beat = { terminal_s: e.t_s, linger_s: e.linger_s == null ? null : e.linger_s, start_s: null, last_word_s: null };
      this.state = "waiting";
      this.readyAtS = null;
      // Paused intervals that ended before this beat can no longer change a count.
      this.pauses = this.pauses.filter(([, hi]) => hi > e.t_s);
    } else if (e.kind === "pause") {
      if (this.pausedSince === null) this.pausedSince = e.t_s;
    } else if (e.kind === "resume") {
      if (this.pausedSince !== null) this.pauses.push([this.pausedSince, e.t_s]);
      this.pausedSince = null;
    } else if (e.kind === "end" && this.beat !== null) {
      this.close({ aborted: true });
    }
  }

  // Seconds of [a, b] outside every paused interval (the replay's arithmetic, in its order).
  unpaused(a, b) {
    let paused = 0;
    const spans = this.pausedSince === null ? this.pauses : [...this.pauses, [this.pausedSince, b]];
    for (const [lo, hi] of spans) paused += Math.max(0, Math.min(b, hi) - Math.max(a, lo));
    return (b - a) - paused;
  }

  close({ declared = null, no_onset = false, aborted = false }) {
    const b = this.beat;
    const beat = {
      terminal_s: b.terminal_s, start_s: b.start_s, last_word_s: b.last_word_s, quiet_declared_s: declared,
      no_onset, aborted, prompt_allowed_s: declared === null ? null : declared + (b.linger_s || 0),
    };
    this.beats.push(beat);
    this.beat = null;
    this.state = "idle";
    return beat;
  }

  // The beat still open (if any) as replay_ticks leaves it at the end of a recording.
  finish() {
    if (this.beat !== null) this.close({});
    for (const e of this.queue) {
      if (e.kind === "terminal") {
        this.beats.push({ terminal_s: e.t_s, start_s: null, last_word_s: null, quiet_declared_s: null,
                          no_onset: true, aborted: false, prompt_allowed_s: null });
      }
    }
    this.queue = [];
    return this.beats;
  }

  emit(type, detail) { this.dispatchEvent(new CustomEvent(type, { detail })); }

  log(type, t) { if (this.capture) this.capture.log(type, this.stamp(t)); }
}
