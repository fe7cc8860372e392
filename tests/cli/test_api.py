"""The public Python API: what the commands use, importable and documented."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import clock
import clock.api
import clock.core.beats
import clock.core.levels
import clock.core.recommend.engine


def test_every_public_name_resolves_and_is_documented():
    for name in clock.__all__:
        obj = getattr(clock, name)
        if callable(obj) and not name.startswith("_"):
            assert inspect.getdoc(obj), f"clock.{name} has no docstring"


def test_the_api_is_what_the_commands_use():
    assert clock.levels is clock.core.levels.levels
    assert clock.beats is clock.core.beats.beats
    assert clock.derive is clock.api.derive
    from clock.cli import derive, report, sweep

    assert report.find_beats is clock.beats and report.run_sweep is clock.sweep and sweep.run_sweep is clock.sweep
    assert derive.derive_thresholds is clock.derive and report.derive_thresholds is clock.derive


def test_options_after_the_signal_are_keyword_only():
    for fn in (clock.levels, clock.segments, clock.beats, clock.replay, clock.derive, clock.sweep):
        params = list(inspect.signature(fn).parameters.values())
        positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert len(positional) <= 2, fn.__name__
        assert all(p.kind is p.KEYWORD_ONLY for p in params[len(positional) :]), fn.__name__


def test_file_and_plot_helpers_load_their_libraries_only_when_used():
    code = (
        "import sys, clock\n"
        "heavy = ('matplotlib', 'soundfile', 'av')\n"
        "print(any(m in sys.modules for m in heavy))\n"
        "from clock.report.plot import plot_recording\n"
        "from clock.io.recording import read_recording\n"
        "print(clock.plot_recording is plot_recording and clock.read_recording is read_recording)\n"
        "print(any(m in sys.modules for m in heavy))\n"
        "clock.probe('recordings/short-en-029-44k.wav')\n"
        "print('soundfile' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(clock.__file__).resolve().parent.parent,
    )
    assert done.stdout.split() == ["False", "True", "False", "True"]


def test_cli_defaults_are_the_library_defaults(cli):
    d = clock.DEFAULT_THRESHOLDS
    text = " ".join(cli("beats", "--help").stdout.split())
    assert f"[default: the config's, else {d.floor}]" in text and f"[default: the config's, else {d.quiet_s}]" in text
    assert f"[default: the config's, else {d.onset_timeout_s}]" in text and f"[default: {d.fft_size}]" in " ".join(
        cli("levels", "--help").stdout.split()
    )


def test_api_defaults_equal_the_command_line_defaults():
    from clock.cli.options import DEFAULT_THRESHOLDS

    for fn in (clock.beats, clock.replay, clock.replay_ticks, clock.sweep):
        default = inspect.signature(fn).parameters["onset_timeout_s"].default
        assert default == DEFAULT_THRESHOLDS.onset_timeout_s == 10.0, fn.__name__


def test_results_become_dataframes_named_as_their_json(short_recordings):
    import json

    corpus = clock.load_corpus([short_recordings])
    rec = corpus.recordings[1]
    found = clock.beats(rec.trace, rec.events, floor=0.003, quiet_s=2.5)
    frame = clock.to_frame(found)
    from clock.io.serialize import beats_dict

    fields = set(beats_dict("x", corpus.config.thresholds, found)["beats"][0])
    assert fields <= set(frame.columns) and len(frame) == len(found)
    assert list(frame["onset_s"]) == [b.onset_s for b in found]
    trace = clock.to_frame(rec.trace)
    assert list(trace.columns) == ["tick", "t_s", "frame", "level"] and len(trace) == rec.trace.n_ticks
    d = clock.derive(corpus.observations)
    windows = clock.to_frame(d)
    assert list(windows["name"]) == [r.name for r in d.floor.recordings]
    result = clock.sweep(corpus.observations, floors=[0.003], quiets_s=[2.5], derivation=d)
    points = clock.to_frame(result)
    assert json.loads(points.to_json(orient="records"))[0]["n_ok"] == result.points[0].tally.n_ok


def test_check_is_the_command_lines_check_and_optional_numbers_are_nan_floats(tmp_path):
    import math
    import shutil

    import pytest

    recordings = Path(__file__).resolve().parents[2] / "recordings"
    params = inspect.signature(clock.check).parameters
    assert [p for p in params if params[p].kind is params[p].KEYWORD_ONLY][:2] == ["thresholds", "config"]
    corpus = clock.load_corpus([recordings])
    results = clock.check(corpus, thresholds={"quiet_s": 1.0})
    assert clock.check_counts(results).failed >= 1  # a quiet time shorter than the narration's gaps
    assert clock.check(corpus) == clock.check(recordings)
    frame = clock.to_frame(results)
    for column in ("t_s", "measured", "threshold"):
        assert frame[column].dtype == float, column
    assert frame["t_s"].isna().any() and frame["t_s"].notna().any()
    assert [None if math.isnan(t) else t for t in frame["t_s"]] == [r.t_s for r in results]
    rec = corpus.recordings[1]
    beats = clock.to_frame(clock.beats(rec.trace, rec.events, floor=0.003, quiet_s=2.5))
    optional = ("onset_s", "ack_last_word_s", "provider_stopped_s", "barge_in_s", "provider_stopped_vs_last_word_s")
    assert all(beats[c].dtype == float for c in optional) and beats["barge_in_s"].isna().all()
    bare = tmp_path / "bare"
    shutil.copytree(recordings, bare, ignore=shutil.ignore_patterns("*.py", "*.toml", "*.json", "__pycache__"))
    with pytest.raises(clock.ConfigError, match="no speechclock.toml"):
        clock.check(bare)
    assert clock.check(bare, thresholds=clock.DEFAULT_THRESHOLDS)


def test_check_gives_the_checks_the_command_gives_robustness_included(cli, tmp_path):
    import json

    from test_stress import QUIET_SYLLABLE, WORDS, recording

    recording(tmp_path, "quiet", QUIET_SYLLABLE)  # breaks at -11 dB of gain
    recording(tmp_path, "loud", WORDS)  # holds to -18 dB
    (tmp_path / "speechclock.toml").write_text(
        "[thresholds]\nfloor = 0.003\nquiet_s = 2.0\n\n[robustness]\nmin_gain_db = 12\n"
    )
    doc = json.loads(cli("check", tmp_path, "--format", "json").stdout)
    results = clock.check(tmp_path)
    assert [(r.recording, r.check, r.passed, r.applicable) for r in results] == [
        (r["recording"], r["check"], r["passed"], r["applicable"]) for r in doc["results"]
    ]
    assert [r.line() for r in results] == [r["line"] for r in doc["results"]]
    counts = clock.check_counts(results)
    assert {k: getattr(counts, k) for k in doc["counts"]} == doc["counts"]
    # The robustness table's checks are among them, and decide the verdict: the quiet syllable breaks at -11 dB.
    robust = {(r.recording, r.passed) for r in results if r.check == "robustness-gain-down"}
    assert robust == {("quiet.wav", False), ("loud.wav", True)}
    assert counts.failed == 1 and not doc["passed"]
    # The rest are the checks without the table's.
    corpus = clock.load_corpus([tmp_path])
    plain = clock.api.check_config(corpus.config, corpus.observations, {})
    assert [r for r in results if not r.check.startswith("robustness-")] == plain


def test_derive_prefer_robust_in_the_library_is_the_commands(cli, tmp_path, monkeypatch):
    import json

    from test_stress import LONG_GAP, recording

    from clock.report.text import derive_dict

    # As test_stress's construction: robustness prefers another floor than the evidence's first (gain decides it:
    # two bitrates a codec line, to keep it short, for the library and the command alike).
    monkeypatch.setattr(clock.core.stress, "CODEC_KBPS", (64.0, 16.0))
    quiet = [(1.0, 0.5, 0.1, 250), (1.8, 0.5, 0.1, 250), (3.3, 0.4, 0.0107, 250), (4.7, 0.5, 0.1, 250)]
    recording(tmp_path, "quiet", quiet, hum_rms=0.0005)
    recording(tmp_path, "gaps", LONG_GAP, hum_rms=0.0005)
    corpus = clock.load_corpus([tmp_path])
    robust = clock.derive(corpus, prefer="robust")
    evidence = clock.derive(corpus, prefer="evidence")
    assert robust.setting != evidence.setting and "preferred for robustness" in robust.floor.rule
    assert evidence.setting == clock.derive(corpus).setting
    shown = cli("derive", tmp_path, "--prefer", "robust", "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout) == json.loads(json.dumps(derive_dict([robust], None)))
    # The observations with their sources are the corpus.
    again = clock.derive(corpus.observations, prefer="robust", sources=[r.info.path for r in corpus.recordings])
    assert again.setting == robust.setting


def test_derive_prefer_robust_needs_the_recordings_and_a_known_name(tmp_path):
    import pytest
    from test_stress import WORDS, recording

    recording(tmp_path, "a", WORDS)
    corpus = clock.load_corpus([tmp_path])
    with pytest.raises(clock.InvalidParameterError, match="stresses the recordings"):
        clock.derive(corpus.observations, prefer="robust")
    with pytest.raises(clock.InvalidParameterError, match="1 given for 2 observations"):
        clock.derive([*corpus.observations, *corpus.observations], prefer="robust", sources=["a.wav"])
    with pytest.raises(clock.InvalidParameterError, match="prefer must be one of evidence, robust"):
        clock.derive(corpus, prefer="widest")
