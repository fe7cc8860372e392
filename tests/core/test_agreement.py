"""Page-logged levels against the recording's (clock.core.agreement), on synthetic sessions."""

from __future__ import annotations

import numpy as np
import pytest
from sessions import RATE, Session

from clock.core.agreement import agreement, page_trace
from clock.core.analyser import AnalyserOptions
from clock.core.beats import beats
from clock.core.events import CaptureStart, Event, EventLog, Reading
from clock.core.levels import levels, multi_levels
from clock.core.ticks import Ticks
from clock.errors import InvalidParameterError

Q = 128
FLOOR = 0.003
EXACT = CaptureStart(frame=0, sample_rate_hz=RATE, capture="worklet")
RECORDER = CaptureStart(frame=0, sample_rate_hz=RATE, capture="recorder")


def session() -> Session:
    return Session(6.0).say(0.5, 1.4).say(1.7, 2.6, rms=0.02).say(3.0, 3.8, rms=0.1)


def quantum_trace(x: np.ndarray):
    return levels(x, RATE, ticks=Ticks.every_frames(Q, RATE))


def page_readings(x: np.ndarray, frames: np.ndarray) -> list[Reading]:
    """What a page logs: its level at each frame (from the exact signal), with the frame."""
    q = quantum_trace(x)
    return [Reading(f / RATE, float(q.level[f // Q]), int(f), None) for f in frames]


def page_frames(rng, n_frames: int) -> np.ndarray:
    """A page's timer ticks: about 60 Hz with jitter, on render quanta."""
    steps = rng.integers(5, 8, size=n_frames // (5 * Q))
    frames = np.cumsum(steps) * Q
    return frames[frames < n_frames]


def test_readings_of_the_same_samples_agree_bit_for_bit(rng):
    x = session().samples()
    frames = page_frames(rng, x.size)
    found = agreement(quantum_trace(x), page_readings(x, frames), floor=FLOOR, start=EXACT)
    assert found.exact and found.max_diff == 0.0 and found.p99_diff == 0.0
    assert found.n_floor_disagree == 0 and not found.offset_estimated and found.offset_s == 0.0
    # Readings whose window began before the recording are not compared.
    assert found.n_compared == np.count_nonzero(frames >= 2048) < found.n_readings


def test_a_changed_reading_is_found_with_its_floor_crossing(rng):
    x = session().samples()
    frames = page_frames(rng, x.size)
    readings = page_readings(x, frames)
    k = next(i for i, r in enumerate(readings) if r.level > 0.01)
    readings[k] = Reading(readings[k].t_s, 0.001, readings[k].frame)
    found = agreement(quantum_trace(x), readings, floor=FLOOR, start=EXACT)
    assert not found.exact and found.n_exact == found.n_compared - 1
    assert found.n_floor_disagree == 1 and found.first_floor_disagree_s == readings[k].frame / RATE
    assert found.worst_s == readings[k].frame / RATE


@pytest.mark.parametrize("polled", [True, False])
def test_a_polled_reading_a_quantum_after_its_frame_is_exact_only_when_polled(rng, polled):
    # A poll on the page's main thread can hold the window one render quantum after its logged frame (Chromium
    # writes the analyser while it renders a quantum, and advances currentTime after; test_page_clock finds it out
    # in the browser). Two quanta after is no such read: never exact.
    x = session().samples()
    q = quantum_trace(x)
    frames = page_frames(rng, x.size)[:-1]
    readings = page_readings(x, frames)
    moved = [i for i, f in enumerate(frames) if f >= 2048 and q.level[f // Q + 1] != q.level[f // Q]]
    crosses = next(i for i in moved[1:] if (q.level[frames[i] // Q + 1] > FLOOR) != (q.level[frames[i] // Q] > FLOOR))
    for i in moved:
        readings[i] = Reading(readings[i].t_s, float(q.level[frames[i] // Q + 1]), readings[i].frame)
    found = agreement(q, readings, floor=FLOOR, start=EXACT, polled=polled)
    assert len(moved) >= 10 and crosses
    if polled:
        assert found.exact and found.n_ahead == len(moved) and found.n_floor_disagree == 0
    else:
        assert found.n_exact == found.n_compared - len(moved) and found.n_ahead == 0 and found.n_floor_disagree >= 1
    k = moved[0]
    readings[k] = Reading(readings[k].t_s, float(q.level[frames[k] // Q + 2]), readings[k].frame)
    found = agreement(q, readings, floor=FLOOR, start=EXACT, polled=polled)
    assert not found.exact and found.worst_s == frames[k] / RATE


def test_a_polled_reading_is_taken_as_a_quantum_ahead_only_when_it_is_that_level_to_the_bit(rng):
    # A lossy reading nearer the next quantum's level proves nothing: it is compared at its frame, as on the
    # audio thread, and not counted ahead.
    x = session().hiss(0.2, 5.8, -50).samples()  # levels that change at every quantum
    q = quantum_trace(x)
    frames = page_frames(rng, x.size)[:-1]
    near = [Reading(r.t_s, r.level * (1 + 0.05 * rng.standard_normal()), r.frame) for r in page_readings(x, frames)]
    polled = agreement(q, near, floor=FLOOR, start=EXACT, polled=True)
    closer = sum(abs(q.level[f // Q + 1] - r.level) < abs(q.level[f // Q] - r.level) for f, r in zip(frames, near))
    assert closer >= 10 and polled.n_ahead == 0
    assert polled == agreement(q, near, floor=FLOOR, start=EXACT, polled=False)


@pytest.mark.parametrize("late_quanta", [0, 7, 19, -12])
def test_the_offset_of_an_uncertain_start_is_estimated(rng, late_quanta):
    # The recording starts late_quanta after the frame the log says (a recorder's
    # start-up latency): the page's reading at logged frame f is the recording's
    # level at f - late.
    x = session().samples()
    late = late_quanta * Q
    truth = quantum_trace(x)
    frames = page_frames(rng, x.size)
    frames = frames[(frames - late >= 0) & (frames - late < x.size)]
    readings = [Reading(f / RATE, float(truth.level[(f - late) // Q]), int(f)) for f in frames]
    found = agreement(truth, readings, floor=FLOOR, start=RECORDER)
    assert found.offset_estimated and not found.start_exact
    assert found.offset_s == pytest.approx(-late / RATE)
    assert found.max_diff == 0.0
    # Applied to the log, the offset puts the readings where they belong.
    log = EventLog((), readings=tuple(readings), start=RECORDER).shifted(found.offset_s)
    again = agreement(truth, log.readings, floor=FLOOR, start=RECORDER, estimate_offset=False)
    assert again.exact


def test_without_frames_readings_are_placed_by_time(rng):
    x = session().samples()
    frames = page_frames(rng, x.size)
    readings = [Reading(r.t_s, r.level) for r in page_readings(x, frames)]
    found = agreement(quantum_trace(x), readings, floor=FLOOR, start=None, estimate_offset=False)
    assert found.exact


def test_no_readings_no_agreement_and_bad_traces_are_refused():
    x = session().samples()
    assert agreement(quantum_trace(x), [], floor=FLOOR) is None
    with pytest.raises(InvalidParameterError, match="every render quantum"):
        agreement(levels(x, RATE), [Reading(1.0, 0.1, RATE)], floor=FLOOR)
    with pytest.raises(InvalidParameterError, match="search_s"):
        agreement(quantum_trace(x), [Reading(1.0, 0.1, RATE)], floor=FLOOR, search_s=-1)


def test_replay_at_the_pages_ticks_decides_at_one_of_them(rng):
    s = session()
    x = s.samples()
    frames = page_frames(rng, x.size)
    q, regular = multi_levels(x, RATE, ticks=[Ticks.every_frames(Q, RATE), Ticks()])
    trace = page_trace(q, page_readings(x, frames), start=EXACT)
    assert trace.n_ticks == np.count_nonzero(frames >= 2048)
    np.testing.assert_array_equal(trace.t_s, trace.frames / RATE)
    log = EventLog((Event("terminal", "terminal_response", 0.2),))
    (beat,) = beats(trace, log, floor=FLOOR, quiet_s=1.0)
    assert beat.quiet_declared_s in set(trace.t_s.tolist())
    (at_cadence,) = beats(regular, log, floor=FLOOR, quiet_s=1.0)
    gap = np.diff(trace.t_s).max()
    assert abs(beat.quiet_declared_s - at_cadence.quiet_declared_s) <= gap + regular.tick_s


def test_page_trace_keeps_the_analyser_options():
    x = session().samples()
    options = AnalyserOptions(fft_size=512)
    q = levels(x, RATE, ticks=Ticks.every_frames(Q, RATE), options=options)
    trace = page_trace(q, [Reading(0.0, 0.0, 0), Reading(1.0, 0.0, RATE)], start=EXACT)
    assert trace.options.fft_size == 512 and trace.frames.tolist() == [RATE]  # frame 0 has no whole window
