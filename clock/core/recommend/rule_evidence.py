"""The rules compared on the same beats, and the one recommended; a rule held out of sample.

Pure numpy. **The recommendation** (:attr:`RuleEvidence.recommended`) is a rule that
ends every beat right, keeps its margin, rests on no fewer beats than the
level rule (a provider rule rests on the beats that had the provider's
event), whose hangover is under the quiet time and that ends no beat later
than the level clock, and saves at least ``min_saving_s`` of median dead air
against it; of those, the one with the least median dead air (at equal dead
air, ``level+stopped``, which falls back to the level clock without the
event, first). :func:`rule_evidence` names such a candidate; derive
(:func:`clock.core.recommend.engine.derive`) names it only where it also holds out of
sample (every recording left out, and every group of a voice, model or
prompt left out, replays every beat right) and saves ``min_saving_s`` at the
committed setting too (:func:`settle`); otherwise the level clock stays and
:attr:`RuleEvidence.reason` says why in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..beats import LEVEL, MISSED_ONSET
from ..model import EPS_S
from ..outcome import SILENT
from ..thresholds import LEVEL_AFTER_STOPPED, STOPPED, STOPPED_QUIET
from .rules import RULE_FAILURES, Fold, RecordingBeats, Rule, RuleResult, hangover_for, replay_rule

_PREFERENCE = (LEVEL_AFTER_STOPPED, STOPPED_QUIET, STOPPED)


@dataclass(frozen=True, slots=True)
class RuleHeldOut:
    """A rule's out-of-sample evidence: each recording with beats left out in turn.

    The level setting and the hangover are derived from the other
    recordings, and the rule replayed on the one left out.

    Attributes
    ----------
    kind : str
    n_recordings, n_right : int
        Recordings (or groups) left out, and those whose every beat the held-out rule ends right.
    failing : tuple of (str, int, str)
        Recording, beat (from 0) and outcome of each beat the held-out rule fails.
    by : str
        What was left out in turn: ``recording``, or a metadata key (``voice``, ``model``, ``prompt``) whose
        groups were.
    """

    kind: str
    n_recordings: int
    n_right: int
    failing: tuple[tuple[str, int, str], ...]
    by: str = "recording"

    @property
    def holds(self) -> bool:
        """Every recording (group) left out replays every beat right."""
        return self.n_right == self.n_recordings


@dataclass(frozen=True, slots=True)
class RuleEvidence:
    """Every rule replayed at the recommended floor and onset timeout, and the one that saves dead air.

    Attributes
    ----------
    floor, quiet_s, onset_timeout_s : float
        The level setting (the recommendation's).
    n_beats_with_speech : int
    n_with_event : int
        Of those, beats that had the provider's ``output_audio_buffer.stopped``.
    stopped_vs_last_word_s : dict
        The event minus the last word over those beats: ``min``, ``p50``, ``max``.
    results : tuple of RuleResult
        One per rule, in :data:`RULES` order.
    recommended : str or None
        The kind of rule that saves dead air with every beat ended right
        (None: the level rule stays).
    reason : str
        Why it, or why none.
    held_out : RuleHeldOut or None
        For the recommended rule (or the candidate it failed on), each recording left out.
    n_assumed : int
        Beats with speech whose event was assumed the beat's own (the log gives no ids).
    n_risk : int
        Of those, beats in which another response's event (an acknowledgment's) may have been taken for it.
    min_saving_s : float
        The median dead air a rule must save against the level clock to be named.
    held_out_groups : tuple of RuleHeldOut
        For the recommended rule (or the candidate it failed on), each group of a metadata key left out.
    committed_saving_s : float or None
        The candidate's median saving against the level clock at the committed setting (None: not replayed).
    """

    floor: float
    quiet_s: float
    onset_timeout_s: float
    n_beats_with_speech: int
    n_with_event: int
    stopped_vs_last_word_s: dict[str, float]
    results: tuple[RuleResult, ...]
    recommended: str | None
    reason: str
    held_out: RuleHeldOut | None = None
    n_assumed: int = 0
    n_risk: int = 0
    min_saving_s: float = 0.3
    held_out_groups: tuple[RuleHeldOut, ...] = ()
    committed_saving_s: float | None = None
    #: The rules that end every beat right and save enough at the recommended setting, best first (derive
    #: names the first that holds out of sample).
    candidates: tuple[str, ...] = ()

    def result(self, kind: str) -> RuleResult:
        """The replay of one rule."""
        return next(r for r in self.results if r.rule.kind == kind)

    @property
    def level(self) -> RuleResult:
        """The level clock's replay."""
        return self.result(LEVEL)

    @property
    def saving(self) -> RuleResult | None:
        """The recommended rule's replay (None: the level rule stays)."""
        return None if self.recommended is None else self.result(self.recommended)


def _rules(quiet_s: float, hangover_s: float) -> list[Rule]:
    return [
        Rule(LEVEL, quiet_s),
        Rule(STOPPED_QUIET, quiet_s, hangover_s),
        Rule(STOPPED, quiet_s),
        Rule(LEVEL_AFTER_STOPPED, quiet_s, hangover_s),
    ]


def _never_longer(rule: RuleResult, level: RuleResult) -> bool:
    """The rule ends no beat later than the level clock (every beat both end, at or before its tick)."""
    return all(
        lv.declared_s is None or (r.declared_s is not None and r.declared_s <= lv.declared_s + EPS_S)
        for r, lv in zip(rule.beats, level.beats, strict=True)
    )


def _choose(
    results: Sequence[RuleResult], level_margin_kept: bool, min_saving_s: float
) -> tuple[list[RuleResult], str]:
    """The rules that end every beat right, keep their margin, rest on enough beats, wait no longer than the level
    clock and save at least ``min_saving_s`` of median dead air, best first; and why, or why none."""
    level = results[0]
    if level.tally.n_failed or level.dead_air.median_s is None:
        return [], "the level rule does not end every beat right: no rule is compared with it"
    if not level_margin_kept:
        return [], "the level setting does not keep its quiet margin: no rule is compared with it"
    base = level.dead_air.median_s
    why = []
    fine = []
    for r in results[1:]:
        label = r.rule.label
        h = r.rule.hangover_s
        saved = None if r.dead_air.median_s is None else base - r.dead_air.median_s
        if r.tally.n_failed:
            why.append(f"{label} fails {r.tally.n_failed} of {r.tally.n_beats} beats")
        elif not r.margin_kept:
            why.append(f"{label} does not keep its margin")
        elif r.n_evidence < level.n_evidence:
            why.append(
                f"{label} rests on {r.n_evidence} beats with the provider's event, fewer than {level.n_evidence}"
            )
        elif h is not None and h >= r.rule.quiet_s - EPS_S:
            why.append(f"{label}: its hangover is not under the quiet time (the level clock bounds it)")
        elif not _never_longer(r, level):
            why.append(f"{label} waits longer than the level clock in some beat")
        elif saved is None or saved <= EPS_S:
            why.append(f"{label} saves no dead air")
        elif saved < min_saving_s - EPS_S:
            why.append(f"{label} saves {saved:.2f} s of median dead air, under min_saving_s {min_saving_s:g} s")
        else:
            fine.append(r)
    if not fine:
        return [], "; ".join(why) or "no other rule"
    # At equal dead air, the rule that falls back to the level clock without the event.
    fine.sort(key=lambda r: (r.dead_air.median_s, _PREFERENCE.index(r.rule.kind)))
    best = fine[0]
    return fine, (
        f"{best.rule.label}: 0 failures, dead air median {best.dead_air.median_s:.2f} s against "
        f"{base:.2f} s of the level clock"
    )


def rule_evidence(
    recordings: Sequence[RecordingBeats],
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float,
    quiet_margin_s: float,
    level_margin_kept: bool = True,
    min_saving_s: float = 0.3,
) -> RuleEvidence:
    """Every rule replayed over the recordings' beats at the level setting, and the candidate to recommend
    (derive holds it out of sample before it names it: :func:`settle`).

    Parameters
    ----------
    recordings : sequence of (name, FloorAnalysis, stopped times)
        At ``floor``; see :func:`replay_rule`.
    floor, quiet_s, onset_timeout_s : float
        The level setting.
    quiet_margin_s : float
    level_margin_kept : bool
        Whether the level setting keeps its quiet margin (``GapEvidence.margin_kept``): without it no rule is
        recommended beside it.
    min_saving_s : float
        The median dead air a rule must save against the level clock.
    """
    hangover = hangover_for(recordings, onset_timeout_s=onset_timeout_s, quiet_margin_s=quiet_margin_s)
    results = tuple(
        replay_rule(recordings, rule, onset_timeout_s=onset_timeout_s, quiet_margin_s=quiet_margin_s)
        for rule in _rules(quiet_s, hangover)
    )
    level = results[0]
    spoken = [c for c in level.beats if c.outcome not in (SILENT, MISSED_ONSET)]
    offsets = np.array(
        [c.stopped_s - c.last_word_s for c in spoken if c.stopped_s is not None and c.last_word_s is not None]
    )
    spread = (
        {"min": float(offsets.min()), "p50": float(np.median(offsets)), "max": float(offsets.max())}
        if offsets.size
        else {}
    )
    fine, reason = _choose(results, level_margin_kept, min_saving_s)
    used = [c for c in spoken if c.stopped_s is not None]
    return RuleEvidence(
        floor,
        quiet_s,
        onset_timeout_s,
        len(spoken),
        len(used),
        spread,
        results,
        fine[0].rule.kind if fine else None,
        reason,
        n_assumed=sum(c.stopped_assumed for c in used),
        n_risk=sum(c.stopped_risk for c in used),
        min_saving_s=min_saving_s,
        candidates=tuple(r.rule.kind for r in fine),
    )


def settle(
    evidence: RuleEvidence,
    hold: Callable[[str], tuple[RuleHeldOut | None, tuple[RuleHeldOut, ...], float | None, str]],
) -> RuleEvidence:
    """Name the first candidate that holds out of sample, or none, with the one line that says why.

    Parameters
    ----------
    evidence : RuleEvidence
        From :func:`rule_evidence`.
    hold : callable
        Given a candidate's kind: its held-out evidence (each recording left out; None where there was nothing
        to leave out), each group's, its median saving at the committed setting (None: none replayed), and why
        it does not hold (empty: it holds).
    """
    if not evidence.candidates:
        return replace(evidence, recommended=None, reason=f"the level clock stays: {evidence.reason}")
    failed: list[tuple[str, str]] = []
    first: tuple[RuleHeldOut | None, tuple[RuleHeldOut, ...], float | None] | None = None
    for kind in evidence.candidates:
        held, groups, committed, why = hold(kind)
        if first is None:
            first = (held, groups, committed)
        if not why:
            return replace(
                evidence,
                recommended=kind,
                reason=evidence.reason if kind == evidence.candidates[0] else _named(evidence, kind),
                held_out=held,
                held_out_groups=groups,
                committed_saving_s=committed,
            )
        failed.append((evidence.result(kind).rule.label, why))
    assert first is not None
    whys = {why for _, why in failed}
    if len(whys) == 1 and len(failed) > 1:  # one reason for every candidate: said once
        said = f"{', '.join(label for label, _ in failed)}: each {whys.pop()}"
    else:
        said = "; ".join(f"{label} {why}" for label, why in failed)
    return replace(
        evidence,
        recommended=None,
        reason="the level clock stays: " + said,
        held_out=first[0],
        held_out_groups=first[1],
        committed_saving_s=first[2],
    )


def _named(evidence: RuleEvidence, kind: str) -> str:
    r = evidence.result(kind)
    return (
        f"{r.rule.label}: 0 failures, dead air median {r.dead_air.median_s:.2f} s against "
        f"{evidence.level.dead_air.median_s:.2f} s of the level clock"
    )


def held_out_rule(
    kind: str,
    folds: Sequence[Fold],
    *,
    quiet_margin_s: float,
    by: str = "recording",
) -> RuleHeldOut:
    """One rule out of sample: per recording left out, the hangover from the rest, replayed on it.

    Parameters
    ----------
    kind : str
    folds : sequence of (name, the rest, the one left out, quiet_s, onset_timeout_s)
        The rest and the one left out at the floor derived without it (None
        for the one left out, and the quiet time, when nothing was derived).
    quiet_margin_s : float
    """
    failing: list[tuple[str, int, str]] = []
    right = 0
    for name, rest, left, quiet, timeout in folds:
        if left is None or quiet is None or timeout is None:
            failing.append((name, -1, "nothing derived without it"))
            continue
        lefts = left if isinstance(left, list) else [left]
        hangover = hangover_for(rest, onset_timeout_s=timeout, quiet_margin_s=quiet_margin_s)
        rule = next(r for r in _rules(quiet, hangover) if r.kind == kind)
        found = replay_rule(lefts, rule, onset_timeout_s=timeout, quiet_margin_s=quiet_margin_s)
        bad = [(c.recording, c.index, c.outcome) for c in found.beats if c.outcome in RULE_FAILURES]
        failing.extend(bad)
        right += not bad
    return RuleHeldOut(kind, len(folds), right, tuple(failing), by)
