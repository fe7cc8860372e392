"""The command line: output formats, atomic writes, errors, determinism."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from audiofiles import tone_with_silence, write_soundfile

from clock import __version__
from clock.cli import main
from clock.core.levels import levels
from clock.core.ticks import Ticks
from clock.io.decode import iter_blocks


@pytest.fixture
def rec(tmp_path):
    return write_soundfile(tmp_path / "rec.wav", tone_with_silence(48000), 48000, "PCM_16")


def test_every_command_is_registered_and_has_help(cli):
    assert set(main.commands) >= {"levels", "info"}
    for name in main.commands:
        result = cli(name, "--help")
        assert result.exit_code == 0 and "Usage:" in result.stdout


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0 and __version__ in result.stdout


def test_levels_csv_columns_and_values_match_the_library(cli, rec):
    result = cli("levels", rec)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "tick,t_s,frame,level"
    rows = [line.split(",") for line in lines[1:]]
    trace = levels(np.concatenate(list(iter_blocks(rec))), 48000)
    assert [int(r[0]) for r in rows] == list(range(trace.n_ticks))
    assert [int(r[2]) for r in rows] == trace.frames.tolist()
    assert [float(r[3]) for r in rows] == trace.level.tolist()
    # A tick's time is the frame its level was read at over the rate: ticks 1 and 2 of 1/60 s read
    # at the first render-quantum boundaries at or after frames 800 and 1600.
    assert [float(r[1]) for r in rows[:3]] == [0.0, 896 / 48000, 1664 / 48000]


def test_levels_tick_options(cli, rec):
    out = cli("levels", rec, "--tick", "1", "--align", "floor").stdout.splitlines()
    assert out[1:4] == ["0,0.0,0,0.0", f"1,1.0,48000,{out[2].split(',')[3]}", out[3]]
    assert len(out) == 1 + 3  # ticks at 0, 1 and 2 s in a 2 s file
    frames = cli("levels", rec, "--tick-frames", "4800").stdout.splitlines()
    assert [int(r.split(",")[2]) for r in frames[1:4]] == [0, 4864, 9600]
    assert cli("levels", rec, "--tick", "1", "--tick-frames", "10").exit_code == 2


def test_levels_json_and_npz_hold_the_same_columns(cli, rec, tmp_path):
    as_json = json.loads(cli("levels", rec, "--format", "json").stdout)
    assert as_json["schema"] == 1 and as_json["params"]["tick_s"] == "1/60"
    out = tmp_path / "levels.npz"
    assert cli("levels", rec, "--format", "npz", "-o", out).exit_code == 0
    with np.load(out) as npz:
        assert npz["level"].tolist() == as_json["level"]
        assert npz["frame"].tolist() == as_json["frame"]
        assert json.loads(npz["params"].item())["metric"] == "rms"


def test_max_db_silence_is_null_in_json_and_minus_inf_in_csv(cli, rec):
    as_json = json.loads(cli("levels", rec, "--metric", "max-db", "--format", "json").stdout)
    assert as_json["level"][0] is None
    csv = cli("levels", rec, "--metric", "max-db").stdout.splitlines()
    assert csv[1].endswith(",-inf")


def test_output_is_byte_identical_across_runs(cli, rec, tmp_path):
    for fmt in ("csv", "json", "npz"):
        a, b = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
        cli("levels", rec, "--format", fmt, "-o", a)
        cli("levels", rec, "--format", fmt, "-o", b)
        assert a.read_bytes() == b.read_bytes()


def test_npz_members_have_fixed_timestamps(cli, rec, tmp_path):
    out = tmp_path / "x.npz"
    cli("levels", rec, "--format", "npz", "-o", out)
    with zipfile.ZipFile(io.BytesIO(out.read_bytes())) as zf:
        assert {m.date_time for m in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_output_file_is_written_atomically_and_leaves_no_temporaries(cli, rec, tmp_path):
    out = tmp_path / "out" / "levels.csv"
    out.parent.mkdir()
    out.write_text("previous\n")
    assert cli("levels", rec, "-o", out).exit_code == 0
    assert out.read_text().startswith("tick,t_s,frame,level\n")
    assert [p.name for p in out.parent.iterdir()] == ["levels.csv"]


def test_failed_run_keeps_the_previous_output(cli, tmp_path):
    out = tmp_path / "levels.csv"
    out.write_text("previous\n")
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF....WAVEfmt nonsense")
    result = cli("levels", bad, "-o", out)
    assert result.exit_code == 2
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.wav", "levels.csv"]


def test_refuses_to_overwrite_the_recording(cli, rec):
    before = rec.read_bytes()
    result = cli("levels", rec, "-o", rec)
    assert result.exit_code == 2
    assert result.stderr == (
        f"speechclock: error: {rec}: is the recording this run reads; refusing to write -o there\n"
    )
    assert rec.read_bytes() == before


def test_info_reports_the_recording(cli, rec):
    result = cli("info", rec, "--format", "json")
    data = json.loads(result.stdout)
    assert data["container"] == "WAV" and data["codec"] == "PCM_16"
    assert data["sample_rate_hz"] == 48000 and data["n_channels"] == 1
    assert data["duration_s"] == 2.0
    assert data["exact_zero_share"] == pytest.approx(0.5, abs=0.01)
    table = cli("info", rec).stdout
    assert "exact_zero_share" in table and "duration_s" in table


@pytest.mark.parametrize(
    "make,args,message",
    [
        (lambda d: d / "missing.wav", (), "missing.wav: no such file"),
        (lambda d: d, (), "is a directory"),
        (lambda d: (d / "t.txt").write_text("hello\n" * 50) and d / "t.txt", (), "t.txt: not a recognised audio file"),
        (lambda d: (d / "e.wav").write_bytes(b"") or d / "e.wav", (), "e.wav: file is empty"),
    ],
    ids=["missing", "directory", "not-audio", "empty"],
)
def test_bad_recordings_give_one_line_and_exit_2(cli, tmp_path, make, args, message):
    path = make(tmp_path)
    for command in ("levels", "info"):
        result = cli(command, path, *args)
        assert result.exit_code == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def test_nan_samples_give_one_line(cli, tmp_path):
    x = np.zeros(8000, np.float32)
    x[4000] = np.nan
    path = write_soundfile(tmp_path / "nan.wav", x, 8000, "FLOAT")
    result = cli("levels", path)
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"speechclock: error: {path}: non-finite sample (NaN or infinity) at frame 4000 (0.500 s)"
    )


@pytest.mark.parametrize(
    "args,option",
    [
        (("--fft-size", "1000"), "--fft-size"),
        (("--tick", "0"), "--tick"),
        (("--tick", "fast"), "--tick"),
        (("--tick-frames", "0"), "--tick-frames"),
        (("--metric", "loud"), "--metric"),
        (("--format", "xml"), "--format"),
        (("--context-rate", "-5"), "--context-rate"),
    ],
)
def test_bad_option_values_exit_2_naming_the_option(cli, rec, args, option):
    result = cli("levels", rec, *args)
    assert result.exit_code == 2
    assert option in result.stderr and "Traceback" not in result.stderr


def test_missing_output_folder_is_an_error(cli, rec, tmp_path):
    result = cli("levels", rec, "-o", tmp_path / "nowhere" / "x.csv")
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_python_dash_m_clock_runs_the_cli(rec):
    done = subprocess.run(
        [sys.executable, "-m", "clock", "levels", str(rec), "--tick", "1"], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[0] == "tick,t_s,frame,level"


def test_floor_alignment_matches_the_library(cli, rec):
    rows = cli("levels", rec, "--align", "floor").stdout.splitlines()[1:]
    expected = Ticks(align="floor").frames(np.arange(len(rows)), 48000).tolist()
    assert [int(r.split(",")[2]) for r in rows] == expected
