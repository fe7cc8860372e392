"""Whether derive names a rule on the provider's event: held out per recording and per metadata group, and saving
``min_saving_s`` at the committed setting too.

Pure numpy. The rules themselves are replayed in :mod:`clock.core.recommend.rules`
and compared in :mod:`clock.core.recommend.rule_evidence`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..beats import LEVEL
from ..thresholds import STOPPED, Thresholds
from .corpus import Corpus, Without
from .evidence import Derivation, counted
from .heldout import held_out_folds
from .rule_evidence import RuleEvidence, RuleHeldOut, held_out_rule, rule_evidence, settle
from .rules import DeadAir, Fold, RecordingBeats, Rule, hangover_for, replay_rule

#: The metadata keys (``[recordings]`` in speechclock.toml) whose groups a rule on the provider's event must hold
#: without (each left out in turn).
GROUP_KEYS = ("voice", "model", "prompt")


def beats_at(corpus: Corpus, members: Sequence[int], floor: float) -> list[RecordingBeats]:
    """Each recording with beats at one floor, with its beats' provider events (what :mod:`.rules` replays)."""
    return [
        (corpus.obs[i].name, corpus.analysis(i, floor), corpus.stopped(i, floor))
        for i in members
        if corpus.obs[i].has_beats
    ]


def level_dead_air(corpus: Corpus, members: list[int], floor: float, quiet: float, timeout: float) -> DeadAir:
    """What a level setting's beats ended right wait after the last word."""
    found = replay_rule(beats_at(corpus, members, floor), Rule(LEVEL, quiet), onset_timeout_s=timeout)
    return found.dead_air


def provider_rules(
    corpus: Corpus,
    members: list[int],
    without: Without,
    found: Derivation,
    *,
    held_out: bool,
    compare: Thresholds | None = None,
    keys: Sequence[str] = GROUP_KEYS,
) -> RuleEvidence | None:
    """The recommendation's dead air and the other rules replayed beside it; a rule named only where it holds out
    of sample (each recording left out, each group of a metadata key left out) and saves ``min_saving_s`` at the
    committed setting too (:func:`clock.core.recommend.rule_evidence.settle`)."""
    floor, quiet, timeout = found.setting
    if floor is None or quiet is None or timeout is None or found.outcome is None:
        return None
    margin = corpus.margins.quiet_margin_s
    evidence = rule_evidence(
        beats_at(corpus, members, floor),
        floor=floor,
        quiet_s=quiet,
        onset_timeout_s=timeout,
        quiet_margin_s=margin,
        level_margin_kept=found.gaps.margin_kept,
        min_saving_s=corpus.margins.min_saving_s,
    )
    if not evidence.candidates:
        return settle(evidence, lambda kind: (None, (), None, ""))
    logged = [i for i in members if corpus.obs[i].has_beats]
    hold = _Holding(corpus, members, without, logged, metadata_groups(corpus, logged, keys), held_out, compare)
    return settle(evidence, hold.hold)


#: What :func:`clock.core.recommend.rule_evidence.settle` asks of a rule: its held-out replay per recording, per
#: metadata group, its saving at the committed setting, and why it is not named ("" where it is).
Held = tuple[RuleHeldOut | None, tuple[RuleHeldOut, ...], float | None, str]


@dataclass(frozen=True)
class _Holding:
    """A rule held out of sample: derived without each recording (or fold) in turn, then without each group of a
    metadata key, and replayed on what was left out; and its saving at the committed setting (``compare``)."""

    corpus: Corpus
    members: list[int]
    without: Without
    logged: list[int]
    groups: list[tuple[str, dict[str, list[int]]]]
    held_out: bool
    compare: Thresholds | None

    def folds(self, leave: list[list[int]], names: list[str] | None = None) -> list[Fold]:
        """Each fold left out: per recording, or (``names``) per group, its replay input as
        :func:`clock.core.recommend.rule_evidence.held_out_rule` takes it."""
        corpus = self.corpus
        entries: list[Fold] = []
        for k, fold in enumerate(leave):
            f, q, t = self.without(fold).setting
            if f is None or q is None or t is None:
                left_out = [names[k]] if names is not None else [corpus.obs[i].name for i in fold]
                entries.extend((n, [], None, None, None) for n in left_out)
                continue
            rest = beats_at(corpus, [i for i in self.members if i not in fold], f)
            mine: list[RecordingBeats] = [
                (corpus.obs[i].name, corpus.analysis(i, f), corpus.stopped(i, f)) for i in fold
            ]
            if names is not None:
                entries.append((names[k], rest, mine, q, t))
            else:
                entries.extend((m[0], rest, m, q, t) for m in mine)
        return entries

    def hold(self, kind: str) -> Held:
        """The rule ``kind`` held: at the committed setting first, then per recording, then per metadata group;
        the first that fails says why."""
        committed, why = self.at_committed(kind)
        if why:
            return None, (), committed, why
        if not self.held_out:
            return None, (), committed, "was not held out (derive without held-out runs)"
        if len(self.logged) < 2:
            return None, (), committed, "cannot be held out: one recording with an event log"
        margin = self.corpus.margins.quiet_margin_s
        held = held_out_rule(kind, self.folds(held_out_folds(self.logged)), quiet_margin_s=margin)
        if not held.holds:
            n_bad = len({(r, b) for r, b, _ in held.failing})
            return (
                held,
                (),
                committed,
                (
                    f"fails {counted(n_bad, 'beats')} derived without each recording in turn ({held.n_right} of "
                    f"{counted(held.n_recordings, 'recordings')} replay right)"
                ),
            )
        done, why = self.by_group(kind)
        return held, done, committed, why

    def at_committed(self, kind: str) -> tuple[float | None, str]:
        """The rule's saving at the committed setting, and why that is too little ("" where it is enough, or no
        committed setting is given)."""
        compare, min_saving_s = self.compare, self.corpus.margins.min_saving_s
        if compare is None:
            return None, ""
        committed = committed_saving(self.corpus, self.members, kind, compare)
        if committed is not None and committed >= min_saving_s - 1e-9:
            return committed, ""
        said = "nothing" if committed is None else f"{committed:.2f} s"
        return committed, (
            f"saves {said} of median dead air at the committed setting (floor {compare.floor:g}, quiet "
            f"{compare.quiet_s:g} s), under min_saving_s {min_saving_s:g} s"
        )

    def by_group(self, kind: str) -> tuple[tuple[RuleHeldOut, ...], str]:
        """The rule held out per group of each metadata key in turn, up to the first key it fails, and why."""
        margin = self.corpus.margins.quiet_margin_s
        done: list[RuleHeldOut] = []
        for key, named in self.groups:
            names = list(named)
            out = held_out_rule(
                kind,
                self.folds([named[n] for n in names], [f"{key}={n}" for n in names]),
                quiet_margin_s=margin,
                by=key,
            )
            done.append(out)
            if not out.holds:
                bad = sorted({r for r, b, _ in out.failing})
                return tuple(done), (
                    f"fails {counted(len(out.failing), 'beats')} derived without each {key} in turn ("
                    f"{out.n_right} of {counted(out.n_recordings, 'groups')} replay right; "
                    f"left out: {', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''})"
                )
        return tuple(done), ""


def metadata_groups(corpus: Corpus, logged: list[int], keys: Sequence[str]) -> list[tuple[str, dict[str, list[int]]]]:
    """Per metadata key with two or more groups among these recordings: its groups' members (a recording the
    key does not name is in ``(none)``)."""
    out = []
    for key in dict.fromkeys(keys):
        by: dict[str, list[int]] = {}
        for i in logged:
            by.setdefault(str(corpus.obs[i].meta.get(key, "(none)")), []).append(i)
        if len(by) >= 2:
            out.append((key, dict(sorted(by.items()))))
    return out


def committed_saving(corpus: Corpus, members: list[int], kind: str, compare: Thresholds) -> float | None:
    """The rule's median saving against the level clock at the committed setting, its hangover chosen there."""
    beats = beats_at(corpus, members, compare.floor)
    timeout, quiet = compare.onset_timeout_s, compare.quiet_s
    margin = corpus.margins.quiet_margin_s
    hangover = hangover_for(beats, onset_timeout_s=timeout, quiet_margin_s=margin)
    if hangover >= quiet:
        return None  # the level clock bounds the rule: it saves nothing there
    rule = Rule(kind, quiet, None if kind == STOPPED else hangover)
    level = replay_rule(beats, Rule(LEVEL, quiet), onset_timeout_s=timeout, quiet_margin_s=margin).dead_air.median_s
    mine = replay_rule(beats, rule, onset_timeout_s=timeout, quiet_margin_s=margin).dead_air.median_s
    return None if level is None or mine is None else level - mine
