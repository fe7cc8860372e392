"""The search over candidate floors: the first at which a setting ends every beat right, else the fewest failing.

Pure numpy. A candidate's setting (:func:`evaluate`) and its failures, the
replay's and the beats a floor misreads (:func:`misread_count`); the search
in the engine's order of preference (:func:`search`), and the replay's own
answer where the formula's quiet time fails everywhere (:func:`any_quiet`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..beats import STALLED
from ..model import CLEAR_S, EPS_S
from ..times import round_up
from .corpus import AtFloor, Corpus, Setting, at_floor, prompt_delay
from .onset import onset_timeout
from .quiet import choose_quiet
from .region import place_on_grid
from .replay import count_failing, count_failing_at

#: Candidate floors inside the windows, and in all, tried before settling for the setting failing fewest beats.
MAX_PRIMARY = 8


MAX_FLOORS_TRIED = 40


FEWEST_FAILURES = "fewest failing beats: no setting ends every beat right"


#: Chooses among the settings that end every beat right, given as (floor, quiet_s, onset_timeout_s) in the
#: engine's order of preference (nearest the preferred floor first); returns the index of the one to recommend
#: and a note for the floor's rule (``derive --prefer robust``: :func:`clock.io.stress.robust_preference`).
Prefer = Callable[[list[tuple[float, float, float]]], tuple[int, str]]


def misread_count(c: AtFloor, quiet_s: float | None, margin_s: float) -> int:
    """Beats this floor fails that its replay does not: it hears none of a beat the guide spoke in, takes an
    acknowledgment for narration, or hides a narration's end for so long that the clock would declare quiet
    before it.

    The ends and acknowledgments are those each recording shows at its reference floor (its own floor, or one
    under a quieter voice the level split takes for silence: :meth:`clock.core.recommend.corpus.Corpus.misread`); the
    clock declares ``quiet_s`` after the last word it sees, which must come at least ``margin_s`` after that end.
    """
    allowed = (quiet_s if quiet_s is not None else 0.0) - margin_s
    return sum(h > max(allowed, margin_s) for _, _, h in c.hidden) + len(c.unheard) + len(c.acks)


def evaluate(corpus: Corpus, members: list[int], floor: float, delay_s: float) -> tuple[Setting, AtFloor]:
    """The setting at one floor and how many beats it fails (the replay's failures, and hidden narration ends)."""
    margins = corpus.margins
    c = at_floor(corpus, members, floor, prompt_delay_s=delay_s)
    quiet, quiet_rule = choose_quiet(c, margins.quiet_margin_s)
    timeout = onset_timeout(c.latencies, c.waits, margins.onset_margin_s)
    misread = misread_count(c, quiet, margins.quiet_margin_s)
    if quiet is None or timeout is None:
        # No full setting at this floor: a beat whose speech runs into its bound stalls at any quiet time
        # (a floor under the noise hears speech everywhere, so no gap and no onset).
        endless = sum(
            b.spoken and b.room_s == float("-inf") and b.undone(c.narration_pause_s) == STALLED
            for a in c.analyses
            for b in (a.beats[j] for j in a.active_beats().tolist())
        )
        return Setting(floor, quiet, timeout, misread + endless, quiet_rule), c
    failures = misread + count_failing(c.analyses, quiet, timeout)
    return Setting(floor, quiet, timeout, failures, quiet_rule), c


def recount(corpus: Corpus, members: list[int], setting: Setting) -> Setting | None:
    """The setting with its failures counted over ``members`` (replayed, hidden ends, spoken beats unheard), or None
    when it is not a full setting."""
    if setting.quiet_s is None or setting.onset_timeout_s is None:
        return None
    c = at_floor(corpus, members, setting.floor, prompt_delay_s=prompt_delay(corpus, members))
    failures = misread_count(c, setting.quiet_s, corpus.margins.quiet_margin_s)
    failures += count_failing(c.analyses, setting.quiet_s, setting.onset_timeout_s)
    return replace(setting, failures=failures)


def search(
    corpus: Corpus,
    members: list[int],
    primary: list[float],
    extended: list[float],
    *,
    strict: bool = False,
    limit: int = MAX_FLOORS_TRIED,
    prefer: Prefer | None = None,
) -> Setting | None:
    """The first candidate floor at which a setting ends every beat right; else the one failing fewest beats.

    With ``strict``, only a setting that ends every beat right is returned
    (else None). With ``prefer``, the settings of the primary floors that
    end every beat right are handed to it (an extended floor only when no
    primary one does), and it picks one (see :func:`derive`).
    """
    delay = prompt_delay(corpus, members)
    best: Setting | None = None
    right: list[Setting] = []
    for n, (floor, is_extended) in enumerate([(f, False) for f in primary] + [(f, True) for f in extended]):
        if right and is_extended:
            break
        setting, c = evaluate(corpus, members, floor, delay)
        setting = replace(setting, extended=is_extended)
        if setting.failures == 0:
            if prefer is None or is_extended:
                return setting
            right.append(setting)
            continue
        if not strict and not right and setting.quiet_s is not None and setting.onset_timeout_s is not None:
            # The quiet time that fails the fewest beats at this floor.
            options = {setting.quiet_s} | {round(r, 9) for _, _, r in c.rooms if r > 0}
            options |= {round_up(x + 0.01, "0.05") for x in c.needs if x > 0}
            quiets = sorted(options)
            failing = count_failing_at(c.analyses, quiets, setting.onset_timeout_s)
            for q, replayed in zip(quiets, failing):
                f = misread_count(c, q, corpus.margins.quiet_margin_s) + replayed
                if best is None or f < best.failures:
                    best = Setting(floor, q, setting.onset_timeout_s, f, FEWEST_FAILURES, is_extended)
        if n >= limit and (best is not None or strict) and not right:
            break
    if right:
        assert prefer is not None
        # The engine's own choice leads, as the replayed grid places it (what derive recommends without prefer).
        lead = place_on_grid(corpus, members, right[0], [], floor_margin=False)
        right = [lead] + [r for r in right if (r.floor, r.quiet_s) != (lead.floor, lead.quiet_s)]
        pick, note = prefer([(r.floor, r.quiet_s, r.onset_timeout_s) for r in right])  # type: ignore[misc]
        return replace(right[pick], note=note)
    return best


def any_quiet(corpus: Corpus, members: list[int], floors: list[float]) -> Setting | None:
    """The first floor at which some quiet time (not only the formula's) ends every beat right, or None.

    The replay's own answer at each floor (:meth:`clock.core.beats.FloorAnalysis.quiet_range`): quiet times
    above the longest quiet the clock must bridge and up to the least room before a bound; the quiet time is
    then chosen on the replayed grid (:func:`place_on_grid`).
    """
    if any(corpus.obs[i].events is None for i in members):
        return None
    logged = [i for i in members if corpus.obs[i].has_beats]
    delay = prompt_delay(corpus, members)
    for floor in floors:
        analyses = [corpus.analysis(i, floor) for i in logged]
        ranges = [a.quiet_range(narration_pause_s=a.narration_pause_s) for a in analyses]
        need = max((r[0] for r in ranges), default=float("-inf"))
        room = min((r[1] for r in ranges), default=float("inf"))
        if not (need > 0 and need < room):
            continue
        c = at_floor(corpus, members, floor, prompt_delay_s=delay)
        timeout = onset_timeout(c.latencies, c.waits, corpus.margins.onset_margin_s)
        if timeout is None:
            continue
        margin = corpus.margins.quiet_margin_s
        quiet = round_up(need + margin + CLEAR_S, "0.05")
        rule = f"the longest quiet the clock must bridge at this floor, {need:.3f} s, + margin {margin:g} s, rounded up"
        if quiet > room + EPS_S:
            quiet = min(room, round_up(need + CLEAR_S, "0.001"))
            rule = (
                f"just above the longest quiet the clock must bridge at this floor, {need:.3f} s (the room before a "
                f"bound, {room:.3f} s, cannot hold the margin)"
            )
        failures = misread_count(c, quiet, corpus.margins.quiet_margin_s) + count_failing(c.analyses, quiet, timeout)
        if failures == 0:
            return Setting(floor, quiet, timeout, 0, rule, extended=True)
    return None
