"""``speechclock plot``: one recording's figure (the session on one time axis, or its beats), and that figure for
the report (:func:`figure_for`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..core.beats import Beat, replay_ticks
from ..core.beats import beats as find_beats
from ..core.segments import MIN_GAP_S
from ..core.segments import segments as find_segments
from ..core.thresholds import Thresholds
from ..errors import EventLogError
from ..io.recording import Recording, envelope
from .options import (
    TIME,
    clock_options,
    config_option,
    events_option,
    figure_format,
    finite_seconds,
    level_options,
    level_opts,
    load,
    output_file,
    recording_argument,
    recording_inputs,
)
from .shared import save_figure_file


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
    recording, th = load(
        rec,
        level_opts(opts),
        events=events,
        config=config,
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
