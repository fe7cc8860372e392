// speech-clock's page clock on the audio thread: the AudioWorklet processor "speechclock-clock".
// clock/web/build.py makes the worklet's module from core.js and this file, as text at build time
// (SPEECHCLOCK_WORKLET_SOURCE in the builds, and speechclock-worklet.js for a page that loads it by
// URL): the main thread never hands the audio thread the toString() of code a bundler rewrote.
//
// Messages to the main thread, in order: {ready} once constructed; {tick} at each tick (with the
// core's open beat, pauses and queue, so that the main thread can take over if this thread fails);
// {jump} when the context's frame moved past quanta this processor was never called for (a frozen
// or starved audio thread); {applied} for each event it queued; {synced}; {finished}.

// A second module on the same AudioWorkletGlobalScope (a second clock on one context) finds the name taken
// (registerProcessor throws NotSupportedError) and uses the first.
try {
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
      this.received = o.events.length;  // events received (those above, then one per {event} message)
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
          this.received += 1;
          const t = this.core.push(m.event.kind, m.event.t_s, m.event);
          this.port.postMessage({ applied: Object.assign({}, m.event, { t_s: t }) });
        } else if (m.sync !== undefined) {
          this.port.postMessage({ synced: m.sync });
        } else if (m.finish) {
          this.stopped = true;
          this.port.postMessage({ finished: this.core.finish(), ticks: this.posted });
        }
      };
      this.port.postMessage({ ready: true });
    }
    tickAt(frame) {
      for (let i = 0; i < this.n; i++) this.window[i] = this.ring[(this.pos + i) % this.n];
      const level = speechclockLevel(this.window);
      const state = this.core.tick(level, frame / sampleRate, false);
      const out = this.core.out;
      this.core.out = [];
      const c = this.core;
      const core = { beat: c.beat, pauses: c.pauses, pausedSince: c.pausedSince, readyAtS: c.readyAtS, queue: c.queue,
                     received: this.received };
      this.port.postMessage({ tick: { frame, level, state, out, core } });
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
      // for read as silence (and ticks among them still decide); the main thread is told of the jump.
      if (this.next < frame) this.port.postMessage({ jump: { frame: this.next, frames: frame - this.next } });
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
} catch (err) {
  if (!(err && err.name === "NotSupportedError")) throw err;
}
