"""Outputs never replace what the user owns: devices, FIFOs, links, modes, inputs, temporaries, the baseline."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from audiofiles import tone_with_silence, write_soundfile

from clock.io.baseline import locked, read_baseline, update_baseline
from clock.io.output import STALE_TEMP_S, TEMP_PATTERN, atomic_output, json_text, write_json_columns

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
WAV = "short-en-029-44k"


@pytest.fixture
def rec(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    return write_soundfile(folder / "rec.wav", tone_with_silence(8000), 8000, "PCM_16")


@pytest.fixture
def corpus(tmp_path) -> Path:
    folder = tmp_path / "recordings"
    shutil.copytree(RECORDINGS, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    return folder


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def one_error(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("speechclock: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def speechclock(*args, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "clock", *map(str, args)], **kwargs)


# --- what an output path is ----------------------------------------------------


def test_dev_null_stays_a_character_device(cli, rec):
    assert cli("levels", rec, "-o", "/dev/null").exit_code == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_written_through_not_replaced(cli, rec, tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    result = cli("levels", rec, "--tick", "1", "-o", fifo)
    reader.join(timeout=30)
    assert result.exit_code == 0, result.stderr
    assert got and got[0].startswith(b"tick,t_s,frame,level\n0,0.0,0,")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out.fifo"]


def test_a_symlink_is_followed_and_the_target_keeps_its_mode(cli, rec, tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    target.chmod(0o600)
    link = tmp_path / "link.csv"
    link.symlink_to(target.name)
    assert cli("levels", rec, "--tick", "1", "-o", link).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == "real.csv"
    assert target.read_text().startswith("tick,t_s,frame,level\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(cli, rec, tmp_path):
    kept = tmp_path / "kept.csv"
    kept.write_text("old\n")
    kept.chmod(0o640)
    assert cli("levels", rec, "--tick", "1", "-o", kept).exit_code == 0
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text().startswith("tick")
    old = os.umask(0o027)
    try:
        assert cli("levels", rec, "--tick", "1", "-o", tmp_path / "new.csv").exit_code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o640


def test_a_read_only_output_is_refused_and_left_alone(cli, rec, tmp_path):
    ro = tmp_path / "ro.csv"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    result = cli("levels", rec, "-o", ro)
    assert result.exit_code == 2 and "not writable" in one_error(result)
    assert ro.read_text() == "keep\n"


def test_a_244_character_name_works(cli, rec, tmp_path):
    out = tmp_path / ("x" * 240 + ".csv")
    result = cli("levels", rec, "--tick", "1", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert out.read_text().startswith("tick,")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in", out.name])


def test_dash_and_dev_stdout_are_standard_output(cli, rec):
    for target in ("-", "/dev/stdout"):
        result = cli("levels", rec, "--tick", "1", "-o", target)
        assert result.exit_code == 0 and result.stdout.startswith("tick,t_s,frame,level\n")


def test_dev_stdout_redirected_to_a_file_appends_to_it(rec, tmp_path):
    out = tmp_path / "log.csv"
    out.write_text("before\n")
    with open(out, "a") as f:
        subprocess.run(
            [sys.executable, "-m", "clock", "levels", str(rec), "--tick", "1", "-o", "/dev/stdout"],
            stdout=f,
            check=True,
        )
    lines = out.read_text().splitlines()
    assert lines[0] == "before" and lines[1] == "tick,t_s,frame,level"


def test_a_directory_as_output_is_an_error(cli, rec, tmp_path):
    result = cli("levels", rec, "--format", "json", "-o", tmp_path)
    assert result.exit_code == 2 and "directory" in one_error(result)


# --- inputs are never outputs ----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("derive", "{dir}/{wav}.wav", "-o", "{dir}/{wav}.wav"),
        ("derive", "{dir}", "-o", "{dir}/tour-en-us-48k.webm"),
        ("derive", "{dir}", "-o", "{dir}/new-recording.webm"),
        ("sweep", "{dir}", "--floors", "0.003", "--quiet-times", "2.5", "-o", "{dir}/tour-en-us-f3-48k.ogg"),
        (
            "sweep",
            "{dir}",
            "--quiet-times",
            "2.5",
            "--tradeoff",
            "{dir}/{wav}.wav.png",
            "--config",
            "{dir}/{wav}.wav.png",
        ),
        ("report", "{dir}", "-o", "{dir}/tour-en-gb-48k-stereo.webm"),
        ("check", "{dir}", "--junit", "{dir}/{wav}.wav"),
        ("check", "{dir}", "--junit", "{dir}/{wav}.labels.txt"),
        ("check", "{dir}", "--junit", "{dir}/baseline.json"),
        ("levels", "{dir}/{wav}.wav", "-o", "{dir}/{wav}.events.jsonl"),
        ("levels", "{dir}/{wav}.wav", "-o", "{dir}/speechclock.toml"),
        ("segments", "{dir}/{wav}.wav", "--labels", "{dir}/{wav}.labels.txt", "-o", "{dir}/{wav}.labels.txt"),
        ("beats", "{dir}/{wav}.wav", "-o", "{dir}/{wav}.events.jsonl"),
        ("plot", "{dir}/{wav}.wav", "-o", "{dir}/{wav}.wav.png", "--config", "{dir}/{wav}.wav.png"),
        ("levels", "{dir}/{wav}.wav", "-o", "{link}"),
        ("levels", "{dir}/{wav}.wav", "-o", "{hard}"),
        ("check", "{dir}", "--update-baseline", "--baseline", "{dir}/speechclock.toml"),
    ],
)
def test_an_input_is_never_an_output(cli, corpus, tmp_path, args):
    (tmp_path / "link.wav").symlink_to(corpus / f"{WAV}.wav")
    os.link(corpus / f"{WAV}.wav", tmp_path / "hard.wav")
    (corpus / f"{WAV}.wav.png").write_text("[thresholds]\n")  # a config with a figure's name
    # A recording that cannot be decoded: the refusal comes before any decoding.
    (corpus / "zz-broken.wav").write_bytes(b"RIFF\0\0\0\0WAVEjunk")
    before = digest(corpus) | {"link": hashlib.sha256((tmp_path / "hard.wav").read_bytes()).hexdigest()}
    names = {"dir": corpus, "wav": WAV, "link": tmp_path / "link.wav", "hard": tmp_path / "hard.wav"}
    result = cli(*[a.format(**names) for a in args])
    assert result.exit_code == 2
    assert "refusing to write" in one_error(result)
    assert digest(corpus) | {"link": hashlib.sha256((tmp_path / "hard.wav").read_bytes()).hexdigest()} == before


def test_standard_output_onto_an_input_is_refused(rec):
    before = rec.read_bytes()
    with open(rec, "ab") as f:
        done = subprocess.run([sys.executable, "-m", "clock", "levels", str(rec)], stdout=f, stderr=subprocess.PIPE)
    assert done.returncode == 2 and b"standard output: is the recording" in done.stderr
    assert rec.read_bytes() == before


def test_a_recording_named_twice_counts_once(cli, corpus):
    result = cli("check", corpus, corpus / f"{WAV}.wav", corpus.parent / "recordings" / ".." / "recordings")
    assert result.exit_code == 0, result.stderr
    assert "checks on 5 recordings: 0 failed," in result.stdout.splitlines()[-1]


# --- temporary files -------------------------------------------------------------


def long_wav(path: Path, seconds: float, rate: int = 48000) -> Path:
    """A WAV of exact zeros, written sparsely (instant, and no disk used for the samples)."""
    n = int(seconds * rate)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, 2 * rate, 2, 16))
        f.write(b"data" + struct.pack("<I", 2 * n))
        f.truncate(44 + 2 * n)
    return path


def temporaries(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if TEMP_PATTERN.match(p.name)]


def _a_temporary_holds_output(folder: Path) -> bool:
    for name in temporaries(folder):
        try:
            if (folder / name).stat().st_size > 0:
                return True
        except FileNotFoundError:  # gone between the listing and the look
            pass
    return False


@pytest.fixture
def slow_write(tmp_path):
    """Start a run that writes its output for seconds; returns once its temporary file holds output (the empty
    temporary that checks the folder at the start is made and removed at once: a run killed then leaves none)."""
    procs: list[subprocess.Popen] = []

    def start() -> tuple[subprocess.Popen, Path]:
        src = long_wav(tmp_path / "long.wav", 1800)
        out = tmp_path / "out" / "levels.csv"
        out.parent.mkdir()
        out.write_text("previous\n")
        proc = speechclock("levels", src, "--tick", "0.001", "-o", out, stderr=subprocess.PIPE)
        procs.append(proc)
        deadline = time.monotonic() + 60
        while not _a_temporary_holds_output(out.parent):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before writing"
            time.sleep(0.02)
        return proc, out

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_removes_the_temporary_and_keeps_the_previous_output(slow_write, signum, code):
    proc, out = slow_write()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert b"Traceback" not in err
    assert temporaries(out.parent) == [] and out.read_text() == "previous\n"


@pytest.mark.parametrize("probe", [False, True], ids=["write", "probe"])
def test_a_signal_the_moment_a_temporary_is_made_still_removes_it(tmp_path, monkeypatch, probe):
    # The signal handlers remove the temporaries this process knows of. A SIGTERM right after the file is made
    # (the test above once met that moment under load: exit 143 and the file left) raises there, as the handler
    # does; the file must already be known.
    import clock.io.output as output_module

    real = os.open

    def made_then_signalled(path, flags, *args, **kwargs):
        fd = real(path, flags, *args, **kwargs)
        if os.path.basename(os.fspath(path)).startswith(".speechclock-"):
            os.close(fd)
            raise SystemExit(143)
        return fd

    monkeypatch.setattr(output_module.os, "open", made_then_signalled)
    target = tmp_path / "out.csv"
    with pytest.raises(SystemExit):
        if probe:
            output_module.check_target(target)
        else:
            with atomic_output(target) as out:
                out.write("x")
    monkeypatch.undo()
    output_module.remove_temporaries()  # what the handlers do as the run unwinds
    assert temporaries(tmp_path) == [] and not target.exists()


def test_a_temporary_left_by_a_killed_run_is_cleaned_by_a_later_one(cli, rec, slow_write):
    proc, out = slow_write()
    proc.kill()
    proc.communicate(timeout=60)
    (left,) = temporaries(out.parent)
    assert out.read_text() == "previous\n"
    # Too fresh to be taken for a left-over (a run in another process may still be writing it).
    assert cli("levels", rec, "--tick", "1", "-o", out.parent / "other.csv").exit_code == 0
    assert temporaries(out.parent) == [left]
    old = time.time() - STALE_TEMP_S - 60
    os.utime(out.parent / left, (old, old))
    (out.parent / ".speechclock-not-ours.tmp").write_text("x")  # not our exact pattern: kept
    os.utime(out.parent / ".speechclock-not-ours.tmp", (old, old))
    assert cli("levels", rec, "--tick", "1", "-o", out.parent / "other.csv").exit_code == 0
    assert temporaries(out.parent) == []
    assert (out.parent / ".speechclock-not-ours.tmp").exists()


def test_temporary_names_fit_name_max(tmp_path):
    name = "é" * 120 + ".csv"  # 244 bytes in UTF-8
    with atomic_output(tmp_path / name) as out:
        out.write("x")
        (tmp,) = temporaries(tmp_path)
        assert len(os.fsencode(tmp)) <= 255
    assert (tmp_path / name).read_text() == "x" and temporaries(tmp_path) == []


# --- the baseline ----------------------------------------------------------------


def test_the_config_baseline_stays_in_its_folder(cli, corpus, tmp_path):
    cfg = corpus / "speechclock.toml"
    for bad in ("../outside.json", str(tmp_path / "abs.json")):
        cfg.write_text(cfg.read_text().split("[baseline]")[0] + f'[baseline]\nfile = "{bad}"\n')
        result = cli("check", corpus)
        assert result.exit_code == 2 and "key 'baseline.file'" in one_error(result)
    (corpus / "escape.json").symlink_to(tmp_path / "elsewhere.json")
    cfg.write_text(cfg.read_text().split("[baseline]")[0] + '[baseline]\nfile = "escape.json"\n')
    assert cli("check", corpus).exit_code == 2


def test_baseline_given_on_the_command_line_may_be_anywhere(cli, corpus, tmp_path):
    elsewhere = tmp_path / "ci" / "base.json"
    elsewhere.parent.mkdir()
    before = digest(corpus)
    result = cli("check", corpus, "--baseline", elsewhere, "--update-baseline")
    assert result.exit_code == 0, result.stderr
    assert set(read_baseline(elsewhere)) == set(read_baseline(corpus / "baseline.json"))
    assert digest(corpus) == before


def test_update_baseline_keeps_entries_of_other_recordings(cli, corpus):
    path = corpus / "baseline.json"
    doc = json.loads(path.read_text())
    doc["recordings"]["elsewhere.webm"] = {"beats": 1, "onsets_s": [1.0], "max_gap_s": 0.5}
    path.write_text(json.dumps(doc))
    assert cli("check", corpus / f"{WAV}.wav", "--update-baseline").exit_code == 0
    assert "elsewhere.webm" in read_baseline(path) and f"{WAV}.wav" in read_baseline(path)
    assert not [p.name for p in corpus.iterdir() if p.name.startswith(".")]  # no lock or temporary left


def test_update_baseline_waits_for_the_lock_and_merges_what_is_on_disk(tmp_path):
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema": 1, "recordings": {"a.wav": {"beats": 1}}}))
    script = (
        "import sys; from clock.io.baseline import update_baseline; "
        "update_baseline(sys.argv[1], {'c.wav': {'beats': 3}})"
    )
    with locked(path):
        proc = subprocess.Popen([sys.executable, "-c", script, str(path)])
        time.sleep(1.5)
        assert proc.poll() is None  # blocked on the lock
        # Another run's update lands while we hold the lock.
        update = {"schema": 1, "recordings": {"a.wav": {"beats": 1}, "b.wav": {"beats": 2}}}
        path.write_text(json.dumps(update))
    assert proc.wait(timeout=60) == 0
    assert read_baseline(path) == {"a.wav": {"beats": 1}, "b.wav": {"beats": 2}, "c.wav": {"beats": 3}}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]


def test_update_baseline_refuses_to_write_over_another_input(tmp_path):
    rec = write_soundfile(tmp_path / "r.wav", np.zeros(8000, np.float32), 8000, "PCM_16")
    from clock.io.inputs import Inputs

    inputs = Inputs()
    inputs.add_recording(rec)
    with pytest.raises(ValueError, match="refusing to write"):
        update_baseline(rec, {"r.wav": {}}, inputs=inputs)
    assert rec.stat().st_size > 0 and read_baseline(tmp_path / "none.json") == {}


@pytest.mark.parametrize("n", [0, 1, 3, 2500])
def test_json_columns_stream_the_same_bytes_as_json_text(n):
    import io

    rng = np.random.default_rng(n)
    columns = {
        "tick": np.arange(n),
        "t_s": np.arange(n) / 60,
        "level": np.where(rng.random(n) < 0.2, -np.inf, rng.random(n)),
        "gone": np.full(n, np.nan),
    }
    for head in ({"schema": 1, "params": {"recording": 'a "b" \u00e9', "tick_s": "1/60"}}, {}):
        out = io.StringIO()
        write_json_columns(out, head, columns, chunk=1000)
        assert out.getvalue() == json_text({**head, **columns})


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_list_written_item_by_item_is_json_text(n):
    """``beats --format json`` writes its beats as it makes them: the same bytes as the whole text, whatever
    the items hold (nested lists, NaN, text to escape) and wherever the list stands among the keys."""
    import io

    from clock.io.output import write_json_lazily

    items = [
        {"index": i, "gaps_s": [0.5] * i, "t": float("nan") if i == 1 else i / 3, "text": 'a "b"\n'} for i in range(n)
    ]
    for obj in (
        {"schema": 1, "beats": items, "agreement": None},
        {"beats": items},
        {"params": {"floor": 0.003, "nested": [1, [2]]}, "beats": items},
    ):
        out = io.StringIO()
        write_json_lazily(out, {**obj, "beats": []}, "beats", iter(items))
        assert out.getvalue() == json_text(obj)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_workers_of_jobs_too(tmp_path, signum, code):
    folder = tmp_path / "long"
    folder.mkdir()
    for i in range(4):
        long_wav(folder / f"z{i}.wav", 10 * 3600)  # minutes of decoding in all: stopping must not wait for it
    log = tmp_path / "stderr"
    workers: list[int] = []
    with open(log, "wb") as err_file:  # a file, not a pipe: a worker left running must not hang the test
        proc = speechclock(
            "check", folder, "--allow-defaults", "--jobs", "2", stdout=subprocess.DEVNULL, stderr=err_file
        )
    try:
        deadline = time.monotonic() + 60
        while len(workers := children(proc.pid)) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signum)
        proc.wait(timeout=30)  # far less than the corpus takes
    finally:
        for pid in [proc.pid, *workers]:  # this test's own processes, whatever happened
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
    err = log.read_bytes()
    assert proc.returncode == code and b"Traceback" not in err, err
    deadline = time.monotonic() + 60  # a wait for them to go (a busy machine is slow to reap), not a race
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(w) for w in workers)  # not left decoding the rest of the corpus


# --- every output target is checked before the work --------------------------------


_CORPUS_TARGETS = [
    ("derive", "-o"),
    ("derive", "--plot"),
    ("check", "--junit"),
    ("sweep", "-o"),
    ("sweep", "--heatmap"),
    ("sweep", "--tradeoff"),
    ("report", "-o"),
    ("compare", "-o"),
    ("compare", "--plot"),
    ("stress", "-o"),
    ("stress", "--plot"),
]
_ONE_TARGETS = [("levels", "-o"), ("beats", "-o"), ("segments", "-o"), ("plot", "-o")]
_FIGURES = {"--plot", "--heatmap", "--tradeoff"}


def _bad_targets(tmp_path: Path, option: str, command: str) -> list[tuple[str, str]]:
    """(target, what the one line says) for each way an output cannot be written."""
    suffix = ".png" if option in _FIGURES or command == "plot" else ".html" if command == "report" else ".txt"
    ro = tmp_path / f"read-only{suffix}"
    if not ro.exists():
        ro.write_text("mine")
        ro.chmod(0o444)
    bad = [
        (str(ro), "not writable"),
        (str(tmp_path / "missing" / f"out{suffix}"), "does not exist"),
        ("", "an empty file name"),
        (str(tmp_path), "directory"),
    ]
    if Path("/dev/full").exists():  # a figure's name needs its suffix first
        bad.append(("/dev/full", "must end in .png" if option in _FIGURES or command == "plot" else "holds nothing"))
    if option in _FIGURES:
        bad.append((str(tmp_path / "figure.txt"), "must end in .png"))
    return bad


@pytest.fixture
def no_decoding(monkeypatch):
    """Decoding a recording is an error: what these runs refuse, they refuse before any."""
    import clock.io.recording as recording_module

    def refuse(*args, **kwargs):
        raise RuntimeError("DECODED-BEFORE-THE-OUTPUT-WAS-CHECKED")

    monkeypatch.setattr(recording_module, "iter_level_blocks", refuse)  # the levels' decode
    monkeypatch.setattr(recording_module, "iter_blocks", refuse)  # the waveform's


@pytest.mark.parametrize(("command", "option"), _CORPUS_TARGETS + _ONE_TARGETS)
def test_every_output_target_is_checked_before_the_work(cli, short_recordings, tmp_path, no_decoding, command, option):
    rec = tmp_path / "rec"
    shutil.copytree(short_recordings, rec)
    args = [command, rec if (command, option) in _CORPUS_TARGETS else rec / "short-en-029-44k.wav"]
    if command == "check":
        args.append("--allow-defaults")
    for target, says in _bad_targets(tmp_path, option, command):
        result = cli(*args, option, target, *(("--no-cache",) if (command, option) in _CORPUS_TARGETS else ()))
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2, (target, result.stderr)
        assert len(lines) == 1 and lines[0].startswith("speechclock: error:") and says in lines[0], (target, lines)
        assert target in lines[0] or option in lines[0], lines
        assert "DECODED" not in result.stderr
    assert all(p.read_text() == "mine" for p in tmp_path.glob("read-only.*"))
