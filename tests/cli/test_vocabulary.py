"""One vocabulary: an option means the same in every command; times as seconds or mm:ss.mmm; candidates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import numpy as np
import pytest

from clock.cli import main
from clock.cli.options import TIME
from clock.core.times import clock_time, parse_time
from clock.errors import InvalidParameterError

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def one_error(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("2.5", 2.5),
        ("130", 130.0),
        ("02:10", 130.0),
        ("2:10.5", 130.5),
        ("02:10.500", 130.5),
        ("75:00.000", 4500.0),  # what clock_time writes past an hour
        ("1:02:10", 3730.0),
        ("0:00:00.001", 0.001),
        ("-1.5", -1.5),
        (" 00:01.250 ", 1.25),
    ],
)
def test_times_read_as_seconds_or_mm_ss(text, seconds):
    assert parse_time(text) == pytest.approx(seconds, abs=1e-12)


@pytest.mark.parametrize("text", ["", "abc", "1:60", "1:2:3:4", "1:60:00", "nan", "inf", "-inf", "1e999", "2:", ":30"])
def test_malformed_times_are_refused(text):
    with pytest.raises(InvalidParameterError, match="the quiet time"):
        parse_time(text, "the quiet time")


def test_every_time_a_check_line_prints_reads_back(rng):
    for t in rng.uniform(0, 20000, 500):
        assert parse_time(clock_time(t)) == pytest.approx(round(t, 3), abs=5e-7)


def _options() -> dict[str, list[tuple[str, click.Option]]]:
    """Each option string -> [(command, option)] over every command."""
    seen: dict[str, list[tuple[str, click.Option]]] = {}
    for name, command in main.commands.items():
        for param in command.params:
            if isinstance(param, click.Option):
                for opt in (*param.opts, *param.secondary_opts):
                    seen.setdefault(opt, []).append((name, param))
    return seen


def test_an_option_means_the_same_in_every_command():
    for opt, uses in _options().items():
        meanings = {(p.name, type(p.type).__name__, p.is_flag, p.multiple) for _, p in uses}
        assert len(meanings) == 1, f"{opt} means different things: {sorted((c, p.name) for c, p in uses)}"


def test_no_option_is_the_ambiguous_quiet():
    # --quiet was a quiet time, a range and a progress switch; now --quiet-time, --quiet-times, --no-progress.
    options = _options()
    assert "--quiet" not in options and "-q" not in options
    corpus_commands = {"derive", "check", "sweep", "report", "compare", "stress"}
    assert {c for c, _ in options["--no-progress"]} == corpus_commands
    assert {c for c, _ in options["--quiet-times"]} == {"sweep", "report"}
    with_quiet_time = {"segments", "beats", "plot", "derive", "check", "report", "stress"}
    assert {c for c, _ in options["--quiet-time"]} == with_quiet_time


def test_every_time_option_takes_mm_ss():
    # Times in seconds are the options whose value ends in _s (the tick is a period, an exact fraction).
    for opt, uses in _options().items():
        for command, p in uses:
            if p.name and p.name.endswith("_s") and p.name != "tick_s":
                assert p.type is TIME, f"{command} {opt} does not take mm:ss.mmm"


def test_quiet_and_plot_times_as_mm_ss_give_the_same_output(cli, tmp_path):
    rec = RECORDINGS / "tour-en-us-48k.webm"
    seconds = cli("beats", rec, "--quiet-time", "2.5", "--onset-timeout", "10", "--format", "json")
    clock = cli("beats", rec, "--quiet-time", "00:02.500", "--onset-timeout", "0:10", "--format", "json")
    assert seconds.exit_code == 0 and clock.stdout == seconds.stdout
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert cli("plot", rec, "--start", "20", "--end", "35.5", "-o", a).exit_code == 0
    assert cli("plot", rec, "--start", "00:20", "--end", "00:35.500", "-o", b).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize(
    "args, option",
    [
        (["plot", "{rec}", "--start", "1:75", "-o", "{out}"], "--start"),
        (["beats", "{rec}", "--quiet-time", "2.5s"], "--quiet-time"),
        (["check", "{rec}", "--onset-timeout", "00:00"], "--onset-timeout"),
    ],
)
def test_a_bad_time_is_one_line_naming_the_option(cli, tmp_path, args, option):
    rec = RECORDINGS / "tour-en-us-48k.webm"
    result = cli(*[a.format(rec=rec, out=tmp_path / "p.png") for a in args])
    assert result.exit_code == 2 and f"'{option}'" in one_error(result)


@pytest.mark.parametrize(
    "args, instead",
    [
        (["derive", "--quiet", "2.5"], "--quiet-time S (the quiet time) or --no-progress"),
        (["sweep", "--quiet", "2:3:0.5"], "--quiet-times LO:HI:STEP (the quiet times to sweep) or --no-progress"),
        (
            ["report", "--quiet", "2:3:0.5", "-o", "{out}"],
            "--quiet-time S (the quiet time) or --quiet-times LO:HI:STEP (the quiet times to sweep) or --no-progress",
        ),
        (["check", "-q"], "--no-progress"),
        (["sweep", "--floor", "0.003"], "--floors LO:HI:STEP (the floors to sweep)"),
    ],
)
def test_a_renamed_option_names_its_new_name(cli, tmp_path, args, instead):
    command, *rest = args
    result = cli(command, RECORDINGS, *[a.format(out=tmp_path / "r.html") for a in rest])
    assert result.exit_code == 2
    old = rest[0]
    assert one_error(result) == f"speechclock: error: no option {old}: use {instead} (see 'main {command} --help')"


def test_an_option_a_command_never_had_gets_clicks_own_message(cli):
    result = cli("levels", RECORDINGS / "tour-en-us-48k.webm", "--quiet")
    assert result.exit_code == 2 and "No such option" in one_error(result)


def _outcome_counts(outcome: dict) -> tuple[int, int, int, int, int]:
    return tuple(outcome[k] for k in ("n_ok", "n_premature", "n_stalled", "n_missed_onset", "n_aborted"))  # type: ignore[return-value]


@pytest.mark.parametrize("floor, quiet, timeout", [("0.002", "2.0", "10"), ("0.003", "2.5", "1"), ("0.02", "3", "4")])
def test_derive_replays_a_candidate_as_the_sweep_does(cli, floor, quiet, timeout):
    # Two independent replays: derive's tick replay of the candidate, and the sweep's decision over quiet times.
    derived = cli(
        "derive", RECORDINGS, "--format", "json", "--floor", floor, "--quiet-time", quiet, "--onset-timeout", timeout
    )
    assert derived.exit_code == 0, derived.stderr
    group = json.loads(derived.stdout)["groups"][0]
    compared = group["compared"]
    assert compared["label"] == "candidate"
    assert (compared["floor"], compared["quiet_s"], compared["onset_timeout_s"]) == tuple(
        map(float, (floor, quiet, timeout))
    )
    swept = cli(
        "sweep", RECORDINGS, "--floors", floor, "--quiet-times", quiet, "--onset-timeout", timeout, "--format", "json"
    )
    (point,) = json.loads(swept.stdout)["points"]
    assert _outcome_counts(compared["outcome"]) == _outcome_counts(point)
    o = compared["outcome"]
    assert o["n_ok"] + len(o["unsatisfied"]) + o["n_aborted"] == point["n_beats"]
    assert o["n_aborted"] == 1  # the sample session's last beat: the page ended it while the guide spoke


def test_derive_replays_the_committed_setting_beside_the_recommendation(cli):
    text = cli("derive", RECORDINGS).stdout
    header = text.splitlines()[1].split()
    assert header == ["recommended", "evidence", "committed"]
    assert "committed (floor 0.003, quiet 2.5 s, onset timeout 10 s) replayed over 5 recordings" in text
    candidate = cli("derive", RECORDINGS, "--quiet-time", "2").stdout
    assert candidate.splitlines()[1].split()[-1] == "candidate"
    assert "candidate (floor 0.003, quiet 2 s, onset timeout 10 s) replayed" in candidate


def test_check_with_a_candidate_is_check_with_that_config(cli, tmp_path):
    folder = tmp_path / "edited"
    folder.mkdir()
    shutil.copy(RECORDINGS / "baseline.json", folder / "baseline.json")
    toml = (RECORDINGS / "speechclock.toml").read_text()
    edited = toml.replace("floor = 0.003 ", "floor = 0.002 ").replace("quiet_s = 2.5 ", "quiet_s = 2.1 ")
    assert edited != toml
    (folder / "speechclock.toml").write_text(edited)
    by_config = cli("check", RECORDINGS, "--config", folder / "speechclock.toml", "--format", "json")
    by_options = cli("check", RECORDINGS, "--floor", "0.002", "--quiet-time", "2.1", "--format", "json")
    assert by_options.exit_code == by_config.exit_code == 1  # 2.1 s cuts narration gaps short
    a, b = json.loads(by_config.stdout), json.loads(by_options.stdout)
    # The same checks, except the page's logged decisions: the edited config says the page ran 0.002 / 2.1 s,
    # the options only try them (the page ran the committed setting), so there they are not compared.
    same = [r for r in a["results"] if r["check"] != "logged-quiet"]
    assert same == [r for r in b["results"] if r["check"] != "logged-quiet"]
    assert all(not r["applicable"] for r in b["results"] if r["check"] == "logged-quiet")
    assert b["config"] == f"{RECORDINGS / 'speechclock.toml'}, with --floor 0.002 --quiet-time 2.1"
    text = cli("check", RECORDINGS, "--floor", "0.002", "--quiet-time", "2.1").stdout
    assert text.splitlines()[0] == f"config: {RECORDINGS / 'speechclock.toml'}, with --floor 0.002 --quiet-time 2.1"


def test_report_shows_a_candidate_in_place_of_the_committed_setting(
    cli, tmp_path, short_recordings, figures_unrendered
):
    out = tmp_path / "r.html"
    args = ("--floors", "0.003", "--quiet-times", "2.5")
    assert cli("report", short_recordings, "-o", out, *args, "--quiet-time", "2.1").exit_code == 0
    page = out.read_text()
    assert "<th>candidate</th>" in page and "<th>committed</th>" not in page
    assert "candidate (floor 0.003, quiet 2.1 s, onset timeout 10 s) replayed" in page
    assert "with --quiet-time 2.1" in page


def test_sweep_takes_the_onset_timeout_for_every_setting(cli):
    args = ("sweep", RECORDINGS, "--floors", "0.003", "--quiet-times", "2.5", "--format", "json")
    long, short = (json.loads(cli(*args, "--onset-timeout", t).stdout) for t in ("10", "0.5"))
    assert long["onset_timeout_s"] == 10 and short["onset_timeout_s"] == 0.5
    # Half a second is shorter than every bundled onset latency: the clock gives up on beats it would have ended.
    assert short["points"][0]["n_missed_onset"] > 0 == long["points"][0]["n_missed_onset"]
    assert np.isfinite(long["points"][0]["latency_max_s"])
