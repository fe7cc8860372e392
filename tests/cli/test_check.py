"""``speechclock check``: the bundled recordings pass; broken ones fail, naming recording and time."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import warnings
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import soundfile as sf

from clock.core.times import clock_time

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
WAV = "short-en-029-44k"


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A copy of the two short bundled recordings, with the committed config and baseline (the tests never write
    into the source tree)."""
    from conftest import copy_short_recordings

    return copy_short_recordings(tmp_path / "recordings")


@pytest.fixture
def bundled(tmp_path) -> Path:
    """A copy of all the bundled recordings, for the tests whose subject is the whole set."""
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
    assert re.search(r"\d+ checks on 5 recordings: 0 failed", result.stdout)


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


def test_quiet_speech_that_still_replays_right_passes_the_speech_level_check_with_a_note(cli, corpus):
    # 12 dB quieter: the 5th percentile of the speech falls under the floor + 3 dB, yet the fixture's exact-zero
    # silence lets the clock at 0.003 hear every word: the replay ends both beats right, so the check passes.
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.25))
    data = json.loads(cli("check", corpus, "--format", "json").stdout)
    (level,) = [r for r in data["results"] if r["recording"] == f"{WAV}.wav" and r["check"] == "speech-level"]
    assert level["passed"] and level["applicable"]
    assert level["measured"] < level["threshold"]  # the percentile, kept as evidence
    note = r"note: speech p5 0\.00\d+ crosses the floor, yet the replay at this setting ends every beat right; "
    note += r"a voice \d+ dB quieter \(the floor replayed at [\d.]+\), beat \d is "
    assert re.match(note, level["detail"]), level["detail"]
    assert "cannot work" not in json.dumps(data)


def test_speech_under_the_floor_fails_the_speech_level_check_naming_the_beat(cli, corpus):
    # 40 dB quieter: every word is under the floor, so both beats are silent where the guide spoke.
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.01))
    result = cli("check", corpus)
    assert result.exit_code == 1
    line = next(line for line in result.stdout.splitlines() if ": speech-level: " in line)
    assert re.match(
        rf"{WAV}\.wav:\d\d:\d\d\.\d\d\d: speech-level: beat 1 missed-onset: the guide's speech stays under the floor "
        r"\(and 1 other beat\); speech p5 0\.0000\d+ vs floor \+ 3 dB = 0\.00424",
        line,
    ), line


def test_comfort_noise_above_the_floor_fails_the_noise_check(cli, corpus, rng):
    def comfort_noise(x, rate):
        noise = (rng.standard_normal(x.size) * 10 ** (-44 / 20)).astype(np.float32)  # 0.0063 RMS
        return np.where(x == 0, noise, x)

    edit_wav(corpus, samples=comfort_noise)
    result = cli("check", corpus)
    assert result.exit_code == 1
    line = next(line for line in result.stdout.splitlines() if ": noise-level: " in line)
    # The noise holds the level over the floor 0.003 into the next prompt: the replay stalls beat 1; the line names
    # it, keeps the percentile as evidence, and (a floor above the noise replays right) does not say "cannot work".
    assert re.match(
        rf"{WAV}\.wav:\d\d:\d\d\.\d\d\d: noise-level: beat 1 stalled: quiet not declared before the prompt .*"
        r"noise p99 0\.0\d+ within 3 dB of speech p5 0\.0\d+; at floor 0\.0\d+ a quiet time above .* ends them right"
        r" vs floor 0\.003",
        line,
    ), line
    assert "cannot work" not in result.stdout
    # The hint is what a replay shows: at its floor, quiet times at both ends of its interval end every beat of
    # that recording right.
    import clock as api
    from clock.core.recommend.replay import judge

    hint = re.search(r"at floor ([0-9.e-]+) a quiet time above ([0-9.]+) s(?: and up to ([0-9.]+) s)?", line)
    assert hint is not None
    floor, low = float(hint.group(1)), float(hint.group(2))
    high = float(hint.group(3)) if hint.group(3) else low + 1.0
    (obs,) = [o for o in api.load_corpus([corpus], cache=False).observations if o.name == f"{WAV}.wav"]
    for quiet in (low + 0.01, high):
        assert judge([obs], floor=floor, quiet_s=quiet, onset_timeout_s=10.0).tally.n_failed == 0, (floor, quiet)


def test_junit_has_a_testcase_per_recording_and_check(cli, corpus, tmp_path):
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.01))
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
    assert {r["check"] for r in data["results"]} >= {
        "noise-level",
        "speech-level",
        "gap",
        "premature",
        "stalled",
        "missed-onset",
    }


def test_update_baseline_rewrites_only_the_baseline(cli, bundled):
    before = digest(bundled)
    (bundled / "baseline.json").unlink()
    result = cli("check", bundled, "--update-baseline")
    assert result.exit_code == 0
    after = digest(bundled)
    assert after == before  # the same baseline again, and no audio or log touched
    assert not [p for p in bundled.iterdir() if p.name.startswith(".")]  # no temporary left


def test_baseline_drift_fails(cli, corpus):
    path = corpus / "baseline.json"
    base = json.loads(path.read_text())
    base["recordings"][f"{WAV}.wav"]["onsets_s"][1] += 0.2
    path.write_text(json.dumps(base))
    result = cli("check", corpus)
    assert result.exit_code == 1
    assert re.search(rf"^{WAV}\.wav:00:11\.\d+: baseline: beat 2 onset", result.stdout, re.M)


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
        ("[margins]\nquiet_margin_s = -0.1\n", "key 'margins.quiet_margin_s': quiet_margin_s must be"),
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


def test_report_leads_with_the_failed_checks_linked_to_their_recording(cli, tmp_path, figures_unrendered):
    from conftest import copy_short_recordings

    corpus = copy_short_recordings(tmp_path / "recordings")
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.25))
    out = tmp_path / "report.html"
    assert cli("report", corpus, "-o", out, "--floors", "0.003", "--quiet-times", "2.5").exit_code == 0
    page = out.read_text()
    verdict = page.index('id="summary"')
    failure = page.index(f"{WAV}.wav:", verdict)
    assert failure < page.index('id="derive"')  # the failures come first
    anchor = re.search(r'<li><a href="#(rec-\d+)">' + re.escape(WAV), page[verdict:]).group(1)
    assert f'<h3 id="{anchor}">{WAV}.wav</h3>' in page
    assert "FAIL: " in page[verdict : page.index('id="derive"')]


# --- CI that says what it checked ------------------------------------------------


def test_check_says_which_config_and_its_counts_are_the_junit_counts(cli, corpus, tmp_path):
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.25))
    (corpus / "tour-en-us-48k.events.jsonl").unlink()  # its log-based checks no longer apply
    out = tmp_path / "junit.xml"
    result = cli("check", corpus, "--junit", out)
    lines = result.stdout.splitlines()
    assert lines[0] == f"config: {corpus / 'speechclock.toml'}"
    m = re.fullmatch(r"(\d+) checks on 2 recordings: (\d+) failed.*, (\d+) not applicable, \d+ passed", lines[-1])
    suite = ET.parse(out).getroot().find("testsuite")
    assert (int(suite.get("tests")), int(suite.get("failures")), int(suite.get("skipped"))) == tuple(
        int(x) for x in m.groups()
    )
    assert int(m.group(2)) >= 1 and int(m.group(3)) >= 1


def test_check_without_a_config_fails_unless_told_and_junit_holds_the_error(cli, corpus, tmp_path):
    (corpus / "speechclock.toml").unlink()
    out = tmp_path / "junit.xml"
    result = cli("check", corpus, "--junit", out)
    assert result.exit_code == 2 and "speechclock.toml: no config" in result.stderr
    (case,) = ET.parse(out).getroot().iter("testcase")
    assert case.find("error") is not None and "no config" in case.find("error").get("message")
    allowed = cli("check", corpus, "--allow-defaults")
    assert allowed.exit_code in (0, 1) and "built-in defaults" in allowed.stderr
    assert allowed.stdout.splitlines()[0] == "config: built-in defaults"


def test_check_without_a_config_stops_before_decoding(cli, corpus, monkeypatch):
    import clock.run.corpus

    (corpus / "speechclock.toml").unlink()

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded before finding there is no config")

    monkeypatch.setattr(clock.run.corpus, "observe_corpus", no_decoding)
    result = cli("check", corpus, "--no-cache")
    assert result.exit_code == 2
    assert result.stderr == (
        f"speechclock: error: {corpus / 'speechclock.toml'}: no config: give --config FILE, "
        "or --allow-defaults to check against the built-in defaults\n"
    )


def test_json_measured_and_threshold_are_numbers_with_a_unit(cli, bundled):
    edit_wav(bundled, samples=lambda x, rate: x * np.float32(0.01))
    data = json.loads(cli("check", bundled, "--format", "json").stdout)
    assert data["config"].endswith("speechclock.toml") and data["counts"]["failed"] >= 1
    speech = next(r for r in data["results"] if r["check"] == "speech-level" and not r["passed"])
    assert speech["unit"] == "RMS" and speech["measured"] < speech["threshold"] == pytest.approx(0.003 * 10 ** (3 / 20))
    gap = next(r for r in data["results"] if r["check"] == "gap")
    assert gap["unit"] == "s" and isinstance(gap["measured"], float) and gap["threshold"] == pytest.approx(2.3)
    assert all(isinstance(r["detail"], str) and r["line"].startswith(r["recording"]) for r in data["results"])


def test_github_annotations_escape_what_the_workflow_commands_need(cli, corpus):
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.01))
    result = cli("check", corpus, "--format", "github")
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert errors and all(f"file={corpus}/{WAV}.wav".replace(":", "%3A") in line for line in errors)
    assert any("title=speechclock speech-level::" in line for line in errors)
    # The message's own colons stay (only properties escape them); newlines never reach the log.
    assert all(f"::{WAV}.wav:" in line for line in errors)
    assert result.stdout.splitlines()[-1].startswith("::notice title=speechclock check::config ")


def test_github_annotation_paths_are_relative_to_the_workspace_or_working_folder(cli, corpus, monkeypatch):
    edit_wav(corpus, samples=lambda x, rate: x * np.float32(0.25))

    def files() -> set[str]:
        out = cli("check", corpus.resolve(), "--format", "github").stdout.splitlines()
        return {re.match(r"::error file=([^,]+),", line).group(1) for line in out if line.startswith("::error ")}

    monkeypatch.chdir(corpus.parent)
    assert files() == {f"recordings/{WAV}.wav"}
    monkeypatch.setenv("GITHUB_WORKSPACE", str(corpus))
    monkeypatch.chdir("/")
    assert files() == {f"{WAV}.wav"}


def test_report_follows_checks_config_rule(cli, corpus, monkeypatch, tmp_path, figures_unrendered):
    import clock.run.corpus

    (corpus / "speechclock.toml").unlink()
    observe = clock.run.corpus.observe_corpus

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded before finding there is no config")

    monkeypatch.setattr(clock.run.corpus, "observe_corpus", no_decoding)
    out = tmp_path / "report.html"
    result = cli("report", corpus, "-o", out, "--no-cache")
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr.startswith(f"speechclock: error: {corpus / 'speechclock.toml'}: no config: ")
    monkeypatch.setattr(clock.run.corpus, "observe_corpus", observe)
    for other in corpus.glob("tour-*"):  # one recording is enough to draw, and quicker
        other.unlink()
    allowed = cli("report", corpus, "-o", out, "--allow-defaults", "--floors", "0.003", "--quiet-times", "2.5")
    assert allowed.exit_code == 0 and "built-in defaults" in allowed.stderr
    assert allowed.stdout.splitlines()[0] == "config: built-in defaults"
    assert "no speechclock.toml: built-in defaults" in out.read_text()


def _tour_folder(tmp_path, kind: str, seed: int) -> Path:
    from tours import random_corpus

    folder = tmp_path / kind
    folder.mkdir()
    for tour in random_corpus(seed, kind):
        if tour.has_log:
            tour.write(folder)
    return folder


def test_a_beat_without_speech_fails_no_speech_at_its_time_and_missed_onset_says_what_it_covers(cli, tmp_path):
    from tours import random_corpus

    folder = _tour_folder(tmp_path, "silent", 0)
    silent = [(t.name, x.terminal_s) for t in random_corpus(0, "silent") if t.has_log for x in t.beats if x.silent]
    assert silent
    result = cli("check", folder, "--allow-defaults", "--floor", "0.002", "--format", "json")
    found = json.loads(result.stdout)["results"]
    failing = {(r["recording"], round(r["t_s"], 3)) for r in found if r["check"] == "no-speech" and not r["passed"]}
    every = {(f"{name}.wav", round(t, 3)) for name, t in silent}
    quiet_rooms = {x for x in every if "-zero-" in x[0]}  # comfort noise over the floor is heard as speech
    assert quiet_rooms and quiet_rooms <= failing <= every
    for r in found:
        if r["check"] == "missed-onset" and r["passed"] and r["applicable"]:
            assert r["detail"].endswith("with speech") and r["expected"] == "an onset within the timeout in each"
    text = cli("check", folder, "--allow-defaults", "--floor", "0.002")
    assert text.exit_code == 1 and "no-speech: beat" in text.stdout
    # Beats are numbered from 1, in the order of the tour's terminal responses.
    order = {
        (f"{t.name}.wav", round(x.terminal_s, 3)): k + 1
        for t in random_corpus(0, "silent")
        if t.has_log
        for k, x in enumerate(t.beats)
    }
    for r in found:
        if r["check"] == "no-speech" and not r["passed"]:
            assert r["detail"].startswith(f"beat {order[(r['recording'], round(r['t_s'], 3))]}: no speech"), r


def test_logged_decisions_are_compared_only_at_the_setting_the_page_ran(cli):
    committed = json.loads(cli("check", RECORDINGS, "--format", "json").stdout)["results"]
    assert any(r["check"] == "logged-quiet" and r["applicable"] for r in committed)
    candidate = cli("check", RECORDINGS, "--quiet-time", "2.6", "--format", "json")
    assert candidate.exit_code == 0
    logged = [r for r in json.loads(candidate.stdout)["results"] if r["check"] == "logged-quiet"]
    assert logged and all(not r["applicable"] for r in logged)
    # The bundled logs do not say which setting their page ran: no line names one.
    assert all("the log does not say which setting the page ran" in r["detail"] for r in logged)
    assert not any("floor 0.003" in r["detail"] or "quiet 2.5" in r["detail"] for r in logged)


def test_a_log_that_states_its_setting_is_held_to_the_replay_at_that_setting(cli, tmp_path):
    import shutil

    name = "tour-en-us-48k"
    shutil.copy(RECORDINGS / f"{name}.webm", tmp_path)
    lines = (RECORDINGS / f"{name}.events.jsonl").read_text().splitlines()
    # What speechclock.js writes when it starts: the page ran the committed numbers.
    setting = {"type": "clock.setting", "t_ms": 73519.4, "floor": 0.003, "quiet_s": 2.5, "onset_timeout_s": 10}
    setting |= {"tick_s": "1/60", "fft_size": 2048, "path": "worklet"}
    (tmp_path / f"{name}.events.jsonl").write_text("\n".join([lines[0], json.dumps(setting), *lines[1:]]) + "\n")
    # A new candidate (or a newly committed setting) does not fail the decisions this page logged.
    for args in ((), ("--quiet-time", "2.8", "--floor", "0.004")):
        result = cli("check", tmp_path, "--allow-defaults", *args, "--format", "json")
        (logged,) = [r for r in json.loads(result.stdout)["results"] if r["check"] == "logged-quiet"]
        assert logged["applicable"] and logged["passed"], logged
        if args:
            assert "at the page's setting (floor 0.003, quiet 2.5 s, onset timeout 10 s)" in logged["detail"]
    # A setting the page did not run: its logged decisions fail at the setting it says it ran.
    setting["quiet_s"] = 2.0
    (tmp_path / f"{name}.events.jsonl").write_text("\n".join([lines[0], json.dumps(setting), *lines[1:]]) + "\n")
    result = cli("check", tmp_path, "--allow-defaults", "--format", "json")
    logged = [r for r in json.loads(result.stdout)["results"] if r["check"] == "logged-quiet"]
    assert result.exit_code == 1 and logged and all(r["applicable"] and not r["passed"] for r in logged)


def test_check_page_ticks_replays_at_the_pages_own_ticks_as_beats_does(cli, tmp_path):
    """A lossless log read every 7 render quanta (not the 1/60 s cadence): with --page-ticks, check
    holds its clock.quiet lines to the replay at those ticks, as beats --page-ticks replays them."""
    import numpy as np
    import soundfile as sf

    from clock.core.levels import levels
    from clock.core.ticks import Ticks

    x, rate = sf.read(str(RECORDINGS / "short-en-029-44k.wav"), dtype="float32")
    wav = tmp_path / "page.wav"
    sf.write(str(wav), x, rate, subtype="FLOAT")
    every = Ticks.every_frames(7 * 128, rate)
    read = levels(x, rate, ticks=every)
    old = [json.loads(line) for line in (RECORDINGS / "short-en-029-44k.events.jsonl").read_text().splitlines()]
    t0 = old[0]["t_ms"]
    lines = [{"type": "recording.started", "frame": 0, "sample_rate_hz": rate, "capture": "worklet", "t_ms": t0}]
    lines += [
        {k: v for k, v in e.items() if k != "t_ms"} | {"frame": round((e["t_ms"] - t0) / 1000 * rate)}
        for e in old[1:]
        if e["type"] != "clock.quiet"
    ]
    lines += [{"type": "clock.level", "frame": int(f), "level": float(v)} for f, v in zip(read.frames, read.level)]
    log = tmp_path / "page.events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in lines))
    at_ticks = json.loads(cli("beats", wav, "--format", "json", "--page-ticks").stdout)["beats"]
    declared = [b["quiet_declared_s"] for b in at_ticks if b["quiet_declared_s"] is not None]
    assert declared
    # The page logged its decisions at those ticks (as frames).
    quiet = [{"type": "clock.quiet", "frame": round(t * rate)} for t in declared]
    log.write_text("".join(json.dumps(e) + "\n" for e in lines + quiet))
    args = ("check", tmp_path, "--allow-defaults", "--format", "json")
    page = [r for r in json.loads(cli(*args, "--page-ticks").stdout)["results"] if r["check"] == "logged-quiet"]
    assert page and all(r["applicable"] and r["passed"] for r in page)
    assert page[0]["measured"] == 0.0  # the very ticks, to the frame
    regular = [r for r in json.loads(cli(*args).stdout)["results"] if r["check"] == "logged-quiet"]
    assert max(r["measured"] for r in regular) > 0.0  # at the 1/60 s cadence the replay decides elsewhere
    assert np.all(np.diff(read.frames) == 7 * 128)


def _two_sentences(prompt_s: float):
    """One beat: speech 1.0-2.0 s and 3.0-4.0 s (a 1 s gap), the next prompt at ``prompt_s``; ticks of 1/60 s."""
    from clock.core.events import Event, EventLog
    from clock.core.levels import LevelTrace
    from clock.core.model import Observation

    level = np.zeros(600)
    level[60:120] = level[180:240] = 0.05
    trace = LevelTrace(np.arange(600) * 800, level, 48000)
    log = EventLog((Event("terminal", "terminal", 0.5), Event("prompt", "prompt", prompt_s)))
    return Observation("two", trace, log, ())


def _gap_results(obs, quiet_s: float, floor: float = 0.003):
    from clock.core.check import check_corpus
    from clock.core.model import Margins
    from clock.core.thresholds import Thresholds

    th = Thresholds(floor=floor, quiet_s=quiet_s, onset_timeout_s=10.0)
    results = check_corpus([obs], thresholds=th, margins=Margins())
    return [r for r in results if r.check == "gap"], {r.check for r in results if not r.passed}


def test_a_gap_within_the_margin_is_a_note_only_where_no_quiet_time_holds_the_margin():
    from clock.core.analysis import analyse

    narrow = _two_sentences(5.25)
    need, room, _ = analyse(narrow.trace, narrow.events, floor=0.003).quiet_range(narration_pause_s=1.0)
    assert 0 < room - need < 0.4  # narrower than twice the 0.2 s margin
    centre = round((need + room) / 2, 2)
    (gap,), failed = _gap_results(narrow, centre)
    assert gap.passed and gap.detail.startswith("note: gap ") and f"{need:.3f} .. {room:.3f} s" in gap.detail
    assert failed == set()  # the replay ends the beat right: no check fails
    # Inside the run but below its centre by more than a tick: the margin it keeps is less than the centre would.
    (gap,), failed = _gap_results(narrow, round(need + 0.02, 3))
    assert not gap.passed and "gap" in failed
    # A wider run could hold the margin: the same quiet time fails the gap check.
    wide = _two_sentences(6.0)
    need_w, room_w, _ = analyse(wide.trace, wide.events, floor=0.003).quiet_range(narration_pause_s=1.0)
    assert room_w - need_w > 0.4
    (gap,), failed = _gap_results(wide, centre)
    assert not gap.passed and failed == {"gap"}


def test_derive_recommends_the_centre_of_a_narrow_run_and_check_passes_it():
    from clock.core.analysis import analyse
    from clock.core.recommend.engine import derive

    narrow = _two_sentences(5.25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = derive([narrow], held_out=False)
    floor, quiet, timeout = d.setting
    need, room, _ = analyse(narrow.trace, narrow.events, floor=floor).quiet_range(narration_pause_s=1.0)
    assert abs(quiet - (need + room) / 2) <= 1 / 60
    assert "a 0.2 s margin cannot be held on both sides" in d.gaps.rule
    assert any("check's gap check passes that gap with a note" in w for w in d.warnings), d.warnings
    (gap,), failed = _gap_results(narrow, quiet, floor)
    assert gap.passed and failed == set()


@pytest.mark.parametrize("path", ["poll", "worklet"])
def test_a_reading_a_quantum_after_its_frame_agrees_when_the_page_polled_not_on_the_worklet(cli, tmp_path, path):
    """A poll reads on the main thread, where Chromium can hand it the quantum it is rendering (found out in the
    browser: test_page_clock): its readings are held to the recording at their frame or one quantum later, and
    ``check`` passes; the worklet path reads on the audio thread, so the same log there is a disagreement."""
    import numpy as np
    import soundfile as sf

    from clock.core.levels import levels
    from clock.core.ticks import Ticks

    x, rate = sf.read(str(RECORDINGS / "short-en-029-44k.wav"), dtype="float32")
    wav = tmp_path / "page.wav"
    sf.write(str(wav), x, rate, subtype="FLOAT")
    q = levels(x, rate, ticks=Ticks.every_frames(128, rate)).level
    ticks = np.arange(16, q.size - 1, 6)  # quanta of the page's reads
    ahead = ticks[((q[ticks] > 0.003) != (q[ticks + 1] > 0.003)) | (np.arange(ticks.size) % 5 == 0)]
    read = {int(k): float(q[k + 1] if k in set(ahead.tolist()) else q[k]) for k in ticks}
    setting = {"type": "clock.setting", "frame": 0, "floor": 0.003, "quiet_s": 2.5, "onset_timeout_s": 10}
    lines = [{"type": "recording.started", "frame": 0, "sample_rate_hz": rate, "capture": "worklet"}]
    lines += [setting | {"tick_s": "1/60", "fft_size": 2048, "path": path}]
    lines += [{"type": "clock.level", "frame": k * 128, "level": v} for k, v in read.items()]
    (tmp_path / "page.events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    a = json.loads(cli("beats", wav, "--format", "json").stdout)["agreement"]
    moved = int(np.count_nonzero(q[ahead] != q[ahead + 1]))
    assert moved > 20 and a["n_compared"] == ticks.size
    results = json.loads(cli("check", tmp_path, "--allow-defaults", "--format", "json").stdout)["results"]
    agreed = [r for r in results if r["check"] == "level-agreement"]
    assert agreed and all(r["applicable"] for r in agreed)
    if path == "poll":
        assert a["exact"] and a["n_ahead"] == moved and a["n_floor_disagree"] == 0
        assert all(r["passed"] and f"{moved} of them one render quantum after" in r["detail"] for r in agreed)
        assert f"({moved} one render quantum after their frame" in cli("beats", wav).stdout
    else:
        assert a["n_exact"] == ticks.size - moved and a["n_ahead"] == 0 and a["n_floor_disagree"] > 0
        assert not all(r["passed"] for r in agreed) and not any("render quantum" in r["detail"] for r in agreed)


def test_logged_quiet_allows_the_page_s_own_tick_intervals_where_it_logged_its_levels(cli, tmp_path):
    """The page decides on its own ticks (its clock.level readings), the replay on the recording's grid: a logged
    declaration off by more than the replay's tick fails unless the page's ticks there were as far apart, and one
    off by more than both fails whatever the page logged."""
    import shutil

    name = "tour-en-us-48k"
    lines = [json.loads(x) for x in (RECORDINGS / f"{name}.events.jsonl").read_text().splitlines()]
    quiet = [x for x in lines if x["type"] == "clock.quiet"]
    assert quiet and all("t_ms" in x or "t" in x for x in quiet)
    end_ms = max(x.get("t_ms", x.get("t", 0) * 1000) for x in lines)

    def passes(shift_s: float, reads_every_s: float | None) -> bool:
        folder = tmp_path / f"{shift_s}-{reads_every_s}"
        folder.mkdir()
        shutil.copy(RECORDINGS / f"{name}.webm", folder)
        out = []
        for x in lines:
            if x["type"] == "clock.quiet":
                x = {**x, "t_ms": x["t_ms"] + 1000 * shift_s} if "t_ms" in x else {**x, "t": x["t"] + shift_s}
            out.append(x)
        if reads_every_s is not None:
            t0 = next(x.get("t_ms") for x in lines if x["type"] == "recording.started")
            n = int(end_ms / 1000 / reads_every_s)
            out += [{"type": "clock.level", "t_ms": t0 + 1000 * k * reads_every_s, "level": 0.0} for k in range(n)]
        (folder / f"{name}.events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in out))
        result = cli("check", folder, "--allow-defaults", "--format", "json")
        found = [r for r in json.loads(result.stdout)["results"] if r["check"] == "logged-quiet"]
        assert found and all(r["applicable"] for r in found)
        return all(r["passed"] for r in found)

    tick = 1 / 60
    assert passes(0.0, None)
    assert not passes(1.6 * tick, None)
    assert passes(1.6 * tick, 2 * tick)
    assert not passes(3.5 * tick, 2 * tick)
