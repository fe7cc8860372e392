"""``speechclock stress``: how far the committed (or a candidate) setting and the recommended one are from breaking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..core.stress import AXES, SEARCHES
from ..io.output import atomic_output, json_text
from ..io.terminal import clipped, printable
from ..report.stress import stress_dict, stress_text
from .options import (
    CorpusArgs,
    OutputPath,
    candidate_options,
    corpus_options,
    figure_format,
    load_corpus,
    output_option,
    with_candidate,
)
from .scale import scale_settings
from .shared import save_figure_file, stress_progress


def _axes(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, ...]:
    names = tuple(a.strip() for a in value.split(",") if a.strip())
    unknown = [a for a in names if a not in AXES]
    if unknown or not names:
        shown = clipped(unknown[0] if unknown else value, quoted=True)
        raise click.BadParameter(f"{shown}: axes are {', '.join(AXES)}")
    return tuple(a for a in AXES if a in names)


@click.command()
@corpus_options
@candidate_options
@click.option(
    "--axes",
    default=",".join(AXES),
    show_default=True,
    callback=_axes,
    help="The changes to try, comma-separated.",
)
@click.option(
    "--search",
    type=click.Choice(SEARCHES),
    default="step",
    show_default=True,
    help="step: replay every value of each line in order, to its first failure; bisect: the same "
    "(failures are not nested, so no value inside a margin is skipped).",
)
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True, help="Seeds noise and loss.")
@click.option(
    "--recommended/--no-recommended",
    default=True,
    show_default=True,
    help="Also stress derive's recommendation, beside the committed (or candidate) setting.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(),
    help="Also save the margins figure (one row per axis, the settings side by side) as .png, .svg or .pdf.",
)
@output_option
def stress(
    corpus_args: CorpusArgs,
    axes: tuple[str, ...],
    search: str,
    seed: int,
    recommended: bool,
    fmt: str,
    plot_path: Path | None,
    output: Path | None,
    **opts: Any,
) -> None:
    """How far the setting is from breaking: RECORDINGS replayed as the world changes.

    Each recording with an event log is changed along each axis (voice gain
    -18..+12 dB, pink room noise -80..-35 dBFS, an Opus re-encode at
    64..6 kb/s with DTX off and on, 1..20 % of 20 ms packets lost at random
    and in bursts, narration gaps up to 400 ms longer), outward from the
    recording as it is, and the committed setting (or a candidate given
    with --floor, --quiet-time, --onset-timeout) and derive's recommendation
    are replayed until the first beat goes wrong. Seeded: the same run gives
    the same bytes, with any --jobs.
    """
    from ..run.stress import settings_for

    if plot_path is not None:
        figure_format(plot_path, "--plot")
    corpus = load_corpus(corpus_args, outputs={"-o": output, "--plot": plot_path})
    cfg, label = with_candidate(corpus.config, opts)
    settings = settings_for(
        corpus.observations, cfg.thresholds, label=label, margins=cfg.margins, recommended=recommended
    )
    result = run_stress(
        corpus,
        cfg,
        settings,
        jobs=corpus_args.jobs,
        no_progress=corpus_args.no_progress,
        axes=axes,
        search=search,
        seed=seed,
        lines=True,
    )
    if plot_path is not None:
        from ..report.plot import plot_stress

        save_figure_file(plot_stress(result), plot_path, corpus.inputs, "--plot")
    with atomic_output(output, inputs=corpus.inputs) as out:
        out.write(json_text(stress_dict(result)) if fmt == "json" else printable(stress_text(result)))


def run_stress(
    corpus: Any, cfg: Any, settings: Any, *, jobs: int, no_progress: bool, lines: bool = False, **options: Any
) -> Any:
    """:func:`clock.run.stress.stress_observations` where ``--jobs``/``--scheduler`` say, with a progress bar on a
    terminal; off one, with ``lines``, one line on stderr per recording done (a long run is never silent)."""
    from ..run.stress import stress_observations, usable_cache
    from ..run.workers import Workers

    sources = [r.info.path for r in corpus.recordings]
    scheduler, cache = scale_settings()
    where = Workers(jobs=jobs, scheduler=scheduler)
    run: dict[str, Any] = {"margins": cfg.margins, "workers": where, "cache": usable_cache(cache, scheduler), **options}
    with stress_progress(corpus, no_progress=no_progress, lines=lines) as progress:
        return stress_observations(sources, list(corpus.observations), settings, progress=progress, **run)


def report_stress(
    corpus: Any, cfg: Any, label: str, derivation: Any, *, jobs: int, no_progress: bool
) -> tuple[str, str]:
    """``report --stress``: the margins figure (a data URI) and text of the setting and derive's recommendation."""
    from ..report.html import png_data_uri
    from ..report.plot import plot_stress

    th = cfg.thresholds
    settings = [(label, th.floor, th.quiet_s, th.onset_timeout_s)]
    floor, quiet, timeout = derivation.setting
    if floor is not None and quiet is not None and timeout is not None:
        settings.append(("recommended", floor, quiet, timeout))
    result = run_stress(corpus, cfg, settings, jobs=jobs, no_progress=no_progress)
    return png_data_uri(plot_stress(result)), stress_text(result)
