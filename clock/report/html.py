"""One self-contained HTML report that leads with the answer: the verdict and the failed checks first.

Rendered with Jinja2, autoescaped: every string from a recording, a log or
the config is escaped. Images are embedded as base64 PNG; the page needs no
network and no files beside it, and the same inputs give the same bytes.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from ..core.agreement import Agreement
from ..core.beats import Beat
from ..core.check import CheckResult, check_counts
from ..core.outcome import FAILURES
from ..core.recommend.evidence import Derivation
from ..core.sweep import SweepResult
from ..core.times import clock_time
from .compare import COMPARE_HEADER
from .plot import save_figure
from .text import (
    BEAT_TABLE,
    SWEEP_HEADER,
    beat_header,
    beat_rows,
    check_summary,
    compared_line,
    dead_air_parts,
    held_out_lines,
    not_applicable_lines,
    outcome_line,
    recommended_line,
    recording_rows,
    rule_header,
    rule_rows,
    summary_rows,
    sweep_marks,
    sweep_rows,
)

__all__ = ["SECTIONS", "EndpointersPart", "RecordingSection", "png_data_uri", "render_report"]

#: The report's sections, by element id, in order, with their headings.
SECTIONS = (
    ("summary", "Verdict"),
    ("derive", "Recommendation"),
    ("deadair", "Dead air"),
    ("check", "Checks"),
    ("beats", "Beats"),
    ("agreement", "Page-logged levels"),
    ("sweep", "Sweep"),
    ("recordings", "Recordings"),
    ("config", "Configuration"),
)
#: The section ``report --compare`` adds after the sweep.
COMPARE_SECTION = ("compare", "Other endpointers")
#: The section ``report --stress`` adds after the sweep.
STRESS_SECTION = ("stress", "Robustness")


@dataclass(frozen=True, slots=True)
class EndpointersPart:
    """``report --compare``: the comparison's heading, table rows (``compare_rows``), figure and skipped ones."""

    heading: str
    rows: Sequence[Sequence[Any]]
    image: str | None
    skipped: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class RecordingSection:
    """What the report shows of one recording: its beats and its figures (caption, data URI)."""

    name: str
    beats: Sequence[Beat]
    images: Sequence[tuple[str, str]]


def _beat_columns(beats: Sequence[Any]) -> tuple[str, ...]:
    """The report's beats table: the table ``beats`` prints, and, where a beat had the provider's event, the event
    every rule's decision in the beat used (``rule_event``)."""
    if any(b.rule_stopped_s is not None for b in beats):
        return (*BEAT_TABLE, "rule_stopped_s")
    return BEAT_TABLE


def png_data_uri(fig: Any) -> str:
    """A figure as a ``data:image/png;base64,...`` URI."""
    buf = io.BytesIO()
    save_figure(fig, buf, fmt="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1, fail: Sequence[bool] = ()) -> Any:
    """An escaped HTML table (safe to insert): the first ``left`` columns left-aligned, failing rows marked."""
    from markupsafe import Markup

    def cell(v: Any, i: int, tag: str = "td") -> str:
        cls = ' class="l"' if i < left else ""
        return f"<{tag}{cls}>{html.escape(_cell(v))}</{tag}>"

    head = "".join(cell(h, i, "th") for i, h in enumerate(header))
    marked = ' class="fail"'
    body = "".join(
        f"<tr{marked if i < len(fail) and fail[i] else ''}>" + "".join(cell(v, j) for j, v in enumerate(r)) + "</tr>"
        for i, r in enumerate(rows)
    )
    return Markup(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _agreement_table(agreements: Sequence[tuple[str, Agreement | None]]) -> Any:
    from markupsafe import Markup

    rows = [(name, a) for name, a in agreements if a is not None]
    if not rows:
        return Markup("<p>No recording's log holds the page's clock.level readings.</p>")
    return _table(
        [
            "recording",
            "readings",
            "compared",
            "bit-exact",
            "a quantum after their frame",
            "max diff",
            "p99 diff",
            "other side of floor",
            "offset ms",
        ],
        [
            [
                name,
                a.n_readings,
                a.n_compared,
                a.n_exact,
                a.n_ahead,
                a.max_diff,
                a.p99_diff,
                a.n_floor_disagree,
                f"{a.offset_s * 1000:+.1f} (estimated)" if a.offset_estimated else "0 (exact start)",
            ]
            for name, a in rows
        ],
    )


def _marked_rows(sweep: SweepResult) -> list[list[Any]]:
    """The sweep's rows with the ``rec`` column, as the command's table."""
    return [r + [m] for r, m in zip(sweep_rows(sweep), sweep_marks(sweep))]


def _dead_air_part(d: Derivation, image: str | None) -> dict[str, Any] | None:
    """The Dead air section: the recommendation's cost beside the compared setting's, the rules, per tour."""
    ev = d.rules
    if ev is None:
        return None
    head, heading, tail = dead_air_parts(d)
    tours = [[t.recording, t.n_beats, t.total_s, t.median_s] for t in ev.level.dead_air.tours]
    c = d.compared
    if c is not None and c.dead_air is not None:
        mine = {t.recording: t for t in c.dead_air.tours}
        tours = [row + [mine[row[0]].total_s if row[0] in mine else None] for row in tours]
    saving = ev.saving
    if saving is not None:
        theirs = {t.recording: t for t in saving.dead_air.tours}
        tours = [row + [theirs[row[0]].total_s if row[0] in theirs else None] for row in tours]
    header = ["recording", "beats ended right", "recommended: total s", "median s"]
    if c is not None and c.dead_air is not None:
        header.append(f"{c.label}: total s")
    if saving is not None:
        header.append(f"{saving.rule.label}: total s")
    return {
        "lines": head + ([] if heading is None else [heading]),
        "after": tail,
        "table": None if heading is None else _table(rule_header(), rule_rows(ev)),
        "tours": _table(header, tours),
        "image": image if ev.n_with_event else None,
    }


def render_report(
    *,
    title: str,
    derivation: Derivation,
    checks: Sequence[CheckResult],
    sweep: SweepResult | None,
    recordings: Sequence[RecordingSection],
    config_source: str,
    config_text: str,
    evidence_image: str | None = None,
    sweep_images: Sequence[tuple[str, str]] = (),
    agreements: Sequence[tuple[str, Agreement | None]] = (),
    endpointers: EndpointersPart | None = None,
    stress: tuple[str, str] | None = None,
    rules_image: str | None = None,
) -> str:
    """The report as one HTML string.

    Parameters
    ----------
    title : str
    derivation : Derivation
        The recommendation and its evidence, with the committed (or
        candidate) setting it was compared with (``derive(compare=...)``).
    checks : sequence of CheckResult
    sweep : SweepResult or None
    recordings : sequence of RecordingSection
    config_source : str
        Where the config came from (its path, or "built-in defaults").
    config_text : str
        The config as used.
    evidence_image : str, optional
        derive's evidence figure, as a data URI.
    rules_image : str, optional
        The rules figure (:func:`clock.report.plot.plot_rules`) as a data URI, for the Dead air section.
    sweep_images : sequence of (caption, data URI)
    agreements : sequence of (recording, Agreement or None)
        The page-logged levels of each recording against its own.
    endpointers : EndpointersPart, optional
        ``report --compare``: other endpointers beside the level clock (a
        section of its own, after the sweep).
    stress : (data URI, text), optional
        ``speechclock stress``'s figure and text (``report --stress``): a
        Robustness section after the sweep.
    """
    import jinja2

    anchors = {rec.name: f"rec-{i}" for i, rec in enumerate(recordings)}
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("clock.report", "templates"),
        autoescape=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    shown = list(SECTIONS)
    after_sweep = [i for i, _ in shown].index("sweep") + 1
    extra = ((STRESS_SECTION, stress), (COMPARE_SECTION, endpointers))
    shown[after_sweep:after_sweep] = [section for section, part in extra if part is not None]
    return env.get_template("report.html.j2").render(
        title=title,
        sections=shown,
        endpointers=None if endpointers is None else _endpointers_part(endpointers),
        stress_image=None if stress is None else stress[0],
        stress_text=None if stress is None else stress[1],
        agreement_table=_agreement_table(agreements),
        **_check_part(checks, anchors),
        **_derive_part(derivation),
        evidence_image=evidence_image,
        recordings=[_recording_part(rec, anchors[rec.name]) for rec in recordings],
        dead_air=_dead_air_part(derivation, rules_image),
        **_sweep_part(sweep, sweep_images),
        config_source=config_source,
        config_text=config_text,
        version=__version__,
    )


def _fmt(x: float | None, unit: str = "") -> str:
    """A number of the settings table, or ``-`` where there is none."""
    return "-" if x is None else f"{x:g}{unit}"


def _unsatisfied_lines(outcome: Any) -> list[str]:
    """One line per beat a setting does not replay right (none without an outcome)."""
    return [
        f"{u.recording}:{clock_time(u.t_s)}: beat {u.beat + 1} {u.outcome}: {u.reason}"
        for u in (outcome.unsatisfied if outcome else ())
    ]


def _derive_part(derivation: Derivation) -> dict[str, Any]:
    """The Recommendation section's values: the settings side by side, the outcomes, the rules, the windows, the
    stability and the warnings."""
    f, g, o, c = derivation.floor, derivation.gaps, derivation.onsets, derivation.compared
    setting_rows = [
        ("floor", _fmt(c.floor if c else None), _fmt(f.floor)),
        ("quiet time", _fmt(c.quiet_s if c else None, " s"), _fmt(g.quiet_s, " s")),
        ("onset timeout", _fmt(c.onset_timeout_s if c else None, " s"), _fmt(o.onset_timeout_s, " s")),
    ]
    rules = [f"floor: {f.rule}", f"quiet time: {g.rule or 'none'}"]
    if o.onset_timeout_s is not None:
        rules.append(
            f"onset timeout: longest latency {o.max_s:.3f} s + margin {o.onset_margin_s:g} s, rounded up to 0.5 s"
        )
    header, rows = recording_rows(derivation)
    stability = [[s.quantity, s.value, s.driver, s.without] for s in derivation.stability if s.driver is not None]
    return {
        "setting_rows": setting_rows,
        "outcome": outcome_line(derivation),
        "held_out": held_out_lines(derivation),
        "compared_label": "committed" if c is None else c.label,
        "compared_outcome": compared_line(derivation),
        "derive_summary": summary_rows(derivation),
        "rules": rules,
        "windows_table": _table(header, rows),
        "unsatisfied": _unsatisfied_lines(derivation.outcome),
        "compared_unsatisfied": _unsatisfied_lines(c.outcome if c is not None else None),
        "stability_table": _table(["quantity", "value", "driven by", "without it"], stability, left=1),
        "warnings": list(derivation.warnings),
    }


#: The columns of the checks' tables.
CHECK_HEADER = ["recording", "time", "check", "result", "measured", "threshold"]


def _check_row(r: CheckResult) -> list[Any]:
    """A check's row: where, what, its result (``n/a`` where it does not apply), measured against threshold."""
    result = "n/a" if not r.applicable else ("pass" if r.passed else "FAIL")
    return [r.recording, clock_time(r.t_s) if r.t_s is not None else "", r.check, result, r.detail, r.expected]


def _check_part(checks: Sequence[CheckResult], anchors: dict[str, str]) -> dict[str, Any]:
    """The verdict and the Checks section's values: the failures first (each linking to its recording), then all."""
    failed = [r for r in checks if not r.passed]
    counts = check_counts(checks)
    check_rows = sorted(checks, key=lambda r: (r.passed, r.recording, r.check))
    return {
        "verdict": ("FAIL: " if counts.failed else "PASS: ") + check_summary(counts),
        "failed": [{"anchor": anchors.get(r.recording, "check"), "line": r.line()} for r in failed],
        "failed_table": _table(CHECK_HEADER, [_check_row(r) for r in failed], left=6, fail=[True] * len(failed)),
        "n_results": len(checks),
        "not_applicable": not_applicable_lines(checks),
        "check_table": _table(
            CHECK_HEADER, [_check_row(r) for r in check_rows], left=6, fail=[not r.passed for r in check_rows]
        ),
    }


def _recording_part(rec: RecordingSection, anchor: str) -> dict[str, Any]:
    """A recording's section: its figures and its beats table (failures marked)."""
    table = None
    if rec.beats:
        columns = _beat_columns(rec.beats)
        fail = [b.outcome in FAILURES for b in rec.beats]
        table = _table(beat_header(columns), list(beat_rows(rec.beats, columns)), left=0, fail=fail)
    return {"name": rec.name, "anchor": anchor, "images": list(rec.images), "beats_table": table}


def _sweep_part(sweep: SweepResult | None, images: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The Sweep section's values: the recommendation's line, the figures and every setting's row."""
    from markupsafe import Markup

    return {
        "sweep_line": "No sweep." if sweep is None else recommended_line(sweep).strip(),
        "sweep_images": list(images),
        "sweep_count": 0 if sweep is None else len(sweep.points),
        "sweep_table": Markup("") if sweep is None else _table([*SWEEP_HEADER, "rec"], _marked_rows(sweep), left=0),
    }


def _endpointers_part(endpointers: EndpointersPart) -> dict[str, Any]:
    """The Endpointers section's values (``report --compare``)."""
    return {
        "heading": endpointers.heading,
        "table": _table(COMPARE_HEADER, endpointers.rows),
        "image": endpointers.image,
        "skipped": list(endpointers.skipped),
    }
