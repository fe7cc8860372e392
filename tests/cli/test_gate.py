"""The CI gate: nothing checked is not a pass, a refused output leaves nothing, every documented value works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sessions import Session


def _tour(folder: Path, name: str, *, log: bool = True, terminals: bool = True, speech: bool = True) -> Path:
    """A constructed 12 s session: three utterances after a terminal response (or none), its log (or none)."""
    s = Session(12.0)
    if speech:
        s.say(1.0, 2.0).say(2.6, 3.6).say(4.2, 5.0)
    s.event("prompt", 0.2)
    if terminals:
        s.event("terminal_response", 0.5)
    path = s.write(folder, name)
    if not log:
        path.with_name(f"{name}.events.jsonl").unlink()
    return path


def _config(folder: Path, extra: str = "") -> Path:
    path = folder / "speechclock.toml"
    path.write_text("[thresholds]\nfloor = 0.003\nquiet_s = 2.5\nonset_timeout_s = 10\n" + extra)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    _tour(tmp_path, "logged")
    _tour(tmp_path, "bare", log=False)
    _tour(tmp_path, "noterminal", terminals=False)
    _tour(tmp_path, "silent", speech=False, terminals=False)
    return tmp_path


def test_a_recording_with_nothing_to_check_fails_check_with_one_line_naming_it(cli, folder):
    _config(folder)
    result = cli("check", folder, "--no-progress")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    bare = [line for line in lines if line.startswith("bare.wav:") and "beat-count" in line]
    assert bare == [
        "bare.wav:--:--.---: beat-count: no event log (bare.events.jsonl): no beat checked vs beats to check "
        "(or log = false in its [recordings] entry)"
    ]
    assert [line for line in lines if line.startswith("noterminal.wav:") and "beat-count" in line] == [
        "noterminal.wav:--:--.---: beat-count: no terminal response in its log: no beat checked vs beats to check "
        "(or beats = 0 in its [recordings] entry)"
    ]
    silent = [line for line in lines if line.startswith("silent.wav:") and "speech-level" in line]
    assert len(silent) == 1 and "no speech ticks" in silent[0] and "speech = false" in silent[0]
    assert not any(line.startswith("logged.wav:") and ":" in line.split(": ", 1)[0][9:] for line in lines)
    # The JSON view counts the same failures.
    data = json.loads(cli("check", folder, "--no-progress", "--format", "json").stdout)
    failing = {(r["recording"], r["check"]) for r in data["results"] if not r["passed"]}
    assert {("bare.wav", "beat-count"), ("noterminal.wav", "beat-count"), ("silent.wav", "speech-level")} <= failing
    assert not data["passed"]


def test_the_config_says_which_recordings_are_expected_to_have_none(cli, folder):
    _config(
        folder,
        '[recordings."bare.wav"]\nlog = false\n[recordings."noterminal.wav"]\nbeats = 0\n'
        '[recordings."silent.wav"]\nspeech = false\nbeats = 0\n',
    )
    result = cli("check", folder, "--no-progress", "--format", "json")
    data = json.loads(result.stdout)
    failing = [(r["recording"], r["check"], r["detail"]) for r in data["results"] if not r["passed"]]
    assert not any(check in ("beat-count", "speech-level") for _, check, _ in failing), failing
    silent = [r for r in data["results"] if r["recording"] == "silent.wav" and r["check"] == "speech-level"]
    assert [(r["passed"], r["applicable"]) for r in silent] == [(True, False)]


def test_a_config_key_for_none_expected_is_a_boolean(cli, folder):
    _config(folder, '[recordings."bare.wav"]\nlog = "no"\n')
    result = cli("check", folder, "--no-progress")
    assert result.exit_code == 2
    assert "key 'recordings.bare.wav.log': must be bool" in result.output


def test_derive_leads_with_what_it_could_not_use(cli, folder):
    _config(folder)
    lines = cli("derive", folder, "--no-progress").stdout.splitlines()
    assert lines[:4] == [
        "could not use: bare.wav: no event log (bare.events.jsonl), so no beats: no onset latency, and every "
        "silence in it counts as a narration gap",
        "could not use: noterminal.wav: its event log has no terminal response, so no beats",
        "could not use: silent.wav: its event log has no terminal response, so no beats",
        "could not use: silent.wav: no speech, so no speech level",
    ]
    assert lines[4].startswith("== all: 4 recordings")


# --- nothing left behind: a refused output writes nothing; a signal at the end still exits 130/143 ----------------


def _speechclock(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clock", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.parametrize("name", ["new-out.webm", "new.events.jsonl", "speechclock.toml"])
def test_a_refused_junit_path_leaves_no_file(tmp_path, name):
    rec = _tour(tmp_path, "logged")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _speechclock("check", rec, "--allow-defaults", "--junit", tmp_path / name)
    assert result.returncode == 2, result.stderr
    assert "refusing to write --junit" in result.stderr or "--junit" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before


_LATE_SIGNAL = """
import atexit, os, signal, sys
from clock.cli import run  # the command line's handlers, and its last exit handler, are in place

SIG = signal.{sig}


def late():  # after the output is written and the run's code is set, as Python shuts down
    if {held}:
        signal.pthread_sigmask(signal.SIG_BLOCK, {{SIG}})  # one that comes where no handler can run
    os.kill(os.getpid(), SIG)


atexit.register(late)  # registered after the command line's: runs before its last exit handler
run()
"""


@pytest.mark.parametrize("held", [False, True], ids=["delivered", "held"])
@pytest.mark.parametrize(("sig", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_after_the_output_is_written_exits_130_or_143(tmp_path, sig, code, held):
    rec = _tour(tmp_path, "logged")
    script = tmp_path / "bin" / "speechclock"  # named as the console script: the command line's own start-up
    script.parent.mkdir()
    script.write_text(_LATE_SIGNAL.format(sig=sig, held=held))
    # One thread (no BLAS pool): the held signal stays pending for the main thread, whatever the machine's load.
    env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, str(script), "info", rec], capture_output=True, text=True, env=env)
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "logged.wav" in result.stdout  # the output was written first
    assert result.stderr.endswith("speechclock: interrupted\n")
    # Unsignalled, the same script exits 0 (the last exit handler keeps the run's own code).
    script.write_text("from clock.cli import run\nrun()\n")
    assert subprocess.run([sys.executable, str(script), "info", rec], capture_output=True, timeout=300).returncode == 0


# --- every documented value works: each config key and option at the edges of its documented domain -------------

#: Each key of docs/formats.md's bounds table, at the low and high edge of its documented domain ("above 0" is
#: driven with the smallest value a config would say, 0.001).
_KEY_EDGES = {
    "thresholds.floor": (0, 1),
    "thresholds.quiet_s": (0.001, 3600),
    "thresholds.onset_timeout_s": (0.001, 3600),
    "thresholds.max_dead_air_s": (0.001, 3600),
    "thresholds.tick_s": ('"0.001"', '"60"'),
    "thresholds.fft_size": (32, 32768),
    "margins.quiet_margin_s": (0, 60),
    "margins.min_gap_s": (0, 60),
    "margins.floor_margin_db": (0, 60),
    "margins.onset_margin_s": (0, 3600),
    "margins.speech_range_db": (0, 120),
    "margins.speech_percentile": (0.001, 99.999),
    "margins.min_saving_s": (0, 60),
    "thresholds.rule": ('"level"', '"stopped"'),
    # (A hangover goes with a rule that has one, under the quiet time: the rule is written beside it.)
    "thresholds.hangover_s": ('0.001\nrule = "stopped+quiet"', '2.49\nrule = "level+stopped"'),
    "baseline.onset_tolerance_s": (0, 60),
    "baseline.max_gap_tolerance_s": (0, 60),
    "agreement.search_s": (0, 10),
    "recordings.beats": (0, 1_000_000),
    "robustness.min_gain_db": (0, 18),
    "robustness.min_gain_up_db": (0, 12),
    "robustness.max_noise_dbfs": (-80, -35),
    "robustness.min_bitrate_kbps": (6, 64),
    "robustness.max_loss_pct": (0, 20),
    "robustness.min_pause_ms": (0, 400),
}


def _documented_keys() -> set[str]:
    """The keys of docs/formats.md's table of bounds (``recordings."NAME".beats`` as ``recordings.beats``)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    table = text[text.index("| key | bounds |") :].split("\n\n", 1)[0]
    keys = set()
    for row in table.splitlines()[2:]:
        for cell in row.split("|")[1].split(","):
            key = cell.strip().strip("`").replace('."NAME"', "")
            if key != "baseline.file":  # a path, not a number: tests/cli/test_hostile.py drives its edges
                keys.add(key)
    return keys


def test_every_documented_bound_is_driven():
    assert _documented_keys() == set(_KEY_EDGES)


@pytest.fixture(scope="module")
def edge_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("edges")
    _tour(folder, "logged")
    return folder


@pytest.mark.parametrize("edge", [0, 1], ids=["low", "high"])
@pytest.mark.parametrize("key", sorted(_KEY_EDGES))
def test_each_config_key_works_at_the_edges_of_its_domain(cli, edge_folder, key, edge):
    section, name = key.split(".")
    value = _KEY_EDGES[key][edge]
    head = '[recordings."logged.wav"]' if section == "recordings" else f"[{section}]"
    (edge_folder / "speechclock.toml").write_text(f"{head}\n{name} = {value}\n")
    commands = [("check",)] if section == "robustness" else [("check",), ("derive",)]
    for command in commands:
        result = cli(*command, edge_folder, "--no-progress", "--no-cache")
        assert result.exit_code in (0, 1), (key, value, command, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output


#: The config's booleans and its other keys without bounds in the table, each at both of its values or a
#: representative (every string is its own domain's edge: empty, and long).
_OTHER_KEYS = {
    "agreement.align_log": ("true", "false"),
    "recordings.log": ("true", "false"),
    "recordings.speech": ("true", "false"),
    "recordings.voice": ('""', '"' + "v" * 1000 + '"'),
    "recordings.notes": ('""', '"' + "n" * 1000 + '"'),
    "agreement.lossless_tolerance": (0, 1),
    "agreement.recorder_tolerance": (0, 1),
    "agreement.max_floor_disagreements": (0, 1_000_000),
}


@pytest.mark.parametrize("edge", [0, 1], ids=["low", "high"])
@pytest.mark.parametrize("key", sorted(_OTHER_KEYS))
def test_each_other_config_key_works_at_both_ends(cli, edge_folder, key, edge):
    section, name = key.split(".")
    head = '[recordings."logged.wav"]' if section == "recordings" else f"[{section}]"
    (edge_folder / "speechclock.toml").write_text(f"{head}\n{name} = {_OTHER_KEYS[key][edge]}\n")
    for command in ("check", "derive"):
        result = cli(command, edge_folder, "--no-progress", "--no-cache")
        assert result.exit_code in (0, 1), (key, command, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output


#: The level and segment options at the edges of their documented domains (a tick between 1 ms and 60 s: at
#: 48 kHz, 48 to 2,880,000 frames).
_LEVEL_OPTION_EDGES = [
    ("beats", "--tick", "0.001"),
    ("beats", "--tick", "60"),
    ("beats", "--tick-frames", "48"),
    ("beats", "--tick-frames", "2880000"),
    ("beats", "--fft-size", "32"),
    ("beats", "--fft-size", "32768"),
    ("beats", "--context-rate", "3000"),
    ("beats", "--context-rate", "768000"),
    ("beats", "--align", "floor"),
    ("segments", "--min-gap", "0"),
    ("segments", "--min-gap", "3600"),
    ("segments", "--min-speech", "0"),
    ("segments", "--min-speech", "3600"),
    ("derive", "--jobs", "1"),
    ("derive", "--jobs", "256"),
]


@pytest.mark.parametrize(("command", "option", "value"), _LEVEL_OPTION_EDGES)
def test_each_level_option_works_at_the_edges_of_its_domain(cli, tmp_path, command, option, value):
    rec = Session(2.0).say(0.3, 0.8).say(1.0, 1.5).event("prompt", 0.1).event("terminal_response", 0.2)
    path = rec.write(tmp_path, "tiny")
    result = cli(command, path, option, value)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


#: The sweep's ranges and the plot's zoom at the edges of theirs (floors 0 to 1, quiet times 1 ms to an hour; a
#: zoom from the start to the end, or the last 10 ms).
_RANGE_EDGES = [
    ("sweep", "--floors", "0:1:0.5", "--quiet-times", "0.001:0.003:0.001"),
    ("sweep", "--floors", "1:1:0.1", "--quiet-times", "3600:3600:1"),
    ("plot", "--start", "0", "--end", "2"),
    ("plot", "--start", "1.99", "--end", "2"),
    ("plot", "--beat", "1"),
    ("plot", "--view", "beats"),
]


@pytest.mark.parametrize("args", _RANGE_EDGES, ids=" ".join)
def test_the_sweep_ranges_and_the_plot_zoom_work_at_their_edges(cli, tmp_path, args):
    rec = Session(2.0).say(0.3, 0.8).say(1.0, 1.5).event("prompt", 0.1).event("terminal_response", 0.2)
    path = rec.write(tmp_path, "tiny")
    extra = ["-o", tmp_path / "x.png"] if args[0] == "plot" else []
    result = cli(args[0], path, *args[1:], *extra)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


_OPTION_EDGES = {
    "--floor": ("0", "1"),
    "--quiet-time": ("0.001", "3600"),
    "--onset-timeout": ("0.001", "3600"),
}


@pytest.mark.parametrize("edge", [0, 1], ids=["low", "high"])
@pytest.mark.parametrize("option", sorted(_OPTION_EDGES))
def test_each_threshold_option_works_at_the_edges_of_its_domain(cli, edge_folder, option, edge):
    (edge_folder / "speechclock.toml").write_text("")
    for command in ("check", "derive", "beats"):
        target = [edge_folder / "logged.wav"] if command == "beats" else [edge_folder, "--no-cache"]
        result = cli(command, *target, option, _OPTION_EDGES[option][edge])
        assert result.exit_code in (0, 1), (option, command, result.output)
        assert "internal error" not in result.output and "Traceback" not in result.output


# --- folders and paths ------------------------------------------------------------------------------------------


def test_a_config_path_too_long_to_exist_is_no_config_there(cli, tmp_path):
    """A recording whose path is 4,085 characters: speechclock.toml beside it would be longer than a path can be."""
    folder = str(tmp_path)
    while len(folder) < 4079 - 201:
        folder += "/" + "d" * 200
    folder += "/" + "e" * (4079 - len(folder) - 1)
    os.makedirs(folder)
    for made in (_tour(tmp_path, "a"), tmp_path / "a.events.jsonl"):  # (libsndfile writes no such path)
        os.rename(made, os.path.join(folder, made.name))
    rec = Path(folder) / "a.wav"
    assert len(str(rec)) == 4085
    result = cli("beats", rec)
    assert result.exit_code == 0, result.output
    assert "beat" in result.stdout
    result = cli("check", rec, "--no-progress")
    assert result.exit_code == 2 and "speechclock.toml: no config: give --config FILE" in result.output, result.output


def test_an_unknown_by_key_is_an_error_naming_the_known_ones(cli, folder):
    _config(folder, '[recordings."logged.wav"]\nvoice = "alloy"\n')
    result = cli("derive", folder, "--no-progress", "--by", "voce")
    assert result.exit_code == 2
    assert "'--by': no recording has the key 'voce' (known: voice;" in result.output
    assert cli("derive", folder, "--no-progress", "--by", "voice").exit_code == 0


def test_every_skipped_corpus_entry_is_named_with_why(cli, tmp_path):
    real = _tour(tmp_path, "real")
    _config(tmp_path, '[recordings."real.wav"]\nbeats = 1\n')
    (tmp_path / "broken.wav").symlink_to("nothere.wav")
    (tmp_path / "loop.wav").symlink_to("loop.wav")
    (tmp_path / "again.wav").symlink_to(real.name)  # sorted first: the file is kept by its own name
    os.mkfifo(tmp_path / "pipe.webm")
    (tmp_path / "dir.ogg").mkdir()
    result = cli("check", tmp_path, "--no-progress")
    warned = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert warned == [
        f"speechclock: warning: {tmp_path}/broken.wav: skipped: a broken symbolic link (to nothere.wav, which does "
        "not exist)",
        f"speechclock: warning: {tmp_path}/dir.ogg: skipped: a directory, not a recording",
        f"speechclock: warning: {tmp_path}/loop.wav: skipped: a symbolic link loop (to loop.wav)",
        f"speechclock: warning: {tmp_path}/pipe.webm: skipped: a FIFO (named pipe), not a recording",
        f"speechclock: warning: {tmp_path}/again.wav: skipped: the same file as {tmp_path}/real.wav (counted once)",
    ]
    assert result.stdout.splitlines()[-1].startswith("14 checks on 1 recording:")


# --- the first hour ---------------------------------------------------------------------------------------------


def test_derive_writes_a_config_for_the_users_recordings_and_never_replaces_one(cli, folder):
    from clock.io.config import read_config

    target = folder / "speechclock.toml"
    result = cli("derive", folder, "--no-progress", "--format", "toml", "-o", target)
    assert result.exit_code == 0, result.output
    cfg = read_config(target)
    assert cfg.recordings == {
        "bare.wav": {"log": False},
        "logged.wav": {"beats": 1},
        "noterminal.wav": {"beats": 0},
        "silent.wav": {"beats": 0, "speech": False},
    }
    table = json.loads(cli("derive", folder, "--no-progress", "--format", "json").stdout)
    rec = table["groups"][0]["recommended"]
    th = cfg.thresholds
    assert (th.floor, th.quiet_s, th.onset_timeout_s) == (rec["floor"], rec["quiet_s"], rec["onset_timeout_s"])
    # check with it: every recording held to what it has, so the gate passes on what it can check
    checked = cli("check", folder, "--no-progress")
    assert checked.exit_code == 0, checked.output
    # never replaced: the user's file (this one, now) stays as it is
    before = target.read_bytes()
    again = cli("derive", folder, "--no-progress", "--format", "toml", "-o", target)
    assert again.exit_code == 2
    assert "exists; derive --format toml never replaces a file" in again.output
    assert target.read_bytes() == before


def test_beats_replays_at_the_setting_the_log_says_as_check_does(cli, tmp_path):
    """A constructed beat whose narration has a 2.0 s pause: the page ran quiet 1.5 s (its clock.setting line), the
    config says 2.5 s. At 1.5 s the clock ends the beat in the pause (premature); at 2.5 s it does not."""
    s = Session(14.0).say(1.0, 2.0).say(4.0, 5.0)
    s.event("clock.setting", 0.0, floor=0.003, quiet_s=1.5, onset_timeout_s=None, tick_s="1/60", fft_size=2048)
    s.event("prompt", 0.2).event("terminal_response", 0.5)
    rec = s.write(tmp_path, "paused")
    _config(tmp_path)  # quiet_s = 2.5 committed
    shown = cli("beats", rec).stdout.splitlines()
    assert shown[0] == f"{rec}: 1 beats; floor 0.003, quiet 1.5 s, tick 1/60 s"
    assert shown[1] == (
        "replayed at the setting the log says the page ran (floor 0.003, quiet 1.5 s, onset timeout none (waits "
        "forever)), as check does; give --floor, --quiet-time, --onset-timeout to replay another"
    )
    assert "premature" in shown[3]
    given = cli("beats", rec, "--quiet-time", "2.5", "--format", "json").stdout
    params = json.loads(given)["params"]
    assert params["quiet_s"] == 2.5 and params["setting_from_log"] == ["floor", "onset_timeout_s"]
    assert json.loads(given)["beats"][0]["outcome"] == "ok"


def test_a_log_whose_times_look_like_milliseconds_says_so(cli, tmp_path):
    s = Session(12.0).say(1.0, 2.0).event("prompt", 200.0).event("terminal_response", 500.0)  # ms under "t"
    rec = s.write(tmp_path, "ms")
    _config(tmp_path)
    result = cli("check", rec, "--no-progress")
    assert (
        f"speechclock: warning: {tmp_path}/ms.events.jsonl: its times look like milliseconds (2 of 2 events lie "
        "after the recording's end at 12.000 s, the latest at 500; in milliseconds all would lie inside it): write "
        "seconds under 't', or milliseconds under 't_ms'"
    ) in result.stderr.splitlines()
    s.events = [{**e, "t": e["t"] / 1000} for e in s.events]  # in seconds: no such line
    s.write(tmp_path, "ms")
    assert "milliseconds" not in cli("check", rec, "--no-progress").stderr


def test_stress_reports_progress_off_a_terminal(cli, tmp_path):
    for name in ("a", "b"):
        Session(8.0).say(1.0, 2.0).say(2.6, 3.6).event("prompt", 0.2).event("terminal_response", 0.5).write(
            tmp_path, name
        )
    result = cli("stress", tmp_path, "--axes", "gain")
    assert result.exit_code == 0, result.output
    progress = [line for line in result.stderr.splitlines() if line.startswith("speechclock: stress: ")]
    assert progress == [
        "speechclock: stress: 1 of 2 recordings done (a.wav)",
        "speechclock: stress: 2 of 2 recordings done (b.wav)",
    ]
    quiet = cli("stress", tmp_path, "--axes", "gain", "--no-progress")
    assert not any(line.startswith("stress: ") for line in quiet.stderr.splitlines())


def test_a_recorder_capture_is_aligned_by_default_else_the_failing_line_names_align_log(cli, tmp_path):
    from test_cli_agreement import write_session

    write_session(tmp_path, late_quanta=-20, capture="recorder")  # its frames 20 quanta (53 ms) off: uncertain start
    (tmp_path / "speechclock.toml").write_text("[thresholds]\nquiet_s = 1.0\n")
    aligned = json.loads(cli("check", tmp_path, "--no-progress", "--format", "json").stdout)
    quiet = [r for r in aligned["results"] if r["check"] == "logged-quiet"]
    assert quiet and all(r["passed"] for r in quiet), quiet
    (tmp_path / "speechclock.toml").write_text("[thresholds]\nquiet_s = 1.0\n[agreement]\nalign_log = false\n")
    result = cli("check", tmp_path, "--no-progress")
    failing = [line for line in result.stdout.splitlines() if ": logged-quiet: " in line]
    assert result.exit_code == 1 and failing, result.output
    assert all(
        "; the start is uncertain (MediaRecorder): align_log = true in [agreement] aligns the log by its readings vs"
        in line
        for line in failing
    ), failing


# --- bounded in events: plot and report draw dense events aggregated, and say so ---------------------------------


def _event_dense_session(folder: Path, n_events: int) -> Path:
    """60 s of 16 kHz WAV (a burst every 2 s, a terminal response before every tenth) and ``n_events`` more events."""
    from audiofiles import write_burst_session

    rec = folder / "dense.wav"
    write_burst_session(rec, seconds=60.0, rate=16000, starts=np.arange(1.0, 59.0, 2.0))
    log = rec.with_name("dense.events.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = ("tool_call", "prompt", "arrived", "input_audio_buffer.speech_started")
    times = np.linspace(0.05, 59.0, n_events - len(lines))
    lines += [{"type": kinds[i % 4], "t": round(float(t), 4)} for i, t in enumerate(times)]
    lines.sort(key=lambda d: d["t"])
    log.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return rec


def test_dense_events_are_drawn_aggregated_and_the_figure_says_so(tmp_path):
    from clock.core.segments import segments
    from clock.io.recording import read_recording
    from clock.report.plot import MAX_EVENT_LINES, plot_recording

    rec = read_recording(_event_dense_session(tmp_path, 20_000))
    fig = plot_recording(rec.trace, floor=0.003, segmentation=segments(rec.trace, floor=0.003), events=rec.events)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("20000 events in view: too many to label; drawn aggregated, one line per") for t in texts)
    assert len(texts) < 50  # no label per event
    lines = fig.axes[0].collections[0].get_segments()
    assert len(lines) <= 4 * MAX_EVENT_LINES  # a line per colour and bin, not per event


@pytest.mark.parametrize("command", ["plot", "report"])
def test_plot_and_report_stay_under_200_mb_at_100000_events_and_grow_linearly(tmp_path, command):
    from test_memory import peak_rss_bytes

    peaks = []
    for n in (20_000, 100_000):
        folder = tmp_path / str(n)
        folder.mkdir()
        rec = _event_dense_session(folder, n)
        if command == "plot":
            peaks.append(peak_rss_bytes("plot", rec, "-o", folder / "x.png"))
        else:
            peaks.append(peak_rss_bytes("report", folder, "--allow-defaults", "-o", folder / "x.html", "--no-progress"))
    assert peaks[1] < 200e6, peaks
    # Five times the events: the peak grows by what the events themselves cost (about 160 bytes each here; the
    # bound is 500), never by a drawn artist per event (kilobytes each).
    assert peaks[1] - peaks[0] < 40e6, peaks
