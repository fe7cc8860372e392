"""Write test recordings in every container the decoder reads (into tmp_path only)."""

from __future__ import annotations

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


def write_burst_session(path: Path, *, seconds: float, rate: int, starts: np.ndarray, burst_s: float = 0.3) -> None:
    """A long 16-bit mono WAV written sparsely (zeros but for a 220 Hz burst at each of ``starts``), and a
    log with a terminal response 0.1 s before every tenth burst: hours of audio in seconds of writing."""
    import json
    import struct

    n = int(seconds * rate)
    t = np.arange(int(burst_s * rate)) / rate
    rng = np.random.default_rng(9)
    burst = ((0.1 * np.sin(2 * np.pi * 220 * t) + 0.02 * rng.standard_normal(t.size)) * 32767).astype("<i2").tobytes()
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        for start in starts:
            f.seek(44 + 2 * int(start * rate))
            f.write(burst)
        f.truncate(44 + 2 * n)
    with open(path.with_name(path.stem + ".events.jsonl"), "w") as f:
        for start in starts[::10]:
            f.write(json.dumps({"type": "terminal_response", "t": round(float(start) - 0.1, 3)}) + "\n")
