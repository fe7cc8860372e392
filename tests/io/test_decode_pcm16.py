"""16-bit PCM read as int16 and scaled: the same samples as libsndfile's float conversion, to the bit (and a 16-bit
lossless capture by Chromium's rule)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf

from clock.core.analyser import GridBlock, downmix_to_mono
from clock.core.levels import levels
from clock.io.decode import iter_blocks, iter_level_blocks, webrtc_int16_to_float32
from clock.io.recording import read_recording
from clock.run.cache import TraceCache


@pytest.mark.parametrize("fmt", ["WAV", "FLAC"])
@pytest.mark.parametrize("channels", [1, 2, 6])
def test_pcm16_samples_are_libsndfiles_floats(tmp_path, rng, fmt, channels):
    x = rng.integers(-32768, 32768, (70000, channels)).astype(np.int16)
    x[:5] = -32768
    x[5:10] = 32767
    x[10:20] = 0
    path = tmp_path / f"x.{fmt.lower()}"
    sf.write(str(path), x, 44100, format=fmt, subtype="PCM_16")
    got = np.concatenate(list(iter_blocks(path, block_frames=4096)))
    with sf.SoundFile(str(path)) as f:
        assert f.subtype == "PCM_16"
        expected = downmix_to_mono(f.read(dtype="float32", always_2d=True))
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    if channels == 1:
        assert got[0] == -1.0 and got[5] == np.float32(32767 / 32768) and got[10] == 0.0


@pytest.mark.parametrize("channels", [1, 2, 4, 6])
def test_the_level_blocks_of_pcm16_are_its_exact_integers_where_the_down_mix_allows(tmp_path, rng, channels):
    x = rng.integers(-32768, 32768, (70000, channels)).astype(np.int16)
    x[:5] = -32768
    path = tmp_path / "x.wav"
    sf.write(str(path), x, 48000, subtype="PCM_16")
    blocks = list(iter_level_blocks(path, block_frames=30000))
    floats = np.concatenate(list(iter_blocks(path)))
    assert [isinstance(b, GridBlock) for b in blocks] == [channels != 6] * 3  # 5.1 leaves the grid
    got = np.concatenate([b.to_float32() if isinstance(b, GridBlock) else b for b in blocks])
    assert np.array_equal(got, floats)
    resampled = list(iter_level_blocks(path, block_frames=30000, context_rate_hz=44100))
    assert not any(isinstance(b, GridBlock) for b in resampled)  # resampling leaves it too


@pytest.mark.parametrize("cached", [False, True])
def test_a_16_bit_lossless_capture_is_read_by_chromiums_int16_rule(tmp_path, rng, cached):
    # docs/capture.js's "int16" format writes the analyser's floats as round(x * 32768) below zero and
    # round(x * 32767) above (inverting Chromium's rule); its log says so (capture "worklet", format "int16"), and
    # the tool reads the WAV back as those floats, so its levels are the page's. The same file without that line is
    # read as v / 32768, and a trace cache keeps the two apart.
    x = (rng.standard_normal(48000) * 4000).clip(-32768, 32767).astype(np.int16)
    x[:12000] = 0
    path = tmp_path / "cap.wav"
    sf.write(str(path), x, 48000, subtype="PCM_16")
    cache = TraceCache(tmp_path / "cache") if cached else None
    plain = read_recording(path, cache=cache, events=_log(tmp_path / "plain.jsonl", {}))
    start = {"capture": "worklet", "format": "int16", "frame": 0, "sample_rate_hz": 48000}
    capture = read_recording(path, cache=cache, events=_log(tmp_path / "cap.jsonl", start))
    floats = webrtc_int16_to_float32(x)
    assert np.array_equal(floats[x > 0], x[x > 0] * np.float32(1 / 32767))
    assert np.array_equal(capture.trace.level, levels(floats, 48000).level)
    assert np.array_equal(plain.trace.level, levels(x * np.float32(1 / 32768), 48000).level)
    assert not np.array_equal(capture.trace.level, plain.trace.level)


def _log(path, start):
    lines = [{"type": "recording.started", "t": 0.0, **start}, {"type": "terminal_response", "t": 0.5}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path
