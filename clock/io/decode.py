"""Decoding recordings into blocks of mono float32 samples.

This is the only module that talks to soundfile and PyAV.

* WAV (PCM 8/16/24/32-bit and float), FLAC and Ogg Vorbis are read with
  soundfile (libsndfile);
* WebM and Matroska (Opus, as a browser's ``MediaRecorder`` writes them), MP4
  (AAC), Opus in any container, MP3, and a FLAC whose header gives no length
  (as streamed TTS APIs return it) are read with PyAV (FFmpeg). libsndfile
  opens those too, but its libopus path never decodes digital silence to 0,
  its libmpg123 writes errors straight to the terminal on damaged MP3 frames,
  and it cannot stream a FLAC without a length.

Integer PCM is scaled as ``v / 2**(bits - 1)``: 16-bit ``-32768`` reads as
exactly ``-1.0`` and ``0`` as exactly ``0.0``; unsigned 8-bit is centred on
128 first. Float PCM is passed through. Channels are down-mixed to mono by the
Web Audio "speakers" rules (:func:`clock.core.analyser.downmix_to_mono`).

Recordings are opened read-only and decoded block by block; memory does not
grow with a recording's length. Where a container's timestamps jump by more
than 0.1 s (a hole in a MediaRecorder stream), the hole is filled with
silence, with a warning, so the audio timeline stays aligned with the event
log; smaller jitter (a few ms in Chromium's WebM) is ignored. Resampling to
an ``AudioContext`` rate uses soxr's streaming resampler (a well-known, high-quality resampler; Chromium's
own sinc resampler differs in the last bits, so levels of a resampled
recording are close to, not bit-identical with, the browser's).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..core.analyser import downmix_to_mono
from ..errors import InvalidParameterError, InvalidSignalError, RecordingError, SpeechClockWarning
from .sources import decoder_input, is_url, open_binary, url_info

__all__ = ["AudioInfo", "DEFAULT_BLOCK_FRAMES", "iter_blocks", "probe"]

#: Frames per decoded block (about 1.4 s at 48 kHz).
DEFAULT_BLOCK_FRAMES = 65536

# A jump in a container's timestamps longer than this is a hole in the stream
# (MediaRecorder's timestamps jitter by a few milliseconds; those are ignored).
_GAP_FILL_S = 0.1

# 1 / 2**15 (exact in float32): 16-bit PCM to [-1, 1).
_INT16_SCALE = np.float32(1 / 32768)

# libsndfile reports this frame count when a header gives no length.
_UNKNOWN_LENGTH = 2**62

_PYAV_MAGIC = (b"\x1a\x45\xdf\xa3",)  # EBML: WebM and Matroska

# PyAV sample formats: (scale applied after the offset, offset)
_PYAV_SCALE = {
    "u8": (1 / 128, -128.0),
    "s16": (1 / 32768, 0.0),
    "s32": (1 / 2**31, 0.0),
    "s64": (1 / 2**63, 0.0),
    "flt": (None, 0.0),
    "dbl": (None, 0.0),
}


@dataclass(frozen=True, slots=True)
class AudioInfo:
    """What a recording's container says about its audio stream.

    Attributes
    ----------
    path : str
    container : str
        e.g. ``"WAV"``, ``"FLAC"``, ``"OGG"``, ``"MP3"``, ``"matroska,webm"``.
    codec : str
        e.g. ``"PCM_16"``, ``"OPUS"``, ``"opus"``, ``"aac"``.
    sample_rate_hz : int
    n_channels : int
    n_frames : int or None
        None when the header gives no length (streamed FLAC, MediaRecorder
        WebM); decoding still works, and counts the frames.
    backend : {"soundfile", "pyav"}
    """

    path: str
    container: str
    codec: str
    sample_rate_hz: int
    n_channels: int
    n_frames: int | None
    backend: str

    @property
    def duration_s(self) -> float | None:
        """Length from the header, or None when the header gives none."""
        return None if self.n_frames is None else self.n_frames / self.sample_rate_hz


def _check_path(path: str | os.PathLike[str]) -> Path:
    if is_url(path):
        return _check_url(str(path))  # type: ignore[return-value]
    p = Path(path)
    if not p.exists():
        raise RecordingError(f"{p}: no such file")
    if p.is_dir():
        raise RecordingError(f"{p}: is a directory, not a recording")
    if not os.access(p, os.R_OK):
        raise RecordingError(f"{p}: not readable (permission denied)")
    if p.stat().st_size == 0:
        raise RecordingError(f"{p}: file is empty")
    return p


def _check_url(url: str) -> str:
    meta = url_info(url)
    if meta.get("type") == "directory":
        raise RecordingError(f"{url}: is a directory, not a recording")
    if meta.get("size") == 0:
        raise RecordingError(f"{url}: file is empty")
    return url


def _magic(p: Path) -> bytes:
    with open_binary(p) as f:
        return f.read(12)


def _wants_pyav(head: bytes) -> bool:
    return head.startswith(_PYAV_MAGIC) or head[4:8] == b"ftyp"


def _probe_soundfile(p: Path) -> AudioInfo:
    import soundfile as sf

    try:
        with decoder_input(p) as src, sf.SoundFile(src) as f:
            frames = f.frames
            return AudioInfo(
                str(p),
                f.format,
                f.subtype,
                int(f.samplerate),
                int(f.channels),
                None if frames >= _UNKNOWN_LENGTH else int(frames),
                "soundfile",
            )
    except (sf.LibsndfileError, RuntimeError, TypeError) as err:
        raise RecordingError(f"{p}: {err}") from None


def _probe_pyav(p: Path) -> AudioInfo:
    import av

    try:
        with decoder_input(p) as src, av.open(src, mode="r") as container:
            if not container.streams.audio:
                raise RecordingError(f"{p}: no audio stream in the file")
            stream = container.streams.audio[0]
            ctx = stream.codec_context
            if ctx is None:
                raise RecordingError(f"{p}: unsupported audio codec (no decoder for it)")
            n_frames = None
            if stream.duration is not None and stream.time_base is not None:
                n_frames = int(round(float(stream.duration * stream.time_base) * ctx.sample_rate))
            if not ctx.sample_rate or not ctx.channels:
                raise RecordingError(f"{p}: audio stream has no sample rate or channels")
            return AudioInfo(
                str(p),
                container.format.name,
                ctx.name,
                int(ctx.sample_rate),
                int(ctx.channels),
                n_frames,
                "pyav",
            )
    except av.FFmpegError as err:
        raise RecordingError(f"{p}: not a decodable recording ({_av_reason(err)})") from None


def _av_reason(err: Exception) -> str:
    return getattr(err, "strerror", None) or str(err)


def probe(path: str | os.PathLike[str]) -> AudioInfo:
    """Read a recording's header.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    AudioInfo

    Raises
    ------
    RecordingError
        Missing, a directory, empty, not audio, or no audio stream.
    """
    p = _check_path(path)
    head = _magic(p)
    if _wants_pyav(head):
        return _probe_pyav(p)
    try:
        info = _probe_soundfile(p)
    except RecordingError:
        # Not a file libsndfile reads (or one it cannot): let FFmpeg try.
        try:
            return _probe_pyav(p)
        except RecordingError:
            raise RecordingError(f"{p}: not a recognised audio file") from None
    if info.n_frames is None or info.codec == "OPUS" or info.container == "MP3":
        # libsndfile cannot stream a FLAC without a length (it seeks and fails),
        # its libmpg123 prints to the terminal on damaged MP3 frames, and its
        # libopus float path adds a 1e-30 anti-denormal offset, so
        # digital silence never decodes to 0, while the remote track the
        # analyser hears (16-bit PCM from WebRTC) is exactly 0 there. FFmpeg's
        # own Opus decoder returns exact zeros.
        return _probe_pyav(p)
    if info.n_frames == 0:
        raise RecordingError(f"{p}: holds no audio frames")
    declared = _wav_declared_frames(p, info)
    if declared is not None and declared > info.n_frames:
        raise RecordingError(f"{p}: truncated: the header promises {declared} frames, the file holds {info.n_frames}")
    return info


def _wav_declared_frames(p: Path, info: AudioInfo) -> int | None:
    """Frames a RIFF/WAVE header's data chunk declares (libsndfile quietly trusts the file size)."""
    if info.container not in ("WAV", "WAVEX"):
        return None
    with open_binary(p) as f:
        head = f.read(12)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        block_align = None
        while True:
            chunk = f.read(8)
            if len(chunk) < 8:
                return None
            size = int.from_bytes(chunk[4:8], "little")
            if chunk[:4] == b"data":
                if not block_align or size == 0xFFFFFFFF:
                    return None
                return size // block_align
            body = f.read(size + (size & 1))
            if chunk[:4] == b"fmt ":
                block_align = int.from_bytes(body[12:14], "little")


def _soundfile_blocks(info: AudioInfo, block_frames: int) -> Iterator[NDArray[np.float32]]:
    import soundfile as sf

    n_read = 0
    try:
        with decoder_input(info.path) as src, sf.SoundFile(src) as f:
            # 16-bit PCM is read as int16 and scaled here: v / 32768 exactly, as libsndfile's own
            # float conversion gives, at a quarter of its cost.
            as_int16 = f.subtype == "PCM_16"
            while True:
                if as_int16:
                    block = np.multiply(f.read(block_frames, dtype="int16", always_2d=True), _INT16_SCALE)
                else:
                    block = f.read(block_frames, dtype="float32", always_2d=True)
                if block.shape[0] == 0:
                    break
                n_read += block.shape[0]
                yield block
    except (sf.LibsndfileError, RuntimeError) as err:
        raise RecordingError(f"{info.path}: decoding failed after {n_read} frames ({err})") from None
    if info.n_frames is not None and n_read < info.n_frames:
        raise RecordingError(
            f"{info.path}: truncated: the header promises {info.n_frames} frames, the file holds {n_read}"
        )


def _pyav_frame_to_array(frame: object) -> NDArray[np.float32]:
    fmt = frame.format  # type: ignore[attr-defined]
    arr = frame.to_ndarray()  # type: ignore[attr-defined]
    n_channels = len(frame.layout.channels)  # type: ignore[attr-defined]
    base = fmt.name.rstrip("p")
    if fmt.is_planar:
        arr = arr.T
    else:
        arr = arr.reshape(-1, n_channels)
    scale, offset = _PYAV_SCALE[base]
    if scale is None:
        return arr.astype(np.float32, copy=False)
    return ((arr.astype(np.float64) + offset) * scale).astype(np.float32)


def _pyav_blocks(info: AudioInfo) -> Iterator[NDArray[np.float32]]:
    import av

    n_read = 0
    try:
        with decoder_input(info.path) as src, av.open(src, mode="r") as container:
            stream = container.streams.audio[0]
            first_s: float | None = None
            for frame in container.decode(stream):
                block = _pyav_frame_to_array(frame)
                if frame.pts is not None and frame.time_base is not None:
                    at_s = float(frame.pts * frame.time_base)
                    first_s = at_s if first_s is None else first_s
                    missing = int(round((at_s - first_s) * info.sample_rate_hz)) - n_read
                    if missing > _GAP_FILL_S * info.sample_rate_hz:
                        warnings.warn(
                            f"{info.path}: {missing / info.sample_rate_hz:.3f} s missing from the stream at "
                            f"{n_read / info.sample_rate_hz:.3f} s; filled with silence to keep the timeline",
                            SpeechClockWarning,
                            stacklevel=2,
                        )
                        yield np.zeros((missing, block.shape[1]), np.float32)
                        n_read += missing
                n_read += block.shape[0]
                yield block
    except av.FFmpegError as err:
        raise RecordingError(f"{info.path}: decoding failed after {n_read} frames ({_av_reason(err)})") from None
    except KeyError as err:
        raise RecordingError(f"{info.path}: unsupported sample format {err}") from None
    if n_read == 0:
        raise RecordingError(f"{info.path}: holds no audio frames")


def _rechunk(blocks: Iterator[NDArray[np.float32]], block_frames: int) -> Iterator[NDArray[np.float32]]:
    """Join small decoder frames (20 ms Opus packets) into blocks of about ``block_frames``."""
    pending: list[NDArray[np.float32]] = []
    size = 0
    for block in blocks:
        pending.append(block)
        size += block.shape[0]
        if size >= block_frames:
            yield np.concatenate(pending)
            pending, size = [], 0
    if pending:
        yield np.concatenate(pending)


def _resampled(blocks: Iterator[NDArray[np.float32]], from_hz: int, to_hz: int) -> Iterator[NDArray[np.float32]]:
    import soxr

    stream = soxr.ResampleStream(from_hz, to_hz, 1, dtype="float32", quality="HQ")
    for block in blocks:
        out = stream.resample_chunk(block)
        if out.size:
            yield out
    tail = stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True)
    if tail.size:
        yield tail


def iter_blocks(
    path: str | os.PathLike[str] | AudioInfo,
    *,
    block_frames: int = DEFAULT_BLOCK_FRAMES,
    context_rate_hz: int | None = None,
) -> Iterator[NDArray[np.float32]]:
    """Decode a recording into successive blocks of mono float32 samples.

    Parameters
    ----------
    path : str, path-like or AudioInfo
        The recording (an :class:`AudioInfo` from :func:`probe` saves a second
        header read).
    block_frames : int, optional
        Approximate frames per block.
    context_rate_hz : int, optional
        Resample to this rate (an ``AudioContext``'s ``sampleRate``), with soxr.

    Yields
    ------
    ndarray of float32, shape (n,)
        Consecutive mono blocks; together they are the whole recording.

    Raises
    ------
    RecordingError
        The file cannot be decoded, or holds fewer frames than its header says.
    InvalidSignalError
        A decoded sample is NaN or infinite (the message gives its time).
    """
    info = path if isinstance(path, AudioInfo) else probe(path)
    if block_frames < 1:
        raise InvalidParameterError(f"block_frames must be >= 1, got {block_frames}")
    raw = (
        _soundfile_blocks(info, block_frames)
        if info.backend == "soundfile"
        else _rechunk(_pyav_blocks(info), block_frames)
    )
    mono = _checked_mono(raw, info)
    if context_rate_hz is not None and context_rate_hz != info.sample_rate_hz:
        if not 3000 <= context_rate_hz <= 768000:
            raise InvalidParameterError(
                f"context rate must be in [3000, 768000] Hz (the AudioContext range), got {context_rate_hz}"
            )
        yield from _resampled(mono, info.sample_rate_hz, context_rate_hz)
    else:
        yield from mono


def _checked_mono(blocks: Iterator[NDArray[np.float32]], info: AudioInfo) -> Iterator[NDArray[np.float32]]:
    position = 0
    for block in blocks:
        mono = downmix_to_mono(block)
        finite = np.isfinite(mono)
        if not finite.all():
            at = position + int(np.flatnonzero(~finite)[0])
            raise InvalidSignalError(
                f"{info.path}: non-finite sample (NaN or infinity) at frame {at} ({at / info.sample_rate_hz:.3f} s)"
            )
        position += mono.size
        yield mono
