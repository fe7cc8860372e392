"""Plain-text tables, and the derive results as text, Markdown and JSON-ready dicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ..core.agreement import Agreement
from ..core.check import clock_time
from ..core.derive import Derivation, equivalents
from ..core.sweep import SweepResult
from ..core.thresholds import Thresholds
from ..io.serialize import params_dict

__all__ = [
    "SWEEP_HEADER",
    "agreement_text",
    "derive_dict",
    "derive_markdown",
    "derive_text",
    "sweep_rows",
    "sweep_table",
    "table",
]


def table(header: list[str], rows: list[list[Any]]) -> str:
    """Plain text columns, right-aligned; None shows as '-'."""
    cells = [header] + [["-" if v is None else _cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "".join("  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in cells)


def agreement_text(a: Agreement) -> str:
    """One line on how the page's logged levels agree with the recording's."""
    head = f"page-logged levels: {a.n_compared} of {a.n_readings} readings compared"
    if a.n_compared == 0:
        return head + " (none inside the recording)"
    start = "start exact" if a.start_exact else "start uncertain"
    offset = f"offset {a.offset_s * 1000:+.1f} ms estimated" if a.offset_estimated else "no offset"
    exact = f"{a.n_exact} bit-exact" + (" (all)" if a.exact else "")
    where = f" (first at {clock_time(a.first_floor_disagree_s)})" if a.first_floor_disagree_s is not None else ""
    return (
        f"{head}, {exact}; |logged - measured| max {a.max_diff:.3g} at {clock_time(a.worst_s)}, p99 "
        f"{a.p99_diff:.3g}; {a.n_floor_disagree} on the other side of floor {a.floor:g}{where}; {start}, {offset}"
    )


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _n(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _lvl(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _summary(d: Derivation, committed: Thresholds | None) -> list[tuple[str, str, str, str]]:
    """(quantity, recommended, evidence, committed) rows."""
    f, g, o = d.floor, d.gaps, d.onsets
    rows = [
        (
            "floor",
            "-" if f.floor is None else f"{f.floor:g}",
            f"n={f.n_speech_ticks} speech ticks, {f.n_silence_ticks} silence ticks, {f.n_recordings} recordings",
            "-" if committed is None else f"{committed.floor:g}",
        ),
        (
            "quiet_s",
            "-" if g.quiet_s is None else f"{g.quiet_s:g}",
            f"n={g.n_gaps} gaps >= {g.min_gap_s:g} s ({g.n_all_gaps} in all)",
            "-" if committed is None else f"{committed.quiet_s:g}",
        ),
        (
            "onset_timeout_s",
            "-" if o.onset_timeout_s is None else f"{o.onset_timeout_s:g}",
            f"n={o.n_beats} beats",
            "-" if committed is None else f"{committed.onset_timeout_s:g}",
        ),
    ]
    return rows


def derive_text(derivations: Sequence[Derivation], committed: Thresholds | None = None) -> str:
    """The recommendation table and its evidence, for a terminal."""
    out: list[str] = []
    for d in derivations:
        f, g, o = d.floor, d.gaps, d.onsets
        methods = ", ".join(f"{k} {v}" for k, v in sorted(f.methods.items()))
        out.append(f"== {d.group}: {len(d.recordings)} recordings ({methods}), {o.n_beats} beats, {g.n_gaps} gaps ==")
        rows = [("", "recommended", "evidence", "committed")] + _summary(d, committed)
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
        out.append("")
        out.append(f"floor: {f.rule}")
        if f.speech:
            out.append(
                f"  speech levels (n={f.n_speech_ticks} ticks): "
                + "  ".join(f"{k} {_lvl(v)}" for k, v in f.speech.items())
            )
        where = (
            ""
            if f.silence_ceiling_at is None
            else f" at {f.silence_ceiling_at[0]}:{clock_time(f.silence_ceiling_at[1])}"
        )
        out.append(
            f"  silence (n={f.n_silence_ticks} ticks): ceiling {_lvl(f.silence_ceiling)}{where}; "
            f"exact zero {100 * f.exact_zero_share:.0f}%"
        )
        if f.floor is not None:
            eq = equivalents(f.floor)
            out.append(
                f"  separation: {_n(f.speech_margin_db, 1)} dB below speech p{f.speech_percentile:g}, "
                f"{_n(f.silence_margin_db, 1)} dB above the silence ceiling"
            )
            out.append(
                f"  in other units: {eq['dbfs']:.1f} dBFS; auditok energy_threshold "
                f"{eq['auditok_energy_threshold']:.1f}; hark threshold {eq['hark_threshold_db']:.1f} dB (for a tone)"
            )
        out.append(
            f"quiet time: longest gap {_n(g.max_gap_s)} s + margin {g.quiet_margin_s:g} s, "
            f"rounded up to 0.05 s (gaps measured at floor {g.floor:g})"
        )
        out.append(
            f"  gaps >= {g.min_gap_s:g} s (n={g.n_gaps}): p50 {_n(g.p50_s)}  p90 {_n(g.p90_s)}  "
            f"p99 {_n(g.p99_s)}  max of all {g.n_all_gaps} {_n(g.max_gap_s)} s"
        )
        for name, at, gap in g.longest[:3]:
            out.append(f"  long gap: {name}:{clock_time(at)} {gap:.3f} s")
        if g.p_exceed_rule_of_three is not None:
            tail = "-" if g.p_exceed_tail is None else f"{100 * g.p_exceed_tail:.2g}%"
            out.append(
                f"  chance a future gap exceeds {_n(g.quiet_s, 2)} s: at most "
                f"{100 * g.p_exceed_rule_of_three:.2g}% (rule of three, n={g.n_gaps}); about {tail} (exponential tail)"
            )
        out.append(
            f"onset timeout: longest latency {_n(o.max_s)} s + margin {o.onset_margin_s:g} s, rounded up to 0.5 s"
        )
        out.append(
            f"  latency (n={o.n_beats} beats): p50 {_n(o.p50_s)}  p95 {_n(o.p95_s)}  max {_n(o.max_s)} s"
            + ("" if o.slowest is None else f" ({o.slowest[0]}:{clock_time(o.slowest[1])})")
        )
        for note in d.warnings:
            out.append(f"warning: {note}")
        out.append("")
    return "\n".join(out)


def derive_markdown(derivations: Sequence[Derivation], committed: Thresholds | None = None) -> str:
    """The recommendation as Markdown tables (for pull requests and docs)."""
    out: list[str] = []
    for d in derivations:
        f, g, o = d.floor, d.gaps, d.onsets
        out.append(f"### {d.group}: {len(d.recordings)} recordings, {o.n_beats} beats, {g.n_gaps} gaps\n")
        out.append("| | recommended | evidence | committed |\n|---|---|---|---|")
        out.extend(f"| {a} | {b} | {c} | {e} |" for a, b, c, e in _summary(d, committed))
        out.append("")
        if f.speech:
            out.append("| speech level | " + " | ".join(f.speech) + " |")
            out.append("|---" * (len(f.speech) + 1) + "|")
            out.append(f"| n={f.n_speech_ticks} | " + " | ".join(_lvl(v) for v in f.speech.values()) + " |")
            out.append("")
        out.append(f"- floor rule: {f.rule}; silence ceiling {_lvl(f.silence_ceiling)} (n={f.n_silence_ticks})")
        out.append(
            f"- gaps >= {g.min_gap_s:g} s: p50 {_n(g.p50_s)}, p90 {_n(g.p90_s)}, p99 {_n(g.p99_s)}, "
            f"max {_n(g.max_gap_s)} s (n={g.n_gaps})"
        )
        if g.p_exceed_rule_of_three is not None:
            out.append(
                f"- chance a future gap exceeds the quiet time: <= {100 * g.p_exceed_rule_of_three:.2g}% "
                "(rule of three)"
                + ("" if g.p_exceed_tail is None else f", about {100 * g.p_exceed_tail:.2g}% (exponential tail)")
            )
        out.append(f"- onset latency: p50 {_n(o.p50_s)}, p95 {_n(o.p95_s)}, max {_n(o.max_s)} s (n={o.n_beats})")
        out.extend(f"- **warning**: {note}" for note in d.warnings)
        out.append("")
    return "\n".join(out)


def derive_dict(derivations: Sequence[Derivation], committed: Thresholds | None = None) -> dict[str, Any]:
    """``derive --format json`` (schema 1)."""
    groups = []
    for d in derivations:
        item = asdict(d)
        item["floor"]["equivalents"] = None if d.floor.floor is None else equivalents(d.floor.floor)
        groups.append(item)
    return {
        "schema": 1,
        "committed": None if committed is None else params_dict(committed),
        "groups": groups,
    }


#: Columns of the sweep table.
SWEEP_HEADER = ["floor", "quiet_s", "beats", "premature", "risk", "no_onset", "lat_mean_s", "lat_p95_s", "lat_max_s"]


def sweep_rows(result: SweepResult) -> list[list[Any]]:
    """One row per setting, in :data:`SWEEP_HEADER` order."""
    return [
        [
            p.floor,
            p.quiet_s,
            p.n_beats,
            p.n_premature,
            p.n_premature_risk,
            p.n_no_onset,
            p.latency_mean_s,
            p.latency_p95_s,
            p.latency_max_s,
        ]
        for p in result.points
    ]


def sweep_table(result: SweepResult) -> str:
    """The sweep as plain text, the recommended setting starred and spelled out."""
    marks = ["*" if p == result.recommended else "" for p in result.points]
    text = table(SWEEP_HEADER + ["rec"], [row + [m] for row, m in zip(sweep_rows(result), marks)])
    r = result.recommended
    if r is not None:
        text += (
            f"recommended: floor {r.floor:g}, quiet {r.quiet_s:g} s ({r.n_premature} premature ends, "
            f"{r.n_premature_risk} risks, {r.n_no_onset} missed onsets over {r.n_beats} beats; "
            f"added latency mean {r.latency_mean_s:.3f} s)\n"
        )
    return text
