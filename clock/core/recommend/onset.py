"""The onset timeout: the longest onset latency plus the margin, rounded up to 0.5 s, and its evidence.

Pure numpy.
"""

from __future__ import annotations

from ..times import round_up


def onset_timeout(latencies: list[tuple[str, float, float]], waits: list[float], margin: float) -> float | None:
    """The longest latency or wait plus ``margin``, rounded up to 0.5 s (None without either)."""
    if not latencies and not waits:
        return None
    longest = max([x for _, _, x in latencies] + waits)
    return round_up(longest + margin, "0.5")
