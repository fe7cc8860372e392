"""``speechclock compare``'s views: the table, the JSON and the report's rows (one list of columns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.compare import LEVEL_CLOCK, EndpointerResult
from .text import table

__all__ = ["COMPARE_HEADER", "compare_dict", "compare_heading", "compare_rows", "compare_text"]

#: The table's columns (the names of the JSON fields they show).
COMPARE_HEADER = [
    "name",
    "quiet_s",
    "n_beats",
    "n_ok",
    "n_premature",
    "n_stalled",
    "n_missed_onset",
    "n_aborted",
    "added_latency_median_s",
    "added_latency_p95_s",
    "cpu_s_per_hour",
]


def _cell(value: Any) -> Any:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return value


def compare_rows(results: Sequence[EndpointerResult]) -> list[list[Any]]:
    """One row per endpointer, in :data:`COMPARE_HEADER` order (``-`` for none, seconds to the ms)."""
    return [[_cell(getattr(r, k)) for k in COMPARE_HEADER] for r in results]


def compare_heading(*, floor: float, onset_timeout_s: float) -> str:
    """What every row shares."""
    return (
        f"{LEVEL_CLOCK}: the level clock at floor {floor:g}; every endpointer waits {onset_timeout_s:g} s "
        "for onset, its quiet time tuned on these recordings"
    )


def compare_dict(
    results: Sequence[EndpointerResult], *, floor: float, onset_timeout_s: float, skipped: Mapping[str, str]
) -> dict[str, Any]:
    """``compare --format json`` (schema 1; docs/formats.md)."""
    rows = []
    for r in results:
        row = {k: getattr(r, k) for k in COMPARE_HEADER}
        row["n_silent"] = r.n_silent
        row["n_failed"] = r.n_failed
        rows.append(row)
    return {
        "schema": 1,
        "level_floor": floor,
        "onset_timeout_s": onset_timeout_s,
        "endpointers": rows,
        "skipped": [{"name": name, "reason": why} for name, why in skipped.items()],
    }


def compare_text(
    results: Sequence[EndpointerResult], *, floor: float, onset_timeout_s: float, skipped: Mapping[str, str]
) -> str:
    """The comparison as a table, with the settings every endpointer shares."""
    head = compare_heading(floor=floor, onset_timeout_s=onset_timeout_s) + "\n"
    notes = "".join(f"not run: {name}: {why}\n" for name, why in skipped.items())
    return head + table(COMPARE_HEADER, compare_rows(results)) + notes
