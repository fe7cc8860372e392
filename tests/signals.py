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
