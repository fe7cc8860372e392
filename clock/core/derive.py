"""Derive the floor, the quiet time and the onset timeout from recordings, with the evidence.

Pure numpy. This is the one recommendation engine: ``derive``, ``sweep``,
``report``, the notebook and the API all call :func:`derive`. One recording
is an observation, not a claim: every number carries the count it rests on,
which recording drives it and what it would be without that recording, and
the recommended setting is replayed over the whole corpus before it is
returned.

The engine lives here; what it computes once per recording (ticks told
apart, levels, windows of floors) is in :mod:`clock.core.windows`, and the
evidence it returns (the result dataclasses, the gaps and rooms at a floor,
the replay of a setting) in :mod:`clock.core.evidence`. Every public name
is importable from here.

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
(:func:`_grid_quiet`: floors 1 dB apart, the quiet times and onset timeouts
each floor allows): the setting no failing one comes within both margins
of, nearest the engine's floor with the least quiet time; along an axis
whose valid run is narrower than twice its margin, the run's centre, said
with both edges. The floor is then placed in the run of floors that end
every beat right at that setting (:class:`_FloorRun`: each edge near the
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
tells speech without the floor: :meth:`clock.core.evidence._Corpus.spoke`)
that it does not hear, in every search.

**Out of sample** (``Derivation.held_out``): each recording with beats is
left out in turn, the rest derive a setting (sharing the per-recording
analyses), and that setting is replayed on the recording left out. Gap evidence comes from gaps inside beats
only; a recording without an event log contributes all its gaps (and says
so), one whose log has no terminal response contributes none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

import numpy as np
from numpy.typing import NDArray

from .analysis import FloorAnalysis
from .beats import beats, heard
from .decide import decide_quiets, failing_beats
from .evidence import (
    _UNPROMPTED,
    THIN,
    Comparison,
    Derivation,
    FloorEvidence,
    FloorRun,
    GapEvidence,
    HeldOut,
    HeldOutRecording,
    OnsetEvidence,
    Outcome,
    Stability,
    Unsatisfied,
    _at_floor,
    _AtFloor,
    _Corpus,
    _count,
    _floor_evidence,
    _gap_onset_outcome,
    _prompt_delay,
    _replay_outcome,
    _Setting,
    floor_that_works,
    level_failures,
    round_sig,
)
from .model import CLEAR_S, EPS_S
from .outcome import FAILURES, OUTCOMES, STALLED
from .rules import (
    LEVEL,
    STOPPED,
    DeadAir,
    Fold,
    RecordingBeats,
    Rule,
    RuleEvidence,
    RuleHeldOut,
    hangover_for,
    held_out_rule,
    replay_rule,
    rule_evidence,
    settle,
)
from .thresholds import Thresholds
from .times import clock_time, round_up
from .windows import (
    MARGIN_BOUNDS,
    NOISE_PERCENTILE,
    Margins,
    Observation,
    RecordingLevels,
    TickClasses,
    _db,
    _ladder,
    _meeting_group,
    _nice_floors,
    _target,
    classify_ticks,
    equivalents,
    recording_levels,
)

__all__ = [
    "MARGIN_BOUNDS",
    "Comparison",
    "Derivation",
    "FloorEvidence",
    "FloorRun",
    "GapEvidence",
    "HeldOut",
    "HeldOutRecording",
    "Margins",
    "Observation",
    "OnsetEvidence",
    "Outcome",
    "RecordingLevels",
    "Stability",
    "TickClasses",
    "Unsatisfied",
    "classify_ticks",
    "derive",
    "equivalents",
    "judge",
    "recording_levels",
]

#: A window of floors narrower than this (dB) is flagged.
NARROW_DB = 6.0
#: Candidate floors inside the windows, and in all, tried before settling for the setting failing fewest beats.
MAX_PRIMARY = 8
MAX_FLOORS_TRIED = 40
FEWEST_FAILURES = "fewest failing beats: no setting ends every beat right"

#: Chooses among the settings that end every beat right, given as (floor, quiet_s, onset_timeout_s) in the
#: engine's order of preference (nearest the preferred floor first); returns the index of the one to recommend
#: and a note for the floor's rule (``derive --prefer robust``: :func:`clock.run.stress.robust_preference`).
Prefer = Callable[[list[tuple[float, float, float]]], tuple[int, str]]


#: The metadata keys (``[recordings]`` in speechclock.toml) whose groups a rule on the provider's event must hold
#: without (each left out in turn).
GROUP_KEYS = ("voice", "model", "prompt")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _failing_beats(analyses: list[FloorAnalysis], quiet_s: float, onset_timeout_s: float) -> int:
    return _failing_beats_at(analyses, [quiet_s], onset_timeout_s)[0]


_FAILURE_CODES = [OUTCOMES.index(x) for x in FAILURES]


def _failing_beats_at(analyses: list[FloorAnalysis], quiets_s: list[float], onset_timeout_s: float) -> list[int]:
    """Failing beats for each quiet time, every quiet time decided at once per recording (the one judge).

    Each recording is judged on its own (``P``, which tells an aborted beat from an outpaced one, is its own).
    """
    total = np.zeros(len(quiets_s), np.int64)
    for a in analyses:
        total += failing_beats(a, quiets_s=quiets_s, onset_timeout_s=onset_timeout_s)
    return [int(x) for x in total]


def _choose_quiet(c: _AtFloor, margin: float) -> tuple[float | None, str]:
    """The quiet time at one floor: the longest gap plus the margin, within the room the beats leave.

    Gaps inside logged beats must be bridged (the replay holds the quiet time
    to them); gaps of recordings without a log count too, but never push the
    quiet time past the room a logged beat leaves before its bound.
    """
    logged = max((g for _, _, g, _ in c.gaps), default=None)
    unlogged = max((g for _, _, g in c.unlogged_gaps), default=None)
    longest = max((g for g in (logged, unlogged) if g is not None), default=None)
    if longest is None:
        return None, "no gap inside a beat"
    room = min((r for _, _, r in c.rooms), default=None)
    need = max(c.needs, default=float("-inf"))
    preferred = round_up(longest + margin + CLEAR_S, "0.05")
    rule = f"longest gap {longest:.3f} s + margin {margin:g} s, rounded up to 0.05 s"
    if room is None or preferred <= room + EPS_S:
        return preferred, rule
    if logged is not None and unlogged is not None and unlogged > logged:
        honoured = round_up(logged + margin + CLEAR_S, "0.05")
        if honoured <= room + EPS_S:
            return honoured, (
                f"longest gap inside a logged beat {logged:.3f} s + margin {margin:g} s, rounded up to 0.05 s "
                f"(a gap of {unlogged:.3f} s in a recording without a log would stall a logged beat)"
            )
    base = logged if logged is not None else longest
    if need >= room or base >= room:
        return preferred, rule
    # The margin does not fit before the nearest bound: halfway between the longest gap and the room.
    middle = Decimal(repr(round_up((base + room) / 2, "0.05")))
    for k in range(0, 200):
        q = float(middle - Decimal("0.05") * k)
        if need < q - EPS_S <= room:
            return q, (
                f"halfway between the longest gap {base:.3f} s and the least room after a last word {room:.3f} s "
                f"(the margin {margin:g} s does not fit), rounded to 0.05 s"
            )
    return round(
        room, 9
    ), f"the least room after a last word, {room:.3f} s (the longest gap {base:.3f} s leaves no margin)"


#: The most floors tried, nearest the engine's, where the floor is placed inside the run that keeps its margin.
_MAX_TRIED = 4
#: The floor grid's step (dB) and its most floors on each side of the engine's floor.
GRID_DB = 1.0
MAX_GRID_FLOORS = 40
#: Where the floor margin depends on it, the failing floor nearest a setting is found this close (dB) between two
#: floors of the grid.
EDGE_DB = 0.1


@dataclass(frozen=True, slots=True)
class _GridFloor:
    """What one floor of the grid allows: quiet times ``need_s < q <= room_s``, onset timeouts above ``wait_s``."""

    floor: float
    ok: bool  # it hears every beat the guide spoke in and reads each as its reference does, and some quiet time works
    need_s: float
    room_s: float
    wait_s: float
    latency_s: float
    room_at: tuple[str, float | None, str] | None
    unheard: bool = False  # a beat the engine's floor hears goes unheard (every higher floor hears less)
    why: str = "fails a beat"  # why it fails, where not ``ok`` (else the replay fails a beat at the setting)

    def allows(self, quiet_s: float, onset_timeout_s: float) -> bool:
        return self.ok and self.need_s < quiet_s - EPS_S <= self.room_s and self.wait_s < onset_timeout_s - EPS_S

    def fails(self, digits: int = 2) -> str:
        """A failing floor and why, in words: ``0.0014 hides a narration's end``, ``0.0026 fails a beat``."""
        return f"{self.floor:.{digits}g} {self.why}"


def _noise_cleared(corpus: _Corpus, logged: list[int], clear: float) -> float:
    """The loudest noise (p99) of these recordings under ``clear``, the engine's floor (0.0: none)."""
    return max((x for x in (corpus.levels[i].noise_high for i in logged) if x is not None and x < clear), default=0.0)


def _grid_floor(
    corpus: _Corpus, logged: list[int], floor: float, spoke_at: list[NDArray[np.bool_]], delay: float, clear: float
) -> _GridFloor:
    """One floor of the grid, from one analysis per recording (the sweep's shared work, cached per floor)."""
    margin = corpus.margins.quiet_margin_s
    need, room, wait, latency, room_at = float("-inf"), float("inf"), float("-inf"), float("-inf"), None
    # A floor at or under a recording's noise (p99) that the engine's floor clears hears its room as speech.
    if floor <= _noise_cleared(corpus, logged, clear):
        return _GridFloor(floor, False, need, room, wait, latency, room_at, why="lies at or under a recording's noise")
    analyses = [corpus.analysis(i, floor) for i in logged]
    why = ""
    unheard = False
    for i, a, spoke in zip(logged, analyses, spoke_at):
        hidden, acks = corpus.misread(i, a)
        if acks:
            why = why or "takes an acknowledgment for narration"
        if any(h > margin for _, h in hidden):
            why = why or "hides a narration's end"
        # Only beats the guide spoke in or with speech here can tell (the others are silent or unheard): visit those.
        for j in np.union1d(np.flatnonzero(spoke), a.active_beats()).tolist():
            b, s = a.beats[j], bool(spoke[j])
            if s and not b.spoken:
                # The guide spoke, the clock does not hear it at this floor.
                why, unheard = "hears none of a beat the guide spoke in", True
            if not b.spoken:
                continue
            need = max(need, b.need_s)
            if b.wait_s is not None:
                wait = max(wait, b.wait_s)
            if b.onset_tick is not None and not b.after_early_end:
                latency = max(latency, float(a.t_s[b.onset_tick]) - b.terminal_s)
            if b.undone(a.narration_pause_s) != STALLED:
                continue  # (a bound the page caused moves; one the visitor, the backend or the recording caused)
            # Without the prompt in the log, the page prompted some time before the next response.
            r_s = b.room_s - (delay if b.bound in _UNPROMPTED else 0.0)
            if r_s < room:
                room, room_at = r_s, (corpus.obs[i].name, b.last_word_s, b.bound)
    # No silence to bridge inside a span (one run of speech per beat at this floor): quiet times start above 0.
    need = max(need, 0.0)
    if not why and room <= need:
        why = "fails a beat at every quiet time"
    return _GridFloor(floor, not why, need, room, wait, latency, room_at, unheard, why or "fails a beat")


def _quiet_on_axis(g: _GridFloor, margin: float, tick_s: float) -> tuple[float, bool]:
    """The quiet time at one floor of the grid: the least at least ``margin`` from every failing one (rounded up
    to 0.05 s where that keeps it), or, where the run is narrower than twice the margin, its centre (to 0.01 s).
    Returns it and whether the margin is kept."""
    need, room = g.need_s, g.room_s
    if room - need >= 2 * margin - EPS_S:
        # The longest gap runs to the next speech tick, a tick past the last quiet tick (check holds gaps to it).
        gap = need + tick_s
        q = round_up(gap + margin + CLEAR_S, "0.05")
        if room - q < margin - EPS_S:
            q = round_up(gap + margin + CLEAR_S, "0.001")
        return q, True
    centre = (need + room) / 2
    for step in ("0.01", "0.001"):
        near = float((Decimal(repr(centre)) / Decimal(step)).to_integral_value() * Decimal(step))
        if need < near - EPS_S <= room:
            return near, False
    return round(centre, 9), False


def _boxed_quiet(
    grid: list[_GridFloor], j: int, margin: float, fmargin: float, tick_s: float, formula: float | None
) -> float | None:
    """The least quiet time at floor ``grid[j]`` that stays ``margin`` from every failing quiet time at every floor
    closer than ``fmargin`` dB (so no failing setting is within both margins of it), or None when none does.

    Rounded up to 0.05 s where that keeps it (the formula's own value first, when it does)."""
    rows = [g for i, g in enumerate(grid) if i == j or abs(i - j) * GRID_DB < fmargin - EPS_S]  # itself at 0 dB
    if not all(g.ok for g in rows):
        return None
    lo = max(g.need_s for g in rows) + tick_s + margin + CLEAR_S
    hi = min(g.room_s for g in rows) - margin
    if formula is not None and lo <= formula <= hi + EPS_S:
        return formula
    for step in ("0.05", "0.001"):
        q = round_up(lo, step)
        if q <= hi + EPS_S:
            return q
    return None


def _grid_quiet(
    corpus: _Corpus, members: list[int], chosen: _Setting, notes: list[str], *, floor_margin: bool = True
) -> _Setting:
    """The setting chosen on a replayed grid of floors, quiet times and onset timeouts.

    Floors in ``GRID_DB`` steps through the engine's floor, from the lowest
    noise to the highest speech median; at each, one analysis per recording
    (cached: the leave-one-out runs share them) gives, as the replay decides
    (:meth:`clock.core.beat_analysis.BeatAnalysis.allows`), the quiet times that end
    every beat right (``need < q <= room``) and the onset timeouts (above
    the longest wait: that axis is separable). A floor at which a beat the
    engine's floor hears (or the guide spoke in: :meth:`_Corpus.spoke`) goes
    unheard, which hides a narration's end or takes an acknowledgment for
    narration (:meth:`_Corpus.misread`), or which lies at or under a
    recording's noise (p99) that the engine's floor clears, fails; the grid
    reaches the first floor past the lowest noise and the highest speech
    median. Where a setting's floor margin turns on it, the failing floor
    nearest it is found between two grid floors by bisection (``EDGE_DB``).
    Recommended, nearest the engine's floor and then with the
    least quiet time: a setting no failing one comes within both margins of
    (its quiet time ``quiet_margin_s`` clear at every floor closer than
    ``floor_margin_db``, and no failing floor that close along the floor
    axis; :func:`_boxed_quiet`); else one at least the margins from every
    failing setting along each axis through it, where an axis whose valid
    run is narrower than twice its margin gives the run's centre, said with
    both edges; else any setting that ends every beat right, with a warning.
    The onset timeout is the formula's at the floor (``onset_margin_s`` over
    the longest latency). The formula's quiet time (longest gap + margin,
    rounded up to 0.05 s) stays where it keeps the margins.

    The floor is then placed at that quiet time and timeout: the run of
    floors that end every beat right around it (:class:`_FloorRun`), its
    edges found outward on the grid and, within ``2 * floor_margin_db +
    GRID_DB`` of the floor, by bisection to ``EDGE_DB`` (every point, the
    edges and the floors within the margin of the floor replayed by
    :func:`clock.core.decide.failing_beats`, the one judge); at least
    ``floor_margin_db`` inside both edges where the run allows it (the
    engine's floor where it does, else two significant digits nearest it),
    else the run's centre in dB, with a warning naming the floor.
    """
    margins = corpus.margins
    margin, fmargin = margins.quiet_margin_s, margins.floor_margin_db
    f0 = chosen.floor
    if chosen.quiet_s is None or chosen.onset_timeout_s is None:
        return chosen  # nothing recommended for the quiet time or the timeout: no grid to place it on
    logged = [i for i in members if corpus.obs[i].has_beats]
    if not logged or any(corpus.obs[i].events is None for i in members):
        return chosen
    delay = _prompt_delay(corpus, members)
    # Where the guide spoke: heard at the engine's floor, or as derive tells speech without the floor.
    spoke_at = [corpus.analysis(i, f0).spoken() | corpus.spoke(i) for i in logged]
    lo_l, hi_l, _ = _full_ladder(corpus.levels, [i for i in members if corpus.levels[i].speech_median is not None])
    step = 10 ** (GRID_DB / 20)
    # Down to the first grid floor at or under the lowest noise, and up past the highest speech median: the failing
    # floors nearest the engine's are on the grid.
    down = min(MAX_GRID_FLOORS, max(0, int(np.ceil(np.log(f0 / lo_l) / np.log(step))))) if lo_l > 0 else 0
    up = min(MAX_GRID_FLOORS, max(0, int(np.ceil(np.log(min(hi_l, 1.0) / f0) / np.log(step))))) if hi_l > 0 else 0
    tick = float(corpus.obs[logged[0]].trace.tick_s)

    def at(k: int) -> _GridFloor:
        return _grid_floor(corpus, logged, f0 if k == 0 else float(f0 * step**k), spoke_at, delay, f0)

    # Outward from the engine's floor, down to the first floor under a recording's noise and up to the first at
    # which a beat goes unheard (floors past them fail too; the margin needs the nearest failing floor).
    noise = _noise_cleared(corpus, logged, f0)
    below: list[_GridFloor] = []
    for k in range(-1, -down - 1, -1):
        below.append(at(k))
        if below[-1].floor <= noise:
            break
    above: list[_GridFloor] = []
    for k in range(1, up + 1):
        above.append(at(k))
        if above[-1].unheard:
            break
    grid = [*reversed(below), at(0), *above]
    ks = list(range(-len(below), len(above) + 1))
    at0 = len(below)
    g0 = grid[at0]
    if not g0.ok:
        return chosen
    # The formula's quiet time at the engine's floor, where it keeps the margin from both edges.
    formula = chosen.quiet_s
    candidates = []
    for j, g in enumerate(grid):
        if not g.ok:
            continue
        q, q_kept = _quiet_on_axis(g, margin, tick)
        if j == at0 and formula - g.need_s >= margin - EPS_S and g.room_s - formula >= margin - EPS_S:
            q, q_kept = formula, True
        boxed = _boxed_quiet(grid, j, margin, fmargin, tick, formula if j == at0 else None)
        if boxed is not None:
            q, q_kept = boxed, True
        timeout = _timeout(
            [("", 0.0, g.latency_s)] if g.latency_s > float("-inf") else [],
            [g.wait_s] if g.wait_s > float("-inf") else [],
            margins.onset_margin_s,
        )
        if timeout is None:
            continue
        valid = [x.allows(q, timeout) for x in grid]
        if not valid[j]:
            continue
        lo = next((i for i in range(j, -1, -1) if not valid[i]), None)
        hi = next((i for i in range(j, len(grid)) if not valid[i]), None)
        d_lo = float("inf") if lo is None else (j - lo) * GRID_DB
        d_hi = float("inf") if hi is None else (hi - j) * GRID_DB
        f_kept = d_lo >= fmargin - EPS_S and d_hi >= fmargin - EPS_S
        narrow = lo is not None and hi is not None and (hi - lo) * GRID_DB < 2 * fmargin - EPS_S
        centred = narrow and abs(j - (lo + hi) / 2) <= 0.5 + EPS_S  # type: ignore[operator]
        q_narrow = g.room_s - g.need_s < 2 * margin - EPS_S
        tier = 0 if boxed is not None and f_kept else 1 if (q_kept or q_narrow) and (f_kept or centred) else 2
        candidates.append(
            (tier, abs(ks[j]), q, ks[j], j, q_kept, timeout, lo, hi, boxed is not None, centred, q_narrow)
        )
    if not candidates:
        return chosen

    def nearest(j: int, i: int | None, q: float, timeout: float) -> _GridFloor | None:
        """The failing floor nearest ``grid[j]`` at this setting: ``grid[i]``, or, where the margin turns on it, one
        between ``grid[i]`` and the grid floor next to it towards ``j`` (which the setting passes), by bisection."""
        if i is None or (abs(j - i) - 1) * GRID_DB >= fmargin - EPS_S or abs(j - i) * GRID_DB < fmargin - EPS_S:
            return None if i is None else grid[i]
        good, found = grid[i + 1 if i < j else i - 1].floor, grid[i]
        while abs(_db(found.floor) - _db(good)) > EDGE_DB:
            g = _grid_floor(corpus, logged, float(np.sqrt(good * found.floor)), spoke_at, delay, f0)
            good, found = (g.floor, found) if g.allows(q, timeout) else (good, g)
        return found

    # The chosen setting's floor margin, held to the failing floors between the grid's (re-placed where they change
    # it): how far the nearest failing floor lies on each side, and whether the valid run is narrower than twice the
    # margin (its centre is then within a grid step).
    nearest_failing: dict[int, tuple[_GridFloor | None, _GridFloor | None, bool]] = {}
    while True:
        best = min(candidates)
        tier, _, q, k, j, q_kept, timeout, lo, hi, boxed, centred, q_narrow = best
        if j in nearest_failing:
            break
        lo_g, hi_g = nearest(j, lo, q, timeout), nearest(j, hi, q, timeout)
        d_lo, d_hi = (float("inf") if e is None else abs(_db(grid[j].floor) - _db(e.floor)) for e in (lo_g, hi_g))
        f_kept = d_lo >= fmargin - EPS_S and d_hi >= fmargin - EPS_S
        narrow = d_lo + d_hi < 2 * fmargin - EPS_S
        centred = narrow and abs(d_lo - d_hi) <= GRID_DB + EPS_S
        nearest_failing[j] = (lo_g, hi_g, narrow)
        tier = 0 if boxed and f_kept else 1 if (q_kept or q_narrow) and (f_kept or centred) else 2
        candidates[candidates.index(best)] = (tier, *best[1:])
    g = grid[j]

    def at_floor(f: float) -> _GridFloor:
        return next((x for x in grid if x.floor == f), None) or _grid_floor(corpus, logged, f, spoke_at, delay, f0)

    # Floors the replay (the one judge) fails at this setting though the grid's reading of their beats allows it.
    judged_bad: set[float] = set()

    def allowed(x: _GridFloor) -> bool:
        """The grid's reading of floor ``x`` at the chosen quiet time and timeout: every beat heard, no end hidden,
        above the noise, the quiet time between the longest silence and the least room, the timeout over the
        waits."""
        return x.allows(q, timeout) and x.floor not in judged_bad

    def ends_right(x: _GridFloor) -> bool:
        """Whether floor ``x`` ends every beat right at the chosen quiet time and timeout: the grid's reading and
        the replay's outcomes (:func:`failing_beats`)."""
        if not allowed(x):
            return False
        if any(failing_beats(corpus.analysis(i, x.floor), quiets_s=[q], onset_timeout_s=timeout)[0] for i in logged):
            judged_bad.add(x.floor)
            return False
        return True

    # The floors that end every beat right at this quiet time and timeout, around the chosen one: outward on the
    # grid to the first that does not, then, where an edge lies near enough to bear on the floor margin, by
    # bisection (each point replayed). The floors the margin is claimed over (those within it of the floor placed)
    # and the edges are replayed; one the replay fails is taken as failing, and the run found again.
    reach = 2 * fmargin + GRID_DB
    for _ in range(4):
        edges = [_floor_edge(grid, j, step, allowed, ends_right, at_floor, (g.floor, f0), reach) for step in (-1, 1)]
        run = _FloorRun(edges[0], edges[1], fmargin)
        if run.unsure:
            # Whether the run holds the margin on both sides turns on where exactly its edges are: closer.
            edges = [_refine(e, ends_right, at_floor, EDGE_DB / 10) for e in edges]
            run = _FloorRun(edges[0], edges[1], fmargin)
        # Where the run holds the margin on both sides: the floor nearest the engine's (two significant digits where
        # one fits) at least the margin inside each edge; else the run's centre in dB.
        options = run.options(f0, g.floor if k != 0 else None)
        floor, g_f = g.floor, g
        for option in options:
            x = at_floor(option)
            if x is g:
                break  # the grid's own floor: its quiet time and timeout were chosen there
            if not ends_right(x):
                continue
            if q_kept and not (q - x.need_s >= margin - EPS_S and x.room_s - q >= margin - EPS_S):
                continue  # the quiet time's margin, kept at the grid's floor, is not at this one
            own = _timeout(
                [("", 0.0, x.latency_s)] if x.latency_s > float("-inf") else [],
                [x.wait_s] if x.wait_s > float("-inf") else [],
                margins.onset_margin_s,
            )
            if own is not None and own > timeout + EPS_S:
                continue
            floor, g_f = option, x
            break
        claimed = [x for x in grid if abs(_db(x.floor) - _db(floor)) < fmargin + EPS_S or x.floor in run.oks()]
        if all(ends_right(x) for x in claimed if allowed(x)) or g.floor in judged_bad:
            break
    moved = floor != f0
    if boxed and floor != g.floor:
        # The quiet time's margin at every floor closer than the floor margin, held again around the floor placed.
        rows = [x for x in grid if abs(_db(x.floor) - _db(floor)) < fmargin - EPS_S] + [g_f]
        boxed = all(x.ok for x in rows) and (
            max(x.need_s for x in rows) + tick + margin + CLEAR_S <= q + EPS_S <= min(x.room_s for x in rows) - margin
        )
    g = g_f
    where = (
        ""
        if g.room_at is None
        else f"; the {g.room_at[2]} after the last word at {g.room_at[0]}:{clock_time(g.room_at[1])}"
    )
    bounds = (
        f"the longest silence it must bridge {g.need_s:.3f} s, the shortest room before a bound {g.room_s:.3f} s{where}"
    )
    if q == formula and not moved:
        rule = chosen.quiet_rule
    elif boxed:
        rule = (
            f"the least quiet time {margin:g} s from every failing one at every floor closer than {fmargin:g} dB, on a "
            f"replayed grid of floors and quiet times ({bounds})"
        )
    elif q_kept:
        rule = f"the least quiet time {margin:g} s from every failing one on a replayed grid of quiet times ({bounds})"
    else:
        rule = (
            f"the centre of the quiet times that end every beat right: {q:g} s is {q - g.need_s:.2f} s above the "
            f"longest silence it must bridge ({g.need_s:.3f} s), {g.room_s - q:.2f} s below the shortest room before a "
            f"bound "
            f"({g.room_s:.3f} s{where}); a {margin:g} s margin cannot be held on both sides"
        )
    # The formula stays as evidence: the longest gap plus the margin, rounded up to 0.05 s.
    longest = max((x for a in (corpus.analysis(i, floor) for i in logged) for _, _, x, _ in a.gaps()), default=None)
    plain = None if longest is None else round_up(longest + margin + CLEAR_S, "0.05")
    if plain is not None and plain != q:
        fails = _failing_beats([corpus.analysis(i, floor) for i in logged], plain, timeout)
        rule += f" (the formula, longest gap {longest:.3f} s + margin {margin:g} s, gives {plain:g} s" + (
            f", which fails {_count(fails, 'beats')})" if fails else ")"
        )
    kept = run.keeps(floor)
    said = run.said()
    floor_rule = ""
    if run.narrow and floor in options[:2]:
        floor_rule = (
            f"the centre in dB of the floors that end every beat right at quiet {q:g} s ({said}); a {fmargin:g} dB "
            "margin cannot be held on both sides"
        )
    elif moved and kept:
        lead = "the floor nearest" if floor == options[0] else "a floor near"
        digits = f", to {_digits(floor)} significant digits" if _digits(floor) <= 3 else ""
        floor_rule = f"{lead} {f0:g} at least {fmargin:g} dB from every failing floor at quiet {q:g} s{digits} ({said})"
    elif moved:
        floor_rule = f"{floor:g} on the replayed grid, which ends every beat right at quiet {q:g} s ({said})"
    if floor_margin and not kept:
        notes.append(run.warning(floor, q))
    d_lo, d_hi = run.distances(floor)
    found = FloorRun(
        q,
        timeout,
        None if run.lo.fails is None else run.lo.ok,
        None if run.hi.fails is None else run.hi.ok,
        None if run.lo.fails is None else run.lo.fails.floor,
        None if run.hi.fails is None else run.hi.fails.floor,
        None if run.lo.fails is None else d_lo,
        None if run.hi.fails is None else d_hi,
        kept,
    )
    return replace(
        chosen, floor=floor, quiet_s=q, onset_timeout_s=timeout, quiet_rule=rule, floor_rule=floor_rule, run=found
    )


def _digits(x: float) -> int:
    """How many significant digits ``x`` is written with (``0.0024``: 2)."""
    return len(f"{x:g}".split("e")[0].replace("-", "").replace(".", "").lstrip("0"))


@dataclass(frozen=True, slots=True)
class _FloorEdge:
    """Where the floors that end every beat right at a setting stop, on one side of the chosen floor: ``ok`` is the
    last floor found to, ``fails`` the first that does not (None: none of the grid fails on this side)."""

    ok: float
    fails: _GridFloor | None


def _floor_edge(
    grid: list[_GridFloor],
    j: int,
    step: int,
    allowed: Callable[[_GridFloor], bool],
    ends_right: Callable[[_GridFloor], bool],
    at_floor: Callable[[float], _GridFloor],
    near: tuple[float, ...],
    reach_db: float,
) -> _FloorEdge:
    """From ``grid[j]`` outward in ``step`` to the first grid floor the grid's reading does not allow (``allowed``),
    then, where the edge lies within ``reach_db`` of a floor of ``near``, by bisection (in dB, each point replayed:
    ``ends_right``) to within ``EDGE_DB`` of it; a farther edge stays between two floors of the grid."""
    i = j
    while 0 <= i + step < len(grid) and allowed(grid[i + step]):
        i += step
    if not 0 <= i + step < len(grid):
        return _FloorEdge(grid[i].floor, None)
    edge = _FloorEdge(grid[i].floor, grid[i + step])
    if min(abs(_db(grid[i].floor) - _db(f)) for f in near) > reach_db + EPS_S:
        return edge
    return _refine(edge, ends_right, at_floor, EDGE_DB)


def _refine(
    e: _FloorEdge, ends_right: Callable[[_GridFloor], bool], at_floor: Callable[[float], _GridFloor], tol_db: float
) -> _FloorEdge:
    """The edge bisected (in dB) until its floor that ends every beat right and its failing one are ``tol_db``
    apart."""
    ok, bad = e.ok, e.fails
    while bad is not None and abs(_db(bad.floor) - _db(ok)) > tol_db + 1e-12:
        x = at_floor(float(np.sqrt(ok * bad.floor)))
        ok, bad = (x.floor, bad) if ends_right(x) else (ok, x)
    return _FloorEdge(ok, bad)


@dataclass(frozen=True, slots=True)
class _FloorRun:
    """The run of floors that end every beat right at one setting, between two edges (:class:`_FloorEdge`), and
    where in it a floor keeps ``margin_db`` from every failing one."""

    lo: _FloorEdge
    hi: _FloorEdge
    margin_db: float

    @property
    def width_db(self) -> float:
        """From the lowest floor found to end every beat right to the highest (inf where a side has no failing
        floor)."""
        if self.lo.fails is None or self.hi.fails is None:
            return float("inf")
        return _db(self.hi.ok) - _db(self.lo.ok)

    @property
    def narrow(self) -> bool:
        """Narrower than twice the margin: no floor keeps it from both edges."""
        return self.width_db < 2 * self.margin_db - EPS_S

    @property
    def unsure(self) -> bool:
        """Whether the margin fits between the failing floors found, but not between those that end beats right."""
        if not self.narrow:
            return False
        assert self.lo.fails is not None and self.hi.fails is not None
        return _db(self.hi.fails.floor) - _db(self.lo.fails.floor) >= 2 * self.margin_db - EPS_S

    def oks(self) -> tuple[float, ...]:
        """Its edges' floors that end every beat right (where a failing one lies past them)."""
        return tuple(e.ok for e in (self.lo, self.hi) if e.fails is not None)

    def distances(self, floor: float) -> tuple[float, float]:
        """How far (dB) ``floor`` lies inside the floors found to end every beat right, below and above (inf on a
        side with no failing floor)."""
        d_lo = _db(floor) - _db(self.lo.ok) if self.lo.fails is not None else float("inf")
        d_hi = _db(self.hi.ok) - _db(floor) if self.hi.fails is not None else float("inf")
        return d_lo, d_hi

    def keeps(self, floor: float) -> bool:
        """Every floor within the margin of ``floor`` lies between two floors that end every beat right."""
        return min(self.distances(floor)) >= self.margin_db - EPS_S

    def options(self, target: float, grid_floor: float | None) -> list[float]:
        """Floors to place, best first: where the run holds the margin on both sides, the engine's floor
        (``target``) if it keeps it, else two-significant-digit floors (three where none fits; else the floor
        nearest ``target`` that keeps it) inside the edges less the margin, nearest ``target``; where the run is
        narrower, its centre in dB (to three digits); the grid's floor (``grid_floor``, to three digits) last."""
        last = [float(f"{grid_floor:.3g}"), grid_floor] if grid_floor is not None else [target]
        if self.narrow:
            centre = (_db(self.lo.ok) + _db(self.hi.ok)) / 2
            return [float(f"{10 ** (centre / 20):.3g}"), 10 ** (centre / 20), *last]
        if self.keeps(target) and grid_floor is None:
            return [target]
        lo = _db(self.lo.ok) + self.margin_db if self.lo.fails is not None else _db(target) - 40
        hi = _db(self.hi.ok) - self.margin_db if self.hi.fails is not None else min(_db(target) + 40, 0.0)
        inside = _nice_floors(10 ** ((lo - 1e-6) / 20), 10 ** ((hi + 1e-6) / 20), target)
        # Where no floor of three digits fits (the run just twice the margin), the floor nearest the target that
        # keeps it.
        clamped = 10 ** (min(max(_db(target), lo), hi) / 20)
        return [x for x in [*inside, clamped] if self.keeps(x)][:_MAX_TRIED] + last

    def said(self) -> str:
        """The run in words: its edges and the failing floors beyond them, each rounded to three digits away from
        the floors that end every beat right (a failing one further out, one that ends them right further in),
        and how closely each edge was found."""
        ends = []
        for e, out in ((self.lo, False), (self.hi, True)):
            if e.fails is None:
                edge = round_sig(e.ok, up=not out)
                ends.append(f"none of the grid's floors {'up' if out else 'down'} to {edge} fails")
                continue
            gap = abs(_db(e.fails.floor) - _db(e.ok))
            how = f"{gap:.2g} dB from the last that does" if gap > EDGE_DB + 1e-9 else f"within {EDGE_DB:g} dB"
            ends.append(f"{round_sig(e.fails.floor, up=out)} {e.fails.why} ({how})")
        width = "" if self.width_db == float("inf") else f", {self.width_db:.1f} dB"
        return (
            f"replayed, the floors from {round_sig(self.lo.ok, up=True)} to {round_sig(self.hi.ok, up=False)} end "
            f"every beat right{width}; {'; '.join(ends)}"
        )

    def warning(self, floor: float, quiet_s: float) -> str:
        """Why ``floor`` does not keep the margin, naming it and the failing floors it is nearest."""
        near = [
            f"{abs(_db(floor) - _db(e.fails.floor)):.1f} dB from the failing floor {round_sig(e.fails.floor, up=out)}"
            for e, out in ((self.lo, False), (self.hi, True))
            if e.fails is not None and abs(_db(floor) - _db(e.fails.floor)) < self.margin_db - EPS_S
        ]
        head = (
            " and ".join(near)
            if near
            else f"only {min(self.distances(floor)):.1f} dB inside the floors found to end every beat right"
        )
        why = (
            f"the floors that end every beat right span {self.width_db:.1f} dB, under twice the margin; {floor:g} is "
            "their centre in dB"
            if self.narrow
            else "no floor that keeps it ends every beat right with this quiet time's margin and onset timeout"
        )
        return (
            f"the floor {floor:g} at quiet {quiet_s:g} s is {head}: the {self.margin_db:g} dB floor margin could not "
            f"be kept ({why}; {self.said()})"
        )


def _any_quiet(corpus: _Corpus, members: list[int], floors: list[float]) -> _Setting | None:
    """The first floor at which some quiet time (not only the formula's) ends every beat right, or None.

    The replay's own answer at each floor (:meth:`clock.core.analysis.FloorAnalysis.quiet_range`): quiet times
    above the longest quiet the clock must bridge and up to the least room before a bound; the quiet time is
    then chosen on the replayed grid (:func:`_grid_quiet`).
    """
    if any(corpus.obs[i].events is None for i in members):
        return None
    logged = [i for i in members if corpus.obs[i].has_beats]
    delay = _prompt_delay(corpus, members)
    for floor in floors:
        analyses = [corpus.analysis(i, floor) for i in logged]
        ranges = [a.quiet_range(narration_pause_s=a.narration_pause_s) for a in analyses]
        need = max((r[0] for r in ranges), default=float("-inf"))
        room = min((r[1] for r in ranges), default=float("inf"))
        if not (need > 0 and need < room):
            continue
        c = _at_floor(corpus, members, floor, prompt_delay_s=delay)
        timeout = _timeout(c.latencies, c.waits, corpus.margins.onset_margin_s)
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
        failures = _misread(c, quiet, corpus.margins.quiet_margin_s) + _failing_beats(c.analyses, quiet, timeout)
        if failures == 0:
            return _Setting(floor, quiet, timeout, 0, rule, extended=True)
    return None


def _timeout(latencies: list[tuple[str, float, float]], waits: list[float], margin: float) -> float | None:
    if not latencies and not waits:
        return None
    longest = max([x for _, _, x in latencies] + waits)
    return round_up(longest + margin, "0.5")


def _misread(c: _AtFloor, quiet_s: float | None, margin_s: float) -> int:
    """Beats this floor fails that its replay does not: it hears none of a beat the guide spoke in, takes an
    acknowledgment for narration, or hides a narration's end for so long that the clock would declare quiet
    before it.

    The ends and acknowledgments are those each recording shows at its reference floor (its own floor, or one
    under a quieter voice the level split takes for silence: :meth:`clock.core.evidence._Corpus.misread`); the
    clock declares ``quiet_s`` after the last word it sees, which must come at least ``margin_s`` after that end.
    """
    allowed = (quiet_s if quiet_s is not None else 0.0) - margin_s
    return sum(h > max(allowed, margin_s) for _, _, h in c.hidden) + len(c.unheard) + len(c.acks)


def _evaluate(corpus: _Corpus, members: list[int], floor: float, delay_s: float) -> tuple[_Setting, _AtFloor]:
    """The setting at one floor and how many beats it fails (the replay's failures, and hidden narration ends)."""
    margins = corpus.margins
    c = _at_floor(corpus, members, floor, prompt_delay_s=delay_s)
    quiet, quiet_rule = _choose_quiet(c, margins.quiet_margin_s)
    timeout = _timeout(c.latencies, c.waits, margins.onset_margin_s)
    misread = _misread(c, quiet, margins.quiet_margin_s)
    if quiet is None or timeout is None:
        # No full setting at this floor: a beat whose speech runs into its bound stalls at any quiet time
        # (a floor under the noise hears speech everywhere, so no gap and no onset).
        endless = sum(
            b.spoken and b.room_s == float("-inf") and b.undone(c.narration_pause_s) == STALLED
            for a in c.analyses
            for b in (a.beats[j] for j in a.active_beats().tolist())
        )
        return _Setting(floor, quiet, timeout, misread + endless, quiet_rule), c
    failures = misread + _failing_beats(c.analyses, quiet, timeout)
    return _Setting(floor, quiet, timeout, failures, quiet_rule), c


def _recount(corpus: _Corpus, members: list[int], setting: _Setting) -> _Setting | None:
    """The setting with its failures counted over ``members`` (replayed, hidden ends, spoken beats unheard), or None
    when it is not a full setting."""
    if setting.quiet_s is None or setting.onset_timeout_s is None:
        return None
    c = _at_floor(corpus, members, setting.floor, prompt_delay_s=_prompt_delay(corpus, members))
    failures = _misread(c, setting.quiet_s, corpus.margins.quiet_margin_s)
    failures += _failing_beats(c.analyses, setting.quiet_s, setting.onset_timeout_s)
    return replace(setting, failures=failures)


def _search(
    corpus: _Corpus,
    members: list[int],
    primary: list[float],
    extended: list[float],
    *,
    strict: bool = False,
    limit: int = MAX_FLOORS_TRIED,
    prefer: Prefer | None = None,
) -> _Setting | None:
    """The first candidate floor at which a setting ends every beat right; else the one failing fewest beats.

    With ``strict``, only a setting that ends every beat right is returned
    (else None). With ``prefer``, the settings of the primary floors that
    end every beat right are handed to it (an extended floor only when no
    primary one does), and it picks one (see :func:`derive`).
    """
    delay = _prompt_delay(corpus, members)
    best: _Setting | None = None
    right: list[_Setting] = []
    for n, (floor, is_extended) in enumerate([(f, False) for f in primary] + [(f, True) for f in extended]):
        if right and is_extended:
            break
        setting, c = _evaluate(corpus, members, floor, delay)
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
            failing = _failing_beats_at(c.analyses, quiets, setting.onset_timeout_s)
            for q, replayed in zip(quiets, failing):
                f = _misread(c, q, corpus.margins.quiet_margin_s) + replayed
                if best is None or f < best.failures:
                    best = _Setting(floor, q, setting.onset_timeout_s, f, FEWEST_FAILURES, is_extended)
        if n >= limit and (best is not None or strict) and not right:
            break
    if right:
        assert prefer is not None
        # The engine's own choice leads, as the replayed grid places it (what derive recommends without prefer).
        lead = _grid_quiet(corpus, members, right[0], [], floor_margin=False)
        right = [lead] + [r for r in right if (r.floor, r.quiet_s) != (lead.floor, lead.quiet_s)]
        pick, note = prefer([(r.floor, r.quiet_s, r.onset_timeout_s) for r in right])  # type: ignore[misc]
        return replace(right[pick], note=note)
    return best


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
    margins = margins or Margins()
    obs = list(observations)
    parts = [recording_levels(o, margins) for o in obs]
    corpus = _Corpus(
        obs,
        [rec for rec, _ in parts],
        [o.trace.level[c.speech] for o, (_, c) in zip(obs, parts)],
        [o.trace.level[c.silence] for o, (_, c) in zip(obs, parts)],
        margins,
        [c for _, c in parts],
    )
    members = list(range(len(obs)))
    found = _derive(corpus, members, group, stability=True, prefer=prefer)
    if held_out:
        found = replace(found, held_out=_held_out(corpus, members, group))
    found = replace(
        found,
        rules=_rules(corpus, members, group, found, held_out=held_out, compare=committed or compare, keys=group_keys),
    )
    if compare is None:
        return found
    floor, quiet, timeout = compare.floor, compare.quiet_s, compare.onset_timeout_s
    outcome = _replay_outcome(corpus, members, floor, quiet, timeout, spoke=True)
    return replace(
        found,
        compared=Comparison(
            compare_label,
            floor,
            quiet,
            timeout,
            outcome if outcome.n_recordings else None,
            _dead_air(corpus, members, floor, quiet, timeout) if outcome.n_recordings else None,
        ),
    )


def _beats_at(corpus: _Corpus, members: Sequence[int], floor: float) -> list[RecordingBeats]:
    """Each recording with beats at one floor, with its beats' provider events (what :mod:`.rules` replays)."""
    return [
        (corpus.obs[i].name, corpus.analysis(i, floor), corpus.stopped(i, floor))
        for i in members
        if corpus.obs[i].has_beats
    ]


def _dead_air(corpus: _Corpus, members: list[int], floor: float, quiet: float, timeout: float) -> DeadAir:
    """What a level setting's beats ended right wait after the last word."""
    found = replay_rule(_beats_at(corpus, members, floor), Rule(LEVEL, quiet), onset_timeout_s=timeout)
    return found.dead_air


def _rules(
    corpus: _Corpus,
    members: list[int],
    group: str,
    found: Derivation,
    *,
    held_out: bool,
    compare: Thresholds | None = None,
    keys: Sequence[str] = GROUP_KEYS,
) -> RuleEvidence | None:
    """The recommendation's dead air and the other rules replayed beside it; a rule named only where it holds out
    of sample (each recording left out, each group of a metadata key left out) and saves ``min_saving_s`` at the
    committed setting too (:func:`clock.core.rules.settle`)."""
    floor, quiet, timeout = found.setting
    if floor is None or quiet is None or timeout is None or found.outcome is None:
        return None
    margin = corpus.margins.quiet_margin_s
    evidence = rule_evidence(
        _beats_at(corpus, members, floor),
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
    by_recording = (
        [[i] for i in logged] if len(logged) <= MAX_HELD_OUT else [logged[k::MAX_HELD_OUT] for k in range(MAX_HELD_OUT)]
    )
    groups = _metadata_groups(corpus, logged, keys)

    def folds(leave: list[list[int]], names: list[str] | None = None) -> list[Fold]:
        """Each fold left out: per recording, or (``names``) per group, its replay input as
        :func:`clock.core.rules.held_out_rule` takes it."""
        entries: list[Fold] = []
        for k, fold in enumerate(leave):
            f, q, t = _without(corpus, members, fold, group).setting
            if f is None or q is None or t is None:
                left_out = [names[k]] if names is not None else [corpus.obs[i].name for i in fold]
                entries.extend((n, [], None, None, None) for n in left_out)
                continue
            rest = _beats_at(corpus, [i for i in members if i not in fold], f)
            mine: list[RecordingBeats] = [
                (corpus.obs[i].name, corpus.analysis(i, f), corpus.stopped(i, f)) for i in fold
            ]
            if names is not None:
                entries.append((names[k], rest, mine, q, t))
            else:
                entries.extend((m[0], rest, m, q, t) for m in mine)
        return entries

    def hold(kind: str) -> tuple[RuleHeldOut | None, tuple[RuleHeldOut, ...], float | None, str]:
        committed = None
        if compare is not None:
            committed = _committed_saving(corpus, members, kind, compare)
            if committed is None or committed < corpus.margins.min_saving_s - 1e-9:
                said = "nothing" if committed is None else f"{committed:.2f} s"
                return (
                    None,
                    (),
                    committed,
                    (
                        f"saves {said} of median dead air at the committed setting (floor {compare.floor:g}, quiet "
                        f"{compare.quiet_s:g} s), under min_saving_s {corpus.margins.min_saving_s:g} s"
                    ),
                )
        if not held_out:
            return None, (), committed, "was not held out (derive without held-out runs)"
        if len(logged) < 2:
            return None, (), committed, "cannot be held out: one recording with an event log"
        held = held_out_rule(kind, folds(by_recording), quiet_margin_s=margin)
        if not held.holds:
            n_bad = len({(r, b) for r, b, _ in held.failing})
            return (
                held,
                (),
                committed,
                (
                    f"fails {_plural(n_bad, 'beat')} derived without each recording in turn ({held.n_right} of "
                    f"{_plural(held.n_recordings, 'recording')} replay right)"
                ),
            )
        done: list[RuleHeldOut] = []
        for key, named in groups:
            names = list(named)
            out = held_out_rule(
                kind, folds([named[n] for n in names], [f"{key}={n}" for n in names]), quiet_margin_s=margin, by=key
            )
            done.append(out)
            if not out.holds:
                bad = sorted({r for r, b, _ in out.failing})
                return (
                    held,
                    tuple(done),
                    committed,
                    (
                        f"fails {_plural(len(out.failing), 'beat')} derived without each {key} in turn ("
                        f"{out.n_right} of {_plural(out.n_recordings, 'group')} replay right; "
                        f"left out: {', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''})"
                    ),
                )
        return held, tuple(done), committed, ""

    return settle(evidence, hold)


def _metadata_groups(corpus: _Corpus, logged: list[int], keys: Sequence[str]) -> list[tuple[str, dict[str, list[int]]]]:
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


def _committed_saving(corpus: _Corpus, members: list[int], kind: str, compare: Thresholds) -> float | None:
    """The rule's median saving against the level clock at the committed setting, its hangover chosen there."""
    beats = _beats_at(corpus, members, compare.floor)
    timeout, quiet = compare.onset_timeout_s, compare.quiet_s
    margin = corpus.margins.quiet_margin_s
    hangover = hangover_for(beats, onset_timeout_s=timeout, quiet_margin_s=margin)
    if hangover >= quiet:
        return None  # the level clock bounds the rule: it saves nothing there
    rule = Rule(kind, quiet, None if kind == STOPPED else hangover)
    level = replay_rule(beats, Rule(LEVEL, quiet), onset_timeout_s=timeout, quiet_margin_s=margin).dead_air.median_s
    mine = replay_rule(beats, rule, onset_timeout_s=timeout, quiet_margin_s=margin).dead_air.median_s
    return None if level is None or mine is None else level - mine


def _full_ladder(
    levels: Sequence[RecordingLevels], members: Sequence[int], rooms: dict[int, float] | None = None
) -> tuple[float, float, list[float]]:
    """Floors about 1 dB apart from the lowest noise to the highest speech median of these recordings.

    ``rooms`` gives, for a recording whose noise (p99) is a quieter voice the level split takes for silence, the
    noise of its room (:meth:`clock.core.evidence._Corpus.quiet_voice`): the ladder reaches under that voice.
    """
    rooms = rooms or {}
    noises = [x for i in members for x in (levels[i].noise_median, rooms.get(i, levels[i].noise_high)) if x]
    tops = [x for i in members if (x := levels[i].speech_median)]
    if not tops:
        return 0.0, 0.0, []
    hi = max(tops)
    lo = min(noises) if noises else hi * 1e-3
    return lo, hi, _ladder(lo, hi)


def _no_window(corpus: _Corpus, i: int) -> str:
    """What puts a recording's noise (p99) within the margin of its speech, in words: its room, or a quieter
    voice the level split takes for silence (:meth:`clock.core.evidence._Corpus.quiet_voice`)."""
    rec, margins = corpus.levels[i], corpus.margins
    noise_db, speech_db = _db(rec.noise_high or 0.0), _db(rec.speech_low or 0.0)
    speech = f"its speech (p{margins.speech_percentile:g} {speech_db:.1f} dBFS)"
    within = f"within {margins.floor_margin_db:g} dB of {speech}"
    quiet = corpus.quiet_voice(i)
    if quiet is None:
        return f"its noise (p{NOISE_PERCENTILE:g} {noise_db:.1f} dBFS) reaches {within}"
    found, without, _ = quiet
    several = len(found) > 1
    rest = "exact zero" if without == 0 else f"{_db(without):.1f} dBFS"
    return (
        f"the level split takes quieter speech in beat{'s' * several} {', '.join(str(j + 1) for j in found)} "
        f"(heard above its room) for silence, which puts its silence's p{NOISE_PERCENTILE:g} ({noise_db:.1f} dBFS; "
        f"{rest} without {'them' if several else 'it'}) {within}"
    )


def _rescued_note(corpus: _Corpus, i: int, floor: float) -> str:
    """Why a recording without a window of floors is still served by the floor, and which check will say so."""
    rec, margins = corpus.levels[i], corpus.margins
    fails = []
    if rec.noise_high is not None and rec.noise_high >= floor:
        fails.append("noise level")
    if rec.speech_low is not None and rec.speech_low < floor * 10 ** (margins.floor_margin_db / 20):
        fails.append("speech level")
    noise = corpus.quiet_voice(i) is None and rec.noise_high is not None and rec.noise_high < floor
    return (
        f"{corpus.obs[i].name}: {_no_window(corpus, i)}, yet the floor {floor:g} "
        f"{'stands above its noise and ' if noise else ''}still ends its beats right in the replay"
        + (_CHECK.format(" and ".join(fails)) if fails else "")
    )


def _ends_right(corpus: _Corpus, members: list[int], i: int, setting: _Setting) -> bool:
    """Whether a setting ends every beat of recording ``i`` right, judged with ``members`` (their ``P``): no
    failure, and every beat the guide spoke in heard."""
    if setting.quiet_s is None or setting.onset_timeout_s is None or not corpus.obs[i].has_beats:
        return False
    a = corpus.analysis(i, setting.floor)
    failing = failing_beats(a, quiets_s=[setting.quiet_s], onset_timeout_s=setting.onset_timeout_s)
    return not failing[0] and corpus.speech_unheard(i, a).size == 0


#: Where a note says what ``check`` will make of a level check; settled by the replay once it is known.
_CHECK = " (check: its {})"


def _settle_checks(
    notes: list[str], corpus: _Corpus, members: list[int], setting: _Setting | None, outcome: Outcome | None
) -> list[str]:
    """What ``check`` says of a note's level checks: it fails one only when the replay fails a beat there.

    The beats are those :func:`clock.core.evidence.level_failures` names, as ``check`` finds them. A
    recording without beats has no replay: there the percentile decides, and ``check`` fails it.
    """
    by_name = {corpus.obs[i].name: i for i in members}
    out = []
    for note in notes:
        if " (check: its " not in note or not note.endswith(")"):
            out.append(note)
            continue
        name = note.split(": ", 1)[0]
        head, what = note[: note.rindex(" (check: its ")], note[note.rindex(" (check: its ") + 13 : -1]
        i = by_name.get(name)
        o = None if i is None else corpus.obs[i]
        failing = []
        if o is not None and o.has_beats and outcome is not None and setting is not None:
            assert o.events is not None and setting.quiet_s is not None and setting.onset_timeout_s is not None
            found = beats(
                o.trace,
                o.events,
                floor=setting.floor,
                quiet_s=setting.quiet_s,
                onset_timeout_s=setting.onset_timeout_s,
            )
            _, classes = recording_levels(o, corpus.margins)
            failing = level_failures(o, classes.speech, heard(found))
        if o is None or not o.has_beats:
            out.append(f"{head} (check will fail its {what}: without beats to replay, the percentile decides)")
        elif outcome is None:
            out.append(f"{head} (check decides its {what} by the replay of its beats)")
        elif failing:
            b = failing[0]
            out.append(f"{head} (check will fail its {what}: beat {b.index + 1} {b.outcome})")
        else:
            out.append(f"{head} (check passes its {what} with a note: the replay ends every beat of it right)")
    return out


def _derive(
    corpus: _Corpus, members: list[int], group: str, *, stability: bool, prefer: Prefer | None = None
) -> Derivation:
    margins = corpus.margins
    obs, levels = corpus.obs, corpus.levels
    notes: list[str] = []
    meeting = _meeting_group(levels, members)
    windowed = [i for i in members if levels[i].window is not None]
    no_window = tuple(obs[i].name for i in members if levels[i].window is None)
    outside = tuple(obs[i].name for i in windowed if i not in meeting)
    window = lower_by = upper_by = None
    primary: list[float] = []
    extended: list[float] = []
    floor_rule = "no floor: no recording has a window of floors that separate its speech from its noise"
    if meeting:
        lo_i = max(meeting, key=lambda i: (levels[i].window[0], -i))  # type: ignore[index]
        hi_i = min(meeting, key=lambda i: (levels[i].window[1], i))  # type: ignore[index]
        lo, hi = levels[lo_i].window[0], levels[hi_i].window[1]  # type: ignore[index]
        window, lower_by, upper_by = (lo, hi), obs[lo_i].name, obs[hi_i].name
        speech_low = min(levels[i].speech_low or hi for i in meeting)
        target, floor_rule = _target(lo, hi, speech_low)
        floor_rule = floor_rule.format(p=f"{margins.speech_percentile:g}")
        primary = _nice_floors(lo, hi, target) or [target]
        width = _db(hi) - _db(lo)
        if width < NARROW_DB:
            notes.append(
                f"the floors that work for every recording span only {width:.1f} dB ({lo:.4g} .. {hi:.4g}, set by "
                + (f"{obs[lo_i].name} alone" if lo_i == hi_i else f"{obs[lo_i].name} and {obs[hi_i].name}")
                + "): a small change in a voice's or a room's level breaks it"
            )
        # Above every recording's noise and below every voice's median, in steps of about 1 dB: floors the
        # replay may still accept when the windows do not all meet, or when none inside them works.
        noise = max(levels[i].window[0] for i in windowed)  # type: ignore[index]
        top = min(levels[i].speech_median or 0.0 for i in windowed)
        if top > noise:
            extended = _ladder(noise if noise > 0 else hi, top, exclude=primary[:MAX_PRIMARY])
        primary = primary[:MAX_PRIMARY]
    unlogged_meeting = [i for i in meeting if obs[i].events is None]
    judged = sorted(set(windowed) | set(unlogged_meeting))
    chosen = _search(corpus, judged, primary, extended, prefer=prefer) if primary else None
    # Recordings whose noise reaches their speech's low percentile may still be served by a floor above their
    # noise (the percentile counts word edges): try them too, and keep them only if nothing then fails.
    rescued: list[int] = []
    hopeless = [i for i in members if levels[i].window is None and obs[i].has_beats and levels[i].speech_median]
    if hopeless and (chosen is None or chosen.failures == 0):
        everyone = sorted(set(judged) | set(hopeless))
        noise_all = max((levels[i].noise_high or 0.0) for i in everyone)
        top_all = min(levels[i].speech_median or 0.0 for i in everyone)
        wider = extended + _ladder(noise_all, top_all, exclude=primary + extended) if top_all > noise_all else extended
        found = _search(corpus, everyone, primary, wider, strict=True, prefer=prefer)
        if found is not None:
            chosen, judged, rescued = found, everyone, hopeless
    # The windows are a heuristic, the replay is the truth: before giving up, replay a ladder of floors across
    # the whole range, from the lowest noise to the highest speech median, over every recording with speech.
    ladder_rule = None
    if chosen is None or chosen.failures or (hopeless and not rescued):
        everyone = [i for i in members if levels[i].speech_median is not None]
        rooms = {i: q[1] for i in everyone if (q := corpus.quiet_voice(i)) is not None}
        lo_l, hi_l, ladder = _full_ladder(levels, everyone, rooms)
        if ladder:
            found = _search(corpus, everyone, [], ladder, strict=True, limit=len(ladder), prefer=prefer)
            if found is None and prefer is None:
                # The formula's quiet time failed on every floor: ask the replay for any quiet time that works.
                found = _any_quiet(corpus, everyone, ladder)
            span = (
                f"{len(ladder)} floors from {ladder[0]:.2g} (above the lowest noise, {lo_l:.2g}) to {ladder[-1]:.2g} "
                f"(below the highest speech median, {hi_l:.2g})"
            )
            if found is not None:
                chosen, judged = found, everyone
                rescued = [i for i in everyone if levels[i].window is None]
                ladder_rule = f"the lowest of a replayed ladder of {span} that ends every beat right"
            else:
                # The fewest failing beats, counted over the same recordings on both sides: every one with speech
                # (the setting found for some of them may fail beats of the others, its onset timeout too).
                kept = None if chosen is None else _recount(corpus, everyone, chosen)
                if kept is None or kept.failures:
                    tried = [] if chosen is None else [chosen.floor]
                    fewest = _search(corpus, everyone, tried, ladder, limit=len(ladder) + len(tried))
                    if fewest is not None and (kept is None or fewest.failures < kept.failures):
                        chosen, judged = fewest, everyone
                    elif kept is not None:
                        chosen = kept
                notes.append(f"no floor ends every beat of every recording right: replayed {span}")
    if (
        prefer is None
        and chosen is not None
        and chosen.failures == 0
        and chosen.quiet_s is not None
        and chosen.onset_timeout_s is not None
    ):
        # The floor margin is a warning: the leave-one-out runs, which keep only the setting, skip it. Placed
        # before the notes on recordings without a window, so that they name the floor recommended.
        chosen = _grid_quiet(corpus, judged, chosen, notes, floor_margin=stability)
    for i in members:
        rec = levels[i]
        if rec.window is not None or not rec.verdict:
            continue
        if chosen is not None and (i in rescued or _ends_right(corpus, members, i, chosen)):
            notes.append(_rescued_note(corpus, i, chosen.floor))
        elif stability and obs[i].has_beats and rec.speech_low is not None:
            # "Cannot work" is the replay's to say: a ladder of floors over this recording alone.
            works = floor_that_works(obs[i], spoke=corpus.spoke(i).tolist())
            if works is None:
                notes.append(
                    f"{obs[i].name}: {_no_window(corpus, i)}; no replayed floor ends every beat of it right, so a "
                    "level-floor clock cannot work on it; it contributes no gap or quiet-time evidence"
                )
            else:
                notes.append(
                    f"{obs[i].name}: {_no_window(corpus, i)}; alone, the replay at floor {works[0]:.2g} ends its "
                    f"beats right (a quiet time above {works[1]:.2f} s), but no replayed floor does for it and the "
                    "others together; it contributes no gap or quiet-time evidence"
                )
        else:
            notes.append(f"{obs[i].name}: {rec.verdict}")
    floor = chosen.floor if chosen is not None else None
    if chosen is not None:
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
        elif floor != primary[0] and not chosen.floor_rule:
            floor_rule += f"; the replay rejected {primary[0]:g}, {floor:g} is the nearest floor it accepts"
        elif not chosen.floor_rule:
            floor_rule += ", rounded to 2 significant digits"
        if chosen.floor_rule and not chosen.failures:
            floor_rule += f"; {chosen.floor_rule}"
    for i in windowed:
        lo_w, hi_w = levels[i].window  # type: ignore[misc]
        name = obs[i].name
        if floor is None or lo_w < floor < hi_w:
            if i not in meeting:
                notes.append(f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'")
            continue
        if floor >= hi_w:
            notes.append(
                f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'; the floor "
                f"{floor:g} is {_db(floor) - _db(hi_w):.1f} dB above its speech edge, so its quietest speech is under "
                "the floor" + _CHECK.format("speech level")
            )
        else:
            notes.append(
                f"{name}: its window of floors ({lo_w:.4g} .. {hi_w:.4g}) does not meet the others'; its noise "
                f"(p{NOISE_PERCENTILE:g} {lo_w:.4g}) reaches the floor {floor:g}" + _CHECK.format("noise level")
            )
    floor_ev = _floor_evidence(
        corpus,
        members,
        meeting,
        window,
        lower_by,
        upper_by,
        outside,
        no_window,
        floor,
        floor_rule,
        None if chosen is None or chosen.failures else chosen.run,
    )
    gaps_ev, onsets_ev, outcome = _gap_onset_outcome(corpus, members, judged, chosen, notes, replay=stability)
    notes[:] = _settle_checks(notes, corpus, members, chosen, outcome)
    for what, n, need in (
        ("gaps", gaps_ev.n_gaps, THIN["gaps"]),
        ("beats", onsets_ev.n_beats, THIN["beats"]),
        ("recordings", len(members), THIN["recordings"]),
    ):
        if n < need:
            notes.append(f"thin evidence: {_count(n, what)} (fewer than {need})")
    stab: tuple[Stability, ...] = ()
    if stability:
        stab = _stability(corpus, members, group, floor_ev, gaps_ev, onsets_ev)
    return Derivation(
        group, tuple(obs[i].name for i in members), floor_ev, gaps_ev, onsets_ev, outcome, stab, tuple(notes)
    )


def _without(corpus: _Corpus, members: list[int], left: int | Sequence[int], group: str) -> Derivation:
    """The derivation without one recording, or a fold of them (once per corpus: the stability and held-out runs
    share it)."""
    out = {left} if isinstance(left, int) else set(left)
    rest = tuple(i for i in members if i not in out)
    if rest not in corpus.without:
        corpus.without[rest] = _derive(corpus, list(rest), group, stability=False)
    return corpus.without[rest]


#: Up to this many recordings with beats, each is left out in turn; past it, as many folds (every
#: ``MAX_HELD_OUT``-th recording left out together), so the held-out derivations stay linear in the recordings.
MAX_HELD_OUT = 20


def _held_out(corpus: _Corpus, members: list[int], group: str) -> HeldOut | None:
    """Leave each recording with beats out in turn (or each fold of them), derive from the rest, replay the
    result on it (decide)."""
    logged = [i for i in members if corpus.obs[i].has_beats]
    if len(members) < 2 or not logged:
        return None
    folds = (
        [[i] for i in logged] if len(logged) <= MAX_HELD_OUT else [logged[k::MAX_HELD_OUT] for k in range(MAX_HELD_OUT)]
    )
    found: dict[int, HeldOutRecording] = {}
    for fold in folds:
        floor, quiet, timeout = _without(corpus, members, fold, group).setting
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
            fails = np.isin(codes, _FAILURE_CODES)
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


def judge(
    observations: Sequence[Observation],
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float,
    margins: Margins | None = None,
    narration_pause_s: float | None = None,
) -> Outcome:
    """One setting replayed over recordings and counted as :func:`derive` counts its recommendation's replay.

    The one judge of a replay: ``derive`` (its recommendation and the
    compared setting) and ``stress`` (every transformed corpus) both count
    outcomes here. Each beat is judged by its own recording: ``P``, which
    tells an aborted beat from an outpaced one, is its recording's longest
    narration pause at the floor (:func:`clock.core.analysis.narration_pause_s`),
    unless ``narration_pause_s`` gives one for every recording.
    """
    obs = list(observations)
    margins = margins or Margins()
    corpus = _Corpus(obs, _LazyLevels(obs, margins), [], [], margins)  # type: ignore[arg-type]
    return _replay_outcome(
        corpus, list(range(len(obs))), floor, quiet_s, onset_timeout_s, narration_pause_s=narration_pause_s
    )


class _LazyLevels(Sequence[RecordingLevels]):
    """A recording's levels, computed only when a failing beat's reason needs them."""

    def __init__(self, obs: list[Observation], margins: Margins) -> None:
        self._obs, self._margins = obs, margins
        self._done: dict[int, RecordingLevels] = {}

    def __len__(self) -> int:
        return len(self._obs)

    def __getitem__(self, i):  # type: ignore[no-untyped-def,override]
        if i not in self._done:
            self._done[i] = recording_levels(self._obs[i], self._margins)[0]
        return self._done[i]


def _stability(
    corpus: _Corpus,
    members: list[int],
    group: str,
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
            without[driver] = _without(corpus, members, names[driver], group)

    def entry(quantity: str, value: float | None, driver: str | None, pick: int) -> Stability:
        other = without.get(driver) if driver is not None else None
        return Stability(quantity, value, driver, None if other is None else other.setting[pick])

    return (
        entry("floor", floor_ev.floor, floor_driver, 0),
        entry("quiet_s", gaps_ev.quiet_s, quiet_driver, 1),
        entry("onset_timeout_s", onsets_ev.onset_timeout_s, onset_driver, 2),
    )
