"""``speechclock stress`` streams: each change is applied block by block as the recording is decoded.

The streamed traces equal the traces of the whole recording changed at once,
bit for bit; what ``stress`` allocates grows with its traces, never with the
audio; and its time and memory on a log of many beats grow as the log does.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import soundfile as sf

import clock
from clock.core.model import Margins
from clock.core.stress import add_noise, apply_gain, lines, pink_noise, recording_seed
from clock.io.transforms import LOSS_BITRATE_KBPS, decode, encode, lost_packets, reencode
from clock.run.stress import _stress_task, _Task, changed_traces

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


def write_wav(path: Path, seconds: float, rate: int) -> None:
    """A 16-bit mono WAV of speech-like bursts, written block by block, and a beat every 30 s."""
    n = int(seconds * rate)
    block = 60 * rate
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        for start in range(0, n, block):
            x = speechlike(min(block, n - start), rate, start, start=start, every_s=30.0)
            f.write(np.round(x * 32767).astype("<i2").tobytes())
    beats = [{"type": "terminal_response", "t": t} for t in np.arange(0.0, seconds - 5, 30.0)]
    path.with_name(path.stem + ".events.jsonl").write_text("".join(json.dumps(b) + "\n" for b in beats))


def traced_task(path: Path) -> tuple[float, int, dict]:
    """One recording's stress task with every axis, each line cut to its first value: its CPU time, the peak of
    what it allocates (numpy's arrays included), and what it found."""
    corpus = clock.load_corpus([path], cache=False)
    obs = corpus.observations[0]
    cut = tuple(dataclasses.replace(m, values=m.values[:1]) for m in lines(tick_s=obs.trace.tick_s))
    task = _Task(corpus.recordings[0].info.path, obs, (("candidate", 0.01, 1.0, 10.0),), cut, "step", 0, Margins())
    tracemalloc.start()
    start = time.process_time()
    outcomes, found, passes = _stress_task(task)
    spent = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (
        spent,
        peak,
        {"ok": outcomes[0].tally.n_ok, "beats": outcomes[0].tally.n_beats, "passes": passes, "found": found[0]},
    )


def test_stress_memory_does_not_grow_with_the_recording(tmp_path):
    # Every axis (gain, pink noise, an Opus re-encode with DTX off and on, lost packets, pauses), at 10 s and
    # at 40 s of 48 kHz audio. Only the changed traces are kept (60 values a second each), never the audio: a
    # streaming task's allocations grow by a few hundred kB at most (about 150 kB here), where one copy of the 30 s
    # more audio alone is 5.8 MB; and its CPU time grows with the audio, at most about linearly.
    rate = 48000
    paths = {}
    for seconds in (6, 10, 40):
        paths[seconds] = tmp_path / f"s{seconds}.wav"
        write_wav(paths[seconds], seconds, rate)
    traced_task(paths[6])  # warm up: imports, libopus, the noise filter's design
    (cpu_small, small, _), (cpu_big, big, doc) = traced_task(paths[10]), traced_task(paths[40])
    assert doc["ok"] == doc["beats"] == 2  # the setting holds as it is: every line is scanned
    assert doc["passes"] == 1 and doc["found"] == [(None, None)] * 8  # every line's value holds: all replayed
    audio = (40 - 10) * rate * 4  # one float32 copy of the audio the longer recording adds
    assert big - small < audio / 4, f"{small / 1e6:.1f} MB -> {big / 1e6:.1f} MB"
    assert cpu_big < 2 * 4 * cpu_small, f"{cpu_small:.2f} s -> {cpu_big:.2f} s of CPU"


def test_stress_costs_what_the_beats_of_its_log_cost(tmp_path):
    # One spoken beat, then groups of a tool call and three terminal responses in the silence after it, each
    # group inside one tick's interval: the first two superseded before any tick (unheard), the third a silent
    # beat. Every changed recording is judged over every beat (here the pause line, a replay of each stretched
    # recording with no decoding, and the gain line, decoded), so four times the groups cost about four times
    # the CPU time and the memory (a bound generous enough not to depend on the machine's load), never sixteen.
    from test_bounds import _best_s

    from clock.core.events import Event, EventLog

    rate = 48000  # ticks within a render quantum (2.7 ms) of k / 60 s, so a stretch keeps each event's tick
    x = np.zeros(40 * rate, np.float32)
    for start in (1.0, 2.0):
        i = int(start * rate)
        x[i : i + rate // 2] = 0.05 * math.sqrt(2) * np.sin(2 * np.pi * 250 * np.arange(rate // 2) / rate)
    path = tmp_path / "many.wav"
    sf.write(path, x, rate, subtype="FLOAT")
    trace = clock.levels(x, rate)
    cut = tuple(dataclasses.replace(m, values=m.values[:3]) for m in lines(tick_s=trace.tick_s, axes=["gain", "pause"]))

    def make(groups: int):
        first, last = np.searchsorted(trace.t_s, [5.0, 39.0])
        starts = trace.t_s[first + (last - first) * np.arange(groups) // groups]
        kinds = [("tool_call", 0.0045), ("terminal", 0.005), ("terminal", 0.0055), ("terminal", 0.006)]
        events = [("terminal", 0.5), *((kind, t + d) for t in starts.tolist() for kind, d in kinds)]
        log = EventLog(tuple(Event(kind, kind, t, k + 1) for k, (kind, t) in enumerate(events)))
        obs = clock.Observation("many.wav", trace, log)
        task = _Task(path, obs, (("candidate", 0.01, 1.0, 10.0),), cut, "step", 0, Margins())

        def work() -> None:
            outcomes, found, _ = _stress_task(task)
            assert (outcomes[0].tally.n_ok, outcomes[0].tally.n_silent) == (
                1,
                groups,
            )  # the superseded ones are unheard
            assert found[0] == [(None, None)] * 3  # every value holds (the whole scan)

        return work

    def peak(work) -> int:
        tracemalloc.start()
        work()
        found = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return found

    small, big = make(500), make(2000)
    small()  # warm up imports and caches
    assert _best_s(big, repeat=2) < 8 * _best_s(small, repeat=2)
    assert peak(make(240)) < 8 * peak(make(60))  # smaller logs: tracing makes every allocation slow
