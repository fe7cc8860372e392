"""``speechclock plot``, ``speechclock sweep`` and ``speechclock report``."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import click

from ..core.beats import beats as find_beats
from ..core.beats import replay_ticks
from ..core.derive import derive as derive_thresholds
from ..core.segments import segments as find_segments
from ..core.sweep import SweepResult, grid
from ..core.sweep import sweep as run_sweep
from ..core.thresholds import Thresholds
from ..errors import InvalidParameterError
from ..io.baseline import read_baseline
from ..io.output import atomic_output, json_text
from ..io.recording import Recording, envelope
from ..report.text import sweep_table
from .derive import run_checks
from .options import (
    clock_options,
    config_option,
    corpus_options,
    events_option,
    level_options,
    level_opts,
    load,
    load_corpus,
    output_file,
    output_option,
    recording_argument,
)

_FIGURE_FORMATS = ("png", "svg", "pdf")


def _range(ctx: click.Context, param: click.Parameter, value: str) -> tuple[float, ...]:
    try:
        return grid(value)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err)) from None


def figure_for(
    rec: Recording, th: Thresholds, *, start_s: float | None = None, end_s: float | None = None, min_gap_s: float = 0.15
) -> Any:
    """The plot of one recording (waveform, level, segments, events, replayed clock)."""
    from ..report.plot import plot_recording

    seg = find_segments(rec.trace, floor=th.floor)
    found, replay = [], None
    if rec.events is not None and rec.events.terminals:
        found = find_beats(
            rec.trace, rec.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
        )
        replay = replay_ticks(
            rec.trace, rec.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
        )
    return plot_recording(
        rec.trace,
        floor=th.floor,
        segmentation=seg,
        envelope=envelope(rec.info.path),
        events=rec.events,
        beats=found,
        replay=replay,
        min_gap_s=min_gap_s,
        start_s=start_s,
        end_s=end_s,
        title=f"{rec.name}: floor {th.floor:g}, quiet {th.quiet_s:g} s, tick {float(th.tick_s):.4f} s",
    )


def _save(fig: Any, output: Path, protect: tuple[Path, ...]) -> None:
    from ..report.plot import save_figure

    fmt = output.suffix.lstrip(".").lower()
    if fmt not in _FIGURE_FORMATS:
        raise click.BadParameter(
            f"the file must end in {', '.join('.' + f for f in _FIGURE_FORMATS)}", param_hint="'-o'"
        )
    with atomic_output(output, binary=True, protect=protect) as out:
        save_figure(fig, out, fmt=fmt)


@click.command()
@recording_argument
@events_option
@level_options
@clock_options
@config_option
@click.option("--start", "start_s", type=float, help="Zoom: first second to show.")
@click.option("--end", "end_s", type=float, help="Zoom: last second to show.")
@output_file("FILE.png, .svg or .pdf (written atomically).", required=True)
def plot(
    rec: Path,
    events: Path | None,
    config: Path | None,
    start_s: float | None,
    end_s: float | None,
    output: Path,
    **opts: Any,
) -> None:
    """Plot REC: waveform, level trace with the floor, speech, gaps, events and the replayed clock."""
    if start_s is not None and end_s is not None and end_s <= start_s:
        raise click.BadParameter(f"must be after --start ({start_s}), got {end_s}", param_hint="'--end'")
    level = level_opts(opts)
    recording, th = load(
        rec,
        events=events,
        config=config,
        **level,
        floor=opts["floor"],
        quiet_s=opts["quiet_s"],
        onset_timeout_s=opts["onset_timeout_s"],
    )
    protect = (rec,) + ((Path(recording.events.source),) if recording.events and recording.events.source else ())
    _save(figure_for(recording, th, start_s=start_s, end_s=end_s), output, protect)


sweep_floor = click.option(
    "--floor",
    "floors",
    default="0.001:0.006:0.0005",
    show_default=True,
    callback=_range,
    metavar="LO:HI:STEP",
    help="Floors to try (RMS).",
)
sweep_quiet = click.option(
    "--quiet",
    "quiets",
    default="1.5:3.0:0.1",
    show_default=True,
    callback=_range,
    metavar="LO:HI:STEP",
    help="Quiet times to try (s).",
)


@click.command()
@corpus_options(quiet_flag=False)
@sweep_floor
@sweep_quiet
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--heatmap", type=click.Path(dir_okay=False, path_type=Path), help="Save the premature-end heatmap here.")
@click.option(
    "--tradeoff",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Save the trade-off plot (premature ends vs added latency, Pareto front) here.",
)
@output_option
def sweep(
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    quiet: bool,
    lenient: bool,
    floors: tuple[float, ...],
    quiets: tuple[float, ...],
    fmt: str,
    heatmap: Path | None,
    tradeoff: Path | None,
    output: Path | None,
) -> None:
    """Replay every floor x quiet setting over RECORDINGS: premature ends against added latency.

    Decoding and levels are computed once per recording and shared by all settings.
    """
    corpus = load_corpus(recordings, config, jobs, quiet, lenient)
    cfg = corpus.config
    result = run_sweep(
        corpus.observations, floors=floors, quiets_s=quiets, onset_timeout_s=cfg.thresholds.onset_timeout_s
    )
    from ..report.plot import plot_sweep_heatmap, plot_tradeoff

    if heatmap is not None:
        _save(plot_sweep_heatmap(result), heatmap, tuple(recordings))
    if tradeoff is not None:
        _save(plot_tradeoff(result), tradeoff, tuple(recordings))
    with atomic_output(output, protect=tuple(recordings)) as out:
        if fmt == "json":
            out.write(json_text(sweep_dict(result)))
        elif fmt == "csv":
            writer = csv.writer(out, lineterminator="\n")
            fields = [f for f in result.points[0].__dataclass_fields__]
            writer.writerow(fields)
            writer.writerows([["" if getattr(p, f) is None else getattr(p, f) for f in fields] for p in result.points])
        else:
            out.write(sweep_table(result))


def sweep_dict(result: SweepResult) -> dict[str, Any]:
    """``sweep --format json`` (schema 1)."""
    from dataclasses import asdict

    return {
        "schema": 1,
        "floors": list(result.floors),
        "quiets_s": list(result.quiets_s),
        "n_recordings": result.n_recordings,
        "recommended": None if result.recommended is None else asdict(result.recommended),
        "pareto": [asdict(p) for p in result.pareto],
        "points": [asdict(p) for p in result.points],
    }


@click.command()
@corpus_options(quiet_flag=False)
@sweep_floor
@sweep_quiet
@output_file("report.html (one self-contained file, written atomically).", required=True)
def report(
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    quiet: bool,
    lenient: bool,
    floors: tuple[float, ...],
    quiets: tuple[float, ...],
    output: Path,
) -> None:
    """One self-contained HTML report of RECORDINGS: derive, check, sweep, and a plot per recording."""
    from ..report.html import png_data_uri, render_report
    from ..report.plot import plot_sweep_heatmap, plot_tradeoff

    corpus = load_corpus(recordings, config, jobs, quiet, lenient)
    cfg, obs = corpus.config, list(corpus.observations)
    th = cfg.thresholds
    derivation = derive_thresholds(obs, margins=cfg.margins, fallback_floor=th.floor, quiet_s=th.quiet_s)
    result = run_sweep(obs, floors=floors, quiets_s=quiets, onset_timeout_s=th.onset_timeout_s)
    page = render_report(
        title=f"speech-clock report: {len(obs)} recordings",
        derivations=[derivation],
        committed=th,
        checks=run_checks(cfg, obs, read_baseline(cfg.baseline_path)),
        sweep=result,
        sweep_images=[
            ("premature ends by floor and quiet time", png_data_uri(plot_sweep_heatmap(result))),
            ("trade-off and Pareto front", png_data_uri(plot_tradeoff(result))),
        ],
        recording_images=[
            (rec.name, png_data_uri(figure_for(rec, th, min_gap_s=cfg.margins.min_gap_s))) for rec in corpus.recordings
        ],
        agreements=[(o.name, o.agreement) for o in obs],
    )
    with atomic_output(output, protect=tuple(recordings)) as out:
        out.write(page)


__all__ = ["figure_for", "plot", "report", "sweep", "sweep_dict", "sweep_table"]
