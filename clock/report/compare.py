"""``speechclock compare``'s views: the table, the JSON and the report's rows (one list of columns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.compare import LEVEL_STEPS_DB, QUIET_LADDER_S, EndpointerResult
from ..core.reference import REFERENCE_JOIN_S, REFERENCE_MIN_S
from ..core.tally import record
from .text import OUTCOME_COLUMNS, table

__all__ = [
    "COMPARE_HEADER",
    "Compared",
    "compare_dict",
    "compare_heading",
    "compare_rows",
    "compare_text",
    "reference_line",
]

#: The table's columns (the names of the JSON fields they show).
COMPARE_HEADER = [
    "name",
    "threshold",
    "quiet_s",
    *OUTCOME_COLUMNS,
    "added_latency_median_s",
    "added_latency_p95_s",
    "cpu_s_per_hour",
]


@dataclass(frozen=True, slots=True)
class Compared:
    """The level clock and the endpointers over one corpus, with the settings they share: what every view shows.

    Attributes
    ----------
    results : tuple of EndpointerResult
        One per contestant (:func:`clock.core.compare.compare_endpointers`).
    floor, onset_timeout_s : float
        Derive's floor for the level clock, and the onset timeout every contestant waits.
    reference : dict of str to int
        How many recordings with beats were judged against their labels (``labels``) and against the split (``split``).
    """

    results: tuple[EndpointerResult, ...]
    floor: float
    onset_timeout_s: float
    reference: dict[str, int]


def _cell(key: str, value: Any) -> Any:
    if value is None:
        return "-"
    if key == "threshold":
        return f"{value:g}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return value


def compare_rows(results: Sequence[EndpointerResult]) -> list[list[Any]]:
    """One row per endpointer, in :data:`COMPARE_HEADER` order (``-`` for none, seconds to the ms)."""
    return [[_cell(k, row[k]) for k in COMPARE_HEADER] for row in map(record, results)]


def _source(reference: Mapping[str, int]) -> str:
    kinds = [k for k in ("labels", "split") if reference.get(k)]
    return " and ".join(kinds) if kinds else "none"


def reference_line(reference: Mapping[str, int]) -> str:
    """What every endpointer, the level clock too, is judged against."""
    parts = []
    if reference.get("labels"):
        parts.append(f"the labels ({reference['labels']} recordings)")
    if reference.get("split"):
        parts.append(
            f"a two-mode split of the level, runs joined across {REFERENCE_JOIN_S:g} s and at least "
            f"{REFERENCE_MIN_S:g} s long ({reference['split']} recordings without labels)"
        )
    return (
        "judged against " + (" and ".join(parts) or "nothing (no recording with beats)") + ": none of the contestants"
    )


def _grid(r: EndpointerResult) -> str:
    """What a contestant's threshold was tuned over."""
    if r.threshold_kind == "floor" and r.n_settings == 1:
        return f"{r.name}: derive's recommendation (floor {r.threshold:g}, quiet {r.quiet_s:g} s), not tuned again"
    n = r.n_settings // len(QUIET_LADDER_S)
    if r.threshold_kind == "floor":
        lo, hi = min(LEVEL_STEPS_DB), max(LEVEL_STEPS_DB)
        return f"{r.name}: its floor ({n} floors: derive's, and 1 dB steps {lo}..+{hi} dB about it)"
    if n <= 1:
        return f"{r.name}: its one {'mode' if r.threshold_kind == 'mode' else 'setting'} (not tuned)"
    what = {"mode": "mode", "probability": "speech probability", "energy_db": "level in dB of 16-bit samples"}
    return f"{r.name}: its {what.get(r.threshold_kind, r.threshold_kind)} ({n} values)"


def compare_heading(found: Compared) -> str:
    """What every row shares, what each threshold was tuned over, and the reference."""
    results, floor, onset_timeout_s, reference = found.results, found.floor, found.onset_timeout_s, found.reference
    return (
        f"each threshold and quiet time ({len(QUIET_LADDER_S)} from {QUIET_LADDER_S[0]:g} to {QUIET_LADDER_S[-1]:g} s) "
        "tuned together on these recordings: fewest failures, then the margins, then the least added latency; "
        f"derive's floor {floor:g}; every endpointer waits {onset_timeout_s:g} s for onset\n"
        f"thresholds: {'; '.join(_grid(r) for r in results)}\n" + reference_line(reference) + _ends(results)
    )


def _ends(results: Sequence[EndpointerResult]) -> str:
    """How a beat the page's ``end`` bounds is judged when a contestant waits past it (P is shared by all)."""
    if not results:
        return ""
    pause = results[0].narration_pause_s
    return (
        "\na beat the visitor ended, not declared over before it: aborted when the reference speaks at the end or "
        f"its last word is less than its recording's longest narration pause before it (at most {pause:.2f} s), "
        "else outpaced (neither a failure: the visitor did not wait)"
    )


def compare_dict(found: Compared, *, skipped: Mapping[str, str]) -> dict[str, Any]:
    """``compare --format json`` (schema 2; docs/formats.md); ``skipped``: the endpointers not run, and why."""
    results, reference = found.results, found.reference
    rows = []
    for r in map(record, results):
        rows.append({k: r[k] for k in (*COMPARE_HEADER, "threshold_kind", "n_settings", "n_silent", "n_failed")})
    return {
        "schema": 2,
        "level_floor": found.floor,
        "onset_timeout_s": found.onset_timeout_s,
        "narration_pause_s": results[0].narration_pause_s if results else None,
        "reference": {
            "source": _source(reference),
            "n_labels": reference.get("labels", 0),
            "n_split": reference.get("split", 0),
        },
        "endpointers": rows,
        "skipped": [{"name": name, "reason": why} for name, why in skipped.items()],
    }


def compare_text(found: Compared, *, skipped: Mapping[str, str]) -> str:
    """The comparison as a table, with the settings every endpointer shares (``skipped``: as :func:`compare_dict`)."""
    notes = "".join(f"not run: {name}: {why}\n" for name, why in skipped.items())
    return compare_heading(found) + "\n" + table(COMPARE_HEADER, compare_rows(found.results)) + notes
