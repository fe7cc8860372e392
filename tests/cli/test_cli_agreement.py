"""Page-logged levels through the command line: beats, check, report, and derive --by session metadata."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sessions import RATE, Session

from clock.core.levels import levels
from clock.core.ticks import Ticks

Q = 128


def write_session(folder, *, late_quanta: int = 0, capture: str = "worklet", corrupt: int = 0, name="page"):
    """A session whose log holds the page's readings at about 60 Hz, as capture.js writes it.

    The page's context frame 9600 is the recording's frame late_quanta * 128 (the
    log's start frame is exact for a worklet capture, late for a recorder).
    """
    s = Session(7.0).say(0.5, 1.5).say(1.8, 2.8).event("terminal_response", 0.4)
    wav = s.write(folder, name)
    x = s.samples()
    q = levels(x, RATE, ticks=Ticks.every_frames(Q, RATE))
    start, late = 9600, late_quanta * Q
    lines = [
        {"type": "session", "voice": "verse", "model": "gpt-realtime", "page_version": "2.0"},
        {"type": "recording.started", "frame": start, "sample_rate_hz": RATE, "capture": capture, "t_ms": 200.0},
        {"type": "terminal_response", "frame": start + int(0.4 * RATE) + late},
    ]
    rng = np.random.default_rng(5)
    frame = 2048
    quiet_at = None
    last_word = None
    while frame < q.n_ticks * Q:
        level = float(q.level[frame // Q])
        lines.append({"type": "clock.level", "frame": start + frame + late, "level": level})
        if level > 0.003:
            last_word = frame
        elif last_word is not None and quiet_at is None and (frame - last_word) / RATE >= 1.0:
            quiet_at = frame
            lines.append({"type": "clock.quiet", "frame": start + frame + late})
        frame += int(rng.integers(5, 8)) * Q
    for line in lines[3 : 3 + corrupt]:
        line["level"] = line["level"] + 0.01
    (folder / f"{name}.events.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return wav


def test_beats_reports_a_bit_exact_lossless_log_and_replays_at_the_pages_ticks(cli, tmp_path):
    wav = write_session(tmp_path)
    data = json.loads(cli("beats", wav, "--format", "json", "--quiet-time", "1.0").stdout)
    a = data["agreement"]
    assert a["exact"] and a["start_exact"] and a["n_compared"] == a["n_readings"] > 300
    (beat,) = json.loads(cli("beats", wav, "--format", "json", "--quiet-time", "1.0", "--page-ticks").stdout)["beats"]
    assert beat["quiet_declared_s"] == beat["logged_quiet_s"]
    table = cli("beats", wav, "--quiet-time", "1.0").stdout
    assert re.search(r"page-logged levels: \d+ of \d+ readings compared, \d+ bit-exact \(all\)", table)


def test_align_log_shifts_a_recorder_log_by_the_estimated_offset(cli, tmp_path):
    wav = write_session(tmp_path, late_quanta=-9, capture="recorder")
    plain = json.loads(cli("beats", wav, "--format", "json", "--quiet-time", "1.0", "--no-align-log").stdout)
    aligned = json.loads(cli("beats", wav, "--format", "json", "--quiet-time", "1.0", "--align-log").stdout)
    by_default = json.loads(cli("beats", wav, "--format", "json", "--quiet-time", "1.0").stdout)
    assert by_default["beats"] == aligned["beats"]  # aligned by default, where the log allows it
    assert plain["agreement"]["offset_s"] == pytest.approx(9 * Q / RATE)
    assert plain["agreement"]["exact"]  # at the estimated offset, the readings match exactly
    shift = aligned["beats"][0]["terminal_s"] - plain["beats"][0]["terminal_s"]
    assert shift == pytest.approx(9 * Q / RATE)
    assert aligned["beats"][0]["terminal_s"] == pytest.approx(0.4)


def test_page_ticks_without_readings_is_a_usage_error(cli, tmp_path):
    wav = Session(2.0).say(0.5, 1.0).event("terminal_response", 0.4).write(tmp_path)
    result = cli("beats", wav, "--page-ticks")
    assert result.exit_code == 2 and "no clock.level readings" in result.stderr


def test_check_fails_a_lossless_log_that_disagrees_and_passes_one_that_agrees(cli, tmp_path):
    write_session(tmp_path, name="good")
    result = cli("check", tmp_path, "--format", "json", "--allow-defaults")
    (agreed,) = [r for r in json.loads(result.stdout)["results"] if r["check"] == "level-agreement"]
    assert agreed["passed"] and agreed["applicable"]
    write_session(tmp_path, name="bad", corrupt=40)
    result = cli("check", tmp_path, "--allow-defaults")
    assert result.exit_code == 1
    assert re.search(
        r"^bad\.wav:\d\d:\d\d\.\d{3}: level-agreement: \d+ readings \(lossless\): p99 \|diff\| 0\.01",
        result.stdout,
        re.M,
    )
    # A recorder's tolerance admits the same log.
    (tmp_path / "speechclock.toml").write_text("[agreement]\nlossless_tolerance = 0.02\nmax_floor_disagreements = 99\n")
    assert "level-agreement" not in cli("check", tmp_path).stdout


def test_report_has_the_agreement_and_derive_groups_by_the_session_line(cli, tmp_path, figures_unrendered):
    wav = write_session(tmp_path)
    out = tmp_path / "report.html"
    args = ("--floors", "0.003:0.003:0.001", "--quiet-times", "1.0:1.0:0.1", "--allow-defaults")
    assert cli("report", wav, "-o", out, *args).exit_code == 0
    page = out.read_text()
    section = page[page.index('<section id="agreement">') :]
    assert "page.wav" in section[: section.index("</section>")]
    groups = json.loads(cli("derive", wav, "--by", "model", "--format", "json").stdout)["groups"]
    assert [g["group"] for g in groups] == ["all", "model=gpt-realtime"]
