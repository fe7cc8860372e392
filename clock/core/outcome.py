"""Outcomes: what each means, and the one judge every view calls.

Pure numpy. A beat's outcome is a listener's: did the setting end the beat
right, fail it, or did something that is not the setting's doing end it
first. The beats listing (:func:`clock.core.beats.beats`, the tick replay's
declarations judged by :func:`clock.core.decide.judge_declared`), the vectorised
decisions (:func:`clock.core.decide.decide_quiets`, the all-floors table a
sweep and derive read, :meth:`clock.core.floors.FloorTable.outcomes`), the rules, check, stress, compare, the report and
the plots take their outcomes from here, and count failures as
:data:`FAILURES` says.

**The setting's failures**

``premature``
    the clock declared quiet, then the guide spoke again within its beat;
``stalled``
    the guide finished and the clock did not declare within the silence it
    had (a bound the page caused moves with the clock's declaration: see
    :mod:`clock.core.causes`);
``missed-onset``
    the clock gave up waiting for speech, or its floor heard none of the
    beat, yet the guide spoke in the beat (told without the floor:
    :mod:`clock.core.speech`).

**Not the setting's doing** (counted and shown, never a failure, never part
of the search for a valid setting)

``aborted``
    the visitor ended the beat (a barge-in, a question, End) while the guide
    spoke;
``outpaced``
    the visitor ended it after the guide had finished, before the clock
    declared: they did not wait;
``superseded``
    a terminal response the page did not cause came first;
``recording-ended``
    the recording ended before the clock declared.

**Neither**: ``ok``, ``silent`` (no sound of the guide's in the beat),
``unheard`` (the clock saw no tick of the beat).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .causes import CAUSE_NAMES, UNKNOWN_CAUSE, VISITOR, WORLD
from .model import EPS_S

__all__ = [
    "ABORTED",
    "AFTER_FINISHING",
    "BOUND_KINDS",
    "FAILURES",
    "MEANINGS",
    "MISSED_ONSET",
    "OK",
    "OUTCOMES",
    "OUTPACED",
    "PREMATURE",
    "RECORDING_ENDED",
    "SILENT",
    "STALLED",
    "SUPERSEDED",
    "UNHEARD",
    "WORLD_ENDED",
    "judge",
    "silence_held",
    "undone_against_reference",
    "undone_codes",
    "unspoken_codes",
    "visitor",
]

PREMATURE, STALLED, OUTPACED, MISSED_ONSET = "premature", "stalled", "outpaced", "missed-onset"
OK, SILENT, UNHEARD, ABORTED = "ok", "silent", "unheard", "aborted"
SUPERSEDED, RECORDING_ENDED = "superseded", "recording-ended"
#: Every outcome, in the order of their codes (an outcome array holds indices into it).
OUTCOMES = (OK, PREMATURE, STALLED, OUTPACED, MISSED_ONSET, SILENT, UNHEARD, ABORTED, SUPERSEDED, RECORDING_ENDED)
#: The setting's failures.
FAILURES = (PREMATURE, STALLED, MISSED_ONSET)
#: Outcomes that are not the setting's doing: the visitor, the backend or the recording ended the beat first.
WORLD_ENDED = (OUTPACED, ABORTED, SUPERSEDED, RECORDING_ENDED)
#: What each outcome means, in a line.
MEANINGS = {
    OK: "the clock declared quiet after the guide's last word",
    PREMATURE: "the clock declared quiet, then the guide spoke again",
    STALLED: "the guide finished and the clock did not declare within the silence it had",
    MISSED_ONSET: "the clock gave up waiting, or never heard the guide at all, yet the guide spoke",
    SILENT: "the guide made no sound in the beat",
    UNHEARD: "the clock saw no tick of the beat",
    ABORTED: "the visitor ended the beat while the guide spoke (not a failure)",
    OUTPACED: "the visitor ended the beat after the guide had finished, before the clock declared (not a failure)",
    SUPERSEDED: "a terminal response the page did not cause came first (not a failure)",
    RECORDING_ENDED: "the recording ended before the clock declared (not a failure)",
}

#: What ends a beat's span (``clock.core.spans.span_bounds``), in the order of their codes.
BOUND_KINDS = ("terminal", "prompt", "end", "recording end", "acknowledgment")

CODE = {name: np.int8(i) for i, name in enumerate(OUTCOMES)}
#: Bounds not the setting's doing that come after the guide finished: a clock that had the silence stalled.
AFTER_FINISHING = [CODE[x] for x in (OUTPACED, SUPERSEDED, RECORDING_ENDED)]


def visitor(cause: Any, bound: Any) -> Any:
    """Whether the visitor caused a bound (cause and bound codes: :data:`CAUSE_NAMES`, :data:`BOUND_KINDS`): a
    ``prompt`` or ``end`` before the page's clock declared, or, where the log does not say, an ``end``."""
    unknown_end = (cause == CAUSE_NAMES.index(UNKNOWN_CAUSE)) & (bound == BOUND_KINDS.index("end"))
    return (cause == CAUSE_NAMES.index(VISITOR)) | unknown_end


def undone_codes(
    cause: NDArray[np.int8],
    bound: NDArray[np.int8],
    speech_at_bound: NDArray[np.bool_],
    end_after_word_s: NDArray[np.float64],
    narration_pause_s: float | NDArray[np.float64],
) -> NDArray[np.int8]:
    """The outcome of spoken beats the clock did not declare quiet in before their bound, as outcome codes.

    By who caused the bound (``cause``, codes of :data:`CAUSE_NAMES`) and what it is (``bound``, codes of
    :data:`BOUND_KINDS`): the visitor's (:func:`visitor`) is ``aborted`` while the guide spoke (speech at the
    bound, or a last word closer to it than ``narration_pause_s``, the longest pause inside a narration), else
    ``outpaced``; the world's is ``superseded`` (a terminal response, or its acknowledgment) or
    ``recording-ended``; any other (a bound of a log that does not say who caused it, one the page caused) is a
    ``stalled`` beat. Only ``stalled`` is a failure.
    """
    speaking = speech_at_bound | (end_after_word_s < narration_pause_s)
    code = np.full(np.shape(cause), CODE[STALLED], np.int8)
    world = cause == CAUSE_NAMES.index(WORLD)
    ended = bound == BOUND_KINDS.index("recording end")
    code = np.where(world & ended, CODE[RECORDING_ENDED], np.where(world, CODE[SUPERSEDED], code))
    return np.where(visitor(cause, bound), np.where(speaking, CODE[ABORTED], CODE[OUTPACED]), code).astype(np.int8)


def undone_against_reference(
    undone: NDArray[np.int8], room_s: NDArray[np.float64], declared_s: NDArray[np.float64], quiets_s: NDArray
) -> NDArray[np.int8]:
    """:func:`undone_codes` of beats an endpointer did not end before their bound, where a reference says where the
    guide spoke (``room_s``: the reference's silence after its last word before the bound, inf where the page's
    bound moves; ``declared_s``: the endpointer's declaration, inf where it made none; shapes ``(n, 1)`` against
    ``quiets_s`` on the last axis).

    A bound the page caused moves: a declaration past it ends the beat right, none stalls it. A bound that is not
    the setting's doing (``outpaced``, ``superseded``, ``recording-ended``) after a silence of the reference's that
    held the quiet time is a stall: the endpointer had the silence and did not declare.
    """
    moved = room_s == float("inf")
    out = np.where(moved & np.isfinite(declared_s), CODE[OK], np.where(moved, CODE[STALLED], undone))
    world = np.isin(out, AFTER_FINISHING)
    return np.where(world & (room_s >= np.asarray(quiets_s)[None, :]), CODE[STALLED], out).astype(np.int8)


def unspoken_codes(guide_spoke: Any) -> Any:
    """The outcome code of a beat without speech at the floor in its span: a missed onset where the guide spoke in
    it (told without the floor: the clock waits on and never hears it), else silent."""
    return np.where(guide_spoke, CODE[MISSED_ONSET], CODE[SILENT])


def silence_held(undone: Any, had: Any) -> Any:
    """``undone`` codes where the guide's own silence after its last word held the quiet time (``had``) yet the
    clock, hearing the room's noise in it, did not declare: a bound not the setting's doing that came after the
    guide finished (:data:`AFTER_FINISHING`) is then a stall."""
    return np.where(had & np.isin(undone, AFTER_FINISHING), CODE[STALLED], undone)


def judge(
    spoken: NDArray[np.bool_],
    wait_s: NDArray[np.float64],
    need_s: NDArray[np.float64],
    room_s: NDArray[np.float64],
    undone: NDArray[np.int8],
    target: NDArray[np.float64],
    onset_timeout_s: float,
    silence_s: NDArray[np.float64] | None = None,
    guide_spoke: NDArray[np.bool_] | None = None,
) -> NDArray[np.int8]:
    """The one judge of heard beats for many quiet times (``target`` = quiet time - :data:`EPS_S`, the last axis).

    Silent without speech in its span; a missed onset when the clock waits past the onset timeout; premature
    when a quiet inside the beat reaches the quiet time (the clock ends the beat at it); ok when the quiet after
    the last word reaches it before the bound (``room_s``: inf where the page's bound moves with the clock, so
    the silence runs on); stalled when the guide's own silence after its last word reached it (``silence_s``, NaN
    where it is ``room_s``: it is longer only where the floor hears the room's noise in it, which the clock counts
    as sound) yet the clock did not declare, whoever's the bound; else ``undone`` (:func:`undone_codes`). A beat
    without speech at the floor in its span is a missed onset where the guide spoke in it (``guide_spoke``, told
    without the floor: the clock waits on and never hears it), else silent.
    """
    with np.errstate(invalid="ignore"):
        missed = wait_s >= onset_timeout_s - EPS_S  # NaN (no wait): never
    undone = undone[..., None]
    if silence_s is not None:
        undone = silence_held(undone, np.where(np.isnan(silence_s), room_s, silence_s)[..., None] >= target)
    code = np.where(room_s[..., None] >= target, CODE[OK], undone)
    code = np.where(need_s[..., None] >= target, CODE[PREMATURE], code)
    code = np.where(missed[..., None], CODE[MISSED_ONSET], code)
    unspoken = CODE[SILENT] if guide_spoke is None else unspoken_codes(guide_spoke)[..., None]
    return np.where(spoken[..., None], code, unspoken).astype(np.int8)
