"""``speechclock plot``, ``speechclock sweep`` and ``speechclock report``."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..api import corpus_checks
from ..api import derive as derive_thresholds
from ..core.beats import Beat, replay_ticks
from ..core.beats import beats as find_beats
from ..core.check import check_counts
from ..core.model import MIN_GAP_S
from ..core.segments import segments as find_segments
from ..core.sweep import MAX_SWEEP_POINTS, SweepResult, grid
from ..core.sweep import sweep as run_sweep
from ..core.thresholds import Thresholds, check_floor, check_wait_s
from ..errors import EventLogError, InvalidParameterError
from ..io.baseline import read_baseline
from ..io.output import atomic_output, json_text
from ..io.recording import Recording, envelope
from ..io.terminal import printable
from ..report.text import check_summary, rules_dict, sweep_table
from .compare import endpointer_names, run_compare
from .options import (
    TIME,
    OutputPath,
    candidate_options,
    clock_options,
    config_option,
    corpus_options,
    events_option,
    figure_format,
    finite_seconds,
    level_options,
    level_opts,
    load,
    load_corpus,
    onset_timeout_callback,
    output_file,
    output_option,
    recording_argument,
    recording_inputs,
    with_candidate,
)
from .shared import allow_defaults_option, baseline_option, config_source, save_figure_file
from .stress import report_stress, stress_progress, where_to_run


def _range(check: Any) -> Any:
    """A LO:HI:STEP option whose every value passes ``check`` (the bounds of --floor or --quiet)."""

    def callback(ctx: click.Context, param: click.Parameter, value: str) -> tuple[float, ...]:
        try:
            values = grid(value)
            for v in values:
                check(v)
        except InvalidParameterError as err:
            raise click.BadParameter(str(err)) from None
        return values

    return callback


def figure_for(
    rec: Recording,
    th: Thresholds,
    *,
    start_s: float | None = None,
    end_s: float | None = None,
    min_gap_s: float = MIN_GAP_S,
    quiet_margin_s: float = 0.2,
    derived_floor: float | None = None,
    view: str = "session",
    beat: int | None = None,
) -> Any:
    """The plot of one recording: the session (waveform, level, speech, events, replayed clock) or its beats.

    ``beat`` (from 1) names the beat a zoom shows in the title.
    """
    from ..report.plot import MAX_PLOT_BINS, plot_beat_timeline, plot_recording

    found: Sequence[Beat] = []
    replay = None
    if rec.events is not None and rec.events.terminals:
        found = find_beats(
            rec.trace, rec.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
        )
        replay = replay_ticks(
            rec.trace, rec.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
        )
    name = rec.name if beat is None else f"{rec.name}, beat {beat}"
    title = f"{name}: floor {th.floor:g}, quiet {th.quiet_s:g} s, tick {th.tick_s} s"
    if view == "beats":
        return plot_beat_timeline(
            found, quiet_s=th.quiet_s, quiet_margin_s=quiet_margin_s, title=title, events=rec.events
        )
    return plot_recording(
        rec.trace,
        floor=th.floor,
        segmentation=find_segments(rec.trace, floor=th.floor),
        # 10 ms bins, coarser on long recordings (about 20 bins per plotted point, whatever the length):
        # from the decode that read the levels, else decoded here.
        envelope=rec.envelope
        if rec.envelope is not None
        else envelope(rec.info.path, bin_s=max(0.01, rec.trace.n_ticks * rec.trace.tick_s / (20 * MAX_PLOT_BINS))),
        events=rec.events,
        beats=found,
        replay=replay,
        min_gap_s=min_gap_s,
        start_s=start_s,
        end_s=end_s,
        title=title,
        quiet_s=th.quiet_s,
        quiet_margin_s=quiet_margin_s,
        derived_floor=derived_floor,
    )


@click.command()
@recording_argument
@events_option
@level_options
@clock_options
@config_option
@click.option(
    "--start", "start_s", type=TIME, callback=finite_seconds, metavar="T", help="Zoom: from T (seconds or mm:ss.mmm)."
)
@click.option(
    "--end", "end_s", type=TIME, callback=finite_seconds, metavar="T", help="Zoom: to T (seconds or mm:ss.mmm)."
)
@click.option(
    "--beat",
    "beat",
    type=int,
    metavar="N",
    help="Zoom on beat N (from 1, as the tables): its terminal response to its bound.",
)
@click.option(
    "--view",
    type=click.Choice(["session", "beats"]),
    default="session",
    show_default=True,
    help="session: the recording on one time axis; beats: one row per beat, on time since its terminal response.",
)
@output_file("FILE.png, .svg or .pdf (written atomically).", required="FILE.png (or .svg, .pdf)")
def plot(
    rec: Path,
    events: Path | None,
    config: Path | None,
    start_s: float | None,
    end_s: float | None,
    beat: int | None,
    view: str,
    output: Path,
    **opts: Any,
) -> None:
    """Plot REC: waveform, level trace with the floor, speech, gaps, events and the replayed clock."""
    if start_s is not None and end_s is not None and end_s <= start_s:
        raise click.BadParameter(f"must be after --start ({start_s}), got {end_s}", param_hint="'--end'")
    if beat is not None and (start_s is not None or end_s is not None):
        raise click.UsageError("give --beat or --start/--end, not both")
    from ..report.plot import MAX_PLOT_BINS

    figure_format(output, "-o")
    inputs = recording_inputs(rec, config=config, events=events, outputs={"-o": output})
    level = level_opts(opts)
    recording, th = load(
        rec,
        events=events,
        config=config,
        **level,
        envelope_bins=10 * MAX_PLOT_BINS,  # 10 to 20 bins per plotted point
        floor=opts["floor"],
        quiet_s=opts["quiet_s"],
        onset_timeout_s=opts["onset_timeout_s"],
    )
    if (beat is not None or view == "beats") and (recording.events is None or not recording.events.terminals):
        where = "--beat" if beat is not None else "--view beats"
        raise EventLogError(f"{rec}: no beats for {where}: {_no_beats(rec, events, recording.events)}")
    if beat is not None:
        assert recording.events is not None
        n = len(recording.events.terminals)
        if not 1 <= beat <= n:
            raise click.BadParameter(f"{rec.name} has {n} beats (1 .. {n}), got {beat}", param_hint="'--beat'")
        found = find_beats(
            recording.trace, recording.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
        )
        b = found[beat - 1]
        start_s, end_s = max(0.0, b.terminal_s - 1.0), b.span_end_s + 0.5
    figure = figure_for(recording, th, start_s=start_s, end_s=end_s, view=view, beat=beat)
    save_figure_file(figure, output, inputs)


def _no_beats(rec: Path, events: Path | None, log: Any) -> str:
    """Why a recording has no beats: no event log (and the name it should have), or no terminal response in it."""
    if log is None:
        return f"no event log (name it {rec.stem}.events.jsonl beside the recording, or give --events FILE)"
    return f"its event log {log.source or events} has no terminal response (terminal_response events start beats)"


sweep_floors = click.option(
    "--floors",
    "floors",
    default="0.001:0.006:0.0005",
    show_default=True,
    callback=_range(check_floor),
    metavar="LO:HI:STEP",
    help="Floors to try (RMS).",
)
sweep_quiet_times = click.option(
    "--quiet-times",
    "quiets",
    default="1.5:3.0:0.1",
    show_default=True,
    callback=_range(lambda v: check_wait_s(v, "a quiet time")),
    metavar="LO:HI:STEP",
    help="Quiet times to try (seconds).",
)


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
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    no_progress: bool,
    lenient: bool,
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
    _check_grid(floors, quiets)
    figure_format(heatmap, "--heatmap")
    figure_format(tradeoff, "--tradeoff")
    corpus = load_corpus(
        recordings,
        config,
        jobs,
        no_progress,
        lenient,
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
            fields = [f for f in result.points[0].__dataclass_fields__]
            writer.writerow(fields)
            writer.writerows([["" if getattr(p, f) is None else getattr(p, f) for f in fields] for p in result.points])
        else:
            out.write(printable(sweep_table(result)))


def _with_values(grid: tuple[float, ...], *values: float | None) -> tuple[float, ...]:
    """A sweep axis with ``values`` added where they are not on it already, in order."""
    return tuple(sorted(set(grid) | {v for v in values if v is not None and v > 0}))


def _check_grid(floors: tuple[float, ...], quiets: tuple[float, ...]) -> None:
    if len(floors) * len(quiets) > MAX_SWEEP_POINTS:
        raise click.UsageError(
            f"--floors and --quiet-times give {len(floors)} x {len(quiets)} = {len(floors) * len(quiets)} settings "
            f"(at most {MAX_SWEEP_POINTS})"
        )


def sweep_dict(result: SweepResult) -> dict[str, Any]:
    """``sweep --format json`` (schema 1)."""
    from dataclasses import asdict

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
            "outcome": None if outcome is None else asdict(outcome),
        },
        "pareto": [asdict(p) for p in result.pareto],
        "points": [asdict(p) for p in result.points],
        "rules": None if result.derivation.rules is None else rules_dict(result.derivation.rules),
    }


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
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    no_progress: bool,
    lenient: bool,
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
    from ..report.html import RecordingSection, png_data_uri, render_report
    from ..report.plot import MAX_PLOT_BINS, plot_evidence, plot_rules, plot_sweep_heatmap, plot_tradeoff

    _check_grid(floors, quiets)
    names, skipped = endpointer_names(endpointers, "--compare") if endpointers is not None else ([], {})
    corpus = load_corpus(
        recordings,
        config,
        jobs,
        no_progress,
        lenient,
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
    base = read_baseline(baseline if baseline is not None else cfg.baseline_path)
    # A progress bar only for the [robustness] table's stress runs (the rest is quick).
    with stress_progress(corpus, no_progress=no_progress or not cfg.robustness) as progress:
        checks = corpus_checks(
            corpus, cfg, base, observations=obs, label=label, progress=progress, **where_to_run(jobs)
        )
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
        sweep_images=[
            (
                "premature ends and stalls by floor and quiet time",
                png_data_uri(plot_sweep_heatmap(result, committed=(th.floor, th.quiet_s), committed_label=label)),
            ),
            (
                "trade-off and Pareto front",
                png_data_uri(plot_tradeoff(result, committed=(th.floor, th.quiet_s), committed_label=label)),
            ),
        ],
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


def _endpointers_part(corpus: Any, names: list[str], skipped: dict[str, str], jobs: int, no_progress: bool) -> Any:
    from ..report.compare import compare_heading, compare_rows
    from ..report.html import EndpointersPart, png_data_uri
    from ..report.plot import plot_compare

    found = run_compare(corpus, names, jobs=jobs, no_progress=no_progress)
    return EndpointersPart(
        compare_heading(
            found.results, floor=found.floor, onset_timeout_s=found.onset_timeout_s, reference=found.reference
        ),
        compare_rows(found.results),
        png_data_uri(plot_compare(found.results)),
        [f"{name}: {why}" for name, why in skipped.items()],
    )


__all__ = ["figure_for", "plot", "report", "sweep", "sweep_dict", "sweep_table"]
