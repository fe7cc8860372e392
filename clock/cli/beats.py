"""``speechclock segments`` and ``speechclock beats``."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import click

from ..core.beats import beats as find_beats
from ..core.segments import label_errors
from ..core.segments import segments as find_segments
from ..errors import EventLogError
from ..io.events import read_labels, warn_outside
from ..io.output import atomic_output, json_text
from ..io.serialize import beats_dict, segments_audacity, segments_dict, segments_rows
from ..report.text import table
from .options import (
    clock_options,
    config_option,
    events_option,
    level_options,
    level_opts,
    load,
    output_option,
    recording_argument,
    recording_inputs,
)

labels_option = click.option(
    "--labels",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Audacity label track of ground truth: adds onset and offset errors.",
)


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
@labels_option
@config_option
@output_option
def segments(rec: Path, fmt: str, labels: Path | None, config: Path | None, output: Path | None, **opts: Any) -> None:
    """Speech segments of REC (level > floor) and every gap between them.

    Each segment's onset and last word are given at the clock's cadence and
    at render-quantum resolution (128 frames).
    """
    inputs = recording_inputs(rec, config=config, labels=labels, outputs={"-o": output})
    truth = read_labels(labels) if labels else None
    recording, th = load(rec, quantum=True, config=config, **level_opts(opts), floor=opts["floor"])
    seg = find_segments(recording.trace, floor=th.floor, quantum=recording.quantum)
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
            out.write(
                f"{rec}: {seg.n_segments} segments, {len(seg.gaps_s)} gaps; floor {th.floor}, tick {th.tick_s} s\n"
            )
            out.write(table(rows[0], rows[1:]))
            if matches is not None:
                out.write(_labels_table(matches))


def _labels_table(matches: list) -> str:  # type: ignore[type-arg]
    return "\nagainst labels:\n" + table(
        ["start_s", "end_s", "label", "onset_error_s", "offset_error_s"],
        [[m.label_start_s, m.label_end_s, m.text, m.onset_error_s, m.offset_error_s] for m in matches],
    )


@click.command()
@recording_argument
@events_option
@click.option("--lenient", is_flag=True, help="Skip malformed event lines with a warning.")
@level_options
@clock_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@labels_option
@config_option
@output_option
def beats(
    rec: Path,
    events: Path | None,
    lenient: bool,
    fmt: str,
    labels: Path | None,
    config: Path | None,
    output: Path | None,
    **opts: Any,
) -> None:
    """Beats of REC: onset after each terminal response, gaps, and the replayed clock.

    Flags: ACK an acknowledgment overlapped the terminal response; RISK its
    silence before the narration reaches the quiet time; PREMATURE the clock
    declared quiet and the guide spoke again; STALLED the guide spoke and the
    clock did not declare quiet before the beat's bound (the next prompt,
    terminal response, end or the recording's end); MISSED-ONSET the clock
    gave up waiting, yet the guide spoke within the beat.
    """
    inputs = recording_inputs(rec, config=config, events=events, labels=labels, outputs={"-o": output})
    truth = read_labels(labels) if labels else None
    recording, th = load(
        rec,
        events=events,
        lenient=lenient,
        quantum=labels is not None,
        config=config,
        **level_opts(opts),
        floor=opts["floor"],
        quiet_s=opts["quiet_s"],
        onset_timeout_s=opts["onset_timeout_s"],
    )
    if recording.events is None:
        raise EventLogError(
            f"{rec}: no event log (looked for {rec.with_name(rec.stem + '.events.jsonl').name}; give --events FILE)"
        )
    found = find_beats(
        recording.trace, recording.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
    )
    matches = None
    if truth is not None:
        seg = find_segments(recording.trace, floor=th.floor, quantum=recording.quantum)
        warn_outside(truth, recording.duration_s, str(labels))
        matches = label_errors(seg, truth)
    with atomic_output(output, inputs=inputs) as out:
        if fmt == "json":
            out.write(json_text(beats_dict(str(rec), th, found, matches)))
            return
        out.write(f"{rec}: {len(found)} beats; floor {th.floor}, quiet {th.quiet_s} s, tick {th.tick_s} s\n")
        rows = []
        for b in found:
            flags = [
                name
                for name, on in (
                    ("ACK", b.ack_overlap),
                    ("RISK", b.premature_risk),
                    ("PREMATURE", b.premature),
                    ("STALLED", b.stalled),
                    ("MISSED-ONSET", b.missed_onset),
                )
                if on
            ]
            rows.append(
                [
                    b.index,
                    b.terminal_s,
                    b.onset_s,
                    b.onset_latency_s,
                    b.ack_last_word_s,
                    b.last_word_s,
                    b.quiet_declared_s,
                    b.added_latency_s,
                    len(b.gaps_s),
                    max(b.gaps_s, default=None),
                    b.replay_vs_logged_s,
                    b.outcome,
                    " ".join(flags),
                ]
            )
        out.write(
            table(
                [
                    "index",
                    "terminal_s",
                    "onset_s",
                    "onset_latency_s",
                    "ack_last_word_s",
                    "last_word_s",
                    "quiet_declared_s",
                    "added_latency_s",
                    "n_gaps",
                    "max_gap_s",
                    "replay_vs_logged_s",
                    "outcome",
                    "flags",
                ],
                rows,
            )
        )
        if matches is not None:
            out.write(_labels_table(matches))
