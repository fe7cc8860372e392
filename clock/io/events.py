"""Reading event logs (JSON Lines) and Audacity label tracks.

An event log sits beside its recording (``NAME.events.jsonl`` next to
``NAME.webm``) or is given explicitly. Each line is a JSON object with a
``type`` and a time, ``t`` in seconds or ``t_ms`` in milliseconds. If a
``{"type": "recording.started", "t": T0}`` line is present, every time is
taken relative to T0, so a log written with the page's ``performance.now()``
works as it is. If that line also gives the AudioContext ``frame`` of the
recording's first sample and the context's ``sample_rate_hz``, a line with a
``frame`` is placed at ``(frame - start frame) / rate`` exactly (the capture
helpers of docs/capture.js log both). Blank lines are skipped; unknown fields
are ignored.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

from ..core.events import CaptureStart, Event, EventLog, Label, Reading, classify
from ..errors import EventLogError, SpeechClockWarning

__all__ = ["events_path_for", "read_events", "read_labels"]


def events_path_for(recording: str | os.PathLike[str]) -> Path | None:
    """The log beside a recording (``x.webm`` -> ``x.events.jsonl``), or None."""
    p = Path(recording)
    candidate = p.with_name(p.stem + ".events.jsonl")
    return candidate if candidate.is_file() else None


def _number(record: dict[str, Any], key: str, where: str) -> float | None:
    if key not in record:
        return None
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EventLogError(f"{where}: {key!r} must be a finite number, got {value!r}")
    return float(value)


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
            f"whole number, got {record[key]!r}"
        )
    return int(value)


def _response_id(record: dict[str, Any]) -> str | None:
    rid = record.get("response_id")
    if rid is None and record["type"] == "response.done" and isinstance(record.get("response"), dict):
        rid = record["response"].get("id")
    return rid if isinstance(rid, str) else None


def _parse_line(text: str, where: str) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise EventLogError(f"{where}: not valid JSON ({err.msg} at column {err.colno})") from None
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
        A malformed line (the message names the file and line), or a file
        that cannot be read.

    Warns
    -----
    SpeechClockWarning
        Skipped lines (lenient), lines out of time order (they are sorted),
        a second ``recording.started``, a log with no terminal response.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise EventLogError(f"{p}: cannot read event log ({getattr(err, 'strerror', None) or err})") from None
    parsed: list[tuple[int, dict[str, Any], float | None, int | None]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{p}:{number}"
        try:
            record = _parse_line(line, where)
            t = _time(record, where)
            frame = _frame(record, "frame", where)
            if record["type"] == "recording.started":
                _frame(record, "sample_rate_hz", where)
            linger = _number(record, "linger_s", where)
            if linger is not None and linger < 0:
                raise EventLogError(f"{where}: 'linger_s' must be >= 0, got {linger}")
            if record["type"] == "clock.level":
                level = _number(record, "level", where)
                if level is None or level < 0:
                    raise EventLogError(f"{where}: a clock.level line needs 'level', a finite number >= 0")
            if t is None and frame is None and record["type"] != "session":
                raise EventLogError(
                    f"{where}: no time: each line needs 't' (seconds), 't_ms' (milliseconds) or 'frame' "
                    "(AudioContext frames, with a recording.started line that gives 'frame' and 'sample_rate_hz')"
                )
        except EventLogError as err:
            if not lenient:
                raise
            warnings.warn(f"{err} (skipped)", SpeechClockWarning, stacklevel=2)
            continue
        parsed.append((number, record, t, frame))
    starts = [(n, r, t, f) for n, r, t, f in parsed if r["type"] == "recording.started"]
    if len(starts) > 1:
        warnings.warn(
            f"{p}:{starts[1][0]}: a second recording.started; times stay relative to line {starts[0][0]}",
            SpeechClockWarning,
            stacklevel=2,
        )
    start = CaptureStart()
    t0 = 0.0
    if starts:
        _, first, first_t, first_frame = starts[0]
        rate = first.get("sample_rate_hz")
        capture = first.get("capture")
        start = CaptureStart(
            first_frame, None if rate is None else int(rate), capture if isinstance(capture, str) else None
        )
        t0 = first_t if first_t is not None else 0.0
    by_frame = start.frame is not None and start.sample_rate_hz is not None
    events: list[Event] = []
    readings: list[Reading] = []
    session: dict[str, Any] = {}
    previous: tuple[int, float] | None = None
    for number, record, t, frame in parsed:
        kind = record["type"]
        if kind == "recording.started":
            continue
        if kind == "session":
            session.update({k: v for k, v in record.items() if k not in ("type", "t", "t_ms", "frame") and _scalar(v)})
            continue
        if frame is not None and by_frame:
            t_s = (frame - start.frame) / start.sample_rate_hz  # type: ignore[operator]
        elif t is not None:
            t_s = t - t0
        else:
            message = (
                f"{p}:{number}: 'frame' without 't' or 't_ms', and no recording.started line with 'frame' "
                "and 'sample_rate_hz' to place it"
            )
            if not lenient:
                raise EventLogError(message)
            warnings.warn(f"{message} (skipped)", SpeechClockWarning, stacklevel=2)
            continue
        if kind == "clock.level":
            rel = frame - start.frame if frame is not None and by_frame else None  # type: ignore[operator]
            readings.append(Reading(t_s, float(record["level"]), rel, number))
            continue
        if previous is not None and t_s < previous[1]:
            warnings.warn(
                f"{p}:{number}: time {t_s:.3f} s is before line {previous[0]} ({previous[1]:.3f} s); "
                "events are taken in time order",
                SpeechClockWarning,
                stacklevel=2,
            )
        previous = (number, t_s)
        kind = classify(record)
        linger = record.get("linger_s") if kind == "terminal" else None
        events.append(
            Event(kind, record["type"], t_s, number, None if linger is None else float(linger), _response_id(record))
        )
    events.sort(key=lambda e: (e.t_s, e.line))
    readings.sort(key=lambda r: (r.t_s, r.line))
    log = EventLog(tuple(events), str(p), tuple(readings), start if starts else None, session)
    if not log.terminals:
        warnings.warn(f"{p}: no terminal response in the log, so no beats", SpeechClockWarning, stacklevel=2)
    return log


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and not (isinstance(value, float) and not math.isfinite(value))


def read_labels(path: str | os.PathLike[str]) -> list[Label]:
    """Read an Audacity label track: ``start<TAB>end<TAB>text`` per line.

    Lines starting with a backslash (Audacity's spectral-selection lines) are
    skipped.

    Raises
    ------
    EventLogError
        A line that is not two numbers and a text (names the file and line).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise EventLogError(f"{p}: cannot read label track ({getattr(err, 'strerror', None) or err})") from None
    labels = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("\\"):
            continue
        parts = line.split("\t")
        try:
            start, end = float(parts[0]), float(parts[1])
        except (IndexError, ValueError):
            raise EventLogError(f"{p}:{number}: expected 'start<TAB>end<TAB>label'") from None
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise EventLogError(f"{p}:{number}: label end {end} is before its start {start}")
        labels.append(Label(start, end, parts[2] if len(parts) > 2 else ""))
    return labels
