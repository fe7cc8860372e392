"""``speechclock beats``: replay the page's clock over a recording and its event log, beat by beat.

The command reads the recording and log, settles the setting and rule the replay runs (the command line's, else
the log's, else the config's), replays, and writes the table or JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click

from ..core.agreement import Agreement, page_trace
from ..core.beats import Beat, heard
from ..core.beats import beats as find_beats
from ..core.events import EventLog
from ..core.levels import LevelTrace
from ..core.model import Observation
from ..core.recommend.rules import Rule
from ..core.recommend.windows import recording_levels
from ..core.segments import LabelMatch, label_errors
from ..core.segments import segments as find_segments
from ..core.speech import log_noise_bumps
from ..core.thresholds import LEVEL, RULES, Thresholds, check_rule
from ..errors import EventLogError, InvalidParameterError
from ..io.events import read_labels, warn_outside
from ..io.output import atomic_output, write_json_lazily
from ..io.recording import Recording
from ..io.serialize import beat_dict, beats_dict
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
    labels_table,
    overlap_line,
    past_bound_line,
    table_lines,
)
from ..run.corpus import log_agreement
from .options import (
    TIME,
    agreement_config,
    clock_options,
    committed_thresholds,
    config_option,
    events_option,
    labels_option,
    level_options,
    level_opts,
    load,
    output_option,
    recording_argument,
    recording_inputs,
)


@dataclass(frozen=True, slots=True)
class Replayed:
    """One recording's beats as the command replayed them, and what the output says beside them.

    Attributes
    ----------
    beats : sequence of Beat
        The replayed beats.
    thresholds : Thresholds
        The setting replayed (the command line's, else the log's, else the config's).
    onset_timeout_s : float
        The onset timeout replayed (``inf`` where the page waited forever).
    rule : str
        The rule the replayed clock ran.
    ran : str
        That rule's label (``Rule.label``), as the output names it.
    hangover_s : float or None
        The rule's hangover.
    from_log : list of str
        The names of the thresholds the log gave.
    from_log_line : str
        The line saying which thresholds the log gave ("" when it gave none).
    page_note : str or None
        The line saying the log's page ran another rule than this replay, if it did.
    words_from : str
        How words were told from the room's noise: ``level``, ``split`` or ``overlap``.
    overlap : str or None
        The line saying speech and noise overlap, where they do.
    causes_from : str
        Where the beats' causes came from (``EventLog.causes_from``).
    agreement : Agreement or None
        The page's clock.level readings against the recording's levels.
    matches : list of LabelMatch or None
        The segments against the label track, when one was given.
    """

    beats: Sequence[Beat]
    thresholds: Thresholds
    onset_timeout_s: float
    rule: str
    ran: str
    hangover_s: float | None
    from_log: list[str]
    from_log_line: str
    page_note: str | None
    words_from: str
    overlap: str | None
    causes_from: str
    agreement: Agreement | None
    matches: list[LabelMatch] | None


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
    _checked_rule(rule, hangover_s)
    inputs = recording_inputs(rec, config=config, events=events, labels=labels, outputs={"-o": output})
    truth = read_labels(labels) if labels else None
    recording, th = _read(rec, events, lenient=lenient, quantum=labels is not None, config=config, opts=opts)
    agreement, log = log_agreement(
        recording, floor=th.floor, config=agreement_config(rec, config), align_log=align_log,
        committed=committed_thresholds(rec, config),
    )  # fmt: skip
    assert log is not None
    trace = _replay_trace(recording, log, page_ticks=page_ticks)
    # As check does: the setting the log says the page ran, where the command line gives none of its own.
    th, timeout_s, from_log, from_log_line = _at_logged_setting(th, log, opts)
    if ctx.get_parameter_source("rule") is click.core.ParameterSource.DEFAULT:
        rule, hangover_s = _logged_rule(log, rule, hangover_s)
    _checked_rule(rule, hangover_s, quiet_s=th.quiet_s)
    found = find_beats(
        trace, log, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=timeout_s, rule=rule, hangover_s=hangover_s,
    )  # fmt: skip
    ran = Rule(rule, th.quiet_s, hangover_s).label
    matches = None
    if truth is not None:
        seg = find_segments(recording.trace, floor=th.floor, quantum=recording.quantum)
        warn_outside(truth, recording.duration_s, str(labels))
        matches = label_errors(seg, truth)
    words_from, overlap = _words_from(rec, trace, log)
    replayed = Replayed(
        found, th, timeout_s, rule, ran, hangover_s, from_log, from_log_line, _page_note(log, rule, ran),
        words_from, overlap, log.causes_from, agreement, matches,
    )  # fmt: skip
    # Written as they are made: a log of a million beats is never held as text.
    with atomic_output(output, inputs=inputs) as out:
        if fmt == "json":
            _write_json(out, rec, replayed)
        else:
            _write_table(out, rec, replayed, wide=wide)


def _checked_rule(rule: str, hangover_s: float | None, *, quiet_s: float | None = None) -> None:
    """Refuse a rule and hangover that do not go together (a usage error naming ``--hangover``)."""
    try:
        check_rule(rule, hangover_s, quiet_s=quiet_s)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err), param_hint="'--hangover'") from None


def _read(
    rec: Path, events: Path | None, *, lenient: bool, quantum: bool, config: Path | None, opts: dict[str, Any]
) -> tuple[Recording, Thresholds]:
    """The recording with its event log, and the thresholds the command line and config give (no log is an error)."""
    recording, th = load(
        rec,
        level_opts(opts),
        events=events,
        lenient=lenient,
        quantum=quantum,
        config=config,
        floor=opts["floor"],
        quiet_s=opts["quiet_s"],
        onset_timeout_s=opts["onset_timeout_s"],
    )
    if recording.events is None:
        raise EventLogError(
            f"{rec}: no event log (looked for {rec.with_name(rec.stem + '.events.jsonl').name}; give --events FILE)"
        )
    return recording, th


def _replay_trace(recording: Recording, log: EventLog, *, page_ticks: bool) -> LevelTrace:
    """The levels the clock replays at: the recording's cadence, or with ``--page-ticks`` the page's own ticks."""
    if not page_ticks:
        return recording.trace
    if not log.readings or not isinstance(recording.quantum, LevelTrace):
        raise click.BadParameter(f"{log.source}: the log holds no clock.level readings", param_hint="'--page-ticks'")
    return page_trace(recording.quantum, log.readings, start=log.start, ticks=recording.trace.ticks)


def _logged_rule(log: EventLog, rule: str, hangover_s: float | None) -> tuple[str, float | None]:
    """The rule (and hangover, where none is given) the log says the page ran, where it says; else those given."""
    page = log.setting
    if page is None:
        return rule, hangover_s
    return page.rule, page.hangover_s if hangover_s is None else hangover_s


def _page_note(log: EventLog, rule: str, ran: str) -> str | None:
    """The line saying the log's page ran another rule than this replay (and how to replay it), if it did."""
    page = log.setting
    if page is None or page.rule == rule:
        return None
    also = f" --hangover {page.hangover_s:g}" if page.hangover_s is not None else ""
    return (
        f"the log says the page ran {Rule(page.rule, page.quiet_s, page.hangover_s).label}; this replay runs "
        f"{ran} (give --rule {page.rule}{also})"
    )


def _words_from(rec: Path, trace: LevelTrace, log: EventLog) -> tuple[str, str | None]:
    """Where the words were told from the room's noise (``level``, ``split`` by the noise bumps the log shows, or
    ``overlap`` where speech and noise overlap), and the line saying they overlap."""
    if log_noise_bumps(trace, log) is None:
        return "level", None
    room, _ = recording_levels(Observation(str(rec), trace, log))
    if room.window is None and room.speech_low is not None and room.noise_high is not None:
        return "overlap", overlap_line(room.noise_high, room.speech_low)
    return "split", None


def _write_json(out: IO[str], rec: Path, r: Replayed) -> None:
    """``beats --format json``: the parameters, then each beat as it is made."""
    th = r.thresholds
    head = beats_dict(str(rec), th, [], r.matches, r.agreement)
    head["params"].update(
        rule=r.rule, hangover_s=r.hangover_s, setting_from_log=r.from_log, causes_from=r.causes_from,
        words_from=r.words_from,
    )  # fmt: skip
    if r.onset_timeout_s != th.onset_timeout_s:
        head["params"]["onset_timeout_s"] = None  # the page waited forever
    write_json_lazily(out, head, "beats", (beat_dict(b) for b in r.beats))


def _write_table(out: IO[str], rec: Path, r: Replayed, *, wide: bool) -> None:
    """The beats table (every column with ``wide``), then the lines that explain it."""
    th, found = r.thresholds, r.beats
    by = "" if r.rule == LEVEL else f", rule {r.ran}"
    out.write(printable(f"{rec}: {len(found)} beats; floor {th.floor}, quiet {th.quiet_s} s{by}, tick {th.tick_s} s\n"))
    if r.from_log_line:
        out.write(printable(r.from_log_line + "\n"))
    columns = BEAT_WIDE if wide else BEAT_TABLE
    for line in table_lines(beat_header(columns), lambda: beat_rows(found, columns)):
        out.write(printable(line))
    for line in _notes(r):
        out.write(printable(line + "\n"))
    if r.matches is not None:
        out.write(printable(labels_table(r.matches)))


def _notes(r: Replayed) -> list[str]:
    """The lines under the beats table, in order: what ended beats, past bounds, causes, words, rules, agreement."""
    found = heard(r.beats)
    lines = list(ended_by_page_lines(found, r.thresholds.quiet_s, None if r.rule == LEVEL else r.ran))
    for b in found:
        if b.past_bound:
            lines.append(f"beat {b.index + 1}: {past_bound_line(b)}")
        if b.after_early_end:
            lines.append(f"beat {b.index + 1}: {after_early_end_line(b)}")
    lines.append(CAUSES_LINE[r.causes_from])
    if r.words_from != "level":
        lines.append(WORDS_LINE)
    lines += [line for line in (r.overlap, r.page_note) if line is not None]
    said = assumed_line(found) if r.rule != LEVEL else None
    if said is not None:
        lines.append(said)
    if r.agreement is not None:
        lines.append(agreement_text(r.agreement))
    return lines


_GIVEN = {"floor": "--floor", "quiet_s": "--quiet-time", "onset_timeout_s": "--onset-timeout"}


def _at_logged_setting(th: Any, log: Any, opts: dict[str, Any]) -> tuple[Any, float, list[str], str]:
    """The thresholds to replay at: each the command line's where given, else the log's (its clock.setting or
    session line, as check replays), else the config's. Returns them, the onset timeout (``inf`` where the page
    waited forever), the names of those the log gave, and the line that says so ("" when it gave none)."""
    from ..core.check_log import logged_setting

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
