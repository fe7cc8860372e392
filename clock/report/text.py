"""What the commands print: the beats table and the lines under it, derive as text, Markdown and JSON-ready
dicts, the sweep table, and check's lines and counts (one wording for every view)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..core.agreement import Agreement
from ..core.beats import Beat, aborted_line, outpaced_line
from ..core.check import CheckCounts, CheckResult, check_cases
from ..core.recommend.evidence import CorpusOutcome, Derivation, FloorEvidence, GapEvidence, OnsetEvidence
from ..core.recommend.floor_math import equivalents, round_sig
from ..core.recommend.rule_evidence import RuleEvidence
from ..core.recommend.rules import DeadAir
from ..core.segments import LabelMatch
from ..core.sweep import SweepResult
from ..core.tally import Tally, record
from ..core.thresholds import Thresholds
from ..core.times import clock_time
from ..io.serialize import params_dict

__all__ = [
    "BEAT_COLUMNS",
    "BEAT_TABLE",
    "BEAT_WIDE",
    "OUTCOME_COLUMNS",
    "SWEEP_HEADER",
    "agreement_text",
    "assumed_line",
    "beat_flags",
    "beat_header",
    "beat_rows",
    "check_summary",
    "check_text",
    "dead_air_lines",
    "dead_air_parts",
    "dead_air_summary",
    "rule_header",
    "rule_rows",
    "derive_dict",
    "derive_markdown",
    "derive_text",
    "held_out_lines",
    "labels_table",
    "not_applicable_lines",
    "CAUSES_LINE",
    "WORDS_LINE",
    "ended_by_page_lines",
    "past_bound_line",
    "after_early_end_line",
    "overlap_line",
    "outcome_line",
    "percent",
    "plural",
    "recommended_line",
    "recording_rows",
    "sweep_marks",
    "sweep_rows",
    "sweep_table",
    "table",
    "table_lines",
]


#: The flags of a beat, and whether each is also its outcome (so the narrow table leaves it to that column).
_FLAGS: tuple[tuple[str, Callable[[Beat], bool], bool], ...] = (
    ("ACK", lambda b: b.ack_overlap, False),
    ("RISK", lambda b: b.premature_risk, False),
    ("PREMATURE", lambda b: b.premature, True),
    ("STALLED", lambda b: b.stalled, True),
    ("OUTPACED", lambda b: b.outpaced, True),
    ("ABORTED", lambda b: b.aborted, True),
    ("MISSED-ONSET", lambda b: b.missed_onset, True),
    ("BARGE-IN", lambda b: b.barge_in_s is not None, False),
    ("CLEARED", lambda b: b.cleared_s is not None, False),
)


#: Under ``beats``' heading: how the causes of the beats' bounds are known (:attr:`EventLog.causes_from`).
CAUSES_LINE = {
    "logged": "bounds the page caused (after its clock.quiet lines) move with this replay's declaration",
    "inferred": (
        "bounds the page caused (inferred by replaying the setting it ran: its clock.setting, or the committed\n"
        "one, which its prompts follow) move with this replay's declaration"
    ),
    "unknown": "the log does not say where the page's clock declared: every bound is taken as a wall",
}


#: Under ``beats``' heading, where the room is not digital silence: how the guide's words are told from it.
WORDS_LINE = (
    "the room is not digital silence: what this floor hears of it away from the guide's speech\n"
    "(the level's two-mode split) counts for the clock as sound, never as a word"
)


def overlap_line(noise_high: float, speech_low: float) -> str:
    """Under ``beats``' heading, where the room's noise reaches the guide's speech: the outcomes are a guess."""
    db = lambda x: 20 * math.log10(x) if x > 0 else float("-inf")  # noqa: E731
    return (
        f"its room reaches the guide's speech (noise p99 {db(noise_high):.1f} dBFS, speech p5 {db(speech_low):.1f} "
        "dBFS):\nno level tells the guide's words from it there, so these outcomes are the level's guess"
    )


def after_early_end_line(b: Beat) -> str:
    """A beat that is where it is because the page's clock declared the beat before it early."""
    return (
        f"the page's clock declared beat {b.index} before its last word: this beat's place and its onset latency "
        "are the page's doing, not the voice's"
    )


def past_bound_line(b: Beat) -> str:
    """A beat whose narration ran on past the page's bound (its clock had declared early)."""
    return f"the guide spoke on past the page's {b.bound} (its clock declared early), to {b.span_end_s:.3f} s"


def ended_by_page_lines(found: Sequence[Beat], quiet_s: float, rule: str | None = None) -> list[str]:
    """One line per beat the page's ``end`` ended before the clock declared quiet: what happened (``rule``: the
    words of a rule other than the level clock, which the clock ran)."""
    out = []
    for b in found:
        if b.outpaced:
            out.append(f"beat {b.index + 1} outpaced: {outpaced_line(b, quiet_s, rule)}")
        elif b.aborted:
            out.append(f"beat {b.index + 1} aborted: {aborted_line(b)}")
    return out


def beat_flags(b: Beat, *, besides_outcome: bool = False) -> str:
    """The flags of a beat, as ``beats`` prints them (``ACK RISK PREMATURE``...).

    With ``besides_outcome``, only those the outcome column does not already say.
    """
    return " ".join(name for name, on, is_outcome in _FLAGS if on(b) and not (besides_outcome and is_outcome))


def _time(x: float | None) -> str | None:
    return None if x is None else clock_time(x)


def _secs(x: float | None) -> str | None:
    """Seconds to the millisecond; a value that rounds to zero prints ``0.000``, never ``-0.000``."""
    if x is None:
        return None
    text = f"{x:.3f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def _rule_event(b: Beat) -> str | None:
    """The provider event a rule acts on in the beat: its time and log line, ``assumed`` where the log gives no ids
    to tell it the beat's own, ``risk`` where another response's event may have been taken for it."""
    if b.rule_stopped_s is None:
        return None
    line = "" if b.rule_stopped_line is None else f" line {b.rule_stopped_line}"
    how = " risk" if b.rule_stopped_risk else " assumed" if b.rule_stopped_assumed else ""
    return f"{clock_time(b.rule_stopped_s)}{line}{how}"


def assumed_line(found: Sequence[Beat]) -> str | None:
    """Where the log gives no ids, what the rule's events were taken to be (None: every event used was the beat's
    own by id, or none was used)."""
    assumed = [b for b in found if b.rule_stopped_s is not None and b.rule_stopped_assumed]
    if not assumed:
        return None
    risky = [b.index + 1 for b in assumed if b.rule_stopped_risk]
    risk = (
        f"; at risk (another response's event or an acknowledgment in the beat): beat {', '.join(map(str, risky))}"
        if risky
        else ""
    )
    return (
        f"rule events: the log gives no response ids, so the first event in the beat was assumed the beat's own in "
        f"{plural(len(assumed), 'beat')}{risk}"
    )


#: Columns of the beats tables (``beats``, ``beats --wide``, the report): JSON field -> (heading, cell).
#: Times on the recording's timeline print as mm:ss.mmm (headed without ``_s``), lengths as seconds (``_s``);
#: ``beat`` numbers beats from 1, as every line people read does (the JSON ``index`` counts from 0);
#: ``n_gaps`` and ``max_gap_s`` (unpaused, as the clock counts it and the baseline keeps it) summarise ``gaps_s``.
BEAT_COLUMNS: dict[str, tuple[str, Callable[[Beat], Any]]] = {
    "index": ("beat", lambda b: b.index + 1),
    "terminal_s": ("terminal", lambda b: _time(b.terminal_s)),
    "onset_s": ("onset", lambda b: _time(b.onset_s)),
    "onset_latency_s": ("latency_s", lambda b: _secs(b.onset_latency_s)),
    "ack_last_word_s": ("ack_end", lambda b: _time(b.ack_last_word_s)),
    "last_word_s": ("last_word", lambda b: _time(b.last_word_s)),
    "quiet_declared_s": ("declared", lambda b: _time(b.quiet_declared_s)),
    "added_latency_s": ("added_s", lambda b: _secs(b.added_latency_s)),
    "n_gaps": ("n_gaps", lambda b: len(b.gaps_s)),
    "max_gap_s": ("max_gap_s", lambda b: _secs(max(b.quiet_gaps_s, default=None))),
    "replay_vs_logged_s": ("vs_logged_s", lambda b: _secs(b.replay_vs_logged_s)),
    "provider_stopped_vs_last_word_s": ("stopped_vs_word_s", lambda b: _secs(b.provider_stopped_vs_last_word_s)),
    "rule_stopped_s": ("rule_event", lambda b: _rule_event(b)),
    "bound": ("bound", lambda b: b.bound),
    "outcome": ("outcome", lambda b: b.outcome),
    "flags": ("flags", beat_flags),
}

#: The beats table by default (``beats``, and the report's): when each beat began, ended and was declared over,
#: its outcome and the flags the outcome does not say. At most 100 characters wide (recordings under an hour).
BEAT_TABLE = (
    "index",
    "terminal_s",
    "onset_latency_s",
    "last_word_s",
    "quiet_declared_s",
    "added_latency_s",
    "outcome",
    "flags",
)

#: ``beats --wide``: every column.
BEAT_WIDE = tuple(BEAT_COLUMNS)


def beat_header(columns: Sequence[str]) -> list[str]:
    """The headings of ``columns`` (keys of :data:`BEAT_COLUMNS`)."""
    return [BEAT_COLUMNS[c][0] for c in columns]


def beat_rows(beats: Iterable[Beat], columns: Sequence[str]) -> Iterator[list[Any]]:
    """One row per beat, in the order of ``columns``: times as mm:ss.mmm, lengths in seconds, None as ``-``.

    Without every column (the narrow table), ``flags`` leaves out what ``outcome`` says.
    """
    read = [BEAT_COLUMNS[c][1] for c in columns]
    if tuple(columns) != BEAT_WIDE and "flags" in columns:
        read[list(columns).index("flags")] = lambda b: beat_flags(b, besides_outcome=True)
    return ([f(b) for f in read] for b in beats)


def table(header: list[str], rows: Iterable[list[Any]]) -> str:
    """Plain text columns, right-aligned; None shows as '-'."""
    kept = list(rows)
    return "".join(table_lines(header, lambda: kept))


def labels_table(matches: Sequence[LabelMatch]) -> str:
    """The segments against a label track of ground truth: each label's onset and offset errors."""
    return "\nagainst labels:\n" + table(
        ["start_s", "end_s", "label", "onset_error_s", "offset_error_s"],
        [[m.label_start_s, m.label_end_s, m.text, m.onset_error_s, m.offset_error_s] for m in matches],
    )


def table_lines(header: list[str], rows: Callable[[], Iterable[list[Any]]]) -> Iterator[str]:
    """:func:`table`, line by line, from rows made twice (once for the widths, once to write them): a table of a
    million beats is never held."""

    def cells() -> Iterator[list[str]]:
        yield header
        for row in rows():
            yield ["-" if v is None else _cell(v) for v in row]

    widths = [0] * len(header)
    for r in cells():
        widths = [max(w, len(c)) for w, c in zip(widths, r)]
    for r in cells():
        yield "  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip() + "\n"


def agreement_text(a: Agreement) -> str:
    """One line on how the page's logged levels agree with the recording's."""
    head = f"page-logged levels: {a.n_compared} of {a.n_readings} readings compared"
    if a.n_compared == 0:
        return head + " (none inside the recording)"
    start = "start exact" if a.start_exact else "start uncertain"
    offset = f"offset {a.offset_s * 1000:+.1f} ms estimated" if a.offset_estimated else "no offset"
    exact = f"{a.n_exact} bit-exact" + (" (all)" if a.exact else "")
    if a.n_ahead:
        exact += f" ({a.n_ahead} one render quantum after their frame, read as Chromium rendered it)"
    where = f" (first at {clock_time(a.first_floor_disagree_s)})" if a.first_floor_disagree_s is not None else ""
    return (
        f"{head}, {exact}; |logged - measured| max {a.max_diff:.3g} at {clock_time(a.worst_s)}, p99 "
        f"{a.p99_diff:.3g}; {a.n_floor_disagree} on the other side of floor {a.floor:g}{where}; {start}, {offset}"
    )


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _n(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _lvl(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def _dbfs(x: float | None) -> str:
    if x is None:
        return "-"
    return "-inf dBFS" if x <= 0 else f"{20 * math.log10(x):.1f} dBFS"


def floor_run_line(f: FloorEvidence) -> str | None:
    """The floors that end every beat right around the floor (``FloorEvidence.run``), in a line; None without.

    Each floor is rounded away from the edge it stands beside (a failing one further out, one that ends every
    beat right further in), each distance down to 0.1 dB, so the line stays true."""
    r = f.run
    if r is None or f.floor is None:
        return None

    def side(ok: float | None, fails: float | None, db: float | None, up: bool) -> str:
        if ok is None or fails is None or db is None:
            return f"{'up' if up else 'down'} to the last floor of the grid"
        return (
            f"{'to' if up else 'from'} {round_sig(ok, up=not up, digits=4)} ({math.floor(db * 10 + 1e-6) / 10:.1f} dB "
            f"{'over' if up else 'under'} the floor; {round_sig(fails, up=up, digits=4)} fails)"
        )

    kept = "kept" if r.margin_kept else "NOT KEPT"
    return (
        f"  replayed at quiet {r.quiet_s:g} s: the floors {side(r.low, r.fails_below, r.below_db, False)} "
        f"{side(r.high, r.fails_above, r.above_db, True)} end every beat right; floor margin "
        f"{f.floor_margin_db:g} dB {kept}"
    )


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def percent(p: float) -> str:
    """A probability as a percentage a person reads: ``10%``, ``3.3%``, ``0.091%``, ``< 0.01%``."""
    pct = 100 * p
    if pct >= 99.95:
        return "100%"
    if pct < 0.01:
        return "< 0.01%"
    return f"{pct:.2g}%" if pct < 10 else f"{pct:.0f}%"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 gap``, ``2 gaps``; ``nouns`` for irregular plurals."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def summary_rows(d: Derivation) -> list[tuple[str, str, str, str]]:
    """(quantity, recommended, evidence, compared) rows; the last column is the committed or candidate setting."""
    f, g, o, c = d.floor, d.gaps, d.onsets, d.compared
    meeting = len(f.recordings) - len(f.outside) - len(f.no_window)
    windows = (
        f"window {_lvl(f.window[0])} .. {_lvl(f.window[1])} of {plural(meeting, 'recording')}"
        if f.window is not None
        else "no recording has a window"
    )
    return [
        ("floor", _g(f.floor), windows, "-" if c is None else f"{c.floor:g}"),
        (
            "quiet_s",
            _g(g.quiet_s),
            f"n={g.n_gaps} narration gaps >= {g.min_gap_s:g} s ({g.n_all_gaps} in all)"
            + ("" if g.margin_kept else f"; MARGIN NOT KEPT ({_n(g.margin_left_s)} s of {g.quiet_margin_s:g} s)"),
            "-" if c is None else f"{c.quiet_s:g}",
        ),
        (
            "onset_timeout_s",
            _g(o.onset_timeout_s),
            f"n={o.n_beats} beats",
            "-" if c is None else f"{c.onset_timeout_s:g}",
        ),
    ]


def _compared_heading(d: Derivation) -> str:
    return "committed" if d.compared is None else d.compared.label


#: Why a setting was not replayed when no recording has beats.
NO_BEATS = (
    "not replayed: no recording has beats (they come from an event log beside each recording, "
    "NAME.events.jsonl, with terminal_response events)"
)


def outcome_sentence(r: CorpusOutcome | None, why_not: str = NO_BEATS) -> str:
    """A setting's replay in one sentence (``why_not`` when it was not replayed)."""
    if r is None:
        return why_not
    t = r.tally
    return (
        f"replayed over {plural(r.n_recordings, 'recording')} with event logs, {plural(t.n_beats, 'beat')}: "
        f"{t.n_ok} ended right; {plural(t.n_premature, 'premature end')}, {plural(t.n_stalled, 'stall')}, "
        f"{plural(t.n_missed_onset, 'missed onset')}"
        + (f", {plural(t.n_speech_unheard, 'beat')} unheard though the guide spoke" if t.n_speech_unheard else "")
        + (f", {plural(t.n_silent, 'silent beat')}" if t.n_silent else "")
        + _not_the_setting(t)
    )


def _not_the_setting(r: Tally) -> str:
    """The beats something other than the setting ended first, as the outcome sentence ends (none: nothing)."""
    said = [
        f"{r.n_aborted} aborted by the visitor while the guide spoke" if r.n_aborted else "",
        f"{r.n_outpaced} outpaced by the visitor after the guide had finished" if r.n_outpaced else "",
        f"{r.n_superseded} superseded by a terminal response" if r.n_superseded else "",
        f"{r.n_recording_ended} cut by the recording's end" if r.n_recording_ended else "",
    ]
    said = [x for x in said if x]
    return f"; not the setting's doing: {', '.join(said)}" if said else ""


def held_out_lines(d: Derivation) -> list[str]:
    """The out-of-sample evidence: its sentence, then one line per recording the held-out setting fails."""
    h = d.held_out
    if h is None:
        return []
    each = (
        "each recording in turn"
        if h.n_folds == h.n_recordings
        else f"each of {h.n_folds} folds in turn (every {h.n_folds}th recording left out together)"
    )
    out = [f"derived without {each}: {h.n_right} of {plural(h.n_recordings, 'recording')} replay right"]
    without = "it" if h.n_folds == h.n_recordings else "its fold"
    for r in h.recordings:
        if r.right:
            continue
        if r.floor is None or r.quiet_s is None or r.onset_timeout_s is None:
            out.append(f"  {r.recording}: without {without} nothing is recommended")
            continue
        beats = ", ".join(f"beat {u.beat + 1} {u.outcome} ({clock_time(u.t_s)})" for u in r.failing)
        out.append(
            f"  {r.recording}: derived without {without} (floor {r.floor:g}, quiet {r.quiet_s:g} s, onset timeout "
            f"{r.onset_timeout_s:g} s): {beats}"
        )
    return out


def dead_air_summary(a: DeadAir) -> str:
    """``median 2.48 s, p95 2.50 s, max 2.51 s over 18 beats ended right; per tour 7.45 s at most (tour.webm)``."""
    if a.median_s is None or a.p95_s is None or a.max_s is None:
        return "no beat ended right"
    tour = max(a.tours, key=lambda x: (x.total_s, x.recording), default=None)
    most = (
        ""
        if tour is None
        else f"; per tour at most {tour.total_s:.2f} s ({tour.recording}, {plural(tour.n_beats, 'beat')})"
    )
    return (
        f"median {a.median_s:.2f} s, p95 {a.p95_s:.2f} s, max {a.max_s:.2f} s over {plural(a.n_beats, 'beat')} "
        f"ended right{most}"
    )


#: Columns of the rules table (text, report): the JSON fields of each ``rules.results`` entry they show.
RULE_HEADER = [
    "rule",
    "n_beats",
    "n_failed",
    "n_premature",
    "n_stalled",
    "n_outpaced",
    "n_missed_onset",
    "n_no_event",
    "dead_air_median_s",
    "dead_air_p95_s",
]


def rule_header() -> list[str]:
    """The rules table's headings."""
    return list(RULE_HEADER)


def rule_rows(ev: RuleEvidence) -> list[list[Any]]:
    """One row per rule: its failures and its dead air, in :data:`RULE_HEADER` order."""
    counts = RULE_HEADER[1:-2]  # the tally's
    return [
        [r.rule.label, *(getattr(r.tally, k) for k in counts), r.dead_air.median_s, r.dead_air.p95_s]
        for r in ev.results
    ]


def _rules_heading(ev: RuleEvidence) -> str:
    spread = ev.stopped_vs_last_word_s
    when = (
        f", {spread['min']:+.2f} to {spread['max']:+.2f} s from the last word (median {spread['p50']:+.2f} s)"
        if spread
        else ""
    )
    assumed = (
        f"; in {plural(ev.n_assumed, 'beat')} the log gives no ids and the first event in the beat was assumed its "
        f"own ({ev.n_risk} at risk: another response's event or an acknowledgment in the beat)"
        if ev.n_assumed
        else ""
    )
    return (
        f"rules replayed on the same beats (floor {ev.floor:g}, onset timeout {ev.onset_timeout_s:g} s); the "
        f"beat's own output_audio_buffer.stopped in {ev.n_with_event} of "
        f"{plural(ev.n_beats_with_speech, 'beat')} with speech{when}{assumed}:"
    )


def no_event_line(ev: RuleEvidence) -> str:
    """Why no rule but the level clock was worth showing: no beat had the provider's event."""
    return (
        f"rules beside the level clock: none of the {plural(ev.n_beats_with_speech, 'beat')} with speech has the "
        "provider's output_audio_buffer.stopped in its log, so no rule can use it (the level clock stays)"
    )


def saving_line(ev: RuleEvidence) -> str:
    """What the rule that saves dead air would save, and its held-out evidence; or why no rule does."""
    if ev.saving is None:
        return f"less dead air: {ev.reason}"
    h = ev.held_out
    held = (
        ""
        if h is None
        else f"; derived without each recording in turn: {h.n_right} of {plural(h.n_recordings, 'recording')} "
        "replay right"
    )
    for g in ev.held_out_groups:
        held += f"; without each {g.by} in turn: {g.n_right} of {plural(g.n_recordings, 'group')} replay right"
    if ev.committed_saving_s is not None:
        held += f"; {ev.committed_saving_s:.2f} s less at the committed setting"
    return f"less dead air: {ev.reason}{held}"


def dead_air_parts(d: Derivation) -> tuple[list[str], str | None, list[str]]:
    """The dead air in words: (the recommendation's beside the compared setting's, the rules' heading or None
    when no beat has the provider's event, the saving and its held-out failures). The rules table goes between."""
    ev = d.rules
    if ev is None:
        return [], None, []
    head = [f"dead air (last word to the clock's declaration): {dead_air_summary(ev.level.dead_air)}"]
    c = d.compared
    if c is not None and c.dead_air is not None:
        head.append(f"  {c.label} (floor {c.floor:g}, quiet {c.quiet_s:g} s): {dead_air_summary(c.dead_air)}")
    if not ev.n_with_event:
        return head + [no_event_line(ev)], None, []
    tail = [saving_line(ev)]
    if ev.held_out is not None:
        for name, beat, outcome in ev.held_out.failing:
            where = "nothing derived without it" if beat < 0 else f"beat {beat + 1} {outcome}"
            tail.append(f"  {name}: derived without it: {where}")
    for g in ev.held_out_groups:
        for name, beat, outcome in g.failing:
            where = "nothing derived without its group" if beat < 0 else f"beat {beat + 1} {outcome}"
            tail.append(f"  {name}: derived without its {g.by}: {where}")
    return head, _rules_heading(ev), tail


def dead_air_lines(d: Derivation) -> list[str]:
    """The recommendation's dead air beside the compared setting's, the rules side by side, and the saving."""
    head, heading, tail = dead_air_parts(d)
    if heading is None or d.rules is None:
        return head
    rows = table(rule_header(), rule_rows(d.rules)).splitlines()
    return head + [heading] + ["  " + line for line in rows] + tail


def outcome_line(d: Derivation) -> str:
    """The recommendation's replay in one sentence, or why it was not replayed (no beats, or what was missing)."""
    if d.outcome is None and d.onsets.n_beats:
        missing = [name for name, v in zip(("floor", "quiet time", "onset timeout"), d.setting) if v is None]
        return f"not replayed: no {' and no '.join(missing)} was recommended (see below why)"
    return outcome_sentence(d.outcome)


def compared_line(d: Derivation) -> str | None:
    """The committed (or candidate) setting's replay in one sentence, or None when there is none."""
    c = d.compared
    if c is None:
        return None
    return (
        f"{c.label} (floor {c.floor:g}, quiet {c.quiet_s:g} s, onset timeout {c.onset_timeout_s:g} s) "
        + outcome_sentence(c.outcome)
    )


def recording_rows(d: Derivation) -> tuple[list[str], list[list[Any]]]:
    """Per recording: noise, speech low, window and where the floor stands in it."""
    f = d.floor
    # The columns are named as derive's JSON fields; status (where the floor stands) is the table's own.
    header = ["name", "noise_median", "noise_high", "speech_low", "window", "status"]
    rows = []
    for r in f.recordings:
        window = "-" if r.window is None else f"{_lvl(r.window[0])} .. {_lvl(r.window[1])}"
        if r.window is None:
            status = "no window"
        elif r.name in f.outside:
            status = "outside"
        elif f.floor is not None:
            # Signed: from the window's bottom (positive: above it) and from its top (negative: under it).
            above = _db(f.floor) - _db(r.window[0]) if r.window[0] > 0 else float("inf")
            status = ("above 0" if above == float("inf") else f"{above:+.1f} dB") + (
                f" / {_db(f.floor) - _db(r.window[1]):+.1f} dB"
            )
        else:
            status = "-"
        rows.append([r.name, _lvl(r.noise_median), _lvl(r.noise_high), _lvl(r.speech_low), window, status])
    return header, rows


def _db(x: float) -> float:
    return 20 * math.log10(x) if x > 0 else float("-inf")


#: How speech was told from noise in a recording (derive's header), by method.
_METHODS = {"labels": "{n} with label tracks", "split": "{n} without labels, speech told from noise by level"}


def unused_lines(observations: Sequence[Any], derivation: Derivation | None = None) -> list[str]:
    """What ``derive`` could not use, one line per recording, for the top of its output.

    A recording without an event log (its silences count as narration gaps), one whose log has no terminal
    response (no beats), and one without speech (no speech level, from ``derivation``'s floor evidence).
    """
    out = []
    no_speech = set()
    if derivation is not None:
        no_speech = {r.name for r in derivation.floor.recordings if r.speech_low is None}
    for o in observations:
        if o.events is None:
            stem = o.name.rsplit(".", 1)[0] if "." in o.name else o.name
            out.append(
                f"could not use: {o.name}: no event log ({stem}.events.jsonl), so no beats: no onset latency, and "
                "every silence in it counts as a narration gap"
            )
        elif not o.events.terminals:
            out.append(f"could not use: {o.name}: its event log has no terminal response, so no beats")
        if o.name in no_speech:
            out.append(f"could not use: {o.name}: no speech, so no speech level")
    return out


def derive_text(derivations: Sequence[Derivation]) -> str:
    """The recommendation table and its evidence, for a terminal."""
    out: list[str] = []
    for d in derivations:
        out += _summary_text(d)
        out += _floor_text(d)
        out += _gaps_text(d.gaps)
        out += _onsets_text(d.onsets)
        out += _stability_text(d)
        out.append("")
    return "\n".join(out)


def _summary_text(d: Derivation) -> list[str]:
    """A derivation's heading, its table beside the setting compared, the outcomes, held-out runs and dead air."""
    f, g, o = d.floor, d.gaps, d.onsets
    out: list[str] = []
    methods = ", ".join(_METHODS[k].format(n=v) if k in _METHODS else f"{k} {v}" for k, v in sorted(f.methods.items()))
    out.append(
        f"== {d.group}: {plural(len(d.recordings), 'recording')} ({methods}), {plural(o.n_beats, 'beat')}, "
        f"{plural(g.n_gaps, 'narration gap')} =="
    )
    rows = [("", "recommended", "evidence", _compared_heading(d))] + summary_rows(d)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out.extend("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
    out.append("")
    out.append(outcome_line(d))
    out += _unsatisfied_text(d.outcome)
    if (line := compared_line(d)) is not None:
        out.append(line)
        assert d.compared is not None
        out += _unsatisfied_text(d.compared.outcome)
    out.extend(held_out_lines(d))
    out.extend(dead_air_lines(d))
    out.append("")
    return out


def _unsatisfied_text(outcome: CorpusOutcome | None) -> list[str]:
    """One indented line per beat a setting does not replay right."""
    return [
        f"  {u.recording}:{clock_time(u.t_s)}: beat {u.beat + 1} {u.outcome}: {u.reason}"
        for u in (outcome.unsatisfied if outcome else ())
    ]


def _floor_text(d: Derivation) -> list[str]:
    """The floor's rule and evidence: its place between noise and speech, other units, each recording's window."""
    f = d.floor
    out: list[str] = []
    out.append(f"floor: {f.rule}")
    if f.floor is not None and f.window is not None:
        above = "above exact-zero noise" if f.above_db == float("inf") else f"{_n(f.above_db, 1)} dB above"
        out.append(
            f"  {_dbfs(f.floor)}: {above} the noise edge ({f.lower_by}), {_n(f.below_db, 1)} dB below "
            f"the speech edge (speech p{f.speech_percentile:g} - {f.floor_margin_db:g} dB, {f.upper_by})"
        )
    if (line := floor_run_line(f)) is not None:
        out.append(line)
    if f.floor is not None and f.window is not None:
        eq = equivalents(f.floor)
        out.append(
            f"  in other units: auditok energy_threshold {eq['auditok_energy_threshold']:.1f}; "
            f"hark threshold {eq['hark_threshold_db']:.1f} dB (for a tone)"
        )
    header, rec_rows = recording_rows(d)
    out.extend("  " + line for line in table(header, rec_rows).splitlines())
    if f.speech:
        out.append(
            f"  speech levels inside the window (n={f.n_speech_ticks} ticks): "
            + "  ".join(f"{k} {_lvl(v)}" for k, v in f.speech.items())
        )
    return out


def _gaps_text(g: GapEvidence) -> list[str]:
    """The quiet time's rule and evidence: the narration gaps, the longest, the room after last words, the odds."""
    out: list[str] = []
    if g.quiet_s is not None:
        out.append(f"quiet time: {g.rule} (gaps measured at floor {_g(g.floor)})")
    else:
        out.append(f"quiet time: none recommended ({g.rule or 'no gap inside a beat'})")
    if g.n_gaps:
        out.append(
            f"  narration gaps >= {g.min_gap_s:g} s (n={g.n_gaps}): p50 {_n(g.p50_s)}  p90 {_n(g.p90_s)}  "
            f"p99 {_n(g.p99_s)} s; longest gap the clock bridges {_n(g.max_gap_s)} s"
        )
    for name, at, gap in g.longest[:3]:
        out.append(f"  long gap: {name}:{clock_time(at)} {gap:.3f} s")
    if g.n_ack:
        out.append(f"  acknowledgment silences before the narration: n={g.n_ack}, longest {_n(g.ack_max_s)} s")
    if g.room_s is not None and g.room_at is not None:
        out.append(
            f"  quiet left after a last word before the beat's bound: at least {_n(g.room_s)} s "
            f"({g.room_at[0]}:{clock_time(g.room_at[1])}); a longer quiet time would stall that beat"
        )
    if g.quiet_s is not None and g.n_gaps:
        bound = (
            f"at most {percent(g.p_exceed_rule_of_three)} (rule of three, n={g.n_gaps})"
            if g.p_exceed_rule_of_three is not None
            else f"no bound from {plural(g.n_gaps, 'gap')} (the rule of three needs more than 3)"
        )
        tail = (
            f"; about {percent(g.p_exceed_tail)} (exponential tail)"
            if g.p_exceed_tail is not None
            else "; no tail estimate (fewer than 5 gaps above the 75th percentile)"
        )
        out.append(f"  chance a future gap exceeds {_g(g.quiet_s)} s: {bound}{tail}")
    return out


def _onsets_text(o: OnsetEvidence) -> list[str]:
    """The onset timeout's rule and the latencies it rests on."""
    out: list[str] = []
    if o.onset_timeout_s is not None:
        out.append(
            f"onset timeout: longest latency {_n(o.max_s)} s + margin {o.onset_margin_s:g} s, rounded up to 0.5 s"
        )
        out.append(
            f"  latency (n={o.n_beats} beats): p50 {_n(o.p50_s)}  p95 {_n(o.p95_s)}  max {_n(o.max_s)} s"
            + ("" if o.slowest is None else f" ({o.slowest[0]}:{clock_time(o.slowest[1])})")
        )
    return out


def _stability_text(d: Derivation) -> list[str]:
    """Which recording drives each number and what it would be without it, then the warnings."""
    out: list[str] = []
    if d.stability:
        out.append("stability (leave the recording that drives each number out):")
        for s in d.stability:
            if s.driver is None:
                continue
            same = "unchanged" if s.without == s.value else f"{_g(s.without)}"
            out.append(f"  {s.quantity} {_g(s.value)} is driven by {s.driver}; without it: {same}")
    for note in d.warnings:
        out.append(f"warning: {note}")
    return out


def derive_markdown(derivations: Sequence[Derivation]) -> str:
    """The recommendation as Markdown tables (for pull requests and docs)."""
    out: list[str] = []
    for d in derivations:
        f, g, o = d.floor, d.gaps, d.onsets
        out.append(f"### {d.group}: {plural(len(d.recordings), 'recording')}, {plural(o.n_beats, 'beat')}\n")
        out.append(f"| | recommended | evidence | {_compared_heading(d)} |\n|---|---|---|---|")
        out.extend(f"| {a} | {b} | {c} | {e} |" for a, b, c, e in summary_rows(d))
        out.append("")
        out.append(outcome_line(d) + "\n")
        if (line := compared_line(d)) is not None:
            out.append(line + "\n")
        if lines := held_out_lines(d):
            out.append("\n".join(lines) + "\n")
        if d.rules is not None:
            ev = d.rules
            head, _, _ = dead_air_parts(d)
            out.extend(line.strip() + "\n" for line in head if line != no_event_line(ev))
            if not ev.n_with_event:
                out.append(no_event_line(ev) + "\n")
            else:
                out.append(_rules_heading(ev) + "\n")
                out.append("| " + " | ".join(RULE_HEADER) + " |")
                out.append("|---" * len(RULE_HEADER) + "|")
                out.extend(
                    "| " + " | ".join("-" if v is None else _cell(v) for v in row) + " |" for row in rule_rows(ev)
                )
                out.append("")
                out.append(saving_line(ev) + "\n")
        header, rows = recording_rows(d)
        out.append("| " + " | ".join(header) + " |")
        out.append("|---" * len(header) + "|")
        out.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
        out.append("")
        out.append(f"- floor: {f.rule}")
        if (line := floor_run_line(f)) is not None:
            out.append(f"- {line.strip()}")
        out.append(f"- quiet time: {g.rule or 'none'}")
        if g.n_gaps:
            out.append(
                f"- narration gaps >= {g.min_gap_s:g} s: p50 {_n(g.p50_s)}, p90 {_n(g.p90_s)}, p99 {_n(g.p99_s)}, "
                f"max {_n(g.max_gap_s)} s (n={g.n_gaps})"
            )
        out.append(f"- onset latency: p50 {_n(o.p50_s)}, p95 {_n(o.p95_s)}, max {_n(o.max_s)} s (n={o.n_beats})")
        for s in d.stability:
            if s.driver is not None:
                out.append(f"- {s.quantity} {_g(s.value)} is driven by {s.driver}; without it: {_g(s.without)}")
        out.extend(f"- **warning**: {note}" for note in d.warnings)
        out.append("")
    return "\n".join(out)


def derive_dict(derivations: Sequence[Derivation], committed: Thresholds | None = None) -> dict[str, Any]:
    """``derive --format json`` (schema 1)."""
    groups = []
    for d in derivations:
        item = record(d)
        item["recommended"] = dict(zip(("floor", "quiet_s", "onset_timeout_s"), d.setting))
        item["floor"]["equivalents"] = None if d.floor.floor is None else equivalents(d.floor.floor)
        if d.rules is not None:
            item["rules"] = rules_dict(d.rules)
        groups.append(item)
    return {
        "schema": 1,
        "committed": None if committed is None else params_dict(committed),
        "groups": groups,
    }


def rules_dict(ev: RuleEvidence) -> dict[str, Any]:
    """The rules' replay as JSON: the dataclass, each rule with its label and failures."""
    out = record(ev)
    for item, r in zip(out["results"], ev.results):
        item["rule"]["label"] = r.rule.label
        item["n_failed"] = r.tally.n_failed
    return out


#: How a setting's beats ended, as the sweep and compare tables show it: the tally's counts, in their columns' order.
OUTCOME_COLUMNS = ("n_beats", "n_ok", "n_premature", "n_stalled", "n_missed_onset", "n_outpaced", "n_aborted")


#: Columns of the sweep table (the names of the JSON fields they show): what each setting does to the beats,
#: and how long after the last word (as derive hears it, the same at every setting) it declares quiet.
SWEEP_HEADER = ["floor", "quiet_s", *OUTCOME_COLUMNS, "after_speech_mean_s", "after_speech_max_s"]


def sweep_rows(result: SweepResult) -> list[list[Any]]:
    """One row per setting, in :data:`SWEEP_HEADER` order (floors as written, not rounded)."""
    rows = map(record, result.points)
    return [[_g(p["floor"]), _g(p["quiet_s"]), *(p[f] for f in SWEEP_HEADER[2:])] for p in rows]


def nearest_point(result: SweepResult) -> tuple[float, float] | None:
    """The grid's (floor, quiet) nearest the recommendation: floors by level ratio, quiet times by seconds."""
    floor, quiet, _ = result.recommended
    if floor is None or quiet is None:
        return None

    def ratio(f: float) -> float:
        return abs(math.log(f / floor)) if f > 0 and floor > 0 else (0.0 if f == floor else math.inf)

    return min(result.floors, key=ratio), min(result.quiets_s, key=lambda q: abs(q - quiet))


def outside_grid(result: SweepResult, floor: float | None = None, quiet_s: float | None = None) -> str:
    """Where a setting (default: the recommendation) lies outside the sweep's grid, in words ("" when inside it).

    A figure or table places a setting outside the grid at the grid's nearest point, which is not that setting
    (it may fail where the setting does not): each says so instead of "between grid points".
    """
    if floor is None and quiet_s is None:
        floor, quiet_s, _ = result.recommended
    if floor is None or quiet_s is None or not result.floors or not result.quiets_s:
        return ""
    out = []
    lo_f, hi_f = min(result.floors), max(result.floors)
    if not lo_f * (1 - 1e-9) <= floor <= hi_f * (1 + 1e-9):
        out.append(f"floor {floor:g} outside the grid's {lo_f:g} .. {hi_f:g} (widen --floors)")
    lo_q, hi_q = min(result.quiets_s), max(result.quiets_s)
    if not lo_q - 1e-9 <= quiet_s <= hi_q + 1e-9:
        out.append(f"quiet {quiet_s:g} s outside the grid's {lo_q:g} .. {hi_q:g} s (widen --quiet-times)")
    return "; ".join(out)


def recommended_line(result: SweepResult) -> str:
    """The one recommendation (as derive makes it) and its replay, and where it lies on the grid."""
    d = result.derivation
    floor, quiet, timeout = d.setting
    if floor is None or quiet is None:
        return "recommended: none (see speechclock derive for why)\n"
    near = nearest_point(result)
    outside = outside_grid(result)
    if result.point(floor, quiet) is not None:
        where = "on the grid, marked *"
    elif outside and near is not None:
        where = (
            f"outside the grid: {outside}; the nearest grid point, floor {near[0]:g} quiet {near[1]:g} s, marked ~, "
            "is not it"
        )
    elif near is not None:
        where = f"between grid points; the nearest, floor {near[0]:g} quiet {near[1]:g} s, is marked ~"
    else:
        where = "off the grid"
    return (
        f"recommended (as derive): floor {floor:g}, quiet {quiet:g} s, onset timeout {_g(timeout)} s ({where}); "
        f"{outcome_line(d)}\n"
    )


def sweep_marks(result: SweepResult) -> list[str]:
    """Per point: ``*`` the recommendation, ``~`` the grid point nearest it when it lies between points."""
    floor, quiet, _ = result.recommended
    near = nearest_point(result)
    on_grid = floor is not None and quiet is not None and result.point(floor, quiet) is not None
    mark, at = ("*", (floor, quiet)) if on_grid else ("~", near)
    return [mark if (p.floor, p.quiet_s) == at else "" for p in result.points]


def sweep_table(result: SweepResult) -> str:
    """The sweep as plain text, the recommended setting (or the grid point nearest it) marked and spelled out,
    then its dead air and the rules beside it."""
    rows = [row + [m] for row, m in zip(sweep_rows(result), sweep_marks(result))]
    added = "".join(line + "\n" for line in dead_air_lines(result.derivation))
    return table(SWEEP_HEADER + ["rec"], rows) + recommended_line(result) + added


def check_summary(counts: CheckCounts) -> str:
    """``44 checks on 4 recordings: 1 failed (3 failures), 4 not applicable, 39 passed``: every view's counts."""
    lines = f" ({plural(counts.failures, 'failure')})" if counts.failures != counts.failed else ""
    return (
        f"{plural(counts.checks, 'check')} on {plural(counts.recordings, 'recording')}: {counts.failed} failed{lines}, "
        f"{counts.not_applicable} not applicable, {counts.passed} passed"
    )


def not_applicable_lines(results: Sequence[CheckResult]) -> list[str]:
    """``REC: not applicable: gap, premature (no event log)``: each check that does not apply, once, with why."""
    why: dict[tuple[str, str], list[str]] = {}
    for case in check_cases(results):
        if case.status == "not applicable":
            why.setdefault((case.recording, case.results[0].detail), []).append(case.check)
    return [f"{rec}: not applicable: {', '.join(checks)} ({reason})" for (rec, reason), checks in why.items()]


def check_text(results: Sequence[CheckResult], counts: CheckCounts) -> list[str]:
    """``check``'s lines: one per failure, the checks that do not apply and why, and the counts."""
    return [r.line() for r in results if not r.passed] + not_applicable_lines(results) + [check_summary(counts)]
