"""``speechclock stress`` as text and as JSON (``docs/formats.md``, "stress")."""

from __future__ import annotations

from typing import Any

from ..core.stress import LineMargin, SettingStress, StressResult, margin_line
from .text import outcome_sentence

__all__ = ["stress_dict", "stress_text"]

STRESS_SCHEMA = 1


def _heading(s: SettingStress) -> str:
    return f"{s.label} (floor {s.floor:g}, quiet {s.quiet_s:g} s, onset timeout {s.onset_timeout_s:g} s)"


def stress_text(result: StressResult) -> str:
    """Per setting: its unchanged replay, one line per axis direction, and the line that limits it."""
    n = len(result.recordings)
    if n == 0:
        return "stress: no recording has beats (an event log with a terminal response): nothing to replay\n"
    out = [
        f"stress over {n} recording{'s' if n != 1 else ''} with beats ({result.search}, seed {result.seed}); "
        "each line from the recordings as they are outward, to its first failing beat"
    ]
    for s in result.settings:
        out.append("")
        out.append(f"{_heading(s)} unchanged: {outcome_sentence(s.unchanged)}")
        if s.unchanged.tally.n_failed:
            out.append("  no margin: the setting already fails on the recordings as they are")
        width = max((len(m.name) for m in s.margins), default=0)
        for m in s.margins:
            out.append(f"  {m.name:<{width}}  {margin_line(m)[len('holds for ' + m.name) + 1 :]}")
        lim = s.limiting
        if lim is not None:
            out.append(f"  smallest margin: {lim.name} ({lim.margin_fraction:.0%} of its range holds)")
    return "\n".join(out) + "\n"


def _margin_dict(m: LineMargin) -> dict[str, Any]:
    f = m.failure
    return {
        "axis": m.axis,
        "variant": m.variant,
        "unit": m.unit,
        "holds_to": m.holds_to,
        "first_failure": m.first_failure,
        "range_end": m.range_end,
        "margin_fraction": m.margin_fraction,
        "fails_unchanged": m.fails_unchanged,
        "failure": None
        if f is None
        else {
            "recording": f.recording,
            "beat": f.beat,
            "t_s": f.t_s,
            "outcome": f.outcome,
            "threshold": f.threshold,
            "reason": f.reason,
        },
        "line": margin_line(m),
    }


def stress_dict(result: StressResult) -> dict[str, Any]:
    """The JSON document of ``speechclock stress --format json``."""
    return {
        "schema": STRESS_SCHEMA,
        "recordings": list(result.recordings),
        "search": result.search,
        "seed": result.seed,
        "settings": [
            {
                "label": s.label,
                "floor": s.floor,
                "quiet_s": s.quiet_s,
                "onset_timeout_s": s.onset_timeout_s,
                "unchanged": {
                    key: getattr(s.unchanged.tally, "n_" + key)
                    for key in ("beats", "ok", "premature", "stalled", "missed_onset", "outpaced", "aborted", "silent")
                },
                "limiting": None if s.limiting is None else s.limiting.name,
                "margins": [_margin_dict(m) for m in s.margins],
                "per_recording": {
                    name: [_margin_dict(m) for m in per] for name, per in zip(result.recordings, s.per_recording)
                },
            }
            for s in result.settings
        ],
    }
