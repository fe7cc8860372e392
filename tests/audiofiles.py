"""Write test recordings in every container the decoder reads (into tmp_path only)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import soundfile as sf


def write_soundfile(path: Path, samples: np.ndarray, rate: int, subtype: str | None = None) -> Path:
    sf.write(str(path), samples, rate, subtype=subtype)
    return path


def write_pyav(path: Path, samples: np.ndarray, rate: int, codec: str, *, fmt: str | None = None) -> Path:
    """Encode float samples (frames, channels) with FFmpeg through PyAV."""
    samples = np.asarray(samples, dtype=np.float32)
    if samples.ndim == 1:
        samples = samples[:, None]
    layout = {1: "mono", 2: "stereo"}[samples.shape[1]]
    with av.open(str(path), mode="w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        frame_size = stream.codec_context.frame_size or 1024
        fmt_name = stream.codec_context.format.name
        for start in range(0, samples.shape[0], frame_size):
            chunk = samples[start : start + frame_size]
            if fmt_name.endswith("p"):
                data = np.ascontiguousarray(chunk.T)
                frame = av.AudioFrame.from_ndarray(data, format="fltp", layout=layout)
            else:
                frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="flt", layout=layout)
            frame.sample_rate = rate
            frame.pts = start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def tone_with_silence(rate: int, *, amplitude: float = 0.3) -> np.ndarray:
    """0.5 s tone, 1 s of exact zeros, 0.5 s tone."""
    t = np.arange(rate // 2) / rate
    tone = (amplitude * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    return np.concatenate([tone, np.zeros(rate, np.float32), tone])


def _burst(rate: int, burst_s: float) -> np.ndarray:
    """A 220 Hz tone in noise, as 16-bit samples."""
    t = np.arange(int(burst_s * rate)) / rate
    rng = np.random.default_rng(9)
    return ((0.1 * np.sin(2 * np.pi * 220 * t) + 0.02 * rng.standard_normal(t.size)) * 32767).astype("<i2")


def _burst_log(path: Path, starts: np.ndarray) -> None:
    """The event log of a burst session: a terminal response 0.1 s before every tenth burst."""
    import json

    with open(path.with_name(path.stem + ".events.jsonl"), "w") as f:
        for start in starts[::10]:
            f.write(json.dumps({"type": "terminal_response", "t": round(float(start) - 0.1, 3)}) + "\n")


def write_burst_session(path: Path, *, seconds: float, rate: int, starts: np.ndarray, burst_s: float = 0.3) -> None:
    """A long 16-bit mono WAV written sparsely (zeros but for a 220 Hz burst at each of ``starts``), and a
    log with a terminal response 0.1 s before every tenth burst: hours of audio in seconds of writing."""
    import struct

    n = int(seconds * rate)
    burst = _burst(rate, burst_s).tobytes()
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        for start in starts:
            f.seek(44 + 2 * int(start * rate))
            f.write(burst)
        f.truncate(44 + 2 * n)
    _burst_log(path, starts)


def write_opus_burst_session(path: Path, *, seconds: float, period_s: float = 3.0, burst_s: float = 0.3) -> np.ndarray:
    """A long WebM/Opus of one period (a burst 0.5 s in, then digital silence) over and over, and its log.

    One period is encoded with libopus (48 kHz mono, 60 ms packets) and its
    packets are muxed again at every later period, so hours of Opus cost
    seconds of writing. Returns the bursts' start times.
    """
    import av

    rate = 48000
    frame = rate * 60 // 1000
    period = np.zeros(int(period_s * rate), np.int16)
    burst = _burst(rate, burst_s)
    period[int(0.5 * rate) : int(0.5 * rate) + burst.size] = burst
    assert period.size % frame == 0
    with av.open(str(path), mode="w", format="webm") as out:
        stream = out.add_stream("libopus", rate=rate, layout="mono")
        stream.codec_context.options = {"frame_duration": "60", "application": "voip"}
        packets: list[tuple[bytes, int]] = []
        pts = 0
        for repeat in range(2):  # the second period's packets: the encoder has left its start-up state
            for at in range(0, period.size, frame):
                f = av.AudioFrame.from_ndarray(period[at : at + frame].reshape(1, -1), format="s16", layout="mono")
                f.sample_rate, f.pts = rate, pts
                pts += frame
                packets += [(bytes(p), repeat) for p in stream.encode(f)]
        steady = [data for data, repeat in packets if repeat == 1][: period.size // frame]
        time_base, per_packet, at = Fraction(1, rate), frame, 0  # packet times in samples
        for _ in range(int(seconds / period_s)):
            for data in steady:
                packet = av.Packet(data)
                packet.stream, packet.time_base, packet.pts, packet.dts = stream, time_base, at, at
                packet.duration = per_packet
                out.mux(packet)
                at += per_packet
    starts = 0.5 + period_s * np.arange(int(seconds / period_s))
    _burst_log(path, starts)
    return starts
