"""Synthetic voice-guide sessions with exact ground truth (no files unless asked)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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

    def write(self, folder: Path, name: str = "session") -> Path:
        import soundfile as sf

        path = folder / f"{name}.wav"
        sf.write(str(path), self.samples(), self.rate, subtype="FLOAT")
        lines = [json.dumps(e) for e in self.events]
        (folder / f"{name}.events.jsonl").write_text("\n".join(lines) + "\n")
        return path
