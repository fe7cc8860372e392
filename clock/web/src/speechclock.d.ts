// Types of speech-clock's page clock: speechclock.mjs (as speechclock.d.mts) and speechclock.cjs (as
// speechclock.d.cts), built from clock/web/src/speechclock.d.ts. The classic script (speechclock.js) sets
// window.SpeechClock; a page that loads it and wants its types declares it:
//   declare global { interface Window { SpeechClock: typeof import("speechclock").SpeechClock } }

/** The `[thresholds]` keys of speechclock.toml, as `speechclock derive --format js` writes them. */
export interface SpeechClockConfig {
  /** Speech is level > floor (RMS of the analyser's float time-domain data); > 0. Default 0.003. */
  floor?: number;
  /** Unpaused quiet after the last word that ends a beat, seconds; > 0. Default 2.5. */
  quiet_s?: number;
  /** Give up waiting for speech after this long, seconds; null waits forever. Default 10. */
  onset_timeout_s?: number | null;
  /** Seconds between ticks: a number or an exact ratio such as "1/60" (the default). */
  tick_s?: number | string;
  /** The analyser's fftSize: a power of two from 32 to 32768. Default 2048. */
  fft_size?: number;
  /**
   * The rule that ends a beat, as `speechclock derive --format js` recommends it (default "level", the level
   * clock). The others may end a beat sooner once `providerStopped()` told the open beat the provider's
   * `output_audio_buffer.stopped`; the level clock (`quiet_s`) bounds every rule. Any string type-checks (a
   * config pasted from `derive --format js` is an object whose rule is a string); the clock throws a RangeError
   * naming `config.rule` for one that is not a rule.
   */
  rule?: SpeechClockRule | (string & {});
  /** The quiet after the last word that ends the beat once the event came: a finite number > 0 and under
   * `quiet_s` with "stopped+quiet" and "level+stopped", null (the default) with the others. */
  hangover_s?: number | null;
}

/** "level"; "stopped+quiet": the event and hangover_s of quiet; "stopped": the event alone; "level+stopped": the
 * quiet time becomes hangover_s once the event came. */
export type SpeechClockRule = "level" | "stopped+quiet" | "stopped" | "level+stopped";

/** Optional companions of the clock. */
export interface SpeechClockOptions {
  /** A capture of capture.js: the clock logs its setting, every level, event and decision. */
  capture?: { log(type: string, fields?: object): void; logLevel(level: number, fields?: { frame?: number }): number | undefined } | null;
  /** "auto" (the default: the audio thread where AudioWorklet exists), "worklet" or "poll". */
  path?: "auto" | "worklet" | "poll";
  /** The node the analyser reads (default: the analyser's output, which is its input unchanged). */
  source?: AudioNode | null;
  /** The remote track: its "ended", or a "mute" after it was unmuted, ends the open beat as "ended" (a remote
   * WebRTC track starts muted). Default: the source's. */
  track?: MediaStreamTrack | null;
  /** Where the page serves speechclock-worklet.js (e.g. under a Content-Security-Policy that refuses blob:
   * URLs). Default: the build's own text of it, as a blob: URL. */
  workletUrl?: string | null;
}

/** A closed beat: the fields of the replay's ReplayBeat, and how it ended. */
export interface SpeechClockBeat {
  terminal_s: number;
  start_s: number | null;
  last_word_s: number | null;
  quiet_declared_s: number | null;
  no_onset: boolean;
  aborted: boolean;
  prompt_allowed_s: number | null;
  /** When the provider's event the beat was told came (null: none before it closed). */
  stopped_s: number | null;
  /** "quiet", "onset-timeout", "end", "superseded", "track-ended", "track-muted" or "open". */
  ended: string;
  /** The polling path read late (more than 2 ticks between reads) during this beat. */
  late: boolean;
}

export type SpeechClockState = "idle" | "waiting" | "speaking";

export interface SpeechClockEventMap {
  tick: CustomEvent<{ t_s: number; frame: number; level: number; state: SpeechClockState | "quiet" }>;
  state: CustomEvent<{ t_s: number; from: SpeechClockState; to: SpeechClockState }>;
  speaking: CustomEvent<{ t_s: number; level: number; terminal_s: number }>;
  quiet: CustomEvent<SpeechClockBeat & { t_s: number }>;
  ready: CustomEvent<{ t_s: number; prompt_allowed_s: number }>;
  "onset-timeout": CustomEvent<{ t_s: number; terminal_s: number; beat: SpeechClockBeat }>;
  aborted: CustomEvent<{ t_s: number; reason: "end" | "superseded"; beat: SpeechClockBeat }>;
  ended: CustomEvent<{ t_s: number; reason: "track-ended" | "track-muted"; beat: SpeechClockBeat }>;
  late: CustomEvent<{ t_s: number; gap_s: number; frame: number }>;
  suspended: CustomEvent<{ t_s: number; state: AudioContextState | string }>;
  resumed: CustomEvent<{ t_s: number }>;
  track: CustomEvent<{ t_s: number; type: "ended" | "mute" }>;
  /** The worklet could not start, or failed: the clock polls from here on (also logged as clock.fallback). */
  fallback: CustomEvent<{ t_s: number; from: "worklet"; to: "poll"; reason: string }>;
  /** The audio thread was not called for gap_s of context time (read as silence; logged as clock.jump). */
  jump: CustomEvent<{ t_s: number; frame: number; gap_s: number }>;
  /** The page was frozen (document "freeze" then "resume") for frozen_s of wall time, while gap_s of context time
   * passed (Chromium stops a frozen page's audio: 0); logged as clock.frozen. */
  frozen: CustomEvent<{ t_s: number; frozen_at_s: number; gap_s: number; frozen_s: number }>;
}

export interface EventTime {
  /** Seconds on the clock's timeline (the AudioContext's frame over its rate); default now. */
  t_s?: number;
}

export declare class SpeechClock extends EventTarget {
  static readonly version: number;
  static readonly defaults: Required<SpeechClockConfig>;
  constructor(analyser: AnalyserNode, config?: SpeechClockConfig, options?: SpeechClockOptions);
  readonly state: SpeechClockState;
  readonly beats: SpeechClockBeat[];
  readonly lastTickS: number;
  /** "worklet" or "poll" once started, else null. */
  path: "worklet" | "poll" | null;
  lastLevel: number | null;
  lastFrame: number | null;
  config(): Required<SpeechClockConfig>;
  nowS(): number;
  start(): Promise<this>;
  stop(): this;
  sync(): Promise<void>;
  /** `response_id`: the provider's response this beat is (its `output_audio_buffer.stopped` is the beat's own). */
  terminalResponse(options?: EventTime & { linger_s?: number | null; response_id?: string | null }): number;
  pause(options?: EventTime): number;
  resume(options?: EventTime): number;
  end(options?: EventTime): number;
  prompt(options?: EventTime): number;
  /** The provider said `output_audio_buffer.stopped` for the guide's response: the open beat has its event. */
  /** The beat's own event only: null (ignored) after the page's `prompt()`, or where `response_id` is another
   * response's than the beat's terminal response. */
  providerStopped(options?: EventTime & { response_id?: string | null }): number | null;
  event(kind: "terminal" | "pause" | "resume" | "end" | "prompt" | "stopped", t_s?: number, fields?: { linger_s?: number | null }): number;
  poll(): SpeechClockState | "quiet";
  tick(level: number, t_s: number): SpeechClockState | "quiet";
  finish(): Promise<SpeechClockBeat[]>;
  addEventListener<K extends keyof SpeechClockEventMap>(type: K, listener: (e: SpeechClockEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
}

export declare class SpeechClockCore {
  constructor(setting: object, rate: number);
}

/** The config checked (throws a RangeError naming the first bad key). */
export declare function speechclockConfig(config: SpeechClockConfig): object;
/** RMS of a window, summed in float64 from the oldest sample (bit-exact with the tool). */
export declare function speechclockLevel(data: Float32Array): number;
/** The AnalyserNode's down-mix of one quantum's channels to mono (speakers rules, float32). */
export declare function speechclockDownmix(channels: Float32Array[], out: Float32Array): void;
export declare const SPEECHCLOCK_VERSION: number;
export default SpeechClock;
