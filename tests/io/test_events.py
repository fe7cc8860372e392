"""Reading event logs and label tracks."""

from __future__ import annotations

import json

import pytest

from clock.errors import EventLogError, SpeechClockWarning
from clock.io.events import events_path_for, read_events, read_labels


def write(tmp_path, *lines, name="rec.events.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_kinds_times_and_unknown_types(tmp_path):
    path = write(
        tmp_path,
        {"type": "prompt", "t": 0.5},
        {"type": "terminal_response", "t_ms": 1250, "linger_s": 2, "extra": "ignored"},
        {"type": "response.done", "t": 3.0, "response": {"output": [{"type": "function_call"}]}},
        {"type": "response.done", "t": 4.0, "response": {"output": [{"type": "message"}]}},
        {"type": "pause", "t": 5},
        {"type": "resume", "t": 6},
        {"type": "end", "t": 7},
        {"type": "arrival", "t": 8},
        {"type": "clock.quiet", "t": 9},
        {"type": "camera.moved", "t": 10},
        "",
    )
    log = read_events(path)
    assert [(e.kind, e.t_s) for e in log.events] == [
        ("prompt", 0.5),
        ("terminal", 1.25),
        ("tool_call", 3.0),
        ("response.done", 4.0),  # (the log has terminal_response lines: they are its beats)
        ("pause", 5.0),
        ("resume", 6.0),
        ("end", 7.0),
        ("arrival", 8.0),
        ("clock.quiet", 9.0),
        ("camera.moved", 10.0),
    ]
    assert log.terminals[0].linger_s == 2.0 and log.terminals[0].line == 2
    assert log.source == str(path)


def test_times_are_relative_to_recording_started(tmp_path):
    path = write(
        tmp_path, {"type": "recording.started", "t_ms": 81234.5}, {"type": "terminal_response", "t_ms": 83234.5}
    )
    assert [e.t_s for e in read_events(path).events] == [2.0]


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", "rec.events.jsonl:2: not valid JSON"),
        ("[1, 2]", "rec.events.jsonl:2: each line must be a JSON object"),
        ('{"t": 1}', "rec.events.jsonl:2: missing or non-string 'type'"),
        ('{"type": "prompt"}', "rec.events.jsonl:2: no time"),
        ('{"type": "prompt", "t": "soon"}', "rec.events.jsonl:2: 't' must be a finite number"),
        ('{"type": "prompt", "t": 1, "t_ms": 1000}', "rec.events.jsonl:2: give 't' or 't_ms', not both"),
        ('{"type": "terminal_response", "t": 1, "linger_s": -1}', "rec.events.jsonl:2: 'linger_s' must be >= 0"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    path = write(tmp_path, {"type": "terminal_response", "t": 0.5}, line)
    with pytest.raises(EventLogError, match=message.replace("(", r"\(")):
        read_events(path)


def test_lenient_skips_malformed_lines_with_a_warning(tmp_path):
    path = write(tmp_path, "{bad", {"type": "terminal_response", "t": 1})
    with pytest.warns(SpeechClockWarning, match=r"rec.events.jsonl:1: not valid JSON.*\(skipped\)"):
        log = read_events(path, lenient=True)
    assert len(log.events) == 1


def test_out_of_order_times_warn_and_are_sorted(tmp_path):
    path = write(tmp_path, {"type": "terminal_response", "t": 5}, {"type": "prompt", "t": 1})
    with pytest.warns(SpeechClockWarning, match=r"rec.events.jsonl:2: time 1.000 s is before line 1"):
        log = read_events(path)
    assert [e.kind for e in log.events] == ["prompt", "terminal"]


def test_a_log_without_terminal_response_warns(tmp_path):
    with pytest.warns(SpeechClockWarning, match="no terminal response"):
        assert read_events(write(tmp_path, {"type": "prompt", "t": 1})).terminals == ()


def test_unreadable_log(tmp_path):
    with pytest.raises(EventLogError, match="cannot read event log"):
        read_events(tmp_path / "missing.jsonl")


def test_log_is_found_beside_the_recording(tmp_path):
    (tmp_path / "tour.webm").write_bytes(b"x")
    assert events_path_for(tmp_path / "tour.webm") is None
    write(tmp_path, {"type": "prompt", "t": 1}, name="tour.events.jsonl")
    assert events_path_for(tmp_path / "tour.webm") == tmp_path / "tour.events.jsonl"


def test_labels(tmp_path):
    path = tmp_path / "l.txt"
    path.write_text("0.5\t1.5\thello\n\\\t100\t200\n2\t3\n")
    labels = read_labels(path)
    assert [(lab.start_s, lab.end_s, lab.text) for lab in labels] == [(0.5, 1.5, "hello"), (2.0, 3.0, "")]
    path.write_text("0.5 1.5 hello\n")
    with pytest.raises(EventLogError, match="l.txt:1: expected"):
        read_labels(path)


# --- capture helpers' lines: frames, readings, session metadata, provider signals


def test_frames_place_lines_exactly_on_the_recordings_timeline(tmp_path):
    path = write(
        tmp_path,
        {"type": "session", "voice": "alloy", "model": "gpt-realtime", "page_version": "1.4", "nested": {"x": 1}},
        {"type": "recording.started", "t_ms": 1000.0, "frame": 96000, "sample_rate_hz": 48000, "capture": "worklet"},
        {"type": "terminal_response", "t_ms": 1500.0, "frame": 120064},
        {"type": "clock.level", "t_ms": 1510.0, "frame": 120576, "level": 0.25},
        {"type": "prompt", "t_ms": 3000.0},  # no frame: by t_ms
        {"type": "clock.quiet", "frame": 200064},  # a frame alone is a time
    )
    log = read_events(path)
    assert log.start is not None and log.start.exact and log.start.frame == 96000
    assert [(e.kind, e.t_s) for e in log.events] == [
        ("terminal", 24064 / 48000),
        ("prompt", 2.0),
        ("clock.quiet", 104064 / 48000),
    ]
    (reading,) = log.readings
    assert reading.frame == 24576 and reading.t_s == 24576 / 48000 and reading.level == 0.25
    assert log.session == {"voice": "alloy", "model": "gpt-realtime", "page_version": "1.4"}
    shifted = log.shifted(-0.01)
    assert shifted.readings[0].frame == 24576 - 480 and shifted.events[0].t_s == pytest.approx(24064 / 48000 - 0.01)


def test_a_recorder_start_is_not_exact(tmp_path):
    path = write(
        tmp_path,
        {"type": "recording.started", "t_ms": 5.0, "frame": 1024, "sample_rate_hz": 48000, "capture": "recorder"},
        {"type": "terminal_response", "t_ms": 10.0},
    )
    assert not read_events(path).start.exact


@pytest.mark.parametrize(
    "line,match",
    [
        ({"type": "clock.level", "t": 1}, "needs 'level'"),
        ({"type": "clock.level", "t": 1, "level": -0.1}, "needs 'level'"),
        ({"type": "prompt", "t": 1, "frame": 1.5}, "'frame' must be a non-negative whole number"),
        ({"type": "prompt", "t": 1, "frame": -128}, "'frame' must be a non-negative whole number"),
        ({"type": "recording.started", "t": 0, "sample_rate_hz": 0}, "'sample_rate_hz' must be a positive"),
        ({"type": "prompt", "frame": 128}, "no recording.started line with 'frame'"),
        ({"type": "prompt"}, "no time"),
    ],
)
def test_bad_capture_lines_name_the_file_and_line(tmp_path, line, match):
    path = write(tmp_path, {"type": "terminal_response", "t": 0}, line)
    with pytest.raises(EventLogError, match=f"rec.events.jsonl:2: .*{match}"):
        read_events(path)


def test_provider_signals_keep_their_kind_and_response_id(tmp_path):
    path = write(
        tmp_path,
        {"type": "response.done", "t": 1.0, "response": {"id": "resp_9", "output": [{"type": "message"}]}},
        {"type": "output_audio_buffer.started", "t": 1.1, "response_id": "resp_9"},
        {"type": "input_audio_buffer.speech_started", "t": 1.5, "item_id": "item_1"},
        {"type": "output_audio_buffer.cleared", "t": 1.6, "response_id": "resp_9"},
        {"type": "output_audio_buffer.stopped", "t": 2.0, "response_id": 7},
    )
    log = read_events(path)
    assert [(e.kind, e.response_id) for e in log.events] == [
        ("terminal", "resp_9"),
        ("output_audio_buffer.started", "resp_9"),
        ("input_audio_buffer.speech_started", None),
        ("output_audio_buffer.cleared", "resp_9"),
        ("output_audio_buffer.stopped", None),  # not a string: no id
    ]


def test_a_log_with_both_kinds_of_terminal_line_takes_one_beat_from_each_pair(tmp_path):
    # docs/clock.md's Realtime page logs the provider's response.done (capture.logRealtime) and then tells its
    # clock, which logs terminal_response: one beat each, named by the response.done before it; a tool-call step
    # stays a step, and a terminal_response with its own id keeps it.
    path = write(
        tmp_path,
        {"type": "response.done", "t": 1.0, "response": {"id": "resp_1", "output": [{"type": "message"}]}},
        {"type": "terminal_response", "t": 1.0, "linger_s": 1.0},
        {"type": "response.done", "t": 5.0, "response": {"id": "resp_2", "output": [{"type": "function_call"}]}},
        {"type": "response.done", "t": 9.0, "response": {"id": "resp_3", "output": []}},
        {"type": "terminal_response", "t": 9.01},
        {"type": "response.done", "t": 12.0, "response": {"id": "resp_4", "output": []}},
        {"type": "terminal_response", "t": 12.0, "response_id": "mine"},
    )
    log = read_events(path)
    assert [(e.t_s, e.linger_s, e.response_id) for e in log.terminals] == [
        (1.0, 1.0, "resp_1"),
        (9.01, None, "resp_3"),
        (12.0, None, "mine"),
    ]
    assert [e.kind for e in log.events] == ["response.done", "terminal", "tool_call"] + [
        "response.done",
        "terminal",
    ] * 2
    # A log with only one kind keeps every line of it as a beat.
    only = write(tmp_path, *[{"type": "response.done", "t": t, "response": {"output": []}} for t in (1, 2)], name="b")
    assert [e.t_s for e in read_events(only).terminals] == [1.0, 2.0]


def test_a_clock_setting_line_says_what_the_page_ran(tmp_path):
    setting = {"type": "clock.setting", "t": 0.0, "floor": 0.0032, "quiet_s": 2.5, "onset_timeout_s": None}
    setting |= {"tick_s": "1/60", "fft_size": 2048, "path": "worklet", "clock_version": 2}
    later = setting | {"floor": 0.01}  # only the first counts: the setting the page started with
    lines = [setting, {"type": "terminal_response", "t": 1.0}, later]
    path = tmp_path / "a.events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    log = read_events(path)
    assert log.setting is not None
    assert (log.setting.floor, log.setting.quiet_s, log.setting.onset_timeout_s) == (0.0032, 2.5, float("inf"))
    assert (log.setting.tick_s, log.setting.fft_size, log.setting.path) == ("1/60", 2048, "worklet")
    assert [e.kind for e in log.events] == ["terminal"]  # not an event
    without = tmp_path / "b.events.jsonl"
    without.write_text(json.dumps({"type": "terminal_response", "t": 1.0}) + "\n")
    assert read_events(without).setting is None
    assert (log.setting.rule, log.setting.hangover_s) == ("level", None)  # a line that names no rule: the level clock
    ruled = tmp_path / "c.events.jsonl"
    ruled.write_text(
        "".join(json.dumps(e) + "\n" for e in [setting | {"rule": "level+stopped", "hangover_s": 0.35}, *lines[1:]])
    )
    said = read_events(ruled).setting
    assert said is not None and (said.rule, said.hangover_s) == ("level+stopped", 0.35)


def test_the_clock_s_own_stopped_lines_are_what_a_rule_acts_on(tmp_path):
    """speechclock.js logs ``clock.stopped`` at the time it applied the provider's event; where a log has any, those
    are the events a rule acts on, not the provider's ``output_audio_buffer.stopped`` as the page received it."""
    lines = [
        {"type": "terminal_response", "t": 1.0},
        {"type": "output_audio_buffer.stopped", "t": 2.0},
        {"type": "clock.stopped", "t": 2.01},
    ]
    path = tmp_path / "a.events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    assert read_events(path).stop_kind == "clock.stopped"
    path.write_text("".join(json.dumps(e) + "\n" for e in lines[:2]))
    assert read_events(path).stop_kind == "output_audio_buffer.stopped"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"floor": 0}, "'floor', a number > 0"),
        ({"quiet_s": "2.5"}, "'quiet_s' must be a finite number"),
        ({"fft_size": 2048.5}, "'fft_size', a power of two"),
        ({"fft_size": 1000}, "'fft_size', a power of two"),
        ({"path": "timer"}, "'path' must be"),
        ({"rule": "stopped-ish"}, "'rule' must be one of level, stopped\\+quiet, stopped, level\\+stopped"),
        ({"rule": "level+stopped"}, "'hangover_s': rule level\\+stopped needs hangover_s"),
        ({"rule": "stopped+quiet", "hangover_s": -1}, "'hangover_s': rule stopped\\+quiet needs hangover_s"),
        ({"rule": "stopped", "hangover_s": 0.3}, "'hangover_s': rule stopped takes no hangover_s"),
        ({"rule": "level+stopped", "hangover_s": "0.3"}, "'hangover_s' must be a finite number"),
    ],
)
def test_a_bad_clock_setting_line_names_the_file_line_and_field(tmp_path, change, message):
    setting = {"type": "clock.setting", "t": 0.0, "floor": 0.003, "quiet_s": 2.5, "onset_timeout_s": 10}
    setting |= {"tick_s": "1/60", "fft_size": 2048, "path": "poll"} | change
    path = tmp_path / "a.events.jsonl"
    path.write_text(json.dumps(setting) + "\n" + json.dumps({"type": "terminal_response", "t": 1.0}) + "\n")
    with pytest.raises(EventLogError, match=f"a.events.jsonl:1: .*{message}"):
        read_events(path)


def test_a_prompt_or_end_says_who_caused_it_and_a_bad_cause_names_the_line(tmp_path):
    from clock.io.events import read_events

    path = tmp_path / "a.events.jsonl"
    path.write_text(
        '{"type": "terminal_response", "t": 1}\n{"type": "clock.quiet", "t": 4}\n'
        '{"type": "prompt", "t": 4.5, "cause": "page"}\n{"type": "terminal_response", "t": 6}\n'
        '{"type": "end", "t": 7, "cause": "visitor"}\n'
    )
    log = read_events(path)
    assert [(e.kind, e.cause) for e in log.of_kind("prompt", "end")] == [("prompt", "page"), ("end", "visitor")]
    assert log.causes_from == "logged"
    path.write_text('{"type": "terminal_response", "t": 1}\n{"type": "end", "t": 7, "cause": "me"}\n')
    with pytest.raises(EventLogError, match=r"a\.events\.jsonl:2: 'cause' must be one of 'page', 'visitor'"):
        read_events(path)
