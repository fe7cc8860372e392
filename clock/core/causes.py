"""Who caused each bound of a beat: the page, the visitor, or the rest of the world.

Pure data. A recording is made by a page that runs the clock: after its clock
declares a beat quiet it logs ``clock.quiet``, waits the beat's ``linger_s``,
prompts the next stop (``prompt``), and the backend's next response follows;
after the last stop it logs ``end``. Those bounds are consequences of the
page's setting: a replay at another setting moves them with its own
declaration (:mod:`clock.core.beat_analysis`). Only what the world did stays where it
was.

A beat runs from its terminal response to its bound, the first later
``prompt``, terminal response or ``end``, or the end of the recording. Each
bound is classified once:

``page``
    a ``prompt``, ``end`` or terminal response that comes after the page's own
    clock declared the beat quiet (a ``clock.quiet`` in the beat, or, in a log
    without clock lines, the replay at the setting the page ran, its
    ``clock.setting`` or the committed one where its prompts follow it:
    :func:`clock.core.replay.page_declarations`); or a ``prompt`` or
    ``end`` the page logged with ``"cause": "page"``;
``visitor``
    a ``prompt`` or ``end`` before the page's clock declared the beat (a
    barge-in, a question, the visitor's End), or one logged with
    ``"cause": "visitor"``;
``world``
    a terminal response before the page's clock declared (it supersedes the
    beat), or the end of the recording;
``unknown``
    any bound of a log that says nothing of the page's declarations: it is
    taken as a wall, as the world's, and the outputs say so
    (:attr:`clock.core.events.EventLog.causes_from`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np
from numpy.typing import NDArray

from .events import EventLog

__all__ = [
    "CAUSE_NAMES",
    "PAGE",
    "UNKNOWN_CAUSE",
    "VISITOR",
    "WORLD",
    "bound_causes",
    "own_stopped",
    "page_declared",
    "page_ends",
]

#: The causes of a bound (see the module notes), in the order of their codes.
UNKNOWN_CAUSE, PAGE, VISITOR, WORLD = "unknown", "page", "visitor", "world"
CAUSE_NAMES = (UNKNOWN_CAUSE, PAGE, VISITOR, WORLD)
CAUSE_CODES = {name: i for i, name in enumerate(CAUSE_NAMES)}


def _declared_between(quiets: tuple[float, ...], lo: float, hi: float) -> bool:
    """Whether the page declared a beat quiet in ``[lo, hi]``."""
    i = bisect_left(quiets, lo)
    return i < len(quiets) and quiets[i] <= hi


def bound_causes(events: EventLog) -> NDArray[np.int8]:
    """The cause of each beat's bound (:data:`CAUSE_CODES`), one per terminal response, in order.

    The bound is the first ``prompt``, terminal response or ``end`` after the
    beat's terminal response, or the end of the recording (see the module
    notes).
    """
    terms = events.terminals
    bounds = events.of_kind("terminal", "prompt", "end")
    bound_t = [e.t_s for e in bounds]
    quiets = tuple(sorted(events.page_quiets_s))
    known = events.causes_from != "unknown"
    out = np.zeros(len(terms), np.int8)
    for j, term in enumerate(terms):
        at = bisect_right(bound_t, term.t_s)
        if at >= len(bounds):
            out[j] = CAUSE_CODES["world"] if known else CAUSE_CODES["unknown"]
            continue
        b = bounds[at]
        if b.cause is not None:
            out[j] = CAUSE_CODES[b.cause]
        elif not known:
            out[j] = CAUSE_CODES["unknown"]
        elif _declared_between(quiets, term.t_s, b.t_s):
            out[j] = CAUSE_CODES["page"]
        else:
            out[j] = CAUSE_CODES["world" if b.kind == "terminal" else "visitor"]
    return out


def page_declared(events: EventLog) -> NDArray[np.float64]:
    """When the page's clock declared each beat quiet (its first declaration from the beat's terminal response up
    to its bound), NaN where it did not (or the log does not say)."""
    terms = events.terminals
    bounds = events.of_kind("terminal", "prompt", "end")
    bound_t = [e.t_s for e in bounds]
    quiets = tuple(sorted(events.page_quiets_s))
    out = np.full(len(terms), np.nan)
    for j, term in enumerate(terms):
        at = bisect_right(bound_t, term.t_s)
        hi = bound_t[at] if at < len(bounds) else float("inf")
        i = bisect_left(quiets, term.t_s)
        if i < len(quiets) and quiets[i] <= hi:
            out[j] = quiets[i]
    return out


def own_stopped(events: EventLog) -> NDArray[np.float64]:
    """When the provider said each beat's own response's audio drained: the first ``output_audio_buffer.stopped``
    after the beat's terminal response whose ``response_id`` is the terminal response's (NaN where either has no
    id, or there is none). Where the guide's audio ran on past the page's early prompt, the beat's narration is
    its speech up to it."""
    out = np.full(len(events.terminals), np.nan)
    by_id: dict[str, list[float]] = {}  # each response's events, in time order (the log's)
    for e in events.of_kind("output_audio_buffer.stopped"):
        if e.response_id is not None:
            by_id.setdefault(e.response_id, []).append(e.t_s)
    for j, term in enumerate(events.terminals):
        times = by_id.get(term.response_id) if term.response_id is not None else None
        at = bisect_left(times, term.t_s) if times else 0
        if times and at < len(times):
            out[j] = times[at]
    return out


def page_ends(events: EventLog) -> frozenset[int]:
    """The positions in ``events.events`` of the ``end`` events the page caused (after its clock declared the beat
    it ended, or logged with ``"cause": "page"``): a replay at another setting does not abort its beat there."""
    quiets = tuple(sorted(events.page_quiets_s))
    known = events.causes_from != "unknown"
    out = []
    opened: float | None = None
    for i, e in enumerate(events.events):
        if e.kind == "terminal":
            opened = e.t_s
        elif e.kind == "end":
            if e.cause == "page" or (
                e.cause is None and known and opened is not None and _declared_between(quiets, opened, e.t_s)
            ):
                out.append(i)
            opened = None
    return frozenset(out)
