"""``speechclock segments`` and ``speechclock beats``."""

from __future__ import annotations

import json

import pytest
from sessions import WINDOW_S, Session

from clock.core.beats import beats
from clock.io.recording import read_recording

BEAT_KEYS = {
    "index",
    "terminal_s",
    "onset_s",
    "onset_latency_s",
    "ack_overlap",
    "ack_last_word_s",
    "last_word_s",
    "quiet_declared_s",
    "added_latency_s",
    "gaps_s",
    "span_end_s",
    "cause",
    "after_early_end",
    "past_bound",
    "aborted",
    "outpaced",
    "speech_at_end",
    "narration_pause_s",
    "bound",
    "outcome",
    "premature",
    "stalled",
    "missed_onset",
    "premature_risk",
    "no_onset",
    "logged_quiet_s",
    "replay_vs_logged_s",
    "response_id",
    "provider_stopped_s",
    "provider_stopped_vs_last_word_s",
    "rule_stopped_s",
    "rule_stopped_line",
    "rule_stopped_assumed",
    "rule_stopped_risk",
    "rule_stopped_vs_last_word_s",
    "barge_in_s",
    "cleared_s",
    "cut",
}


@pytest.fixture
def session(tmp_path):
    s = Session(14.0)
    s.say(0.3, 1.2).event("terminal_response", 1.0).say(2.0, 3.0).say(3.5, 4.5)
    s.event("clock.quiet", 7.2).event("prompt", 8.0).event("terminal_response", 8.5).say(9.0, 10.0)
    return s.write(tmp_path)


def test_segments_json_schema(cli, session):
    data = json.loads(cli("segments", session, "--format", "json").stdout)
    assert data["schema"] == 1 and data["recording"] == str(session)
    assert set(data["params"]) >= {"floor", "quiet_s", "tick_s", "fft_size"}
    assert len(data["segments"]) == 4 and len(data["gaps_s"]) == 3
    assert set(data["segments"][0]) == {"onset_s", "last_word_s", "onset_quantum_s", "offset_quantum_s", "duration_s"}
    assert all(s["onset_quantum_s"] is not None for s in data["segments"])


def test_segments_audacity_track_imports_back(cli, session, tmp_path):
    out = tmp_path / "speech.txt"
    assert cli("segments", session, "--format", "audacity", "-o", out).exit_code == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert len(rows) == 4 and rows[0][2] == "speech 1"
    assert 0.3 <= float(rows[0][0]) < 0.32 and float(rows[0][1]) < float(rows[1][0])


def test_segments_csv_and_table(cli, session):
    csv = cli("segments", session, "--format", "csv").stdout.splitlines()
    assert csv[0] == "onset_s,last_word_s,onset_quantum_s,offset_quantum_s,duration_s,gap_after_s"
    assert len(csv) == 5
    table = cli("segments", session).stdout
    assert "4 segments, 3 gaps" in table


def test_floor_option_changes_what_is_speech(cli, session):
    data = json.loads(cli("segments", session, "--format", "json", "--floor", "0.2").stdout)
    assert data["segments"] == [] and data["params"]["floor"] == 0.2


def test_beats_json_schema_and_values_match_the_library(cli, session):
    data = json.loads(cli("beats", session, "--format", "json").stdout)
    assert data["schema"] == 1 and len(data["beats"]) == 2
    assert all(set(b) == BEAT_KEYS for b in data["beats"])
    rec = read_recording(session)
    lib = beats(rec.trace, rec.events, floor=0.003, quiet_s=2.5, onset_timeout_s=10.0)
    first = data["beats"][0]
    assert first["ack_overlap"] is True and first["onset_s"] == lib[0].onset_s
    assert first["gaps_s"] == list(lib[0].gaps_s)
    assert first["logged_quiet_s"] == 7.2
    assert first["replay_vs_logged_s"] == pytest.approx(lib[0].quiet_declared_s - 7.2)
    assert data["beats"][1]["logged_quiet_s"] is None and data["beats"][1]["replay_vs_logged_s"] is None


def test_beats_table_flags(cli, session):
    out = cli("beats", session, "--quiet-time", "0.5").stdout
    assert "2 beats" in out and "ACK" in out and " premature " in out and "PREMATURE" not in out
    assert "ACK RISK PREMATURE" in cli("beats", session, "--quiet-time", "0.5", "--wide").stdout


def test_beats_labels_add_errors(cli, session, tmp_path):
    labels = tmp_path / "truth.txt"
    labels.write_text("2.0\t3.0\tsentence\n")
    data = json.loads(cli("beats", session, "--format", "json", "--labels", labels).stdout)
    (match,) = data["labels"]
    assert 0 <= match["onset_error_s"] < 0.03
    assert abs(match["offset_error_s"] - WINDOW_S) < 0.03


def test_beats_without_event_log_is_an_error(cli, session):
    (session.parent / "session.events.jsonl").unlink()
    result = cli("beats", session)
    assert result.exit_code == 2
    assert "no event log" in result.stderr and "--events" in result.stderr


def test_beats_explicit_events_and_malformed_line(cli, session, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "terminal_response", "t": 1}\n{oops\n')
    result = cli("beats", session, "--events", bad)
    assert result.exit_code == 2 and "bad.jsonl:2: not valid JSON" in result.stderr
    lenient = cli("beats", session, "--events", bad, "--lenient")
    assert lenient.exit_code == 0 and "warning: " in lenient.stderr and "(skipped)" in lenient.stderr


@pytest.mark.parametrize(
    "args,option",
    [
        (("--floor", "-1"), "--floor"),
        (("--quiet-time", "0"), "--quiet-time"),
        (("--onset-timeout", "-2"), "--onset-timeout"),
    ],
)
def test_bad_threshold_options(cli, session, args, option):
    result = cli("beats", session, *args)
    assert result.exit_code == 2 and option in result.stderr
