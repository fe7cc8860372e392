"""Opus as the browser decodes it: libopus, 16-bit, then Chromium's int16 -> float rule.

The fixture is made here: a synthetic voice encoded with libopus (through
PyAV) at a voice bitrate with ``application=voip``, so that its packets are
SILK and hybrid, as speech from a realtime voice model is (the TOC byte of
every packet is counted to prove it).
"""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest
import soundfile as sf
from signals import voice

from clock.core.levels import levels
from clock.io.decode import iter_blocks, probe, webrtc_int16_to_float32


def encode_opus(path, samples: np.ndarray, *, bitrate: int, application: str, fmt: str) -> None:
    """Mono float samples at 48 kHz to Opus with libopus (PyAV), in an Ogg or WebM container."""
    with av.open(str(path), mode="w", format=fmt) as out:
        stream = out.add_stream("libopus", rate=48000, layout="mono")
        stream.bit_rate = bitrate
        stream.codec_context.options = {"application": application}
        pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype(np.int16)
        for start in range(0, pcm.size, 960):
            chunk = pcm[start : start + 960]
            frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = 48000
            frame.pts = start
            frame.time_base = Fraction(1, 48000)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def packet_modes(path) -> dict[str, int]:
    """Packets by coding mode, from each packet's TOC byte (RFC 6716 section 3.1)."""
    counts = {"silk": 0, "hybrid": 0, "celt": 0}
    with av.open(str(path)) as container:
        for packet in container.demux(container.streams.audio[0]):
            if packet.size == 0:
                continue
            config = bytes(packet)[0] >> 3
            counts["silk" if config < 12 else "hybrid" if config < 16 else "celt"] += 1
    return counts


def libopus_int16(path) -> np.ndarray:
    """An independent libopus decode to 16-bit (PyAV's libopus decoder, no clock code)."""
    out = []
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        ctx = av.CodecContext.create("libopus", "r")
        ctx.extradata = stream.codec_context.extradata
        ctx.sample_rate = 48000
        ctx.layout = stream.codec_context.layout
        for packet in container.demux(stream):
            for frame in ctx.decode(packet):
                assert frame.format.name == "s16"
                out.append(frame.to_ndarray().reshape(-1))
    return np.concatenate(out)


def native_decode(path) -> np.ndarray:
    """FFmpeg's own Opus decoder (what the tool used before), float."""
    with av.open(str(path)) as container:
        return np.concatenate([f.to_ndarray()[0] for f in container.decode(container.streams.audio[0])])


def chromium_int16_to_float(v: int) -> np.float32:
    """FixedSampleTypeTraits<int16_t>::ToFloat, one value at a time in float32."""
    x = np.float32(v)
    return x * (np.float32(1.0) / np.float32(32768.0)) if v < 0 else x * (np.float32(1.0) / np.float32(32767.0))


@pytest.fixture(scope="module")
def hybrid_ogg(tmp_path_factory):
    path = tmp_path_factory.mktemp("opus") / "voice.ogg"
    encode_opus(path, voice(), bitrate=24000, application="voip", fmt="ogg")
    return path


def test_chromium_int16_rule_keeps_zero_and_scales_each_sign_separately():
    v = np.array([0, 1, -1, 32767, -32768, 12345, -12345, 16384, -16384], np.int16)
    got = webrtc_int16_to_float32(v)
    assert got.dtype == np.float32
    assert [float(x) for x in got] == [float(chromium_int16_to_float(int(i))) for i in v]
    assert got[0] == 0.0 and got[3] == 1.0 and got[4] == -1.0
    assert got[1] != np.float32(1 / 32768)  # not v / 32768 above zero


def test_the_fixture_is_silk_and_hybrid_as_voice_bitrates_code_speech(hybrid_ogg):
    modes = packet_modes(hybrid_ogg)
    n = sum(modes.values())
    assert n > 200
    assert modes["silk"] + modes["hybrid"] >= 0.9 * n, modes


def test_opus_decodes_as_libopus_16_bit_then_chromiums_rule(hybrid_ogg):
    info = probe(hybrid_ogg)
    assert info.codec == "opus" and info.backend == "pyav"
    got = np.concatenate(list(iter_blocks(info)))
    v = libopus_int16(hybrid_ogg)
    assert got.size == v.size
    want = np.array([chromium_int16_to_float(int(i)) for i in v], np.float32)
    np.testing.assert_array_equal(got, want)
    # Digital silence between syllables stays exactly zero.
    assert np.count_nonzero(got == 0.0) > 0.2 * got.size


def test_opus_levels_agree_with_libsndfiles_libopus_not_with_ffmpegs_decoder(hybrid_ogg):
    # libsndfile decodes Ogg/Opus with libopus in float: our 16-bit levels are
    # within the 16-bit rounding of it, while FFmpeg's own decoder differs
    # by far more on SILK and hybrid packets.
    ours = levels(np.concatenate(list(iter_blocks(hybrid_ogg))), 48000)
    reference, rate = sf.read(str(hybrid_ogg), dtype="float32")
    ref = levels(reference, rate)
    native = levels(native_decode(hybrid_ogg), 48000)
    n = min(ours.n_ticks, ref.n_ticks, native.n_ticks)
    vs_libopus = np.abs(ours.level[:n] - ref.level[:n])
    vs_native = np.abs(native.level[:n] - ref.level[:n])
    assert vs_libopus.max() < 2e-5  # half a 16-bit step is 1.5e-5
    assert vs_native.max() > 10 * vs_libopus.max()


def test_webm_opus_takes_the_libopus_path_too(tmp_path):
    path = tmp_path / "voice.webm"
    encode_opus(path, voice(seed=3, syllables=6), bitrate=32000, application="voip", fmt="webm")
    got = np.concatenate(list(iter_blocks(path)))
    want = webrtc_int16_to_float32(libopus_int16(path))
    np.testing.assert_array_equal(got, want)


def test_decoding_ahead_keeps_order_raises_the_threads_error_and_stops_with_its_consumer():
    import threading

    from clock.io import decode

    def numbers(n, fail_at=None):
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"bad packet {i}")
            yield i

    assert list(decode._ahead(numbers, 50)) == list(range(50))
    with pytest.raises(ValueError, match="bad packet 7"):
        list(decode._ahead(numbers, 50, 7))
    ahead = decode._ahead(numbers, 10**9)
    assert next(ahead) == 0
    ahead.close()  # the consumer stops early: the worker stops too
    assert not any(t.name == "speechclock-decode" for t in threading.enumerate())


def test_a_long_opus_file_decodes_in_bounded_batches(tmp_path):
    path = tmp_path / "long.ogg"
    encode_opus(path, np.tile(voice(seed=5, syllables=20), 4), bitrate=24000, application="voip", fmt="ogg")
    blocks = list(iter_blocks(path, block_frames=8192))
    assert max(b.size for b in blocks) < 8192 + 5760  # at most one Opus packet (120 ms at most) past its size
    np.testing.assert_array_equal(np.concatenate(blocks), webrtc_int16_to_float32(libopus_int16(path)))
