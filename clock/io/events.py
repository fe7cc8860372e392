"""Reading event logs (JSON Lines) and Audacity label tracks.

An event log sits beside its recording (``NAME.events.jsonl`` next to
``NAME.webm``) or is given explicitly. Each line is a JSON object with a
``type`` and a time, ``t`` in seconds or ``t_ms`` in milliseconds. If a
``{"type": "recording.started", "t": T0}`` line is present, every time is
taken relative to T0, so a log written with the page's ``performance.now()``
works as it is. If that line also gives the AudioContext ``frame`` of the
recording's first sample and the context's ``sample_rate_hz``, a line with a
``frame`` is placed at ``(frame - start frame) / rate`` exactly (the capture
helpers of docs/capture.js log both). ``session`` lines carry metadata,
``clock.level`` lines the levels the page's clock read. Blank lines are
skipped; unknown fields are ignored.

Hostile input is bounded: a line is at most :data:`~clock.io.files.MAX_LINE_BYTES`,
JSON nests at most :data:`MAX_JSON_DEPTH` deep, a number has at most 4300
digits (Python's limit), and every time lies within :data:`MAX_TIME_S` of
the recording's start; a FIFO or a device is refused without being opened.
Each violation is one error naming the file and line.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import warnings
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.events import (
    CAUSES,
    CaptureStart,
    Event,
    EventLog,
    Label,
    PageSetting,
    Reading,
    classify,
    one_terminal_per_beat,
)
from ..core.thresholds import LEVEL, RULES, check_rule
from ..errors import EventLogError, InvalidParameterError, SpeechClockWarning
from .files import MAX_EVENT_LOG_BYTES, MAX_EVENT_LOG_LINES, MAX_LABELS_BYTES, MAX_LABELS_LINES, iter_lines
from .sources import Source, is_file, is_url, name_of, sibling

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_TIME_S",
    "events_path_for",
    "read_events",
    "read_labels",
    "warn_milliseconds",
    "warn_outside",
]

#: The event types the reader and the replay use: an overlong line of another type is skipped with a warning.
_READ_TYPES = frozenset(
    {
        "terminal_response",
        "response.done",
        "prompt",
        "arrival",
        "pause",
        "resume",
        "end",
        "clock.quiet",
        "clock.level",
        "recording.started",
        "session",
        "clock.setting",
        "clock.stopped",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
        "input_audio_buffer.speech_started",
    }
)
#: The first ``type`` in a line's first 4 KiB (every helper writes it first).
_TYPE_IN_HEAD = re.compile(r'"type"\s*:\s*"([^"\\]{1,200})"')

#: The deepest nesting of arrays and objects in an event line.
MAX_JSON_DEPTH = 64

#: The largest time, in seconds from the recording's start (about 116 days), of an event or a label.
MAX_TIME_S = 1e7

#: The longest ``linger_s`` (seconds).
MAX_LINGER_S = 3600.0


def events_path_for(recording: Source) -> Path | str | None:
    """The log beside a recording (``x.webm`` -> ``x.events.jsonl``; a URL's beside it), or None."""
    candidate = sibling(recording, Path(name_of(recording)).stem + ".events.jsonl")
    return candidate if is_file(candidate) else None  # type: ignore[return-value]


def _shown(value: Any) -> str:
    """A value for a message, cut short (a line may hold a 4000-digit number)."""
    text = (
        repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"a {len(str(abs(value)))}-digit number"
    )
    return text if len(text) <= 40 else text[:37] + "..."


def _number(record: dict[str, Any], key: str, where: str) -> float | None:
    if key not in record:
        return None
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EventLogError(f"{where}: {key!r} must be a finite number, got {_shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise EventLogError(f"{where}: {key!r} must be a finite number, got {_shown(value)}")
    return number


def _time(record: dict[str, Any], where: str) -> float | None:
    t = _number(record, "t", where)
    t_ms = _number(record, "t_ms", where)
    if t is not None and t_ms is not None:
        raise EventLogError(f"{where}: give 't' or 't_ms', not both")
    return t if t is not None else None if t_ms is None else t_ms / 1000.0


def _frame(record: dict[str, Any], key: str, where: str) -> int | None:
    value = _number(record, key, where)
    if value is None:
        return None
    if value != int(value) or value < 0 or (key == "sample_rate_hz" and value == 0):
        raise EventLogError(
            f"{where}: {key!r} must be a {'positive' if key == 'sample_rate_hz' else 'non-negative'} "
            f"whole number, got {_shown(record[key])}"
        )
    return int(value)


def _response_id(record: dict[str, Any]) -> str | None:
    rid = record.get("response_id")
    if rid is None and record["type"] == "response.done" and isinstance(record.get("response"), dict):
        rid = record["response"].get("id")
    return sys.intern(rid) if isinstance(rid, str) and len(rid) <= 200 else None


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and not (isinstance(value, float) and not math.isfinite(value))


def _too_deep(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _relative(t: float, t0: float, where: str) -> float:
    """``t`` on the recording's timeline (``t - t0``), within :data:`MAX_TIME_S`."""
    relative = t - t0
    if not abs(relative) <= MAX_TIME_S:
        raise EventLogError(
            f"{where}: time {relative:.6g} s is out of range (more than {MAX_TIME_S:g} s from the start)"
        )
    return relative


def _parse_line(text: str, where: str, problem: str | None = None) -> dict[str, Any]:
    if problem is not None:
        raise EventLogError(f"{where}: {problem}")
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise EventLogError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
    except RecursionError:
        raise EventLogError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError:  # a number of more than 4300 digits
        raise EventLogError(f"{where}: a number too long to read (more than 4300 digits)") from None
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _too_deep(record, MAX_JSON_DEPTH):
        raise EventLogError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(record, dict):
        raise EventLogError(f"{where}: each line must be a JSON object, got {type(record).__name__}")
    if not isinstance(record.get("type"), str):
        raise EventLogError(f"{where}: missing or non-string 'type'")
    return record


def read_events(path: str | os.PathLike[str], *, lenient: bool = False) -> EventLog:
    """Read a JSON Lines event log.

    Parameters
    ----------
    path : path-like
    lenient : bool
        Skip malformed lines with a warning instead of raising.

    Returns
    -------
    EventLog
        Events in time order, relative to ``recording.started`` when present.

    Raises
    ------
    EventLogError
        A malformed line or one past the limits (the message names the file
        and line), or a file that cannot be read, is not a regular file or is
        too large.

    Warns
    -----
    SpeechClockWarning
        Skipped lines (lenient: one warning, naming the first and counting
        the rest), lines out of time order (they are sorted; one warning),
        a second ``recording.started``, a log with no terminal response.
    """
    p: Any = path if is_url(path) else Path(path)
    parsed, skipped, overlong = _read_lines(p, lenient)
    start, t0 = _capture_start(parsed, p)
    placed = _Placed()
    for x in parsed:
        placed.add(x, f"{p}:{x.number}", start, t0, lenient, skipped)
    _warn_skipped(overlong, skipped, placed.out_of_order, placed.n_out_of_order)
    events = placed.events
    if placed.out_of_order:  # (in the order of the lines otherwise)
        events.sort(key=lambda e: (e.t_s, e.line))
    events = one_terminal_per_beat(events)
    readings = sorted(placed.readings, key=lambda r: (r.t_s, r.line))
    has_start = bool(parsed.of_type("recording.started"))
    log = EventLog(tuple(events), str(p), tuple(readings), start if has_start else None, placed.session, placed.setting)
    if not log.terminals:
        warnings.warn(f"{p}: no terminal response in the log, so no beats", SpeechClockWarning, stacklevel=2)
    return log


def _read_lines(p: Any, lenient: bool) -> tuple[_Lines, list[tuple[int, str]], list[tuple[str, str]]]:
    """Every line of the log parsed, in columns: per line, what an Event (or a reading, the start, the session)
    needs, not the whole record, so a log of a million short lines stays small.

    Also the malformed lines skipped (``lenient``; else the first raises) and the overlong lines of types the
    clock does not read (a provider's bulky message), skipped.
    """
    parsed = _Lines()
    skipped: list[tuple[int, str]] = []
    lines = iter_lines(
        p, what="event log", error=EventLogError, max_bytes=MAX_EVENT_LOG_BYTES, max_lines=MAX_EVENT_LOG_LINES
    )
    overlong: list[tuple[str, str]] = []
    for number, line, problem in lines:
        if problem is None and not line.strip():
            continue
        where = f"{p}:{number}"
        if problem is not None and problem.startswith("line longer than"):
            type_ = _TYPE_IN_HEAD.search(line)
            if type_ is None or type_.group(1) not in _READ_TYPES:
                # An event the clock does not read (a provider's bulky message): skip it, say so, keep the log.
                overlong.append((where, problem if type_ is None else f"{problem} ({type_.group(1)})"))
                continue
        try:
            parsed.add(_line(_parse_line(line, where, problem), number, where))
        except EventLogError as err:
            if not lenient:
                raise
            skipped.append((number, str(err)))
    return parsed, skipped, overlong


def _capture_start(parsed: _Lines, p: Any) -> tuple[CaptureStart, float]:
    """The capture's start (its first ``recording.started`` line: the frame, rate and capture it gives), and the
    time every ``t`` is taken relative to (0 without one). A second start warns and is ignored."""
    starts = [parsed[i] for i in parsed.of_type("recording.started")]
    if len(starts) > 1:
        warnings.warn(
            f"{p}:{starts[1].number}: a second recording.started; times stay relative to line {starts[0].number}",
            SpeechClockWarning,
            stacklevel=3,
        )
    if not starts:
        return CaptureStart(), 0.0
    first = starts[0]
    rate, capture, written = first.extra if isinstance(first.extra, tuple) else (None, None, None)
    return CaptureStart(first.frame, rate, capture, written), first.t if first.t is not None else 0.0


class _Placed:
    """The log's lines placed in the recording's time: its events, the page's readings, the session's metadata,
    the page's setting, and the first line out of time order (and how many are)."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.readings: list[Reading] = []
        self.session: dict[str, Any] = {}
        self.setting: PageSetting | None = None
        self.previous: tuple[int, float] | None = None
        self.out_of_order, self.n_out_of_order = "", 0

    def add(
        self, x: _Line, where: str, start: CaptureStart, t0: float, lenient: bool, skipped: list[tuple[int, str]]
    ) -> None:
        """Place one line: metadata kept, a reading or an event at its time (a line that cannot be placed is
        skipped when ``lenient``, else raises)."""
        if x.type == "recording.started":
            return
        if x.type == "session":
            self.session.update(x.extra)  # type: ignore[arg-type]
            return
        if x.type == "clock.setting":
            self.setting = self.setting or x.extra  # the first: what the page started with
            return
        try:
            t = _time_of(x, where, start, t0)
        except EventLogError as err:
            if not lenient:
                raise
            skipped.append((x.number, str(err)))
            return
        if x.type == "clock.level":
            by_frame = start.frame is not None and start.sample_rate_hz is not None
            frame = x.frame - start.frame if x.frame is not None and by_frame else None  # type: ignore[operator]
            self.readings.append(Reading(t, x.extra, frame, x.number))  # type: ignore[arg-type]
            return
        if self.previous is not None and t < self.previous[1]:
            if not self.out_of_order:
                self.out_of_order = (
                    f"{where}: time {t:.3f} s is before line {self.previous[0]} ({self.previous[1]:.3f} s); "
                    "events are taken in time order"
                )
            self.n_out_of_order += 1
        self.previous = (x.number, t)
        cause = x.extra if x.kind in ("prompt", "end") else None
        self.events.append(Event(x.kind, x.type, t, x.number, x.linger, x.response_id, cause))


def _time_of(x: _Line, where: str, start: CaptureStart, t0: float) -> float:
    """A line's time in the recording: its frame over the rate where the start gives both, else its ``t``
    relative to the start's."""
    if x.frame is not None and start.frame is not None and start.sample_rate_hz is not None:
        return _relative((x.frame - start.frame) / start.sample_rate_hz, 0.0, where)
    if x.t is not None:
        return _relative(x.t, t0, where)
    raise EventLogError(
        f"{where}: 'frame' without 't' or 't_ms', and no recording.started line with 'frame' "
        "and 'sample_rate_hz' to place it"
    )


def _warn_skipped(
    overlong: list[tuple[str, str]], skipped: list[tuple[int, str]], out_of_order: str, n_out_of_order: int
) -> None:
    """One warning each: the overlong lines of types the clock does not read, the malformed lines skipped, and
    the lines out of time order (each naming the first, counting the rest)."""
    if overlong:
        more = f"; {len(overlong) - 1} more skipped" if len(overlong) > 1 else ""
        warnings.warn(
            f"{overlong[0][0]}: {overlong[0][1]}, an event type speech-clock does not read: skipped{more}",
            SpeechClockWarning,
            stacklevel=3,
        )
    if skipped:
        first_skip = min(skipped)[1]
        more = f"; {len(skipped) - 1} more malformed line{'s' * (len(skipped) > 2)} skipped" if len(skipped) > 1 else ""
        warnings.warn(f"{first_skip} (skipped){more}", SpeechClockWarning, stacklevel=3)
    if out_of_order:
        more = f" ({n_out_of_order} lines out of order)" if n_out_of_order > 1 else ""
        warnings.warn(out_of_order + more, SpeechClockWarning, stacklevel=3)


class _Lines:
    """The lines read, column by column: a number, a time, a frame, a linger and a response id per line (the
    kinds and types as codes), and the rare extra of a few types by line."""

    def __init__(self) -> None:
        self.number, self.t, self.linger = array("q"), array("d"), array("d")
        self.kind, self.type = array("q"), array("q")
        self.frame: list[int | None] = []
        self.response_id: list[str | None] = []
        self.extra: dict[int, Any] = {}
        self.names: list[str] = []
        self.codes: dict[str, int] = {}

    def _code(self, name: str) -> int:
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = len(self.names)
            self.names.append(name)
        return code

    def add(self, x: _Line) -> None:
        if x.extra is not None:
            self.extra[len(self.number)] = x.extra
        self.number.append(x.number)
        self.t.append(math.nan if x.t is None else x.t)
        self.linger.append(math.nan if x.linger is None else x.linger)
        self.kind.append(self._code(x.kind))
        self.type.append(self._code(x.type))
        self.frame.append(x.frame)
        self.response_id.append(x.response_id)

    def __len__(self) -> int:
        return len(self.number)

    def __getitem__(self, i: int) -> _Line:
        t, linger = self.t[i], self.linger[i]
        return _Line(
            self.number[i], self.names[self.kind[i]], self.names[self.type[i]], None if t != t else t,
            self.frame[i], None if linger != linger else linger, self.response_id[i], self.extra.get(i),
        )  # fmt: skip

    def __iter__(self) -> Iterator[_Line]:
        return (self[i] for i in range(len(self)))

    def of_type(self, type_: str) -> list[int]:
        """The lines of one type."""
        code = self.codes.get(type_)
        return [] if code is None else [i for i, c in enumerate(self.type) if c == code]


@dataclass(frozen=True, slots=True)
class _Line:
    """What one log line holds for the tool."""

    number: int
    kind: str
    type: str
    t: float | None
    frame: int | None
    linger: float | None
    response_id: str | None
    extra: Any  # the level of a clock.level, the (rate, capture, format) of recording.started, a session's fields


def _page_setting(record: dict[str, Any], where: str) -> PageSetting:
    """A ``clock.setting`` line (what speechclock.js ran with), checked."""

    def positive(key: str, *, none: float | None = None) -> float:
        if record.get(key, 0) is None and none is not None:
            return none
        value = _number(record, key, where)
        if value is None or value <= 0:
            raise EventLogError(f"{where}: a clock.setting line needs {key!r}, a number > 0")
        return value

    tick = record.get("tick_s")
    fft = record.get("fft_size")
    path = record.get("path")
    if not (isinstance(tick, str) and 0 < len(tick) <= 64) and not (
        _scalar(tick) and not isinstance(tick, (bool, str))
    ):
        raise EventLogError(f"{where}: a clock.setting line needs 'tick_s', seconds or a ratio such as \"1/60\"")
    if isinstance(fft, bool) or not isinstance(fft, int) or not 32 <= fft <= 32768 or fft & (fft - 1):
        raise EventLogError(f"{where}: a clock.setting line needs 'fft_size', a power of two from 32 to 32768")
    if path is not None and path not in ("worklet", "poll"):
        raise EventLogError(
            f'{where}: a clock.setting line\'s \'path\' must be "worklet" or "poll", got {_shown(path)}'
        )
    rule = record.get("rule", LEVEL)
    if rule not in RULES:
        raise EventLogError(
            f"{where}: a clock.setting line's 'rule' must be one of {', '.join(RULES)}, got {_shown(rule)}"
        )
    hangover = None if record.get("hangover_s") is None else _number(record, "hangover_s", where)
    try:
        check_rule(rule, hangover)
    except InvalidParameterError as err:
        raise EventLogError(f"{where}: a clock.setting line's 'hangover_s': {err}") from None
    return PageSetting(
        positive("floor"),
        positive("quiet_s"),
        positive("onset_timeout_s", none=math.inf),
        str(tick),
        fft,
        path,
        rule,
        hangover,
    )


def _line(record: dict[str, Any], number: int, where: str) -> _Line:
    """Check one parsed line and keep what the tool uses of it."""
    type_ = record["type"]
    t = _time(record, where)
    frame = _frame(record, "frame", where)
    linger = _number(record, "linger_s", where)
    if linger is not None and not 0 <= linger <= MAX_LINGER_S:
        raise EventLogError(f"{where}: 'linger_s' must be >= 0 and <= {MAX_LINGER_S:g} s, got {linger}")
    extra: Any = None
    if type_ == "recording.started":
        capture, written = record.get("capture"), record.get("format")
        extra = (
            _frame(record, "sample_rate_hz", where),
            sys.intern(capture) if isinstance(capture, str) else None,
            sys.intern(written) if isinstance(written, str) else None,
        )
    elif type_ == "session":
        extra = {k: v for k, v in record.items() if k not in ("type", "t", "t_ms", "frame") and _scalar(v)}
    elif type_ == "clock.setting":
        extra = _page_setting(record, where)
    elif type_ in ("prompt", "end") and "cause" in record:
        extra = record["cause"]
        if extra not in CAUSES:
            raise EventLogError(f"{where}: 'cause' must be one of {', '.join(map(repr, CAUSES))}, got {_shown(extra)}")
        extra = sys.intern(extra)
    elif type_ == "clock.level":
        extra = _number(record, "level", where)
        if extra is None or extra < 0:
            raise EventLogError(f"{where}: a clock.level line needs 'level', a finite number >= 0")
    if t is None and frame is None and type_ != "session":
        raise EventLogError(
            f"{where}: no time: each line needs 't' (seconds), 't_ms' (milliseconds) or 'frame' "
            "(AudioContext frames, with a recording.started line that gives 'frame' and 'sample_rate_hz')"
        )
    kind = classify(record)
    return _Line(
        number,
        sys.intern(kind),
        sys.intern(type_),
        t,
        frame,
        linger if kind == "terminal" else None,
        _response_id(record),
        extra,
    )


def read_labels(path: str | os.PathLike[str], *, duration_s: float | None = None) -> list[Label]:
    """Read an Audacity label track: ``start<TAB>end<TAB>text`` per line.

    Lines starting with a backslash (Audacity's spectral-selection lines) are
    skipped. Times must be finite and within :data:`MAX_TIME_S`.

    Parameters
    ----------
    path : path-like
    duration_s : float, optional
        The recording's length: labels that start before 0 or end after it
        are kept, with one warning per track.

    Raises
    ------
    EventLogError
        A line that is not two finite numbers and a text, or a label that
        ends before it starts (names the file and line); a file that cannot
        be read, is not a regular file, or is too large.

    Warns
    -----
    SpeechClockWarning
        Labels outside the recording (once per track, naming the first).
    """
    p: Any = path if is_url(path) else Path(path)
    labels = []
    lines = iter_lines(
        p, what="label track", error=EventLogError, max_bytes=MAX_LABELS_BYTES, max_lines=MAX_LABELS_LINES
    )
    for number, line, problem in lines:
        if problem is not None:
            raise EventLogError(f"{p}:{number}: {problem}")
        if not line.strip() or line.startswith("\\"):
            continue
        parts = line.split("\t")
        try:
            start, end = float(parts[0]), float(parts[1])
        except (IndexError, ValueError):
            raise EventLogError(f"{p}:{number}: expected 'start<TAB>end<TAB>label'") from None
        if not (math.isfinite(start) and math.isfinite(end)):
            raise EventLogError(
                f"{p}:{number}: label times must be finite numbers, got {_shown(start)} and {_shown(end)}"
            )
        if not (abs(start) <= MAX_TIME_S and abs(end) <= MAX_TIME_S):
            raise EventLogError(f"{p}:{number}: label time out of range (more than {MAX_TIME_S:g} s)")
        if end < start:
            raise EventLogError(f"{p}:{number}: label end {end} is before its start {start}")
        labels.append(Label(start, end, parts[2] if len(parts) > 2 else ""))
    if duration_s is not None:
        warn_outside(labels, duration_s, str(p))
    return labels


def warn_outside(labels: list[Label], duration_s: float, source: str) -> None:
    """Warn once if labels start before 0 or end after the recording (they are kept)."""
    outside = [lab for lab in labels if lab.start_s < 0 or lab.end_s > duration_s]
    if outside:
        first = outside[0]
        more = f" ({len(outside)} labels in all)" if len(outside) > 1 else ""
        warnings.warn(
            f"{source}: label {first.start_s:g} to {first.end_s:g} s lies outside the recording "
            f"(0 to {duration_s:.3f} s){more}",
            SpeechClockWarning,
            stacklevel=2,
        )


def warn_milliseconds(log: EventLog | None, duration_s: float) -> bool:
    """Warn once when a log's times look like milliseconds: events lie past the recording's end, and every one
    would lie inside it were its time in milliseconds (``t`` where ``t_ms`` was meant). Returns whether it warned."""
    if log is None or not log.events or duration_s <= 0:
        return False
    times = [e.t_s for e in log.events]
    late = sum(t > duration_s for t in times)
    if not late or not all(0 <= t / 1000.0 <= duration_s for t in times):
        return False
    where = log.source or "event log"
    warnings.warn(
        f"{where}: its times look like milliseconds ({late} of {len(times)} events lie after the recording's end at "
        f"{duration_s:.3f} s, the latest at {max(times):g}; in milliseconds all would lie inside it): write seconds "
        "under 't', or milliseconds under 't_ms'",
        SpeechClockWarning,
        stacklevel=2,
    )
    return True
