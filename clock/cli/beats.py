"""``speechclock segments`` and ``speechclock beats``."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import click

from ..core.agreement import page_trace
from ..core.beats import LEVEL, RULES, check_rule, heard, log_noise_bumps
from ..core.beats import beats as find_beats
from ..core.levels import LevelTrace
from ..core.model import MIN_GAP_S, Observation
from ..core.recommend.rules import Rule
from ..core.recommend.windows import recording_levels
from ..core.segments import label_errors
from ..core.segments import segments as find_segments
from ..errors import EventLogError, InvalidParameterError
from ..io.corpus import log_agreement
from ..io.events import read_labels, warn_outside
from ..io.output import atomic_output, json_text, write_json_lazily
from ..io.serialize import beat_dict, beats_dict, segments_audacity, segments_dict, segments_rows
from ..io.terminal import printable
from ..report.text import (
    BEAT_TABLE,
    BEAT_WIDE,
    CAUSES_LINE,
    WORDS_LINE,
    after_early_end_line,
    agreement_text,
    assumed_line,
    beat_header,
    beat_rows,
    ended_by_page_lines,
    overlap_line,
    past_bound_line,
    table,
    table_lines,
)
from .options import (
    TIME,
    agreement_config,
    clock_options,
    committed_thresholds,
    config_option,
    events_option,
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
    recording, th = load(rec, quantum=True, config=config, **level_opts(opts), floor=opts["floor"])
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
                out.write(printable(_labels_table(matches)))


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
@click.option(
    "--wide",
    is_flag=True,
    help="Every column of the table (it fits 100 characters without): onsets, the acknowledgment, gaps, the "
    "logged decision, the provider's stop, the bound.",
)
@click.option(
    "--align-log/--no-align-log",
    default=None,
    help="Shift the event log by the offset that best aligns its clock.level readings with the recording "
    "(for a recording whose start is uncertain, e.g. MediaRecorder) [default: the config's align_log, on].",
)
@click.option(
    "--page-ticks",
    is_flag=True,
    help="Replay the clock at the page's own ticks (the frames of its clock.level readings, logged on every "
    "tick) instead of a regular cadence.",
)
@click.option(
    "--rule",
    type=click.Choice(RULES),
    default=LEVEL,
    show_default=True,
    help="The rule the replayed clock runs: the level clock, or one on the provider's output_audio_buffer.stopped "
    "(as derive --format js gives it; docs/clock.md).",
)
@click.option(
    "--hangover",
    "hangover_s",
    type=TIME,
    metavar="S",
    help="The quiet after the last word that ends a beat once the provider's event came (stopped+quiet, "
    "level+stopped).",
)
@labels_option
@config_option
@output_option
@click.pass_context
def beats(
    ctx: click.Context,
    rec: Path,
    events: Path | None,
    lenient: bool,
    fmt: str,
    wide: bool,
    align_log: bool | None,
    page_ticks: bool,
    rule: str,
    hangover_s: float | None,
    labels: Path | None,
    config: Path | None,
    output: Path | None,
    **opts: Any,
) -> None:
    """Beats of REC: onset after each terminal response, gaps, and the replayed clock.

    Flags: ACK an acknowledgment overlapped the terminal response; RISK its
    silence before the narration reaches the quiet time; PREMATURE the clock
    declared quiet and the guide spoke again; STALLED the guide spoke and the
    clock did not declare quiet within the silence it had (a bound the page
    caused, after its own clock declared, moves with the replay); OUTPACED the
    visitor's prompt or end came after the guide had finished, before the
    clock declared (not a failure: the visitor did not wait); ABORTED it came
    while the guide was still speaking (not a failure); SUPERSEDED and
    RECORDING-ENDED a terminal response or the recording's end came first (not
    failures); a line under the table says what happened in each; MISSED-ONSET the clock
    gave up waiting, yet the guide spoke within the beat; BARGE-IN the visitor
    spoke (input_audio_buffer.speech_started) before the beat ended; CLEARED
    the provider cleared its audio buffer. provider_stopped_vs_last_word_s is
    the provider's output_audio_buffer.stopped minus the last word. When the
    log holds the page's clock.level readings, their agreement with the
    recording's levels is shown below the table.
    """
    try:
        check_rule(rule, hangover_s)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err), param_hint="'--hangover'") from None
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
    agreement, log = log_agreement(
        recording, floor=th.floor, config=agreement_config(rec, config), align_log=align_log,
        committed=committed_thresholds(rec, config),
    )  # fmt: skip
    assert log is not None
    trace = recording.trace
    if page_ticks:
        if not log.readings or not isinstance(recording.quantum, LevelTrace):
            raise click.BadParameter(
                f"{log.source}: the log holds no clock.level readings", param_hint="'--page-ticks'"
            )
        trace = page_trace(recording.quantum, log.readings, start=log.start, ticks=trace.ticks)
    # As check does: the setting the log says the page ran, where the command line gives none of its own.
    th, timeout_s, from_log, from_log_line = _at_logged_setting(th, log, opts)
    page = log.setting
    if page is not None and ctx.get_parameter_source("rule") is click.core.ParameterSource.DEFAULT:
        rule = page.rule
        if hangover_s is None:
            hangover_s = page.hangover_s
    try:
        check_rule(rule, hangover_s, quiet_s=th.quiet_s)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err), param_hint="'--hangover'") from None
    found = find_beats(
        trace, log, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=timeout_s, rule=rule, hangover_s=hangover_s,
    )  # fmt: skip
    ran = Rule(rule, th.quiet_s, hangover_s).label
    page_note = None
    if page is not None and page.rule != rule:
        also = f" --hangover {page.hangover_s:g}" if page.hangover_s is not None else ""
        page_note = (
            f"the log says the page ran {Rule(page.rule, page.quiet_s, page.hangover_s).label}; this replay runs "
            f"{ran} (give --rule {page.rule}{also})"
        )
    matches = None
    if truth is not None:
        seg = find_segments(recording.trace, floor=th.floor, quantum=recording.quantum)
        warn_outside(truth, recording.duration_s, str(labels))
        matches = label_errors(seg, truth)
    words_from, overlap = "level", None
    if log_noise_bumps(trace, log) is not None:
        room, _ = recording_levels(Observation(str(rec), trace, log))
        words_from = "split"
        if room.window is None and room.speech_low is not None and room.noise_high is not None:
            words_from, overlap = "overlap", overlap_line(room.noise_high, room.speech_low)
    # Written as they are made: a log of a million beats is never held as text.
    with atomic_output(output, inputs=inputs) as out:
        if fmt == "json":
            head = beats_dict(str(rec), th, [], matches, agreement)
            head["params"].update(
                rule=rule, hangover_s=hangover_s, setting_from_log=from_log, causes_from=log.causes_from,
                words_from=words_from,
            )  # fmt: skip
            if timeout_s != th.onset_timeout_s:
                head["params"]["onset_timeout_s"] = None  # the page waited forever
            write_json_lazily(out, head, "beats", (beat_dict(b) for b in found))
            return
        by = "" if rule == LEVEL else f", rule {ran}"
        out.write(
            printable(f"{rec}: {len(found)} beats; floor {th.floor}, quiet {th.quiet_s} s{by}, tick {th.tick_s} s\n")
        )
        if from_log_line:
            out.write(printable(from_log_line + "\n"))
        columns = BEAT_WIDE if wide else BEAT_TABLE
        for line in table_lines(beat_header(columns), lambda: beat_rows(found, columns)):
            out.write(printable(line))
        for line in ended_by_page_lines(heard(found), th.quiet_s, None if rule == LEVEL else ran):
            out.write(printable(line + "\n"))
        for b in heard(found):
            if b.past_bound:
                out.write(printable(f"beat {b.index + 1}: {past_bound_line(b)}\n"))
            if b.after_early_end:
                out.write(printable(f"beat {b.index + 1}: {after_early_end_line(b)}\n"))
        out.write(printable(CAUSES_LINE[log.causes_from] + "\n"))
        if words_from != "level":
            out.write(printable(WORDS_LINE + "\n"))
        if overlap is not None:
            out.write(printable(overlap + "\n"))
        if page_note is not None:
            out.write(printable(page_note + "\n"))
        said = assumed_line(heard(found)) if rule != LEVEL else None
        if said is not None:
            out.write(printable(said + "\n"))
        if agreement is not None:
            out.write(printable(agreement_text(agreement) + "\n"))
        if matches is not None:
            out.write(printable(_labels_table(matches)))


_GIVEN = {"floor": "--floor", "quiet_s": "--quiet-time", "onset_timeout_s": "--onset-timeout"}


def _at_logged_setting(th: Any, log: Any, opts: dict[str, Any]) -> tuple[Any, float, list[str], str]:
    """The thresholds to replay at: each the command line's where given, else the log's (its clock.setting or
    session line, as check replays), else the config's. Returns them, the onset timeout (``inf`` where the page
    waited forever), the names of those the log gave, and the line that says so ("" when it gave none)."""
    from ..core.check import logged_setting

    said = logged_setting(log)
    taken = {} if said is None else {k: v for k, v in zip(_GIVEN, said) if opts.get(k) is None}
    if not taken:
        return th, th.onset_timeout_s, [], ""
    timeout_s = taken.get("onset_timeout_s", th.onset_timeout_s)
    finite = {k: v for k, v in taken.items() if k != "onset_timeout_s" or v != float("inf")}
    th = th.with_(**finite)
    shown = ", ".join(
        f"{k.removesuffix('_s').replace('_', ' ')} {'none (waits forever)' if v == float('inf') else f'{v:g}'}"
        + (" s" if k != "floor" and v != float("inf") else "")
        for k, v in taken.items()
    )
    given = [_GIVEN[k] for k in taken]
    line = (
        f"replayed at the setting the log says the page ran ({shown}), as check does; give {', '.join(given)} "
        "to replay another"
    )
    return th, timeout_s, list(taken), line
