"""The onset timeout: the longest onset latency plus the margin, rounded up to 0.5 s, and its evidence.

Pure numpy.
"""

from __future__ import annotations

import numpy as np

from ..model import Margins
from ..times import round_up
from .corpus import AtFloor, Setting
from .evidence import THIN, OnsetEvidence


def onset_timeout(latencies: list[tuple[str, float, float]], waits: list[float], margin: float) -> float | None:
    """The longest latency or wait plus ``margin``, rounded up to 0.5 s (None without either)."""
    if not latencies and not waits:
        return None
    longest = max([x for _, _, x in latencies] + waits)
    return round_up(longest + margin, "0.5")


def onset_evidence(c: AtFloor, chosen: Setting | None, margins: Margins) -> OnsetEvidence:
    """The onset latencies at the chosen floor (``c``) and the onset timeout."""
    latencies = c.latencies
    lat = np.array([x for _, _, x in latencies])
    return OnsetEvidence(
        n_beats=int(lat.size),
        p50_s=float(np.percentile(lat, 50)) if lat.size else None,
        p95_s=float(np.percentile(lat, 95)) if lat.size else None,
        max_s=float(lat.max()) if lat.size else None,
        slowest=max(latencies, key=lambda x: x[2]) if latencies else None,
        onset_margin_s=margins.onset_margin_s,
        onset_timeout_s=None if chosen is None else chosen.onset_timeout_s,
        thin=lat.size < THIN["beats"],
    )
