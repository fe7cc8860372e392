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

from clock.core.analysis import analyse, narration_pause_s
from clock.core.beats import beats
from clock.core.decide import decide_quiets
from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace
from clock.core.model import Observation
from clock.core.outcome import OUTCOMES
from clock.core.recommend.engine import derive
from clock.core.recommend.replay import judge
from clock.core.ticks import Ticks

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


def test_a_visitor_who_ends_the_tour_after_the_last_word_outpaces_a_slow_clock_which_is_not_a_failure():
    corpus, ends = visitor_ends_corpus()
    for obs, after in zip(corpus, ends):
        first, last = _beats(obs, floor=0.01, quiet_s=3.05, onset_timeout_s=10)
        assert first.outcome == "ok"
        # The guide had finished 2.92-3.02 s before the end, longer than any narration pause (1.017 s): the
        # visitor did not wait for the clock, which tells nothing of whether the clock would have cut the guide off.
        assert last.outcome == "outpaced" and not last.failed and not last.aborted
        assert last.narration_pause_s == pytest.approx(PAUSE / HZ)
        assert last.end_after_word_s == pytest.approx(after / HZ)
        # A quiet time that declares before the end ends it right.
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


def test_a_visitor_s_end_bounds_no_quiet_time_so_derive_keeps_its_margin():
    """The visitor's ends 2.92-3.02 s after the last word are not the setting's doing: derive holds the longest
    silence plus its margin (the formula), and the judge counts those beats outpaced, none failed."""
    corpus, _ = visitor_ends_corpus()
    d = derive(corpus, held_out=False)
    floor, quiet, timeout = d.setting
    assert floor is not None and quiet is not None and timeout is not None
    assert quiet == pytest.approx(3.05) and quiet > LOW + 0.2
    assert "longest gap 2.833 s + margin 0.2 s" in d.gaps.rule
    assert d.outcome is not None and d.outcome.tally.n_failed == 0
    formula = judge(corpus, floor=floor, quiet_s=3.05, onset_timeout_s=timeout)
    assert (
        formula.tally.n_outpaced == 5
        and formula.tally.n_failed == 0
        and formula.tally.n_aborted == 0
        and formula.tally.n_ok == 5
    )
