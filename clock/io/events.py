"""Reading event logs (JSON Lines) and Audacity label tracks.

An event log sits beside its recording (``NAME.events.jsonl`` next to
``NAME.webm``) or is given explicitly. Each line is a JSON object with a
``type`` and a time, ``t`` in seconds or ``t_ms`` in milliseconds. If a
``{"type": "recording.started", "t": T0}`` line is present, every time is
taken relative to T0, so a log written with the page's ``performance.now()``
works as it is. Blank lines are skipped; unknown fields are ignored.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

from ..core.events import Event, EventLog, Label, classify
from ..errors import EventLogError, SpeechClockWarning
from .sources import Source, is_file, is_url, name_of, read_text, sibling

__all__ = ["events_path_for", "read_events", "read_labels"]


def events_path_for(recording: Source) -> Path | str | None:
    """The log beside a recording (``x.webm`` -> ``x.events.jsonl``; a URL's beside it), or None."""
    candidate = sibling(recording, Path(name_of(recording)).stem + ".events.jsonl")
    return candidate if is_file(candidate) else None  # type: ignore[return-value]


def _number(record: dict[str, Any], key: str, where: str) -> float | None:
    if key not in record:
        return None
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EventLogError(f"{where}: {key!r} must be a finite number, got {value!r}")
    return float(value)


def _time(record: dict[str, Any], where: str) -> float:
    t = _number(record, "t", where)
    t_ms = _number(record, "t_ms", where)
    if t is not None and t_ms is not None:
        raise EventLogError(f"{where}: give 't' or 't_ms', not both")
    if t is None and t_ms is None:
        raise EventLogError(f"{where}: no time: each line needs 't' (seconds) or 't_ms' (milliseconds)")
    return t if t is not None else t_ms / 1000.0  # type: ignore[operator]


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
    p = path if is_url(path) else Path(path)
    try:
        text = read_text(p)
    except (OSError, UnicodeDecodeError) as err:
        raise EventLogError(f"{p}: cannot read event log ({getattr(err, 'strerror', None) or err})") from None
    parsed: list[tuple[int, dict[str, Any], float]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{p}:{number}"
        try:
            record = _parse_line(line, where)
            t = _time(record, where)
            linger = _number(record, "linger_s", where)
            if linger is not None and linger < 0:
                raise EventLogError(f"{where}: 'linger_s' must be >= 0, got {linger}")
        except EventLogError as err:
            if not lenient:
                raise
            warnings.warn(f"{err} (skipped)", SpeechClockWarning, stacklevel=2)
            continue
        parsed.append((number, record, t))
    starts = [(n, t) for n, r, t in parsed if r["type"] == "recording.started"]
    t0 = starts[0][1] if starts else 0.0
    if len(starts) > 1:
        warnings.warn(
            f"{p}:{starts[1][0]}: a second recording.started; times stay relative to line {starts[0][0]}",
            SpeechClockWarning,
            stacklevel=2,
        )
    events = []
    previous: tuple[int, float] | None = None
    for number, record, t in parsed:
        if record["type"] == "recording.started":
            continue
        if previous is not None and t < previous[1]:
            warnings.warn(
                f"{p}:{number}: time {t - t0:.3f} s is before line {previous[0]} ({previous[1] - t0:.3f} s); "
                "events are taken in time order",
                SpeechClockWarning,
                stacklevel=2,
            )
        previous = (number, t)
        kind = classify(record)
        linger = record.get("linger_s") if kind == "terminal" else None
        events.append(Event(kind, record["type"], t - t0, number, None if linger is None else float(linger)))
    events.sort(key=lambda e: (e.t_s, e.line))
    log = EventLog(tuple(events), str(p))
    if not log.terminals:
        warnings.warn(f"{p}: no terminal response in the log, so no beats", SpeechClockWarning, stacklevel=2)
    return log


def read_labels(path: str | os.PathLike[str]) -> list[Label]:
    """Read an Audacity label track: ``start<TAB>end<TAB>text`` per line.

    Lines starting with a backslash (Audacity's spectral-selection lines) are
    skipped.

    Raises
    ------
    EventLogError
        A line that is not two numbers and a text (names the file and line).
    """
    p = path if is_url(path) else Path(path)
    try:
        text = read_text(p)
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
