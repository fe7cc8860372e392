"""Decoding every supported format from files the tests write (under tmp_path)."""

from __future__ import annotations

import struct
import wave

import numpy as np
import pytest
import soundfile as sf
from audiofiles import tone_with_silence, write_pyav, write_soundfile

from clock.core.levels import levels, summarize
from clock.errors import InvalidParameterError, InvalidSignalError, RecordingError, SpeechClockWarning
from clock.io.decode import iter_blocks, probe


def decode(path, **kw) -> np.ndarray:
    return np.concatenate(list(iter_blocks(path, **kw)))


# --- integer PCM scaling -----------------------------------------------------

INT_VALUES = {
    "PCM_16": (np.array([0, 1, -1, 32767, -32768, 1234, -4321], np.int16), 16),
    "PCM_24": (np.array([0, 1, -1, 2**23 - 1, -(2**23), 123456], np.int32), 24),
    "PCM_32": (np.array([0, 1 << 8, -(1 << 8), 2**31 - 256, -(2**31), 123456 << 8], np.int32), 32),
}


@pytest.mark.parametrize("subtype", sorted(INT_VALUES))
def test_integer_wav_scales_by_two_to_the_bits_minus_one(tmp_path, subtype):
    values, bits = INT_VALUES[subtype]
    path = tmp_path / "x.wav"
    if subtype == "PCM_24":
        sf.write(str(path), values.astype(np.int32) << 8, 8000, subtype=subtype)
    else:
        sf.write(str(path), values, 8000, subtype=subtype)
    expected = (values.astype(np.float64) / 2 ** (bits - 1)).astype(np.float32)
    np.testing.assert_array_equal(decode(path), expected)


def test_unsigned_8bit_wav_is_centred_and_scaled(tmp_path):
    path = tmp_path / "u8.wav"
    raw = bytes([128, 129, 127, 255, 0])
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(8000)
        w.writeframes(raw)
    np.testing.assert_array_equal(decode(path), (np.array(list(raw), np.float64) - 128) / 128)


@pytest.mark.parametrize("subtype", ["FLOAT", "DOUBLE"])
def test_float_wav_passes_through(tmp_path, subtype, rng):
    x = rng.uniform(-1, 1, 1000).astype(np.float32)
    path = write_soundfile(tmp_path / "f.wav", x, 44100, subtype)
    np.testing.assert_array_equal(decode(path), x)


def test_flac_is_lossless(tmp_path, rng):
    v = rng.integers(-32768, 32767, 5000).astype(np.int16)
    path = write_soundfile(tmp_path / "x.flac", v, 22050, "PCM_16")
    np.testing.assert_array_equal(decode(path), v / 32768)
    assert probe(path).container == "FLAC"


def test_flac_without_length_in_its_header_still_decodes(tmp_path, rng):
    # Streamed TTS FLAC has total_samples = 0 in STREAMINFO; libsndfile cannot
    # stream it, so the decoder falls back to FFmpeg.
    v = rng.integers(-32768, 32767, 30000).astype(np.int16)
    path = write_soundfile(tmp_path / "s.flac", v, 24000, "PCM_16")
    data = bytearray(path.read_bytes())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0  # first block is STREAMINFO
    info_at = 8
    # total samples: low 4 bits of byte 13 and bytes 14..17 of STREAMINFO
    data[info_at + 13] &= 0xF0
    data[info_at + 14 : info_at + 18] = b"\0\0\0\0"
    path.write_bytes(bytes(data))
    head = probe(path)
    assert head.n_frames is None and head.backend == "pyav"
    np.testing.assert_array_equal(decode(path), v / 32768)


# --- lossy codecs and containers ---------------------------------------------

LOSSY = {
    "ogg-vorbis": ("x.ogg", lambda p, x, r: write_soundfile(p, x, r, "VORBIS"), "OGG"),
    "ogg-opus": ("x.opus.ogg", lambda p, x, r: write_soundfile(p, x, r, "OPUS"), "ogg"),
    "mp3": ("x.mp3", lambda p, x, r: write_soundfile(p, x, r, "MPEG_LAYER_III"), "mp3"),
    "webm-opus": ("x.webm", lambda p, x, r: write_pyav(p, x, r, "libopus", fmt="webm"), "matroska,webm"),
    "mkv-opus": ("x.mkv", lambda p, x, r: write_pyav(p, x, r, "libopus", fmt="matroska"), "matroska,webm"),
    "mp4-aac": ("x.mp4", lambda p, x, r: write_pyav(p, x, r, "aac", fmt="mp4"), "mov,mp4,m4a,3gp,3g2,mj2"),
}


# Level tolerance per codec at its default bitrate (AAC's is the coarsest).
LOSSY_RTOL = {"mp4-aac": 0.15}


@pytest.mark.parametrize("kind", sorted(LOSSY))
def test_lossy_formats_decode_with_their_level_and_length(tmp_path, kind):
    name, write, container = LOSSY[kind]
    rate = 48000
    x = tone_with_silence(rate)
    path = write(tmp_path / name, x, rate)
    head = probe(path)
    assert head.container == container and head.sample_rate_hz == rate and head.n_channels == 1
    y = decode(head)
    assert abs(y.size - x.size) <= 2048  # codec priming and padding
    trace = levels(y, rate)
    tone = trace.level[(trace.frames > 0.1 * rate) & (trace.frames < 0.45 * rate)]
    np.testing.assert_allclose(tone, 0.3 / np.sqrt(2), rtol=LOSSY_RTOL.get(kind, 0.05))


@pytest.mark.parametrize("kind", ["webm-opus", "ogg-opus"])
def test_opus_round_trip_keeps_digital_silence_at_exact_zero(tmp_path, kind):
    # After the decoder's decay tail (well under 0.6 s), digital silence
    # decodes to exact zeros, as the clock's floor logic assumes. (Ogg Opus is
    # decoded by FFmpeg: libsndfile's libopus path leaves a 1e-30 offset.)
    name, write, _ = LOSSY[kind]
    rate = 48000
    tone = tone_with_silence(rate)[: rate // 2]
    x = np.concatenate([tone, np.zeros(2 * rate, np.float32), tone])
    y = decode(write(tmp_path / name, x, rate))
    quiet = y[int(1.1 * rate) : int(2.45 * rate)]
    assert quiet.size > rate and np.all(quiet == 0.0)


def test_a_hole_in_a_webm_stream_is_filled_with_silence(tmp_path):
    import av

    rate = 48000
    tone = tone_with_silence(rate)[: rate // 2]
    path = tmp_path / "hole.webm"
    with av.open(str(path), mode="w", format="webm") as out:
        stream = out.add_stream("libopus", rate=rate, layout="mono")
        for start in range(0, tone.size, 960):
            frame = av.AudioFrame.from_ndarray(tone[None, start : start + 960], format="flt", layout="mono")
            frame.sample_rate = rate
            frame.pts = start + (rate if start >= rate // 4 else 0)  # one second missing after 0.25 s
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    with pytest.warns(SpeechClockWarning, match=r"hole.webm: 1.0\d\d s missing from the stream at 0.2\d\d s"):
        y = decode(path)
    assert abs(y.size - (tone.size + rate)) <= 960
    gap = y[int(0.3 * rate) : int(1.2 * rate)]
    assert np.all(gap == 0.0)


def test_stereo_is_downmixed_by_the_speakers_rule(tmp_path, rng):
    v = rng.integers(-32768, 32767, (4000, 2)).astype(np.int16)
    path = write_soundfile(tmp_path / "st.wav", v, 44100, "PCM_16")
    x = v.astype(np.float64) / 32768
    np.testing.assert_array_equal(decode(path), ((x[:, 0] + x[:, 1]) / 2).astype(np.float32))
    assert probe(path).n_channels == 2


def test_stereo_webm_is_downmixed(tmp_path):
    rate = 48000
    left = tone_with_silence(rate)
    path = write_pyav(tmp_path / "st.webm", np.stack([left, np.zeros_like(left)], axis=1), rate, "libopus", fmt="webm")
    trace = levels(decode(path), rate)
    tone = trace.level[(trace.frames > 0.1 * rate) & (trace.frames < 0.45 * rate)]
    np.testing.assert_allclose(tone, 0.15 / np.sqrt(2), rtol=0.05)  # half of the left channel


def test_six_channels_follow_the_five_one_rule(tmp_path, rng):
    v = rng.uniform(-0.2, 0.2, (1000, 6)).astype(np.float32)
    path = write_soundfile(tmp_path / "51.wav", v, 48000, "FLOAT")
    expected = np.sqrt(0.5) * (v[:, 0] + v[:, 1]) + v[:, 2] + 0.5 * (v[:, 4] + v[:, 5])
    np.testing.assert_allclose(decode(path), expected, atol=1e-6)


@pytest.mark.parametrize("rate", [8000, 11025, 16000, 22050, 24000, 44100, 48000, 96000])
def test_any_sample_rate(tmp_path, rate):
    path = write_soundfile(tmp_path / "r.wav", np.zeros(rate // 10, np.int16), rate, "PCM_16")
    assert probe(path).sample_rate_hz == rate
    assert decode(path).size == rate // 10


def test_blocks_are_bounded_and_cover_the_file(tmp_path, rng):
    v = rng.integers(-100, 100, 100_000).astype(np.int16)
    path = write_soundfile(tmp_path / "b.wav", v, 48000, "PCM_16")
    blocks = list(iter_blocks(path, block_frames=4096))
    assert max(b.size for b in blocks) == 4096
    np.testing.assert_array_equal(np.concatenate(blocks), v / 32768)


def test_context_rate_resamples(tmp_path):
    x = tone_with_silence(48000)
    path = write_soundfile(tmp_path / "t.wav", x, 48000, "FLOAT")
    y = decode(path, context_rate_hz=44100)
    assert abs(y.size - x.size * 44100 / 48000) <= 2
    # The same tone made at 44.1 kHz reads the same levels, to resampler accuracy.
    direct = tone_with_silence(44100)
    got, want = levels(y, 44100), levels(direct, 44100)
    n = min(got.n_ticks, want.n_ticks)
    np.testing.assert_allclose(got.level[5 : n - 5], want.level[5 : n - 5], atol=2e-3)


def test_context_rate_out_of_range(tmp_path):
    path = write_soundfile(tmp_path / "t.wav", np.zeros(100, np.int16), 48000, "PCM_16")
    with pytest.raises(InvalidParameterError, match="context rate"):
        decode(path, context_rate_hz=100)


# --- bad input ---------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(RecordingError, match="nope.wav: no such file"):
        probe(tmp_path / "nope.wav")


def test_directory(tmp_path):
    with pytest.raises(RecordingError, match="is a directory"):
        probe(tmp_path)


def test_empty_file(tmp_path):
    (tmp_path / "e.wav").write_bytes(b"")
    with pytest.raises(RecordingError, match="e.wav: file is empty"):
        probe(tmp_path / "e.wav")


def test_not_audio(tmp_path):
    (tmp_path / "notes.txt").write_text("these are not the samples you are looking for\n" * 20)
    with pytest.raises(RecordingError, match="notes.txt: not a recognised audio file"):
        probe(tmp_path / "notes.txt")


def test_header_only_wav_holds_no_frames(tmp_path):
    path = write_soundfile(tmp_path / "h.wav", np.zeros(0, np.int16), 8000, "PCM_16")
    with pytest.raises(RecordingError, match="no audio frames"):
        probe(path)


def test_truncated_wav(tmp_path):
    path = write_soundfile(tmp_path / "t.wav", np.ones(10000, np.int16), 8000, "PCM_16")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordingError, match="t.wav: truncated"):
        decode(path)


def test_truncated_header(tmp_path):
    path = write_soundfile(tmp_path / "t.wav", np.ones(100, np.int16), 8000, "PCM_16")
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(RecordingError, match="t.wav"):
        decode(path)


def test_unsupported_codec(tmp_path):
    # A WAV whose format tag (0x1234) neither libsndfile nor FFmpeg decodes.
    fmt = struct.pack("<HHIIHH", 0x1234, 1, 8000, 16000, 2, 16)
    body = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", 200) + bytes(200)
    (tmp_path / "c.wav").write_bytes(b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WAVE" + body)
    with pytest.raises(RecordingError, match="c.wav"):
        decode(tmp_path / "c.wav")


def test_stream_with_no_audio(tmp_path):
    import av

    path = tmp_path / "v.mkv"
    with av.open(str(path), "w", format="matroska") as out:
        stream = out.add_stream("mjpeg", rate=1)
        stream.width, stream.height, stream.pix_fmt = 16, 16, "yuvj420p"
        frame = av.VideoFrame.from_ndarray(np.zeros((16, 16, 3), np.uint8), format="rgb24")
        for packet in stream.encode(frame.reformat(format="yuvj420p")):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    with pytest.raises(RecordingError, match="v.mkv: no audio stream"):
        probe(path)


def test_nan_samples_name_the_file_and_time(tmp_path):
    x = np.zeros(16000, np.float32)
    x[12000] = np.nan
    path = write_soundfile(tmp_path / "n.wav", x, 8000, "FLOAT")
    with pytest.raises(InvalidSignalError, match=r"n.wav: non-finite sample .* at frame 12000 \(1.500 s\)"):
        decode(path)


def test_recordings_are_opened_read_only(tmp_path):
    path = write_soundfile(tmp_path / "ro.wav", np.ones(1000, np.int16), 8000, "PCM_16")
    path.chmod(0o444)
    before = path.read_bytes()
    summarize(iter_blocks(path), 8000)
    assert path.read_bytes() == before


# --- the shared real-speech corpus (skipped when absent) ---------------------


def test_corpus_streamed_flac_equals_its_fixed_header_copy(corpus):
    folder = corpus / "openai-api-records"
    streamed = decode(folder / "tts_OutputFormatWorks_flac.flac")
    fixed = decode(folder / "tts_OutputFormatWorks_flac_fixedheader.flac")
    np.testing.assert_array_equal(streamed, fixed)


@pytest.mark.parametrize(
    "name,zero_share",
    [
        ("openai-tts/audio_meeting.wav", 0.10),
        ("openai-api-records/tts_OutputFormatWorks_pcm.wav", 0.20),
        ("openai-api-records/tts_OutputFormatWorks_mp3.mp3", 0.28),
        ("human-read/sonnet001.wav", 0.00),
    ],
)
def test_corpus_exact_zero_share_matches_the_manifest(corpus, name, zero_share):
    head = probe(corpus / name)
    s = summarize(iter_blocks(head), head.sample_rate_hz)
    assert s.exact_zero_share == pytest.approx(zero_share, abs=0.006)
