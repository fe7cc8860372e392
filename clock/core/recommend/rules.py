"""Dead air, and the rules that could end a beat sooner: each replayed on the same beats, judged by the one judge.

Pure numpy. **Dead air** is what a beat that ends right costs the visitor:
the wait from the guide's last word (the last tick above the floor in the
beat's span) to the tick at which the clock declares the beat over. A tour
(a recording) pays the sum over its beats; a corpus is summed up by the
median and the 95th percentile over every beat ended right.

The rules (each one decides a tick per beat, as :func:`clock.core.replay.replay_ticks`
and ``speechclock.js`` decide it; the outcome of that tick is
:func:`clock.core.decide.judge_declared`'s, the judge ``decide`` uses):

``level``
    the level clock: the first tick at which the unpaused quiet since the
    last word reaches the quiet time (:func:`clock.core.decide.decide_quiets`
    itself);
``stopped+quiet``
    the provider's ``output_audio_buffer.stopped`` has arrived (the first
    tick at or after it) and the quiet since the last word reaches a short
    hangover;
``stopped``
    the provider's event alone: the first unpaused tick at or after it;
``level+stopped``
    the level clock, whose quiet time shortens to the hangover once the
    provider's event has arrived (without the event, it is the level clock).

The provider's event of a beat is the one the page's clock applies in it
(:func:`clock.core.provider.rule_stopped`). No rule declares before the clock
has heard the beat's first word. The level clock bounds every rule, as it
does in the page: a page cannot tell an event that is late from one that
never comes, so where the quiet time passes first the beat ends there. A
rule that needs the provider's event (``stopped+quiet``, ``stopped``) never
assumes it: a beat with speech and no event is ``no-event``, a failure of
that rule (the page ended it by the level clock, at the tick kept in
:attr:`BeatCost.declared_s`; the rule decided nothing there).

**The hangover** is chosen as the quiet time is (:mod:`clock.core.recommend.quiet`): the
longest quiet the rule must bridge after the event has arrived (a quiet
after which the guide speaks again within the span, counted from its last
word) plus the quiet margin, rounded up to 0.05 s. Then it is replayed.

**The beat's own event.** A rule acts on the beat's own provider event
(:func:`clock.core.provider.beat_stops`): the first applied while the beat is
open whose ``response_id`` is the beat's terminal response's; an event after
the beat's bound, or another response's (an acknowledgment's), is not the
beat's. Where the log gives no ids the first event in the beat is assumed
(:attr:`BeatCost.stopped_assumed`), and a beat in which another response's
event may have been taken for it is a risk (:attr:`RuleEvidence.n_risk`).
The event offsets reported (:attr:`RuleEvidence.stopped_vs_last_word_s`) are
those of the events used.

**Dead air** counts unpaused time (a page paused the tour: that wait is the
visitor's, not the clock's).

Which rule is recommended is :mod:`clock.core.recommend.rule_evidence`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ..analysis import FloorAnalysis
from ..beat_analysis import BeatAnalysis
from ..decide import decide_quiets, judge_declared
from ..model import CLEAR_S, EPS_S
from ..outcome import (
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    SILENT,
    UNHEARD,
)
from ..pauses import paused_at, unpaused
from ..provider import BeatStop
from ..tally import NO_EVENT, Tally
from ..thresholds import LEVEL, STOPPED, STOPPED_QUIET
from ..times import round_up

#: The failures of a rule: the clock's, and a missing provider event.
RULE_FAILURES = (*FAILURES, NO_EVENT)


#: One recording's beats at a floor, as the rules replay them: its name, its analysis, each beat's own provider
#: event as the page's clock applies it (:func:`clock.core.provider.beat_stops`, or its time alone,
#: :func:`clock.core.provider.rule_stopped`; None where it has none).
RecordingBeats = tuple[str, FloorAnalysis, Sequence[BeatStop | float | None]]


#: One recording (or a group's recordings, a list) left out: its name, the others' beats, its own (None: nothing
#: derived without it), and the quiet time and onset timeout derived without it.
Fold = tuple[str, Sequence[RecordingBeats], RecordingBeats | list[RecordingBeats] | None, float | None, float | None]


@dataclass(frozen=True, slots=True)
class Rule:
    """A rule that ends a beat.

    Attributes
    ----------
    kind : str
        One of :data:`RULES`.
    quiet_s : float
        The level clock's quiet time, which bounds every rule (``level+stopped``
        keeps it until the provider's event).
    hangover_s : float or None
        The quiet after the last word that ends the beat once the provider's
        event has arrived (``stopped+quiet``, ``level+stopped``).
    """

    kind: str
    quiet_s: float
    hangover_s: float | None = None

    @property
    def needs_event(self) -> bool:
        """Whether a beat without the provider's event fails (the page ends it by the level clock)."""
        return self.kind in (STOPPED_QUIET, STOPPED)

    @property
    def uses_event(self) -> bool:
        """Whether the provider's event changes what the rule does."""
        return self.kind != LEVEL

    @property
    def label(self) -> str:
        """The rule in words: ``stopped + 0.35 s quiet``."""
        if self.kind == LEVEL:
            return f"level clock, quiet {self.quiet_s:g} s"
        if self.kind == STOPPED:
            return "stopped alone"
        if self.kind == STOPPED_QUIET:
            return f"stopped + {self.hangover_s:g} s quiet"
        return f"level {self.quiet_s:g} s, {self.hangover_s:g} s once stopped"


@dataclass(frozen=True, slots=True)
class BeatCost:
    """One beat under one rule.

    Attributes
    ----------
    recording : str
    index : int
        The beat, from 0 (people read it from 1).
    outcome : str
        One of :data:`clock.core.outcome.OUTCOMES`, or ``no-event``.
    last_word_s, declared_s : float or None
    dead_air_s : float or None
        The unpaused time from ``last_word_s`` to ``declared_s`` when the beat ended right.
    stopped_s : float or None
        The beat's own provider event, the one the rule used (:func:`clock.core.provider.beat_stops`).
    stopped_line : int or None
        Its line in the event log.
    stopped_assumed : bool
        The log gives no ids: the first event in the beat was assumed to be its own.
    stopped_risk : bool
        Assumed, and another response's event (an acknowledgment's) may have been taken for it.
    """

    recording: str
    index: int
    outcome: str
    last_word_s: float | None
    declared_s: float | None
    dead_air_s: float | None
    stopped_s: float | None
    stopped_line: int | None = None
    stopped_assumed: bool = False
    stopped_risk: bool = False


@dataclass(frozen=True, slots=True)
class Tour:
    """What one recording's beats ended right pay in dead air."""

    recording: str
    n_beats: int
    total_s: float
    median_s: float | None


@dataclass(frozen=True, slots=True)
class DeadAir:
    """Dead air over the beats a rule ends right.

    Attributes
    ----------
    n_beats : int
    median_s, p95_s, max_s : float or None
    total_s : float
    tours : tuple of Tour
        Per recording with beats, in order.
    """

    n_beats: int
    median_s: float | None
    p95_s: float | None
    max_s: float | None
    total_s: float
    tours: tuple[Tour, ...]


def dead_air(costs: Sequence[BeatCost]) -> DeadAir:
    """The dead air of these beats: per tour, and the median and p95 over all of them."""
    values = np.array([c.dead_air_s for c in costs if c.dead_air_s is not None], np.float64)
    by_tour: dict[str, list[float]] = {}
    for c in costs:
        by_tour.setdefault(c.recording, [])
        if c.dead_air_s is not None:
            by_tour[c.recording].append(c.dead_air_s)
    tours = []
    for name, waits in by_tour.items():
        mine = np.array(waits, np.float64)
        tours.append(
            Tour(
                name,
                int(mine.size),
                float(mine.sum()) if mine.size else 0.0,
                float(np.median(mine)) if mine.size else None,
            )
        )
    return DeadAir(
        int(values.size),
        float(np.median(values)) if values.size else None,
        float(np.percentile(values, 95)) if values.size else None,
        float(values.max()) if values.size else None,
        float(values.sum()) if values.size else 0.0,
        tuple(tours),
    )


@dataclass(frozen=True, slots=True)
class RuleResult:
    """One rule replayed over the beats of a corpus.

    Attributes
    ----------
    rule : Rule
    tally : Tally
        How its beats ended: every beat the clock heard (``n_beats``), each
        an outcome of :data:`clock.core.outcome.OUTCOMES` or ``no-event``.
        ``n_superseded``, ``n_recording_ended``: beats a terminal response
        superseded, or the recording's end cut, first: not the rule's doing.
        ``n_failed``: the rule's failures (premature ends, stalls, missed
        onsets) and beats without the event a rule needs.
    n_evidence : int
        Beats with speech the rule decided on its own terms: for a rule
        that uses the provider's event, those that had it; for the level
        rule, every beat with speech.
    need_s : float or None
        The longest quiet the hangover must bridge (None: none, or no hangover).
    margin_kept : bool
        The hangover clears that quiet by the quiet margin.
    dead_air : DeadAir
    beats : tuple of BeatCost
    """

    #: Its output's fields, in order (:func:`clock.core.tally.record`): its own, and its tally's counts.
    RECORD: ClassVar[tuple[str, ...]] = (
        "rule", "n_beats", "n_ok", "n_premature", "n_stalled", "n_outpaced", "n_missed_onset", "n_no_event",
        "n_aborted", "n_silent", "n_evidence", "need_s", "margin_kept", "dead_air", "beats", "n_superseded",
        "n_recording_ended",
    )  # fmt: skip

    rule: Rule
    tally: Tally
    n_evidence: int
    need_s: float | None
    margin_kept: bool
    dead_air: DeadAir
    beats: tuple[BeatCost, ...]


def _arrival(t: NDArray[np.float64], stopped_s: float | None) -> int | None:
    """The tick the event is applied at (events at a time <= t apply before tick t)."""
    return None if stopped_s is None else int(np.searchsorted(t, stopped_s, side="left"))


def _count(a: FloorAnalysis, b: BeatAnalysis) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """From the first word to the end of the clock's life: the quiet count (-inf where speaking or paused), paused."""
    assert b.start_tick is not None
    ks, ka = b.start_tick, b.life_end_tick
    t = a.t_s
    paused = paused_at(t[ks:ka], a.pauses)
    if b.count_s is not None:
        return b.count_s, paused
    count = np.full(ka - ks, float("-inf"))
    for w, e in zip(b.run_word.tolist(), b.run_end.tolist()):
        count[w + 1 - ks : e - ks] = t[w + 1 : e] - t[w]
    count[paused] = float("-inf")
    return count, paused


def _declare(a: FloorAnalysis, b: BeatAnalysis, rule: Rule, event: int | None) -> int | None:
    """The tick at which a rule (other than the level clock) declares the beat over, or None.

    :func:`clock.core.replay.replay_ticks`'s decision, for every tick of the beat's life at once.
    """
    assert b.start_tick is not None
    ks = b.start_tick
    count, paused = _count(a, b)
    k = np.arange(ks, ks + count.size)
    after = np.zeros(count.size, bool) if event is None else k >= event
    level = count >= rule.quiet_s - EPS_S
    if rule.kind == STOPPED:
        hit = level | (after & ~paused)
    elif rule.kind == STOPPED_QUIET:
        assert rule.hangover_s is not None
        hit = level | (after & (count >= rule.hangover_s - EPS_S))
    else:
        assert rule.hangover_s is not None
        # The level clock bounds the rule: a hangover at or above the quiet time waits no longer than it.
        hit = count >= np.where(after, min(rule.hangover_s, rule.quiet_s), rule.quiet_s) - EPS_S
    found = np.flatnonzero(hit)
    return None if not found.size else int(ks + found[0])


def replay_rule(
    recordings: Sequence[RecordingBeats],
    rule: Rule,
    *,
    onset_timeout_s: float,
    quiet_margin_s: float = 0.2,
) -> RuleResult:
    """Replay one rule over recordings' beats at one floor; each declared tick judged by the one judge.

    Parameters
    ----------
    recordings : sequence of (name, FloorAnalysis, stopped times)
        Per recording: its beats at the floor, and each beat's provider
        ``output_audio_buffer.stopped`` (None where the log has none).
    rule : Rule
    onset_timeout_s : float
    quiet_margin_s : float
        The margin the hangover must keep over the quiet it bridges.
    """
    costs: list[BeatCost] = []
    evidence = n_unheard = 0
    for name, a, given in recordings:
        t = a.t_s
        pause = a.narration_pause_s  # (each beat judged by its own recording)
        stops = _stops(given)
        level = decide_quiets(a, quiets_s=[rule.quiet_s], onset_timeout_s=onset_timeout_s, narration_pause_s=pause)
        said = np.flatnonzero(level.outcome[:, 0] != OUTCOMES.index(UNHEARD))
        n_unheard += len(a.beats) - said.size  # counted (not in ``n_beats``), never judged
        for i in said.tolist():
            b = a.beats[i]
            stop = stops[i]
            event = _arrival(t, stop.t_s)
            outcome = OUTCOMES[int(level.outcome[i, 0])]
            declared: int | None = None if level.declared_tick[i, 0] < 0 else int(level.declared_tick[i, 0])
            spoken = outcome not in (SILENT, MISSED_ONSET)
            if spoken and rule.uses_event:
                if rule.needs_event and event is None:
                    outcome = NO_EVENT  # the page ends it by the level clock (``declared``); the rule decided nothing
                else:
                    declared = _declare(a, b, rule, event)
                    outcome = judge_declared(
                        b, declared, onset_timeout_s=onset_timeout_s, narration_pause_s=pause, quiet_s=rule.quiet_s
                    )
            if spoken and (not rule.uses_event or event is not None):
                evidence += 1
            word = None if b.last_word_tick is None else float(t[b.last_word_tick])
            at = None if declared is None else float(t[declared])
            air = (
                float(unpaused(word, np.array([at]), a.pauses)[0])
                if outcome == OK and at is not None and word is not None
                else None
            )
            costs.append(BeatCost(name, b.index, outcome, word, at, air, stop.t_s, stop.line, stop.assumed, stop.risk))
    need = _need(recordings, onset_timeout_s) if rule.hangover_s is not None else None
    kept = need is None or rule.hangover_s is None or rule.hangover_s - need > quiet_margin_s + EPS_S
    return RuleResult(
        rule=rule,
        tally=Tally.of([*(c.outcome for c in costs), *[UNHEARD] * n_unheard], extra=(NO_EVENT,)),
        n_evidence=evidence,
        need_s=need,
        margin_kept=kept,
        dead_air=dead_air(costs),
        beats=tuple(costs),
    )


def _stops(given: Sequence[BeatStop | float | None]) -> list[BeatStop]:
    """Each beat's own event as a :class:`clock.core.provider.BeatStop` (a bare time says nothing of its ids)."""
    return [x if isinstance(x, BeatStop) else BeatStop(x) for x in given]


def _need(recordings: Sequence[RecordingBeats], onset_timeout_s: float) -> float | None:
    """The longest quiet counted after the provider's event in a run after which the guide speaks again in the span."""
    longest = float("-inf")
    for _, a, given in recordings:
        stopped = [x.t_s for x in _stops(given)]
        for b, s in ((a.beats[j], x) for j, x in enumerate(stopped) if x is not None):
            event = _arrival(a.t_s, s)
            if (
                event is None
                or not b.spoken
                or judge_declared(b, None, onset_timeout_s=onset_timeout_s, narration_pause_s=0.0)
                in (
                    MISSED_ONSET,
                    SILENT,
                    UNHEARD,
                )
            ):
                continue
            assert b.start_tick is not None
            count, _ = _count(a, b)
            ks = b.start_tick
            for w, e in zip(b.run_word[b.inner].tolist(), b.run_end[b.inner].tolist()):
                lo = max(w + 1, event) - ks
                if lo < e - ks:
                    longest = max(longest, float(count[lo : e - ks].max()))
    return None if longest == float("-inf") else longest


def hangover_for(
    recordings: Sequence[RecordingBeats],
    *,
    onset_timeout_s: float,
    quiet_margin_s: float,
) -> float:
    """The hangover, chosen as the quiet time is: the longest quiet after the event + margin, rounded up to 0.05 s."""
    need = _need(recordings, onset_timeout_s)
    return round_up(max(need or 0.0, 0.0) + quiet_margin_s + CLEAR_S, "0.05")
