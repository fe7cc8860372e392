"""The search over candidate floors: the first at which a setting ends every beat right, else the fewest failing.

Pure numpy. A candidate's setting (:func:`evaluate`) and its failures, the
replay's and the beats a floor misreads (:func:`misread_count`); the search
in the engine's order of preference (:func:`search`), and the replay's own
answer where the formula's quiet time fails everywhere (:func:`any_quiet`).
The floors tried come from the windows that meet (:func:`candidate_floors`);
:func:`find_setting` runs the search in its three steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..beats import STALLED
from ..model import CLEAR_S, EPS_S
from ..times import round_up
from .corpus import AtFloor, Corpus, Setting, at_floor, prompt_delay
from .floor import NARROW_DB
from .floor_math import db, floor_ladder, nice_floors, target_floor
from .onset import onset_timeout
from .quiet import choose_quiet
from .region import place_on_grid
from .replay import count_failing, count_failing_at
from .windows import full_ladder, meeting_group

#: Candidate floors inside the windows, and in all, tried before settling for the setting failing fewest beats.
MAX_PRIMARY = 8
MAX_FLOORS_TRIED = 40
#: The floor's rule where no setting ends every beat right.
FEWEST_FAILURES = "fewest failing beats: no setting ends every beat right"


#: Chooses among the settings that end every beat right, given as (floor, quiet_s, onset_timeout_s) in the
#: engine's order of preference (nearest the preferred floor first); returns the index of the one to recommend
#: and a note for the floor's rule (``derive --prefer robust``: :func:`clock.run.stress.robust_preference`).
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

    The replay's own answer at each floor (:meth:`clock.core.analysis.FloorAnalysis.quiet_range`): quiet times
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


@dataclass(frozen=True)
class Candidates:
    """The windows of floors that meet and the floors the search tries in them.

    Attributes
    ----------
    meeting, windowed : list of int
        The largest group of recordings whose windows meet; every recording with a window.
    window : (float, float) or None
        The windows' intersection, set by ``lower_by`` and ``upper_by``.
    primary : list of float
        Floors of two significant digits inside it, nearest the preferred floor first.
    extended : list of float
        Above every recording's noise and below every voice's median, about 1 dB apart: floors the replay may
        still accept when the windows do not all meet, or when none inside them works.
    floor_rule : str
        Where in the window the floor goes, in words.
    """

    meeting: list[int]
    windowed: list[int]
    window: tuple[float, float] | None
    lower_by: str | None
    upper_by: str | None
    primary: list[float]
    extended: list[float]
    floor_rule: str


def candidate_floors(corpus: Corpus, members: list[int], notes: list[str]) -> Candidates:
    """The windows that meet and the floors to try, nearest the preferred one (a narrow intersection is noted)."""
    margins, obs, levels = corpus.margins, corpus.obs, corpus.levels
    meeting = meeting_group(levels, members)
    windowed = [i for i in members if levels[i].window is not None]
    floor_rule = "no floor: no recording has a window of floors that separate its speech from its noise"
    if not meeting:
        return Candidates(meeting, windowed, None, None, None, [], [], floor_rule)
    lo_i = max(meeting, key=lambda i: (levels[i].window[0], -i))  # type: ignore[index]
    hi_i = min(meeting, key=lambda i: (levels[i].window[1], i))  # type: ignore[index]
    lo, hi = levels[lo_i].window[0], levels[hi_i].window[1]  # type: ignore[index]
    speech_low = min(levels[i].speech_low or hi for i in meeting)
    target, floor_rule = target_floor(lo, hi, speech_low)
    floor_rule = floor_rule.format(p=f"{margins.speech_percentile:g}")
    primary = nice_floors(lo, hi, target) or [target]
    width = db(hi) - db(lo)
    if width < NARROW_DB:
        notes.append(
            f"the floors that work for every recording span only {width:.1f} dB ({lo:.4g} .. {hi:.4g}, set by "
            + (f"{obs[lo_i].name} alone" if lo_i == hi_i else f"{obs[lo_i].name} and {obs[hi_i].name}")
            + "): a small change in a voice's or a room's level breaks it"
        )
    noise = max(levels[i].window[0] for i in windowed)  # type: ignore[index]
    top = min(levels[i].speech_median or 0.0 for i in windowed)
    extended = floor_ladder(noise if noise > 0 else hi, top, exclude=primary[:MAX_PRIMARY]) if top > noise else []
    return Candidates(
        meeting, windowed, (lo, hi), obs[lo_i].name, obs[hi_i].name, primary[:MAX_PRIMARY], extended, floor_rule
    )


@dataclass(frozen=True)
class Found:
    """What the search found: the setting (None: nothing to recommend), the recordings it was judged over, those
    without a window it serves (``rescued``), and, where a ladder over every recording found it, how."""

    chosen: Setting | None
    judged: list[int]
    rescued: list[int]
    ladder_rule: str | None = None


def find_setting(
    corpus: Corpus, members: list[int], cands: Candidates, notes: list[str], *, prefer: Prefer | None
) -> Found:
    """The search in its three steps: the candidate floors over the recordings whose windows meet (and those without
    a log), then with the recordings without a window too, then a ladder over every recording with speech."""
    obs = corpus.obs
    judged = sorted(set(cands.windowed) | {i for i in cands.meeting if obs[i].events is None})
    chosen = search(corpus, judged, cands.primary, cands.extended, prefer=prefer) if cands.primary else None
    found = _with_no_window(corpus, members, cands, Found(chosen, judged, []), prefer=prefer)
    hopeless = _hopeless(corpus, members)
    # The windows are a heuristic, the replay is the truth: before giving up, replay a ladder of floors across
    # the whole range, from the lowest noise to the highest speech median, over every recording with speech.
    if found.chosen is None or found.chosen.failures or (hopeless and not found.rescued):
        found = _replay_ladder(corpus, members, found, notes, prefer=prefer)
    return found


def _hopeless(corpus: Corpus, members: list[int]) -> list[int]:
    """Recordings with beats and speech whose noise reaches their speech's low percentile (no window)."""
    levels = corpus.levels
    return [i for i in members if levels[i].window is None and corpus.obs[i].has_beats and levels[i].speech_median]


def _with_no_window(
    corpus: Corpus, members: list[int], cands: Candidates, found: Found, *, prefer: Prefer | None
) -> Found:
    """The recordings without a window tried too, kept only if nothing then fails: they may still be served by a
    floor above their noise (the percentile counts word edges)."""
    levels, chosen = corpus.levels, found.chosen
    hopeless = _hopeless(corpus, members)
    if not hopeless or not (chosen is None or chosen.failures == 0):
        return found
    everyone = sorted(set(found.judged) | set(hopeless))
    noise_all = max((levels[i].noise_high or 0.0) for i in everyone)
    top_all = min(levels[i].speech_median or 0.0 for i in everyone)
    primary, extended = cands.primary, cands.extended
    wider = extended + floor_ladder(noise_all, top_all, exclude=primary + extended) if top_all > noise_all else extended
    setting = search(corpus, everyone, primary, wider, strict=True, prefer=prefer)
    return found if setting is None else Found(setting, everyone, hopeless)


def _replay_ladder(
    corpus: Corpus, members: list[int], found: Found, notes: list[str], *, prefer: Prefer | None
) -> Found:
    """A ladder of floors from the lowest noise to the highest speech median replayed over every recording with
    speech: the lowest that ends every beat right, else the setting that fails fewest beats (noted)."""
    levels, chosen = corpus.levels, found.chosen
    everyone = [i for i in members if levels[i].speech_median is not None]
    rooms = {i: q[1] for i in everyone if (q := corpus.quiet_voice(i)) is not None}
    lo_l, hi_l, ladder = full_ladder(levels, everyone, rooms)
    if not ladder:
        return found
    setting = search(corpus, everyone, [], ladder, strict=True, limit=len(ladder), prefer=prefer)
    if setting is None and prefer is None:
        # The formula's quiet time failed on every floor: ask the replay for any quiet time that works.
        setting = any_quiet(corpus, everyone, ladder)
    span = (
        f"{len(ladder)} floors from {ladder[0]:.2g} (above the lowest noise, {lo_l:.2g}) to {ladder[-1]:.2g} "
        f"(below the highest speech median, {hi_l:.2g})"
    )
    if setting is not None:
        rescued = [i for i in everyone if levels[i].window is None]
        return Found(
            setting, everyone, rescued, f"the lowest of a replayed ladder of {span} that ends every beat right"
        )
    notes.append(f"no floor ends every beat of every recording right: replayed {span}")
    # The fewest failing beats, counted over the same recordings on both sides: every one with speech (the setting
    # found for some of them may fail beats of the others, its onset timeout too).
    kept = None if chosen is None else recount(corpus, everyone, chosen)
    if kept is not None and not kept.failures:
        return found
    tried = [] if chosen is None else [chosen.floor]
    fewest = search(corpus, everyone, tried, ladder, limit=len(ladder) + len(tried))
    if fewest is not None and (kept is None or fewest.failures < kept.failures):
        return Found(fewest, everyone, found.rescued)
    return found if kept is None else Found(kept, found.judged, found.rescued)
