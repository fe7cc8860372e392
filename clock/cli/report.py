"""``speechclock report``: one self-contained HTML page of derive, check, sweep, a figure per recording, and
optionally the endpointers compared and the robustness."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..api import corpus_checks
from ..api import derive as derive_thresholds
from ..core.beats import Beat
from ..core.beats import beats as find_beats
from ..core.check import CheckResult, check_counts
from ..core.recommend.evidence import Derivation
from ..core.sweep import SweepResult
from ..core.sweep import sweep as run_sweep
from ..core.thresholds import Thresholds
from ..io.baseline import read_baseline
from ..io.config import Config
from ..io.output import atomic_output
from ..report.html import RecordingSection
from ..report.text import check_summary
from ..run.corpus import Corpus
from .compare import endpointer_names, run_compare
from .options import CorpusArgs, candidate_options, corpus_options, load_corpus, output_file, with_candidate
from .plot import figure_for
from .shared import (
    allow_defaults_option,
    baseline_option,
    check_grid,
    config_source,
    stress_progress,
    sweep_floors,
    sweep_quiet_times,
    where_to_run,
)
from .stress import report_stress


@click.command()
@corpus_options
@candidate_options
@sweep_floors
@sweep_quiet_times
@allow_defaults_option
@baseline_option
@click.option(
    "--compare",
    "endpointers",
    metavar="NAMES",
    help="Also compare other endpointers (as speechclock compare --endpointers NAMES; all: every one).",
)
@click.option(
    "--stress",
    "with_stress",
    is_flag=True,
    help="Also a Robustness section: speechclock stress of the setting and the recommendation (every axis).",
)
@output_file("report.html (one self-contained file, written atomically).", required="report.html")
def report(
    corpus_args: CorpusArgs,
    floors: tuple[float, ...],
    quiets: tuple[float, ...],
    allow_defaults: bool,
    baseline: Path | None,
    endpointers: str | None,
    with_stress: bool,
    output: Path,
    **opts: Any,
) -> None:
    """One self-contained HTML report of RECORDINGS: derive, check, sweep, and a plot per recording.

    The committed setting (or a candidate given with --floor, --quiet-time,
    --onset-timeout) is checked, plotted and replayed beside the recommendation.
    """
    from ..report.html import png_data_uri, render_report
    from ..report.plot import MAX_PLOT_BINS, plot_evidence, plot_rules

    check_grid(floors, quiets)
    names, skipped = endpointer_names(endpointers, "--compare") if endpointers is not None else ([], {})
    corpus = load_corpus(
        corpus_args,
        outputs={"-o": output},
        baseline=baseline,
        require_config=not allow_defaults,
        envelope_bins=10 * MAX_PLOT_BINS,  # each plot's waveform from the decode that reads the levels, as plot's
    )
    obs = list(corpus.observations)
    cfg, label = with_candidate(corpus.config, opts)
    source = config_source(cfg, opts)
    th = cfg.thresholds
    derivation = derive_thresholds(
        obs, margins=cfg.margins, compare=th, compare_label=label, committed=corpus.config.thresholds
    )
    # The grid holds the setting checked (committed or candidate) and the recommendation, so the figures
    # draw each at its own point rather than at the grid point nearest it.
    rec_floor, rec_quiet, _ = derivation.setting
    floors = _with_values(floors, th.floor, rec_floor)
    quiets = _with_values(quiets, th.quiet_s, rec_quiet)
    result = run_sweep(obs, floors=floors, quiets_s=quiets, onset_timeout_s=th.onset_timeout_s, derivation=derivation)
    sections = _recording_sections(corpus, cfg, derivation)
    jobs, no_progress = corpus_args.jobs, corpus_args.no_progress
    checks = _checks(corpus, cfg, label, baseline=baseline, jobs=jobs, no_progress=no_progress)
    page = render_report(
        title=f"speech-clock report: {len(obs)} recordings",
        derivation=derivation,
        checks=checks,
        sweep=result,
        recordings=sections,
        config_source=source if cfg.path is not None else f"no speechclock.toml: {source}",
        config_text=cfg.path.read_text(encoding="utf-8") if cfg.path is not None else "",
        evidence_image=png_data_uri(plot_evidence(derivation, committed_floor=th.floor, committed_label=label)),
        rules_image=None
        if derivation.rules is None or not derivation.rules.n_with_event
        else png_data_uri(plot_rules(derivation.rules)),
        sweep_images=_sweep_images(result, th, label),
        agreements=[(o.name, o.agreement) for o in obs],
        endpointers=None if endpointers is None else _endpointers_part(corpus, names, skipped, jobs, no_progress),
        stress=report_stress(corpus, cfg, label, derivation, jobs=jobs, no_progress=no_progress)
        if with_stress
        else None,
    )
    with atomic_output(output, inputs=corpus.inputs) as out:
        out.write(page)
    click.echo(f"config: {source}")
    click.echo(check_summary(check_counts(checks)))


def _recording_sections(corpus: Corpus, cfg: Config, derivation: Derivation) -> list[RecordingSection]:
    """Each recording's section: its beats at the setting, its figure, and its beats' figure where it has beats."""
    from ..report.html import png_data_uri

    th = cfg.thresholds
    sections = []
    for rec in corpus.recordings:
        found: Sequence[Beat] = []
        if rec.events is not None and rec.events.terminals:
            found = find_beats(
                rec.trace, rec.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
            )
        figure = figure_for(
            rec,
            th,
            min_gap_s=cfg.margins.min_gap_s,
            quiet_margin_s=cfg.margins.quiet_margin_s,
            derived_floor=derivation.floor.floor,
        )
        images = [(rec.name, png_data_uri(figure))]
        if found:
            beats_view = figure_for(rec, th, quiet_margin_s=cfg.margins.quiet_margin_s, view="beats")
            images.append((f"{rec.name}: beats", png_data_uri(beats_view)))
        sections.append(RecordingSection(rec.name, found, images))
    return sections


def _checks(
    corpus: Corpus, cfg: Config, label: str, *, baseline: Path | None, jobs: int, no_progress: bool
) -> list[CheckResult]:
    """Every check of the setting, as ``check`` runs them (against the baseline)."""
    base = read_baseline(baseline if baseline is not None else cfg.baseline_path)
    # A progress bar only for the [robustness] table's stress runs (the rest is quick).
    with stress_progress(corpus, no_progress=no_progress or not cfg.robustness) as progress:
        return corpus_checks(
            corpus, cfg, base, observations=list(corpus.observations), label=label, progress=progress,
            **where_to_run(jobs),
        )  # fmt: skip


def _sweep_images(result: SweepResult, th: Thresholds, label: str) -> list[tuple[str, str]]:
    """The sweep's figures, captioned: the heatmap and the trade-off, each marking the setting checked."""
    from ..report.html import png_data_uri
    from ..report.plot import plot_sweep_heatmap, plot_tradeoff

    return [
        (
            "premature ends and stalls by floor and quiet time",
            png_data_uri(plot_sweep_heatmap(result, committed=(th.floor, th.quiet_s), committed_label=label)),
        ),
        (
            "trade-off and Pareto front",
            png_data_uri(plot_tradeoff(result, committed=(th.floor, th.quiet_s), committed_label=label)),
        ),
    ]


def _with_values(grid: tuple[float, ...], *values: float | None) -> tuple[float, ...]:
    """A sweep axis with ``values`` added where they are not on it already, in order."""
    return tuple(sorted(set(grid) | {v for v in values if v is not None and v > 0}))


def _endpointers_part(corpus: Any, names: list[str], skipped: dict[str, str], jobs: int, no_progress: bool) -> Any:
    from ..report.compare import compare_heading, compare_rows
    from ..report.html import EndpointersPart, png_data_uri
    from ..report.plot import plot_compare

    found = run_compare(corpus, names, jobs=jobs, no_progress=no_progress)
    return EndpointersPart(
        compare_heading(found),
        compare_rows(found.results),
        png_data_uri(plot_compare(found.results)),
        [f"{name}: {why}" for name, why in skipped.items()],
    )
