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
