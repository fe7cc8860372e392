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

import clock
from clock.core.stress import add_noise, apply_gain, lines, pink_noise, recording_seed
from clock.io.stress import changed_traces
from clock.io.transforms import LOSS_BITRATE_KBPS, decode, encode, lost_packets, reencode

RATE = 16000


def speechlike(n: int, rate: int, seed: int, *, start: int = 0, every_s: float = 0.0) -> np.ndarray:
    """Tones in bursts (0.4 s on, 0.6 s off) over a faint hum: something for every change to change.

    With ``every_s``, the bursts come only in the 3 s after 0.5 s into each ``every_s`` s (from sample
    ``start`` of the recording): a beat's narration, then quiet.
    """
    rng = np.random.default_rng(seed)
    t = (start + np.arange(n)) / rate
    on = (t % 1.0) < 0.4
    if every_s:
        on &= ((t % every_s) >= 0.5) & ((t % every_s) < 3.5)
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
            x = speechlike(min(block, n - start), RATE, start, start=start, every_s=30.0)
            f.write(np.round(x * 32767).astype("<i2").tobytes())
    beats = [{"type": "terminal_response", "t": t} for t in np.arange(0.0, minutes * 60 - 5, 30.0)]
    path.with_name(path.stem + ".events.jsonl").write_text("".join(json.dumps(b) + "\n" for b in beats))


# Runs one recording's stress task with every axis, each line cut to its first values (the scan is the same
# at every value: one more pass per MAX_JOBS_PER_PASS values), and prints the peak RSS and the task's result.
_TASK = """
import dataclasses, json, sys
import clock
from clock.core.derive import Margins
from clock.io.stress import _stress_task, _Task
from clock.core.stress import lines
corpus = clock.load_corpus([sys.argv[1]], cache=False)
obs = corpus.observations[0]
cut = tuple(dataclasses.replace(m, values=m.values[:2]) for m in lines(tick_s=obs.trace.tick_s))
setting = ("candidate", 0.01, 1.0, 10.0)
task = _Task(corpus.recordings[0].info.path, obs, (setting,), cut, "step", 0, Margins())
outcomes, found, passes = _stress_task(task)
print(json.dumps({"ok": outcomes[0].n_ok, "beats": outcomes[0].n_beats, "passes": passes,
                  "scanned": [i is None for i, _ in found[0]]}))
"""
# A small parent for the task, reporting its only child's peak: a process forked from pytest would report
# pytest's own resident memory (the high-water mark survives exec).
_PARENT = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": done.returncode, "out": done.stdout, "peak": peak}))
"""


@pytest.mark.slow
def test_stress_memory_does_not_grow_with_the_recording(tmp_path):
    # Every axis (gain, pink noise, an Opus re-encode with DTX off and on, a 64 kb/s encode with lost packets,
    # pauses), at 2 and at 8 minutes of 16 kHz audio (resampled to 48 kHz and back for libopus).
    found = []
    for minutes in (2, 8):
        path = tmp_path / f"m{minutes}.wav"
        write_wav(path, minutes)
        args = [sys.executable, "-c", _PARENT, sys.executable, "-c", _TASK, path]
        done = subprocess.run(args, capture_output=True, text=True, timeout=1800)
        run = json.loads(done.stdout)
        assert run["code"] == 0, done.stderr
        doc = json.loads(run["out"])
        assert doc["ok"] == doc["beats"] == 2 * minutes  # the setting holds as it is: every line is scanned
        assert doc["passes"] == 1 and doc["scanned"] == [True] * 8  # both values of every line hold: all replayed
        found.append(run["peak"])
    # Four times the audio (its unchanged trace is 86 kB more, a changed one as much): within 20 MB.
    assert found[1] - found[0] < 20e6, [p / 1e6 for p in found]
    assert found[1] < 200e6, [p / 1e6 for p in found]


def test_stress_grows_linearly_in_the_beats_of_a_log(tmp_path):
    # One spoken beat, then many terminal responses in silence (silent beats): every gain value is judged
    # over every beat, so the work is the values times the beats, never the beats squared.
    from test_bounds import _assert_n_log_n

    from clock.core.events import Event, EventLog
    from clock.io.stress import stress_observations

    x = np.zeros(20 * RATE, np.float32)
    for start in (1.0, 2.0):
        i = int(start * RATE)
        x[i : i + RATE // 2] = 0.05 * math.sqrt(2) * np.sin(2 * np.pi * 250 * np.arange(RATE // 2) / RATE)
    path = tmp_path / "many.wav"
    sf.write(path, x, RATE, subtype="FLOAT")
    trace = clock.levels(x, RATE)

    def make(n: int):
        times = [0.5] + [5.0 + 14.0 * k / n for k in range(n - 1)]
        log = EventLog(tuple(Event("terminal", "terminal_response", t, k + 1) for k, t in enumerate(times)))
        obs = clock.Observation("many.wav", trace, log)
        setting = [("candidate", 0.01, 1.0, 10.0)]

        def work() -> None:
            result = stress_observations([path], [obs], setting, axes=["gain"])
            down = result.settings[0].margins[0]
            assert result.settings[0].unchanged.n_ok == 1 and down.first_failure == -14.0  # 0.05 -> 0.0100

        return work

    _assert_n_log_n(make, 500, 2000)
