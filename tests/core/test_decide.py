"""``decide`` answers every setting from one analysis per floor: it must agree with the tick-by-tick replay."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clock.core.analysis import analyse
from clock.core.beats import beats
from clock.core.decide import decide
from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace
from clock.core.outcome import FAILURES, OK
from clock.core.ticks import Ticks

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
    from clock.core.decide import decide_quiets
    from clock.core.outcome import OUTCOMES

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
    from clock.core.decide import decide_quiets
    from clock.core.outcome import OUTCOMES

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


# --- every floor at once (the sweep) ------------------------------------------------


def assert_floors_match_analyse(trace: LevelTrace, log: EventLog, floors) -> int:
    """``analyse_floors`` at these floors is ``analyse`` at each, field by field; every beat it leaves out is
    neither spoken nor started at any of them. Returns the spoken (floor, beat) pairs compared."""
    from clock.core.floors import analyse_floors

    compared = 0
    table = analyse_floors(trace, log, floors=floors)
    kept = table.beat.tolist()
    for j, floor in enumerate(floors):
        a = analyse(trace, log, floor=floor)
        assert table.narration_pause_s[j] == a.narration_pause_s
        for b in a.beats:
            if b.index not in kept:
                assert not b.spoken and b.start_tick is None, (floor, b.index)
                continue
            i = kept.index(b.index)
            assert bool(table.spoken[j, i]) == b.spoken
            assert table.first_tick[i] == b.first_tick
            if not b.spoken:
                continue
            wait = None if np.isnan(table.wait_s[j, i]) else float(table.wait_s[j, i])
            assert (wait, table.need_s[j, i], table.room_s[j, i], table.pause_s[j, i]) == (
                b.wait_s, b.need_s, b.room_s, b.pause_s,
            ), (floor, b.index)  # fmt: skip
            assert (table.last_word_tick[j, i], table.bound_tick[j, i]) == (b.last_word_tick, b.bound_tick)
            assert (bool(table.ended_by_page[j, i]), bool(table.speech_at_bound[j, i])) == (
                b.ended_by_page, b.speech_at_bound,
            )  # fmt: skip
            assert table.end_after_word_s[j, i] == b.bound_s - b.last_word_s
            compared += 1
    return compared


def test_every_floor_at_once_is_each_floor_alone():
    """``analyse_floors`` finds, for many floors in one pass, what ``analyse`` finds at each (pauses, ends,
    acknowledgments of the next beat and floors given out of order included), and keeps every beat that is not
    unheard or silent at every floor."""
    floors = (0.003, 0.0, 0.01, 0.001, 0.0045, 0.003, 0.002, 0.2)
    rng = np.random.default_rng(31)
    compared = 0
    for _ in range(120):
        trace, log = random_session(rng)
        compared += assert_floors_match_analyse(trace, log, floors)
    assert compared > 1000


# Word levels of the acknowledgment sessions: heard at every floor of FLOORS, at the two lowest, at the lowest only
# (so the dips between words, and where an acknowledgment ends, change with the floor).
_WORD_LEVELS = (0.05, 0.004, 0.002)


def ack_session(rng: np.random.Generator, *, period: Fraction = Fraction(1, 60)) -> tuple[LevelTrace, EventLog]:
    """Beats whose acknowledgments run over their terminal responses in words with dips between them.

    At 1/60 s a tick, a quiet of 8 ticks between two words (from the last word's tick to the next word's: 9 ticks'
    time, 0.15 s) is at the word gap; the dips here are 1 to 12 ticks, so an acknowledgment runs on across some and
    ends at others, and the terminal response comes inside a word or inside a dip. Some beats have no prompt (the
    next beat's acknowledgment bounds them), some an ``end``, some a pause. (At a slower cadence, a tick of
    0.15 s or more, no quiet is a dip: only speech across the response's tick is an acknowledgment.)
    """
    level: list[float] = [0.0] * int(rng.integers(5, 40))
    marks: list[tuple[str, int]] = []  # (event kind, tick at which it comes)

    def words(n: int) -> list[int]:
        """Lay ``n`` words with dips between them; returns each word's ticks' start."""
        starts = []
        for w in range(n):
            if w:
                level.extend([0.0] * int(rng.integers(1, 13)))
            starts.append(len(level))
            length = int(rng.integers(1, 16))
            level.extend(rng.choice(_WORD_LEVELS, size=length, p=[0.7, 0.2, 0.1]).tolist())
        return starts

    for _ in range(int(rng.integers(2, 6))):
        if rng.random() < 0.5:
            marks.append(("prompt", len(level) - int(rng.integers(1, 4))))
        first = len(level)
        if rng.random() < 0.8:
            words(int(rng.integers(1, 5)))  # the acknowledgment, over the terminal response
            marks.append(("terminal", int(rng.integers(first, len(level) + 1))))
            level.extend([0.0] * int(rng.integers(5, 45)))  # its silence
        else:
            marks.append(("terminal", first))
            level.extend([0.0] * int(rng.integers(1, 30)))
        for sentence in range(int(rng.integers(1, 4))):
            if sentence:
                level.extend([0.0] * int(rng.integers(9, 50)))
            words(int(rng.integers(1, 4)))
        if rng.random() < 0.2:
            marks.append(("end", len(level) + int(rng.integers(0, 20))))
        if rng.random() < 0.15:
            at = int(rng.integers(first, len(level)))
            marks += [("pause", at), ("resume", at + int(rng.integers(1, 40)))]
        level.extend([0.0] * int(rng.integers(5, 60)))
    ticks = Ticks(period)
    trace = LevelTrace(ticks.frames(np.arange(len(level)), 48000), np.array(level), 48000, ticks)
    t = trace.t_s
    events = []
    for line, (kind, k) in enumerate(marks, 1):
        k = min(max(k, 0), t.size - 1)
        # At the tick's own time (it applies before it), or just after the tick before it: the same tick.
        at = float(t[k]) if rng.random() < 0.5 or k == 0 else float(t[k - 1]) + 0.004
        events.append(Event(kind, kind, at, line, 1.0 if kind == "terminal" else None))
    events.sort(key=lambda e: (e.t_s, e.line))
    return trace, EventLog(tuple(events))


def _brute_acknowledgments(trace: LevelTrace, log: EventLog, floor: float) -> tuple[list[tuple], dict[str, int]]:
    """Each beat's acknowledgment and bound, tick by tick, as the module notes and ``span_bounds`` say them: speech
    is in progress at a tick with speech there and at the tick before, or only a dip between words (a quiet under
    MIN_GAP_S from one speech tick to the next) there; an acknowledgment runs on across dips to its first pause;
    the next beat's acknowledgment, begun after this terminal response, bounds a beat without a prompt where its
    first word is, its words joined across dips. Returns, per beat, ``(ack_end_tick, onset_tick, bound, bound_s)``
    (the first two for a beat with speech in the clock's life), and how often each case came up."""
    from clock.core.model import MIN_GAP_S

    t = trace.t_s
    n = t.size
    speech = (trace.level > floor).tolist()
    said = [k for k in range(n) if speech[k]]
    seen = dict.fromkeys(("dip at the response", "run across a dip", "bound across a dip"), 0)

    def dip(a: int, b: int) -> bool:
        return float(t[b] - t[a]) < MIN_GAP_S - 1e-9

    def around(k: int) -> tuple[int | None, int | None]:
        before = max((x for x in said if x < k), default=None)
        after = min((x for x in said if x >= k), default=None)
        return before, after

    def in_progress(k: int) -> bool:
        before, after = around(k)
        if before is None or after is None:
            return False
        if (before, after) == (k - 1, k):
            return True
        if dip(before, after):
            seen["dip at the response"] += 1
            return True
        return False

    queue = log.events
    out = []
    for i, e in enumerate(queue):
        if e.kind != "terminal":
            continue
        later = [x for x in queue if x.t_s > e.t_s and x.kind in ("terminal", "prompt", "end")]
        if later:
            bound, bound_s = later[0].kind, later[0].t_s
        else:
            bound, bound_s = "recording end", float(t[-1]) + trace.tick_s
        if bound == "terminal":
            k2 = int(np.searchsorted(t, bound_s, side="left"))
            if 0 < k2 < n and in_progress(k2):
                first, crossed = around(k2)[0], False
                while True:  # back to the first word of the acknowledgment, across dips between its words
                    while first > 0 and speech[first - 1]:
                        first -= 1
                    back = max((x for x in said if x < first), default=None)
                    if back is None or not dip(back, first):
                        break
                    first, crossed = back, True
                if float(t[first]) > e.t_s:
                    bound, bound_s = "acknowledgment", float(t[first])
                    seen["bound across a dip"] += crossed
        k0 = int(np.searchsorted(t, e.t_s, side="left"))
        stop = next((x for x in queue[i + 1 :] if x.kind in ("terminal", "end")), None)
        ka = max(k0, n if stop is None else int(np.searchsorted(t, stop.t_s, side="left")))
        kb = ka if bound == "recording end" else min(int(np.searchsorted(t, bound_s, side="left")), ka)
        life = [k for k in said if k0 <= k < ka]
        if not life:
            out.append((None, None, bound, bound_s))
            continue
        ack = k0 > 0 and in_progress(k0)
        span = [k for k in said if k0 <= max(k0, kb) and k0 <= k < kb]
        ack_end = onset = None
        if span and not ack:
            onset = span[0]
        elif span:
            ack_end = span[-1]
            for a, b in zip(span, span[1:]):
                if b > a + 1 and not dip(a, b):
                    ack_end, onset = a, b
                    break
            seen["run across a dip"] += any(b > a + 1 for a, b in zip(span, span[1:]) if b <= ack_end)
        out.append((ack_end, onset, bound, bound_s))
    return out, seen


def test_every_floor_at_once_reads_acknowledgments_across_dips_as_one_floor_does():
    """On sessions whose acknowledgments have dips between their words (at the word gap and either side of it), the
    analysis at one floor finds each acknowledgment's end, the narration's onset and each beat's bound as the rule
    says them tick by tick, and ``analyse_floors`` finds field by field what ``analyse`` finds at each floor."""
    rng = np.random.default_rng(2026)
    seen: dict[str, int] = {}
    compared = slow_acks = 0
    for x in range(180):
        # Every sixth session at 5 ticks a second: speech across the response's tick is an acknowledgment there too.
        period = Fraction(1, 5) if x % 6 == 5 else Fraction(1, 60)
        trace, log = ack_session(rng, period=period)
        compared += assert_floors_match_analyse(trace, log, FLOORS)
        for floor in FLOORS:
            a = analyse(trace, log, floor=floor)
            want, cases = _brute_acknowledgments(trace, log, floor)
            for key, count in cases.items():
                seen[key] = seen.get(key, 0) + count
            for b, (ack_end, onset, bound, bound_s) in zip(a.beats, want):
                assert (b.bound, b.bound_s) == (bound, bound_s), (floor, b.index)
                if b.start_tick is not None:
                    assert (b.ack_end_tick, b.onset_tick) == (ack_end, onset), (floor, b.index)
                    slow_acks += period == Fraction(1, 5) and ack_end is not None
    # The sessions reach every case of the rule, many times.
    assert compared > 1000 and min(seen.values()) > 50 and slow_acks > 20, (seen, slow_acks)


def _replayed_grid(observations, floors, quiets, timeout):
    """Every setting counted from the tick-by-tick replay of every beat (``beats``), as the sweep reports it."""
    from collections import Counter

    from clock.core.recommend.windows import classify_ticks

    said = [
        classify_ticks(o.trace, labels=o.labels, events=o.events, speech_range_db=20.0).speech for o in observations
    ]
    out = {}
    for floor in floors:
        analyses = [analyse(o.trace, o.events, floor=floor) for o in observations]
        for quiet in quiets:
            counts, added, ticks, after = Counter(), [], 0, []
            for o, speech, a in zip(observations, said, analyses):
                t = o.trace.t_s
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    found = beats(o.trace, o.events, floor=floor, quiet_s=quiet, onset_timeout_s=timeout)
                for b, ba in zip(found, a.beats):
                    counts[b.outcome] += 1
                    if b.outcome != OK:
                        continue
                    declared, word = b.replay.quiet_declared_s, b.replay.last_word_s
                    added.append(declared - word)
                    ticks += int(np.searchsorted(t, declared)) - int(np.searchsorted(t, word))
                    last = np.flatnonzero(speech[ba.first_tick : ba.bound_tick])
                    if last.size:
                        after.append(declared - t[ba.first_tick + last[-1]])
            out[floor, quiet] = (counts, added, ticks, after)
    return out


QUIETS_SWEPT = (0.2, 0.5, 1.0, 1.6, 2.55)


def test_a_sweep_counts_at_every_setting_what_the_replay_does():
    """Every setting of the sweep's grid (all floors analysed at once) against the tick-by-tick replay of every
    beat of every recording, judged together: the outcomes' counts and the added latency (its ticks exactly; its
    maximum and 95th percentile as numpy takes them from the replayed latencies; its mean to rounding)."""
    from clock.core.recommend.engine import derive
    from clock.core.sweep import sweep

    floors = (0.0045, 0.001, 0.003, 0.01, 0.002)
    rng = np.random.default_rng(2611)
    seen = set()
    for corpus in range(6):
        observations = _observations(rng, f"c{corpus}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # events outside the recording, thin evidence
            derivation = derive(observations)  # the recommendation, not under test here: once per corpus
        # Quiet times exactly at a beat's longest inner quiet and at its room (within the replay's 1 ns).
        edges = {
            x + 1e-9
            for o in observations
            for floor in floors
            for b in analyse(o.trace, o.events, floor=floor).beats
            for x in (b.need_s, b.room_s)
            if 0 < x < 3600 and (x + 1e-9) - 1e-9 == x
        }
        quiets = (*QUIETS_SWEPT, *sorted(edges)[:4])
        assert len(quiets) > len(QUIETS_SWEPT)
        for timeout in (1.0, float("inf")):
            result = sweep(observations, floors=floors, quiets_s=quiets, onset_timeout_s=timeout, derivation=derivation)
            truth = _replayed_grid(observations, floors, quiets, timeout)
            for p in result.points:
                counts, added, ticks, after = truth[p.floor, p.quiet_s]
                seen |= set(counts)
                where = f"corpus {corpus} timeout {timeout} floor {p.floor} quiet {p.quiet_s}"
                assert (
                    *(getattr(p.tally, f"n_{k}") for k in ("ok", "premature", "stalled", "outpaced", "missed_onset")),
                    p.tally.n_aborted, p.tally.n_superseded, p.tally.n_recording_ended,
                ) == (
                    counts[OK], counts["premature"], counts["stalled"], counts["outpaced"], counts["missed-onset"],
                    counts["aborted"], counts["superseded"], counts["recording-ended"],
                ), where  # fmt: skip
                assert p.tally.n_silent == counts["silent"] and p.tally.n_unheard == counts["unheard"], where
                assert p.tally.n_beats == sum(counts.values()) - counts["unheard"], where  # every beat heard
                assert p.latency_ticks == ticks, where
                if not added:
                    assert p.latency_mean_s is p.latency_max_s is p.latency_p95_s is None, where
                    continue
                assert (p.latency_max_s, p.latency_p95_s) == (max(added), float(np.percentile(added, 95))), where
                assert p.latency_mean_s == pytest.approx(float(np.mean(added)), rel=1e-12), where
                if after:
                    assert p.after_speech_max_s == max(after), where
                    assert p.after_speech_mean_s == pytest.approx(float(np.mean(after)), rel=1e-12), where
    assert seen >= {OK, *FAILURES, "aborted", "silent"}


def test_a_setting_s_figures_are_numpy_s_of_its_own_values():
    """Each setting's max and 95th percentile are numpy's of its values alone, whatever the other settings hold;
    its mean is theirs to rounding."""
    from clock.core.sweep import _by_setting

    rng = np.random.default_rng(5)
    for n, size in ((1, 1), (7, 40), (300, 5000), (40000, 3000)):
        key = rng.integers(0, n, size)
        values = np.round(rng.uniform(0, 3, size), int(rng.integers(1, 4)))  # ties too
        mean, top, p95 = _by_setting(key, values, n, p95=True)
        mean2, top2 = _by_setting(key, values, n, p95=False)
        for x in range(n):
            mine = values[key == x]
            if not mine.size:
                assert np.isnan([mean[x], top[x], p95[x], mean2[x], top2[x]]).all()
                continue
            assert top[x] == top2[x] == mine.max()
            assert p95[x] == np.percentile(mine, 95)
            assert mean[x] == mean2[x] == pytest.approx(mine.mean(), rel=1e-12)


def test_the_pareto_front_is_every_pair_no_setting_beats():
    """The front against the definition: the settings no other setting beats on both failing beats and the exact
    mean latency (one per distinct pair, the first in the grid), sorted by failing beats."""
    from fractions import Fraction

    from clock.core.sweep import _pareto

    rng = np.random.default_rng(8)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        ok = rng.integers(0, 4, n)
        cols = {
            "n_ok": ok, "latency_ticks": ok * rng.integers(10, 14, n) + rng.integers(0, 3, n),
            "n_premature": rng.integers(0, 3, n), "n_stalled": rng.integers(0, 2, n),
            "n_outpaced": rng.integers(0, 2, n), "n_missed_onset": rng.integers(0, 2, n),
        }  # fmt: skip
        cols["n_beats"] = ok + cols["n_premature"] + cols["n_stalled"] + cols["n_outpaced"] + cols["n_missed_onset"]
        failed = cols["n_premature"] + cols["n_stalled"] + cols["n_missed_onset"]  # (outpaced: the visitor's doing)
        keys = {
            x: (int(failed[x]), Fraction(int(cols["latency_ticks"][x]), int(ok[x])))
            for x in range(n)
            if cols["n_beats"][x] and ok[x]
        }
        front: dict = {}
        for x, key in keys.items():
            beaten = any(o[0] <= key[0] and o[1] <= key[1] and o != key for o in keys.values())
            if not beaten and key not in front:
                front[key] = x
        assert _pareto(cols).tolist() == [front[key] for key in sorted(front)]


def test_failing_beats_counts_what_decide_quiets_fails():
    """derive counts failures without a row per beat: the same counts as ``decide_quiets``' outcomes."""
    from clock.core.decide import decide_quiets, failing_beats
    from clock.core.outcome import FAILURES, OUTCOMES

    rng = np.random.default_rng(77)
    codes = [OUTCOMES.index(x) for x in FAILURES]
    for _ in range(40):
        trace, log = random_session(rng)
        for floor in FLOORS:
            a = analyse(trace, log, floor=floor)
            for pause in (None, 1.5):
                full = decide_quiets(a, quiets_s=QUIETS, onset_timeout_s=1.0, narration_pause_s=pause)
                counted = failing_beats(a, quiets_s=QUIETS, onset_timeout_s=1.0, narration_pause_s=pause)
                assert counted.tolist() == np.isin(full.outcome, codes).sum(axis=0).tolist()


def test_derive_tells_speech_only_inside_a_beat_s_span():
    """With a log, the speech derive tells apart lies inside some beat's span (terminal response to bound), as
    marking each span in turn gives it."""

    from clock.core.recommend.windows import classify_ticks
    from clock.core.spans import span_bounds

    rng = np.random.default_rng(12)
    marked = 0
    for _ in range(80):
        trace, log = random_session(rng)
        if not log.terminals:
            continue
        t = trace.t_s
        inside = np.zeros(t.size, bool)
        end_s = float(t[-1]) + trace.tick_s
        for term, (bound_s, _) in zip(log.terminals, span_bounds(log, t_s=t, speech=None, end_s=end_s)):
            lo, hi = np.searchsorted(t, [term.t_s, bound_s])
            inside[lo:hi] = True
        anywhere = classify_ticks(trace, labels=None, events=None).speech
        found = classify_ticks(trace, labels=None, events=log).speech
        assert (found == (anywhere & inside)).all()
        marked += int((anywhere & ~inside).sum())
    assert marked > 0  # speech outside every span was left out


def test_a_sweep_a_block_of_floors_at_a_time_is_the_same_grid(monkeypatch):
    """A sweep of many settings over a log of many beats goes a block of floors at a time: the same grid."""
    import clock.core.sweep as sweep_module
    from clock.core.recommend.engine import derive

    rng = np.random.default_rng(5)
    observations = _observations(rng, "")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        derivation = derive(observations)
    floors, quiets = (0.0045, 0.001, 0.003, 0.01, 0.002, 0.02, 0.0), (0.2, 0.5, 1.0, 1.6, 2.55)
    whole = sweep_module.sweep(observations, floors=floors, quiets_s=quiets, derivation=derivation)
    monkeypatch.setattr(sweep_module, "_BLOCK_OUTCOMES", 1)  # one floor at a time
    blocks = sweep_module.sweep(observations, floors=floors, quiets_s=quiets, derivation=derivation)
    assert blocks.points == whole.points and blocks.pareto == whole.pareto
    assert any(p.tally.n_ok for p in whole.points) and any(p.tally.n_failed for p in whole.points)


def _observations(rng, prefix: str, n: int = 3):
    """``n`` random sessions with beats, as observations named ``{prefix}r{i}.wav``."""
    from clock.core.model import Observation

    found = []
    while len(found) < n:
        trace, log = random_session(rng)
        if log.terminals:
            found.append(Observation(f"{prefix}r{len(found)}.wav", trace, log))
    return found
