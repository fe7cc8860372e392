"""The one margin policy and its grid chooser, held to a brute force on constructed grids.

Random grids of failure counts, drawn across sizes, shapes, densities,
uneven axes and margins: the setting :func:`clock.core.recommend.margin.choose_setting`
returns is one of the fewest failures that no other such setting beats
under the documented policy (its tier, computed here cell by cell from the
definitions, then the caller's tie-break). Compare's call (its mean
latency standing for derive's tie-break) returns the setting derive's
tie-break gets from the chooser on the same grid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clock.core.model import Margins
from clock.core.recommend.margin import choose_setting, grid_tiers

EPS = 1e-9


def _run(valid: np.ndarray, c: int) -> tuple[int, int]:
    """The run of valid cells through ``c`` (first, last)."""
    a = b = c
    while a > 0 and valid[a - 1]:
        a -= 1
    while b < valid.size - 1 and valid[b + 1]:
        b += 1
    return a, b


def _axis(valid: np.ndarray, values: np.ndarray, c: int, margin: float) -> tuple[bool, bool]:
    """Along one axis through cell ``c``: (the margin kept, the centre of a run too narrow for it), by brute force."""
    a, b = _run(valid, c)

    def clear(x: int) -> float:
        left = values[x] - values[a] if a > 0 else math.inf
        right = values[b] - values[x] if b < valid.size - 1 else math.inf
        return min(left, right)

    most = max(clear(x) for x in range(a, b + 1))
    return clear(c) >= margin - EPS, most < margin - EPS and clear(c) >= most - EPS


def _towards(values: np.ndarray | None, c: int, i: int) -> float:
    """How far a worse setting at ``i`` stands from ``c`` along an axis: from its neighbour towards ``c``."""
    if i == c:
        return 0.0
    if values is None:
        return math.inf
    return abs(values[c] - values[i - int(np.sign(i - c))])


def _tier(failures, quiets, thresholds, margins, j: int, k: int) -> int:
    """The tier of setting (j, k) from the definitions, cell by cell."""
    valid = failures == failures.min()
    q_kept, q_centred = _axis(valid[j], quiets, k, margins.quiet_margin_s)
    if thresholds is None:
        t_kept, t_centred = True, False
    else:
        t_kept, t_centred = _axis(valid[:, k], thresholds, j, margins.floor_margin_db)
    boxed = not any(
        _towards(thresholds, j, i) < margins.floor_margin_db - EPS
        and _towards(quiets, k, m) < margins.quiet_margin_s - EPS
        for i, m in np.argwhere(~valid).tolist()
    )
    # The module notes' tiers, written out here so that the check does not lean on the code it checks.
    if boxed and t_kept:
        return 0
    return 1 if (q_kept or q_centred) and (t_kept or t_centred) else 2


def _grid(rng: np.random.Generator):
    """A random grid: failure counts, ascending quiet times and thresholds in dB (or None), margins."""
    n_t, n_q = int(rng.integers(1, 9)), int(rng.integers(1, 14))
    density = rng.uniform(0.1, 0.9)
    failures = np.where(rng.random((n_t, n_q)) < density, 0, rng.integers(1, 3, (n_t, n_q))).astype(np.int64)
    failures += int(rng.integers(0, 2))  # the fewest need not be none
    quiets = np.round(np.cumsum(rng.choice([0.05, 0.05, 0.1, 0.15], n_q)), 2)
    thresholds = None if rng.random() < 0.25 else np.cumsum(rng.choice([0.5, 1.0, 1.0, 2.0], n_t)) - 60.0
    margins = Margins(
        quiet_margin_s=float(rng.choice([0.05, 0.1, 0.2, 0.3])), floor_margin_db=float(rng.choice([1, 2, 3]))
    )
    return failures, quiets, thresholds, margins


@pytest.mark.parametrize("seed", range(400))
def test_the_chooser_returns_a_setting_no_other_beats_under_the_policy(seed):
    rng = np.random.default_rng(seed)
    failures, quiets, thresholds, margins = _grid(rng)
    latency = rng.uniform(0, 3, failures.shape)
    latency[rng.random(failures.shape) < 0.1] = np.nan  # ends no beat right
    j0 = int(rng.integers(0, failures.shape[0]))
    tiebreaks = {
        "compare": lambda j, k: (latency[j, k] if np.isfinite(latency[j, k]) else math.inf, quiets[k], j),
        "derive": lambda j, k: (abs(j - j0), quiets[k], j),
    }
    valid = failures == failures.min()
    tiers = {(j, k): _tier(failures, quiets, thresholds, margins, j, k) for j, k in np.argwhere(valid).tolist()}
    found = grid_tiers(failures, quiets, thresholds, margins)
    assert {c: int(found.tier[c]) for c in tiers} == tiers
    assert (found.tier[~valid] == 3).all()
    best = min(tiers.values())
    for name, key in tiebreaks.items():
        j, k = choose_setting(failures, quiets, thresholds, margins, tiebreak=key)
        assert valid[j, k], name
        assert tiers[(j, k)] == best, name
        assert not any(tiers[c] == best and key(*c) < key(j, k) for c in tiers), name


@pytest.mark.parametrize("seed", range(100))
def test_compare_and_derive_agree_given_the_same_tie_break(seed):
    from clock.core.compare import _choose

    rng = np.random.default_rng(1000 + seed)
    failures, quiets, thresholds, margins = _grid(rng)
    j0 = int(rng.integers(0, failures.shape[0]))
    # Compare's latency standing for derive's tie-break: the distance from the engine's floor.
    distance = np.abs(np.arange(failures.shape[0]) - j0)[:, None] + np.zeros(failures.shape)
    derive_key = lambda j, k: (abs(j - j0), quiets[k], j)  # noqa: E731
    assert _choose(failures, distance, quiets, thresholds, margins) == choose_setting(
        failures, quiets, thresholds, margins, tiebreak=derive_key
    )


def test_a_box_free_setting_outranks_one_that_keeps_the_margins_only_along_its_axes():
    margins = Margins(quiet_margin_s=0.1, floor_margin_db=1.0)
    quiets = np.round(np.arange(1, 8) * 0.05, 2)  # 0.05 .. 0.35 s
    floors = np.arange(-5.0, 0.0)  # 5 floors, 1 dB apart
    failures = np.zeros((5, 7), np.int64)
    failures[3, 4] = 1  # one worse setting, diagonal to (2, 3): along (2, 3)'s axes nothing fails
    # (2, 3) keeps both margins along its axes, but (3, 4) is within both of it; the least latency is at (2, 3).
    latency = np.ones(failures.shape)
    latency[2, 3] = 0.0
    assert int(grid_tiers(failures, quiets, floors, margins).tier[2, 3]) == 1
    j, k = choose_setting(failures, quiets, floors, margins, tiebreak=lambda j, k: (latency[j, k], quiets[k], j))
    assert int(grid_tiers(failures, quiets, floors, margins).tier[j, k]) == 0
