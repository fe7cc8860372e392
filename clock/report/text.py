"""Plain-text tables, and the derive results as text, Markdown and JSON-ready dicts."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from ..core.agreement import Agreement
from ..core.beats import Beat
from ..core.derive import Derivation, Outcome, equivalents
from ..core.sweep import SweepResult
from ..core.thresholds import Thresholds
from ..core.times import clock_time
from ..io.serialize import params_dict

__all__ = [
    "BEAT_COLUMNS",
    "BEAT_TIMELINE",
    "SWEEP_HEADER",
    "agreement_text",
    "beat_flags",
    "beat_rows",
    "derive_dict",
    "derive_markdown",
    "derive_text",
    "held_out_lines",
    "outcome_line",
    "percent",
    "plural",
    "recommended_line",
    "recording_rows",
    "sweep_rows",
    "sweep_table",
    "table",
]


def beat_flags(b: Beat) -> str:
    """The flags of a beat, as ``beats`` prints them (``ACK RISK PREMATURE``...)."""
    return " ".join(
        name
        for name, on in (
            ("ACK", b.ack_overlap),
            ("RISK", b.premature_risk),
            ("PREMATURE", b.premature),
            ("STALLED", b.stalled),
            ("ABORTED", b.aborted),
            ("MISSED-ONSET", b.missed_onset),
            ("BARGE-IN", b.barge_in_s is not None),
            ("CLEARED", b.cleared_s is not None),
        )
        if on
    )


#: Columns of the beats tables (``beats``, the report), named as the JSON fields, and how each is read.
#: ``n_gaps`` and ``max_gap_s`` (unpaused, as the clock counts it and the baseline keeps it) summarise ``gaps_s``.
BEAT_COLUMNS: dict[str, Callable[[Beat], Any]] = {
    "index": lambda b: b.index,
    "terminal_s": lambda b: b.terminal_s,
    "onset_s": lambda b: b.onset_s,
    "onset_latency_s": lambda b: b.onset_latency_s,
    "ack_last_word_s": lambda b: b.ack_last_word_s,
    "last_word_s": lambda b: b.last_word_s,
    "quiet_declared_s": lambda b: b.quiet_declared_s,
    "added_latency_s": lambda b: b.added_latency_s,
    "n_gaps": lambda b: len(b.gaps_s),
    "max_gap_s": lambda b: max(b.quiet_gaps_s, default=None),
    "replay_vs_logged_s": lambda b: b.replay_vs_logged_s,
    "provider_stopped_vs_last_word_s": lambda b: b.provider_stopped_vs_last_word_s,
    "bound": lambda b: b.bound,
    "outcome": lambda b: b.outcome,
    "flags": beat_flags,
}


#: The columns every beats table starts with: when the beat began, spoke, ended and was declared over.
BEAT_TIMELINE = (
    "index",
    "terminal_s",
    "onset_s",
    "onset_latency_s",
    "ack_last_word_s",
    "last_word_s",
    "quiet_declared_s",
    "added_latency_s",
    "n_gaps",
    "max_gap_s",
)


def beat_rows(beats: Sequence[Beat], columns: Sequence[str]) -> list[list[Any]]:
    """One row per beat, in the order of ``columns`` (keys of :data:`BEAT_COLUMNS`)."""
    read = [BEAT_COLUMNS[c] for c in columns]
    return [[f(b) for f in read] for b in beats]


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


def _dbfs(x: float | None) -> str:
    if x is None:
        return "-"
    return "-inf dBFS" if x <= 0 else f"{20 * math.log10(x):.1f} dBFS"


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def percent(p: float) -> str:
    """A probability as a percentage a person reads: ``10%``, ``3.3%``, ``0.091%``, ``< 0.01%``."""
    pct = 100 * p
    if pct >= 99.95:
        return "100%"
    if pct < 0.01:
        return "< 0.01%"
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 gap``, ``2 gaps``; ``nouns`` for irregular plurals."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def summary_rows(d: Derivation) -> list[tuple[str, str, str, str]]:
    """(quantity, recommended, evidence, compared) rows; the last column is the committed or candidate setting."""
    f, g, o, c = d.floor, d.gaps, d.onsets, d.compared
    meeting = len(f.recordings) - len(f.outside) - len(f.no_window)
    windows = (
        f"window {_lvl(f.window[0])} .. {_lvl(f.window[1])} of {plural(meeting, 'recording')}"
        if f.window is not None
        else "no recording has a window"
    )
    return [
        ("floor", _g(f.floor), windows, "-" if c is None else f"{c.floor:g}"),
        (
            "quiet_s",
            _g(g.quiet_s),
            f"n={g.n_gaps} narration gaps >= {g.min_gap_s:g} s ({g.n_all_gaps} in all)"
            + ("" if g.margin_kept else f"; MARGIN NOT KEPT ({_n(g.margin_left_s)} s of {g.quiet_margin_s:g} s)"),
            "-" if c is None else f"{c.quiet_s:g}",
        ),
        (
            "onset_timeout_s",
            _g(o.onset_timeout_s),
            f"n={o.n_beats} beats",
            "-" if c is None else f"{c.onset_timeout_s:g}",
        ),
    ]


def _compared_heading(d: Derivation) -> str:
    return "committed" if d.compared is None else d.compared.label


def outcome_sentence(r: Outcome | None) -> str:
    """A setting's replay in one sentence."""
    if r is None:
        return "not replayed: nothing was recommended, or no recording has beats"
    return (
        f"replayed over {plural(r.n_recordings, 'recording')} with event logs, {plural(r.n_beats, 'beat')}: "
        f"{r.n_ok} ended right; {plural(r.n_premature, 'premature end')}, {plural(r.n_stalled, 'stall')}, "
        f"{plural(r.n_missed_onset, 'missed onset')}"
        + (f", {plural(r.n_silent, 'silent beat')}" if r.n_silent else "")
        + (f", {r.n_aborted} aborted by the page (end) while the guide spoke" if r.n_aborted else "")
    )


def held_out_lines(d: Derivation) -> list[str]:
    """The out-of-sample evidence: its sentence, then one line per recording the held-out setting fails."""
    h = d.held_out
    if h is None:
        return []
    out = [f"derived without each recording in turn: {h.n_right} of {plural(h.n_recordings, 'recording')} replay right"]
    for r in h.recordings:
        if r.right:
            continue
        if r.floor is None or r.quiet_s is None or r.onset_timeout_s is None:
            out.append(f"  {r.recording}: without it nothing is recommended")
            continue
        beats = ", ".join(f"beat {u.beat} {u.outcome} ({clock_time(u.t_s)})" for u in r.failing)
        out.append(
            f"  {r.recording}: derived without it (floor {r.floor:g}, quiet {r.quiet_s:g} s, onset timeout "
            f"{r.onset_timeout_s:g} s): {beats}"
        )
    return out


def outcome_line(d: Derivation) -> str:
    """The recommendation's replay in one sentence."""
    return outcome_sentence(d.outcome)


def compared_line(d: Derivation) -> str | None:
    """The committed (or candidate) setting's replay in one sentence, or None when there is none."""
    c = d.compared
    if c is None:
        return None
    return (
        f"{c.label} (floor {c.floor:g}, quiet {c.quiet_s:g} s, onset timeout {c.onset_timeout_s:g} s) "
        + outcome_sentence(c.outcome)
    )


def recording_rows(d: Derivation) -> tuple[list[str], list[list[Any]]]:
    """Per recording: noise, speech low, window and where the floor stands in it."""
    f = d.floor
    # The columns are named as derive's JSON fields; status (where the floor stands) is the table's own.
    header = ["name", "noise_median", "noise_high", "speech_low", "window", "status"]
    rows = []
    for r in f.recordings:
        window = "-" if r.window is None else f"{_lvl(r.window[0])} .. {_lvl(r.window[1])}"
        if r.window is None:
            status = "no window"
        elif r.name in f.outside:
            status = "outside"
        elif f.floor is not None:
            above = _db(f.floor) - _db(r.window[0]) if r.window[0] > 0 else float("inf")
            status = ("above 0" if above == float("inf") else f"+{above:.1f} dB") + (
                f" / -{_db(r.window[1]) - _db(f.floor):.1f} dB"
            )
        else:
            status = "-"
        rows.append([r.name, _lvl(r.noise_median), _lvl(r.noise_high), _lvl(r.speech_low), window, status])
    return header, rows


def _db(x: float) -> float:
    return 20 * math.log10(x) if x > 0 else float("-inf")


def derive_text(derivations: Sequence[Derivation]) -> str:
    """The recommendation table and its evidence, for a terminal."""
    out: list[str] = []
    for d in derivations:
        f, g, o = d.floor, d.gaps, d.onsets
        methods = ", ".join(f"{k} {v}" for k, v in sorted(f.methods.items()))
        out.append(
            f"== {d.group}: {plural(len(d.recordings), 'recording')} ({methods}), {plural(o.n_beats, 'beat')}, "
            f"{plural(g.n_gaps, 'narration gap')} =="
        )
        rows = [("", "recommended", "evidence", _compared_heading(d))] + summary_rows(d)
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
        out.append("")
        out.append(outcome_line(d))
        for u in d.outcome.unsatisfied if d.outcome else ():
            out.append(f"  {u.recording}:{clock_time(u.t_s)}: beat {u.beat} {u.outcome}: {u.reason}")
        if (line := compared_line(d)) is not None:
            out.append(line)
            assert d.compared is not None
            for u in d.compared.outcome.unsatisfied if d.compared.outcome else ():
                out.append(f"  {u.recording}:{clock_time(u.t_s)}: beat {u.beat} {u.outcome}: {u.reason}")
        out.extend(held_out_lines(d))
        out.append("")
        out.append(f"floor: {f.rule}")
        if f.floor is not None and f.window is not None:
            above = "above exact-zero noise" if f.above_db == float("inf") else f"{_n(f.above_db, 1)} dB above"
            out.append(
                f"  {_dbfs(f.floor)}: {above} the noise edge ({f.lower_by}), {_n(f.below_db, 1)} dB below "
                f"the speech edge (speech p{f.speech_percentile:g} - {f.floor_margin_db:g} dB, {f.upper_by})"
            )
            eq = equivalents(f.floor)
            out.append(
                f"  in other units: auditok energy_threshold {eq['auditok_energy_threshold']:.1f}; "
                f"hark threshold {eq['hark_threshold_db']:.1f} dB (for a tone)"
            )
        header, rec_rows = recording_rows(d)
        out.extend("  " + line for line in table(header, rec_rows).splitlines())
        if f.speech:
            out.append(
                f"  speech levels inside the window (n={f.n_speech_ticks} ticks): "
                + "  ".join(f"{k} {_lvl(v)}" for k, v in f.speech.items())
            )
        if g.quiet_s is not None:
            out.append(f"quiet time: {g.rule} (gaps measured at floor {_g(g.floor)})")
        else:
            out.append(f"quiet time: none recommended ({g.rule or 'no gap inside a beat'})")
        if g.n_gaps:
            out.append(
                f"  narration gaps >= {g.min_gap_s:g} s (n={g.n_gaps}): p50 {_n(g.p50_s)}  p90 {_n(g.p90_s)}  "
                f"p99 {_n(g.p99_s)} s; longest gap the clock bridges {_n(g.max_gap_s)} s"
            )
        for name, at, gap in g.longest[:3]:
            out.append(f"  long gap: {name}:{clock_time(at)} {gap:.3f} s")
        if g.n_ack:
            out.append(f"  acknowledgment silences before the narration: n={g.n_ack}, longest {_n(g.ack_max_s)} s")
        if g.room_s is not None and g.room_at is not None:
            out.append(
                f"  quiet left after a last word before the beat's bound: at least {_n(g.room_s)} s "
                f"({g.room_at[0]}:{clock_time(g.room_at[1])}); a longer quiet time would stall that beat"
            )
        if g.quiet_s is not None and g.n_gaps:
            bound = (
                f"at most {percent(g.p_exceed_rule_of_three)} (rule of three, n={g.n_gaps})"
                if g.p_exceed_rule_of_three is not None
                else f"no bound from {plural(g.n_gaps, 'gap')} (the rule of three needs more than 3)"
            )
            tail = (
                f"; about {percent(g.p_exceed_tail)} (exponential tail)"
                if g.p_exceed_tail is not None
                else "; no tail estimate (fewer than 5 gaps above the 75th percentile)"
            )
            out.append(f"  chance a future gap exceeds {_g(g.quiet_s)} s: {bound}{tail}")
        if o.onset_timeout_s is not None:
            out.append(
                f"onset timeout: longest latency {_n(o.max_s)} s + margin {o.onset_margin_s:g} s, rounded up to 0.5 s"
            )
            out.append(
                f"  latency (n={o.n_beats} beats): p50 {_n(o.p50_s)}  p95 {_n(o.p95_s)}  max {_n(o.max_s)} s"
                + ("" if o.slowest is None else f" ({o.slowest[0]}:{clock_time(o.slowest[1])})")
            )
        if d.stability:
            out.append("stability (leave the recording that drives each number out):")
            for s in d.stability:
                if s.driver is None:
                    continue
                same = "unchanged" if s.without == s.value else f"{_g(s.without)}"
                out.append(f"  {s.quantity} {_g(s.value)} is driven by {s.driver}; without it: {same}")
        for note in d.warnings:
            out.append(f"warning: {note}")
        out.append("")
    return "\n".join(out)


def derive_markdown(derivations: Sequence[Derivation]) -> str:
    """The recommendation as Markdown tables (for pull requests and docs)."""
    out: list[str] = []
    for d in derivations:
        f, g, o = d.floor, d.gaps, d.onsets
        out.append(f"### {d.group}: {plural(len(d.recordings), 'recording')}, {plural(o.n_beats, 'beat')}\n")
        out.append(f"| | recommended | evidence | {_compared_heading(d)} |\n|---|---|---|---|")
        out.extend(f"| {a} | {b} | {c} | {e} |" for a, b, c, e in summary_rows(d))
        out.append("")
        out.append(outcome_line(d) + "\n")
        if (line := compared_line(d)) is not None:
            out.append(line + "\n")
        if lines := held_out_lines(d):
            out.append("\n".join(lines) + "\n")
        header, rows = recording_rows(d)
        out.append("| " + " | ".join(header) + " |")
        out.append("|---" * len(header) + "|")
        out.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
        out.append("")
        out.append(f"- floor: {f.rule}")
        out.append(f"- quiet time: {g.rule or 'none'}")
        if g.n_gaps:
            out.append(
                f"- narration gaps >= {g.min_gap_s:g} s: p50 {_n(g.p50_s)}, p90 {_n(g.p90_s)}, p99 {_n(g.p99_s)}, "
                f"max {_n(g.max_gap_s)} s (n={g.n_gaps})"
            )
        out.append(f"- onset latency: p50 {_n(o.p50_s)}, p95 {_n(o.p95_s)}, max {_n(o.max_s)} s (n={o.n_beats})")
        for s in d.stability:
            if s.driver is not None:
                out.append(f"- {s.quantity} {_g(s.value)} is driven by {s.driver}; without it: {_g(s.without)}")
        out.extend(f"- **warning**: {note}" for note in d.warnings)
        out.append("")
    return "\n".join(out)


def derive_dict(derivations: Sequence[Derivation], committed: Thresholds | None = None) -> dict[str, Any]:
    """``derive --format json`` (schema 1)."""
    groups = []
    for d in derivations:
        item = asdict(d)
        item["recommended"] = dict(zip(("floor", "quiet_s", "onset_timeout_s"), d.setting))
        item["floor"]["equivalents"] = None if d.floor.floor is None else equivalents(d.floor.floor)
        groups.append(item)
    return {
        "schema": 1,
        "committed": None if committed is None else params_dict(committed),
        "groups": groups,
    }


#: Columns of the sweep table (the names of the JSON fields they show).
SWEEP_HEADER = [
    "floor",
    "quiet_s",
    "n_beats",
    "n_ok",
    "n_premature",
    "n_stalled",
    "n_missed_onset",
    "n_aborted",
    "latency_mean_s",
    "latency_p95_s",
    "latency_max_s",
]


def sweep_rows(result: SweepResult) -> list[list[Any]]:
    """One row per setting, in :data:`SWEEP_HEADER` order (floors as written, not rounded)."""
    return [[_g(p.floor), _g(p.quiet_s), *(getattr(p, f) for f in SWEEP_HEADER[2:])] for p in result.points]


def recommended_line(result: SweepResult) -> str:
    """The one recommendation (as derive makes it) and its replay."""
    d = result.derivation
    floor, quiet, timeout = d.setting
    if floor is None or quiet is None:
        return "recommended: none (see speechclock derive for why)\n"
    on_grid = result.point(floor, quiet)
    where = "on the grid" if on_grid is not None else "between grid points"
    return (
        f"recommended (as derive): floor {floor:g}, quiet {quiet:g} s, onset timeout {_g(timeout)} s ({where}); "
        f"{outcome_line(d)}\n"
    )


def sweep_table(result: SweepResult) -> str:
    """The sweep as plain text, the recommended setting starred and spelled out."""
    floor, quiet, _ = result.recommended
    marks = ["*" if (p.floor, p.quiet_s) == (floor, quiet) else "" for p in result.points]
    text = table(SWEEP_HEADER + ["rec"], [row + [m] for row, m in zip(sweep_rows(result), marks)])
    return text + recommended_line(result)
