// speech-clock capture helpers. Copy this file into your page; docs/capture.md explains it.
//
// Two ways to record what the page's clock hears, each with one event log per session:
//
//   startLosslessCapture(audioContext, sourceNode, options)
//     An AudioWorklet on the node your AnalyserNode reads: a WAV of exactly the
//     samples the analyser sees (float32, or 16-bit), and the AudioContext frame
//     of its first sample, so the tool's times and the page's times are one clock.
//   startRecorderCapture(stream, options)
//     MediaRecorder: small files (Opus), but a second lossy encoding of the
//     track, starting some milliseconds after the page asked it to.
//
// Both return (startLosslessCapture as a Promise) a capture with the same methods:
//   log(type, fields)      one line of the event log (t_ms, and frame when there is an AudioContext)
//   logLevel(level, {frame})  a clock.level line: the level your clock read, at the frame
//                          speechclockRead returned (default: the current frame); returns the frame
//   logRealtime(event)     an OpenAI Realtime data-channel event, if it is one the tool uses
//   name                   the session's unique file-name stem
//   stop()                 Promise of {audio, events, names: {audio, events}}
// speechclockRead(analyser, data, audioContext) reads the analyser and returns the frame the
// read belongs to (pass it to logLevel), and speechclockDownload(result) saves both files.
//
// Options: name (file-name stem; default session-<UTC time>-<random>), meta (fields of the
// log's "session" line, e.g. {voice, model, page_version}; `speechclock derive --by voice`
// groups by them), levelEvery (log every Nth logLevel call; default 1), and for the
// lossless capture format ("float32", the default and bit-exact, or "int16", half the size)
// and chunkFrames (frames per message from the audio thread; default 16384).

const SPEECHCLOCK_CAPTURE_VERSION = 3;

function speechclockSessionName(prefix = "session") {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  const random = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, "0"));
  return `${prefix}-${stamp}-${random.join("")}`;
}

// Read the analyser's time-domain data and return the AudioContext frame the read belongs
// to (the end of its window): the frame before and after the read agree, or it reads again
// (the audio thread renders in bursts; a read that straddles one is ambiguous). In Chromium
// the window can still end one render quantum later (the analyser is written while a quantum
// renders, currentTime advances after it); the tool allows for that in a main-thread reading.
function speechclockRead(analyser, data, audioContext) {
  const now = () => Math.round(audioContext.currentTime * audioContext.sampleRate);
  for (let attempt = 0; ; attempt++) {
    const before = now();
    analyser.getFloatTimeDomainData(data);
    const after = now();
    if (before === after || attempt === 3) return after;
  }
}

// The event log shared by both helpers: JSON Lines, t_ms from performance.now(), and
// `frame` (the AudioContext's current frame) on every line when a context is given.
function speechclockEventLog(audioContext, options) {
  const lines = [];
  const every = Math.max(1, options.levelEvery || 1);
  let levelCalls = 0;
  const frameNow = () => Math.round(audioContext.currentTime * audioContext.sampleRate);
  const log = (type, fields = {}) => {
    const line = { type, t_ms: performance.now(), ...fields };
    if (audioContext && line.frame === undefined) line.frame = frameNow();
    lines.push(JSON.stringify(line));
  };
  const session = {
    ...(options.meta || {}),
    capture_version: SPEECHCLOCK_CAPTURE_VERSION,
    user_agent: navigator.userAgent,
  };
  log("session", session);
  return {
    lines,
    log,
    frameNow,
    // The level your clock read, at the frame speechclockRead returned (the end of the
    // analyser's window); without one, the current frame, which can be a quantum or two
    // late. Returns the frame it logged, for the decision at that tick.
    logLevel: (level, fields = {}) => {
      const frame = fields.frame !== undefined ? fields.frame : audioContext ? frameNow() : undefined;
      if (levelCalls++ % every === 0) log("clock.level", { level, ...fields, ...(frame !== undefined ? { frame } : {}) });
      return frame;
    },
    // OpenAI Realtime events the tool uses (response ids tie them together).
    logRealtime: (event) => {
      const t = event && event.type;
      if (t === "response.done") {
        const r = event.response || {};
        const output = (r.output || []).map((item) => ({ type: item.type }));
        log(t, { response_id: r.id, response: { id: r.id, status: r.status, output } });
      } else if (t === "output_audio_buffer.started" || t === "output_audio_buffer.stopped" ||
                 t === "output_audio_buffer.cleared") {
        log(t, { response_id: event.response_id });
      } else if (t === "input_audio_buffer.speech_started") {
        log(t, { item_id: event.item_id, audio_start_ms: event.audio_start_ms });
      }
    },
  };
}

// The AudioWorklet processor, loaded from a Blob URL so this file stays self-contained
// (a Content-Security-Policy must then allow blob: for worklets).
const SPEECHCLOCK_PROCESSOR = `
registerProcessor("speechclock-capture", class extends AudioWorkletProcessor {
  constructor(options) {
    super();
    this.chunkFrames = options.processorOptions.chunkFrames;
    this.channels = 0;
    this.parts = [];
    this.size = 0;
    this.stopped = false;
    this.port.onmessage = (e) => {
      if (e.data === "stop") { this.flush(); this.stopped = true; this.port.postMessage({ done: true }); }
    };
  }
  flush() {
    if (!this.size) return;
    const out = [];
    for (let c = 0; c < this.channels; c++) {
      const data = new Float32Array(this.size);
      let at = 0;
      for (const block of this.parts) { data.set(block[c], at); at += block[c].length; }
      out.push(data);
    }
    this.port.postMessage({ channels: out }, out.map((d) => d.buffer));
    this.parts = [];
    this.size = 0;
  }
  process(inputs) {
    if (this.stopped) return false;
    const input = inputs[0];
    const frame = currentFrame;
    if (!this.channels) {
      // Start at the first of two consecutive render quanta that carry input: a new
      // worklet's first call can be followed by quanta it was never called for.
      const block = input.length ? input.map((c) => c.slice()) : null;
      if (!block || !this.pending || frame !== this.pending.frame + 128) {
        this.pending = block && { frame, block };
        return true;
      }
      this.channels = this.pending.block.length;
      this.port.postMessage({ start: this.pending.frame, sampleRate, channels: this.channels });
      this.parts.push(this.pending.block);
      this.size = 128;
      this.next = frame;
    }
    // Every call is one render quantum: the file's position counts the calls. currentFrame
    // only tells of calls that never came, when it is ahead of that count; it can lag behind
    // it for a few calls (seen in Chromium under load, as another worklet node starts) and
    // then catch up, which is no gap: every quantum came.
    if (frame > this.next) {
      // Quanta the worklet was not called for: silence in the file, and a capture.gap line.
      const missing = frame - this.next;
      this.parts.push(Array.from({ length: this.channels }, () => new Float32Array(missing)));
      this.size += missing;
      this.port.postMessage({ gap: this.next, frames: missing });
      this.next = frame;
    }
    // A block with another channel count (or none: silence) keeps the first count:
    // missing channels repeat channel 0 (or are silent), extra ones are dropped.
    const block = [];
    for (let c = 0; c < this.channels; c++) {
      const src = input[c] || input[0];
      block.push(src ? src.slice() : new Float32Array(128));
    }
    this.parts.push(block);
    this.size += 128;
    this.next += 128;
    if (this.size >= this.chunkFrames) this.flush();
    return true;
  }
});
`;

function speechclockWavHeader(dataBytes, channels, sampleRate, format) {
  const bytesPerSample = format === "int16" ? 2 : 4;
  const view = new DataView(new ArrayBuffer(44));
  const text = (at, s) => { for (let i = 0; i < 4; i++) view.setUint8(at + i, s.charCodeAt(i)); };
  text(0, "RIFF"); view.setUint32(4, 36 + dataBytes, true); text(8, "WAVE");
  text(12, "fmt "); view.setUint32(16, 16, true);
  view.setUint16(20, format === "int16" ? 1 : 3, true);  // PCM or IEEE float
  view.setUint16(22, channels, true); view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * channels * bytesPerSample, true);
  view.setUint16(32, channels * bytesPerSample, true); view.setUint16(34, 8 * bytesPerSample, true);
  text(36, "data"); view.setUint32(40, dataBytes, true);
  return view.buffer;
}

// Interleave one message's channels as little-endian float32 or 16-bit samples. 16-bit
// inverts Chromium's int16 -> float rule (v / 32768 below zero, v / 32767 above), so a
// track that came from WebRTC's 16-bit PCM is written back to its own integers.
function speechclockInterleave(channels, format) {
  const n = channels[0].length, k = channels.length;
  if (format === "int16") {
    const out = new Int16Array(n * k);
    for (let c = 0; c < k; c++) {
      const src = channels[c];
      for (let i = 0; i < n; i++) {
        const x = src[i];
        const v = x < 0 ? Math.round(x * 32768) : Math.round(x * 32767);
        out[i * k + c] = Math.max(-32768, Math.min(32767, v));
      }
    }
    return out.buffer;
  }
  const out = new Float32Array(n * k);
  for (let c = 0; c < k; c++) {
    const src = channels[c];
    for (let i = 0; i < n; i++) out[i * k + c] = src[i];
  }
  return out.buffer;
}

async function startLosslessCapture(audioContext, sourceNode, options = {}) {
  const format = options.format || "float32";
  if (format !== "float32" && format !== "int16") throw new Error(`format must be float32 or int16, got ${format}`);
  const name = options.name || speechclockSessionName();
  const events = speechclockEventLog(audioContext, options);
  const url = URL.createObjectURL(new Blob([SPEECHCLOCK_PROCESSOR], { type: "application/javascript" }));
  await audioContext.audioWorklet.addModule(url);
  URL.revokeObjectURL(url);
  const node = new AudioWorkletNode(audioContext, "speechclock-capture", {
    numberOfInputs: 1,
    numberOfOutputs: 1,
    outputChannelCount: [1],
    processorOptions: { chunkFrames: options.chunkFrames || 16384 },
  });
  const parts = [];
  let dataBytes = 0, channels = 1, sampleRate = audioContext.sampleRate;
  let started, finished;
  const startedP = new Promise((resolve) => { started = resolve; });
  const doneP = new Promise((resolve) => { finished = resolve; });
  node.port.onmessage = (e) => {
    const m = e.data;
    if (m.start !== undefined) {
      channels = m.channels;
      sampleRate = m.sampleRate;
      // The frame is exact; t_ms is the page time of that frame, estimated from the
      // context's current frame (it matters only for lines logged without a frame).
      const behindMs = ((audioContext.currentTime * sampleRate - m.start) / sampleRate) * 1000;
      events.log("recording.started", {
        frame: m.start, sample_rate_hz: sampleRate, capture: "worklet", channels, format,
        t_ms: performance.now() - behindMs,
      });
      started();
    } else if (m.gap !== undefined) {
      events.log("capture.gap", { frame: m.gap, frames: m.frames });
    } else if (m.channels) {
      const bytes = speechclockInterleave(m.channels, format);
      parts.push(new Blob([bytes]));
      dataBytes += bytes.byteLength;
    } else if (m.done) {
      finished();
    }
  };
  // The worklet reads the node the analyser reads; its own output is silence, connected
  // to the destination only so that the context keeps pulling it.
  sourceNode.connect(node);
  node.connect(audioContext.destination);
  await startedP;
  return {
    name,
    log: events.log,
    logLevel: events.logLevel,
    logRealtime: events.logRealtime,
    stop: async () => {
      events.log("recording.stopped");
      node.port.postMessage("stop");
      await doneP;
      sourceNode.disconnect(node);
      node.disconnect();
      const header = speechclockWavHeader(dataBytes, channels, sampleRate, format);
      return {
        audio: new Blob([header, ...parts], { type: "audio/wav" }),
        events: events.lines.join("\n") + "\n",
        names: { audio: `${name}.wav`, events: `${name}.events.jsonl` },
      };
    },
  };
}

// The file extension for a recorder's actual mimeType (it may not be the one asked for).
function speechclockExtension(mimeType) {
  const type = (mimeType || "").split(";")[0].trim().toLowerCase();
  const known = { "audio/webm": "webm", "video/webm": "webm", "audio/ogg": "ogg", "audio/mp4": "m4a",
                  "video/mp4": "m4a", "audio/wav": "wav", "audio/x-matroska": "mkv", "audio/mpeg": "mp3" };
  return known[type] || "bin";
}

function startRecorderCapture(stream, options = {}) {
  const name = options.name || speechclockSessionName();
  const audioContext = options.audioContext || null;  // give it to stamp context frames
  const events = speechclockEventLog(audioContext, options);
  const audioOnly = new MediaStream(stream.getAudioTracks());
  const wanted = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/mp4"]
    .find((m) => MediaRecorder.isTypeSupported(m));
  const recorder = new MediaRecorder(audioOnly, wanted ? { mimeType: wanted } : {});
  const chunks = [];
  recorder.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
  // The recorder's first sample comes a little after onstart (its start-up latency): the
  // frame is when the page saw it start, and the tool can estimate the rest from clock.level lines.
  recorder.onstart = () => events.log("recording.started", {
    capture: "recorder", mime_type: recorder.mimeType,
    ...(audioContext ? { sample_rate_hz: audioContext.sampleRate } : {}),
  });
  recorder.start(1000); // a chunk a second, so a crash loses at most a second
  return {
    name,
    log: events.log,
    logLevel: events.logLevel,
    logRealtime: events.logRealtime,
    stop: () => new Promise((resolve) => {
      recorder.onstop = () => {
        events.log("recording.stopped");
        const ext = speechclockExtension(recorder.mimeType);
        resolve({
          audio: new Blob(chunks, { type: recorder.mimeType }),
          events: events.lines.join("\n") + "\n",
          names: { audio: `${name}.${ext}`, events: `${name}.events.jsonl` },
        });
      };
      recorder.stop();
    }),
  };
}

// Save a capture's two files side by side (NAME.wav or NAME.webm, and NAME.events.jsonl).
function speechclockDownload(result) {
  const save = (fileName, blob) => {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = fileName;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  };
  save(result.names.audio, result.audio);
  save(result.names.events, new Blob([result.events], { type: "application/jsonl" }));
}
