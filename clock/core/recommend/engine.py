"""Derive the floor, the quiet time and the onset timeout from recordings: the engine's steps in order.

Pure numpy. :func:`derive` is the one recommendation engine; each step is in
the module named for it (see :mod:`clock.core.recommend`).

Telling speech from noise without assuming a floor
--------------------------------------------------
The floor being derived is never used to decide which ticks are speech:

1. **labels** (ground truth, when a recording has an Audacity label track):
   a tick is *speech* when its analyser window lies inside a labelled
   utterance, *silence* when its window stays clear of every utterance by
   0.1 s before it and 0.5 s after it (word tails and codec decay are not
   silence);
2. **exact-zero runs**: a tick whose level is exactly 0 is silence;
3. **split** (without labels): a two-mode split of the log-levels of the
   non-zero ticks (Otsu's threshold); runs above it, joined across dips
   shorter than 0.3 s, are the utterances; silence keeps the same guard
   from them as with labels.

A speech tick is also within ``speech_range_db`` (20 dB) of its utterance's
median, and, when the recording has an event log, inside a beat.

Per recording: a floor window
-----------------------------
* **noise**: the median and the 99th percentile of its silence ticks (not
  the single loudest tick);
* **speech low**: the ``speech_percentile`` (5th) percentile of its speech
  ticks;
* **window**: floors above the noise's 99th percentile and at least
  ``floor_margin_db`` (3 dB) below its speech low. A recording whose noise
  reaches that high has no window: a level-floor clock cannot work on it,
  and it contributes no floor, gap or quiet-time evidence.

The corpus
----------
* **floor**: inside the intersection of the windows (the largest group of
  recordings whose windows meet; the others are named): 6 dB below the
  lowest speech low, unless that is closer to the noise edge than to the
  speech edge, then the middle of the intersection in dB; a two-significant-
  digit value near it that the replay accepts (below).
* **quiet time**: at that floor, the longest gap the clock must bridge inside
  a beat (a narration's inter-sentence gaps, and the silence between an
  overlapping acknowledgment and the narration), unpaused time only, plus
  ``quiet_margin_s`` (0.2 s), rounded up to the first multiple of 0.05 s
  above it (so ``check``'s gap check holds); but never more than the quiet
  left after the last word before the beat's bound (the next prompt or
  terminal response), or the clock would stall. Where that room cannot hold
  the margin, ``GapEvidence.margin_kept`` is False and a warning names the
  beat and the margin left. A beat the page ended (``end``) sets no room: a
  longer quiet time aborts it, and an aborted beat is not a failure.
* **onset timeout**: the longest onset latency plus ``onset_margin_s`` (2 s),
  rounded up to 0.5 s.

Every candidate setting is checked with :func:`clock.core.decide.decide` (the
replay's decisions) on every beat; the first floor, nearest the preferred
one, at which a quiet time and timeout end every beat right is the engine's
floor. The recommendation is then placed on a replayed grid through it
(:func:`clock.core.recommend.region.place_on_grid`: floors 1 dB apart, the quiet times and onset timeouts
each floor allows): the setting no failing one comes within both margins
of, nearest the engine's floor with the least quiet time; along an axis
whose valid run is narrower than twice its margin, the run's centre, said
with both edges. The floor is then placed in the run of floors that end
every beat right at that setting (:class:`clock.core.recommend.floor.FloorRange`: each edge near the
floor found by replay to 0.1 dB), at least ``floor_margin_db`` inside both
edges where the run is twice that wide, else at its centre in dB with a
warning naming it. The formulas above stay in the rules as evidence
(``derive(prefer=...)`` chooses among all the candidate floors' settings
that do instead). The windows are a heuristic and the replay the truth:
when no candidate works, a ladder of floors about 1 dB apart from the lowest
noise (a room's, not a quieter voice the split takes for silence) to the
highest speech median is replayed over every recording before the engine
says no floor works; then the setting that fails the fewest beats, counted
over every recording with speech, is recommended, and each failing beat is
named with its reason. A floor fails a beat the guide spoke in (as derive
tells speech without the floor: :meth:`clock.core.recommend.corpus.Corpus.spoke`)
that it does not hear, in every search.

**Out of sample** (``Derivation.held_out``): each recording with beats is
left out in turn, the rest derive a setting (sharing the per-recording
analyses), and that setting is replayed on the recording left out. Gap evidence comes from gaps inside beats
only; a recording without an event log contributes all its gaps (and says
so), one whose log has no terminal response contributes none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..model import Margins, Observation
from ..thresholds import Thresholds
from .corpus import AtFloor, Corpus, Setting, at_floor
from .evidence import Comparison, Derivation, Stability
from .floor import floor_evidence
from .heldout import held_out_runs, stability_runs
from .notes import (
    log_notes,
    no_window_notes,
    outside_notes,
    settle_checks,
    thin_notes,
)
from .onset import onset_evidence
from .quiet import gap_evidence
from .region import place_on_grid
from .replay import replay_outcome, replay_recommendation
from .rule_choice import GROUP_KEYS, level_dead_air, provider_rules
from .search import (
    FEWEST_FAILURES,
    Candidates,
    Prefer,
    candidate_floors,
    find_setting,
)


def derive(
    observations: Sequence[Observation],
    *,
    margins: Margins | None = None,
    group: str = "all",
    compare: Thresholds | None = None,
    compare_label: str = "committed",
    prefer: Prefer | None = None,
    held_out: bool = True,
    group_keys: Sequence[str] = GROUP_KEYS,
    committed: Thresholds | None = None,
) -> Derivation:
    """Derive the floor, the quiet time and the onset timeout from recordings, and replay them.

    Parameters
    ----------
    observations : sequence of Observation
    margins : Margins, optional
    group : str
        A name for this group (``--by voice`` gives one per voice).
    compare : Thresholds, optional
        Another setting to replay the same way, beside the recommendation
        (``Derivation.compared``): the committed one, or a candidate.
    compare_label : str
        What ``compare`` is (``committed`` or ``candidate``).
    prefer : callable, optional
        Chooses among the candidate settings that end every beat right (see
        :data:`Prefer`): it gets them as (floor, quiet_s, onset_timeout_s),
        in the engine's order (the first is what it would recommend), and
        returns the index of the one to recommend and a note for the floor's
        rule. Without it, the first. The leave-one-out runs (stability,
        held-out) keep the engine's order: a preference may look at every
        recording, the one left out too.
    held_out : bool
        Also derive without each recording with an event log in turn and
        replay the result on it (``Derivation.held_out``). Without it, no
        rule on the provider's event is named (``Derivation.rules``).
    group_keys : sequence of str
        Metadata keys (``Observation.meta``) whose groups a rule on the
        provider's event must hold without, each left out in turn, where a
        key has two or more groups (default: voice, model, prompt).
    committed : Thresholds, optional
        The setting the page runs (default: ``compare``): a rule on the
        provider's event is named only where it saves ``min_saving_s`` there
        too. Given, even where ``compare`` is not (the built-in defaults are
        what a page without a config runs).

    Returns
    -------
    Derivation
        The recommendation (``Derivation.setting``), its evidence, its
        replay over the corpus, and how stable it is.
    """
    corpus = Corpus.of(list(observations), margins or Margins())
    members = list(range(len(corpus.obs)))
    found = _derive(corpus, members, group, stability=True, prefer=prefer)

    def without(fold: Sequence[int]) -> Derivation:
        return _without(corpus, members, fold, group)

    if held_out:
        found = replace(found, held_out=held_out_runs(corpus, members, without))
    rules = provider_rules(
        corpus, members, without, found, held_out=held_out, compare=committed or compare, keys=group_keys
    )
    found = replace(found, rules=rules)
    if compare is None:
        return found
    return replace(found, compared=_compared(corpus, members, compare, compare_label))


def _compared(corpus: Corpus, members: list[int], compare: Thresholds, label: str) -> Comparison:
    """Another setting replayed as the recommendation is, with the dead air its beats ended right wait."""
    floor, quiet, timeout = compare.floor, compare.quiet_s, compare.onset_timeout_s
    outcome = replay_outcome(corpus, members, floor, quiet, timeout, spoke=True)
    return Comparison(
        label,
        floor,
        quiet,
        timeout,
        outcome if outcome.n_recordings else None,
        level_dead_air(corpus, members, floor, quiet, timeout) if outcome.n_recordings else None,
    )


def _derive(
    corpus: Corpus, members: list[int], group: str, *, stability: bool, prefer: Prefer | None = None
) -> Derivation:
    """One derivation over ``members``: the candidate floors, the search, the setting placed on the replayed grid,
    the evidence and the notes; with ``stability``, the warnings of the floor margin and the leave-one-out runs."""
    obs, levels = corpus.obs, corpus.levels
    notes: list[str] = []
    cands = candidate_floors(corpus, members, notes)
    found = find_setting(corpus, members, cands, notes, prefer=prefer)
    chosen = found.chosen
    if (
        prefer is None
        and chosen is not None
        and chosen.failures == 0
        and chosen.quiet_s is not None
        and chosen.onset_timeout_s is not None
    ):
        # The floor margin is a warning: the leave-one-out runs, which keep only the setting, skip it. Placed
        # before the notes on recordings without a window, so that they name the floor recommended.
        chosen = place_on_grid(corpus, found.judged, chosen, notes, floor_margin=stability)
    notes += no_window_notes(corpus, members, chosen, found.rescued, replay=stability)
    floor = chosen.floor if chosen is not None else None
    notes += outside_notes(corpus, cands.windowed, cands.meeting, floor)
    floor_ev = floor_evidence(
        corpus,
        members,
        cands.meeting,
        cands.window,
        cands.lower_by,
        cands.upper_by,
        tuple(obs[i].name for i in cands.windowed if i not in cands.meeting),
        tuple(obs[i].name for i in members if levels[i].window is None),
        floor,
        _floor_rule(cands, found.ladder_rule, chosen),
        None if chosen is None or chosen.failures else chosen.run,
    )
    notes += log_notes(corpus, members, found.judged)
    c = at_floor(corpus, found.judged, floor) if floor is not None else AtFloor([], [], [], [], [], [], [], [])
    gaps_ev = gap_evidence(corpus, found.judged, chosen, c, notes)
    onsets_ev = onset_evidence(c, chosen, corpus.margins)
    outcome = replay_recommendation(corpus, members, chosen, notes) if stability else None
    notes[:] = settle_checks(notes, corpus, members, chosen, outcome)
    notes += thin_notes(gaps_ev.n_gaps, onsets_ev.n_beats, len(members))
    stab: tuple[Stability, ...] = ()
    if stability:
        stab = stability_runs(
            corpus, members, lambda fold: _without(corpus, members, fold, group), floor_ev, gaps_ev, onsets_ev
        )
    return Derivation(
        group, tuple(obs[i].name for i in members), floor_ev, gaps_ev, onsets_ev, outcome, stab, tuple(notes)
    )


def _floor_rule(cands: Candidates, ladder_rule: str | None, chosen: Setting | None) -> str:
    """How the floor was reached, in words: where in the windows, what the replay made of it, and how the grid
    placed it."""
    floor_rule = cands.floor_rule
    if chosen is None:
        return floor_rule
    if chosen.failures:
        floor_rule = FEWEST_FAILURES
    elif ladder_rule is not None:
        floor_rule = ladder_rule
    elif chosen.extended:
        floor_rule = (
            "the lowest floor above every recording's noise (p99) that the replay accepts and that hides "
            "no narration's end (the windows do not all meet)"
        )
    elif chosen.note:
        floor_rule += f", rounded to 2 significant digits; {chosen.note}"
    elif chosen.floor != cands.primary[0] and not chosen.floor_rule:
        floor_rule += f"; the replay rejected {cands.primary[0]:g}, {chosen.floor:g} is the nearest floor it accepts"
    elif not chosen.floor_rule:
        floor_rule += ", rounded to 2 significant digits"
    if chosen.floor_rule and not chosen.failures:
        floor_rule += f"; {chosen.floor_rule}"
    return floor_rule


def _without(corpus: Corpus, members: list[int], left: int | Sequence[int], group: str) -> Derivation:
    """The derivation without one recording, or a fold of them (once per corpus: the stability and held-out runs
    share it)."""
    out = {left} if isinstance(left, int) else set(left)
    rest = tuple(i for i in members if i not in out)
    if rest not in corpus.without:
        corpus.without[rest] = _derive(corpus, list(rest), group, stability=False)
    return corpus.without[rest]
