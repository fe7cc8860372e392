"""``plot``, ``sweep`` and ``report``: figure contents, sweep logic, and the HTML in a real browser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from browser import POST_JS, run_page
from sessions import RATE, Session

from clock.core.events import Event, EventLog
from clock.core.levels import levels
from clock.core.model import Observation
from clock.core.recommend.engine import derive
from clock.core.sweep import grid, sweep
from clock.errors import InvalidParameterError
from clock.report.html import SECTIONS

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def test_plot_writes_png_and_svg(cli, tmp_path):
    for suffix in ("png", "svg"):
        out = tmp_path / f"tour.{suffix}"
        result = cli("plot", RECORDINGS / "tour-en-us-48k.webm", "-o", out, "--start", "15", "--end", "35")
        assert result.exit_code == 0, result.stderr
        head = out.read_bytes()[:100]
        assert head.startswith(b"\x89PNG") if suffix == "png" else b"<svg" in out.read_bytes()[:400]


def test_plot_is_deterministic(cli, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    cli("plot", RECORDINGS / "short-en-029-44k.wav", "-o", a)
    cli("plot", RECORDINGS / "short-en-029-44k.wav", "-o", b)
    assert a.read_bytes() == b.read_bytes()


def test_plot_rejects_unknown_suffix_and_bad_zoom(cli, tmp_path):
    assert cli("plot", RECORDINGS / "short-en-029-44k.wav", "-o", tmp_path / "x.gif").exit_code == 2
    bad = cli("plot", RECORDINGS / "short-en-029-44k.wav", "-o", tmp_path / "x.png", "--start", "5", "--end", "2")
    assert bad.exit_code == 2 and "--end" in bad.stderr


def test_plot_figure_contents():
    from cli_helpers import tour_figure

    fig, trace, seg = tour_figure()
    ax_events, ax_wave, ax_level, ax_state, ax_count = fig.axes[:5]
    line = next(ln for ln in ax_level.lines if len(ln.get_xdata()) == trace.n_ticks)
    np.testing.assert_allclose(line.get_xdata(), trace.t_s)
    assert any(ln.get_ydata()[0] == pytest.approx(20 * np.log10(0.003)) for ln in ax_level.lines)
    # One legend, outside the data, for every panel.
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"narration speech", "narration", "beat done", "quiet time 2.5 s", "quiet - margin 2.3 s"} <= set(legend)
    assert not any(ax.get_legend() for ax in fig.axes)
    # Narration gaps only (the one before the narration is an acknowledgment's), as labelled gaps.
    from clock.core.beats import beats as find_beats
    from clock.core.events import Event, EventLog

    log = EventLog((Event("prompt", "prompt", 0.2), Event("terminal", "terminal_response", 1.0)))
    (beat,) = find_beats(trace, log, floor=0.003, quiet_s=2.5)
    assert beat.ack_overlap and len(beat.gaps_s) == 2
    assert [t.get_text() for t in ax_level.texts] == [f"{g:.2f} s" for g in beat.quiet_gaps_s]
    assert {t.get_text() for t in ax_events.texts} >= {"terminal 1", "prompt"}
    # The quiet count is in seconds on its own axis, with the quiet time drawn.
    assert ax_count.get_ylabel() == "quiet (s)" and ax_count.get_ylim()[1] >= 2.5


def test_event_labels_never_collide_and_user_text_is_not_mathtext():
    from clock.core.beats import beats as find_beats
    from clock.core.segments import segments
    from clock.report.plot import plot_recording

    s = Session(20.0).say(1.0, 3.0).say(6.0, 8.0)
    crowd = [Event("custom", f"$x_{i}$", 4.0 + 0.05 * i) for i in range(12)]
    log = EventLog((Event("terminal", "terminal_response", 0.5), *crowd, Event("prompt", "prompt", 12.0)))
    trace = levels(s.samples(), RATE)
    fig = plot_recording(
        trace,
        floor=0.003,
        segmentation=segments(trace, floor=0.003),
        events=log,
        beats=find_beats(trace, log, floor=0.003, quiet_s=2.5),
        quiet_s=2.5,
    )
    fig.canvas.draw()
    ax_events = fig.axes[0]
    boxes = [t.get_window_extent() for t in ax_events.texts]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    # Every event line is labelled (the crowded ones by their kind's initial), beside the beat's outcome.
    shown = [t.get_text() for t in ax_events.texts]
    assert sum(x in ("custom", "c") for x in shown) == 12 and {"terminal 1", "prompt"} <= set(shown)


def _obs(gap_s: float, *, prompt_after_s: float | None = None) -> Observation:
    s = Session(12.0).say(1.0, 2.0).say(2.0 + gap_s, 3.0 + gap_s)
    events = [Event("terminal", "terminal_response", 0.5)]
    if prompt_after_s is not None:
        events.append(Event("prompt", "prompt", 3.0 + gap_s + prompt_after_s))
    return Observation("g", levels(s.samples(), RATE), EventLog(tuple(events)))


def test_sweep_counts_premature_ends_and_recommends_as_derive():
    obs = [_obs(1.2), _obs(2.0)]  # clock-visible gaps about 1.16 and 1.96 s
    result = sweep(obs, floors=[0.003], quiets_s=grid("1.0:2.6:0.2"))
    by_quiet = {p.quiet_s: p for p in result.points}
    assert (
        by_quiet[1.0].tally.n_premature == 2
        and by_quiet[1.6].tally.n_premature == 1
        and by_quiet[2.2].tally.n_premature == 0
    )
    assert all(p.tally.n_stalled == 0 and p.tally.n_missed_onset == 0 for p in result.points)
    # One recommendation: the engine's, whatever the grid.
    assert result.recommended == derive(obs).setting
    # On the grid, the shortest quiet time without a premature end is on the Pareto front.
    best = by_quiet[2.0]
    assert best.tally.n_failed == 0 and best.latency_mean_s == pytest.approx(2.0, abs=1 / 60)
    assert best in result.pareto
    assert [p.tally.n_failed for p in result.pareto] == sorted(p.tally.n_failed for p in result.pareto)


def test_sweep_counts_stalls_when_the_next_prompt_comes_first():
    # The guide stops at 4 s; the page prompts the next stop 2.5 s later.
    result = sweep([_obs(1.0, prompt_after_s=2.5)], floors=[0.003], quiets_s=grid("1.0:3.0:0.5"))
    by_quiet = {p.quiet_s: p for p in result.points}
    assert by_quiet[1.5].tally.n_ok == 1 and by_quiet[2.0].tally.n_ok == 1
    assert by_quiet[3.0].tally.n_stalled == 1 and by_quiet[3.0].tally.n_ok == 0
    # And the recommendation never stalls it.
    d = derive([_obs(1.0, prompt_after_s=2.5)])
    assert d.outcome.tally.n_stalled == 0 and d.gaps.quiet_s <= d.gaps.room_s


def test_sweep_ties_are_exact_and_floors_print_as_written(cli, short_recordings):
    table = cli("sweep", short_recordings, "--floors", "0.0015:0.0025:0.0005", "--quiet-times", "2.3").stdout
    rows = [line.split() for line in table.splitlines()[1:] if line.strip() and line.split()[0][0].isdigit()]
    assert [r[0] for r in rows] == ["0.0015", "0.002", "0.0025"]


@pytest.mark.parametrize("spec", ["1:0:0.1", "a:b:c", "1:2:0", "0:1000:0.001"])
def test_bad_ranges(spec):
    with pytest.raises(InvalidParameterError):
        grid(spec)


def test_sweep_cli_outputs(cli, tmp_path, short_recordings):
    heat, trade = tmp_path / "h.png", tmp_path / "t.png"
    result = cli(
        "sweep",
        short_recordings,
        "--floors",
        "0.002:0.004:0.001",
        "--quiet-times",
        "2.0:2.6:0.2",
        "--format",
        "json",
        "--heatmap",
        heat,
        "--tradeoff",
        trade,
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    derived = json.loads(cli("derive", short_recordings, "--format", "json").stdout)["groups"][0]["recommended"]
    assert len(data["points"]) == 3 * 4
    assert {k: data["recommended"][k] for k in derived} == derived
    assert data["recommended"]["outcome"]["n_premature"] == 0 and data["recommended"]["outcome"]["n_stalled"] == 0
    assert heat.read_bytes().startswith(b"\x89PNG") and trade.read_bytes().startswith(b"\x89PNG")
    table = cli("sweep", short_recordings, "--floors", "0.003", "--quiet-times", "2.5").stdout
    assert f"recommended (as derive): floor {derived['floor']:g}, quiet {derived['quiet_s']:g} s" in table


def test_jobs_give_results_identical_to_a_serial_run(cli, short_recordings):
    serial = cli("derive", short_recordings, "--format", "json").stdout
    parallel = cli("derive", short_recordings, "--format", "json", "--jobs", "2").stdout
    assert serial == parallel
    assert cli("check", short_recordings, "-j", "2").stdout == cli("check", short_recordings).stdout


def test_no_progress_bar_off_a_terminal(cli, short_recordings):
    result = cli("derive", short_recordings)
    assert "recordings" not in result.stderr and result.stderr == ""


def test_report_opens_in_a_real_browser_with_every_section(cli, tmp_path, chromium, short_recordings):
    out = tmp_path / "report.html"
    result = cli("report", short_recordings, "-o", out, "--floors", "0.002:0.004:0.001", "--quiet-times", "2.2:2.6:0.2")
    assert result.exit_code == 0, result.stderr
    page = out.read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # self-contained: nothing to fetch
    checker = f"""<script>{POST_JS}
window.addEventListener('load', () => {{
  const sections = Array.from(document.querySelectorAll('section')).map(s => ({{
    id: s.id, heading: s.querySelector('h2').textContent, visible: s.getBoundingClientRect().height > 0}}));
  const images = Array.from(document.images).map(i => ({{alt: i.alt, ok: i.complete && i.naturalWidth > 0}}));
  post('/done', JSON.stringify({{sections, images}}));
}});</script>"""
    seen = json.loads(run_page(page.replace("</body>", checker + "</body>"))["/done"])
    assert [s["id"] for s in seen["sections"]] == [section for section, _ in SECTIONS]
    assert all(s["visible"] for s in seen["sections"])
    recordings = sorted(p.name for p in short_recordings.iterdir() if p.suffix in (".webm", ".ogg", ".wav"))
    assert len(recordings) == 2
    alts = [i["alt"] for i in seen["images"]]
    assert sorted(a for a in alts if a in recordings) == recordings  # a plot per recording
    assert "evidence" in alts  # derive's evidence figure
    assert sorted(a for a in alts if a.endswith(": beats")) == [f"{r}: beats" for r in recordings]
    assert len(alts) == 2 * len(recordings) + 3 and all(i["ok"] for i in seen["images"])
    # The check table gives each result's time as mm:ss.mmm.
    assert re.search(r"<td[^>]*>short-en-029-44k\.wav</td><td[^>]*>\d\d:\d\d\.\d{3}</td><td[^>]*>gap</td>", page)


def test_report_is_identical_with_jobs(cli, tmp_path, short_recordings):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    args = ["--floors", "0.003", "--quiet-times", "2.4:2.5:0.1"]
    assert cli("report", short_recordings, "-o", a, *args).exit_code == 0
    assert cli("report", short_recordings, "-o", b, *args, "--jobs", "2").exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_progress_bar_on_a_terminal(tmp_path, short_recordings):
    import os
    import pty
    import subprocess
    import sys

    def stderr_of(*extra: str) -> str:
        leader, follower = pty.openpty()
        done = subprocess.run(
            [sys.executable, "-m", "clock", "derive", str(short_recordings), *extra],
            stdout=subprocess.PIPE,
            stderr=follower,
            check=True,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        os.close(leader)
        assert b"== all" in done.stdout
        return b"".join(chunks).decode("utf-8", "replace")

    shown = stderr_of()
    assert "recordings" in shown and "100%" in shown
    assert stderr_of("--no-progress") == ""


def _outcome_session():
    """Three beats at quiet 1 s: one ok, one cut by a 1.2 s gap (premature), one an `end` cuts short."""
    s = Session(24.0, rate=16000).say(1.0, 3.0).say(7.0, 8.0).say(9.2, 10.0).say(15.0, 19.0)
    events = [Event("terminal", "terminal_response", t) for t in (0.5, 6.5, 14.5)]
    log = EventLog((*events, Event("end", "end", 17.0)))
    return levels(s.samples(), 16000), log


def test_every_beat_shows_its_outcome_on_both_views():
    from clock.core.beats import beats as find_beats
    from clock.core.replay import replay_ticks
    from clock.core.segments import segments
    from clock.report.plot import OUTCOME_STYLE, beat_outcome, plot_beat_timeline, plot_recording

    trace, log = _outcome_session()
    found = find_beats(trace, log, floor=0.003, quiet_s=1.0)
    assert [beat_outcome(b) for b in found] == ["ok", "premature", "aborted"]
    assert set(OUTCOME_STYLE) >= {"ok", "premature", "stalled", "aborted", "silent", "missed-onset"}
    view = plot_beat_timeline(found, quiet_s=1.0)
    assert [t.get_text() for t in view.axes[0].texts if t.get_text() in OUTCOME_STYLE] == [
        "ok",
        "premature",
        "aborted",
    ]
    session = plot_recording(
        trace,
        floor=0.003,
        segmentation=segments(trace, floor=0.003),
        events=log,
        beats=found,
        replay=replay_ticks(trace, log, floor=0.003, quiet_s=1.0),
        quiet_s=1.0,
    )
    ax_state = session.axes[3]
    assert [t.get_text() for t in ax_state.texts] == ["ok", "premature", "aborted"]
    legend = {t.get_text() for t in session.legends[0].get_texts()}
    assert {"beat ok", "beat premature", "beat aborted"} <= legend
    # Every time axis reads m:ss, on both views.
    for fig in (view, session):
        fig.canvas.draw()
        labels = [t.get_text() for t in fig.axes[-1 if fig is session else 0].get_xticklabels() if t.get_text()]
        assert labels and all(re.fullmatch(r"-?\d+:\d\d(\.\d+)?", x) for x in labels), labels


def test_every_terminal_response_is_labelled_even_when_crowded():
    from clock.core.segments import segments
    from clock.report.plot import plot_recording

    s = Session(600.0, rate=8000)
    log = EventLog(tuple(Event("terminal", "terminal_response", 5.0 + 6.0 * i) for i in range(90)))
    trace = levels(s.samples(), 8000)
    fig = plot_recording(trace, floor=0.003, segmentation=segments(trace, floor=0.003), events=log)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == sorted(str(i) for i in range(1, 91))
    few = plot_recording(trace, floor=0.003, segmentation=segments(trace, floor=0.003), events=log, start_s=0, end_s=40)
    assert [t.get_text() for t in few.axes[0].texts] == [f"terminal {i}" for i in range(1, 7)]


def test_sweep_figures_mark_both_settings_and_keep_every_count_readable():
    from matplotlib.patches import Rectangle

    from clock.report.plot import plot_sweep_heatmap, plot_tradeoff

    obs = [_obs(1.2), _obs(2.0)]
    result = sweep(obs, floors=[0.002, 0.003, 0.004], quiets_s=grid("1.0:2.6:0.2"))
    fig = plot_tradeoff(result, committed=(0.003, 2.4))
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    # Floors that give the same results share one line, named by all of them.
    assert "floors 0.002, 0.003, 0.004" in labels
    assert any(x.startswith("recommended: ") for x in labels) and "committed: floor 0.003, quiet 2.4 s" in labels
    heat = plot_sweep_heatmap(result, committed=(0.003, 2.4))
    ax = heat.axes[0]
    (cell,) = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
    assert cell.get_xy() == (pytest.approx(6.5), pytest.approx(0.5))  # quiet 2.4 is column 7, floor 0.003 row 1
    # The count in that cell is drawn and nothing filled lies over its centre.
    assert any(t.get_position() == (7, 1) for t in ax.texts)
    star = next(line for line in ax.lines if line.get_marker() == "*")
    assert (star.get_xdata()[0], star.get_ydata()[0]) != (7, 1)


def test_evidence_draws_the_shared_window_above_the_floor():
    from clock.report.plot import plot_evidence

    noisy = Session(12.0).hiss(0.0, 12.0, -70).say(1.0, 2.0).say(3.0, 4.0, rms=0.01)
    d = derive([Observation("n", levels(noisy.samples(), RATE), EventLog((Event("terminal", "t", 0.5),)))])
    assert d.floor.window is not None and d.floor.window[0] > 0
    ax = plot_evidence(d).axes[0]
    floor_line = next(line for line in ax.lines if line.get_label().startswith("floor "))
    lo, hi = (20 * np.log10(x) for x in d.floor.window)
    edges = [
        line
        for line in ax.lines
        if len(line.get_xdata()) and line.get_xdata()[0] in (pytest.approx(lo), pytest.approx(hi))
    ]
    assert len(edges) == 2 and all(e.get_zorder() > floor_line.get_zorder() for e in edges)
    assert any(f"({hi - lo:.1f} dB)" in t.get_text() for t in ax.get_legend().get_texts())


def test_every_event_line_is_labelled_pauses_end_and_tool_calls_too():
    from clock.core.segments import segments
    from clock.report.plot import plot_recording

    s = Session(20.0).say(1.0, 3.0).say(6.0, 8.0)
    kinds = [("terminal", 0.5), ("tool_call", 0.7), ("prompt", 0.8), ("pause", 4.0), ("resume", 4.3)]
    kinds += [("arrival", 4.4), ("clock.quiet", 4.5), ("end", 19.0)]
    log = EventLog(tuple(Event(k, k, t) for k, t in kinds))
    trace = levels(s.samples(), RATE)
    fig = plot_recording(trace, floor=0.003, segmentation=segments(trace, floor=0.003), events=log)
    fig.canvas.draw()
    texts = fig.axes[0].texts
    assert sorted(t.get_text() for t in texts) == sorted(["terminal 1", *(k for k, _ in kinds[1:])])
    boxes = [t.get_window_extent() for t in texts]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def test_the_beats_view_marks_a_beats_own_pause():
    from matplotlib.collections import PolyCollection

    from clock.core.beats import beats as find_beats
    from clock.report.plot import plot_beat_timeline

    s = Session(30.0).say(1.0, 3.0).say(6.5, 8.0).say(16.0, 18.0)
    log = EventLog(
        (
            Event("terminal", "terminal_response", 0.5),
            Event("pause", "pause", 4.0),
            Event("resume", "resume", 6.0),
            Event("terminal", "terminal_response", 15.5),
        )
    )
    trace = levels(s.samples(), RATE)
    found = find_beats(trace, log, floor=0.003, quiet_s=2.5)
    ax = plot_beat_timeline(found, quiet_s=2.5, events=log).axes[0]
    hatched = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_hatch()]
    (paused,) = hatched  # beat 1's pause only: beat 2 had none
    (path,) = paused.get_paths()
    xs, ys = path.vertices[:, 0], path.vertices[:, 1]
    assert (xs.min(), xs.max()) == (pytest.approx(3.5), pytest.approx(5.5))  # since beat 1's terminal response
    assert ys.min() > -0.5 and ys.max() < 0.5  # in beat 1's row
    assert "paused" in {t.get_text() for t in ax.figure.legends[0].get_texts()}


def test_tradeoff_floors_drawn_apart_never_go_below_zero():
    from clock.report.plot import plot_tradeoff

    obs = [_obs(1.2), _obs(2.0, prompt_after_s=1.0)]
    result = sweep(obs, floors=[0.001, 0.002, 0.003, 0.004, 0.02, 0.03], quiets_s=grid("1.0:2.6:0.2"))
    fig = plot_tradeoff(result, committed=(0.003, 2.4))
    ax = fig.axes[0]
    drawn = [y for line in ax.lines for y in np.asarray(line.get_ydata(), float)]
    assert drawn and min(drawn) >= 0
    assert ax.get_ylim()[0] < 0  # a zero count stays in view
    # The legend's star is small; the one on the axes keeps its size.
    legend = fig.legends[0]
    star = next(h for h in legend.legend_handles if getattr(h, "get_marker", lambda: None)() == "*")
    assert star.get_markersize() <= 8
    assert max(line.get_markersize() for line in ax.lines if line.get_marker() == "*") > 8


def test_heatmap_ticks_are_unrotated_and_counts_legible():
    from clock.report.plot import plot_sweep_heatmap

    result = sweep([_obs(1.2), _obs(2.0)], floors=[0.002, 0.003], quiets_s=grid("1.0:4.0:0.1"))
    fig = plot_sweep_heatmap(result)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all(t.get_rotation() == 0 for t in labels)
    boxes = [t.get_window_extent() for t in labels]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert all(t.get_fontsize() >= 6 for t in ax.texts)


def test_report_grid_holds_the_candidate_floor(cli, tmp_path, short_recordings, figures_unrendered):
    # (the sweep's table is the subject: the figures are drawn but not rendered to PNG)
    import html as html_lib

    out = tmp_path / "r.html"
    result = cli("report", short_recordings, "--floor", "0.00317", "--floors", "0.002:0.004:0.001", "-o", out)
    assert result.exit_code in (0, 1), result.stderr
    page = html_lib.unescape(out.read_text())
    # The sweep's table has the candidate's floor as rows of its own (one per quiet time), beside the grid's.
    quiets = len(re.findall(r">0\.002<", page))
    assert quiets >= 2 and len(re.findall(r">0\.00317<", page)) >= quiets


def test_beats_wide_never_prints_negative_zero():
    from clock.report.text import _secs

    assert _secs(-0.0004) == "0.000" and _secs(-0.0) == "0.000" and _secs(-0.0006) == "-0.001"
    assert _secs(0.0004) == "0.000" and _secs(None) is None


def test_check_lines_of_a_recording_come_in_time_order():
    from clock.core.check import CheckResult, in_time_order

    def r(rec, t):
        return CheckResult(rec, "gap", False, t, "d", "e")

    given = [r("b", 5.0), r("a", 3.0), r("b", 1.0), r("b", None), r("a", 2.0)]
    assert [(x.recording, x.t_s) for x in in_time_order(given)] == [
        ("b", None),
        ("b", 1.0),
        ("b", 5.0),
        ("a", 2.0),
        ("a", 3.0),
    ]


def _artists(fig) -> int:
    return sum(len(ax.lines) + len(ax.collections) + len(ax.patches) for ax in fig.axes)


def _busy_session(minutes: int):
    """A session with a word every 3 s and a terminal response every 30 s: segments and beats grow with its length."""
    from clock.core.beats import beats as find_beats
    from clock.core.replay import replay_ticks
    from clock.core.segments import segments

    rate = 8000
    s = Session(60.0 * minutes, rate=rate)
    for at in np.arange(1.0, 60.0 * minutes - 2, 3.0):
        s.say(float(at), float(at) + 0.5)
    log = EventLog(tuple(Event("terminal", "terminal_response", 0.5 + 30.0 * i) for i in range(2 * minutes)))
    trace = levels(s.samples(), rate)
    found = find_beats(trace, log, floor=0.003, quiet_s=2.5)
    return trace, log, found, segments(trace, floor=0.003), replay_ticks(trace, log, floor=0.003, quiet_s=2.5)


def test_a_session_figure_draws_as_many_artists_for_an_hour_as_for_minutes():
    # Segments, event lines, narrations, gap bars, lingers and outcome markers are one collection each,
    # not one artist per item: drawing time stays bounded whatever the length (the lines are binned).
    from clock.report.plot import plot_recording

    counts = []
    for minutes in (4, 40):
        trace, log, found, seg, replay = _busy_session(minutes)
        assert len(seg.segments) >= 19 * minutes and len(found) == 2 * minutes
        fig = plot_recording(trace, floor=0.003, segmentation=seg, events=log, beats=found, replay=replay, quiet_s=2.5)
        counts.append(_artists(fig))
    assert counts[0] == counts[1]


def test_speech_is_classed_as_any_of_the_spans_containing_it_would_class_it():
    # The sorted search against the definition: inside some [x0 - slack, x1 + 1e-9], spans overlapping or not.
    from clock.report.plot import _inside_any

    rng = np.random.default_rng(3)
    for _ in range(200):
        spans = [tuple(sorted(rng.uniform(0, 100, 2))) for _ in range(rng.integers(0, 12))]
        a = rng.uniform(0, 100, 50)
        b = a + rng.uniform(0, 20, 50)
        for slack in (0.0, 1e-9):
            brute = [any(x0 - slack <= s and e <= x1 + 1e-9 for x0, x1 in spans) for s, e in zip(a, b)]
            assert _inside_any(a, b, spans, slack).tolist() == brute


def test_the_plot_decodes_its_recording_once(cli, tmp_path, monkeypatch):
    import clock.cli.plot

    def second_decode(*args, **kwargs):
        raise AssertionError("decoded again for the waveform")

    monkeypatch.setattr(clock.cli.plot, "envelope", second_decode)
    result = cli("plot", RECORDINGS / "tour-en-us-48k.webm", "-o", tmp_path / "tour.png")
    assert result.exit_code == 0, result.stderr


def test_the_report_decodes_each_recording_once_when_nothing_is_cached(
    cli, tmp_path, monkeypatch, short_recordings, figures_unrendered
):
    # The waveform of each recording's plot comes from the decode that read its levels (as plot's does); the figures
    # are drawn from the envelopes, and rendering them to PNG is not the subject.
    import clock.cli.plot

    def second_decode(*args, **kwargs):
        raise AssertionError("decoded again for the waveform")

    monkeypatch.setattr(clock.cli.plot, "envelope", second_decode)
    out = tmp_path / "report.html"
    result = cli("report", short_recordings, "--no-cache", "-o", out)  # (a WAV and a WebM: both decoders)
    assert result.exit_code == 0, result.stderr
    assert out.stat().st_size > 0


def test_a_trace_cache_miss_gives_the_envelope_of_its_decode_and_a_hit_none(tmp_path):
    # The cache keeps traces, not envelopes: a miss decodes (and takes the envelope on the way), a hit decodes nothing.
    import soundfile as sf

    from clock.io.recording import read_recording
    from clock.run.cache import TraceCache

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(30_000) * 3000).astype(np.int16)
    path = tmp_path / "a.wav"
    sf.write(str(path), x, 48000, subtype="PCM_16")
    store = TraceCache(tmp_path / "cache")
    miss = read_recording(path, cache=store, envelope_bins=1000)
    assert miss.envelope is not None
    _, lows, highs = miss.envelope
    f = x.astype(np.float32) / np.float32(32768)
    n = -(-x.size // 480)  # 10 ms bins at 48 kHz
    assert lows.tolist() == [float(f[k * 480 : (k + 1) * 480].min()) for k in range(n)]
    assert highs.tolist() == [float(f[k * 480 : (k + 1) * 480].max()) for k in range(n)]
    hit = read_recording(path, cache=store, envelope_bins=1000)
    assert hit.envelope is None
    assert np.array_equal(hit.trace.level, miss.trace.level)


@pytest.mark.parametrize("max_bins", [None, 1, 3, 50])
def test_the_waveform_envelope_is_each_bins_extremes_however_the_blocks_come(max_bins):
    # Bins of 10 ms, doubled whenever there are more than 2 * max_bins: each bin's min and max, brute force.
    from clock.io.recording import _Envelope

    rng = np.random.default_rng(int(max_bins or 0))
    x = rng.standard_normal(300_007).astype(np.float32)
    wave = _Envelope(48000, 0.01, max_bins=max_bins)
    at = 0
    while at < x.size:
        size = int(rng.integers(1, 20000))
        wave.add(x[at : at + size])
        at += size
    t, lows, highs = wave.result()
    size = wave.size
    assert size == 480 * 2 ** round(np.log2(size / 480))  # 10 ms, doubled
    n = -(-x.size // size)
    assert max_bins is None or n <= 2 * max_bins + 1
    assert lows.tolist() == [float(x[k * size : (k + 1) * size].min()) for k in range(n)]
    assert highs.tolist() == [float(x[k * size : (k + 1) * size].max()) for k in range(n)]
    np.testing.assert_allclose(t, (np.arange(n) + 0.5) * size / 48000)


def test_a_recommendation_outside_the_grid_is_never_drawn_on_a_grid_point_and_the_text_says_so():
    from clock.report.plot import plot_sweep_heatmap, plot_tradeoff
    from clock.report.text import outside_grid, recommended_line

    obs = [_obs(1.2), _obs(2.0)]
    result = sweep(obs, floors=[0.002, 0.025, 0.05], quiets_s=grid("1.0:1.6:0.2"))  # stops short of 2.0 s + margin
    floor, quiet, _ = result.recommended
    assert quiet is not None and quiet > 1.6
    said = f"quiet {quiet:g} s outside the grid's 1 .. 1.6 s (widen --quiet-times)"
    assert outside_grid(result) == said
    line = recommended_line(result)
    assert f"(outside the grid: {said}; the nearest grid point" in line and "between grid points" not in line
    fig = plot_tradeoff(result)
    assert not [ln for ln in fig.axes[0].lines if ln.get_marker() == "*" and len(ln.get_xdata())]  # no star drawn
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert f"recommended: floor {floor:g}, quiet {quiet:g} s, not drawn: {said}" in labels
    heat = plot_sweep_heatmap(result)
    labels = [t.get_text() for t in heat.legends[0].get_texts()]
    assert f"recommended: floor {floor:g}, quiet {quiet:g} s, drawn at the grid's edge: {said}" in labels
    inside = sweep(obs, floors=[0.002, 0.025, 0.05], quiets_s=grid("1.0:3.0:0.2"))
    assert outside_grid(inside) == "" and "outside the grid" not in recommended_line(inside)


def test_a_floor_over_a_recording_s_window_reads_as_a_signed_distance_not_a_double_minus():
    """The status column says where the floor stands in each window, signed: above its bottom (+), under or over
    its top (- or +); never "--3.8 dB"."""
    from types import SimpleNamespace

    from clock.report.text import recording_rows

    rec = SimpleNamespace(name="r.wav", window=(0.001, 0.002), noise_median=0.0005, noise_high=0.001, speech_low=0.003)
    for floor, want in ((0.0015, "+3.5 dB / -2.5 dB"), (0.0030, "+9.5 dB / +3.5 dB"), (0.0008, "-1.9 dB / -8.0 dB")):
        d = SimpleNamespace(floor=SimpleNamespace(recordings=[rec], outside=(), floor=floor))
        (row,) = recording_rows(d)[1]
        assert row[-1] == want


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_a_figure_laid_out_once_saves_the_bytes_savefig_gives_it(fmt, tmp_path):
    # save_figure lays a constrained-layout PNG out once and draws it once; matplotlib's own savefig lays it out in
    # a pass with rendering off, then draws it: the same bytes, for labels of any length, and the figure keeps its
    # layout engine (a second PNG lays it out again; an SVG is matplotlib's own way throughout).
    import io

    import matplotlib

    from clock.report.plot import DATA_DIGEST_KEY, _figure, figure_data_digest, save_figure

    def make() -> object:
        fig = _figure(figsize=(6, 3), layout="constrained")
        left, right = fig.subplots(1, 2, width_ratios=(1, 3))
        left.barh(range(3), [1, 2, 3])
        left.set_yticks(range(3), ["a", "a much longer label than the others", "c"])
        right.plot(np.arange(50), np.sin(np.arange(50) / 5), label="a line")
        right.set_title("a title " * 6)
        right.set_xlabel("time (s)")
        right.legend(loc="upper right")
        return fig

    ours, theirs = io.BytesIO(), io.BytesIO()
    fig = make()
    save_figure(fig, ours, fmt=fmt)
    assert fig.get_layout_engine() is not None
    again = io.BytesIO()
    save_figure(fig, again, fmt=fmt)
    other = make()
    metadata = {
        "png": {"Software": None, DATA_DIGEST_KEY: figure_data_digest(other)},
        "svg": {"Date": None, "Creator": None},
    }[fmt]
    with matplotlib.rc_context({"svg.hashsalt": "speechclock"}):
        other.savefig(theirs, format=fmt, metadata=metadata)
    assert ours.getvalue() == theirs.getvalue()
    if fmt == "png":
        assert again.getvalue() == theirs.getvalue()
