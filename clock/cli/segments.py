"""``speechclock segments``: the speech segments of a recording and the gaps between them, against labels."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import click

from ..core.segments import MIN_GAP_S, label_errors
from ..core.segments import segments as find_segments
from ..io.events import read_labels, warn_outside
from ..io.output import atomic_output, json_text
from ..io.serialize import segments_audacity, segments_dict, segments_rows
from ..io.terminal import printable
from ..report.text import labels_table, table
from .options import (
    TIME,
    clock_options,
    config_option,
    labels_option,
    level_options,
    level_opts,
    load,
    output_option,
    recording_argument,
    recording_inputs,
)


def _seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A length in seconds: finite and >= 0, at most an hour."""
    if not 0 <= value <= 3600:
        raise click.BadParameter(f"must be seconds in [0, 3600], got {value:g}")
    return value


@click.command()
@recording_argument
@level_options
@clock_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json", "audacity"]),
    default="table",
    show_default=True,
    help="audacity: a label track (start<TAB>end<TAB>label) to import.",
)
@click.option(
    "--min-gap",
    "min_gap_s",
    type=TIME,
    default=MIN_GAP_S,
    show_default=True,
    callback=_seconds,
    metavar="S",
    help="Merge segments whose gap is shorter (dips between words); 0 for every run above the floor, "
    "as the clock counts quiet.",
)
@click.option(
    "--min-speech",
    "min_speech_s",
    type=TIME,
    default=0.1,
    show_default=True,
    callback=_seconds,
    metavar="S",
    help="Then drop segments shorter than S (clicks, breaths); 0 keeps them.",
)
@labels_option
@config_option
@output_option
def segments(
    rec: Path,
    fmt: str,
    labels: Path | None,
    config: Path | None,
    output: Path | None,
    min_gap_s: float,
    min_speech_s: float,
    **opts: Any,
) -> None:
    """Speech segments of REC (level > floor) and the gaps between them.

    Each segment's onset and last word are given at the clock's cadence and
    at render-quantum resolution (128 frames). Gaps shorter than --min-gap
    are merged and segments shorter than --min-speech dropped, so the
    defaults give phrases; --min-gap 0 --min-speech 0 gives every run above
    the floor, as the clock sees them.
    """
    inputs = recording_inputs(rec, config=config, labels=labels, outputs={"-o": output})
    truth = read_labels(labels) if labels else None
    recording, th = load(rec, level_opts(opts), quantum=True, config=config, floor=opts["floor"])
    seg = find_segments(
        recording.trace, floor=th.floor, quantum=recording.quantum, min_gap_s=min_gap_s, min_speech_s=min_speech_s
    )
    matches = None
    if truth is not None:
        warn_outside(truth, recording.duration_s, str(labels))
        matches = label_errors(seg, truth)
    with atomic_output(output, inputs=inputs) as out:
        if fmt == "json":
            out.write(json_text(segments_dict(str(rec), th, seg, matches)))
        elif fmt == "csv":
            csv.writer(out, lineterminator="\n").writerows(
                [
                    ["" if v is None else repr(v) if isinstance(v, float) else v for v in row]
                    for row in segments_rows(seg)
                ]
            )
        elif fmt == "audacity":
            out.write(segments_audacity(seg))
        else:
            rows = segments_rows(seg)
            kept = [f"gaps under {min_gap_s:g} s merged"] * (min_gap_s > 0) + [
                f"segments under {min_speech_s:g} s dropped"
            ] * (min_speech_s > 0)
            out.write(
                printable(
                    f"{rec}: {seg.n_segments} segments, {len(seg.gaps_s)} gaps; floor {th.floor}, tick {th.tick_s} s; "
                    f"{', '.join(kept) or 'every run above the floor'}\n"
                )
            )
            out.write(table(rows[0], rows[1:]))
            if matches is not None:
                out.write(printable(labels_table(matches)))
