"""The analysis at one floor: every beat of a recording (:func:`analyse`, :class:`FloorAnalysis`) and ``P``.

Everything here is shared by :func:`clock.core.beats.beats` (with the tick-by-tick replay) and by the sweep and
the recommendation (with :func:`clock.core.decide.decide`, which answers any quiet time and onset timeout from one
analysis per floor). Only a beat with speech in the clock's life is analysed as an object
(:func:`clock.core.beat_analysis.analyse_beat`); every other beat is its bounds, made when read.

The **narration pause** ``P`` (:func:`narration_pause_s`) tells an ``end`` the
visitor pressed while the guide was between sentences (aborted) from one
after it had finished (outpaced).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .beat_analysis import BeatAnalysis, analyse_beat, idle_beat
from .causes import CAUSE_NAMES
from .events import EventLog
from .levels import LevelTrace
from .made import Made
from .outcome import BOUND_KINDS, STALLED
from .pauses import unpaused
from .segments import check_floor
from .spans import acknowledged, bound_ticks, log_base
from .speech import log_guide, spoke_in

__all__ = ["FloorAnalysis", "analyse", "narration_pause_s"]


@dataclass(frozen=True, slots=True)
class FloorAnalysis:
    """The beats of one recording at one floor, with what :func:`clock.core.decide.decide` needs.

    Attributes
    ----------
    floor : float
    t_s : ndarray of float64
        Tick times.
    beats : sequence of BeatAnalysis
        One per terminal response; a beat without speech in the clock's life
        is made from the log's arrays when read (:class:`Made`).
    after_end : int
        Terminal responses after the last tick (the clock never sees them).
    pauses : tuple of (float, float)
        The log's paused intervals.
    active : ndarray of int64, optional
        The beats with speech in the clock's life, in order (the others are
        unheard or silent whatever the setting, and loops over a floor's
        beats visit only these). Derived from ``beats`` when not given.
    unheard : ndarray of int64, optional
        The beats of which the clock sees no tick (given with ``active``).
    guide_spoke : ndarray of bool, optional
        Per beat, whether the guide made sound in its span (to its bound at
        this floor), whatever the floor hears
        (:func:`clock.core.speech.guide_sound`): a beat it spoke in that the
        floor hears none of is a missed onset, not silent. None: taken as
        spoken where the floor hears it.
    """

    floor: float
    t_s: NDArray[np.float64]
    beats: Sequence[BeatAnalysis]
    after_end: int = 0
    pauses: tuple[tuple[float, float], ...] = ()
    active: NDArray[np.int64] | None = None
    unheard: NDArray[np.int64] | None = None
    guide_spoke: NDArray[np.bool_] | None = None

    def active_beats(self) -> NDArray[np.int64]:
        """The indices of the beats with speech in the clock's life (see ``active``)."""
        if self.active is not None:
            return self.active
        return np.array([i for i, b in enumerate(self.beats) if b.start_tick is not None], np.int64)

    def spoken(self) -> NDArray[np.bool_]:
        """Which beats are spoken at this floor (:attr:`BeatAnalysis.spoken`; only a beat with speech in the
        clock's life can be)."""
        out = np.zeros(len(self.beats), bool)
        out[[j for j in self.active_beats().tolist() if self.beats[j].spoken]] = True
        return out

    @property
    def narration_pause_s(self) -> float:
        """The longest pause inside a narration of this recording at this floor (see :func:`narration_pause_s`)."""
        return narration_pause_s([self])

    def quiet_range(self, *, narration_pause_s: float) -> tuple[float, float, float]:
        """The settings that end every beat right at this floor, as :meth:`BeatAnalysis.allows` answers.

        Returns ``(need_s, room_s, wait_s)``: a quiet time ``q`` ends every
        beat right when ``need_s < q <= room_s`` (within the replay's 1 ns),
        with an onset timeout above ``wait_s``. ``need_s`` is the longest
        quiet the clock must bridge (-inf: none), ``room_s`` the least quiet
        left after a last word before a bound the clock must beat, one whose
        passing is a stall (inf: none; -inf: speech runs into such a bound,
        so no quiet time works).
        """
        need, room, wait = float("-inf"), float("inf"), float("-inf")
        for j in self.active_beats().tolist():  # (a beat without speech in the clock's life is not spoken)
            b = self.beats[j]
            if not b.spoken:
                continue
            need = max(need, b.need_s)
            if b.undone(narration_pause_s) == STALLED:
                room = min(room, b.room_s)
            if b.wait_s is not None:
                wait = max(wait, b.wait_s)
        return need, room, wait

    def gaps(self) -> list[tuple[int, float, float, bool]]:
        """Every quiet the clock bridges inside a span, as (beat, last word s, unpaused gap s, narration).

        A gap runs from a last word to the next speech tick. ``narration`` is
        False for the silence between an overlapping acknowledgment and the
        narration (a dip between the acknowledgment's words is not one).
        """
        out = []
        for i in self.active_beats().tolist():
            b = self.beats[i]
            if not b.spoken:
                continue
            for w, e in zip(b.run_word[b.inner].tolist(), b.run_end[b.inner].tolist()):
                gap = float(unpaused(float(self.t_s[w]), self.t_s[e : e + 1], self.pauses)[0])
                out.append((b.index, float(self.t_s[w]), gap, w != b.ack_end_tick))
        return out


def narration_pause_s(analyses: Sequence[FloorAnalysis]) -> float:
    """``P``: the longest pause inside a narration of the recordings judged together, at one floor.

    The longest unpaused quiet between two speech runs of a narration
    (from its onset on, inside its span); the silence between an
    overlapping acknowledgment and the narration is not a narration pause.
    An ``end`` whose beat's last word is closer to it than ``P`` came while
    the guide spoke (``aborted``); one later came after the guide had
    finished (``outpaced``). The one place ``P`` is computed: every
    corpus-level caller (derive, sweep, check, :func:`clock.core.recommend.replay.judge`)
    passes this over its recordings at the floor judged; ``beats`` and
    :func:`clock.core.decide.decide` default to the recording's own. 0 when there is none.
    """
    return max((a.beats[j].pause_s for a in analyses for j in a.active_beats().tolist()), default=0.0)


def analyse(
    trace: LevelTrace,
    events: EventLog,
    *,
    floor: float,
    t_s: NDArray[np.float64] | None = None,
) -> FloorAnalysis:
    """Analyse every beat of a recording at one floor (see :class:`BeatAnalysis`).

    Parameters
    ----------
    trace : LevelTrace
    events : EventLog
    floor : float
        Speech is ``level > floor``.
    t_s : ndarray, optional
        ``trace.t_s``, when the caller already has it (a sweep analyses one
        trace at many floors).

    Returns
    -------
    FloorAnalysis
        What every floor shares (each beat's life, and its bound without
        speech) is found once per log and trace and kept with the log
        (:meth:`clock.core.events.EventLog.shared`): a beat without speech in
        the clock's life costs those arrays at every floor, not an object.
    """
    floor = check_floor(floor)
    t = trace.t_s if t_s is None else t_s
    speech = trace.level > floor
    base = log_base(trace, events, t)
    bump, sound = log_guide(trace, events)
    k0, ka, term_t, spans = base["k0"], base["ka"], base["term_t"], base["spans"]
    m = k0.size
    is_speech_idx = np.flatnonzero(speech)
    # Only a beat with speech in the clock's life is replayed (an object of its own); every other beat (superseded
    # before any speech, or silent) is its bounds, kept in the log's arrays for every floor and made when read.
    active = np.flatnonzero(np.searchsorted(is_speech_idx, k0) < np.searchsorted(is_speech_idx, ka))
    moved, moved_s = acknowledged(base["bound_s"], base["code"], term_t, t, speech)
    ack_bounds = dict(zip(moved.tolist(), moved_s.tolist()))
    # Whether the guide spoke in each beat's span (to its bound at this floor: an acknowledgment of the next beat
    # that begins before its terminal response bounds this one where it begins).
    kb_here = base["kb"].copy()
    if moved.size:
        kb_here[moved] = bound_ticks(t, moved_s, np.full(moved.size, BOUND_KINDS.index("acknowledgment")), k0[moved],
                                      ka[moved])  # fmt: skip
    spoke = spoke_in(sound, k0, np.maximum(kb_here, k0))
    kept = {}
    for j in active.tolist():
        bound_s = ack_bounds.get(j)
        kept[j] = analyse_beat(
            j, float(term_t[j]), float(base["bound_s"][j]) if bound_s is None else bound_s,
            "acknowledgment" if bound_s is not None else BOUND_KINDS[base["code"][j]], int(k0[j]), int(ka[j]),
            t, speech, is_speech_idx, spans, CAUSE_NAMES[int(base["cause"][j])], int(base["stop"][j]),
            float(base["declared"][j]), float(base["own_stop"][j]), float(base["linger"][j]), bump,
        )  # fmt: skip
    declared = base["declared"]
    for j in active.tolist():
        before = kept.get(j - 1)
        early = before is not None and before.last_word_s is not None and declared[j - 1] < before.last_word_s
        # (after_early_end: the page declared the beat before it early)
        kept[j] = replace(kept[j], after_early_end=bool(early), guide_spoke=bool(spoke[j]))
    make = functools.partial(idle_beat, base, ack_bounds, spoke)
    return FloorAnalysis(floor, t, Made(m, kept, make), base["after_end"], spans, active, base["unheard"], spoke)
