"""derive keeps its floor margin wherever the floors that end every beat right leave room for it (issue 34, point 5).

Each tour is built so that its failing floors are known in closed form: a
narration whose middle sentence is a steady square wave at ``quiet_db`` (a
floor at or over it does not hear that sentence, and the 2.4 s of quiet it
leaves inside the narration ends the beat early), and after the last word a
steady tail at ``tail_db`` that runs to 0.4 s before the next prompt (a floor
under it hears the tail, and the 0.4 s left is less than any quiet time that
bridges the narration's pauses: the beat stalls). The floors that end every
beat right are ``tail_db`` up to ``quiet_db``. Everything derive says of its
floor margin is held to a brute-force replay (:func:`clock.core.recommend.replay.judge`)
on a 0.05 dB grid of floors at derive's own quiet time and onset timeout.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from sessions import RATE, Session

from clock.core.events import Label
from clock.core.levels import levels
from clock.core.model import Margins, Observation
from clock.core.recommend.engine import derive
from clock.core.recommend.evidence import Derivation
from clock.core.recommend.replay import judge

LOUD = 0.05
MARGIN_DB = Margins().floor_margin_db
STEP_DB = 0.05


def _db(x: float) -> float:
    return 20 * math.log10(x)


def margin_tour(quiet_db: float, tail_db: float, name: str = "margin") -> Observation:
    """Two beats (prompt, terminal response, narration); the first's middle sentence at ``quiet_db`` and a tail at
    ``tail_db`` after its last word (unlabelled: not the guide's speech), the second plain."""
    s = Session(14.0)
    labels = []

    def say(start: float, end: float, rms: float) -> None:
        s.say(start, end, rms)
        labels.append(Label(start, end))

    s.event("prompt", 0.2).event("terminal_response", 0.5)
    say(1.0, 2.2, LOUD)
    say(2.8, 4.0, 10 ** (quiet_db / 20))
    say(4.6, 5.8, LOUD)
    s.say(5.8, 6.9, 10 ** (tail_db / 20))
    s.event("prompt", 7.3).event("terminal_response", 7.6)
    say(8.0, 9.2, LOUD)
    say(9.8, 10.4, LOUD)
    return Observation(name, levels(s.samples(), RATE), s.log(), tuple(labels))


def _right(obs: list[Observation], floor: float, quiet_s: float, timeout_s: float) -> bool:
    return judge(obs, floor=floor, quiet_s=quiet_s, onset_timeout_s=timeout_s).tally.n_failed == 0


def brute_run(obs: list[Observation], d: Derivation) -> tuple[float, float]:
    """The floors (dB) that end every beat right at derive's quiet time and timeout, around its floor, on a
    0.05 dB grid: the lowest and the highest of the run through derive's floor."""
    floor, quiet, timeout = d.setting
    assert floor is not None and quiet is not None and timeout is not None
    at = _db(floor)
    assert _right(obs, floor, quiet, timeout)
    lo = hi = at
    while _right(obs, 10 ** ((lo - STEP_DB) / 20), quiet, timeout):
        lo -= STEP_DB
    while _right(obs, 10 ** ((hi + STEP_DB) / 20), quiet, timeout):
        hi += STEP_DB
    return lo, hi


# (quiet_db, tail_db): runs of floors 8.5, 8, 7.5 and 6.5 dB wide (the margin fits) and 4 and 5 dB (it does not).
WIDE = [(-48.0, -56.5), (-48.0, -56.0), (-49.0, -56.5), (-49.5, -56.0)]
NARROW = [(-50.0, -54.0), (-50.0, -55.0)]


@pytest.fixture(scope="module")
def derived() -> dict[tuple[float, float], tuple[list[Observation], Derivation]]:
    out = {}
    for quiet_db, tail_db in WIDE + NARROW:
        obs = [margin_tour(quiet_db, tail_db)]
        out[(quiet_db, tail_db)] = obs, derive(obs, held_out=False)
    return out


@pytest.mark.parametrize("case", WIDE + NARROW)
def test_the_construction_puts_the_failing_floors_where_it_says(derived, case):
    # The brute force finds the run of floors the construction places: from the tail's level to the quiet
    # sentence's (a floor at it no longer hears it), within a step of the grid.
    quiet_db, tail_db = case
    obs, d = derived[case]
    lo, hi = brute_run(obs, d)
    assert abs(lo - tail_db) <= 2 * STEP_DB and abs(hi - quiet_db) <= 2 * STEP_DB + 0.01, (lo, hi)


@pytest.mark.parametrize("case", WIDE)
def test_where_the_run_allows_it_the_floor_keeps_its_margin_on_both_sides(derived, case):
    obs, d = derived[case]
    floor, quiet, timeout = d.setting
    lo, hi = brute_run(obs, d)
    assert hi - lo >= 2 * MARGIN_DB + 2 * STEP_DB  # the construction leaves room for the margin
    # Every floor within the margin of derive's ends every beat right (the brute force's run holds it), and derive
    # says so.
    assert _db(floor) - lo >= MARGIN_DB - 1e-6 and hi - _db(floor) >= MARGIN_DB - 1e-6, (floor, lo, hi)
    run = d.floor.run
    assert run is not None and run.margin_kept and (run.quiet_s, run.onset_timeout_s) == (quiet, timeout)
    assert not any("floor margin" in w for w in d.warnings), d.warnings
    # A floor of two significant digits where one fits.
    assert float(f"{floor:.2g}") == floor


@pytest.mark.parametrize("case", WIDE + NARROW)
def test_the_runs_edges_are_the_brute_forces_within_a_tenth_of_a_db(derived, case):
    obs, d = derived[case]
    floor, quiet, timeout = d.setting
    lo, hi = brute_run(obs, d)
    run = d.floor.run
    assert run is not None
    assert None not in (run.low, run.high, run.fails_below, run.fails_above, run.below_db, run.above_db)
    # The edges derive found end every beat right, the floors past them fail: by replay.
    assert _right(obs, run.low, quiet, timeout) and _right(obs, run.high, quiet, timeout)
    assert not _right(obs, run.fails_below, quiet, timeout) and not _right(obs, run.fails_above, quiet, timeout)
    # Each edge found to 0.1 dB, where the brute force's 0.05 dB grid puts it.
    assert _db(run.low) - _db(run.fails_below) <= 0.1 + 1e-9 and _db(run.fails_above) - _db(run.high) <= 0.1 + 1e-9
    assert abs(_db(run.low) - lo) <= 0.1 + STEP_DB and abs(_db(run.high) - hi) <= 0.1 + STEP_DB, (run, lo, hi)
    assert run.below_db == pytest.approx(_db(floor) - _db(run.low))
    assert run.above_db == pytest.approx(_db(run.high) - _db(floor))
    assert run.margin_kept == (min(run.below_db, run.above_db) >= MARGIN_DB - 1e-9)


@pytest.mark.parametrize("case", NARROW)
def test_a_run_narrower_than_twice_the_margin_gives_its_centre_and_a_warning_naming_the_floor(derived, case):
    obs, d = derived[case]
    floor, _, _ = d.setting
    lo, hi = brute_run(obs, d)
    assert hi - lo < 2 * MARGIN_DB
    # The centre (in dB) of the floors that end every beat right, to three significant digits.
    assert abs(_db(floor) - (lo + hi) / 2) <= 0.1 + STEP_DB, (floor, lo, hi)
    assert d.floor.run is not None and not d.floor.run.margin_kept
    assert "cannot be held on both sides" in d.floor.rule
    (warning,) = [w for w in d.warnings if "floor margin" in w]
    assert warning.startswith(f"the floor {floor:g} at quiet") and "could not be kept" in warning


def test_the_issues_case_a_floor_between_the_grids_keeps_the_margin_the_grids_floor_did_not():
    # The engine's floor (the middle of the window, tail .. quiet sentence - 3 dB, in dB: -53.75, to two digits
    # 0.0021) lies 2.9 dB over the tail, the failing edge; 1 dB steps from it (its grid) hold no floor both 3 dB
    # over the tail and 3 dB under the quiet sentence with a 1 dB step to spare, yet 0.0022 .. 0.0028 keep 3 dB
    # on both sides.
    quiet_db, tail_db = -48.0, -56.5
    engine = float(f"{10 ** ((tail_db + quiet_db - MARGIN_DB) / 40):.2g}")
    assert 0 < _db(engine) - tail_db < MARGIN_DB
    obs = [margin_tour(quiet_db, tail_db)]
    d = derive(obs, held_out=False)
    floor, quiet, timeout = d.setting
    assert floor != engine
    assert tail_db + MARGIN_DB <= _db(floor) <= quiet_db - MARGIN_DB
    # Every floor within the margin ends every beat right (a 0.05 dB grid).
    for x in np.arange(-MARGIN_DB, MARGIN_DB + 1e-9, STEP_DB):
        assert _right(obs, floor * 10 ** (x / 20), quiet, timeout), x


@pytest.mark.parametrize("case", WIDE + NARROW)
def test_every_floor_the_words_name_is_what_the_replay_says(derived, case):
    # The floor rule's run: its edges end every beat right, the floors it says fail do; every warning about the
    # floor margin names the floor recommended.
    obs, d = derived[case]
    floor, quiet, timeout = d.setting
    said = re.search(r"replayed, the floors from ([0-9.e-]+) to ([0-9.e-]+) end every beat right", d.floor.rule)
    assert said is not None, d.floor.rule if d.floor.rule else None
    assert _right(obs, float(said.group(1)), quiet, timeout) and _right(obs, float(said.group(2)), quiet, timeout)
    failing = re.findall(r"([0-9.e-]+) (?:fails a beat|lies at or under a recording's noise)", d.floor.rule)
    assert len(failing) == 2
    for x in failing:
        assert not _right(obs, float(x), quiet, timeout), (x, d.floor.rule)
    for w in d.warnings:
        if "floor margin" in w:
            assert w.startswith(f"the floor {floor:g} "), w
        # Any warning that names "the floor" (or "at floor") names the one recommended.
        for named in re.findall(r"(?:the floor|at floor) ([0-9][0-9.e-]*[0-9])", w):
            assert named == f"{floor:g}", w


def _draws(n: int) -> list[tuple[float, float]]:
    rng = np.random.default_rng(34)
    out = []
    for _ in range(n):
        quiet_db = float(rng.uniform(-52, -44))
        out.append((round(quiet_db, 2), round(float(rng.uniform(quiet_db - 14, quiet_db - 3)), 2)))
    return out


@pytest.mark.parametrize("case", _draws(10) + [("two", "recordings")])
def test_drawn_runs_keep_the_margin_or_give_their_centre(case):
    # Runs of every width from 3 to 14 dB (drawn), and one whose edges two recordings set (the tail of one, the
    # quiet sentence of the other): the margin on both sides wherever the brute force's run leaves room for it with
    # its edges' tenth of a dB to spare, else the run's centre.
    if case == ("two", "recordings"):
        obs = [margin_tour(-40.0, -57.0, "a"), margin_tour(-49.0, -70.0, "b")]
    else:
        obs = [margin_tour(*case)]
    d = derive(obs, held_out=False)
    floor, _, _ = d.setting
    lo, hi = brute_run(obs, d)
    below, above = _db(floor) - lo, hi - _db(floor)
    if hi - lo >= 2 * MARGIN_DB + 0.2:
        assert min(below, above) >= MARGIN_DB - 1e-6, (case, floor, lo, hi)
        assert d.floor.run is not None and d.floor.run.margin_kept
    elif hi - lo < 2 * MARGIN_DB:
        assert abs(_db(floor) - (lo + hi) / 2) <= 0.1 + STEP_DB, (case, floor, lo, hi)
        assert any(w.startswith(f"the floor {floor:g} at quiet") for w in d.warnings)
