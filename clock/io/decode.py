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
128 first. Float PCM is passed through. Opus (in any container) is decoded
as the browser's WebRTC receive path decodes it: with libopus, to 16-bit PCM,
converted to float by Chromium's rule (``v / 32768`` below zero,
``v * float32(1 / 32767)`` above, see :func:`webrtc_int16_to_float32`), so
digital silence reads exactly 0. A 16-bit capture of such floats (docs/capture.js's
``"int16"`` format) is read by the same rule when asked (``webrtc_int16``). Channels are down-mixed to mono by the
Web Audio "speakers" rules (:func:`clock.core.analyser.downmix_to_mono`).

Recordings are opened read-only and decoded block by block; memory does not
grow with a recording's length. Where a container's timestamps jump by more
than 0.1 s (a hole in a MediaRecorder stream), the hole is filled with
silence, block by block, with a warning, so the audio timeline stays aligned
with the event log; smaller jitter (a few ms in Chromium's WebM) is ignored.
A hole longer than :data:`MAX_HOLE_S` (an hour) is an error naming the file
and the time: no session pauses that long, and filling it would only cost
time. A damaged packet (garbage in the middle of an MP3) is skipped with one
warning per file, as FFmpeg's own tool does. MP3 is recognised by its first
bytes (or its name) before libsndfile sees it, so libmpg123 never prints to
the terminal. Resampling to
an ``AudioContext`` rate uses soxr's streaming resampler (a well-known, high-quality resampler; Chromium's
own sinc resampler differs in the last bits, so levels of a resampled
recording are close to, not bit-identical with, the browser's).
"""

from __future__ import annotations

import os
import queue
import stat
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.analyser import downmix_pcm16, downmix_to_mono
from ..core.levels import Block
from ..errors import InvalidParameterError, InvalidSignalError, RecordingError, SpeechClockWarning
from .files import file_kind
from .sources import decoder_input, is_url, name_of, open_binary, url_info

__all__ = [
    "MAX_HOLE_S",
    "AudioInfo",
    "DEFAULT_BLOCK_FRAMES",
    "LEVEL_BLOCK_FRAMES",
    "iter_blocks",
    "iter_level_blocks",
    "probe",
    "webrtc_int16_to_float32",
]

#: Frames per decoded block (about 1.4 s at 48 kHz).
DEFAULT_BLOCK_FRAMES = 65536

#: Frames per block of 16-bit PCM for the level engine (:func:`iter_level_blocks`): about 5.5 s at
#: 48 kHz, 512 KB of mono. Its levels cost so little per sample that fewer, larger blocks spend less
#: of an hour's work between them; a codec's (Opus) cost is its decoding, so it keeps
#: :data:`DEFAULT_BLOCK_FRAMES`, which holds less memory.
LEVEL_BLOCK_FRAMES = 1 << 18

# Samples (frames x channels) read at once: 4 MB of float32, whatever the channel count.
_MAX_BLOCK_SAMPLES = 1 << 20

# A jump in a container's timestamps longer than this is a hole in the stream
# (MediaRecorder's timestamps jitter by a few milliseconds; those are ignored).
_GAP_FILL_S = 0.1

#: The longest hole in a container's timestamps that is filled with silence
#: (seconds); a longer jump is an error (``iter_blocks(max_hole_s=...)``).
MAX_HOLE_S = 3600.0

# 1 / 2**15 (exact in float32): 16-bit PCM to [-1, 1).
_INT16_SCALE = np.float32(1 / 32768)

# libsndfile reports this frame count when a header gives no length.
_UNKNOWN_LENGTH = 2**62

_PYAV_MAGIC = (b"\x1a\x45\xdf\xa3", b"ID3")  # EBML (WebM, Matroska); an ID3 tag (MP3)

# Names that FFmpeg reads, whatever their first bytes (libsndfile's libmpg123
# prints to the terminal on a damaged MP3, so it never sees one).
_PYAV_SUFFIXES = (".mp3",)

# RIFF/WAVE format tags of MPEG audio inside a WAV (libsndfile hands them to libmpg123).
_WAV_MPEG_TAGS = (0x0050, 0x0055)

# PyAV sample formats: their numpy types, and (scale applied after the offset, offset)
_PYAV_DTYPE: dict[str, np.dtype[Any]] = {
    name: np.dtype(t)
    for name, t in (("u8", np.uint8), ("s16", np.int16), ("s32", np.int32), ("s64", np.int64))
    + (("flt", np.float32), ("dbl", np.float64))
}
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
    try:
        st = p.stat()  # never opens: a FIFO with no writer cannot block here
    except FileNotFoundError:
        raise RecordingError(f"{p}: no such file") from None
    except OSError as err:
        raise RecordingError(f"{p}: cannot read ({err.strerror or err})") from None
    if stat.S_ISDIR(st.st_mode):
        raise RecordingError(f"{p}: is a directory, not a recording")
    if not stat.S_ISREG(st.st_mode):
        # The decoder reads a recording more than once (header, samples, the
        # plot's waveform), which a pipe or a device cannot give.
        raise RecordingError(f"{p}: is {file_kind(st.st_mode)}, not a recording file (save the stream to a file first)")
    if not os.access(p, os.R_OK):
        raise RecordingError(f"{p}: not readable (permission denied)")
    if st.st_size == 0:
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
        return f.read(64)


def _is_mpeg_audio(head: bytes) -> bool:
    """An MPEG audio frame header (layer I, II or III) at the start: 11 sync bits, a valid layer."""
    return len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0 and (head[1] >> 1) & 3 != 0


def _wav_tag(p: Path) -> int | None:
    """The format tag of a RIFF/WAVE file (None when it is not one, or has no ``fmt `` chunk early on)."""
    with open_binary(p) as f:
        head = f.read(12)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        for _ in range(16):  # the fmt chunk comes first, after a JUNK chunk or two at most
            chunk = f.read(8)
            if len(chunk) < 8:
                return None
            size = int.from_bytes(chunk[4:8], "little")
            if chunk[:4] == b"fmt ":
                tag = f.read(2)
                return int.from_bytes(tag, "little") if len(tag) == 2 else None
            f.seek(size + (size & 1), os.SEEK_CUR)
    return None


def _wants_pyav(head: bytes, p: Path) -> bool:
    return (
        head.startswith(_PYAV_MAGIC)
        or head[4:8] == b"ftyp"
        or _is_mpeg_audio(head)
        or Path(name_of(p)).suffix.lower() in _PYAV_SUFFIXES
        or (head.startswith(b"RIFF") and _wav_tag(p) in _WAV_MPEG_TAGS)
    )


def _sf_name(src: Any) -> Any:
    """A local path as bytes for libsndfile (a name that is not UTF-8 still opens); a file object as it is."""
    return os.fsencode(src) if isinstance(src, str) else src


def _probe_soundfile(p: Path) -> AudioInfo:
    import soundfile as sf

    try:
        with decoder_input(p) as src, sf.SoundFile(_sf_name(src)) as f:
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
    if _wants_pyav(head, p):
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
        # analyser hears (16-bit PCM from WebRTC) is exactly 0 there. PyAV
        # decodes Opus with libopus at 16 bits, as WebRTC does.
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


def _soundfile_blocks(info: AudioInfo, block_frames: int) -> Iterator[NDArray[np.float32] | NDArray[np.int16]]:
    """(frames, channels) blocks: int16 for 16-bit PCM, float32 otherwise."""
    import soundfile as sf

    n_read = 0
    # A file of many channels is read in fewer frames at a time: a block never exceeds _MAX_BLOCK_SAMPLES.
    frames = max(1, min(block_frames, _MAX_BLOCK_SAMPLES // max(1, info.n_channels)))
    try:
        with decoder_input(info.path) as src, sf.SoundFile(_sf_name(src)) as f:
            # 16-bit PCM is read as int16 and scaled later (_checked_mono): v / 32768 exactly, as
            # libsndfile's own float conversion gives, at a quarter of its cost.
            dtype = "int16" if f.subtype == "PCM_16" else "float32"
            while True:
                block = f.read(frames, dtype=dtype, always_2d=True)
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


def _pyav_frame_to_array(frame: object) -> NDArray[Any]:
    """A decoded frame's samples as an (n, channels) array in its own sample type (no arithmetic).

    Frames are converted to float once per block (:func:`_rechunk`), not one
    20 ms frame at a time.
    """
    if isinstance(frame, _Batch):
        return frame.array
    fmt = frame.format  # type: ignore[attr-defined]
    base = fmt.name.rstrip("p")
    if base not in _PYAV_SCALE:
        raise KeyError(fmt.name)
    n_channels = len(frame.layout.channels)  # type: ignore[attr-defined]
    if not fmt.is_planar:
        # Packed (libopus's s16): the plane's bytes as they are (its buffer may be padded).
        count = frame.samples * n_channels  # type: ignore[attr-defined]
        return np.frombuffer(frame.planes[0], _PYAV_DTYPE[base], count=count).reshape(-1, n_channels)  # type: ignore[attr-defined]
    return frame.to_ndarray().T  # type: ignore[attr-defined]


def _pcm_to_float32(arr: NDArray[Any]) -> NDArray[np.float32]:
    """Integer PCM as ``v / 2**(bits - 1)`` (unsigned 8-bit centred first); float passed through."""
    if arr.dtype.kind == "f":
        return arr.astype(np.float32, copy=False)
    scale, offset = _PYAV_SCALE[{"u1": "u8", "i2": "s16", "i4": "s32", "i8": "s64"}[arr.dtype.str[1:]]]
    return ((arr.astype(np.float64) + offset) * scale).astype(np.float32)  # type: ignore[operator]


# Chromium's 16-bit to float conversion, SignedInt16SampleTypeTraits::ToFloat in
# media/base/audio_sample_types.h (FixedSampleTypeTraits<int16_t>, read at
# chromium/chromium 5b83ed46): in float32, v * (1.0f / 32768) below zero and
# v * (1.0f / 32767) at or above it, so 0 stays exactly 0 and 32767 reads 1.0.
# PeerConnectionRemoteAudioSource::OnData
# (third_party/blink/renderer/platform/webrtc/peer_connection_remote_audio_source.cc,
# read at 37f9269f) hands WebRTC's 16-bit samples of a remote track to the
# MediaStream with AudioBus::FromInterleaved<SignedInt16SampleTypeTraits>.
# tests/web/test_webrtc_loopback.py checks every sample of a real remote track
# against this rule.
_INV_NEGATIVE = np.float32(1.0) / np.float32(32768.0)
_INV_POSITIVE = np.float32(1.0) / np.float32(32767.0)


def _chromium_int16(v: NDArray[Any]) -> NDArray[np.float32]:
    x = v.astype(np.float32)
    return x * np.where(v < 0, _INV_NEGATIVE, _INV_POSITIVE)


# Every 16-bit value's float, indexed by the value's bits read as unsigned.
_INT16_TO_FLOAT = _chromium_int16(np.arange(2**16, dtype=np.uint16).view(np.int16))


def webrtc_int16_to_float32(v: NDArray[np.int16]) -> NDArray[np.float32]:
    """16-bit PCM as Chromium hands a WebRTC remote track to Web Audio (see the comment above).

    A lookup in a table of all 65536 values (one pass over the samples).
    """
    return np.take(_INT16_TO_FLOAT, np.asarray(v, dtype=np.int16).view(np.uint16))


class _Batch:
    """Consecutive decoded frames joined into one array: a frame to :func:`_pyav_blocks`."""

    __slots__ = ("array", "pts", "time_base")

    def __init__(self, array: NDArray[Any], pts: int | None, time_base: Any) -> None:
        self.array, self.pts, self.time_base = array, pts, time_base


# How far a frame's timestamp may stray from the end of the batch before it starts
# a new one (well under the timeline's hole threshold, so holes are still seen
# between batches).
_BATCH_TOLERANCE_S = 0.01


def _decoded_frames(container: Any, stream: Any, path: str, batch_frames: int) -> Iterator[Any]:
    """The stream's frames; Opus through libopus at 16 bits, as WebRTC decodes it.

    FFmpeg's own Opus decoder differs from libopus on SILK and hybrid packets
    (the modes speech at voice bitrates uses) by up to 0.1 per sample; Chromium
    decodes with libopus to 16-bit PCM (NetEq), so the tool does too. The
    demuxer's pre-skip and end trimming apply as with the native decoder.
    Contiguous 20 ms frames are joined into batches of ``batch_frames`` (the
    per-frame work is numpy's, not Python's), decoded :data:`_AHEAD` batches
    ahead in a thread of their own (PyAV decodes without the GIL), so
    decoding and the level computation overlap.
    """
    import av

    if stream.codec_context.name != "opus" or "libopus" not in av.codecs_available:
        yield from _packets_decoded(container, stream, path)
        return
    yield from _ahead(_libopus_batches, path, stream.index, batch_frames)


def _packets_decoded(container: Any, stream: Any, path: str) -> Iterator[Any]:
    """The stream's frames, packet by packet; a damaged packet is skipped (one warning per file), as FFmpeg does."""
    import av

    n_frames = n_skipped = 0
    first: tuple[float | None, str] | None = None
    for packet in container.demux(stream):  # type: ignore[attr-defined]
        try:
            frames = packet.decode()
        except (av.InvalidDataError, av.PatchWelcomeError, av.BugError, av.UndefinedError) as err:
            n_skipped += 1
            if first is None:
                at = None if packet.pts is None or packet.time_base is None else float(packet.pts * packet.time_base)
                first = (at, _av_reason(err))
            continue
        n_frames += len(frames)
        yield from frames
    if first is not None:
        at_s, reason = first
        where = "" if at_s is None else f", the first at {at_s:.3f} s"
        if n_frames == 0:
            raise RecordingError(f"{path}: no packet could be decoded ({reason})")
        warnings.warn(
            f"{path}: skipped {n_skipped} damaged packet{'s' if n_skipped > 1 else ''}{where} ({reason})",
            SpeechClockWarning,
            stacklevel=2,
        )


def _libopus_batches(path: str, index: int, batch_frames: int) -> Iterator[_Batch]:
    """The Opus stream ``index`` of ``path`` decoded with libopus, in batches (its own container)."""
    import av

    with decoder_input(path) as src, av.open(src, mode="r") as container:
        stream: Any = container.streams[index]
        ctx: Any = av.CodecContext.create("libopus", "r")
        ctx.extradata = stream.codec_context.extradata
        ctx.sample_rate = stream.codec_context.sample_rate
        ctx.layout = stream.codec_context.layout
        time_base = stream.time_base or Fraction(1, ctx.sample_rate)
        # Timestamp units per sample, and the tolerance, in exact integer ratios.
        units_num, units_den = time_base.denominator, time_base.numerator * ctx.sample_rate
        tolerance = _BATCH_TOLERANCE_S * time_base.denominator / time_base.numerator
        parts: list[NDArray[Any]] = []
        first_pts: int | None = None
        size = 0
        packed: tuple[str, int] | None = None  # (format, channels) of packed frames, read once
        for packet in container.demux(stream):
            for frame in ctx.decode(packet):
                fmt = frame.format.name
                if packed is not None and fmt == packed[0]:
                    # The common case, without the per-frame lookups of _pyav_frame_to_array.
                    n = frame.samples
                    block = np.frombuffer(frame.planes[0], _PYAV_DTYPE[fmt], count=n * packed[1]).reshape(n, -1)
                else:
                    block = _pyav_frame_to_array(frame)
                    packed = None if frame.format.is_planar else (fmt, block.shape[1])
                pts = frame.pts
                if parts and (
                    size >= batch_frames
                    or pts is None
                    or first_pts is None
                    or block.dtype != parts[0].dtype
                    or abs(pts - (first_pts + size * units_num / units_den)) > tolerance
                ):
                    yield _Batch(_opus_to_float32(np.concatenate(parts)), first_pts, time_base)
                    parts, size = [], 0
                if not parts:
                    first_pts = pts
                parts.append(block)
                size += block.shape[0]
        if parts:
            yield _Batch(_opus_to_float32(np.concatenate(parts)), first_pts, time_base)


# Batches decoded ahead of the consumer (about a second each): memory stays bounded.
_AHEAD = 4


def _ahead(make: Callable[..., Iterator[Any]], *args: Any) -> Iterator[Any]:
    """Run the generator ``make(*args)`` in a thread, up to :data:`_AHEAD` items ahead.

    Items come in order; an exception in the thread is raised here. When the
    consumer stops early, the thread stops at its next item.
    """
    items: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=_AHEAD)
    stop = threading.Event()

    def put(entry: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for item in make(*args):
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as err:  # handed to the consumer, raised there
            put(("error", err))

    worker = threading.Thread(target=run, name="speechclock-decode", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = items.get()
            if kind == "item":
                yield value
            elif kind == "end":
                return
            else:
                raise value
    finally:
        stop.set()
        worker.join()


def _pyav_blocks(
    info: AudioInfo, *, block_frames: int = DEFAULT_BLOCK_FRAMES, max_hole_s: float = MAX_HOLE_S
) -> Iterator[NDArray[Any]]:
    import av

    n_read = 0
    try:
        with decoder_input(info.path) as src, av.open(src, mode="r") as container:
            stream = container.streams.audio[0]
            first_s: float | None = None
            for frame in _decoded_frames(container, stream, info.path, block_frames):
                block = _pyav_frame_to_array(frame)
                if frame.pts is not None and frame.time_base is not None:
                    at_s = float(frame.pts * frame.time_base)
                    first_s = at_s if first_s is None else first_s
                    missing = _hole(info, at_s - first_s, n_read, max_hole_s)
                    yield from _silence(missing, block.shape[1], block_frames, block.dtype)
                    n_read += missing
                n_read += block.shape[0]
                yield block
    except av.FFmpegError as err:
        raise RecordingError(f"{info.path}: decoding failed after {n_read} frames ({_av_reason(err)})") from None
    except KeyError as err:
        raise RecordingError(f"{info.path}: unsupported sample format {err}") from None
    if n_read == 0:
        raise RecordingError(f"{info.path}: holds no audio frames")


def _hole(info: AudioInfo, at_s: float, n_read: int, max_hole_s: float) -> int:
    """Frames missing before a frame stamped ``at_s`` (0 for jitter); a hole over ``max_hole_s`` is an error."""
    rate = info.sample_rate_hz
    if not at_s - n_read / rate > _GAP_FILL_S:
        return 0
    if at_s - n_read / rate > max_hole_s:
        raise RecordingError(
            f"{info.path}: the stream's timestamps jump by {at_s - n_read / rate:.3f} s at {n_read / rate:.3f} s, "
            f"more than the longest hole filled with silence ({max_hole_s:g} s): damaged timestamps?"
        )
    missing = int(round(at_s * rate)) - n_read
    warnings.warn(
        f"{info.path}: {missing / rate:.3f} s missing from the stream at "
        f"{n_read / rate:.3f} s; filled with silence to keep the timeline",
        SpeechClockWarning,
        stacklevel=3,
    )
    return missing


def _silence(n_frames: int, n_channels: int, block_frames: int, dtype: Any = np.float32) -> Iterator[NDArray[Any]]:
    """``n_frames`` of silence in blocks of at most ``block_frames`` (a long hole is never allocated at once)."""
    for start in range(0, n_frames, block_frames):
        yield np.zeros((min(block_frames, n_frames - start), n_channels), dtype)


def _rechunk(
    blocks: Iterator[NDArray[Any]],
    block_frames: int,
    convert: Callable[[NDArray[Any]], NDArray[np.float32]] = _pcm_to_float32,
) -> Iterator[NDArray[np.float32]]:
    """Join small decoder frames (20 ms Opus packets) into blocks of about ``block_frames``.

    Each block is converted to float32 once (``convert``), after joining.
    """
    pending: list[NDArray[Any]] = []
    size = 0
    for block in blocks:
        if pending and (block.dtype != pending[0].dtype or block.shape[1] != pending[0].shape[1]):
            yield convert(_joined(pending))
            pending, size = [], 0
        pending.append(block)
        size += block.shape[0]
        if size >= block_frames:
            yield convert(_joined(pending))
            pending, size = [], 0
    if pending:
        yield convert(_joined(pending))


def _joined(parts: list[NDArray[Any]]) -> NDArray[Any]:
    """The parts as one array (a lone part as it is: a batch of the size asked for is not copied)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _opus_to_float32(arr: NDArray[Any]) -> NDArray[np.float32]:
    """The 16-bit output of libopus by Chromium's rule (any other sample type as usual)."""
    return webrtc_int16_to_float32(arr) if arr.dtype == np.int16 else _pcm_to_float32(arr)


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
    max_hole_s: float = MAX_HOLE_S,
    webrtc_int16: bool = False,
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
    max_hole_s : float, optional
        The longest jump in a container's timestamps that is filled with
        silence (default :data:`MAX_HOLE_S`, an hour); a longer one is an error.
    webrtc_int16 : bool, optional
        Read 16-bit PCM by Chromium's rule (:func:`webrtc_int16_to_float32`)
        rather than as ``v / 32768``: a capture that wrote the analyser's
        floats as 16-bit by inverting that rule (docs/capture.js's ``"int16"``
        format) comes back as exactly those floats.

    Yields
    ------
    ndarray of float32, shape (n,)
        Consecutive mono blocks; together they are the whole recording.

    Raises
    ------
    RecordingError
        The file cannot be decoded, holds fewer frames than its header says,
        or its timestamps jump by more than ``max_hole_s``.
    InvalidSignalError
        A decoded sample is NaN or infinite (the message gives its time).
    """
    yield from _blocks(  # type: ignore[misc]
        path, block_frames, context_rate_hz, max_hole_s, grid=False, webrtc_int16=webrtc_int16
    )


def iter_level_blocks(
    path: str | os.PathLike[str] | AudioInfo,
    *,
    block_frames: int | None = None,
    context_rate_hz: int | None = None,
    max_hole_s: float = MAX_HOLE_S,
    webrtc_int16: bool = False,
) -> Iterator[Block]:
    """:func:`iter_blocks` for the level engine: 16-bit PCM as its exact integers.

    The same samples as :func:`iter_blocks`, with the same parameters and
    errors; where a block is 16-bit PCM whose down-mix stays on a grid (every
    channel count but 5.1, not resampled), it comes as a
    :class:`~clock.core.analyser.GridBlock`, whose levels
    :func:`~clock.core.levels.iter_levels` computes exactly from integer sums.
    By default 16-bit PCM comes in blocks of :data:`LEVEL_BLOCK_FRAMES`, the
    rest in blocks of :data:`DEFAULT_BLOCK_FRAMES`. With ``webrtc_int16``,
    16-bit PCM is float32 by Chromium's rule (not on the integer grid).
    """
    info = path if isinstance(path, AudioInfo) else probe(path)
    if block_frames is None:
        block_frames = LEVEL_BLOCK_FRAMES if info.codec == "PCM_16" else DEFAULT_BLOCK_FRAMES
    yield from _blocks(info, block_frames, context_rate_hz, max_hole_s, grid=True, webrtc_int16=webrtc_int16)


def _blocks(
    path: str | os.PathLike[str] | AudioInfo,
    block_frames: int,
    context_rate_hz: int | None,
    max_hole_s: float,
    *,
    grid: bool,
    webrtc_int16: bool = False,
) -> Iterator[Block]:
    info = path if isinstance(path, AudioInfo) else probe(path)
    if block_frames < 1:
        raise InvalidParameterError(f"block_frames must be >= 1, got {block_frames}")
    if not 0 < max_hole_s < float("inf"):
        raise InvalidParameterError(f"max_hole_s must be a positive number of seconds, got {max_hole_s!r}")
    raw = (
        _soundfile_blocks(info, block_frames)
        if info.backend == "soundfile"
        else _rechunk(
            _pyav_blocks(info, block_frames=block_frames, max_hole_s=max_hole_s),
            block_frames,
            _opus_to_float32 if info.codec == "opus" else _pcm_to_float32,
        )
    )
    resample = context_rate_hz if context_rate_hz not in (None, info.sample_rate_hz) else None
    mono = _checked_mono(raw, info, grid=grid and resample is None, webrtc_int16=webrtc_int16)
    if resample is not None:
        if not 3000 <= resample <= 768000:
            raise InvalidParameterError(
                f"context rate must be in [3000, 768000] Hz (the AudioContext range), got {context_rate_hz}"
            )
        yield from _resampled(mono, info.sample_rate_hz, resample)  # type: ignore[arg-type]
    else:
        yield from mono


def _checked_mono(
    blocks: Iterator[NDArray[Any]], info: AudioInfo, *, grid: bool, webrtc_int16: bool = False
) -> Iterator[Block]:
    """Mono blocks: 16-bit PCM (int16) as its exact integers where ``grid`` and the down-mix allow, else float32."""
    position = 0
    for block in blocks:
        if block.dtype == np.int16 and webrtc_int16:
            position += block.shape[0]
            yield downmix_to_mono(webrtc_int16_to_float32(block))
            continue
        if block.dtype == np.int16:
            exact = downmix_pcm16(block) if grid else None
            position += block.shape[0]
            yield exact if exact is not None else downmix_to_mono(np.multiply(block, _INT16_SCALE))
            continue
        mono = downmix_to_mono(block)
        finite = np.isfinite(mono)
        if not finite.all():
            at = position + int(np.flatnonzero(~finite)[0])
            raise InvalidSignalError(
                f"{info.path}: non-finite sample (NaN or infinity) at frame {at} ({at / info.sample_rate_hz:.3f} s)"
            )
        position += mono.size
        yield mono
