"""Voice-guide sessions built from real voices, with their ground truth.

The clips are OpenAI TTS and audio-model output from the shared corpus
(``../shared/corpus`` or ``$SPEECHCLOCK_CORPUS``); nothing of them is stored
in this repository. A session lays clips out as a tour would: a prompt, the
backend's terminal response, sometimes an acknowledgment that overlaps it,
then a narration of several clips with pauses between them, and the next
prompt some time after the last word. What the construction knows (when each
narration really starts and ends, and what bounds each beat) is the truth a
setting is judged against, by replaying the browser clock with it.

Variants cover what real deployments show: exact-zero pauses, comfort noise
under everything, noise only in the pauses, a loud voice in a float WAV, a
quiet voice, logs without terminal responses, without prompts or without a
log at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
from construction import BeatTruth, Layout, Run

from clock.core.events import EventLog
from clock.core.levels import LevelTrace
from clock.core.replay import replay

RATE = 48000

#: Clips used as narration sentences: (file, its own rate).
NARRATION = (
    "openai-api-records/chat_ChatWithAudio_nonstream.wav",
    "openai-api-records/chat_ChatWithAudioAsync_nonstream.wav",
    "openai-api-records/chat_ChatWithAudio_stream.wav",
    "openai-api-records/tts_OutputFormatWorks_wav.wav",
    "openai-api-records/tts_OutputFormatWorks_wavAsync.wav",
    "openai-tts/realtime_api_description_pcm16_24khz_mono.wav",
    "openai-tts/audio_agent_reference.wav",
    "openai-tts/realtime_whats_the_weather_pcm16_24khz_mono.wav",
)
#: Short clips used as acknowledgments ("One moment...").
ACKS = ("openai-api-records/chat_ChatWithAudioAsync_stream.wav", "openai-tts/audio_agent_reference.wav")


@cache
def clip(corpus: Path, name: str) -> tuple[np.ndarray, float, float]:
    """A clip at 48 kHz scaled to RMS 1 over its speech, and where its speech starts and ends (s).

    The speech bounds are the first and last 10 ms frames within 30 dB of the
    clip's loudest frames (its 90th percentile): the clip's own lead-in and
    tail noise (-75 to -60 dBFS in these files) is not speech.
    """
    import soundfile as sf
    from scipy.signal import resample_poly

    x, rate = sf.read(str(corpus / name), dtype="float64", always_2d=True)
    x = x.mean(axis=1)
    if rate != RATE:
        x = resample_poly(x, RATE, rate)
    frame = RATE // 100
    n = x.size // frame
    rms = np.sqrt((x[: n * frame].reshape(n, frame) ** 2).mean(axis=1))
    loud = np.percentile(rms, 90)
    active = np.flatnonzero(rms >= loud * 10 ** (-30 / 20))
    a, b = active[0] * frame, (active[-1] + 1) * frame
    x = x / np.sqrt(np.mean(x[a:b] ** 2))
    return x, a / RATE, b / RATE


@dataclass
class VoiceSession:
    """A tour read by one real voice, as the page's recorder would have it.

    Parameters
    ----------
    name : str
    level : float
        Every clip is scaled to this RMS over its speech (the voice's loudness).
    beats : list of (n_sentences, pauses_s, ack, latency_s, room_s)
        Per beat: how many clips, the pauses between them, whether an
        acknowledgment overlaps the terminal response, the time from the
        terminal response to the narration, and from the last word to the
        next prompt.
    comfort_noise_rms : float
        Gaussian noise under everything (DTX comfort noise).
    pause_noise_rms : float
        Noise only in the pauses between clips (a noisy room between sentences).
    float_wav : bool
        Write float32 (no clipping) instead of 16-bit PCM.
    log : {"full", "no-terminal", "no-prompt", "no-clock", "none"}
    """

    name: str
    level: float = 0.07
    beats: list[tuple[int, tuple[float, ...], bool, float, float]] = field(default_factory=list)
    comfort_noise_rms: float = 0.0
    pause_noise_rms: float = 0.0
    float_wav: bool = False
    log: str = "full"
    seed: int = 0

    def build(self, corpus: Path) -> tuple[np.ndarray, list[dict], list[BeatTruth]]:
        """Samples, event log lines and the truth of each beat."""
        rng = np.random.default_rng(self.seed)
        lay = Layout(RATE)
        lay.event("recording.started", 100.0)
        t = 0.6
        order = list(range(len(NARRATION)))
        next_clip = int(rng.integers(len(NARRATION)))
        for n_sentences, gaps_s, ack, latency_s, room_s in self.beats:
            prompt = t
            terminal = prompt + 0.7
            lay.event("prompt", 100.0 + prompt)
            lay.event("terminal_response", 100.0 + terminal)
            runs: list[Run] = []
            start = terminal + latency_s
            if ack:
                x, a, b = clip(corpus, ACKS[int(rng.integers(len(ACKS)))])
                ack_end = lay.say(terminal - 0.3, x[int(a * RATE) : int(b * RATE)] * self.level, "ack", runs)
                start = max(start, ack_end + 0.5)
            cursor = start
            for i in range(n_sentences):
                x, a, b = clip(corpus, NARRATION[order[next_clip % len(order)]])
                next_clip += 1
                cursor = lay.say(cursor, x[int(a * RATE) : int(b * RATE)] * self.level, "narration", runs)
                if i < n_sentences - 1:
                    cursor += gaps_s[i % len(gaps_s)]
            next_prompt = cursor + room_s
            lay.beats.append(BeatTruth(len(lay.beats), terminal, next_prompt, "prompt", tuple(runs)))
            lay.event("clock.quiet", 100.0 + cursor + 2.5)
            t = next_prompt
        duration = t + 0.5
        x = lay.mix(duration)
        events, truths = lay.events, lay.beats
        if self.pause_noise_rms:
            for a, b in (p for truth in truths for p in truth.narration_pauses):
                i, j = int(a * RATE), int(b * RATE)
                x[i:j] += rng.standard_normal(j - i) * self.pause_noise_rms
        if self.comfort_noise_rms:
            x += rng.standard_normal(x.size) * self.comfort_noise_rms
        if self.log == "no-terminal":
            events = [e for e in events if e["type"] != "terminal_response"]
        elif self.log == "no-prompt":
            events = [e for e in events if e["type"] != "prompt"]
        elif self.log == "no-clock":  # (a page that logs no clock lines: its bounds are walls)
            events = [e for e in events if e["type"] != "clock.quiet"]
        return x, events, truths

    def write(self, folder: Path, corpus: Path) -> Path:
        """Write ``NAME.wav`` (and ``NAME.events.jsonl`` unless the log is "none")."""
        import soundfile as sf

        x, events, _ = self.build(corpus)
        path = folder / f"{self.name}.wav"
        if self.float_wav:
            sf.write(str(path), x.astype(np.float32), RATE, subtype="FLOAT")
        else:
            sf.write(str(path), np.clip(x, -1, 1 - 2**-15), RATE, subtype="PCM_16")
        if self.log != "none":
            (folder / f"{self.name}.events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        return path


def truth_failures(
    trace: LevelTrace,
    events: EventLog,
    truths: list[BeatTruth],
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float,
) -> list[str]:
    """What the clock, replayed with a setting, gets wrong against the construction.

    A beat is **cut** when the clock declares it quiet before its narration
    really ended, **stalled** when it never declares it before the beat's
    bound (a beat the page ended never stalls), and its onset **missed** when
    the clock gives up waiting. Beats are matched to truths by their terminal
    response.
    """
    played = replay(trace, events, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s)
    quiets = [e.t_s for e in events.of_kind("clock.quiet")]
    out = []
    for truth in truths:
        rb = next((b for b in played if abs(b.terminal_s - truth.terminal_s) < 1e-6), None)
        if rb is None:
            continue
        where = f"beat at {truth.terminal_s:.2f} s"
        # The page logged its clock's declaration before the beat's bound: the bound (its prompt) is the page's
        # consequence and moves with a replayed declaration (issue 34); the beat can stall only where the clock
        # never declares in the silence it had up to the next response or the recording's end.
        page_bound = any(truth.terminal_s <= q <= truth.bound_s for q in quiets)
        if page_bound and truth.bound != "end" and not truth.silent and not rb.no_onset:
            # The construction's silence after the narration holds the quiet time: a clock at a floor over the
            # room's noise declares in it, so one that does not hears the noise as the guide, and stalls.
            # So does one whose floor hears the room in the construction's silence after the narration (past the
            # last word's tail), whatever the quiet time: at that level it never declares.
            held = quiet_s + 0.1 <= truth.bound_s - truth.narration_end_s
            room = (trace.t_s > truth.narration_end_s + 0.2) & (trace.t_s < truth.bound_s)
            noisy = bool(room.any() and trace.level[room].max() > floor)
            if noisy or (held and (rb.quiet_declared_s is None or rb.quiet_declared_s >= truth.bound_s)):
                out.append(f"{where}: stalled")
            elif rb.quiet_declared_s is not None and rb.quiet_declared_s < truth.narration_end_s:
                out.append(f"{where}: cut at {rb.quiet_declared_s:.2f} s before {truth.narration_end_s:.2f} s")
            continue
        if truth.silent:
            continue  # nothing to end: check's no-speech flags it
        if truth.bound == "end":
            # The page ended the beat: only a declaration before the guide's last word (or a missed onset) is the
            # setting's doing; an end the visitor pressed before the clock declared is not (outpaced, aborted).
            if rb.quiet_declared_s is not None and rb.quiet_declared_s < truth.narration_end_s:
                out.append(f"{where}: cut at {rb.quiet_declared_s:.2f} s before the page ended it")
            elif rb.no_onset:
                out.append(f"{where}: onset missed")
            continue
        if rb.no_onset:
            out.append(f"{where}: onset missed")
        elif rb.quiet_declared_s is None or rb.quiet_declared_s >= truth.bound_s:
            out.append(f"{where}: stalled")
        elif rb.quiet_declared_s < truth.narration_end_s:
            out.append(f"{where}: cut at {rb.quiet_declared_s:.2f} s before {truth.narration_end_s:.2f} s")
    return out


def mixed_sessions() -> list[VoiceSession]:
    """The mixed corpus of issue 8: loud float voice with noisy pauses, quiet voice, comfort noise, and more."""
    tour = [
        (3, (0.4, 2.3), False, 0.6, 4.0),
        (2, (1.2,), True, 0.5, 4.0),
        (3, (0.8, 1.9), False, 1.1, 4.0),
    ]
    return [
        VoiceSession("clean", level=0.07, beats=tour, seed=1),
        VoiceSession("loud-float", level=0.3, beats=tour, pause_noise_rms=0.0012, float_wav=True, seed=2),
        VoiceSession("quiet", level=0.018, beats=tour, seed=3),
        VoiceSession("comfort-noise", level=0.07, beats=tour, comfort_noise_rms=0.0018, seed=4),
        VoiceSession("no-terminal", level=0.07, beats=[(2, (0.6,), False, 0.8, 10.0)] * 3, log="no-terminal", seed=5),
        VoiceSession("no-prompt", level=0.05, beats=tour, log="no-prompt", seed=6),
    ]


def random_voice_corpus(seed: int) -> list[VoiceSession]:
    """Three to six tours by real voices, each with its own loudness, room and log damage."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(rng.integers(3, 7))):
        beats = []
        for _ in range(int(rng.integers(2, 4))):
            n = int(rng.integers(2, 4))
            gaps = tuple(float(x) for x in rng.choice([0.3, 0.6, 1.0, 1.5, 2.0, 2.3], size=n - 1))
            ack = bool(rng.random() < 0.4)
            beats.append((n, gaps, ack, float(rng.uniform(0.4, 1.4)), float(rng.uniform(3.3, 5.0))))
        kind = str(rng.choice(["clean", "comfort", "pauses", "float"]))
        log = str(rng.choice(["full", "full", "full", "no-prompt", "no-terminal", "none"]))
        session = VoiceSession(
            f"s{i}-{kind}-{log}",
            level=float(10 ** rng.uniform(np.log10(0.012), np.log10(0.3))),
            beats=beats,
            seed=int(rng.integers(1_000_000)),
            log=log,
            float_wav=kind == "float",
        )
        if kind == "comfort":
            session.comfort_noise_rms = float(10 ** rng.uniform(np.log10(0.0005), np.log10(0.003)))
        elif kind in ("pauses", "float"):
            session.pause_noise_rms = float(10 ** rng.uniform(np.log10(0.0003), np.log10(0.002)))
        out.append(session)
    return out
