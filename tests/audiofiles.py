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
