"""The transforms of ``speechclock stress`` that need a codec: an Opus re-encode, and lost packets.

libopus is called through ctypes: the copy PyAV's wheel bundles (the one
:mod:`clock.io.decode` decodes Opus with), else the system's
``libopus.so.0``. A recording is encoded as a browser's WebRTC sender
encodes a voice: 48 kHz mono, 16-bit input, 20 ms frames,
``OPUS_APPLICATION_VOIP``, complexity 9 (WebRTC's desktop default), VBR,
at a bitrate, with DTX off or on (with DTX the encoder emits header-only
packets in silence, decoded as they come). It is decoded as the receive
path decodes: libopus to 16-bit PCM, to float by Chromium's rule
(:func:`~clock.io.decode.webrtc_int16_to_float32`); the encoder's look-ahead
is removed so the timeline stays the recording's.

A lost packet is concealed as libopus conceals it when the receiver asks
for a frame it does not have: ``opus_decode`` with no packet (the packet
loss concealment of NetEq's ``DecodePlc``; in-band FEC is not used). Which
packets are lost is seeded and nested: ``random`` drops the first
``round(p * n)`` packets of a seeded shuffle, ``burst`` whole runs of
:data:`BURST_PACKETS` packets in a seeded order, so a higher loss drops the
packets of a lower one and more.

Other rates are resampled to 48 kHz and back with soxr.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import RecordingError
from .decode import webrtc_int16_to_float32

__all__ = [
    "BURST_PACKETS",
    "FRAME",
    "LOSS_BITRATE_KBPS",
    "OPUS_RATE_HZ",
    "Encoded",
    "decode",
    "encode",
    "lost_packets",
    "opus_decode",
    "opus_encode",
    "reencode",
]

OPUS_RATE_HZ = 48000
#: Samples per 20 ms packet at 48 kHz.
FRAME = 960
#: Packets lost together in a burst (100 ms).
BURST_PACKETS = 5
#: The bitrate (kb/s) the loss axis encodes at: the codec axis's highest, so loss is seen apart from bitrate.
LOSS_BITRATE_KBPS = 64

_VOIP = 2048
_SET_BITRATE, _SET_COMPLEXITY, _SET_DTX, _GET_LOOKAHEAD = 4002, 4010, 4016, 4027
_COMPLEXITY = 9
_MAX_PACKET = 4000


@functools.cache
def _libopus() -> ctypes.CDLL:
    """libopus: PyAV's bundled copy, else the system's."""
    candidates: list[str] = []
    try:
        import av

        folder = os.path.join(os.path.dirname(os.path.dirname(av.__file__)), "av.libs")
        candidates += sorted(glob.glob(os.path.join(folder, "libopus*.so*")))
    except ImportError:  # pragma: no cover - PyAV is a dependency
        pass
    found = ctypes.util.find_library("opus")
    candidates += [found] if found else []
    candidates.append("libopus.so.0")
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.opus_encoder_create.restype = ctypes.c_void_p
        lib.opus_decoder_create.restype = ctypes.c_void_p
        lib.opus_encode.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int32]
        lib.opus_decode.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
        ]  # fmt: skip
        lib.opus_encoder_destroy.argtypes = [ctypes.c_void_p]
        lib.opus_decoder_destroy.argtypes = [ctypes.c_void_p]
        return lib
    raise RecordingError("libopus not found (it comes with PyAV's wheel, or install libopus0)")


def _to_int16(x: NDArray[np.float32]) -> NDArray[np.int16]:
    """Float samples to 16-bit PCM, as a capture path rounds them."""
    return np.clip(np.round(x.astype(np.float64) * 32768.0), -32768, 32767).astype(np.int16)


def opus_encode(pcm: NDArray[np.int16], *, bitrate_kbps: float, dtx: bool) -> tuple[list[bytes], int]:
    """48 kHz mono 16-bit PCM as 20 ms Opus packets (the last padded with silence), and the look-ahead.

    Returns
    -------
    packets : list of bytes
    lookahead : int
        Samples the decoded signal lags the input by.
    """
    lib = _libopus()
    err = ctypes.c_int(0)
    enc = lib.opus_encoder_create(OPUS_RATE_HZ, 1, _VOIP, ctypes.byref(err))
    if err.value != 0 or not enc:
        raise RecordingError(f"libopus: cannot create an encoder (error {err.value})")
    try:
        for request, value in ((_SET_BITRATE, int(bitrate_kbps * 1000)), (_SET_COMPLEXITY, _COMPLEXITY)):
            lib.opus_encoder_ctl(ctypes.c_void_p(enc), request, ctypes.c_int(value))
        lib.opus_encoder_ctl(ctypes.c_void_p(enc), _SET_DTX, ctypes.c_int(1 if dtx else 0))
        look = ctypes.c_int(0)
        lib.opus_encoder_ctl(ctypes.c_void_p(enc), _GET_LOOKAHEAD, ctypes.byref(look))
        n = pcm.size + look.value
        padded = np.zeros(-(-n // FRAME) * FRAME, np.int16)
        padded[: pcm.size] = pcm
        out = ctypes.create_string_buffer(_MAX_PACKET)
        packets = []
        for k in range(0, padded.size, FRAME):
            frame = np.ascontiguousarray(padded[k : k + FRAME])
            size = lib.opus_encode(enc, frame.ctypes.data, FRAME, out, _MAX_PACKET)
            if size < 0:
                raise RecordingError(f"libopus: encoding failed (error {size})")
            packets.append(out.raw[:size])
        return packets, look.value
    finally:
        lib.opus_encoder_destroy(enc)


def opus_decode(packets: Sequence[bytes | None]) -> NDArray[np.int16]:
    """Packets decoded one after another by one libopus decoder at 48 kHz; None is a lost packet, concealed."""
    lib = _libopus()
    err = ctypes.c_int(0)
    dec = lib.opus_decoder_create(OPUS_RATE_HZ, 1, ctypes.byref(err))
    if err.value != 0 or not dec:
        raise RecordingError(f"libopus: cannot create a decoder (error {err.value})")
    out = np.zeros(len(packets) * FRAME, np.int16)
    try:
        for k, packet in enumerate(packets):
            view = out[k * FRAME : (k + 1) * FRAME]
            if packet is None:
                got = lib.opus_decode(dec, None, 0, view.ctypes.data, FRAME, 0)
            else:
                got = lib.opus_decode(dec, packet, len(packet), view.ctypes.data, FRAME, 0)
            if got != FRAME:
                raise RecordingError(f"libopus: decoding packet {k} gave {got} samples, not {FRAME}")
        return out
    finally:
        lib.opus_decoder_destroy(dec)


def lost_packets(n: int, loss_pct: float, *, burst: bool, seed: int) -> NDArray[np.bool_]:
    """Which of ``n`` packets are lost at ``loss_pct`` percent (seeded; a higher loss contains a lower one)."""
    lost = np.zeros(n, bool)
    want = int(round(n * loss_pct / 100.0))
    if want == 0:
        return lost
    rng = np.random.default_rng(seed)
    if not burst:
        lost[rng.permutation(n)[:want]] = True
        return lost
    offset = int(rng.integers(BURST_PACKETS))
    starts = np.arange(offset, n, BURST_PACKETS)
    for s in starts[rng.permutation(starts.size)]:
        room = want - int(lost.sum())
        if room <= 0:
            break
        lost[s : s + min(BURST_PACKETS, room)] = True
    return lost


def _resample(x: NDArray[np.float32], from_hz: int, to_hz: int) -> NDArray[np.float32]:
    if from_hz == to_hz:
        return x
    import soxr

    return np.asarray(soxr.resample(x, from_hz, to_hz, quality="HQ"), np.float32)


@dataclass(frozen=True, slots=True)
class Encoded:
    """A recording as Opus packets, with what it takes to put the decoded signal back on its timeline."""

    packets: tuple[bytes, ...]
    lookahead: int
    sample_rate_hz: int
    n_samples: int
    n_samples_48k: int


def encode(samples: NDArray[np.float32], sample_rate_hz: int, *, bitrate_kbps: float, dtx: bool = False) -> Encoded:
    """The samples encoded as a browser sends a voice (see the module notes)."""
    x48 = _resample(samples, sample_rate_hz, OPUS_RATE_HZ)
    packets, look = opus_encode(_to_int16(x48), bitrate_kbps=bitrate_kbps, dtx=dtx)
    return Encoded(tuple(packets), look, sample_rate_hz, samples.size, x48.size)


def decode(encoded: Encoded, lost: NDArray[np.bool_] | None = None) -> NDArray[np.float32]:
    """The packets as the receive path decodes them, the ``lost`` ones concealed; the recording's length and rate."""
    gone = lost.tolist() if lost is not None else [False] * len(encoded.packets)
    decoded = opus_decode([None if g else p for p, g in zip(encoded.packets, gone)])
    y48 = webrtc_int16_to_float32(decoded[encoded.lookahead : encoded.lookahead + encoded.n_samples_48k])
    y = _resample(y48, OPUS_RATE_HZ, encoded.sample_rate_hz)
    out = np.zeros(encoded.n_samples, np.float32)
    out[: min(y.size, out.size)] = y[: out.size]
    return out


def reencode(
    samples: NDArray[np.float32],
    sample_rate_hz: int,
    *,
    bitrate_kbps: float,
    dtx: bool = False,
    loss_pct: float = 0.0,
    burst: bool = False,
    seed: int = 0,
) -> NDArray[np.float32]:
    """The samples as a receiver hears them after an Opus link (see the module notes); same length and rate."""
    found = encode(samples, sample_rate_hz, bitrate_kbps=bitrate_kbps, dtx=dtx)
    return decode(found, lost_packets(len(found.packets), loss_pct, burst=burst, seed=seed))
