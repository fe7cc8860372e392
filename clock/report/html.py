"""One self-contained HTML report: derive tables, check results, the sweep, and a plot per recording.

Images are embedded as base64 PNG; the page needs no network and no files
beside it.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..core.agreement import Agreement
from ..core.check import CheckResult, clock_time
from ..core.derive import Derivation
from ..core.sweep import SweepResult
from ..core.thresholds import Thresholds
from .plot import save_figure
from .text import SWEEP_HEADER, derive_text, sweep_rows

__all__ = ["SECTIONS", "png_data_uri", "render_report"]

#: The report's sections, by element id, in order.
SECTIONS = ("summary", "derive", "check", "agreement", "sweep", "recordings")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
pre { background: #f6f6f6; padding: 1em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; }
th { background: #eee; } td.l, th.l { text-align: left; }
.fail { color: #b00020; font-weight: bold; } .pass { color: #1b5e20; }
img { max-width: 100%; }
"""


def png_data_uri(fig: Any) -> str:
    """A figure as a ``data:image/png;base64,...`` URI."""
    buf = io.BytesIO()
    save_figure(fig, buf, fmt="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns left-aligned, rows holding "FAIL" marked."""

    def cell(v: Any, i: int, tag: str = "td") -> str:
        cls = ' class="l"' if i < left else ""
        text = "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))
        return f"<{tag}{cls}>{html.escape(text)}</{tag}>"

    def row(r: Sequence[Any]) -> str:
        cls = ' class="fail"' if "FAIL" in r else ""
        return f"<tr{cls}>" + "".join(cell(v, i) for i, v in enumerate(r)) + "</tr>"

    head = "".join(cell(h, i, "th") for i, h in enumerate(header))
    body = "".join(row(r) for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _agreement_table(agreements: Sequence[tuple[str, Agreement | None]]) -> str:
    rows = [(name, a) for name, a in agreements if a is not None]
    if not rows:
        return "<p>No recording's log holds the page's clock.level readings.</p>"
    return _table(
        ["recording", "readings", "compared", "bit-exact", "max diff", "p99 diff", "other side of floor", "offset ms"],
        [
            [
                name,
                a.n_readings,
                a.n_compared,
                a.n_exact,
                a.max_diff,
                a.p99_diff,
                a.n_floor_disagree,
                f"{a.offset_s * 1000:+.1f} (estimated)" if a.offset_estimated else "0 (exact start)",
            ]
            for name, a in rows
        ],
    )


def render_report(
    *,
    title: str,
    derivations: Sequence[Derivation],
    committed: Thresholds,
    checks: Sequence[CheckResult],
    sweep: SweepResult | None,
    sweep_images: Sequence[tuple[str, str]] = (),
    recording_images: Sequence[tuple[str, str]] = (),
    agreements: Sequence[tuple[str, Agreement | None]] = (),
) -> str:
    """The report as one HTML string.

    Parameters
    ----------
    title : str
    derivations : sequence of Derivation
    committed : Thresholds
    checks : sequence of CheckResult
    sweep : SweepResult or None
    sweep_images, recording_images : sequence of (caption, data URI)
    agreements : sequence of (recording, Agreement or None)
        The page-logged levels of each recording against its own.
    """
    failed = [r for r in checks if not r.passed]
    n_cases = len({(r.recording, r.check) for r in checks if r.applicable})
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        '<section id="summary"><h2>Summary</h2>',
        _table(
            ["", "committed", "recommended"],
            [
                ["floor", committed.floor, derivations[0].floor.floor if derivations else None],
                ["quiet_s", committed.quiet_s, derivations[0].gaps.quiet_s if derivations else None],
                [
                    "onset_timeout_s",
                    committed.onset_timeout_s,
                    derivations[0].onsets.onset_timeout_s if derivations else None,
                ],
            ],
        ),
        f'<p class="{"fail" if failed else "pass"}">check: {n_cases} checks, '
        f"{len({(r.recording, r.check) for r in failed})} failed.</p></section>",
        '<section id="derive"><h2>Derive</h2>',
        f"<pre>{html.escape(derive_text(derivations, committed))}</pre></section>",
        '<section id="check"><h2>Check</h2>',
        _table(
            ["recording", "time", "check", "result", "measured", "threshold"],
            [
                [
                    r.recording,
                    clock_time(r.t_s) if r.t_s is not None else "",
                    r.check,
                    "n/a" if not r.applicable else ("pass" if r.passed else "FAIL"),
                    r.measured,
                    r.threshold,
                ]
                for r in checks
            ],
            left=6,
        ),
        "</section>",
        '<section id="agreement"><h2>Page-logged levels</h2>',
        _agreement_table(agreements),
        "</section>",
        '<section id="sweep"><h2>Sweep</h2>',
    ]
    if sweep is None:
        parts.append("<p>No sweep.</p>")
    else:
        r = sweep.recommended
        parts.append(
            "<p>Recommended: "
            + (
                "none (no beats)"
                if r is None
                else html.escape(
                    f"floor {r.floor:g}, quiet {r.quiet_s:g} s: {r.n_premature} premature ends, "
                    f"mean added latency {r.latency_mean_s:.3f} s"
                )
            )
            + "</p>"
        )
        parts.extend(
            f'<figure><img alt="{html.escape(c)}" src="{u}"><figcaption>{html.escape(c)}</figcaption></figure>'
            for c, u in sweep_images
        )
        parts.append(_table(SWEEP_HEADER, sweep_rows(sweep), left=0))
    parts.append("</section>")
    parts.append('<section id="recordings"><h2>Recordings</h2>')
    parts.extend(
        f'<figure><img alt="{html.escape(c)}" src="{u}"><figcaption>{html.escape(c)}</figcaption></figure>'
        for c, u in recording_images
    )
    parts.append("</section>")
    parts.append(f"<footer><p>speech-clock {html.escape(__version__)}</p></footer></body></html>\n")
    return "\n".join(parts)
