"""``speechclock stress`` streams: each change is applied block by block as the recording is decoded.

The streamed traces equal the traces of the whole recording changed at once,
bit for bit; the peak memory of ``stress`` does not grow with the recording's
length; and its time on a log of many beats grows as the log does.
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from test_memory import _WRAPPER

import clock
from clock.core.stress import add_noise, apply_gain, lines, pink_noise, recording_seed
from clock.io.stress import changed_traces
from clock.io.transforms import LOSS_BITRATE_KBPS, decode, encode, lost_packets, reencode

RATE = 16000


def speechlike(n: int, rate: int, seed: int) -> np.ndarray:
    """Tones in bursts (0.4 s on, 0.6 s off) over a faint hum: something for every change to change."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    on = (t % 1.0) < 0.4
    x = 0.05 * np.sin(2 * np.pi * 220 * t) * on + 0.02 * np.sin(2 * np.pi * 3100 * t) * on
    return (x + 0.0005 * rng.standard_normal(n)).astype(np.float32)


def test_streamed_traces_equal_the_whole_recording_changed_at_once(tmp_path):
    # 30 s at 16 kHz: eight decoder blocks, and libopus resampled to 48 kHz and back.
    x = speechlike(30 * RATE, RATE, 1)
    path = tmp_path / "r.wav"
    sf.write(path, x, RATE, subtype="FLOAT")
    trace = clock.levels(x, RATE)
    by = {m.name: m for m in lines(tick_s=trace.tick_s)}
    seed = recording_seed(0, "r.wav")
    changes = [
        (by["gain down"], -5.0),
        (by["gain up"], 12.0),  # clipped
        (by["noise"], -50.0),
        (by["codec dtx-off"], 24.0),
        (by["codec dtx-on"], 12.0),
        (by["loss random"], 10.0),
        (by["loss burst"], 15.0),
    ]
    got = changed_traces(path, trace, changes, seed=seed)
    e = encode(x, RATE, bitrate_kbps=LOSS_BITRATE_KBPS)
    whole = [
        apply_gain(x, -5.0),
        apply_gain(x, 12.0),
        add_noise(x, pink_noise(x.size, RATE, seed=seed), -50.0),
        reencode(x, RATE, bitrate_kbps=24.0),
        reencode(x, RATE, bitrate_kbps=12.0, dtx=True),
        decode(e, lost_packets(len(e.packets), 10.0, burst=False, seed=seed)),
        decode(e, lost_packets(len(e.packets), 15.0, burst=True, seed=seed)),
    ]
    for (line, value), streamed, samples in zip(changes, got, whole):
        expected = clock.levels(samples, RATE)
        assert np.array_equal(streamed.level, expected.level), (line.name, value)
        assert np.array_equal(streamed.frames, expected.frames), (line.name, value)
    assert not np.array_equal(got[0].level, trace.level)  # each change changed something


def test_pink_noise_streams_has_rms_one_and_falls_3_db_an_octave():
    whole = pink_noise(60 * RATE, RATE, seed=3)
    noise = clock.core.stress.PinkNoise(RATE, seed=3)
    parts = np.concatenate([noise.take(k) for k in (1, 4095, 100_000, 0, 60 * RATE - 104_096)])
    assert np.array_equal(parts, whole)
    assert abs(float(np.sqrt(np.mean(whole.astype(np.float64) ** 2))) - 1.0) < 0.01
    spectrum = np.abs(np.fft.rfft(whole.astype(np.float64))) ** 2
    f = np.fft.rfftfreq(whole.size, 1 / RATE)

    def band(lo: float) -> float:
        return float(spectrum[(f >= lo) & (f < 2 * lo)].sum())

    # Power per octave is flat for 1/f noise (each octave holds as much as the next), and nothing under 50 Hz.
    octaves = [10 * math.log10(band(lo)) for lo in (200, 400, 800, 1600)]
    assert max(octaves) - min(octaves) < 1.0
    assert spectrum[(f > 0) & (f < 20)].sum() < 1e-3 * spectrum.sum()


def write_wav(path: Path, minutes: float) -> None:
    """A 16-bit mono WAV of speech-like bursts, written block by block, and a beat every 30 s."""
    n = int(minutes * 60 * RATE)
    block = 60 * RATE
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, RATE, 2 * RATE, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        for start in range(0, n, block):
            x = speechlike(min(block, n - start), RATE, start)
            f.write(np.round(x * 32767).astype("<i2").tobytes())
    beats = [{"type": "terminal_response", "t": t - 0.1} for t in np.arange(0.0, minutes * 60 - 5, 30.0) + 1.0]
    path.with_name(path.stem + ".events.jsonl").write_text("".join(json.dumps(b) + "\n" for b in beats))


def peak_and_output(*args: object) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "clock", *map(str, args)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    code, kib = done.stdout.split()
    assert code == "0", done.stderr
    return int(kib) * 1024, done.stderr


@pytest.mark.slow
def test_stress_memory_does_not_grow_with_the_recording(tmp_path):
    # Every transform's machinery (gain, pink noise, an Opus sender and its receivers with lost packets, pauses);
    # the codec axis runs the same sender and receiver classes, once per bitrate (left out for time).
    peaks = []
    for minutes in (2, 8):
        path = tmp_path / f"m{minutes}.wav"
        write_wav(path, minutes)
        out = tmp_path / f"m{minutes}.json"
        args = ["stress", path, "--axes", "gain,noise,loss,pause", "--no-recommended", "--no-cache"]
        args += ["--floor", "0.01", "--quiet-time", "0.8", "--format", "json", "-o", out]
        peak, _ = peak_and_output(*args)
        doc = json.loads(out.read_text())
        assert doc["recordings"] == [path.name]
        peaks.append(peak)
    # Four times the audio (and its trace, 115 kB more a changed trace): the peak stays within 25 MB.
    assert peaks[1] - peaks[0] < 25e6, [p / 1e6 for p in peaks]
    assert peaks[1] < 200e6, [p / 1e6 for p in peaks]
