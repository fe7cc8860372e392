"""The auditor's findings on verdicts, each held to a tour built by hand and judged by its construction.

Every tour here is a few seconds of 16 kHz audio laid out with the pieces of
tests/adversarial.py (its voices, its :class:`~adversarial.Tour` and its
brute-force judge, which knows which run of speech is an acknowledgment and
which a sentence of the narration). The tool's analysis, replay, judge and
recommendation are what is tested, never the reference.
"""

from __future__ import annotations

import re
import warnings
from fractions import Fraction

import numpy as np
import pytest
from adversarial import Simulated, judge_grid, judge_setting, near_p, outcome, run_labels
from construction import RATE, BeatTruth, Layout, Run, Tour, steady, words
from test_decide import assert_floors_match_analyse

from clock.core.analysis import analyse
from clock.core.beats import beats
from clock.core.floors import analyse_floors
from clock.core.levels import levels
from clock.core.model import Margins
from clock.core.outcome import OUTCOMES
from clock.core.recommend.engine import derive
from clock.core.recommend.windows import recording_levels
from clock.core.segments import MIN_GAP_S
from clock.core.ticks import Ticks
from clock.errors import SpeechClockWarning

LEVEL = 0.02
#: Well under every word of LEVEL (words vary -6..+4 dB), well over the exact-zero room.
FLOOR = 0.002


class _Layout(Layout):
    """A tour laid out by hand: its sentences drawn with their own generator."""

    def __init__(self, seed: int = 3) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)

    def narrate(
        self,
        at: float,
        lengths_s: list[float],
        pauses_s: list[float],
        runs: list[Run],
        *,
        gain_db: float = 0.0,
        voice=words,
    ) -> float:
        """Sentences (of ``voice``: words, or steady bursts) with these pauses between them; returns where the last
        one ends."""
        for i, length in enumerate(lengths_s):
            at = self.say(at, voice(self.rng, length, LEVEL * 10 ** (gain_db / 20)), "narration", runs)
            if i < len(pauses_s):
                at += pauses_s[i]
        return at

    def beat(
        self,
        terminal_s: float,
        speech_s: float,
        lengths_s: list[float],
        pauses_s: list[float],
        *,
        gain_db: float = 0.0,
        voice=words,
        prompt_before_s: float | None = 0.4,
    ) -> float:
        """A beat: (a prompt and) a terminal response, a narration from ``speech_s``; returns its last word."""
        if prompt_before_s is not None:
            self.event("prompt", terminal_s - prompt_before_s)
        self.event("terminal_response", terminal_s)
        runs: list[Run] = []
        last = self.narrate(speech_s, lengths_s, pauses_s, runs, gain_db=gain_db, voice=voice)
        self.beats.append(BeatTruth(len(self.beats), terminal_s, 0.0, "prompt", tuple(runs)))
        return last

    def bound(self, kind: str, t: float) -> None:
        """The last beat's bound (its truth)."""
        self.beats[-1].bound, self.beats[-1].bound_s = kind, t

    def tour(self, name: str, duration_s: float, **kw) -> Tour:
        """The tour of the voice at :data:`LEVEL`."""
        return super().tour(name, duration_s, level=LEVEL, **kw)


def _heard(tour: Tour, floor: float, run: int) -> np.ndarray:
    """The ticks above the floor whose analyser window overlaps run ``run`` of the tour (in beat order)."""
    owner, _, _ = run_labels(tour)
    return np.flatnonzero((owner == run) & (tour.trace.level > floor))


# --- finding 3: an acknowledgment with a gap between its words -----------------------------------------------------


def _ack_tour(
    *, word_gap_s: float | None, silence_s: float, end_after_s: float, ack_db: float = 0.0, voice=words
) -> Tour:
    """One beat: an acknowledgment over the terminal response (two words ``word_gap_s`` apart, or one word;
    ``ack_db`` over the narration's level), ``silence_s`` of silence, a narration of three sentences (of ``voice``)
    with pauses of 0.8 and 1.0 s, the page's ``end`` ``end_after_s`` after its last word (the construction's
    longest narration pause is 1.0 s)."""
    lay = _Layout()
    runs: list[Run] = []
    lay.event("prompt", 0.5)
    level = LEVEL * 10 ** (ack_db / 20)
    ack = steady(lay.rng, 0.5, level)
    if word_gap_s is not None:
        ack = np.concatenate([ack, np.zeros(int(round(word_gap_s * RATE))), steady(lay.rng, 0.5, level)])
    ack_end = lay.say(1.0, ack, "ack", runs)
    lay.event("terminal_response", 1.3)
    last = lay.narrate(ack_end + silence_s, [1.2, 1.2, 1.2], [0.8, 1.0], runs, voice=voice)
    end = last + end_after_s
    lay.event("end", end)
    lay.beats.append(BeatTruth(0, 1.3, end, "end", tuple(runs), speaking_at_end=end_after_s < 1.0))
    return lay.tour("ackdip", end + 1.5)


def test_an_acknowledgment_runs_on_across_a_dip_between_its_words():
    # "Sure, | let me look that up": the floor hears the dip between the two words (a quiet under MIN_GAP_S), then
    # the acknowledgment's 2.6 s silence, then the narration. The page ends the beat 1.8 s after the last word,
    # longer than any narration pause (1.0 s): the guide had finished, and a quiet time that bridges the silence is
    # outpaced there.
    tour = _ack_tour(word_gap_s=0.2, silence_s=2.6, end_after_s=1.8)
    t = tour.trace.t_s
    ack, first_sentence = _heard(tour, FLOOR, 0), _heard(tour, FLOOR, 1)
    (i,) = np.flatnonzero(np.diff(ack) > 1)  # the floor hears the gap between the words ...
    assert t[ack[i + 1]] - t[ack[i]] < MIN_GAP_S  # ... as a dip between words
    a = analyse(tour.trace, tour.log, floor=FLOOR).beats[0]
    assert a.ack_end_tick == ack[-1]
    assert a.onset_tick == first_sentence[0]
    for quiet in (2.7, 2.9, 3.2):
        sim = Simulated(tour, FLOOR, np.array([quiet]))
        want = outcome(sim.beats[0], sim, 0, 10.0, sim.longest_pause_s())
        assert want == "outpaced"
        (b,) = beats(tour.trace, tour.log, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
        assert b.outcome == want, (quiet, b.narration_pause_s, sim.longest_pause_s())
        assert b.narration_pause_s == pytest.approx(sim.longest_pause_s(), abs=1e-9)
        assert b.ack_silence_s == pytest.approx(t[first_sentence[0]] - t[ack[-1]], abs=1e-9)


def _quiet_heard(tour: Tour, a: int, b: int) -> float:
    """The quiet the floor hears between run ``a``'s last tick and run ``b``'s first (as the clock measures a gap)."""
    t = tour.trace.t_s
    return float(t[_heard(tour, FLOOR, b)[0]] - t[_heard(tour, FLOOR, a)[-1]])


def _near_threshold(build, measure, lo: float, hi: float) -> Tour:
    """The first tour of a scan of silences (0.15 to 0.45 s of sound) whose measured quiet lies in [lo, hi)."""
    for silence in np.arange(0.15, 0.45, 0.005):
        tour = build(float(silence))
        if lo <= measure(tour) < hi:
            return tour
    raise AssertionError("no silence of the scan gives that quiet")  # pragma: no cover


@pytest.mark.parametrize("inside", [True, False], ids=["under, between two words", "over, before the narration"])
def test_the_acknowledgment_ends_at_the_first_quiet_of_at_least_the_word_gap(inside):
    # The construction knows which run is the acknowledgment. Just under MIN_GAP_S between its two words, it runs
    # on; just over it, right after a one-word acknowledgment, the narration begins: the tool's acknowledgment ends
    # at its last word and the narration's onset is its first sentence, whichever side of the threshold.
    if inside:
        tour = _near_threshold(
            lambda g: _ack_tour(word_gap_s=g, silence_s=2.6, end_after_s=1.8),
            lambda tour: float(np.diff(tour.trace.t_s[_heard(tour, FLOOR, 0)]).max()),
            MIN_GAP_S - 0.03,
            MIN_GAP_S,
        )
    else:
        tour = _near_threshold(
            lambda g: _ack_tour(word_gap_s=None, silence_s=g, end_after_s=1.8),
            lambda tour: _quiet_heard(tour, 0, 1),
            MIN_GAP_S + 1e-6,
            MIN_GAP_S + 0.03,
        )
    ack, first_sentence = _heard(tour, FLOOR, 0), _heard(tour, FLOOR, 1)
    a = analyse(tour.trace, tour.log, floor=FLOOR).beats[0]
    assert (a.ack_end_tick, a.onset_tick) == (ack[-1], first_sentence[0])
    for quiet in (0.5, 1.5, 3.0):
        sim = Simulated(tour, FLOOR, np.array([quiet]))
        want = outcome(sim.beats[0], sim, 0, 10.0, sim.longest_pause_s())
        (b,) = beats(tour.trace, tour.log, floor=FLOOR, quiet_s=quiet, onset_timeout_s=10.0)
        assert b.outcome == want, quiet


# --- findings 1 and 2: no setting ends every beat right -------------------------------------------------------------


def _opening(seed: int, pause_s: float = 0.9) -> tuple[_Layout, float]:
    """A tour's ordinary first beat, bounded by a prompt 3.6 s after its last word; returns the layout and when the
    next terminal response comes (0.4 s after that prompt)."""
    lay = _Layout(seed)
    last = lay.beat(0.8, 1.3, [1.2, 1.0], [pause_s])
    lay.event("prompt", last + 3.6)
    lay.bound("prompt", last + 3.6)
    return lay, last + 4.0


def _plain_tour(name: str, seed: int) -> Tour:
    """Two ordinary beats, each bounded by a prompt 3.6 s after its last word."""
    lay, t2 = _opening(seed, 1.1)
    last = lay.beat(t2, t2 + 0.5, [1.0, 1.2], [0.6])
    lay.bound("recording end", last + 5.0)
    return lay.tour(name, last + 5.0)


def _cut_quiet_tour() -> Tour:
    """Beat 2 a steady voice 22 dB quieter, cut by the next terminal response (no prompt) 0.8 s after its last
    word: no setting ends it right (a quiet time that bridges its pauses stalls, a floor over it hears none of
    it; steady, a floor hears all of its sentences or none)."""
    lay, t2 = _opening(5)
    last = lay.beat(t2, t2 + 0.6, [1.0, 1.0, 1.0], [0.7, 1.0], gain_db=-22.0, voice=steady)
    t3 = last + 0.8
    lay.bound("terminal", t3)
    last = lay.beat(t3, t3 + 0.5, [1.0, 1.0], [0.8], prompt_before_s=None)
    lay.event("prompt", last + 3.6)
    lay.bound("recording end", last + 5.0)
    return lay.tour("cut", last + 5.0)


#: The construction's grid: floors 1 dB apart from -80 to -30 dBFS, quiet times 20 ms apart, onset timeouts.
GRID_FLOORS = tuple(float(10 ** (db / 20)) for db in range(-80, -29))
GRID_QUIETS = np.round(np.arange(0.3, 4.0, 0.02), 2)
GRID_TIMEOUTS = (2.5, 5.0, 10.0)


def _fewest_by_construction(tours: list[Tour]) -> int:
    """The fewest beats any setting of the grid fails, by construction."""
    return min(
        min(len(x) for row in judge_grid(tours, floor, GRID_QUIETS, list(GRID_TIMEOUTS)) for x in row)
        for floor in GRID_FLOORS
    )


def _derived(tours: list[Tour]):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpeechClockWarning)
        return derive([t.observation() for t in tours], held_out=False)


def test_with_no_right_setting_a_floor_above_a_spoken_beat_fails_it():
    # The quiet beat fails at every setting (stalled, premature, or unheard: a floor over its voice hears none of
    # it). derive recommends the fewest failures and names each: the count it states is the construction's.
    tours = [_cut_quiet_tour(), _plain_tour("plain", 6)]
    d = _derived(tours)
    floor, quiet, timeout = d.setting
    failing = judge_setting(tours, floor, quiet, timeout)
    assert failing, "no setting ends every beat right"
    assert d.outcome is not None and d.outcome.tally.n_failed == len(failing) == _fewest_by_construction(tours), (
        d.setting,
        failing,
        d.outcome,
    )
    assert [(u.recording, u.beat + 1) for u in d.outcome.unsatisfied] == [("cut.wav", 2)]
    # The recording's room is exact zeros: no line calls its quiet voice noise, or says the floor ends its beats
    # right.
    said = [w for w in d.warnings if w.startswith("cut.wav")]
    assert not any("its noise (p" in w for w in said), said
    assert not any("ends its beats right in the replay" in w for w in said), said


def _cut_tour() -> Tour:
    """Beat 2 cut by the next terminal response (no prompt) 0.8 s after its last word: no setting ends it right."""
    lay, t2 = _opening(7)
    last = lay.beat(t2, t2 + 0.6, [1.0, 1.0], [1.0])
    t3 = last + 0.8
    lay.bound("terminal", t3)
    last = lay.beat(t3, t3 + 0.5, [1.0, 1.0], [0.8], prompt_before_s=None)
    lay.bound("recording end", last + 5.0)
    return lay.tour("cut", last + 5.0)


def _slow_quiet_tour() -> Tour:
    """Beat 2 a voice 17 dB quieter that starts 6.5 s after its terminal response."""
    lay, t2 = _opening(8)
    last = lay.beat(t2, t2 + 6.5, [1.0, 1.0], [0.6], gain_db=-17.0)
    lay.event("prompt", last + 3.6)
    lay.bound("prompt", last + 3.6)
    last = lay.beat(last + 4.0, last + 4.5, [1.0, 1.2], [0.7])
    lay.bound("recording end", last + 5.0)
    return lay.tour("slow", last + 5.0)


def test_with_no_right_setting_the_fewest_failures_are_counted_over_every_recording():
    # The cut beat fails at every setting. The quieter, slower voice puts its recording's noise (as the level split
    # tells it) within 3 dB of its speech: no window of floors. derive recommends the fewest failures over both
    # recordings, its onset timeout from both recordings' latencies: only the cut beat fails.
    tours = [_cut_tour(), _slow_quiet_tour()]
    d = _derived(tours)
    assert d.floor.no_window == ("slow.wav",)
    floor, quiet, timeout = d.setting
    failing = judge_setting(tours, floor, quiet, timeout)
    assert d.outcome is not None and d.outcome.tally.n_failed == len(failing) == _fewest_by_construction(tours) == 1, (
        d.setting,
        failing,
    )
    # What derive says of the recording without a window is what the replay shows.
    (note,) = [w for w in d.warnings if w.startswith("slow.wav")]
    assert "no replayed floor does for it and the others together" not in note
    assert "still ends its beats right in the replay" in note
    assert "its noise (p" not in note and "quieter speech in beat 2 " in note, note


# --- finding 5: the floor margin is held to the failing floors between the grid's ----------------------------------


def _burst_tour(burst_db: float) -> Tour:
    """Two beats; 1.0 s after the first one's last word, a steady 0.3 s hum (not the guide) ``burst_db`` under the
    voice's 5th percentile level (its speech edge). A floor under the hum hears it: the clock, counting quiet
    again from it, has not declared the beat over at the next prompt 2.5 s after the last word (stalled)."""
    lay = _Layout(11)
    last = lay.beat(0.8, 1.3, [1.2, 1.0], [0.9])
    lay.bound("prompt", last + 2.5)
    hum_at = last + 1.0
    last = lay.beat(last + 2.9, last + 3.4, [1.0, 1.2, 0.8], [0.6, 1.2])
    lay.bound("recording end", last + 4.0)
    tour = lay.tour("hum", last + 4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpeechClockWarning)
        edge = recording_levels(tour.observation())[0].speech_low
    assert edge is not None
    n = int(0.3 * RATE)
    i = int(hum_at * RATE)
    tour.samples[i : i + n] += (
        edge * 10 ** (-burst_db / 20) * np.sqrt(2) * np.sin(2 * np.pi * 300 * np.arange(n) / RATE)
    )
    tour.__dict__.pop("trace", None)
    return tour


@pytest.mark.parametrize("burst_db", [6.5, 7.0, 8.0])
def test_no_floor_within_the_floor_margin_fails_unless_derive_says_so(burst_db):
    # The hum is the recording's noise (p99): the engine's floor is the middle of a window narrower than 6 dB, and
    # the floors that fail (those under the hum) begin between two floors of the 1 dB grid. By construction, no
    # floor within floor_margin_db of the recommendation fails at its quiet time, or derive says the margin is not
    # held.
    (tour,) = tours = [_burst_tour(burst_db)]
    d = _derived(tours)
    floor, quiet, timeout = d.setting
    margin = Margins().floor_margin_db
    failing = [
        round(db, 1)
        for db in np.arange(-margin, margin + 0.01, 0.1)
        if judge_setting(tours, floor * 10 ** (db / 20), quiet, timeout)
    ]
    # The hum fails floors not far under it.
    assert any(judge_setting(tours, floor * 10 ** (db / 20), quiet, timeout) for db in np.arange(-margin - 3, -margin))
    said = any("floor margin could not be kept" in w for w in d.warnings) or "cannot be held" in d.floor.rule
    assert not failing or said, (d.setting, failing, d.floor.rule)
    # A floor the rules say fails a beat does, at that quiet time.
    for said_floor in re.findall(r"([0-9.e-]+) fails a beat", d.floor.rule):
        assert judge_setting(tours, float(said_floor), quiet, timeout), (said_floor, d.floor.rule)


# --- the levels at the recording's end --------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [16000, 44100, 48000])
def test_the_ticks_at_the_end_are_those_the_docs_name(rate):
    # docs/formats.md (levels): a tick is there when its frame lies within the recording, or its nominal time
    # k * tick_s lies before the end though its frame does not; one exactly at the duration only by its frame.
    n = 2 * rate  # 2.0 s: tick 120's nominal time is the duration
    trace = levels(np.full(n, 0.25, np.float32), rate)
    k = np.arange(200)
    frames = Ticks().frames(k, rate)
    want = [int(i) for i, f in zip(k, frames) if f <= n or Fraction(int(i), 60) < 2]
    assert trace.n_ticks == len(want) and want == list(range(len(want)))
    assert (120 in want) == (rate != 44100)


def _next_ack_tour() -> Tour:
    """A log without prompts: the next beat's acknowledgment ("Sure, | let me", a 0.2 s gap between its words) begins
    2.0 s after this beat's last word, and its terminal response comes during its second word."""
    lay = _Layout(13)
    last = lay.beat(0.8, 1.3, [1.2, 1.0], [0.8], prompt_before_s=None)
    runs: list[Run] = []
    ack = np.concatenate([steady(lay.rng, 0.4, LEVEL), np.zeros(int(0.2 * RATE)), steady(lay.rng, 0.6, LEVEL)])
    ack_end = lay.say(last + 2.0, ack, "ack", runs)
    t2 = last + 2.0 + 0.8
    lay.event("terminal_response", t2)
    lay.bound("terminal", t2)
    end = lay.narrate(ack_end + 0.6, [1.0], [], runs)
    lay.beats.append(BeatTruth(1, t2, end + 3.0, "recording end", tuple(runs)))
    return lay.tour("noprompt", end + 3.0)


def test_the_next_beats_acknowledgment_begins_at_its_first_word_across_a_dip():
    # The next beat's acknowledgment's first word is the next beat's, not this one's: a quiet time of 1.5 s ends
    # this beat right, by construction and by the tool.
    tour = _next_ack_tour()
    t = tour.trace.t_s
    a = analyse(tour.trace, tour.log, floor=FLOOR)
    assert (a.beats[0].bound, a.beats[0].bound_s) == ("acknowledgment", t[_heard(tour, FLOOR, 2)[0]])
    assert a.beats[0].last_word_tick == _heard(tour, FLOOR, 1)[-1]
    sim = Simulated(tour, FLOOR, np.array([1.5]))
    found = beats(tour.trace, tour.log, floor=FLOOR, quiet_s=1.5, onset_timeout_s=10.0)
    assert [b.outcome for b in found] == [outcome(p, sim, 0, 10.0, sim.longest_pause_s()) for p in sim.beats]
    assert found[0].outcome == "ok"


def test_every_floor_at_once_judges_acknowledgments_with_word_gaps_as_the_construction():
    # The sweep analyses every floor at once (analyse_floors) and judges every setting at once: on tours whose
    # acknowledgments have a gap between their words, over the terminal response and as the next beat's bound, it
    # finds field by field what the analysis at each floor finds, and at every floor at which the gap is a dip
    # between words, the construction's outcome at every quiet time.
    tours = [
        _ack_tour(word_gap_s=0.2, silence_s=2.6, end_after_s=1.8),
        _ack_tour(word_gap_s=0.2, silence_s=1.2, end_after_s=0.6, voice=steady),
        _next_ack_tour(),
    ]
    floors = tuple(FLOOR * 10 ** (db / 20) for db in range(19))  # the gap between the words widens from 0.12 s
    quiets = np.array([0.5, 0.9, 1.3, 1.7, 2.1, 2.7, 3.2])
    judged = 0
    for tour in tours:
        assert assert_floors_match_analyse(tour.trace, tour.log, floors) > 0
        table = analyse_floors(tour.trace, tour.log, floors=floors)
        tool = table.outcomes(quiets_s=quiets, onset_timeout_s=10.0, narration_pause_s=table.narration_pause_s)
        t = tour.trace.t_s
        for j, floor in enumerate(floors):
            owner, _, kinds = run_labels(tour)
            acks = [r for r, kind in enumerate(kinds) if kind == "ack"]
            # The construction reads its acknowledgments one way only where the floor hears their gap as a dip.
            if any(np.diff(t[_heard(tour, floor, r)]).max(initial=0.0) >= MIN_GAP_S for r in acks):
                continue
            sim = Simulated(tour, floor, quiets)
            p = sim.longest_pause_s()
            for b in sim.beats:
                if b.deaf:
                    continue
                i = table.beat.tolist().index(b.truth.index)
                for qi in range(quiets.size):
                    want = outcome(b, sim, qi, 10.0, p)
                    if want in ("aborted", "outpaced") and near_p(b, sim, p):
                        continue  # (the construction leaves it undecided)
                    assert OUTCOMES[tool[j, i, qi]] == want, (tour.name, floor, b.truth.index, quiets[qi])
                    judged += 1
    assert judged > 250


def test_derive_counts_an_acknowledgments_silence_as_its_own_and_waits_past_the_visitor_s_end():
    # A quiet time that bridges the 2.6 s acknowledgment silence waits past the visitor's end 1.8 s after the last
    # word: outpaced, which is the visitor's doing, not a failure; one that does not bridge it is premature, and a
    # floor over the (steady) narration hears none of it. derive finds a setting the construction passes, and its
    # evidence holds the acknowledgment's silence, measured at its floor, not the dip between words.
    tours = [_ack_tour(word_gap_s=0.2, silence_s=2.6, end_after_s=1.8, ack_db=6.0, voice=steady)]
    d = _derived(tours)
    floor, quiet, timeout = d.setting
    failing = judge_setting(tours, floor, quiet, timeout)
    assert d.outcome is not None and d.outcome.tally.n_failed == len(failing) == _fewest_by_construction(tours) == 0
    assert d.outcome.tally.n_outpaced == 1
    t = tours[0].trace.t_s
    assert d.gaps.n_ack == 1
    assert d.gaps.ack_max_s == pytest.approx(t[_heard(tours[0], floor, 1)[0]] - t[_heard(tours[0], floor, 0)[-1]])
