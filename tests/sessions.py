"""Synthetic voice-guide sessions with exact ground truth (no files unless asked)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from construction import page_log

from clock.core.events import EventLog

RATE = 48000
N = 2048  # fftSize
WINDOW_S = N / RATE  # the analyser sees speech this long after it ends


@dataclass
class Session:
    """Utterances (square waves at a level) over exact-zero silence, plus events."""

    duration_s: float
    rate: int = RATE
    utterances: list[tuple[float, float, float]] = field(default_factory=list)
    noise: list[tuple[float, float, float]] = field(default_factory=list)  # (start, end, dBFS)
    events: list[dict] = field(default_factory=list)

    def say(self, start_s: float, end_s: float, rms: float = 0.05) -> Session:
        self.utterances.append((start_s, end_s, rms))
        return self

    def hiss(self, start_s: float, end_s: float, dbfs: float) -> Session:
        self.noise.append((start_s, end_s, dbfs))
        return self

    def event(self, type_: str, t_s: float, **fields) -> Session:
        self.events.append({"type": type_, "t": t_s, **fields})
        return self

    def samples(self, seed: int = 7) -> np.ndarray:
        rng = np.random.default_rng(seed)
        x = np.zeros(int(round(self.duration_s * self.rate)), np.float32)
        for start, end, dbfs in self.noise:
            a, b = int(start * self.rate), int(end * self.rate)
            x[a:b] += (rng.standard_normal(b - a) * 10 ** (dbfs / 20)).astype(np.float32)
        for start, end, rms in self.utterances:
            a, b = int(round(start * self.rate)), int(round(end * self.rate))
            square = np.where((np.arange(b - a) // 60) % 2 == 0, rms, -rms)  # 400 Hz square: RMS = rms
            x[a:b] = square.astype(np.float32)
        return x

    def log(self) -> EventLog:
        """The events as the tool reads them (:func:`construction.page_log`)."""
        return page_log(self.events)

    def write(self, folder: Path, name: str = "session") -> Path:
        import soundfile as sf

        path = folder / f"{name}.wav"
        sf.write(str(path), self.samples(), self.rate, subtype="FLOAT")
        lines = [json.dumps(e) for e in self.events]
        (folder / f"{name}.events.jsonl").write_text("\n".join(lines) + "\n")
        return path


@dataclass
class ProviderBeat:
    """One constructed beat of :func:`provider_tour` or :func:`rule_tour`: when its narration's last word ends
    (the audio), what bounds it, and the provider's ``output_audio_buffer.stopped``.

    ``stopped_s`` is the beat's own event (None: missing); ``ack_stopped_s`` the acknowledgment's (another
    response's) event inside the beat, where the beat has one; ``after_bound`` says the beat's own event came
    after the next prompt (the beat's bound), so it is not the beat's.
    """

    terminal_s: float
    end_s: float
    bound_s: float
    stopped_s: float | None
    ack_stopped_s: float | None = None
    after_bound: bool = False

    @property
    def heard_s(self) -> float:
        """When the analyser stops hearing the last word (it leaves the window)."""
        return self.end_s + WINDOW_S


def provider_tour(
    seed: int, *, n_beats: int = 3, missing: float = 0.0, early_s: float = 0.5, late_s: float = 1.0
) -> tuple[Session, list[ProviderBeat]]:
    """A tour whose provider says ``output_audio_buffer.stopped`` from ``early_s`` before the last word reaches
    the analyser (the jitter buffer still playing) to ``late_s`` after it; with chance ``missing``, not at all.

    Narrations are sentences of words (0.2-0.4 s, dips of 0.08-0.12 s between them, each sentence at least
    1.2 s) with pauses of 0.4-1.2 s between sentences; the next prompt comes 3.5-4.5 s after the last word.
    Events carry each beat's ``response_id``.
    """
    rng = np.random.default_rng(seed)
    s = Session(0.0)
    truth: list[ProviderBeat] = []
    t = 0.5
    for k in range(n_beats):
        rid = f"resp{seed}-{k}"
        s.event("prompt", t)
        terminal = t + float(rng.uniform(0.4, 0.8))
        s.event("terminal_response", terminal, response_id=rid)
        cursor = terminal + float(rng.uniform(0.3, 0.8))
        for i in range(int(rng.integers(2, 4))):
            if i:
                cursor += float(rng.uniform(0.4, 1.2))
            begun = cursor
            while cursor - begun < 1.2:
                length = float(rng.uniform(0.2, 0.4))
                s.say(cursor, cursor + length)
                cursor += length + float(rng.uniform(0.08, 0.12))
            cursor = s.utterances[-1][1]
        end = cursor
        stopped = None if rng.random() < missing else end + float(rng.uniform(-early_s, late_s))
        if stopped is not None:
            s.event("output_audio_buffer.stopped", stopped, response_id=rid)
        t = end + float(rng.uniform(3.5, 4.5))
        truth.append(ProviderBeat(terminal, end, t, stopped))
    s.duration_s = t + 0.5
    truth[-1].bound_s = s.duration_s  # no prompt after the last beat: the recording's end bounds it
    s.events.sort(key=lambda e: e["t"])
    return s, truth


@dataclass(frozen=True)
class RuleBeatSpec:
    """How :func:`rule_tour` builds one beat.

    ``pauses_s``: the pauses between the narration's sentences, in order (a sentence is 1.2-1.6 s of words,
    except the last, ``last_s`` long when given); ``stopped_after_s``: the beat's own event against the end
    of its last word (None: missing; ``"after-bound"``: 0.3 s after the next prompt); ``ack``: an
    acknowledgment (another response, its own ``response_id``) plays over the terminal response and its
    ``output_audio_buffer.stopped`` comes inside the beat; ``room_s``: from the last word to the next prompt.
    """

    pauses_s: tuple[float, ...] = (0.6,)
    stopped_after_s: float | str | None = 0.1
    ack: bool = False
    last_s: float | None = None
    room_s: float = 4.0


def rule_tour(
    seed: int, specs: list[RuleBeatSpec], *, ids: bool = True, name: str = "tour"
) -> tuple[Session, list[ProviderBeat]]:
    """A tour whose beats are built as ``specs`` say, with exact truth (words 0.2-0.4 s, dips 0.08-0.12 s).

    ``ids``: events carry their ``response_id`` (the narration's on its terminal response and its own event,
    the acknowledgment's on the acknowledgment's event); without, no event says whose it is.
    """
    rng = np.random.default_rng(seed)
    s = Session(0.0)
    truth: list[ProviderBeat] = []
    t = 0.5
    for k, spec in enumerate(specs):
        rid, ack_id = f"{name}-{seed}-{k}", f"{name}-{seed}-{k}-ack"
        s.event("prompt", t)
        terminal = t + 0.6
        s.event("terminal_response", terminal, **({"response_id": rid} if ids else {}))
        ack_stopped = None
        cursor = terminal + 0.5
        if spec.ack:
            s.say(terminal - 0.2, terminal + 0.4)  # "Sure!" over the terminal response
            ack_stopped = terminal + 0.45
            s.event("output_audio_buffer.stopped", ack_stopped, **({"response_id": ack_id} if ids else {}))
            cursor = terminal + 1.2
        n = len(spec.pauses_s) + 1
        for i in range(n):
            if i:
                cursor += spec.pauses_s[i - 1]
            length = spec.last_s if (i == n - 1 and spec.last_s is not None) else float(rng.uniform(1.2, 1.6))
            begun = cursor
            while cursor - begun < length - 1e-9:
                word = min(float(rng.uniform(0.2, 0.4)), begun + length - cursor)
                s.say(cursor, cursor + word)
                cursor += word + float(rng.uniform(0.08, 0.12))
            cursor = s.utterances[-1][1]
        end = cursor
        t = end + spec.room_s
        after = spec.stopped_after_s == "after-bound"
        stopped = None if spec.stopped_after_s is None else (t + 0.3 if after else end + float(spec.stopped_after_s))
        if stopped is not None:
            s.event("output_audio_buffer.stopped", stopped, **({"response_id": rid} if ids else {}))
        truth.append(ProviderBeat(terminal, end, t, stopped, ack_stopped, after))
    s.duration_s = t + 0.5
    truth[-1].bound_s = s.duration_s
    s.events.sort(key=lambda e: e["t"])
    return s, truth
