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
packets are lost is seeded and nested (:class:`LossDraws`): each packet
(``random``), or each run of :data:`BURST_PACKETS` packets from a seeded
offset (``burst``), draws one seeded uniform number in order and is lost when
it is below ``p``, so a higher loss drops the packets of a lower one and
more, and about ``p`` of the packets are lost.

Other rates are resampled to 48 kHz and back with soxr (its streaming
resampler).

Everything streams: :class:`OpusSender` turns blocks of samples into
packets as they come, :class:`OpusReceiver` turns packets back into samples
on the recording's timeline, so a re-encode holds a few frames, never the
recording. :func:`encode`, :func:`decode` and :func:`reencode` are the same
code given the whole signal as one block.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    "LossDraws",
    "OpusReceiver",
    "OpusLink",
    "OpusSender",
    "decode",
    "encode",
    "lost_packets",
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


class LossDraws:
    """Which packets are lost at ``loss_pct`` percent, packet by packet as they come (see the module notes).

    Seeded; the same draws however the packets are counted out, and a
    higher loss loses every packet a lower one does.
    """

    def __init__(self, loss_pct: float, *, burst: bool, seed: int) -> None:
        self._p = float(loss_pct) / 100.0
        self._burst = burst
        self._rng = np.random.default_rng(seed)
        self._offset = int(self._rng.integers(BURST_PACKETS)) if burst else 0
        self._k = 0  # the next packet
        self._slot0 = 0  # the slot of self._u[0]
        self._u = np.zeros(0)

    def next(self, n: int) -> NDArray[np.bool_]:
        """Lost or not, for the next ``n`` packets."""
        k = np.arange(self._k, self._k + n, dtype=np.int64)
        self._k += n
        if n == 0:
            return np.zeros(0, bool)
        if not self._burst:
            return self._rng.random(n) < self._p
        slot = np.where(k < self._offset, 0, 1 + (k - self._offset) // BURST_PACKETS)
        last = int(slot[-1])
        have = self._slot0 + self._u.size
        if last >= have:
            self._u = np.concatenate([self._u, self._rng.random(last + 1 - have)])
        lost = self._u[slot - self._slot0] < self._p
        drop = int(slot[-1]) - self._slot0  # earlier slots are done with
        self._u, self._slot0 = self._u[drop:], self._slot0 + drop
        return lost


def lost_packets(n: int, loss_pct: float, *, burst: bool, seed: int) -> NDArray[np.bool_]:
    """Which of ``n`` packets are lost at ``loss_pct`` percent: the first ``n`` of :class:`LossDraws`."""
    return LossDraws(loss_pct, burst=burst, seed=seed).next(n)


class _Resampler:
    """soxr's streaming resampler, or nothing at the same rate."""

    def __init__(self, from_hz: int, to_hz: int) -> None:
        self._stream: Any = None
        if from_hz != to_hz:
            import soxr

            self._stream = soxr.ResampleStream(from_hz, to_hz, 1, dtype="float32", quality="HQ")

    def __call__(self, x: NDArray[np.float32], *, last: bool = False) -> NDArray[np.float32]:
        if self._stream is None:
            return x
        return np.asarray(self._stream.resample_chunk(np.ascontiguousarray(x, np.float32), last=last), np.float32)


class OpusSender:
    """Blocks of samples at ``sample_rate_hz`` as 20 ms Opus packets, as a browser's sender encodes a voice.

    :meth:`feed` gives the packets each block completes; :meth:`finish` the
    last ones (the final frame padded with silence, far enough to hold the
    encoder's look-ahead). Then :attr:`n_samples`, :attr:`n_samples_48k`
    and :attr:`lookahead` say how to put the decoded signal back.
    """

    def __init__(self, sample_rate_hz: int, *, bitrate_kbps: float, dtx: bool = False) -> None:
        lib = _libopus()
        err = ctypes.c_int(0)
        enc = lib.opus_encoder_create(OPUS_RATE_HZ, 1, _VOIP, ctypes.byref(err))
        if err.value != 0 or not enc:
            raise RecordingError(f"libopus: cannot create an encoder (error {err.value})")
        self._enc = ctypes.c_void_p(enc)
        self._done = weakref.finalize(self, lib.opus_encoder_destroy, enc)
        for request, value in ((_SET_BITRATE, int(bitrate_kbps * 1000)), (_SET_COMPLEXITY, _COMPLEXITY)):
            lib.opus_encoder_ctl(self._enc, request, ctypes.c_int(value))
        lib.opus_encoder_ctl(self._enc, _SET_DTX, ctypes.c_int(1 if dtx else 0))
        look = ctypes.c_int(0)
        lib.opus_encoder_ctl(self._enc, _GET_LOOKAHEAD, ctypes.byref(look))
        self.lookahead = look.value
        self.sample_rate_hz = int(sample_rate_hz)
        self.n_samples = 0
        self.n_samples_48k = 0
        self._up = _Resampler(self.sample_rate_hz, OPUS_RATE_HZ)
        self._pending = np.zeros(0, np.int16)
        self._out = ctypes.create_string_buffer(_MAX_PACKET)
        self._lib = lib

    def _frames(self, pcm: NDArray[np.int16]) -> list[bytes]:
        buf = np.ascontiguousarray(np.concatenate([self._pending, pcm]) if self._pending.size else pcm)
        n = buf.size // FRAME * FRAME
        packets = []
        # One address for the block, frames at offsets into it (numpy's per-array ctypes lookup is slow).
        base, encode, enc, out = buf.ctypes.data, self._lib.opus_encode, self._enc, self._out
        for k in range(0, n, FRAME):
            size = encode(enc, base + 2 * k, FRAME, out, _MAX_PACKET)
            if size < 0:
                raise RecordingError(f"libopus: encoding failed (error {size})")
            packets.append(ctypes.string_at(out, size))
        self._pending = buf[n:].copy()
        return packets

    def feed(self, block: NDArray[np.float32]) -> list[bytes]:
        """The packets the next samples complete."""
        self.n_samples += block.size
        x48 = self._up(block)
        self.n_samples_48k += x48.size
        return self._frames(_to_int16(x48))

    def finish(self) -> list[bytes]:
        """The last packets: the resampler's tail, then silence up to a whole frame past the look-ahead."""
        x48 = self._up(np.zeros(0, np.float32), last=True)
        self.n_samples_48k += x48.size
        packets = self._frames(_to_int16(x48))
        total = -(-(self.n_samples_48k + self.lookahead) // FRAME) * FRAME
        sent = self.n_samples_48k - self._pending.size  # encoded so far (before the look-ahead padding)
        pad = max(0, total - sent - self._pending.size)
        packets += self._frames(np.zeros(pad, np.int16))
        self._done()
        return packets


class OpusReceiver:
    """Packets decoded as the receive path decodes them, lost ones concealed, back on the recording's timeline.

    :meth:`feed` takes the next packets (None for a lost one) and gives the
    samples they complete; :meth:`finish` takes the last ones and the
    sender's lengths, and gives the rest, so that the output has as many
    samples as went in.
    """

    def __init__(self, sample_rate_hz: int, *, lookahead: int) -> None:
        lib = _libopus()
        err = ctypes.c_int(0)
        dec = lib.opus_decoder_create(OPUS_RATE_HZ, 1, ctypes.byref(err))
        if err.value != 0 or not dec:
            raise RecordingError(f"libopus: cannot create a decoder (error {err.value})")
        self._dec = ctypes.c_void_p(dec)
        self._done = weakref.finalize(self, lib.opus_decoder_destroy, dec)
        self._lib = lib
        self._skip = int(lookahead)  # decoded samples still to drop at the start
        self._down = _Resampler(OPUS_RATE_HZ, int(sample_rate_hz))
        self._n48 = 0  # decoded samples kept (after the look-ahead)
        self._given = 0  # output samples given
        self._held = np.zeros(0, np.float32)  # output held back until the length is known

    def _decode(self, packets: Sequence[bytes | None]) -> NDArray[np.int16]:
        out = np.zeros(len(packets) * FRAME, np.int16)
        base, decode, dec = out.ctypes.data, self._lib.opus_decode, self._dec
        for k, packet in enumerate(packets):
            if packet is None:
                got = decode(dec, None, 0, base + 2 * FRAME * k, FRAME, 0)
            else:
                got = decode(dec, packet, len(packet), base + 2 * FRAME * k, FRAME, 0)
            if got != FRAME:
                raise RecordingError(f"libopus: decoding a packet gave {got} samples, not {FRAME}")
        skip = min(self._skip, out.size)
        self._skip -= skip
        return out[skip:]

    def feed(self, packets: Sequence[bytes | None], *, hold: int = 0) -> NDArray[np.float32]:
        """The samples the next packets complete (keeping the last ``hold`` back)."""
        pcm = self._decode(packets)
        self._n48 += pcm.size
        y = self._down(webrtc_int16_to_float32(pcm))
        if self._held.size:
            y = np.concatenate([self._held, y])
        cut = max(0, y.size - hold)
        self._held = y[cut:].copy()
        self._given += cut
        return y[:cut]

    def finish(self, packets: Sequence[bytes | None], *, n_samples_48k: int, n_samples: int) -> NDArray[np.float32]:
        """The rest: the last packets, cut to the sender's length at 48 kHz, then to its length in samples."""
        pcm = self._decode(packets)
        keep = max(0, min(pcm.size, n_samples_48k - self._n48))
        self._n48 += keep
        y = self._down(webrtc_int16_to_float32(pcm[:keep]), last=True)
        y = np.concatenate([self._held, y]) if self._held.size else y
        self._held = np.zeros(0, np.float32)
        want = max(0, n_samples - self._given)
        out = np.zeros(want, np.float32)
        out[: min(want, y.size)] = y[:want]
        self._given += want
        self._done()
        return out


class OpusLink:
    """One sender and one receiver: blocks in, the same number of samples out, as heard after an Opus link."""

    def __init__(
        self, sample_rate_hz: int, *, bitrate_kbps: float, dtx: bool = False, loss: LossDraws | None = None
    ) -> None:
        self.sender = OpusSender(sample_rate_hz, bitrate_kbps=bitrate_kbps, dtx=dtx)
        self.receiver = OpusReceiver(sample_rate_hz, lookahead=self.sender.lookahead)
        self.loss = loss

    def _lost(self, packets: list[bytes]) -> list[bytes | None]:
        if self.loss is None:
            return list(packets)
        gone = self.loss.next(len(packets)).tolist()
        return [None if g else p for p, g in zip(packets, gone)]

    def feed(self, block: NDArray[np.float32]) -> NDArray[np.float32]:
        """The samples heard so far (a few frames behind the input)."""
        return self.receiver.feed(self._lost(self.sender.feed(block)), hold=HOLD_SAMPLES)

    def finish(self) -> NDArray[np.float32]:
        """The rest of the samples heard."""
        rest = self._lost(self.sender.finish())
        return self.receiver.finish(rest, n_samples_48k=self.sender.n_samples_48k, n_samples=self.sender.n_samples)


#: Output an :class:`OpusLink` holds back until the end is known (a resampler's overshoot is cut there).
HOLD_SAMPLES = 4 * FRAME


@dataclass(frozen=True, slots=True)
class Encoded:
    """A recording as Opus packets, with what it takes to put the decoded signal back on its timeline."""

    packets: tuple[bytes, ...]
    lookahead: int
    sample_rate_hz: int
    n_samples: int
    n_samples_48k: int


def encode(samples: NDArray[np.float32], sample_rate_hz: int, *, bitrate_kbps: float, dtx: bool = False) -> Encoded:
    """The samples encoded as a browser sends a voice (see the module notes): :class:`OpusSender`, one block."""
    sender = OpusSender(sample_rate_hz, bitrate_kbps=bitrate_kbps, dtx=dtx)
    packets = sender.feed(np.asarray(samples, np.float32)) + sender.finish()
    return Encoded(tuple(packets), sender.lookahead, sample_rate_hz, sender.n_samples, sender.n_samples_48k)


def decode(encoded: Encoded, lost: NDArray[np.bool_] | None = None) -> NDArray[np.float32]:
    """The packets as the receive path decodes them, the ``lost`` ones concealed; the recording's length and rate."""
    gone = lost.tolist() if lost is not None else [False] * len(encoded.packets)
    receiver = OpusReceiver(encoded.sample_rate_hz, lookahead=encoded.lookahead)
    packets = [None if g else p for p, g in zip(encoded.packets, gone)]
    return receiver.finish(packets, n_samples_48k=encoded.n_samples_48k, n_samples=encoded.n_samples)


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
    loss = LossDraws(loss_pct, burst=burst, seed=seed) if loss_pct else None
    link = OpusLink(sample_rate_hz, bitrate_kbps=bitrate_kbps, dtx=dtx, loss=loss)
    x = np.asarray(samples, np.float32)
    return np.concatenate([link.feed(x), link.finish()])
