"""Segments, beats and the clock replay on synthetic sessions with exact ground truth."""

from __future__ import annotations

import pytest
from sessions import RATE, WINDOW_S, Session

from clock.core.beats import beats
from clock.core.events import Event, EventLog, Label
from clock.core.levels import levels, multi_levels
from clock.core.replay import replay
from clock.core.segments import label_errors, segments
from clock.core.ticks import Ticks
from clock.errors import InvalidParameterError, SpeechClockWarning

TICK = 1 / 60
FLOOR = 0.003
QUIET = 2.5
# A 0.05 RMS square wave reads above 0.003 once 8 of its samples are in the window.
ENTER_S = 8 / RATE
# A tick's time is the frame its level was read at (a render-quantum boundary) over the rate:
# up to one quantum after the nominal k / 60, so ticks are 6 or 7 quanta apart at 48 kHz.
QUANTUM_S = 128 / RATE
#: The longest interval between two ticks' times (7 quanta at 48 kHz and 1/60 s).
STEP = TICK + QUANTUM_S


def log(*events: tuple) -> EventLog:
    return EventLog(tuple(Event(kind, kind, t, None, *rest) for kind, t, *rest in events))


def trace_of(session: Session):
    return levels(session.samples(), RATE)


def near_onset(measured: float, truth_s: float) -> bool:
    """The clock sees an onset at the first tick after the speech enters the window."""
    return truth_s <= measured <= truth_s + ENTER_S + STEP


def near_last_word(measured: float, truth_end_s: float) -> bool:
    """... and the last word until the speech has left the window."""
    return truth_end_s + WINDOW_S - ENTER_S - STEP <= measured <= truth_end_s + WINDOW_S


# --- segments ----------------------------------------------------------------


def test_segments_and_gaps_match_the_utterances():
    s = Session(8.0).say(0.5, 1.5).say(1.7, 2.5).say(4.8, 6.0)  # gaps 0.2 and 2.3 s
    seg = segments(trace_of(s), floor=FLOOR)
    assert seg.n_segments == 3
    for found, (start, end, _) in zip(seg.segments, s.utterances):
        assert near_onset(found.onset_s, start) and near_last_word(found.last_word_s, end)
    for gap, truth in zip(seg.gaps_s, (0.2, 2.3)):
        assert abs(gap - (truth - WINDOW_S)) <= 2 * STEP + ENTER_S


def test_speech_is_strictly_above_the_floor():
    s = Session(2.0).say(0.5, 1.5, rms=0.01)
    trace = trace_of(s)
    top = float(trace.level.max())
    assert segments(trace, floor=top).n_segments == 0  # level == floor is quiet
    assert segments(trace, floor=top * 0.999).n_segments == 1


def test_low_noise_inside_a_narration_is_not_speech():
    # TTS voices leave -75..-60 dBFS between sentences; the floor is -50.5 dBFS.
    s = Session(6.0).say(0.5, 1.5).hiss(1.5, 2.5, -60).say(2.5, 3.5).hiss(3.5, 4.0, -75)
    seg = segments(trace_of(s), floor=FLOOR)
    assert seg.n_segments == 2


def test_quantum_boundaries_fall_between_the_neighbouring_ticks():
    s = Session(4.0).say(1.0, 2.0)
    coarse, fine = multi_levels(s.samples(), RATE, ticks=[Ticks(), Ticks.every_frames(128, RATE)])
    seg = segments(coarse, floor=FLOOR, quantum=fine).segments[0]
    assert seg.onset_s - STEP < seg.onset_quantum_s <= seg.onset_s
    assert seg.last_word_s <= seg.offset_quantum_s < seg.last_word_s + STEP
    # At quantum resolution the onset is within one quantum of the truth.
    assert 1.0 <= seg.onset_quantum_s <= 1.0 + ENTER_S + 128 / RATE


def test_a_single_quiet_tick_is_a_gap_of_two_periods():
    from fractions import Fraction

    import numpy as np

    from clock.core.levels import LevelTrace

    trace = LevelTrace(np.arange(5) * 800, np.array([0.1, 0.1, 0.0, 0.1, 0.1]), RATE, Ticks(Fraction(1, 60)))
    assert segments(trace, floor=FLOOR).gaps_s == (pytest.approx(2 / 60),)


def test_negative_floor_is_refused():
    with pytest.raises(InvalidParameterError, match="floor"):
        segments(trace_of(Session(1.0)), floor=-1)


def test_label_errors_take_the_first_and_last_segment_inside_a_label():
    # One labelled sentence with a dip between its words: two segments.
    s = Session(4.0).say(0.5, 1.0).say(1.3, 2.0)
    seg = segments(trace_of(s), floor=FLOOR)
    assert seg.n_segments == 2
    (match,) = label_errors(seg, [Label(0.5, 2.0, "sentence")])
    assert 0 <= match.onset_error_s <= ENTER_S + STEP
    assert abs(match.offset_error_s - WINDOW_S) <= STEP + ENTER_S


def test_label_errors_match_each_label_with_its_segment():
    s = Session(5.0).say(0.5, 1.5).say(3.0, 4.0)
    seg = segments(trace_of(s), floor=FLOOR)
    matches = label_errors(seg, [Label(0.5, 1.5, "a"), Label(3.0, 4.0, "b"), Label(2.0, 2.5, "none")])
    assert [m.text for m in matches] == ["a", "b", "none"]
    assert 0 <= matches[0].onset_error_s <= ENTER_S + STEP
    assert abs(matches[1].offset_error_s - WINDOW_S) <= STEP + ENTER_S
    assert matches[2].onset_error_s is None


# --- beats and replay --------------------------------------------------------


def tour() -> Session:
    """Three beats; narrations with sentence gaps from 0.2 to 2.3 s."""
    s = Session(30.0)
    s.event("terminal", 1.0).say(1.6, 3.0).say(3.2, 4.0).say(4.8, 6.0)  # gaps 0.2, 0.8
    s.event("prompt", 9.5)
    s.event("terminal", 10.0).say(10.4, 11.5).say(13.0, 14.0)  # gap 1.5
    s.event("prompt", 17.5)
    s.event("terminal", 18.0).say(19.0, 20.0).say(22.3, 23.5).hiss(20.0, 22.3, -65)  # gap 2.3
    return s


def as_log(s: Session) -> EventLog:
    kinds = {"terminal": "terminal"}
    return EventLog(
        tuple(
            Event(kinds.get(e["type"], e["type"]), e["type"], e["t"], i + 1, e.get("linger_s"))
            for i, e in enumerate(sorted(s.events, key=lambda e: e["t"]))
        )
    )


def test_a_tour_of_three_beats():
    s = tour()
    found = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)
    assert [b.index for b in found] == [0, 1, 2]
    truth_onsets = [1.6, 10.4, 19.0]
    truth_ends = [6.0, 14.0, 23.5]
    truth_gaps = [(0.2, 0.8), (1.5,), (2.3,)]
    for b, onset, end, gaps in zip(found, truth_onsets, truth_ends, truth_gaps):
        assert near_onset(b.onset_s, onset)
        assert b.onset_latency_s == pytest.approx(b.onset_s - b.terminal_s)
        assert near_last_word(b.last_word_s, end)
        assert len(b.gaps_s) == len(gaps)
        for got, truth in zip(b.gaps_s, gaps):
            assert abs(got - (truth - WINDOW_S)) <= 2 * STEP + ENTER_S
        assert not (b.ack_overlap or b.premature or b.premature_risk or b.no_onset)
        # The clock declares quiet at the first tick 2.5 s after the last word.
        assert b.last_word_s + QUIET <= b.quiet_declared_s < b.last_word_s + QUIET + STEP + 1e-9
        assert b.added_latency_s == pytest.approx(b.quiet_declared_s - b.last_word_s)


def test_a_sentence_gap_longer_than_the_quiet_time_ends_the_beat_prematurely():
    s = Session(12.0).event("terminal", 0.5).say(1.0, 2.0).say(2.0 + 2.6 + WINDOW_S, 6.0)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert b.premature and b.quiet_declared_s < 5.0
    assert max(b.gaps_s) >= QUIET  # the narration's gap shows why


def test_acknowledgment_overlapping_the_terminal_response():
    s = Session(10.0).say(0.5, 2.0).event("terminal", 1.5).say(3.0, 5.0)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert b.ack_overlap and not b.premature_risk and not b.premature
    assert near_last_word(b.ack_last_word_s, 2.0)
    assert near_onset(b.onset_s, 3.0)  # the narration, not the acknowledgment
    assert b.ack_silence_s == pytest.approx(b.onset_s - b.ack_last_word_s)


def test_acknowledgment_ending_long_before_the_narration_is_flagged():
    # The acknowledgment's last word is 2.6 s (as the clock sees it) before the narration.
    s = Session(12.0).say(0.5, 2.0).event("terminal", 1.5).say(2.0 + WINDOW_S + 2.6, 7.0)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert b.ack_overlap and b.premature_risk
    assert b.ack_silence_s >= QUIET
    assert b.premature  # and the replayed clock does end the beat early


def test_onset_waits_for_the_first_rising_edge_after_the_terminal_response():
    s = Session(8.0).event("terminal", 1.0).say(2.25, 3.0)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert near_onset(b.onset_s, 2.25) and b.onset_latency_s == pytest.approx(b.onset_s - 1.0)


def test_no_onset_within_the_timeout():
    s = Session(10.0).event("terminal", 1.0).say(8.0, 9.0)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET, onset_timeout_s=5.0)[0]
    assert b.no_onset and b.quiet_declared_s is None
    assert near_onset(b.onset_s, 8.0)  # the analysis still finds the late onset


def test_pause_freezes_the_quiet_count():
    # A 3.0 s silence, 1.0 s of it paused: 2.0 s unpaused, so no declaration in it.
    s = Session(12.0).event("terminal", 0.5).say(1.0, 2.0).say(2.0 + WINDOW_S + 3.0, 6.0)
    s.event("pause", 2.5).event("resume", 3.5)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert not b.premature
    assert b.quiet_declared_s > 6.0 + QUIET
    unpaused = beats(
        trace_of(s), EventLog(tuple(e for e in as_log(s).events if e.kind == "terminal")), floor=FLOOR, quiet_s=QUIET
    )[0]
    assert unpaused.premature  # the same gap without the pause ends the beat early


def test_end_aborts_the_beat():
    s = Session(10.0).event("terminal", 0.5).say(1.0, 4.0).event("end", 2.0)
    r = replay(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert r.aborted and r.quiet_declared_s is None


def test_replay_is_compared_with_the_page_logged_quiet():
    s = Session(10.0).event("terminal", 0.5).say(1.0, 2.0).event("clock.quiet", 4.2)
    b = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert b.logged_quiet_s == 4.2
    assert b.replay_vs_logged_s == pytest.approx(b.quiet_declared_s - 4.2)
    assert abs(b.replay_vs_logged_s) > TICK  # this page's clock differed


def test_linger_delays_the_next_prompt():
    s = Session(8.0).event("terminal", 0.5, linger_s=1.5).say(1.0, 2.0)
    r = replay(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)[0]
    assert r.prompt_allowed_s == pytest.approx(r.quiet_declared_s + 1.5)


def test_terminal_after_the_recording_warns_and_has_no_onset():
    s = Session(3.0).event("terminal", 0.5).say(1.0, 2.0).event("terminal", 9.0)
    with pytest.warns(SpeechClockWarning, match="after the end of the recording"):
        found = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)
    assert len(found) == 2 and found[1].no_onset and found[1].onset_s is None


def test_terminal_before_the_recording_started_warns():
    s = Session(6.0).event("terminal", -0.5).say(1.0, 2.0)
    with pytest.warns(SpeechClockWarning, match="before the recording started"):
        (b,) = beats(trace_of(s), as_log(s), floor=FLOOR, quiet_s=QUIET)
    assert near_onset(b.onset_s, 1.0) and b.quiet_declared_s is not None


@pytest.mark.parametrize("quiet", [0, -1, float("nan")])
def test_bad_quiet_time(quiet):
    with pytest.raises(InvalidParameterError, match="quiet_s"):
        replay(trace_of(Session(1.0)), log(("terminal", 0.1)), floor=FLOOR, quiet_s=quiet)


# --- the provider's own signals (OpenAI Realtime) ----------------------------


def provider_log(*events: tuple) -> EventLog:
    """Events as (kind, t, response_id)."""
    return EventLog(tuple(Event(kind, kind, t, None, None, rid) for kind, t, rid in events))


def test_provider_stopped_against_the_last_word_per_beat():
    s = Session(14.0).say(0.5, 2.0).say(7.5, 9.0)
    events = provider_log(
        ("terminal", 0.4, "r1"),
        ("output_audio_buffer.started", 0.45, "r1"),
        ("output_audio_buffer.stopped", 1.8, "r1"),  # the server drained before the visitor heard the end
        ("prompt", 6.0, None),
        ("terminal", 7.2, "r2"),
        ("output_audio_buffer.stopped", 13.0, "r1"),  # another response's: not this beat's
        ("output_audio_buffer.stopped", 9.3, "r2"),
    )
    first, second = beats(trace_of(s), events, floor=FLOOR, quiet_s=QUIET)
    assert first.response_id == "r1" and first.provider_stopped_s == 1.8
    assert first.provider_stopped_vs_last_word_s == pytest.approx(1.8 - first.last_word_s)
    assert near_last_word(first.last_word_s, 2.0) and first.provider_stopped_vs_last_word_s < 0
    assert second.provider_stopped_s == 9.3 and not first.cut and not second.cut


def test_barge_in_and_cleared_buffer_mark_a_cut_beat():
    s = Session(10.0).say(0.5, 3.0)
    events = provider_log(
        ("terminal", 0.4, "r1"),
        ("input_audio_buffer.speech_started", 2.9, None),
        ("output_audio_buffer.cleared", 3.0, "r1"),
    )
    (beat,) = beats(trace_of(s), events, floor=FLOOR, quiet_s=QUIET)
    assert beat.barge_in_s == 2.9 and beat.cleared_s == 3.0 and beat.cut
    assert beat.provider_stopped_s is None and beat.provider_stopped_vs_last_word_s is None


def test_the_visitor_speaking_after_the_beat_ended_is_no_barge_in():
    s = Session(10.0).say(0.5, 1.5)
    events = provider_log(("terminal", 0.4, None), ("input_audio_buffer.speech_started", 8.0, None))
    (beat,) = beats(trace_of(s), events, floor=FLOOR, quiet_s=QUIET)
    assert beat.quiet_declared_s is not None and beat.quiet_declared_s < 8.0
    assert beat.barge_in_s is None and not beat.cut


def test_the_beats_of_a_log_read_as_a_list_would():
    """``beats`` makes a beat without speech in the clock's life when it is read: by index (negative too),
    slice or iteration it is the beat a list of them would hold, however often it is read, and ``heard`` is
    every beat but the unheard, in order."""
    from clock.core.beats import BeatList, heard

    trace = trace_of(Session(6.0).say(1.0, 1.6).say(3.6, 4.1))
    # Superseded at once (several at one time), superseded in silence, heard, and after the recording's end.
    times = sorted([0.9, 0.9, 0.9, 1.2, 1.4, 2.0, 3.3, 3.35, 6.5, 7.0, *(0.02 * i for i in range(30))])
    n = len(times)
    with pytest.warns(SpeechClockWarning, match="after the end of the recording"):
        found = beats(trace, log(*(("terminal", t) for t in times)), floor=FLOOR, quiet_s=QUIET)
    assert isinstance(found, BeatList) and len(found) == n
    every = list(found)
    assert [b.index for b in every] == list(range(n))
    assert every == [found[i] for i in range(n)] == [found[i - n] for i in range(n)] == found[:] == list(found)
    assert found[3:11:2] == every[3:11:2] and found[-3:] == every[-3:]
    with pytest.raises(IndexError):
        found[n]
    with pytest.raises(IndexError):
        found[-n - 1]
    assert heard(found) == [b for b in every if b.outcome != "unheard"]
    assert {b.outcome for b in every} >= {"unheard", "silent"} and found.n_unheard == n - len(heard(found))
