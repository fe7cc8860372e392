"""Hostile and malformed input: one line naming the file and the problem, exit 2, bounded time and memory.

Every file here is generated in tmp_path: timestamp jumps, damaged MP3, nested and
huge-number event logs, deep TOML, FIFOs, devices, names with ``$`` and control
characters.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from xml.etree import ElementTree as ET

import av
import numpy as np
import pytest
import soundfile as sf
from audiofiles import tone_with_silence, write_soundfile
from conftest import copy_short_recordings
from sessions import Session

from clock.errors import RecordingError, SpeechClockWarning
from clock.io.decode import MAX_HOLE_S, iter_blocks, probe

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
WAV = "short-en-029-44k"


@pytest.fixture
def corpus(tmp_path) -> Path:
    """The two short bundled recordings with the committed config and baseline (the hostile input is the subject)."""
    return copy_short_recordings(tmp_path / "recordings")


@pytest.fixture
def session(tmp_path) -> Path:
    s = Session(6.0).say(0.5, 1.5).event("terminal_response", 0.3).say(2.0, 3.0).event("clock.quiet", 5.6)
    return s.write(tmp_path)


def one_error(result) -> str:
    """The single error line of a failed run (warnings may come before it)."""
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("speechclock: error: ")]
    assert len(errors) == 1 and all(line.startswith("speechclock: ") for line in lines), result.stderr
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    return errors[0]


def run(*args: object, timeout: float = 120) -> subprocess.CompletedProcess:
    """The CLI in its own process (stderr as the terminal would see it, even from C libraries)."""
    return subprocess.run(
        [sys.executable, "-m", "clock", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


# --- timestamp jumps -------------------------------------------------------------


def webm_with_jump(path: Path, jump_s: float, at_s: float = 1.0, rate: int = 48000) -> Path:
    """A WebM/Opus whose packet timestamps jump by ``jump_s`` after ``at_s`` (muxed with PyAV)."""
    x = tone_with_silence(rate)
    with av.open(str(path), mode="w", format="webm") as out:
        stream = out.add_stream("libopus", rate=rate, layout="mono")
        for start in range(0, x.size - 960, 960):
            frame = av.AudioFrame.from_ndarray(x[None, start : start + 960], format="flt", layout="mono")
            frame.sample_rate = rate
            frame.pts = start + (int(jump_s * rate) if start >= at_s * rate else 0)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


@pytest.mark.parametrize("jump_s", [MAX_HOLE_S + 1, 10 * 3600, 1000 * 3600])
def test_a_timestamp_jump_longer_than_the_limit_is_one_error_naming_file_and_time(cli, tmp_path, jump_s):
    path = webm_with_jump(tmp_path / "jump.webm", jump_s)
    for command in ("info", "levels"):
        result = cli(command, path)
        assert result.exit_code == 2
        assert re.fullmatch(
            rf"speechclock: error: {re.escape(str(path))}: the stream's timestamps jump by {jump_s:.0f}\.\d+ s "
            r"at 1\.0\d\d s, more than the longest hole filled with silence \(3600 s\): damaged timestamps\?",
            one_error(result),
        )


def test_a_long_hole_is_filled_block_by_block(tmp_path):
    path = webm_with_jump(tmp_path / "hole.webm", 600.0)
    sizes = []
    with pytest.warns(SpeechClockWarning, match=r"hole.webm: 600\.\d+ s missing from the stream at 1\.0\d\d s"):
        for block in iter_blocks(path, block_frames=4096):
            sizes.append(block.size)
    # Never the hole at once: a block, or one batch of decoded Opus packets (about a second).
    assert max(sizes) <= 2 * 48000 and sum(size > 4096 + 960 for size in sizes) <= 3
    assert abs(sum(sizes) - (600 + 2) * 48000) < 2 * 960


def test_the_hole_limit_is_an_option(tmp_path):
    path = webm_with_jump(tmp_path / "hole.webm", 5.0)
    with pytest.raises(RecordingError, match=r"jump by 5\.\d+ s at 1\.0\d\d s.*\(2 s\)"):
        list(iter_blocks(path, max_hole_s=2.0))


# --- MP3 -------------------------------------------------------------------------


@pytest.fixture
def damaged_mp3(tmp_path) -> Path:
    rate = 48000
    t = np.arange(20 * rate) / rate
    x = (0.3 * np.sin(2 * np.pi * 440 * t) * (np.sin(2 * np.pi * 0.3 * t) > 0)).astype(np.float32)
    clean = tmp_path / "clean.mp3"
    sf.write(str(clean), x, rate, format="MP3")
    data = clean.read_bytes()
    garbage = np.random.default_rng(1).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    path = tmp_path / "damaged.mp3"
    path.write_bytes(data[: len(data) // 2] + garbage + data[len(data) // 2 :])
    return path


def test_a_damaged_mp3_decodes_whole_with_one_warning_and_nothing_raw_on_the_terminal(damaged_mp3):
    done = run("info", damaged_mp3, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["duration_s"] > 19.5  # all of it, as ffmpeg decodes it
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and re.fullmatch(
        r"speechclock: warning: .*damaged\.mp3: skipped \d damaged packets?, the first at 9\.\d+ s \(.*\)", lines[0]
    )


def test_mp3_is_recognised_before_libsndfile_sees_it(damaged_mp3, tmp_path):
    assert probe(damaged_mp3).backend == "pyav"
    renamed = tmp_path / "no-suffix"
    renamed.write_bytes(damaged_mp3.read_bytes())
    assert probe(renamed).backend == "pyav"  # by its first bytes, not its name


# --- special files ---------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "dir"])
@pytest.mark.parametrize(
    "option,command", [("--events", "beats"), ("--labels", "segments"), ("--config", "levels"), ("--config", "check")]
)
def test_special_files_as_inputs_are_refused_without_opening_them(session, fifo, tmp_path, special, option, command):
    path = {"fifo": fifo, "/dev/zero": "/dev/zero", "dir": tmp_path}[special]
    done = run(command, session, option, path, timeout=60)  # a FIFO with no writer would block here
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"speechclock: error: {path}") or "is a directory" in line, line


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_special_file_as_recording_is_one_error(fifo, special):
    path = fifo if special == "fifo" else special
    done = run("levels", path, timeout=60)
    kind = "a FIFO (named pipe)" if special == "fifo" else "a character device"
    assert done.returncode == 2
    assert (
        done.stderr
        == f"speechclock: error: {path}: is {kind}, not a recording file (save the stream to a file first)\n"
    )


# --- event logs ------------------------------------------------------------------


HOSTILE_LINES = {
    "nested": '{"type": "terminal_response", "t": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "nested-65": '{"type": "terminal_response", "t": 1, "x": ' + "[" * 64 + "]" * 64 + "}",
    "digits-5000": '{"type": "terminal_response", "t": ' + "1" * 5000 + "}",
    "digits-400": '{"type": "terminal_response", "t": ' + "1" * 400 + "}",
    "huge": '{"type": "terminal_response", "t": 1.7e308}',
    "huge-negative": '{"type": "terminal_response", "t_ms": -1.7e308}',
    "nan": '{"type": "terminal_response", "t": NaN}',
    "long-line": '{"type": "terminal_response", "t": 1, "pad": "' + "x" * (1 << 20) + '"}',
    "not-utf8": b'{"type": "terminal_response", "t": 1, "x": "\xff"}',
    "linger": '{"type": "terminal_response", "t": 1, "linger_s": 1e308}',
}
HOSTILE_MESSAGES = {
    "nested": "JSON nested deeper than 64 levels",
    "nested-65": "JSON nested deeper than 64 levels",
    "digits-5000": "a number too long to read",
    "digits-400": "'t' must be a finite number, got a 400-digit number",
    "huge": "time 1.7e+308 s is out of range",
    "huge-negative": "time -1.7e+305 s is out of range (more than 1e+07 s from the start)",
    "nan": "'t' must be a finite number, got nan",
    "long-line": "line longer than 1024 KiB",
    "not-utf8": "not UTF-8 text",
    "linger": "'linger_s' must be >= 0 and <= 3600 s",
}


def write_log(path: Path, bad: str | bytes) -> None:
    good = json.dumps({"type": "prompt", "t": 0.1}).encode()
    path.write_bytes(good + b"\n" + (bad if isinstance(bad, bytes) else bad.encode()) + b"\n")


@pytest.mark.parametrize("kind", sorted(HOSTILE_LINES))
def test_a_hostile_event_line_is_one_error_naming_file_and_line(cli, corpus, kind):
    log = corpus / f"{WAV}.events.jsonl"
    write_log(log, HOSTILE_LINES[kind])
    commands = [["check", corpus]]
    if kind.startswith("huge"):  # report formatted these times, and crashed
        commands.append(["report", corpus, "-o", corpus.parent / "r.html", "--floors", "0.003", "--quiet-times", "2.5"])
    for command in commands:
        result = cli(*command)
        assert result.exit_code == 2
        assert f"{log}:2: {HOSTILE_MESSAGES[kind]}" in one_error(result)
    lenient = cli("check", corpus, "--lenient")
    assert lenient.exit_code in (0, 1) and "Traceback" not in lenient.output
    assert f"{log}:2: {HOSTILE_MESSAGES[kind]}" in lenient.stderr and "(skipped)" in lenient.stderr


def test_many_skipped_lines_warn_once(tmp_path, session):
    log = tmp_path / "bad.jsonl"
    log.write_text('{"type": "terminal_response", "t": 0.3}\n' + "{oops\n" * 500)
    from clock.io.events import read_events

    with pytest.warns(SpeechClockWarning) as caught:
        read_events(log, lenient=True)
    assert [str(w.message) for w in caught] == [
        f"{log}:2: not valid JSON (Expecting property name enclosed in double quotes at column 2) (skipped); "
        "499 more malformed lines skipped"
    ]


def test_a_log_too_large_or_too_long_is_refused(tmp_path, monkeypatch):
    from clock.io import events, files
    from clock.io.events import read_events

    log = tmp_path / "big.jsonl"
    with open(log, "wb") as f:
        f.truncate(files.MAX_EVENT_LOG_BYTES + 1)
    with pytest.raises(ValueError, match="big.jsonl: event log larger than 64 MiB"):
        read_events(log)
    monkeypatch.setattr(events, "MAX_EVENT_LOG_LINES", 10)
    log.write_text('{"type": "prompt", "t": 1}\n' * 11)
    with pytest.raises(ValueError, match="big.jsonl: event log of more than 10 lines"):
        read_events(log)
    log.write_text('{"type": "terminal_response", "t": 1}\n' * 10)
    assert len(read_events(log).events) == 10


# --- labels ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line,message",
    [
        ("nan\t1\tx", "label times must be finite numbers, got nan and 1.0"),
        ("0\tinf\tx", "label times must be finite numbers, got 0.0 and inf"),
        ("0\t" + "9" * 5000 + "\tx", "label times must be finite numbers"),
        ("0\t1e300\tx", "label time out of range"),
        ("2\t1\tx", "label end 1.0 is before its start 2.0"),
    ],
)
def test_bad_label_lines(cli, session, tmp_path, line, message):
    labels = tmp_path / "truth.txt"
    labels.write_text(f"0.5\t1.5\tok\n{line}\n")
    result = cli("segments", session, "--labels", labels)
    assert result.exit_code == 2 and f"{labels}:2: {message}" in one_error(result)


def test_labels_outside_the_recording_warn_once(cli, session, tmp_path):
    labels = tmp_path / "truth.txt"
    labels.write_text("-1\t0.5\tbefore\n0.5\t1.5\tok\n7\t8\tafter\n9\t9.5\tafter\n")
    result = cli("segments", session, "--labels", labels, "--format", "json")
    assert result.exit_code == 0
    assert result.stderr == (
        f"speechclock: warning: {labels}: label -1 to 0.5 s lies outside the recording (0 to 6.000 s) "
        "(3 labels in all)\n"
    )
    assert len(json.loads(result.stdout)["labels"]) == 4  # kept, with their errors


# --- configs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,key",
    [
        ('[thresholds]\ntick_s = "1e-9"\n', "thresholds.tick_s"),
        ("[thresholds]\ntick_s = 1e-300\n", "thresholds.tick_s"),
        ('[thresholds]\ntick_s = "1e999999999"\n', "thresholds.tick_s"),
        ("[thresholds]\ntick_s = 61\n", "thresholds.tick_s"),
        ("[thresholds]\nfloor = 2\n", "thresholds.floor"),
        ("[thresholds]\nquiet_s = 1e308\n", "thresholds.quiet_s"),
        ("[thresholds]\nonset_timeout_s = 3601\n", "thresholds.onset_timeout_s"),
        ("[margins]\nquiet_margin_s = 1e308\n", "margins.quiet_margin_s"),
        ("[margins]\nfloor_margin_db = 61\n", "margins.floor_margin_db"),
        ("[margins]\nonset_margin_s = inf\n", "margins.onset_margin_s"),
        ("[baseline]\nonset_tolerance_s = 1e308\n", "baseline.onset_tolerance_s"),
        ("[recordings.x]\nbeats = 1000000000000\n", "recordings.x.beats"),
    ],
)
def test_config_values_are_bounded(cli, corpus, text, key):
    (corpus / "speechclock.toml").write_text(text)
    done = cli("check", corpus)  # in this process: the config is refused before anything is decoded
    assert done.exit_code == 2
    (line,) = done.stderr.splitlines()
    assert f"speechclock.toml: key '{key}'" in line


@pytest.mark.parametrize(
    "text", ["a = " + "[" * 100_000 + "]" * 100_000 + "\n", "a = " + "{b=" * 100_000 + "1" + "}" * 100_000 + "\n"]
)
def test_deeply_nested_toml_is_one_line(cli, corpus, text):
    (corpus / "speechclock.toml").write_text(text)
    result = cli("check", corpus)
    assert result.exit_code == 2 and "speechclock.toml: not valid TOML" in one_error(result)


def test_a_huge_integer_in_toml_is_one_line(cli, corpus):
    (corpus / "speechclock.toml").write_text("[recordings.x]\nbeats = " + "9" * 5000 + "\n")
    result = cli("check", corpus)
    assert result.exit_code == 2 and "not valid TOML (a number too long to read)" in one_error(result)


# --- options ---------------------------------------------------------------------


@pytest.fixture
def nan_wav(tmp_path) -> Path:
    """A recording whose header is fine and whose samples are not: an option error must come first."""
    x = np.zeros(16000, np.float32)
    x[100] = np.nan
    return write_soundfile(tmp_path / "nan.wav", x, 8000, "FLOAT")


OPTION_CASES = [
    (["levels", "{rec}", "--tick", "1e-9"], "--tick"),
    (["levels", "{rec}", "--tick", "1e308"], "--tick"),
    (["levels", "{rec}", "--tick", "61"], "--tick"),
    (["levels", "{rec}", "--tick-frames", str(10**30)], "--tick-frames"),
    (["levels", "{rec}", "--tick-frames", "1"], "--tick-frames"),
    (["levels", "{rec}", "--fft-size", "0"], "--fft-size"),
    (["levels", "{rec}", "--context-rate", "1"], "--context-rate"),
    (["levels", "{rec}", "--context-rate", "1000000"], "--context-rate"),
    (["segments", "{rec}", "--floor", "nan"], "--floor"),
    (["segments", "{rec}", "--floor", "1e308"], "--floor"),
    (["beats", "{rec}", "--quiet-time", "1e308"], "--quiet-time"),
    (["beats", "{rec}", "--onset-timeout", "inf"], "--onset-timeout"),
    (["sweep", "{rec}", "--floors", "0:inf:1"], "--floors"),
    (["sweep", "{rec}", "--floors", "0:nan:1"], "--floors"),
    (["sweep", "{rec}", "--floors", "snan"], "--floors"),
    (["sweep", "{rec}", "--floors", "0:2:0.5"], "--floors"),
    (["sweep", "{rec}", "--quiet-times", "1:1e999999999:1"], "--quiet-times"),
    (["sweep", "{rec}", "--floors", "0:0.999:0.001", "--quiet-times", "1:100:1"], "--floors and --quiet-times"),
    (["report", "{rec}", "-o", "{out}", "--quiet-times", "0:1:0.5"], "--quiet-times"),
    (["plot", "{rec}", "-o", "{out}", "--start", "nan"], "--start"),
    (["plot", "{rec}", "-o", "{out}", "--end", "inf"], "--end"),
    (["plot", "{rec}", "-o", "{out}.gif"], "-o"),
    (["check", "{rec}", "--jobs", "0"], "--jobs"),
]


@pytest.mark.parametrize("args,option", OPTION_CASES, ids=[" ".join(a[2:]) for a, _ in OPTION_CASES])
def test_option_values_are_bounded_before_any_decoding(cli, nan_wav, tmp_path, args, option):
    result = cli(*[a.format(rec=nan_wav, out=tmp_path / "x.png") for a in args])
    assert result.exit_code == 2
    line = one_error(result)
    assert option in line and "non-finite sample" not in line


def test_fft_size_zero_is_not_the_default(cli, session):
    assert cli("levels", session, "--fft-size", "0").exit_code == 2


# --- the exit-code contract ------------------------------------------------------


def test_errors_through_jobs_are_the_same_line_and_exit_2(cli, corpus):
    webm_with_jump(corpus / "zz-jump.webm", 2 * MAX_HOLE_S)
    serial = cli("check", corpus)
    parallel = cli("check", corpus, "--jobs", "2")
    assert serial.exit_code == parallel.exit_code == 2
    assert one_error(serial) == one_error(parallel)
    assert "zz-jump.webm: the stream's timestamps jump" in one_error(parallel)


@pytest.mark.parametrize("exc", [MemoryError(), RecursionError("deep"), RuntimeError("boom"), KeyError("k")])
def test_any_exception_at_the_boundary_is_one_line_and_exit_2(cli, session, monkeypatch, exc):
    def fail(*args, **kwargs):
        raise exc

    import clock.cli.info  # commands are imported when they run: this one now, to be patched

    monkeypatch.setattr(clock.cli.info, "summarize", fail)
    result = cli("info", session)
    assert result.exit_code == 2
    line = one_error(result)
    assert ("internal error" in line) == (type(exc) in (RuntimeError, KeyError))


def test_a_worker_that_runs_out_of_memory_is_exit_2(cli, corpus, monkeypatch):
    import clock.run.corpus

    def observe(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(clock.run.corpus, "observe", observe)
    result = cli("check", corpus)
    assert result.exit_code == 2 and "out of memory" in one_error(result)


def test_a_broken_pipe_is_quiet(tmp_path):
    rec = write_soundfile(tmp_path / "r.wav", np.zeros(8000 * 600, np.int16), 8000, "PCM_16")
    proc = subprocess.Popen(
        [sys.executable, "-m", "clock", "levels", str(rec), "--tick", "0.001"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"tick,t_s,frame,level\n"
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    assert proc.stderr is not None
    with proc.stderr:
        assert proc.stderr.read() == b""


def test_a_warning_repeated_by_every_sweep_setting_prints_once(cli, session):
    log = session.with_name("session.events.jsonl")
    log.write_text(log.read_text() + json.dumps({"type": "terminal_response", "t": 99.0}) + "\n")
    result = cli("sweep", session, "--floors", "0.001:0.005:0.001", "--quiet-times", "1:3:0.5")
    assert result.exit_code == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == len(set(lines)) >= 1
    assert any("terminal_response at 99.000 s" in line for line in lines)


# --- text in every output --------------------------------------------------------


@pytest.fixture
def dollar_session(tmp_path) -> Path:
    s = Session(6.0).say(0.5, 1.5).event("terminal_response", 0.3).event("$\\frac{a}{$ ^_%", 2.0)
    s.say(2.5, 3.0)
    return s.write(tmp_path, name="$x^2$ \\alpha_{1}")


def test_dollar_names_and_types_are_drawn_literally(cli, dollar_session, tmp_path):
    for suffix in ("png", "svg", "pdf"):
        result = cli("plot", dollar_session, "-o", tmp_path / f"p.{suffix}")
        assert result.exit_code == 0, result.stderr
    result = cli(
        "report",
        dollar_session.parent,
        "-o",
        tmp_path / "r.html",
        "--floors",
        "0.003",
        "--quiet-times",
        "2.5",
        "--allow-defaults",
    )
    assert result.exit_code == 0, result.stderr
    from clock.cli.plot import figure_for
    from clock.io.recording import read_recording

    rec = read_recording(dollar_session)
    from clock.core.thresholds import DEFAULT_THRESHOLDS

    fig = figure_for(rec, DEFAULT_THRESHOLDS)
    texts = [t for ax in fig.axes for t in ax.texts] + [fig.axes[0]._left_title]
    literal = {t.get_text(): t for t in texts}
    assert "$\\frac{a}{$ ^_%" in literal and not literal["$\\frac{a}{$ ^_%"].get_parse_math()
    assert fig.axes[0].get_title(loc="left").startswith("$x^2$ \\alpha_{1}.wav: floor")
    assert not fig.axes[0]._left_title.get_parse_math()


@pytest.mark.parametrize("suffix", ["pdf", "svg", "png"])
def test_plots_are_byte_identical_across_runs(cli, tmp_path, suffix):
    a, b = tmp_path / f"a.{suffix}", tmp_path / f"b.{suffix}"
    for out in (a, b):
        assert cli("plot", RECORDINGS / f"{WAV}.wav", "-o", out).exit_code == 0
    assert a.read_bytes() == b.read_bytes()
    if suffix == "pdf":
        assert b"CreationDate" not in a.read_bytes()


def test_junit_is_valid_xml_whatever_the_names(cli, corpus, tmp_path):
    odd = "ctl\x01\x1b\x7f name"
    for stem in (odd, os.fsdecode(b"bytes\xff\xfe")):  # each with its log: a recording without one fails check
        shutil.copy(corpus / f"{WAV}.wav", corpus / f"{stem}.wav")
        shutil.copy(corpus / f"{WAV}.events.jsonl", corpus / f"{stem}.events.jsonl")
    out = tmp_path / "junit.xml"
    result = cli("check", corpus, "--junit", out)
    assert result.exit_code == 0, result.stderr
    names = {c.get("classname") for c in ET.parse(out).getroot().iter("testcase")}
    assert "ctl\\x01\\x1b\x7f name.wav" in names and "bytes\\udcff\\udcfe.wav" in names
    json_out = cli("check", corpus, "--format", "json")
    assert json_out.exit_code == 0 and json.loads(json_out.stdout)["passed"] is True


def test_text_outputs_keep_names_that_are_not_utf8(tmp_path):
    name = os.fsencode(tmp_path) + b"/caf\xe9.wav"
    os.rename(write_soundfile(tmp_path / "plain.wav", tone_with_silence(8000), 8000, "PCM_16"), name)
    done = subprocess.run([sys.executable, "-m", "clock", "segments", name], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(name + b": 2 segments")


def test_the_boundary_works_off_the_main_thread(cli, session):
    # SIGTERM's handler is installed only in the main thread; elsewhere the command still runs.
    results = []
    thread = threading.Thread(target=lambda: results.append(cli("info", session)))
    thread.start()
    thread.join(60)
    assert results and results[0].exit_code == 0


def test_a_sweep_where_no_beat_is_declared_over(cli, tmp_path):
    # Found by the fuzz test: the recommendation had no latency to print.
    path = Session(3.0).say(0.5, 1.0).event("terminal_response", 0.3).write(tmp_path)
    result = cli("sweep", path, "--floors", "0.003", "--quiet-times", "2.5")
    assert result.exit_code == 0, result.stderr
    row = result.stdout.splitlines()[1].split()
    assert row[:2] == ["0.003", "2.5"] and row[-2:] == ["-", "-"]  # no latency where no beat ended
    assert "recommended: none (see speechclock derive for why)" in result.stdout
    report = cli(
        "report", path, "-o", tmp_path / "r.html", "--floors", "0.003", "--quiet-times", "2.5", "--allow-defaults"
    )
    assert report.exit_code == 0, report.stderr
    assert "recommended: none (see speechclock derive for why)" in (tmp_path / "r.html").read_text()


def test_a_rate_no_audiocontext_runs_at_needs_a_context_rate(cli, tmp_path):
    # A 500 Hz file of 10 MB would be 20,000 s: 1.2 million ticks; at 1 Hz, 10 million seconds.
    path = write_soundfile(tmp_path / "slow.wav", np.zeros(1000, np.int16), 500, "PCM_16")
    result = cli("levels", path)
    assert result.exit_code == 2 and "sample rate 500 Hz is outside an AudioContext's range" in one_error(result)
    result = cli("levels", path, "--context-rate", "48000")
    assert result.exit_code == 2 and "too low to resample (at least 1000)" in one_error(result)
    assert cli("info", path).exit_code == 0


def test_many_channels_are_read_in_bounded_blocks(tmp_path):
    from clock.io import decode

    path = write_soundfile(tmp_path / "many.wav", np.zeros((5000, 512), np.int16), 8000, "PCM_16")
    info = probe(path)
    blocks = list(decode._soundfile_blocks(info, decode.DEFAULT_BLOCK_FRAMES))
    assert max(b.size for b in blocks) <= 1 << 20 and sum(b.shape[0] for b in blocks) == 5000


def test_an_overlong_line_of_a_type_the_clock_does_not_read_is_skipped_with_a_warning(tmp_path):
    from clock.io.events import read_events

    log = tmp_path / "s.events.jsonl"
    bulky = json.dumps({"type": "conversation.item.created", "t": 0.5, "audio": "A" * (2 << 20)})
    lines = [{"type": "prompt", "t": 0.1}, None, {"type": "terminal_response", "t": 1.0}, {"type": "end", "t": 3.0}]
    log.write_text("".join((bulky if x is None else json.dumps(x)) + "\n" for x in lines))
    with pytest.warns(SpeechClockWarning) as caught:
        found = read_events(log)
    assert [e.kind for e in found.events] == ["prompt", "terminal", "end"]
    assert [str(w.message) for w in caught] == [
        f"{log}:2: line longer than 1024 KiB (conversation.item.created), an event type speech-clock does not "
        "read: skipped"
    ]
    # One the clock reads is still an error naming file and line.
    log.write_text(json.dumps({"type": "terminal_response", "t": 1, "pad": "x" * (2 << 20)}) + "\n")
    with pytest.raises(ValueError, match=f"{log}:1: line longer than 1024 KiB"):
        read_events(log)


#: The option combinations that add work after the input is read, each with its id.
OPTION_COMBINATIONS = {
    "prefer-robust": ("derive", "--prefer", "robust"),
    "format-js": ("derive", "--format", "js"),
    "stress": ("stress", "--axes", "gain"),
    "compare": ("compare", "--endpointers", "energy"),
}


@pytest.mark.parametrize("kind", ["nested", "huge", "nan", "not-utf8"])
@pytest.mark.parametrize(
    "options",
    [*OPTION_COMBINATIONS.values(), ("report", "-o", "REPORT", "--stress", "--compare", "energy", "--allow-defaults")],
    ids=[*OPTION_COMBINATIONS, "report-stress-compare"],
)
def test_a_hostile_event_line_is_one_error_with_every_option_combination(cli, tmp_path, session, kind, options):
    """The log is read (and refused) before any of the work these options add."""
    rec = session
    log = rec.with_name(rec.stem + ".events.jsonl")
    write_log(log, HOSTILE_LINES[kind])
    args = [a if a != "REPORT" else tmp_path / "r.html" for a in options[1:]]
    result = cli(options[0], rec.parent, *args)
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2, result.stderr
    errors = [line for line in lines if line.startswith("speechclock: error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    if "pip install" not in errors[0]:  # without the compare extra, that is said first
        assert f"{log}:2:" in errors[0] and HOSTILE_MESSAGES[kind] in errors[0], errors[0]
    assert not (tmp_path / "r.html").exists()


def _hostile_recording(folder: Path, kind: str) -> Path:
    import numpy as np
    import soundfile as sf

    folder.mkdir()
    if kind == "random-bytes":
        path = folder / "rec.wav"
        path.write_bytes(np.random.default_rng(3).bytes(5000))
    elif kind == "empty":
        path = folder / "rec.webm"
        path.write_bytes(b"")
    elif kind == "truncated":
        path = folder / "rec.wav"
        sf.write(str(path), np.zeros(8000, np.float32), 8000, subtype="PCM_16")
        path.write_bytes(path.read_bytes()[:60])
    else:  # all silence, one beat that hears nothing
        path = folder / "rec.wav"
        sf.write(str(path), np.zeros(3 * 8000, np.float32), 8000, subtype="PCM_16")
    (folder / "rec.events.jsonl").write_text('{"type": "terminal_response", "t": 0.5}\n')
    return path


@pytest.mark.parametrize("kind", ["random-bytes", "empty", "truncated", "silence"])
@pytest.mark.parametrize("options", OPTION_COMBINATIONS.values(), ids=OPTION_COMBINATIONS)
def test_a_hostile_recording_keeps_the_contract_with_every_option_combination(cli, tmp_path, kind, options):
    _hostile_recording(tmp_path / "rec", kind)
    result = cli(options[0], tmp_path / "rec", *options[1:], "--no-cache")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code in (0, 2) and "Traceback" not in result.stderr, result.stderr
    assert all(line.startswith("speechclock: ") for line in lines), result.stderr
    errors = [line for line in lines if line.startswith("speechclock: error:")]
    assert len(errors) == (result.exit_code == 2) and not any("internal error" in e for e in errors), errors


def test_derive_format_js_with_nothing_to_recommend_says_why_in_one_line_and_writes_nothing(cli, tmp_path):
    _hostile_recording(tmp_path / "rec", "silence")
    out = tmp_path / "config.js"
    table = cli("derive", tmp_path / "rec")
    result = cli("derive", tmp_path / "rec", "--format", "js", "-o", out)
    assert table.exit_code == 0 and ("none recommended" in table.stdout or "no recording has a window" in table.stdout)
    assert result.exit_code == 2 and result.stdout == "" and not out.exists()
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("speechclock: error: --format js: nothing to write, no ") and "recommended (" in line


def test_a_url_whose_scheme_cannot_be_read_is_named(cli):
    for url in ("ftp://127.0.0.1:1/a.wav", "gopher://127.0.0.1:1/a.wav"):
        result = cli("derive", url)
        (line,) = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and line.startswith(f"speechclock: error: {url}: "), line
