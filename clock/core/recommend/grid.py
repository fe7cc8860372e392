"""One floor of the replayed grid: the quiet times and onset timeouts at which it ends every beat right.

Pure numpy. A floor allows quiet times ``need_s < q <= room_s`` and onset
timeouts above the longest wait (:class:`GridFloor`, from one analysis per
recording: :func:`grid_floor`). The grid itself (:class:`Grid`,
:func:`build_grid`) runs through the engine's floor, from the lowest noise to
the highest speech median.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..model import EPS_S
from ..outcome import STALLED
from .corpus import UNPROMPTED, Corpus, prompt_delay
from .onset import onset_timeout
from .windows import full_ladder

#: The floor grid's step (dB) and its most floors on each side of the engine's floor.
GRID_DB = 1.0
MAX_GRID_FLOORS = 40


#: Where the floor margin depends on it, the failing floor nearest a setting is found this close (dB) between two
#: floors of the grid.
EDGE_DB = 0.1


@dataclass(frozen=True, slots=True)
class GridFloor:
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
        """Whether this floor ends every beat right at the quiet time and onset timeout, as its beats read."""
        return self.ok and self.need_s < quiet_s - EPS_S <= self.room_s and self.wait_s < onset_timeout_s - EPS_S

    def timeout(self, onset_margin_s: float) -> float | None:
        """The onset timeout this floor's latencies and waits ask for (:func:`clock.core.recommend.onset.onset_timeout`;
        None without either)."""
        return onset_timeout(
            [("", 0.0, self.latency_s)] if self.latency_s > float("-inf") else [],
            [self.wait_s] if self.wait_s > float("-inf") else [],
            onset_margin_s,
        )

    def fails(self, digits: int = 2) -> str:
        """A failing floor and why, in words: ``0.0014 hides a narration's end``, ``0.0026 fails a beat``."""
        return f"{self.floor:.{digits}g} {self.why}"


def noise_cleared(corpus: Corpus, logged: list[int], clear: float) -> float:
    """The loudest noise (p99) of these recordings under ``clear``, the engine's floor (0.0: none)."""
    return max((x for x in (corpus.levels[i].noise_high for i in logged) if x is not None and x < clear), default=0.0)


def grid_floor(
    corpus: Corpus, logged: list[int], floor: float, spoke_at: list[NDArray[np.bool_]], delay: float, clear: float
) -> GridFloor:
    """One floor of the grid, from one analysis per recording (the sweep's shared work, cached per floor)."""
    margin = corpus.margins.quiet_margin_s
    need, room, wait, latency, room_at = float("-inf"), float("inf"), float("-inf"), float("-inf"), None
    # A floor at or under a recording's noise (p99) that the engine's floor clears hears its room as speech.
    if floor <= noise_cleared(corpus, logged, clear):
        return GridFloor(floor, False, need, room, wait, latency, room_at, why="lies at or under a recording's noise")
    analyses = [corpus.analysis(i, floor) for i in logged]
    why = ""
    unheard = False
    for i, a, spoke in zip(logged, analyses, spoke_at):
        hidden, acks = corpus.misread(i, a)
        if acks:
            why = why or "takes an acknowledgment for narration"
        if any(h > margin for _, h in hidden):
            why = why or "hides a narration's end"
        pause = a.narration_pause_s  # (once per recording: it visits every beat)
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
            if b.undone(pause) != STALLED:
                continue  # (a bound the page caused moves; one the visitor, the backend or the recording caused)
            # Without the prompt in the log, the page prompted some time before the next response.
            r_s = b.room_s - (delay if b.bound in UNPROMPTED else 0.0)
            if r_s < room:
                room, room_at = r_s, (corpus.obs[i].name, b.last_word_s, b.bound)
    # No silence to bridge inside a span (one run of speech per beat at this floor): quiet times start above 0.
    need = max(need, 0.0)
    if not why and room <= need:
        why = "fails a beat at every quiet time"
    return GridFloor(floor, not why, need, room, wait, latency, room_at, unheard, why or "fails a beat")


@dataclass(frozen=True)
class Grid:
    """The replayed grid through the engine's floor ``f0``: floors ``GRID_DB`` apart (``rows``, ``ks`` steps from
    ``f0``, which is ``rows[at0]``), each read from one analysis per recording with beats (``logged``)."""

    corpus: Corpus
    logged: list[int]
    spoke_at: list[NDArray[np.bool_]]
    delay_s: float
    f0: float
    tick_s: float
    rows: list[GridFloor]
    ks: list[int]
    at0: int

    def fresh(self, floor: float) -> GridFloor:
        """Any floor read as the grid's are (between two of them, where an edge is bisected)."""
        return grid_floor(self.corpus, self.logged, floor, self.spoke_at, self.delay_s, self.f0)

    def at_floor(self, floor: float) -> GridFloor:
        """The grid's own row at ``floor`` where it has one, else the floor read afresh."""
        return next((x for x in self.rows if x.floor == floor), None) or self.fresh(floor)


def build_grid(corpus: Corpus, members: list[int], f0: float) -> Grid | None:
    """The grid through the engine's floor ``f0``, from the lowest noise to the highest speech median (None where a
    recording has no event log, or none has beats).

    Outward from ``f0``, down to the first floor under a recording's noise and up to the first at which a beat goes
    unheard (floors past them fail too; the margin needs the nearest failing floor).
    """
    logged = [i for i in members if corpus.obs[i].has_beats]
    if not logged or any(corpus.obs[i].events is None for i in members):
        return None
    delay = prompt_delay(corpus, members)
    # Where the guide spoke: heard at the engine's floor, or as derive tells speech without the floor.
    spoke_at = [corpus.analysis(i, f0).spoken() | corpus.spoke(i) for i in logged]
    lo_l, hi_l, _ = full_ladder(corpus.levels, [i for i in members if corpus.levels[i].speech_median is not None])
    step = 10 ** (GRID_DB / 20)
    # Down to the first grid floor at or under the lowest noise, and up past the highest speech median: the failing
    # floors nearest the engine's are on the grid.
    down = min(MAX_GRID_FLOORS, max(0, int(np.ceil(np.log(f0 / lo_l) / np.log(step))))) if lo_l > 0 else 0
    up = min(MAX_GRID_FLOORS, max(0, int(np.ceil(np.log(min(hi_l, 1.0) / f0) / np.log(step))))) if hi_l > 0 else 0
    tick = float(corpus.obs[logged[0]].trace.tick_s)

    def at(k: int) -> GridFloor:
        return grid_floor(corpus, logged, f0 if k == 0 else float(f0 * step**k), spoke_at, delay, f0)

    noise = noise_cleared(corpus, logged, f0)
    below: list[GridFloor] = []
    for k in range(-1, -down - 1, -1):
        below.append(at(k))
        if below[-1].floor <= noise:
            break
    above: list[GridFloor] = []
    for k in range(1, up + 1):
        above.append(at(k))
        if above[-1].unheard:
            break
    rows = [*reversed(below), at(0), *above]
    return Grid(corpus, logged, spoke_at, delay, f0, tick, rows, list(range(-len(below), len(above) + 1)), len(below))
