"""Out of sample: each recording (or fold) left out in turn, and each number without its driving recording.

Pure numpy. The derivations without some recordings are shared per corpus
(:data:`clock.core.recommend.corpus.Without`).
"""

from __future__ import annotations

import numpy as np

from ..decide import decide_quiets
from ..outcome import OUTCOMES
from .corpus import Corpus, Without
from .evidence import (
    Derivation,
    FloorEvidence,
    GapEvidence,
    HeldOut,
    HeldOutRecording,
    OnsetEvidence,
    Stability,
    Unsatisfied,
)
from .replay import FAILURE_CODES

#: Up to this many recordings with beats, each is left out in turn; past it, as many folds (every
#: ``MAX_HELD_OUT``-th recording left out together), so the held-out derivations stay linear in the recordings.
MAX_HELD_OUT = 20


def held_out_folds(logged: list[int]) -> list[list[int]]:
    """The folds left out in turn: each recording alone, or past ``MAX_HELD_OUT`` of them, every
    ``MAX_HELD_OUT``-th together."""
    return (
        [[i] for i in logged] if len(logged) <= MAX_HELD_OUT else [logged[k::MAX_HELD_OUT] for k in range(MAX_HELD_OUT)]
    )


def held_out_runs(corpus: Corpus, members: list[int], without: Without) -> HeldOut | None:
    """Leave each recording with beats out in turn (or each fold of them), derive from the rest, replay the
    result on it (decide)."""
    logged = [i for i in members if corpus.obs[i].has_beats]
    if len(members) < 2 or not logged:
        return None
    folds = held_out_folds(logged)
    found: dict[int, HeldOutRecording] = {}
    for fold in folds:
        floor, quiet, timeout = without(fold).setting
        for i in fold:
            name = corpus.obs[i].name
            if floor is None or quiet is None or timeout is None:
                found[i] = HeldOutRecording(name, floor, quiet, timeout, 0, False, ())
                continue
            a = corpus.analysis(i, floor)
            codes = decide_quiets(a, quiets_s=[quiet], onset_timeout_s=timeout).outcome[:, 0]
            # A failure: the replay's, or a beat the guide spoke in that the floor does not hear.
            deaf = np.zeros(codes.size, bool)
            deaf[corpus.speech_unheard(i, a)] = True
            fails = np.isin(codes, FAILURE_CODES)
            failing = tuple(
                Unsatisfied(
                    name,
                    j,
                    a.beats[j].terminal_s,
                    OUTCOMES[codes[j]],
                    f"derived without {name}: "
                    + (OUTCOMES[codes[j]] if fails[j] else "the floor hears none of the guide"),
                )
                for j in np.flatnonzero(fails | deaf).tolist()
            )
            n_heard = int(np.count_nonzero(codes != OUTCOMES.index("unheard")))
            found[i] = HeldOutRecording(name, floor, quiet, timeout, n_heard, not failing, failing)
    ordered = tuple(found[i] for i in logged)
    return HeldOut(len(ordered), sum(r.right for r in ordered), ordered, len(folds))


def stability_runs(
    corpus: Corpus,
    members: list[int],
    derived_without: Without,
    floor_ev: FloorEvidence,
    gaps_ev: GapEvidence,
    onsets_ev: OnsetEvidence,
) -> tuple[Stability, ...]:
    """Leave the driving recording of each number out and derive again."""
    names = {corpus.obs[i].name: i for i in members}
    floor_driver = None
    if floor_ev.floor is not None and floor_ev.window is not None:
        above = floor_ev.above_db if floor_ev.above_db is not None else float("inf")
        below = floor_ev.below_db if floor_ev.below_db is not None else float("inf")
        floor_driver = floor_ev.lower_by if above < below else floor_ev.upper_by
    quiet_driver = gaps_ev.longest[0][0] if gaps_ev.longest else None
    onset_driver = onsets_ev.slowest[0] if onsets_ev.slowest else None
    without: dict[str, Derivation] = {}
    for driver in (floor_driver, quiet_driver, onset_driver):
        if driver is not None and driver not in without and len(members) > 1:
            without[driver] = derived_without([names[driver]])

    def entry(quantity: str, value: float | None, driver: str | None, pick: int) -> Stability:
        other = without.get(driver) if driver is not None else None
        return Stability(quantity, value, driver, None if other is None else other.setting[pick])

    return (
        entry("floor", floor_ev.floor, floor_driver, 0),
        entry("quiet_s", gaps_ev.quiet_s, quiet_driver, 1),
        entry("onset_timeout_s", onsets_ev.onset_timeout_s, onset_driver, 2),
    )
