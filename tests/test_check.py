"""``speechclock check``: the bundled recordings pass; broken ones fail, naming recording and time."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import soundfile as sf

from clock.core.check import clock_time

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"
WAV = "short-en-029-44k"


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A copy of the bundled recordings (the tests never write into the source tree)."""
    folder = tmp_path / "recordings"
    shutil.copytree(RECORDINGS, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return folder


def edit_wav(folder: Path, *, samples=None, insert_at_s: float | None = None, insert_s: float = 0.0) -> Path:
    """Rewrite the WAV fixture (and shift its log and labels after an insertion)."""
    path = folder / f"{WAV}.wav"
    x, rate = sf.read(str(path), dtype="float32")
    if samples is not None:
        x = samples(x, rate)
    if insert_at_s is not None:
        at = int(insert_at_s * rate)
        x = np.concatenate([x[:at], np.zeros(int(insert_s * rate), np.float32), x[at:]])
        log = folder / f"{WAV}.events.jsonl"
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        t0 = lines[0]["t_ms"]
        for e in lines[1:]:
            if e["t_ms"] - t0 > insert_at_s * 1000:
                e["t_ms"] += insert_s * 1000
        log.write_text("".join(json.dumps(e) + "\n" for e in lines))
        labels = folder / f"{WAV}.labels.txt"
        rows = [line.split("\t") for line in labels.read_text().splitlines()]
        labels.write_text(
            "".join(
                f"{float(a) + (insert_s if float(a) > insert_at_s else 0)}\t"
                f"{float(b) + (insert_s if float(b) > insert_at_s else 0)}\t{text}\n"
                for a, b, text in rows
            )
        )
    sf.write(str(path), x, rate, subtype="PCM_16")
    return path


def test_bundled_recordings_pass(cli):
    result = cli("check", RECORDINGS)
    assert result.exit_code == 0, result.stdout
    assert re.search(r"\d+ checks on 4 recordings: 0 failed", result.stdout)


def test_a_26_second_pause_fails_the_gap_check(cli, corpus):
    # The fixture's second beat pauses 1.6 s after "On the left is the fort."; make it 2.6 s.
    labels = [line.split("\t") for line in (corpus / f"{WAV}.labels.txt").read_text().splitlines()]
    fort = next(row for row in labels if "the fort" in row[2])
    pause_mid = float(fort[1]) + 0.8
    edit_wav(corpus, insert_at_s=pause_mid, insert_s=1.0)
    result = cli("check", corpus)
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if ": gap: " in line]
    assert len(lines) == 1
    m = re.fullmatch(rf"{WAV}\.wav:(\d\d):(\d\d\.\d\d\d): gap: gap (\d\.\d+) s vs .* = 2\.300 s", lines[0])
    assert m, lines[0]
    at = int(m[1]) * 60 + float(m[2])
    assert float(fort[1]) < at < float(fort[1]) + 0.1  # the last word of "the fort", as the clock saw it
    assert 2.5 < float(m[3]) < 2.6


def test_speech_below_the_floor_fails_the_speech_level_check(cli, corpus):
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.25))
    result = cli("check", corpus)
    assert result.exit_code == 1
    line = next(line for line in result.stdout.splitlines() if ": speech-level: " in line)
    assert re.match(
        rf"{WAV}\.wav:\d\d:\d\d\.\d\d\d: speech-level: speech p5 0\.00\d+ vs floor \+ 3 dB = 0\.00424", line
    )


def test_comfort_noise_above_the_floor_fails_the_silence_check(cli, corpus, rng):
    def comfort_noise(x, rate):
        noise = (rng.standard_normal(x.size) * 10 ** (-44 / 20)).astype(np.float32)  # 0.0063 RMS
        return np.where(x == 0, noise, x)

    edit_wav(corpus, samples=comfort_noise)
    result = cli("check", corpus)
    assert result.exit_code == 1
    line = next(line for line in result.stdout.splitlines() if ": silence-ceiling: " in line)
    assert re.match(rf"{WAV}\.wav:\d\d:\d\d\.\d\d\d: silence-ceiling: silence at 0\.0\d+ vs floor 0\.003", line)


def test_junit_has_a_testcase_per_recording_and_check(cli, corpus, tmp_path):
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.25))
    out = tmp_path / "junit.xml"
    result = cli("check", corpus, "--junit", out)
    assert result.exit_code == 1
    suite = ET.parse(out).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert len({(c.get("classname"), c.get("name")) for c in cases}) == len(cases)
    assert {c.get("classname") for c in cases} == {
        p.name for p in corpus.iterdir() if p.suffix in (".wav", ".webm", ".ogg")
    }
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures")) == len(failed) >= 1
    assert all(c.get("classname") == f"{WAV}.wav" for c in failed)


def test_json_format(cli):
    data = json.loads(cli("check", RECORDINGS, "--format", "json").stdout)
    assert data["passed"] is True and data["schema"] == 1
    assert {r["check"] for r in data["results"]} >= {"silence-ceiling", "speech-level", "gap", "premature"}


def test_update_baseline_rewrites_only_the_baseline(cli, corpus):
    before = digest(corpus)
    (corpus / "baseline.json").unlink()
    result = cli("check", corpus, "--update-baseline")
    assert result.exit_code == 0
    after = digest(corpus)
    assert after == before  # the same baseline again, and no audio or log touched
    assert not [p for p in corpus.iterdir() if p.name.startswith(".")]  # no temporary left


def test_baseline_drift_fails(cli, corpus):
    path = corpus / "baseline.json"
    base = json.loads(path.read_text())
    base["recordings"][f"{WAV}.wav"]["onsets_s"][1] += 0.2
    path.write_text(json.dumps(base))
    result = cli("check", corpus)
    assert result.exit_code == 1
    assert re.search(rf"^{WAV}\.wav:00:11\.\d+: baseline: beat 1 onset", result.stdout, re.M)


def test_expected_beat_count_comes_from_the_config(cli, corpus):
    cfg = corpus / "speechclock.toml"
    cfg.write_text(cfg.read_text().replace("beats = 2", "beats = 4"))
    result = cli("check", corpus)
    assert result.exit_code == 1
    assert f"{WAV}.wav:--:--.---: beat-count: 2 beats vs 4 expected" in result.stdout


@pytest.mark.parametrize(
    "text,message",
    [
        ("[thresholds]\nfloor = 'high'\n", "key 'thresholds.floor': must be float or int"),
        ("[thresholds]\nflor = 0.1\n", "key 'thresholds.flor': unknown key"),
        ("[thresholds]\nquiet_s = -1\n", "quiet_s must be a positive number"),
        ("[thresholds]\nfft_size = 1000\n", "fft_size must be a power of two"),
        ("[margins]\nquiet_margin_s = -0.1\n", "[margins] quiet_margin_s must be"),
        ("[recordings.'a.wav']\nbeats = 'three'\n", "key 'recordings.a.wav.beats': must be int"),
        ("[agreement]\nrecorder_tolerance = -1\n", "key 'agreement.recorder_tolerance': must be >= 0"),
        ("[agreement]\nalign_log = 'yes'\n", "key 'agreement.align_log': must be bool"),
        ("[agreement]\ntolerance = 1\n", "key 'agreement.tolerance': unknown key"),
        ("[thresholds\n", "not valid TOML"),
        ("colour = 1\n", "unknown table or key 'colour'"),
    ],
)
def test_malformed_config_exits_2_naming_file_and_key(cli, corpus, text, message):
    (corpus / "speechclock.toml").write_text(text)
    result = cli("check", corpus)
    assert result.exit_code == 2
    assert "speechclock.toml" in result.stderr and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_recording_exits_2(cli, corpus):
    (corpus / "broken.wav").write_bytes(b"RIFF\0\0\0\0WAVEjunk")
    result = cli("check", corpus)
    assert result.exit_code == 2 and "broken.wav" in result.stderr


def test_clock_time_format():
    assert clock_time(75.5) == "01:15.500" and clock_time(0.0004) == "00:00.000" and clock_time(None) == "--:--.---"
