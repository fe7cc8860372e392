"""Events of a voice-guide session, on the audio timeline (pure data, no file access).

The kinds the tool understands (``Event.kind``):

``terminal``
    The backend's terminal response arrived: a ``terminal_response`` line, or
    an OpenAI Realtime ``response.done`` with no ``function_call`` output item.
    Opens a beat. May carry ``linger_s``.
``tool_call``
    A ``response.done`` with a ``function_call`` output item: a step, not the end.
``prompt``, ``arrival``, ``pause``, ``resume``, ``end``
    The page prompted the backend; a stop's arrival receipt; the clock is
    paused, resumed; the beat is aborted.
``clock.quiet``
    The page's own clock declared the beat quiet.

Any other type is kept with its own name as kind, and otherwise ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["KNOWN_KINDS", "Event", "EventLog", "Label", "classify"]

KNOWN_KINDS = ("terminal", "tool_call", "prompt", "arrival", "pause", "resume", "end", "clock.quiet")


@dataclass(frozen=True, slots=True)
class Event:
    """One logged event.

    Attributes
    ----------
    kind : str
        Normalised kind (see the module notes).
    type : str
        The ``type`` as logged.
    t_s : float
        Seconds on the audio timeline (0 = the first sample).
    line : int or None
        Line number in the log (1-based), for messages.
    linger_s : float or None
        For ``terminal``: seconds the backend asked to linger after the words.
    """

    kind: str
    type: str
    t_s: float
    line: int | None = None
    linger_s: float | None = None


@dataclass(frozen=True, slots=True)
class EventLog:
    """The events of one recording, in time order.

    Attributes
    ----------
    events : tuple of Event
    source : str or None
        The file they were read from.
    """

    events: tuple[Event, ...]
    source: str | None = None

    def of_kind(self, *kinds: str) -> tuple[Event, ...]:
        """The events of the given kinds, in time order."""
        return tuple(e for e in self.events if e.kind in kinds)

    @property
    def terminals(self) -> tuple[Event, ...]:
        """The terminal responses (each opens a beat)."""
        return self.of_kind("terminal")


def classify(record: dict[str, Any]) -> str:
    """The kind of a logged record (its ``type`` has been checked to be a string)."""
    kind = record["type"]
    if kind == "terminal_response":
        return "terminal"
    if kind == "response.done":
        response = record.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        items = output if isinstance(output, list) else []
        calls = any(isinstance(item, dict) and item.get("type") == "function_call" for item in items)
        return "tool_call" if calls else "terminal"
    return kind


@dataclass(frozen=True, slots=True)
class Label:
    """A ground-truth span from an Audacity label track."""

    start_s: float
    end_s: float
    text: str = ""
