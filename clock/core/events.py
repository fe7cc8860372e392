"""Events of a voice-guide session, on the audio timeline (pure data, no file access).

The kinds the tool understands (``Event.kind``):

``terminal``
    The backend's terminal response arrived: a ``terminal_response`` line, or
    an OpenAI Realtime ``response.done`` with no ``function_call`` output item.
    Opens a beat. May carry ``linger_s``. A log with any ``terminal_response``
    line takes those as its beats (``speechclock.js`` logs one each time the
    page tells it a terminal response, often right after logging the
    provider's ``response.done``): its ``response.done`` lines then open no
    beat (kind ``response.done``) and only name the response of the next
    ``terminal_response`` that names none (:func:`one_terminal_per_beat`).
``tool_call``
    A ``response.done`` with a ``function_call`` output item: a step, not the end.
``prompt``, ``arrival``, ``pause``, ``resume``, ``end``
    The page prompted the backend; a stop's arrival receipt; the clock is
    paused, resumed; the beat is aborted.
``clock.quiet``
    The page's own clock declared the beat quiet.
``output_audio_buffer.started``, ``output_audio_buffer.stopped``, ``output_audio_buffer.cleared``
    OpenAI Realtime: the server began sending a response's audio, its output
    buffer drained, or it was cut (a barge-in, or the client cleared it).
``input_audio_buffer.speech_started``
    OpenAI Realtime: the server heard the visitor start speaking (a barge-in
    while the guide talks).

Any other type is kept with its own name as kind, and otherwise ignored.

Three kinds of line are not events: ``recording.started`` (the timeline's
origin, :class:`CaptureStart`), ``session`` (metadata such as voice and
model, :attr:`EventLog.session`) and ``clock.level`` (a level the page's
clock read, :class:`Reading`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "CAUSES",
    "KNOWN_KINDS",
    "PROVIDER_KINDS",
    "CaptureStart",
    "Event",
    "EventLog",
    "Label",
    "PageSetting",
    "Reading",
    "classify",
    "one_terminal_per_beat",
]

#: OpenAI Realtime's own signals about the guide's audio and the visitor's speech.
PROVIDER_KINDS = (
    "output_audio_buffer.started",
    "output_audio_buffer.stopped",
    "output_audio_buffer.cleared",
    "input_audio_buffer.speech_started",
)

#: Who issued a ``prompt`` or ``end`` (:attr:`Event.cause`).
CAUSES = ("page", "visitor")

KNOWN_KINDS = ("terminal", "tool_call", "prompt", "arrival", "pause", "resume", "end", "clock.quiet", *PROVIDER_KINDS)


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
    response_id : str or None
        The provider's response the event belongs to (``response_id``, or a
        ``response.done``'s ``response.id``).
    cause : str or None
        For a ``prompt`` or ``end``: who issued it, as the page logged it
        (:data:`CAUSES`: ``"page"``, after its own clock declared the beat
        quiet; ``"visitor"``, the visitor's barge-in, End or question);
        None where the log does not say (:mod:`clock.core.causes` infers it).
    """

    kind: str
    type: str
    t_s: float
    line: int | None = None
    linger_s: float | None = None
    response_id: str | None = None
    cause: str | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """A level the page's clock read from its analyser (a ``clock.level`` line).

    Attributes
    ----------
    t_s : float
        Seconds on the audio timeline.
    level : float
    frame : int or None
        The recording frame the read belongs to (the end of the analyser's
        window), when the log gives context frames for it and for the
        recording's start; otherwise None (then ``t_s`` places it).
    line : int or None
    """

    t_s: float
    level: float
    frame: int | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class CaptureStart:
    """What a log's ``recording.started`` line says about the recording's first sample.

    Attributes
    ----------
    frame : int or None
        The AudioContext frame of the recording's first sample.
    sample_rate_hz : int or None
        The AudioContext's rate (frames per second of ``frame``).
    capture : str or None
        ``"worklet"`` (an AudioWorklet on the analyser's source node: the
        frame is exact) or ``"recorder"`` (MediaRecorder: the frame is when
        the page saw it start, before its start-up latency).
    format : str or None
        What the capture wrote (``"float32"`` or ``"int16"``, as logged).
    """

    frame: int | None = None
    sample_rate_hz: int | None = None
    capture: str | None = None
    format: str | None = None

    @property
    def webrtc_int16(self) -> bool:
        """The recording holds 16-bit samples that invert Chromium's int16-to-float rule.

        docs/capture.js's lossless capture in ``"int16"`` format writes each
        float ``x`` the analyser heard as ``round(x * 32768)`` below zero and
        ``round(x * 32767)`` above, so the floats come back exactly by
        Chromium's rule (:func:`clock.io.decode.webrtc_int16_to_float32`),
        not by ``v / 32768``.
        """
        return self.capture == "worklet" and self.format == "int16"

    @property
    def exact(self) -> bool:
        """The recording's first sample is known to the frame."""
        return self.capture == "worklet" and self.frame is not None and self.sample_rate_hz is not None


@dataclass(frozen=True, slots=True)
class PageSetting:
    """What the page's clock ran with, as its ``clock.setting`` line says (``speechclock.js`` writes it).

    Attributes
    ----------
    floor, quiet_s, onset_timeout_s : float
        ``onset_timeout_s`` is ``inf`` where the page waited forever (``null`` in the log).
    tick_s : str
        The tick period as the page wrote it (``"1/60"``).
    fft_size : int
    path : str or None
        ``"worklet"`` (decided on the audio thread) or ``"poll"`` (polled the analyser).
    rule : str
        The rule that ended beats (:data:`clock.core.thresholds.RULES`; ``"level"`` where the line names none).
    hangover_s : float or None
        Its hangover (:func:`clock.core.thresholds.check_rule`).
    """

    floor: float
    quiet_s: float
    onset_timeout_s: float
    tick_s: str
    fft_size: int
    path: str | None = None
    rule: str = "level"
    hangover_s: float | None = None


@dataclass(frozen=True, slots=True)
class EventLog:
    """The events of one recording, in time order.

    Attributes
    ----------
    events : tuple of Event
    source : str or None
        The file they were read from.
    readings : tuple of Reading
        The levels the page's clock logged (``clock.level``), in time order.
    start : CaptureStart or None
        The ``recording.started`` line's frame, rate and capture kind.
    session : dict
        The ``session`` line's fields (``voice``, ``model``, ``page_version``,
        ...), for ``derive --by``.
    setting : PageSetting or None
        The page clock's ``clock.setting`` line (None: the log does not say
        which setting the page ran).
    inferred_quiet_s : tuple of float or None
        Where the page's clock declared each beat quiet, for a log without
        ``clock.quiet`` lines: the replay at the setting the page ran
        (:func:`clock.core.replay.page_declarations`). None: not inferred.
    """

    events: tuple[Event, ...]
    source: str | None = None
    readings: tuple[Reading, ...] = ()
    start: CaptureStart | None = None
    session: dict[str, Any] = field(default_factory=dict)
    setting: PageSetting | None = None
    inferred_quiet_s: tuple[float, ...] | None = None
    # The events of each set of kinds asked for, found once (an analysis per floor asks again and again).
    _by_kinds: dict[tuple[str, ...], tuple[Event, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    # What analyses of the log at every floor share (:func:`clock.core.analysis.analyse`), found once.
    _shared: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def shared(self, key: str, make: Callable[[], Any], *, valid: Callable[[Any], bool] = lambda _: True) -> Any:
        """What analyses of this log compute once and share: ``make()`` the first time ``key`` is asked, and
        again whenever ``valid`` says what is kept does not fit the question (another trace's ticks)."""
        found = self._shared.get(key)
        if found is None or not valid(found):
            found = self._shared[key] = make()
        return found

    def shifted(self, offset_s: float) -> EventLog:
        """The same log with every event and reading moved by ``offset_s`` seconds.

        ``offset_s`` is what :class:`clock.core.agreement.Agreement` estimates:
        added to the log's times, it puts them on the recording's timeline.
        """
        rate = self.start.sample_rate_hz if self.start is not None else None
        frames = 0 if rate is None else int(round(offset_s * rate))
        return replace(
            self,
            events=tuple(replace(e, t_s=e.t_s + offset_s) for e in self.events),
            inferred_quiet_s=None
            if self.inferred_quiet_s is None
            else tuple(t + offset_s for t in self.inferred_quiet_s),
            readings=tuple(
                replace(r, t_s=r.t_s + offset_s, frame=None if r.frame is None else r.frame + frames)
                for r in self.readings
            ),
        )

    def of_kind(self, *kinds: str) -> tuple[Event, ...]:
        """The events of the given kinds, in time order."""
        found = self._by_kinds.get(kinds)
        if found is None:
            found = self._by_kinds[kinds] = tuple(e for e in self.events if e.kind in kinds)
        return found

    @property
    def page_quiets_s(self) -> tuple[float, ...]:
        """Where the page's own clock declared beats quiet: its ``clock.quiet`` lines, else the inferred ones."""
        logged = self.of_kind("clock.quiet")
        if logged:
            return tuple(e.t_s for e in logged)
        return self.inferred_quiet_s or ()

    @property
    def causes_from(self) -> str:
        """How the causes of the beats' bounds are known (:mod:`clock.core.causes`).

        ``"logged"`` (the page's ``clock.quiet`` lines, or a ``cause`` on its
        prompts and ends), ``"inferred"`` (the replay at the setting the page
        ran), or ``"unknown"`` (every bound is taken as the world's).
        """
        if self.of_kind("clock.quiet") or any(e.cause is not None for e in self.of_kind("prompt", "end")):
            return "logged"
        return "inferred" if self.inferred_quiet_s is not None else "unknown"

    @property
    def terminals(self) -> tuple[Event, ...]:
        """The terminal responses (each opens a beat)."""
        return self.of_kind("terminal")

    @property
    def stop_kind(self) -> str:
        """The events that tell a rule the provider's ``output_audio_buffer.stopped``.

        ``clock.stopped`` where the log has any (``speechclock.js`` logs each
        event it is told at the time it applied it, so the replay applies it
        at the same tick), else the provider's ``output_audio_buffer.stopped``
        as logged.
        """
        return "clock.stopped" if self.of_kind("clock.stopped") else "output_audio_buffer.stopped"


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


def one_terminal_per_beat(events: list[Event]) -> list[Event]:
    """The events with one terminal response per beat (time order kept).

    A log that has both ``terminal_response`` lines and terminal
    ``response.done`` lines records each beat twice, once as the provider
    sent it and once as the page told its clock. The ``terminal_response``
    lines are the beats; each terminal ``response.done`` becomes an event of
    its own type (no beat), and gives its ``response.id`` to the first
    ``terminal_response`` after it that has no ``response_id`` of its own
    and comes before the next ``response.done``. A log with only one of the
    two is returned as it is.
    """
    logged = [e.type == "terminal_response" for e in events if e.kind == "terminal"]
    if all(logged) or not any(logged):
        return events
    out: list[Event] = []
    pending: str | None = None  # the last response.done's id, until a terminal_response takes it
    for e in events:
        if e.kind == "terminal" and e.type == "response.done":
            out.append(replace(e, kind=e.type))
            pending = e.response_id
        elif e.kind == "terminal":
            out.append(e if e.response_id is not None or pending is None else replace(e, response_id=pending))
            pending = None
        else:
            out.append(e)
    return out


@dataclass(frozen=True, slots=True)
class Label:
    """A ground-truth span from an Audacity label track."""

    start_s: float
    end_s: float
    text: str = ""
