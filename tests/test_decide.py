"""``decide`` answers every setting from one analysis per floor: it must agree with the tick-by-tick replay."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clock.core.beats import FAILURES, OK, analyse, beats, decide
from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace, Ticks

FLOORS = (0.001, 0.003, 0.0045, 0.01)
QUIETS = (0.2, 0.5, 1.0, 1.5, 2.5, 2.55, 4.0)
TIMEOUTS = (0.3, 1.0, 10.0, float("inf"))
# 600 ticks at 1/60 s and 48 kHz: tick k reads at the first render quantum boundary at or after
# k * 800 frames, and its time is that frame over the rate.
FRAMES_600 = -(-np.arange(600) * 800 // 128) * 128
T_600 = FRAMES_600 / 48000


def random_session(rng: np.random.Generator, *, period: Fraction = Fraction(1, 60)) -> tuple[LevelTrace, EventLog]:
    """Levels that alternate speech, noise near the floors and exact silence, and a log that does everything."""
    n = int(rng.integers(50, 1500))
    level = np.zeros(n)
    k = 0
    while k < n:
        length = int(rng.integers(1, 200))
        kind = rng.integers(4)
        if kind == 0:
            level[k : k + length] = rng.uniform(0.005, 0.2, size=min(length, n - k))
        elif kind == 1:
            level[k : k + length] = rng.choice([0.001, 0.003, 0.0045, 0.002, 0.0035], size=min(length, n - k))
        k += length
    ticks = Ticks(period)
    trace = LevelTrace(ticks.frames(np.arange(n), 48000), level, 48000, ticks)
    duration = float(n * period)
    kinds = ["terminal", "prompt", "tool_call", "pause", "resume", "end", "clock.quiet"]
    weights = np.array([5, 3, 1, 1, 1, 1, 1], float)
    times = np.sort(rng.uniform(-0.5, duration + 0.5, size=int(rng.integers(0, 14))))
    events = []
    for i, t in enumerate(times):
        kind = str(rng.choice(kinds, p=weights / weights.sum()))
        # Some events land exactly on a tick.
        if rng.random() < 0.3:  # exactly at a tick's time (its frame over the rate)
            t = float(trace.t_s[int(np.clip(round(t / float(period)), 0, n - 1))])
        t = float(t)
        events.append(Event(kind, kind, t, i + 1, 1.0 if kind == "terminal" else None))
    events.sort(key=lambda e: (e.t_s, e.line))
    return trace, EventLog(tuple(events))


def assert_decide_matches_replay(trace: LevelTrace, log: EventLog) -> int:
    checked = 0
    for floor in FLOORS:
        analysis = analyse(trace, log, floor=floor)
        for quiet in QUIETS:
            for timeout in TIMEOUTS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    found = beats(trace, log, floor=floor, quiet_s=quiet, onset_timeout_s=timeout)
                fast = decide(analysis, quiet_s=quiet, onset_timeout_s=timeout)
                assert len(found) == len(fast)
                for b, d, a in zip(found, fast, analysis.beats):
                    where = f"floor {floor} quiet {quiet} timeout {timeout} beat {b.index}"
                    assert d.outcome == b.outcome, where
                    if b.quiet_declared_s is not None and d.outcome in ("ok", "premature", "stalled"):
                        assert d.declared_tick is not None, where
                        assert float(analysis.t_s[d.declared_tick]) == b.quiet_declared_s, where
                        assert float(analysis.t_s[d.last_word_tick]) == b.replay.last_word_s, where
                    assert a.allows(quiet, timeout, narration_pause_s=analysis.narration_pause_s) == (
                        d.outcome not in FAILURES
                    ), where
                    checked += 1
    return checked


def test_decide_matches_the_replay_on_every_setting_of_a_grid():
    rng = np.random.default_rng(20261201)
    checked = 0
    outcomes = set()
    for _ in range(60):
        trace, log = random_session(rng)
        checked += assert_decide_matches_replay(trace, log)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outcomes |= {b.outcome for b in beats(trace, log, floor=0.003, quiet_s=1.0, onset_timeout_s=1.0)}
    # The fuzzer reaches every outcome, so the agreement means something.
    assert outcomes >= {OK, *FAILURES, "silent"}
    assert checked > 5000


def test_decide_matches_the_replay_at_a_throttled_cadence():
    rng = np.random.default_rng(7)
    for _ in range(10):
        trace, log = random_session(rng, period=Fraction(1, 20))
        assert_decide_matches_replay(trace, log)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_decide_matches_the_replay_property(seed):
    trace, log = random_session(np.random.default_rng(seed))
    assert_decide_matches_replay(trace, log)


def test_stall_when_the_next_prompt_comes_before_the_quiet_time():
    level = np.zeros(600)
    level[60:180] = 0.05  # speech 1.0 .. 3.0 s
    trace = LevelTrace(FRAMES_600, level, 48000)
    log = EventLog((Event("terminal", "terminal", 0.5), Event("prompt", "prompt", 5.0)))
    a = analyse(trace, log, floor=0.003)
    (b,) = a.beats
    # The last word is tick 179 (2.987 s); quiet is counted until tick 299, the last before the prompt at 5.0 s.
    assert b.room_s == pytest.approx(float(T_600[299] - T_600[179]))
    assert decide(a, quiet_s=1.9, onset_timeout_s=10)[0].outcome == OK
    assert decide(a, quiet_s=2.1, onset_timeout_s=10)[0].outcome == "stalled"


def test_a_pause_freezes_the_count_in_decide_as_in_the_replay():
    level = np.zeros(600)
    level[30:60] = 0.05  # speech 0.5 .. 1.0 s; last word at tick 59
    trace = LevelTrace(FRAMES_600, level, 48000)
    log = EventLog(
        (
            Event("terminal", "terminal", 0.25),
            Event("pause", "pause", 1.5),
            Event("resume", "resume", 2.5),
            Event("prompt", "prompt", 9.0),
        )
    )
    a = analyse(trace, log, floor=0.003)
    (d,) = decide(a, quiet_s=2.0, onset_timeout_s=10)
    # 2.0 s of unpaused quiet after 59/60 s, with 1.0 s paused: tick 59 + 120 + 60.
    assert d.outcome == OK and d.declared_tick == 239
    (b,) = beats(trace, log, floor=0.003, quiet_s=2.0, onset_timeout_s=10)
    assert b.quiet_declared_s == float(a.t_s[239])


def test_all_quiet_times_at_once_match_one_at_a_time():
    from clock.core.beats import OUTCOMES, decide_quiets

    rng = np.random.default_rng(99)
    quiets = np.round(np.arange(0.1, 5.0, 0.15), 2)
    for _ in range(20):
        trace, log = random_session(rng)
        for floor in FLOORS:
            a = analyse(trace, log, floor=floor)
            many = decide_quiets(a, quiets_s=quiets, onset_timeout_s=1.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for j, q in enumerate(quiets):
                    found = beats(trace, log, floor=floor, quiet_s=float(q), onset_timeout_s=1.0)
                    assert [OUTCOMES[c] for c in many.outcome[:, j]] == [b.outcome for b in found]


def test_decide_matches_the_replay_with_a_corpus_narration_pause():
    """With ``P`` given (the recordings judged together), ``decide_quiets`` still gives the replay's outcomes, and
    the fuzzer reaches both ends of the page's ``end``: aborted and outpaced."""
    from clock.core.beats import OUTCOMES, decide_quiets

    rng = np.random.default_rng(2212)
    seen = set()
    for _ in range(25):
        trace, log = random_session(rng)
        for floor in FLOORS:
            a = analyse(trace, log, floor=floor)
            for pause in (0.0, 0.5, 2.0):
                many = decide_quiets(a, quiets_s=QUIETS, onset_timeout_s=1.0, narration_pause_s=pause)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for j, q in enumerate(QUIETS):
                        found = beats(trace, log, floor=floor, quiet_s=q, onset_timeout_s=1.0, narration_pause_s=pause)
                        assert [OUTCOMES[c] for c in many.outcome[:, j]] == [b.outcome for b in found]
                        for b, ba in zip(found, a.beats):
                            assert ba.allows(q, 1.0, narration_pause_s=pause) == (b.outcome not in FAILURES)
                            seen.add(b.outcome)
    assert {"aborted", "outpaced"} <= seen
