"""``speechclock info``: what a recording is (container, codec, rate, length) and its loudness summary."""

from __future__ import annotations

from pathlib import Path

import click

from ..core.levels import summarize
from ..io.decode import iter_blocks, probe
from ..io.output import json_text
from ..io.terminal import printable
from .options import recording_argument


@click.command()
@recording_argument
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def info(rec: Path, fmt: str) -> None:
    """Container, codec, rate, channels, duration, exact-zero share, peak and RMS of REC."""
    head = probe(rec)
    summary = summarize(iter_blocks(head), head.sample_rate_hz)
    rows = {
        "path": head.path,
        "container": head.container,
        "codec": head.codec,
        "sample_rate_hz": head.sample_rate_hz,
        "n_channels": head.n_channels,
        "n_frames": summary.n_frames,
        "duration_s": round(summary.duration_s, 6),
        "exact_zero_share": round(summary.exact_zero_share, 6),
        "peak": summary.peak,
        "peak_dbfs": round(summary.peak_dbfs, 2),
        "rms": summary.rms,
        "rms_dbfs": round(summary.rms_dbfs, 2),
    }
    if fmt == "json":
        click.echo(json_text({"schema": 1, **rows}), nl=False)
        return
    width = max(len(k) for k in rows)
    for key, value in rows.items():
        click.echo(printable(f"{key:<{width}}  {value}", newlines=False))
