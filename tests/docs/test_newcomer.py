"""Dead ends a newcomer met: each is now one line that says what to do, or a number people read as they count."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
WAV = RECORDINGS / "short-en-029-44k.wav"


def test_plot_without_o_says_to_add_it(cli):
    result = cli("plot", WAV)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("speechclock: error: plot writes a file: add -o FILE.png (or .svg, .pdf)")
    assert len(result.stderr.splitlines()) == 1


def test_binary_levels_are_refused_on_a_terminal_and_written_to_a_pipe():
    env = {**os.environ, "PYTHONPATH": str(RECORDINGS.parent)}
    command = [sys.executable, "-m", "clock", "levels", str(WAV), "--format", "npz"]
    main, replica = pty.openpty()
    try:
        done = subprocess.run(command, stdout=replica, stderr=subprocess.PIPE, env=env, timeout=60)
    finally:
        os.close(replica)
        os.close(main)
    assert done.returncode == 2
    assert done.stderr.decode().startswith("speechclock: error: npz is binary, not for a terminal: add -o FILE.npz")
    piped = subprocess.run(command, capture_output=True, env=env, timeout=60, check=True)
    assert piped.stdout.startswith(b"PK")  # an npz (a zip) where the reader is not a terminal


@pytest.mark.parametrize("args", [("--view", "beats"), ("--beat", "1")])
def test_plot_of_beats_without_a_log_names_the_log_it_wants(cli, tmp_path, args):
    wav = tmp_path / WAV.name
    wav.write_bytes(WAV.read_bytes())
    out = tmp_path / "beats.png"
    result = cli("plot", wav, *args, "-o", out)
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr == (
        f"speechclock: error: {wav}: no beats for {args[0]}{' beats' if args[0] == '--view' else ''}: no event log "
        f"(name it {wav.stem}.events.jsonl beside the recording, or give --events FILE)\n"
    )


def test_beats_count_from_1_in_the_table_in_lines_and_in_beat(cli, tmp_path):
    table = cli("beats", WAV).stdout.splitlines()
    assert table[1].split()[0] == "beat" and [row.split()[0] for row in table[2:4]] == ["1", "2"]
    import json

    data = json.loads(cli("beats", WAV, "--format", "json").stdout)
    assert [b["index"] for b in data["beats"]] == [0, 1]  # the JSON index counts from 0 (docs/formats.md)
    assert cli("plot", WAV, "--beat", "2", "-o", tmp_path / "b.png").exit_code == 0
    wrong = cli("plot", WAV, "--beat", "0", "-o", tmp_path / "b.png")
    assert wrong.exit_code == 2 and "has 2 beats (1 .. 2), got 0" in wrong.stderr
    # A line that names a beat names it as the table does: the second beat stalls at a short bound.
    lines = cli("check", RECORDINGS, "--quiet-time", "0.5").stdout
    assert re.search(r"short-en-029-44k\.wav:\S+: premature: beat [12] declared quiet", lines)
    assert not re.search(r"beat 0\b", lines)


def test_the_zoomed_figure_names_its_beat():
    from clock.cli.plot import figure_for
    from clock.io.recording import read_recording

    rec = read_recording(WAV)
    from clock.core.thresholds import DEFAULT_THRESHOLDS

    fig = figure_for(rec, DEFAULT_THRESHOLDS, start_s=9.0, end_s=20.0, beat=2)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert any(t.startswith(f"{WAV.name}, beat 2:") for t in titles), titles


def test_derive_says_in_words_how_speech_was_found_and_which_recording_sets_a_narrow_window():
    from test_derive import synthetic

    import clock
    from clock.report.text import derive_text

    # Speech at 0.05 RMS (-26 dBFS) over a room hiss at -34 dBFS: the window is narrow, and one recording sets it.
    d = clock.derive([synthetic([0.6, 0.9], room_dbfs=-34.0, name="room.wav")])
    text = derive_text([d])
    assert text.startswith("== all: 1 recording (1 with label tracks), ")
    narrow = [w for w in d.warnings if "span only" in w]
    assert narrow and "set by room.wav alone" in narrow[0], d.warnings


def test_not_replayed_says_why():
    from dataclasses import replace

    from test_derive import synthetic

    import clock
    from clock.report.text import outcome_line

    unlogged = replace(synthetic([0.6, 0.9, 1.1]), events=None)
    line = outcome_line(clock.derive([unlogged]))
    assert line.startswith("not replayed: no recording has beats") and "NAME.events.jsonl" in line


def test_segments_merge_short_gaps_then_drop_short_speech_as_filling_the_mask_would(rng):
    from fractions import Fraction

    import numpy as np

    from clock.core.levels import LevelTrace
    from clock.core.segments import runs, segments
    from clock.core.ticks import Ticks

    tick = 0.05
    for _ in range(200):
        mask = rng.random(int(rng.integers(1, 80))) < rng.uniform(0.2, 0.8)
        min_gap, min_speech = float(rng.choice([0, 0.1, 0.15, 0.3])), float(rng.choice([0, 0.05, 0.1, 0.2]))
        trace = LevelTrace(np.arange(mask.size) * 2400, np.where(mask, 0.1, 0.0), 48000, Ticks(Fraction(1, 20)))
        # The oracle: fill each quiet run between speech whose gap (quiet ticks + 1, in ticks) is short.
        filled = mask.copy()
        for a, b in runs(~mask).tolist():
            if a > 0 and b < mask.size - 1 and (b - a + 2) * tick < min_gap - 1e-9:
                filled[a : b + 1] = True
        want = [(a * tick, b * tick) for a, b in runs(filled).tolist() if (b - a) * tick >= min_speech - 1e-9]
        seg = segments(trace, floor=0.003, min_gap_s=min_gap, min_speech_s=min_speech)
        got = [(s.onset_s, s.last_word_s) for s in seg.segments]
        assert np.allclose(got, want) if want else not got
        assert np.allclose(seg.gaps_s, [b[0] - a[1] for a, b in zip(want, want[1:])])


def test_segments_defaults_give_the_phrases_of_the_bundled_recordings(cli):
    rec = RECORDINGS / "tour-en-us-48k.webm"
    phrases = len((RECORDINGS / "tour-en-us-48k.labels.txt").read_text().splitlines())
    head = cli("segments", rec).stdout.splitlines()[0]
    assert head.startswith(f"{rec}: {phrases} segments, {phrases - 1} gaps;")
    assert head.endswith("gaps under 0.15 s merged, segments under 0.1 s dropped")
    every = cli("segments", rec, "--min-gap", "0", "--min-speech", "0").stdout.splitlines()[0]
    assert int(every.split(": ")[1].split()[0]) > phrases and every.endswith("; every run above the floor")
    import json

    params = json.loads(cli("segments", rec, "--format", "json", "--min-gap", "0.3").stdout)["params"]
    assert params["min_gap_s"] == 0.3 and params["min_speech_s"] == 0.1


def test_sweep_after_speech_is_each_settings_replay_against_one_last_word():
    import numpy as np

    import clock

    corpus = clock.load_corpus([RECORDINGS])
    obs = corpus.observations
    floors, quiets = (0.001, 0.003, 0.006), (2.0, 2.5)
    result = clock.sweep(obs, floors=floors, quiets_s=quiets, onset_timeout_s=10.0)
    for p in result.points:
        waits = []
        for o in obs:
            speech = clock.classify_ticks(o.trace, labels=o.labels, events=o.events).speech
            for b in clock.beats(o.trace, o.events, floor=p.floor, quiet_s=p.quiet_s, onset_timeout_s=10.0):
                if b.outcome == "ok":
                    inside = speech & (o.trace.t_s >= b.terminal_s) & (o.trace.t_s < b.span_end_s)
                    waits.append(b.quiet_declared_s - o.trace.t_s[np.flatnonzero(inside)[-1]])
        assert p.after_speech_mean_s == pytest.approx(np.mean(waits), abs=1e-9)
        assert p.after_speech_max_s == pytest.approx(np.max(waits), abs=1e-9)
    # It differs by floor at one quiet time, where the old latency column did not.
    by_floor = {p.floor: p.after_speech_mean_s for p in result.points if p.quiet_s == 2.5}
    assert len(set(by_floor.values())) == 3 and {p.latency_max_s for p in result.points if p.quiet_s == 2.5} != set()


def test_sweep_table_marks_the_recommendation_or_the_grid_point_nearest_it():
    import clock
    from clock.report.text import sweep_marks, sweep_table

    corpus = clock.load_corpus([RECORDINGS])
    d = clock.derive(corpus.observations)
    floor, quiet, _ = d.setting
    off = clock.sweep(corpus.observations, floors=(0.001, 0.003, 0.006), quiets_s=(1.0, 2.3, 4.0), derivation=d)
    marks = dict(zip(((p.floor, p.quiet_s) for p in off.points), sweep_marks(off)))
    assert [k for k, m in marks.items() if m] == [(0.003, 2.3)] and marks[(0.003, 2.3)] == "~"
    assert "the nearest, floor 0.003 quiet 2.3 s, is marked ~" in sweep_table(off)
    on = clock.sweep(corpus.observations, floors=(0.001, floor), quiets_s=(quiet,), derivation=d)
    assert sweep_marks(on) == ["", "*"] and "(on the grid, marked *)" in sweep_table(on)


def test_the_beats_table_fits_100_columns_and_wide_shows_every_column(cli):
    from dataclasses import replace

    import clock
    from clock.report.text import BEAT_COLUMNS, BEAT_TABLE, beat_header, beat_rows, table

    for rec in sorted(RECORDINGS.glob("*.*[gvm]")):
        for extra in ((), ("--quiet-time", "0.5"), ("--floor", "0.05")):
            lines = cli("beats", rec, *extra).stdout.splitlines()
            assert max(len(line) for line in lines[1:]) <= 100, (rec, extra)
    wide = cli("beats", WAV, "--wide").stdout.splitlines()[1].split()
    assert wide == [heading for heading, _ in BEAT_COLUMNS.values()]
    # The widest a beat can be: every flag, the longest outcome, times near an hour.
    corpus = clock.load_corpus([WAV])
    rec = corpus.recordings[0]
    b = clock.beats(rec.trace, rec.events, floor=0.003, quiet_s=2.5)[0]
    worst = replace(
        b,
        index=998,
        terminal_s=3599.0,
        last_word_s=3599.5,
        ack_overlap=True,
        premature_risk=True,
        outcome="missed-onset",
        missed_onset=True,
        barge_in_s=3599.1,
        cleared_s=3599.2,
    )
    text = table(beat_header(BEAT_TABLE), beat_rows([worst], BEAT_TABLE))
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert "ACK RISK BARGE-IN CLEARED" in text and "MISSED-ONSET" not in text  # the outcome column says it
