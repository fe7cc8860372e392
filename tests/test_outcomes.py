"""Outcomes as a listener gives them, and a recommendation from what replays right, on constructed tours.

Levels are built tick by tick (60 ticks a second, every time on a tick), so the construction says exactly
what a clock with each quiet time does: the acknowledgment's silence, the narration's pauses and the time
from the last word to the page's ``end`` are counts of ticks.
"""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from clock.core.beats import OUTCOMES, analyse, beats, decide_quiets, narration_pause_s
from clock.core.check import check_corpus
from clock.core.derive import Margins, Observation, derive, judge
from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace, Ticks
from clock.core.sweep import sweep
from clock.core.thresholds import Thresholds

HZ = 60
ACK_SILENCE = 170  # ticks from the acknowledgment's last word to the narration's onset: 2.833 s
PAUSE = 61  # the longest narration pause, last word to next word: 1.017 s
RUNS = (90, PAUSE, 120, 31, 60)  # speech, pause, speech, pause, speech (ticks)


def _trace(level: np.ndarray) -> LevelTrace:
    return LevelTrace(np.arange(level.size) * 800, level, 48000, Ticks(Fraction(1, HZ)))


class _Tour:
    """Levels and events built beat by beat; ``t(k)`` is tick k's time."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.level: list[float] = []
        self.events: list[Event] = []

    @staticmethod
    def t(k: int) -> float:
        return k / HZ

    def speak(self, n: int) -> None:
        self.level.extend(self.rng.uniform(0.03, 0.08, n))

    def quiet(self, n: int) -> None:
        self.level.extend([0.0] * n)

    def event(self, kind: str, k: int) -> None:
        self.events.append(Event(kind, kind, self.t(k), len(self.events) + 1, 1.0 if kind == "terminal" else None))

    def beat(self, *, ack: bool, runs=RUNS) -> int:
        """A terminal response (with an acknowledgment over it), the narration; returns the last word's tick."""
        self.quiet(30)
        if ack:
            self.speak(18)
            self.event("terminal", len(self.level))
            self.speak(30)
            self.quiet(ACK_SILENCE - 1)  # the last acknowledgment tick to the onset: ACK_SILENCE ticks
        else:
            self.event("terminal", len(self.level))
            self.quiet(40)
        for i, n in enumerate(runs):
            (self.speak if i % 2 == 0 else self.quiet)(n - (1 if i % 2 else 0))
        return len(self.level) - 1

    def observation(self, name: str) -> Observation:
        trace = _trace(np.array(self.level))
        return Observation(name, trace, EventLog(tuple(sorted(self.events, key=lambda e: (e.t_s, e.line)))))


def visitor_ends_corpus(seed: int = 3) -> tuple[list[Observation], list[int]]:
    """Five tours: a beat the next prompt bounds, then one the visitor ends 2.92-3.02 s after the last word."""
    rng = np.random.default_rng(seed)
    out, ends = [], []
    for n, after in enumerate((175, 177, 178, 180, 181)):
        tour = _Tour(rng)
        last = tour.beat(ack=True)
        tour.quiet(300)  # 5 s of room, then the next prompt
        tour.event("prompt", len(tour.level))
        last = tour.beat(ack=n % 2 == 0)
        tour.quiet(after - 1)
        tour.event("end", last + after)
        tour.quiet(120)
        out.append(tour.observation(f"tour-{n}.wav"))
        ends.append(after)
    return out, ends


# By construction: the acknowledgment's last word is 170 ticks before the narration's onset, so the clock counts
# up to 169 ticks of quiet there (the 170th tick is speech): a quiet time q <= 169/60 declares the beat over before
# the narration (premature). The earliest end comes 175 ticks after a last word, and an event applies before its
# tick, so the clock declares before it only if q <= 174/60. Every beat ends right exactly for 169/60 < q <= 174/60.
LOW, HIGH = (ACK_SILENCE - 1) / HZ, 174 / HZ


def _beats(obs: Observation, **kw) -> list:
    assert obs.events is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return beats(obs.trace, obs.events, **kw)


def test_a_visitor_who_ends_the_tour_after_the_last_word_outpaces_a_slow_clock():
    corpus, ends = visitor_ends_corpus()
    for obs, after in zip(corpus, ends):
        first, last = _beats(obs, floor=0.01, quiet_s=3.05, onset_timeout_s=10)
        assert first.outcome == "ok"
        # The guide had finished 2.92-3.02 s before the end, longer than any narration pause (1.017 s):
        # the clock, waiting 3.05 s, was slower than the visitor.
        assert last.outcome == "outpaced" and last.failed and not last.aborted
        assert last.narration_pause_s == pytest.approx(PAUSE / HZ)
        assert last.end_after_word_s == pytest.approx(after / HZ)
        # A quiet time inside the valid range declares before the end.
        assert _beats(obs, floor=0.01, quiet_s=2.85, onset_timeout_s=10)[1].outcome == "ok"


def test_an_end_while_the_guide_speaks_or_pauses_is_aborted_not_a_failure():
    rng = np.random.default_rng(5)
    # The end falls on speech.
    speaking = _Tour(rng)
    last = speaking.beat(ack=False)
    speaking.event("end", last - 10)
    speaking.quiet(200)
    # The end falls 0.5 s after a word: inside a pause the narration makes (1.017 s).
    pausing = _Tour(rng)
    last = pausing.beat(ack=False)
    pausing.quiet(300)
    pausing.event("end", last + 30)
    for tour, speech_at_end in ((speaking, True), (pausing, False)):
        (b,) = _beats(tour.observation("x.wav"), floor=0.01, quiet_s=2.5, onset_timeout_s=10)
        assert b.outcome == "aborted" and not b.failed and b.speech_at_end is speech_at_end


def test_p_is_the_corpus_s_when_recordings_are_judged_together():
    rng = np.random.default_rng(8)
    tour = _Tour(rng)
    last = tour.beat(ack=False, runs=(120,))  # one run: no narration pause of its own
    tour.quiet(300)
    tour.event("end", last + 30)  # 0.5 s after the last word
    obs = tour.observation("single.wav")
    (alone,) = _beats(obs, floor=0.01, quiet_s=2.5, onset_timeout_s=10)
    assert alone.outcome == "outpaced"  # its own narrations never pause: the guide had finished
    (together,) = _beats(obs, floor=0.01, quiet_s=2.5, onset_timeout_s=10, narration_pause_s=PAUSE / HZ)
    assert together.outcome == "aborted"  # another recording's narration pauses 1.017 s
    a = analyse(obs.trace, obs.events, floor=0.01)
    found = decide_quiets(a, quiets_s=[2.5], onset_timeout_s=10, narration_pause_s=PAUSE / HZ)
    assert OUTCOMES[int(found.outcome[0, 0])] == "aborted"
    corpus, _ = visitor_ends_corpus()
    both = [analyse(o.trace, o.events, floor=0.01) for o in [*corpus, obs]]  # type: ignore[arg-type]
    assert narration_pause_s(both) == pytest.approx(PAUSE / HZ)


def test_derive_recommends_the_centre_of_a_narrow_valid_range_and_says_both_edges():
    corpus, _ = visitor_ends_corpus()
    d = derive(corpus, held_out=False)
    floor, quiet, timeout = d.setting
    assert floor is not None and quiet is not None and timeout is not None
    # Inside the construction's valid range, at its centre (to the 0.05 s it is rounded to).
    assert LOW < quiet <= HIGH
    assert abs(quiet - (LOW + HIGH) / 2) <= 0.025 + 1e-9
    assert "a 0.2 s margin cannot be held on both sides" in d.gaps.rule
    assert f"{LOW:.3f} s" in d.gaps.rule and f"{HIGH:.3f} s" in d.gaps.rule
    assert "longest gap 2.833 s + margin 0.2 s, gives 3.05 s, which fails 5 beats" in d.gaps.rule
    assert d.outcome is not None and d.outcome.n_failed == 0 and d.outcome.n_ok == 10
    # The margin is not kept, and the warning says which check sees it: the longest silence is an
    # acknowledgment's, which check's gap check (narration gaps only) does not hold to quiet - margin.
    (kept,) = [w for w in d.warnings if w.startswith("the margin is not kept")]
    assert kept.endswith("so check's gap check (narration gaps) still passes")
    # The formula's quiet time, replayed by the one judge: the five ended beats are outpaced.
    formula = judge(corpus, floor=floor, quiet_s=3.05, onset_timeout_s=timeout)
    assert formula.n_outpaced == 5 and formula.n_failed == 5 and formula.n_aborted == 0
    assert all(u.outcome == "outpaced" and "before the quiet time of 3.05 s" in u.reason for u in formula.unsatisfied)
    # check passes the recommended setting.
    results = check_corpus(corpus, thresholds=Thresholds(floor, quiet, timeout), margins=Margins())
    failing = [r.line() for r in results if not r.passed]
    assert failing == [], failing
    assert not any("cannot work" in r.detail for r in results)
    # sweep's recommendation is derive's, and its grid counts the outpaced beats as failures.
    result = sweep(corpus, floors=[floor], quiets_s=[quiet, 3.05])
    assert result.recommended == d.setting
    at, slow = result.points
    assert at.n_failed == 0 and slow.n_outpaced == 5 and slow.n_failed == 5


def test_derive_keeps_the_margin_where_the_valid_range_is_wide():
    # Without the acknowledgment's long silence, the longest silence to bridge is the narration pause: the
    # formula's quiet time (longest gap + 0.2 s, rounded up to 0.05 s) stands the margin from both edges.
    rng = np.random.default_rng(11)
    corpus = []
    for n in range(3):
        tour = _Tour(rng)
        last = tour.beat(ack=False)
        tour.quiet(299)
        tour.event("end", last + 300)  # 5 s after the last word
        tour.quiet(60)
        corpus.append(tour.observation(f"wide-{n}.wav"))
    d = derive(corpus, held_out=False)
    quiet = d.gaps.quiet_s
    assert quiet == pytest.approx(1.25)  # 1.017 s + 0.2 s, rounded up to 0.05 s
    assert PAUSE / HZ + 0.2 <= quiet <= 299 / HZ - 0.2
    assert "cannot be held" not in d.gaps.rule


def test_where_no_setting_ends_every_beat_right_derive_names_the_fewest_failures():
    # A narration pause of 3 s, and the next prompt 2 s after the narration's last word: a quiet time that
    # bridges the pause (more than 3 s) stalls the beat, one that does not ends it early. No setting works.
    rng = np.random.default_rng(13)
    corpus = []
    for n in range(2):
        tour = _Tour(rng)
        tour.beat(ack=False, runs=(60, 181, 60))
        tour.quiet(120)
        tour.event("prompt", len(tour.level))
        tour.beat(ack=False)
        tour.quiet(300)
        corpus.append(tour.observation(f"stuck-{n}.wav"))
    d = derive(corpus, held_out=False)
    assert d.outcome is not None and d.outcome.n_failed == 2  # one beat of each tour, whatever the setting
    assert d.floor.rule.startswith("fewest failing beats")
    assert sorted((u.recording, u.beat) for u in d.outcome.unsatisfied) == [("stuck-0.wav", 0), ("stuck-1.wav", 0)]
    assert all(u.outcome in ("premature", "stalled") and u.reason for u in d.outcome.unsatisfied)


def _noisy_tour(rng: np.random.Generator, name: str, *, speech: tuple[float, float], noise: tuple[float, float]):
    tour = _Tour(rng)
    tour.speak = lambda n: tour.level.extend(rng.uniform(*speech, n))  # type: ignore[method-assign]
    if noise[1] > 0:
        tour.quiet = lambda n: tour.level.extend(rng.uniform(*noise, n))  # type: ignore[method-assign]
    for _ in range(2):
        tour.beat(ack=False)
        tour.quiet(300)
        tour.event("prompt", len(tour.level))
    return tour.observation(name)


@pytest.mark.parametrize(
    ("quiet_voice", "verdict"),
    [((0.004, 0.006), "check will fail its speech level"), ((0.012, 0.06), "check passes its speech level")],
)
def test_what_derive_says_check_will_do_is_what_check_does(quiet_voice, verdict):
    # Loud voices over a noise bed, and one voice with exact-zero silence whose window of floors does not meet
    # theirs: the floor they get is above its speech edge. Entirely under it (0.004-0.006), its beats go silent
    # and check fails its speech level on a named beat; reaching over it (0.012-0.06), the replay ends its beats
    # right and check passes with a note. Derive says which beforehand.
    rng = np.random.default_rng(17)
    corpus = [_noisy_tour(rng, f"loud-{n}.wav", speech=(0.03, 0.08), noise=(0.009, 0.011)) for n in range(3)]
    corpus.append(_noisy_tour(rng, "quiet.wav", speech=quiet_voice, noise=(0.0, 0.0)))
    d = derive(corpus, held_out=False)
    floor, quiet, timeout = d.setting
    assert floor is not None and quiet is not None and timeout is not None
    (note,) = [w for w in d.warnings if w.startswith("quiet.wav: its window")]
    assert verdict in note, note
    results = check_corpus(corpus, thresholds=Thresholds(floor, quiet, timeout), margins=Margins())
    (level,) = [r for r in results if r.recording == "quiet.wav" and r.check == "speech-level"]
    if "fail" in verdict:
        assert not level.passed and level.detail.startswith("beat 1 silent: ")
    else:
        assert level.passed and level.detail.startswith("note: ")


def test_every_beat_the_page_ended_gets_a_line_that_says_what_happened():
    from clock.report.text import ended_by_page_lines, outcome_sentence

    corpus, ends = visitor_ends_corpus()
    found = _beats(corpus[0], floor=0.01, quiet_s=3.05, onset_timeout_s=10)
    (line,) = ended_by_page_lines(found, 3.05)
    assert line == (
        f"beat 2 outpaced: the page ended it (end) {ends[0] / HZ:.2f} s after the last word, before the quiet time "
        f"of 3.05 s; the guide had finished (longer than any narration pause, {PAUSE / HZ:.2f} s)"
    )
    sentence = outcome_sentence(judge(corpus, floor=0.01, quiet_s=3.05, onset_timeout_s=10))
    assert "5 ended right; 0 premature ends, 0 stalls, 5 outpaced ends, 0 missed onsets" in sentence


def test_cannot_work_is_said_only_where_no_replayed_floor_ends_the_beats_right():
    from clock.core.evidence import floor_that_works

    rng = np.random.default_rng(19)
    # A 3 s narration pause and the next prompt 2 s after the last word: at every floor, a quiet time that bridges
    # the pause stalls the beat. A tour whose pauses are 1 s with 5 s of room works at some floor.
    stuck = _Tour(rng)
    stuck.beat(ack=False, runs=(60, 181, 60))
    stuck.quiet(120)
    stuck.event("prompt", len(stuck.level))
    stuck.quiet(60)
    assert floor_that_works(stuck.observation("stuck.wav")) is None
    fine = _Tour(rng)
    fine.beat(ack=False)
    fine.quiet(300)
    fine.event("prompt", len(fine.level))
    fine.quiet(60)
    found = floor_that_works(fine.observation("fine.wav"))
    assert found is not None
    floor, need, room, _ = found
    # The clock counts up to 60 ticks of the 61-tick pause, and 300 ticks before the prompt on the 301st.
    assert need == pytest.approx((PAUSE - 1) / HZ) and room == pytest.approx(300 / HZ)
