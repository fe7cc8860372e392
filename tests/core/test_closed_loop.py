"""Recordings made by a page whose setting was wrong: the replay knows what the page caused.

Every tour is recorded with the page's clock in the loop (tests/closed_loop.py): the page's own prompts and its
``end`` follow its declarations, and the next response's audio is queued after what still plays. Every beat is
judged by re-simulating the tour at the setting asked (the same audio and latencies), never by the tool's replay.
"""

from __future__ import annotations

import warnings
from collections import Counter
from functools import cache

import numpy as np
import pytest
from closed_loop import VoiceDraw, _cached_record, _played, draw_voice, truth

from clock.core.beats import beats
from clock.core.check import check_corpus
from clock.core.model import Margins
from clock.core.outcome import FAILURES, PREMATURE
from clock.core.recommend.engine import derive
from clock.core.recommend.replay import judge
from clock.core.sweep import sweep
from clock.core.thresholds import Thresholds

FLOOR = 0.003
PAGE_Q = 2.5


@cache
def long_pauses(seed: int) -> tuple[VoiceDraw, ...]:
    """A voice whose longest sentence pause in each beat is 2.6-3.1 s: a page at 2.5 s cuts it off."""
    rng = np.random.default_rng(seed)
    return tuple(draw_voice(rng, f"long{seed}-{i}", long_pauses_s=(2.6, 3.1)) for i in range(4))


@cache
def just_over(seed: int) -> tuple[VoiceDraw, ...]:
    """A voice whose longest sentence pause in each beat is 2.55-2.8 s: just over a page's 2.5 s."""
    rng = np.random.default_rng(seed)
    return tuple(draw_voice(rng, f"just{seed}-{i}", long_pauses_s=(2.55, 2.8)) for i in range(4))


@cache
def short_pauses(seed: int) -> tuple[VoiceDraw, ...]:
    """A voice that pauses at most 1.6 s: a page at 3.5 s waits longer than it needs."""
    rng = np.random.default_rng(seed)
    return tuple(draw_voice(rng, f"short{seed}-{i}", pauses_s=(0.3, 1.6)) for i in range(4))


def observations(voices, *, quiet_s: float, floor: float = FLOOR):
    return [_cached_record(v, floor, quiet_s).observation() for v in voices]


def _quietly(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


def _failing_beats(obs, *, floor: float, quiet_s: float, timeout_s: float = 10.0) -> list[str]:
    out = []
    for o in obs:
        for b in _quietly(beats, o.trace, o.events, floor=floor, quiet_s=quiet_s, onset_timeout_s=timeout_s):
            if b.outcome in FAILURES:
                out.append(f"{o.name} beat {b.index + 1}: {b.outcome}")
    return out


def test_the_generator_s_page_cuts_a_long_pausing_voice_off_and_waits_out_a_short_one():
    """The construction itself: at 2.5 s the page ends beats inside the 2.6-3.1 s pauses; at 3.3 s it ends none;
    a short-pausing voice is never cut off at 3.5 s."""
    voices = long_pauses(1)
    assert len(truth(list(voices), floor=FLOOR, quiet_s=PAGE_Q)) >= 8
    assert truth(list(voices), floor=FLOOR, quiet_s=3.3) == []
    assert truth(list(short_pauses(3)), floor=FLOOR, quiet_s=3.5) == []


@pytest.mark.parametrize("voice, seed", [(long_pauses, 1), (long_pauses, 2), (just_over, 4)])
def test_at_the_page_s_own_setting_beats_names_exactly_the_beats_the_page_ended_early(voice, seed):
    voices = list(voice(seed))
    obs = observations(voices, quiet_s=PAGE_Q)
    expected = sorted(truth(voices, floor=FLOOR, quiet_s=PAGE_Q))
    assert expected and sorted(_failing_beats(obs, floor=FLOOR, quiet_s=PAGE_Q)) == expected


@pytest.mark.parametrize("quiet_s", [3.3, 3.6, 4.5])
def test_a_setting_that_re_simulates_right_fails_no_beat_of_a_recording_a_wrong_page_made(quiet_s):
    """The page at 2.5 s prompted 0.5 s after each early declaration: those prompts moved with a longer quiet
    time, so no beat is stalled or outpaced, and the narration past each prompt is the beat's own."""
    voices = list(long_pauses(1))
    assert truth(voices, floor=FLOOR, quiet_s=quiet_s) == []
    obs = observations(voices, quiet_s=PAGE_Q)
    assert _failing_beats(obs, floor=FLOOR, quiet_s=quiet_s) == []
    th = Thresholds(floor=FLOOR, quiet_s=quiet_s, onset_timeout_s=10.0)
    results = _quietly(check_corpus, obs, thresholds=th, margins=Margins())
    failed = [r.line() for r in results if not r.passed and r.check in ("premature", "stalled", "outpaced")]
    assert failed == []


def _borderline(voices, quiet_s: float, within_s: float = 0.15) -> set[str]:
    """Beats with a pause this close to the quiet time: whether the clock counts it to the quiet time depends on
    where the ticks fall on the audio (and the analyser's window on a word's tail), which a re-simulation that
    places the beat elsewhere does not keep: judged by neither side."""
    return {
        f"{v.name} beat {k + 1}"
        for v in voices
        for k, b in enumerate(v.beats)
        if any(abs(p - quiet_s) < within_s for p in b.pauses_s)
    }


@pytest.mark.parametrize("quiet_s", [2.7, 2.9])
def test_a_setting_still_too_short_fails_the_beats_its_re_simulation_fails(quiet_s):
    voices = list(long_pauses(1))
    edge = _borderline(voices, quiet_s)
    expected = sorted(x for x in truth(voices, floor=FLOOR, quiet_s=quiet_s) if x.rsplit(":", 1)[0] not in edge)
    obs = observations(voices, quiet_s=PAGE_Q)
    found = sorted(x for x in _failing_beats(obs, floor=FLOOR, quiet_s=quiet_s) if x.rsplit(":", 1)[0] not in edge)
    assert expected and found == expected


def _pauses_needed(voices) -> float:
    return max(p for v in voices for b in v.beats for p in b.pauses_s)


@pytest.mark.parametrize("voice, seed", [(long_pauses, 1), (long_pauses, 2), (just_over, 4)])
def test_derive_on_a_wrong_page_s_recordings_recovers_a_setting_that_re_simulates_right(voice, seed):
    voices = list(voice(seed))
    obs = observations(voices, quiet_s=PAGE_Q)
    d = _quietly(derive, obs, held_out=False)
    floor, quiet, timeout = d.setting
    assert floor is not None and quiet is not None and timeout is not None
    # Never under what the voice's pauses need, and the floor where the speech and silence put it (the
    # recordings are digital silence between words: no reason to drop it by tens of dB).
    assert quiet > _pauses_needed(voices)
    assert floor >= FLOOR / 4
    assert d.outcome is not None and d.outcome.tally.n_failed == 0
    other = list(voice(seed + 10))
    assert truth(voices, floor=floor, quiet_s=quiet) == []
    assert truth(other, floor=floor, quiet_s=quiet) == []
    # The onset timeout covers the voice's onsets as a page at the recommended setting meets them (the narration's
    # first sample after its terminal response, queued after what still plays), plus the 2 s margin, and no more:
    # a beat the wrong page prompted while the beat before it still spoke waits on that beat's narration, the
    # page's doing, not the voice's. (1 s over the margin for the acknowledgment's words and the 0.5 s rounding.)
    onsets = [p.narration_start_s - p.terminal_s for v in voices for p in _played(v, floor, quiet)]
    assert max(onsets) < timeout <= max(onsets) + Margins().onset_margin_s + 1.0


def test_beats_names_the_beats_that_are_where_they_are_because_the_page_ended_the_one_before_early():
    """At a right setting, a beat is ``after_early_end`` exactly where the wrong page declared the beat before it
    before that beat's narration ended (the construction's times, never the replay's)."""
    voices = list(long_pauses(1)) + list(just_over(4))
    expected, found = set(), set()
    for v in voices:
        rec = _cached_record(v, FLOOR, PAGE_Q)
        played = rec.played
        expected |= {f"{v.name} {k}" for k in range(1, len(played)) if played[k - 1].premature}
        o = rec.observation()
        found_beats = _quietly(beats, o.trace, o.events, floor=FLOOR, quiet_s=3.4, onset_timeout_s=10.0)
        found |= {f"{v.name} {b.index}" for b in found_beats if b.after_early_end}
    assert expected and found == expected


def test_derive_under_a_page_that_waits_too_long_recommends_what_the_short_pauses_need():
    voices = list(short_pauses(3))
    obs = observations(voices, quiet_s=3.5)
    d = _quietly(derive, obs, held_out=False)
    floor, quiet, _ = d.setting
    assert floor is not None and quiet is not None
    assert _pauses_needed(voices) < quiet < 3.5
    assert truth(voices, floor=floor, quiet_s=quiet) == []


def test_visitor_actions_and_an_early_end_of_the_recording_do_not_change_derive_s_quiet_time():
    """A barge-in in the last sentence, an End before the clock declared, a Pause of 4 s a second after a last
    word (the page's clock holds its count), and a recording cut 1.8 s after the last word are the world's: not
    failures, and no bound the quiet time must fit in."""
    from dataclasses import replace

    voices = list(long_pauses(1))
    base = _quietly(derive, observations(voices, quiet_s=PAGE_Q), held_out=False)
    v0, v1, v2, v3 = voices

    # (in beats whose pauses the page's clock waits out: where it declares first, the visitor has nothing to cut)
    def short(b, **kw):
        return replace(b, pauses_s=tuple(min(p, 1.5) for p in b.pauses_s), **kw)

    barged = replace(v0, name="barged", beats=(*v0.beats[:2], short(v0.beats[2], barge_in_at=0.6), *v0.beats[3:]))
    ended = replace(v1, name="ended", beats=(*v1.beats[:3], short(v1.beats[3], end_early_s=1.2)))
    cut = replace(v2, name="cut", cut_after_last_word_s=1.8)
    paused = replace(v3, name="paused", beats=tuple(short(b, pause_s=(1.0, 4.0)) for b in v3.beats[:2]) + v3.beats[2:])
    changed = [barged, ended, cut, paused]
    obs = observations(changed, quiet_s=PAGE_Q)
    assert any(e.kind == "pause" for e in obs[3].events.events)
    d = _quietly(derive, obs, held_out=False)
    assert d.setting[1] == base.setting[1]
    assert d.outcome is not None and d.outcome.tally.n_failed == 0
    # At the page's own setting, beats names the beats the re-simulation ends wrong, the paused tour's too.
    expected = sorted(truth(changed, floor=FLOOR, quiet_s=PAGE_Q))
    played = {v.name: _cached_record(v, FLOOR, PAGE_Q).played for v in changed}
    assert [p.ended_by for p in played["barged"]].count("barge-in") == 1
    assert [p.ended_by for p in played["ended"]].count("end") == 1
    # (the visitor paused the page's clock in both beats: it declared 4 s later than the quiet time after the word)
    assert all(p.declared_s - p.narration_end_s > 4.0 + PAGE_Q - 0.1 for p in played["paused"][:2])
    assert sorted(_failing_beats(obs, floor=FLOOR, quiet_s=PAGE_Q)) == expected
    assert d.outcome.tally.n_aborted + d.outcome.tally.n_outpaced >= 2 and d.outcome.tally.n_recording_ended >= 1


def test_every_view_gives_each_beat_one_outcome():
    """beats, the derive judge, check and the sweep count the same outcomes at the same setting."""
    voices = list(long_pauses(2))
    obs = observations(voices, quiet_s=PAGE_Q)
    for quiet in (2.5, 2.8, 3.3):
        per_beat = Counter()
        for o in obs:
            for b in _quietly(beats, o.trace, o.events, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0):
                per_beat[b.outcome] += 1
        outcome = _quietly(judge, obs, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
        assert (outcome.tally.n_ok, outcome.tally.n_premature, outcome.tally.n_stalled) == (
            per_beat["ok"], per_beat["premature"], per_beat["stalled"],
        )  # fmt: skip
        point = _quietly(sweep, obs, floors=[FLOOR], quiets_s=[quiet], onset_timeout_s=10.0).points[0]
        assert (point.tally.n_ok, point.tally.n_premature, point.tally.n_stalled) == (
            per_beat["ok"], per_beat["premature"], per_beat["stalled"],
        )  # fmt: skip
        th = Thresholds(floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
        results = _quietly(check_corpus, obs, thresholds=th, margins=Margins())
        premature = sum(int(r.measured or 0) for r in results if r.check == "premature" and not r.passed)
        assert premature == per_beat[PREMATURE]


def test_a_log_without_clock_quiet_lines_infers_the_page_s_declarations_from_the_setting_it_logged():
    """Older logs: the page's ``clock.setting`` without its ``clock.quiet`` lines. The replay at that setting
    says where the page declared, and every beat gets the outcome it gets from the page's own lines."""
    from clock.core.events import EventLog, PageSetting
    from clock.core.replay import page_declarations

    obs = observations(list(long_pauses(1)), quiet_s=PAGE_Q)
    for o in obs:
        bare = EventLog(
            tuple(e for e in o.events.events if e.kind != "clock.quiet"),
            setting=PageSetting(FLOOR, PAGE_Q, float("inf"), "1/60", 2048),
        )
        assert bare.causes_from == "unknown"
        inferred = page_declarations(o.trace, bare)
        assert inferred.causes_from == "inferred"
        for quiet in (PAGE_Q, 3.3):
            own = _quietly(beats, o.trace, o.events, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
            guessed = _quietly(beats, o.trace, inferred, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
            assert [(b.outcome, b.cause) for b in guessed] == [(b.outcome, b.cause) for b in own]


def test_the_provider_s_own_stopped_says_where_a_narration_that_ran_past_the_page_s_prompt_ends():
    """A page that lingers 0.2 s prompts before the guide resumes after a 2.6-3.1 s pause (0.1-0.4 s after the
    prompt, too late for the narration to be told from the next response's audio by its timing). With the
    provider's ``output_audio_buffer.stopped`` for each beat's own response, the beat's narration is its speech up
    to that event: a setting that re-simulates right fails no beat, one too short fails what it fails."""
    voices = list(long_pauses(1))
    obs = [_cached_record(v, FLOOR, PAGE_Q, 0.2, True).observation() for v in voices]
    for quiet in (2.7, 3.3):
        edge = _borderline(voices, quiet)
        expected = sorted(
            x for x in truth(voices, floor=FLOOR, quiet_s=quiet, linger_s=0.2) if x.rsplit(":", 1)[0] not in edge
        )
        found = sorted(x for x in _failing_beats(obs, floor=FLOOR, quiet_s=quiet) if x.rsplit(":", 1)[0] not in edge)
        assert found == expected, quiet


def test_a_log_that_says_nothing_of_its_clock_infers_the_page_s_declarations_from_the_committed_setting():
    """Older logs with neither ``clock.quiet`` lines nor ``clock.setting``: where the log's prompts follow the
    committed setting's replay (each at the declaration plus the linger), the page ran it, and every beat gets the
    outcome it gets from the page's own lines; where they do not, the log keeps its bounds as walls."""
    from clock.core.events import EventLog
    from clock.core.replay import page_declarations

    page = Thresholds(floor=FLOOR, quiet_s=PAGE_Q, onset_timeout_s=60.0)
    for o in observations(list(long_pauses(1)), quiet_s=PAGE_Q):
        bare = EventLog(tuple(e for e in o.events.events if e.kind != "clock.quiet"))
        assert bare.causes_from == "unknown"
        inferred = page_declarations(o.trace, bare, committed=page)
        assert inferred.causes_from == "inferred"
        for quiet in (PAGE_Q, 3.3):
            own = _quietly(beats, o.trace, o.events, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
            guessed = _quietly(beats, o.trace, inferred, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
            assert [(b.outcome, b.cause) for b in guessed] == [(b.outcome, b.cause) for b in own]
        # A committed setting the page did not run: its prompts do not follow that replay.
        other = Thresholds(floor=FLOOR, quiet_s=3.3, onset_timeout_s=60.0)
        assert page_declarations(o.trace, bare, committed=other).causes_from == "unknown"


def test_an_open_loop_log_keeps_its_walls_whatever_the_committed_setting():
    """Tours whose prompts were not made by a page's clock (tests/tours.py: the prompt after a drawn room) do not
    follow the committed setting's replay: their bounds stay walls."""
    from tours import random_tour

    from clock.core.replay import page_declarations

    rng = np.random.default_rng(7)
    for i in range(12):
        tour = random_tour(rng, f"open{i}", level=0.05, room=str(rng.choice(["zero", "comfort"])), log="full")
        o = tour.observation()
        for quiet in (1.0, 2.5):
            th = Thresholds(floor=FLOOR, quiet_s=quiet)
            assert page_declarations(o.trace, o.events, committed=th).causes_from == "unknown"
