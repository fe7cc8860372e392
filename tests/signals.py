"""Signals with known levels, for tests (no files)."""

from __future__ import annotations

import math
import struct

import numpy as np


def fround(x: float) -> float:
    """JavaScript's Math.fround: round a double to float32, independently of numpy."""
    return struct.unpack("f", struct.pack("f", x))[0]


def sine(amplitude: float, freq_hz: float, duration_s: float, rate_hz: int) -> np.ndarray:
    n = int(round(duration_s * rate_hz))
    t = np.arange(n) / rate_hz
    return (amplitude * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32)


def js_rms(window) -> float:
    """The level loop a page runs: sum += x*x from the oldest sample, sqrt(sum / N)."""
    total = 0.0
    for v in window:
        total += float(v) * float(v)
    return math.sqrt(total / len(window))  # Math.sqrt is correctly rounded; x ** 0.5 need not be


def voice(rate_hz: int = 48000, *, seed: int = 7, syllables: int = 24, amplitude: float = 0.2) -> np.ndarray:
    """A synthetic voice: a glottal pulse train through three formant resonators, in syllables.

    Syllables of 0.12-0.3 s with a rising and falling envelope and a wandering
    pitch (90-220 Hz), separated by 0.05-0.4 s of exact digital silence. Opus
    at voice bitrates codes it in SILK and hybrid packets, as it codes speech.
    """
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    parts = [np.zeros(int(0.2 * rate_hz), np.float32)]
    for _ in range(syllables):
        n = int(rng.uniform(0.12, 0.3) * rate_hz)
        f0 = rng.uniform(90, 220) * (1 + 0.08 * np.sin(np.linspace(0, np.pi, n)))
        phase = np.cumsum(f0 / rate_hz)
        pulses = np.diff(np.floor(phase), prepend=0.0)  # one impulse per glottal period
        x = pulses + 0.02 * rng.standard_normal(n)
        for formant_hz, bandwidth_hz in ((rng.uniform(300, 800), 80), (rng.uniform(900, 2200), 120), (2800, 200)):
            r = np.exp(-np.pi * bandwidth_hz / rate_hz)
            theta = 2 * np.pi * formant_hz / rate_hz
            x = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], x)
        envelope = np.sin(np.linspace(0, np.pi, n)) ** 0.7
        x = x * envelope
        parts.append((amplitude * x / np.abs(x).max()).astype(np.float32))
        parts.append(np.zeros(int(rng.uniform(0.05, 0.4) * rate_hz), np.float32))
    return np.concatenate(parts)
