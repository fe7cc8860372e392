"""``derive``: the recommendations, their evidence, and their independence from the starting floor."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sessions import RATE, WINDOW_S, Session

from clock.core.events import Event, EventLog, Label
from clock.core.levels import levels
from clock.core.model import Margins, Observation
from clock.core.recommend.engine import derive
from clock.core.recommend.evidence import Derivation
from clock.core.recommend.floor_math import equivalents
from clock.core.recommend.windows import classify_ticks
from clock.io.config import read_config
from clock.run.corpus import collect, observe

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


@pytest.fixture(scope="module")
def bundled() -> list[Observation]:
    cfg, files = collect([RECORDINGS])
    return [observe(f, cfg)[1] for f in files]


@pytest.fixture(scope="module")
def bundled_derived(bundled) -> Derivation:
    """derive over the bundled recordings, once for the tests that only read it."""
    return derive(bundled)


def test_bundled_recommendation_and_its_evidence(bundled_derived):
    d = bundled_derived
    f, g, o = d.floor, d.gaps, d.onsets
    assert f.methods == {"labels": 5} and len(f.recordings) == 5 and not f.outside and not f.no_window
    # Inside every recording's window, 6 dB below the lowest speech p5 (rounded to 2 digits).
    lowest = min(r.speech_low for r in f.recordings)
    assert all(r.window[0] < f.floor < r.window[1] for r in f.recordings)
    assert abs(20 * math.log10(lowest / 2 / f.floor)) < 0.3
    assert f.above_db == pytest.approx(20 * math.log10(f.floor / f.window[0]))
    assert f.below_db == pytest.approx(20 * math.log10(f.window[1] / f.floor))
    assert list(f.speech) == ["min", "p0.1", "p1", "p5", "p50", "p95", "max"]
    assert g.quiet_s == pytest.approx(math.ceil((g.max_gap_s + 0.2) / 0.05 - 1e-9) * 0.05)
    assert g.p_exceed_rule_of_three == pytest.approx(3 / g.n_gaps)
    assert g.longest[0][2] == g.max_gap_s
    assert o.n_beats == 19 and o.onset_timeout_s == math.ceil((o.max_s + 2.0) / 0.5) * 0.5
    # The corpus was made with pauses up to 2.3 s and speech from about 0.005 RMS.
    assert 0.002 <= f.floor <= 0.005 and 2.3 <= g.quiet_s <= 2.6
    # Replayed over the corpus: every beat ends right, but the one the page ended while the guide spoke.
    assert d.outcome.tally.n_beats == 19 and d.outcome.tally.n_aborted == 1
    assert d.outcome.tally.n_ok == 18 and d.outcome.tally.n_failed == 0


def test_the_recommendation_does_not_depend_on_the_committed_numbers(bundled, bundled_derived):
    # derive takes no starting floor or quiet time at all: the margins are its only knobs.
    assert bundled_derived.setting == derive(list(reversed(bundled))).setting


def test_labels_and_the_data_driven_split_agree(bundled, bundled_derived):
    with_labels = bundled_derived.floor
    without = derive([replace(o, labels=None) for o in bundled]).floor
    assert without.methods == {"split": 5}
    # The split cannot see utterance edges as exactly as labels do (it takes
    # some word tails as speech, so it errs low, the safe side), the floor
    # follows the quietest recording's speech, and both are rounded to two
    # significant digits (up to 0.3 dB): they agree within 3 dB.
    assert 0 <= 20 * math.log10(with_labels.floor / without.floor) < 3


def test_exact_zero_ticks_are_always_silence():
    s = Session(4.0).say(1.0, 2.0)
    trace = levels(s.samples(), RATE)
    classes = classify_ticks(trace)
    assert np.all(classes.silence[trace.level == 0])
    assert not np.any(classes.speech & classes.silence)


def synthetic(
    gaps: list[float], *, noise_dbfs: float | None = None, room_dbfs: float | None = None, name: str = "s"
) -> Observation:
    """A beat of 1.2 s utterances with the given gaps; noise in the gaps, or in the whole room."""
    s = Session(4.0 + sum(gaps) + 1.2 * (len(gaps) + 1))
    if room_dbfs is not None:
        s.hiss(0.0, s.duration_s, room_dbfs)
    s.event("terminal", 0.5)
    t = 1.0
    labels = []
    for gap in gaps + [None]:
        s.say(t, t + 1.2)
        labels.append(Label(t, t + 1.2))
        if gap is not None:
            if noise_dbfs is not None:
                s.hiss(t + 1.2, t + 1.2 + gap, noise_dbfs)
            t += 1.2 + gap
    log = EventLog((Event("terminal", "terminal_response", 0.5),))
    return Observation(name, levels(s.samples(), RATE), log, tuple(labels))


def test_quiet_time_is_the_longest_gap_plus_the_margin():
    d = derive([synthetic([0.3, 0.9, 1.7])])
    assert d.gaps.n_gaps == 3
    # A 0.05 RMS square wave reads above the floor once m of its samples are in the window.
    m = 2048 * (d.floor.floor / 0.05) ** 2
    assert abs(d.gaps.max_gap_s - (1.7 - WINDOW_S + 2 * m / RATE)) < 2 / 60
    # The first multiple of 0.05 s strictly above longest gap + margin (check fails a gap that reaches it).
    assert d.gaps.quiet_s == pytest.approx((math.floor((d.gaps.max_gap_s + 0.2) / 0.05 + 1e-6) + 1) * 0.05)
    assert d.gaps.margin_kept and d.gaps.margin_left_s > 0.2
    assert any("thin evidence: 3 gaps" in w for w in d.warnings)
    d2 = derive([synthetic([0.3, 0.9, 1.7])], margins=Margins(quiet_margin_s=0.5))
    assert d2.gaps.quiet_s == pytest.approx(d.gaps.quiet_s + 0.3, abs=0.051)


def test_short_dips_are_left_out_of_the_distribution_but_not_the_maximum():
    d = derive([synthetic([0.1, 0.12, 0.5])], margins=Margins(min_gap_s=0.15))
    assert d.gaps.n_all_gaps == 3 and d.gaps.n_gaps == 1


def test_noise_only_in_short_pauses_does_not_matter_to_the_clock():
    # Noise louder than the voice, but only in 0.5 s pauses: the clock never
    # needs to hear quiet there, only after the narration, where it is silent.
    d = derive([synthetic([0.5, 0.5], noise_dbfs=-20)])
    assert d.floor.floor is not None and not d.floor.no_window
    # At that floor the noise fills the pauses: no gap to derive a quiet time from, and it says so.
    assert d.gaps.quiet_s is None and d.gaps.rule == "no gap inside a beat"


def test_noise_louder_than_speech_gives_no_floor_and_says_why_in_words():
    obs = synthetic([0.5, 0.5], room_dbfs=-20)  # a room at 0.1 RMS under 0.05 RMS words
    d = derive([obs])
    assert d.floor.floor is None and "no floor" in d.floor.rule
    assert d.floor.no_window == ("s",)
    (note,) = [w for w in d.warnings if w.startswith("s: ")]
    assert "a level-floor clock cannot work on it" in note and "dBFS" in note
    # It contributes no gap or quiet-time evidence.
    assert d.gaps.n_all_gaps == 0 and d.gaps.quiet_s is None


def test_equivalents_of_the_committed_floor():
    eq = equivalents(0.003)
    assert eq["dbfs"] == pytest.approx(-50.46, abs=0.01)
    assert eq["auditok_energy_threshold"] == pytest.approx(39.85, abs=0.01)
    assert eq["hark_threshold_db"] == pytest.approx(-50.46 + 20 * math.log10(0.21 * math.sqrt(2)), abs=0.01)


def test_margins_are_validated():
    with pytest.raises(ValueError, match="speech_percentile"):
        Margins(speech_percentile=0)


# --- the command -------------------------------------------------------------


def test_derive_table_shows_n_beside_every_number(cli):
    out = cli("derive", RECORDINGS).stdout
    for needle in (
        "n=",
        "ticks",
        "narration gaps >= 0.15 s",
        "beats",
        "committed",
        "rule of three",
        "dBFS",
        "auditok energy_threshold",
        "hark threshold",
        "replayed over 5 recordings with event logs, 19 beats: 18 ended right",
        "0 premature ends, 0 stalls, 0 missed onsets; "
        "not the setting's doing: 1 aborted by the visitor while the guide spoke",
        "is driven by",
        "noise_high",
    ):
        assert needle in out


def test_the_derive_tables_columns_are_its_json_fields(cli):
    text = cli("derive", RECORDINGS).stdout
    data = json.loads(cli("derive", RECORDINGS, "--format", "json").stdout)
    header = next(line.split() for line in text.splitlines() if line.strip().startswith("name "))
    assert header[-1] == "status" and set(header[:-1]) <= set(data["groups"][0]["floor"]["recordings"][0])


def test_derive_json_matches_the_library(cli, bundled):
    data = json.loads(cli("derive", RECORDINGS, "--format", "json").stdout)
    d = derive(bundled, margins=read_config(RECORDINGS / "speechclock.toml").margins)
    (group,) = data["groups"]
    assert group["floor"]["floor"] == d.floor.floor
    assert group["gaps"]["quiet_s"] == d.gaps.quiet_s
    assert group["floor"]["equivalents"]["dbfs"] == pytest.approx(20 * math.log10(d.floor.floor))
    assert data["committed"]["floor"] == 0.003


def test_derive_by_voice(cli):
    data = json.loads(cli("derive", RECORDINGS, "--by", "voice", "--format", "json").stdout)
    names = [g["group"] for g in data["groups"]]
    assert names[0] == "all" and sorted(names[1:]) == sorted(
        ["voice=en-us", "voice=en-gb-x-rp", "voice=en-us+f3", "voice=en-029"]
    )
    # The sample session speaks with the stereo tour's voice: that group holds both.
    sizes = {g["group"]: len(g["recordings"]) for g in data["groups"][1:]}
    assert sizes == {"voice=en-us": 1, "voice=en-gb-x-rp": 2, "voice=en-us+f3": 1, "voice=en-029": 1}


def test_derive_markdown(cli):
    out = cli("derive", RECORDINGS, "--format", "markdown").stdout
    assert "| | recommended | evidence | committed |" in out and "| floor |" in out


def test_derive_single_file_thin_evidence(cli):
    out = cli("derive", RECORDINGS / "short-en-029-44k.wav").stdout
    assert "warning: thin evidence" in out


# --- how stable, and how it reads --------------------------------------------------


def test_leave_one_out_names_the_recording_that_decides_the_quiet_time():
    obs = [synthetic([0.4, 0.8], name="a"), synthetic([0.5, 0.7], name="b"), synthetic([0.6, 2.0], name="long")]
    d = derive(obs)
    quiet = next(s for s in d.stability if s.quantity == "quiet_s")
    assert quiet.driver == "long" and quiet.value == d.gaps.quiet_s
    # Without it the longest gap is 0.8 s, so the quiet time drops to about 1.0 s.
    assert quiet.without == derive(obs[:2]).gaps.quiet_s and quiet.without < quiet.value - 1.0


def test_a_recording_without_a_log_counts_all_its_gaps_and_says_so():
    logged = synthetic([0.4, 0.8], name="logged")
    bare = Observation("bare", synthetic([0.5, 1.1], name="bare").trace)
    d = derive([logged, bare])
    assert any(name == "bare" for name, _, _ in d.gaps.longest) and d.gaps.unlogged == ("bare",)
    assert "no event log for 1 recording (bare): all their gaps were counted as narration gaps" in d.warnings


def test_small_samples_read_right(cli, tmp_path):
    from clock.report.text import percent, plural

    assert [percent(p) for p in (1.0, 0.1, 0.033, 0.00091, 1e-7)] == ["100%", "10%", "3.3%", "0.091%", "< 0.01%"]
    assert plural(1, "gap") == "1 gap" and plural(2, "gap") == "2 gaps" and plural(0, "beat") == "0 beats"
    Session(6.0).event("terminal", 0.5).say(1.0, 2.0).say(2.6, 3.4).write(tmp_path, "one")
    out = cli("derive", tmp_path / "one.wav").stdout
    assert "1 recording" in out and "1 beat" in out and "1 narration gap" in out
    assert "no bound from 1 gap (the rule of three needs more than 3)" in out
    assert "no tail estimate" in out and "e+" not in out and "about -" not in out


def test_derive_plot_shows_the_windows_the_floor_and_the_quiet_time(cli, tmp_path, bundled_derived):
    from clock.report.plot import plot_evidence

    d = bundled_derived
    fig = plot_evidence(d)
    ax_levels, ax_gaps = fig.axes[:2]
    assert [t.get_text() for t in ax_levels.get_yticklabels()] == [r.name for r in d.floor.recordings]
    floor_line = next(line for line in ax_levels.lines if line.get_label().startswith("floor "))
    assert floor_line.get_xdata()[0] == pytest.approx(20 * math.log10(d.floor.floor))
    quiet_line = next(line for line in ax_gaps.lines if line.get_label().startswith("quiet time"))
    assert quiet_line.get_xdata()[0] == pytest.approx(d.gaps.quiet_s)
    out = tmp_path / "evidence.png"
    assert cli("derive", RECORDINGS, "--plot", out).exit_code == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_prefer_chooses_among_the_settings_that_replay_right_and_held_out_evidence_is_given():
    from tours import random_corpus

    obs = [t.observation() for t in random_corpus(3)]
    plain = derive(obs)
    seen = []

    def last(candidates):
        seen.append(list(candidates))
        return len(candidates) - 1, "the last one, as asked"

    chosen = derive(obs, prefer=last)
    assert seen and seen[0][0] == plain.setting  # the engine's own first choice leads the list
    assert chosen.setting == seen[0][-1] and chosen.outcome.tally.n_failed == 0
    assert chosen.floor.rule.endswith("; the last one, as asked")
    assert len({c[0] for c in seen[0]}) == len(seen[0])  # one setting per candidate floor
    h = plain.held_out
    assert h is not None and h.n_recordings == sum(o.has_beats for o in obs)
    assert h.n_right == sum(r.right for r in h.recordings)
    assert all(r.right == (not r.failing and r.floor is not None) for r in h.recordings)


def test_held_out_leaves_folds_out_past_twenty_recordings_each_derived_without_its_fold():
    # Past MAX_HELD_OUT recordings with beats, the held-out derivations are folds (every 20th recording left out
    # together), so their number stays fixed and the work linear in the recordings; each fold's setting is what
    # derive gives without it (brute force, two folds).
    from clock.core.recommend.heldout import MAX_HELD_OUT

    rng = np.random.default_rng(5)
    obs = []
    for k in range(MAX_HELD_OUT + 4):
        gap = float(rng.uniform(0.3, 1.2))
        level = float(10 ** rng.uniform(-2, -1))
        s = (
            Session(6.0)
            .event("prompt", 0.2)
            .event("terminal", 0.5)
            .say(1.0, 2.0, level)
            .say(2.0 + gap, 3.0 + gap, level)
        )
        log = EventLog((Event("prompt", "prompt", 0.2), Event("terminal", "terminal_response", 0.5)))
        obs.append(Observation(f"r{k:02d}", levels(s.samples(k), RATE), events=log))
    h = derive(obs).held_out
    assert h is not None and h.n_folds == MAX_HELD_OUT and h.n_recordings == len(obs)
    assert [r.recording for r in h.recordings] == [o.name for o in obs]
    for k in (0, MAX_HELD_OUT - 1):
        fold = set(range(len(obs))[k::MAX_HELD_OUT])
        setting = derive([o for i, o in enumerate(obs) if i not in fold], held_out=False).setting
        assert setting[0] is not None
        for i in fold:
            r = h.recordings[i]
            assert (r.floor, r.quiet_s, r.onset_timeout_s) == setting


def test_bursts_exactly_every_3_s_give_no_tail_estimate_and_no_overflow():
    from clock.core.recommend.quiet import _tail_exceedance

    # Gaps alike to float noise: the exponential fit has no scale (exp of 1e15 overflowed before).
    alike = 3.0 + np.arange(40) * 1e-15
    assert _tail_exceedance(alike, 2.9) is None and _tail_exceedance(alike, 3.2) is None
    # A real tail still gives its estimate above the 75th percentile, and nothing at or under it.
    spread = np.linspace(0.2, 2.0, 40)
    p = _tail_exceedance(spread, 2.5)
    assert p is not None and 0 < p < 0.25
    assert _tail_exceedance(spread, float(np.percentile(spread, 75))) is None
    # End to end: bursts every 3 s (gaps of 1.8 s, all alike) derive without an error.
    d = derive([synthetic([1.8] * 40)], held_out=False)
    assert d.gaps.n_gaps == 40 and d.gaps.quiet_s is not None
