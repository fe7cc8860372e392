"""The one margin policy: how a setting inside the valid region is ranked by the margins it keeps.

Pure numpy. A setting is a threshold (a floor, a level, a probability) and a
quiet time; the valid region is the settings that fail the fewest beats. A
setting is ranked, first, by the margins it keeps from every worse setting
(:func:`margin_tier`):

``0``
    no worse setting comes within both margins of it (closer than
    ``quiet_margin_s`` along the quiet time *and* closer than
    ``floor_margin_db`` along the threshold), and along the threshold the
    margin is kept;
``1``
    along each axis through it, the margin is kept, or, where the valid run
    along that axis is narrower than twice the margin, it is the run's
    centre (as far inside as the run allows);
``2``
    any other setting of the region.

Then by the caller's tie-break: derive ranks by the nearest floor to the
engine's and then the least quiet time
(:func:`clock.core.recommend.region.place_on_grid`); compare by the least
mean added latency and then the least quiet time
(:func:`clock.core.compare.tune`). Along a threshold without a unit of dB (a
probability, a mode) there is no margin: every setting keeps it, and only
its own threshold's quiet times count for the box.

:func:`choose_setting` applies the policy to a grid of failure counts
(rows: thresholds, columns: quiet times), where a worse setting's edge is
taken to lie anywhere in the step past the last valid setting before it: a
setting's clearance along an axis is measured to that last valid setting
(so the margin holds wherever the edge lies in the step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..model import EPS_S, Margins

__all__ = ["GridTiers", "choose_setting", "grid_tiers", "margin_tier"]


def margin_tier(*, boxed: Any, quiet_kept: Any, quiet_centred: Any, threshold_kept: Any, threshold_centred: Any) -> Any:
    """A setting's rank by the margins it keeps (0 best; see the module notes).

    Parameters
    ----------
    boxed : bool or ndarray of bool
        No worse setting within both margins of it.
    quiet_kept, threshold_kept : bool or ndarray of bool
        Along that axis through it, the margin kept from every worse setting.
    quiet_centred, threshold_centred : bool or ndarray of bool
        Along that axis, its valid run is narrower than twice the margin and it is the run's centre.

    Returns
    -------
    int or ndarray of int
        0, 1 or 2 (per setting, for arrays).
    """
    tier = np.where(
        np.logical_and(boxed, threshold_kept),
        0,
        np.where(np.logical_or(quiet_kept, quiet_centred) & np.logical_or(threshold_kept, threshold_centred), 1, 2),
    )
    return int(tier) if tier.ndim == 0 else tier.astype(np.int64)


@dataclass(frozen=True, slots=True)
class GridTiers:
    """Every setting of a grid ranked by the margin policy (rows: thresholds, columns: quiet times).

    Attributes
    ----------
    valid : ndarray of bool
        The settings with the fewest failures.
    tier : ndarray of int
        :func:`margin_tier` of each valid setting (3 where not valid).
    """

    valid: NDArray[np.bool_]
    tier: NDArray[np.int64]


def _along(valid: NDArray[np.bool_], values: NDArray[np.float64], margin: float) -> tuple[NDArray, NDArray]:
    """Along the columns of ``valid`` (one axis, rows the other): per valid cell, whether it keeps ``margin`` from
    the last valid cell before a worse one on each side, and whether its run is narrower than that allows and it
    stands as far inside as the run does (its centre)."""
    kept = np.zeros(valid.shape, bool)
    centred = np.zeros(valid.shape, bool)
    for r in range(valid.shape[0]):
        padded = np.concatenate([[False], valid[r], [False]])
        edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
        for a, b in zip(edges[::2].tolist(), (edges[1::2] - 1).tolist()):
            v = values[a : b + 1]
            left = v - v[0] if a > 0 else np.full(v.size, np.inf)
            right = v[-1] - v if b < valid.shape[1] - 1 else np.full(v.size, np.inf)
            clear = np.minimum(left, right)
            kept[r, a : b + 1] = clear >= margin - EPS_S
            most = clear.max()
            if most < margin - EPS_S:
                centred[r, a : b + 1] = clear >= most - EPS_S
    return kept, centred


def _window(values: NDArray[np.float64], margin: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per index ``c`` of an ascending axis, the first and one past the last index of the worse settings that
    come within ``margin`` of it (a worse setting at ``i`` counted from its neighbour towards ``c``)."""
    n = values.size
    within = margin - EPS_S
    first = np.searchsorted(values, values - within, side="right")  # the first with values[c] - v < margin
    last = np.searchsorted(values, values + within, side="left") - 1  # the last with v - values[c] < margin
    lo = np.maximum(first - 1, 0)
    hi = np.minimum(last + 2, n)
    own = np.arange(n)
    return np.minimum(lo, own), np.maximum(hi, own + 1)


def grid_tiers(
    failures: NDArray[np.int64],
    quiets_s: NDArray[np.float64],
    thresholds_db: NDArray[np.float64] | None,
    margins: Margins,
) -> GridTiers:
    """Every setting of a grid of failure counts ranked by the margin policy (see the module notes).

    Parameters
    ----------
    failures : ndarray of int, shape (n_thresholds, n_quiets)
        Failing beats per setting.
    quiets_s : ndarray of float
        The quiet times (ascending).
    thresholds_db : ndarray of float, or None
        The thresholds in dB (ascending), where the floor margin holds along them; None where it does not.
    margins : Margins
        ``quiet_margin_s`` and ``floor_margin_db``.

    Returns
    -------
    GridTiers
    """
    valid = failures == failures.min()
    worse = ~valid
    q_kept, q_centred = _along(valid, quiets_s, margins.quiet_margin_s)
    n_t, n_q = failures.shape
    if thresholds_db is None:
        t_kept, t_centred = np.ones(valid.shape, bool), np.zeros(valid.shape, bool)
        t_lo, t_hi = np.arange(n_t), np.arange(n_t) + 1
    else:
        t_kept, t_centred = (x.T for x in _along(valid.T, thresholds_db, margins.floor_margin_db))
        t_lo, t_hi = _window(thresholds_db, margins.floor_margin_db)
    q_lo, q_hi = _window(quiets_s, margins.quiet_margin_s)
    # Worse settings in any box by a 2-D running count.
    count = np.zeros((n_t + 1, n_q + 1), np.int64)
    count[1:, 1:] = worse.cumsum(0).cumsum(1)
    in_box = (
        count[t_hi[:, None], q_hi[None, :]]
        - count[t_lo[:, None], q_hi[None, :]]
        - count[t_hi[:, None], q_lo[None, :]]
        + count[t_lo[:, None], q_lo[None, :]]
    )
    boxed = in_box == 0
    tier = margin_tier(
        boxed=boxed, quiet_kept=q_kept, quiet_centred=q_centred, threshold_kept=t_kept, threshold_centred=t_centred
    )
    return GridTiers(valid, np.where(valid, tier, 3).astype(np.int64))


def choose_setting(
    failures: NDArray[np.int64],
    quiets_s: NDArray[np.float64],
    thresholds_db: NDArray[np.float64] | None,
    margins: Margins,
    *,
    tiebreak: Callable[[int, int], tuple[float, ...]],
) -> tuple[int, int]:
    """The setting (threshold index, quiet index) of a grid chosen by the margin policy, then by ``tiebreak``.

    Parameters
    ----------
    failures, quiets_s, thresholds_db, margins
        As :func:`grid_tiers`.
    tiebreak : callable
        The caller's order among the settings of the best tier: a key of ``(threshold index, quiet index)``, least
        first (compare: the least mean added latency, then the least quiet time; derive: the nearest floor to the
        engine's, then the least quiet time).

    Returns
    -------
    tuple of int
    """
    tiers = grid_tiers(failures, quiets_s, thresholds_db, margins)
    best = int(tiers.tier.min())
    cells = np.argwhere(tiers.tier == best)
    j, k = min(((int(j), int(k)) for j, k in cells), key=lambda c: tiebreak(*c))
    return j, k
