"""``speechclock sweep``: replay every floor x quiet time setting over recordings, as a table, CSV or JSON, with
the heatmap and trade-off figures."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import click

from ..core.sweep import SweepPoint, SweepResult
from ..core.sweep import sweep as run_sweep
from ..core.tally import record
from ..io.output import atomic_output, json_text
from ..io.terminal import printable
from ..report.text import rules_dict, sweep_table
from .options import (
    TIME,
    CorpusArgs,
    OutputPath,
    corpus_options,
    figure_format,
    load_corpus,
    onset_timeout_callback,
    output_option,
)
from .shared import check_grid, save_figure_file, sweep_floors, sweep_quiet_times


@click.command()
@corpus_options
@sweep_floors
@sweep_quiet_times
@click.option(
    "--onset-timeout",
    "onset_timeout_s",
    type=TIME,
    callback=onset_timeout_callback,
    metavar="S",
    help="How long the clock waits for speech after a terminal response, in every setting "
    "[default: the config's, else 10].",
)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--heatmap", type=OutputPath(), help="Save the premature-end heatmap here.")
@click.option(
    "--tradeoff",
    type=OutputPath(),
    help="Save the trade-off plot (premature ends vs added latency, Pareto front) here.",
)
@output_option
def sweep(
    corpus_args: CorpusArgs,
    floors: tuple[float, ...],
    quiets: tuple[float, ...],
    onset_timeout_s: float | None,
    fmt: str,
    heatmap: Path | None,
    tradeoff: Path | None,
    output: Path | None,
) -> None:
    """Replay every floor x quiet setting over RECORDINGS: premature ends against added latency.

    Decoding and levels are computed once per recording and shared by all settings.
    """
    check_grid(floors, quiets)
    figure_format(heatmap, "--heatmap")
    figure_format(tradeoff, "--tradeoff")
    corpus = load_corpus(
        corpus_args,
        outputs={"-o": output, "--heatmap": heatmap, "--tradeoff": tradeoff},
    )
    cfg = corpus.config
    result = run_sweep(
        corpus.observations,
        floors=floors,
        quiets_s=quiets,
        onset_timeout_s=cfg.thresholds.onset_timeout_s if onset_timeout_s is None else onset_timeout_s,
        margins=cfg.margins,
        committed=cfg.thresholds,
    )
    from ..report.plot import plot_sweep_heatmap, plot_tradeoff

    committed = (cfg.thresholds.floor, cfg.thresholds.quiet_s) if cfg.path is not None else None
    if heatmap is not None:
        save_figure_file(plot_sweep_heatmap(result, committed=committed), heatmap, corpus.inputs, "--heatmap")
    if tradeoff is not None:
        save_figure_file(plot_tradeoff(result, committed=committed), tradeoff, corpus.inputs, "--tradeoff")
    with atomic_output(output, inputs=corpus.inputs) as out:
        if fmt == "json":
            out.write(json_text(sweep_dict(result)))
        elif fmt == "csv":
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(SweepPoint.RECORD)
            writer.writerows([["" if v is None else v for v in record(p).values()] for p in result.points])
        else:
            out.write(printable(sweep_table(result)))


def sweep_dict(result: SweepResult) -> dict[str, Any]:
    """``sweep --format json`` (schema 1)."""
    floor, quiet, timeout = result.recommended
    outcome = result.derivation.outcome
    return {
        "schema": 1,
        "floors": list(result.floors),
        "quiets_s": list(result.quiets_s),
        "onset_timeout_s": result.onset_timeout_s,
        "n_recordings": result.n_recordings,
        "recommended": {
            "floor": floor,
            "quiet_s": quiet,
            "onset_timeout_s": timeout,
            "outcome": None if outcome is None else record(outcome),
        },
        "pareto": [record(p) for p in result.pareto],
        "points": [record(p) for p in result.points],
        "rules": None if result.derivation.rules is None else rules_dict(result.derivation.rules),
    }
