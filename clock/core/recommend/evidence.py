"""The results of a derivation: what the engine recommends, the evidence behind it, and its replay.

Pure Python dataclasses (:class:`Derivation` and its parts), read by the
reports, the serializers and ``check``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..tally import Tally
from .rule_evidence import RuleEvidence
from .rules import DeadAir
from .windows import RecordingLevels

#: Fewer than these make the evidence thin.
THIN = {"gaps": 30, "speech_ticks": 1000, "silence_ticks": 1000, "beats": 10, "recordings": 3}


@dataclass(frozen=True, slots=True)
class FloorRun:
    """The floors that end every beat right at the recommended quiet time and onset timeout, around the floor.

    Found by replay (the one judge, and the grid's reading of each beat):
    outward from the floor on derive's grid of floors 1 dB apart to the
    first that fails, then by bisection to within 0.1 dB of the edge.

    Attributes
    ----------
    quiet_s, onset_timeout_s : float
        The setting the floors were replayed at.
    low, high : float or None
        The lowest and the highest floor found to end every beat right; None
        on a side where no floor of the grid fails.
    fails_below, fails_above : float or None
        The failing floors found just under ``low`` and over ``high``.
    below_db, above_db : float or None
        How far the floor lies above ``low`` and under ``high`` (dB): the
        floor margin kept on each side.
    margin_kept : bool
        Both are at least ``floor_margin_db``: every floor within the margin
        of the floor ends every beat right.
    """

    quiet_s: float
    onset_timeout_s: float
    low: float | None
    high: float | None
    fails_below: float | None
    fails_above: float | None
    below_db: float | None
    above_db: float | None
    margin_kept: bool


@dataclass(frozen=True, slots=True)
class FloorEvidence:
    """The recordings' floor windows and the recommended floor.

    Attributes
    ----------
    recordings : tuple of RecordingLevels
        Every recording, in order.
    window : (float, float) or None
        The intersection of the windows of the recordings that meet.
    lower_by, upper_by : str or None
        The recordings that set the intersection's edges.
    outside : tuple of str
        Recordings whose window does not meet the others'.
    no_window : tuple of str
        Recordings with no window at all.
    floor : float or None
    rule : str
        How it was reached.
    above_db, below_db : float or None
        The floor's distance to the window's lower (noise) and upper
        (speech) edge; inf above a noise of exact zero.
    n_speech_ticks, n_silence_ticks : int
        Over the recordings inside the window.
    speech : dict
        Their pooled speech-level percentiles (min ... max).
    speech_percentile : float
    floor_margin_db : float
        The window's upper edge stands this far below the speech low.
    methods : dict
        How many recordings were classified by labels, and by the split.
    exact_zero_share : float
    thin : bool
    run : FloorRun or None
        The floors that end every beat right around the floor at the
        recommended quiet time, where derive's grid placed it (None: not
        replayed, e.g. no setting ends every beat right).
    """

    recordings: tuple[RecordingLevels, ...]
    window: tuple[float, float] | None
    lower_by: str | None
    upper_by: str | None
    outside: tuple[str, ...]
    no_window: tuple[str, ...]
    floor: float | None
    rule: str
    above_db: float | None
    below_db: float | None
    n_speech_ticks: int
    n_silence_ticks: int
    speech: dict[str, float]
    speech_percentile: float
    floor_margin_db: float
    methods: dict[str, int]
    exact_zero_share: float
    thin: bool
    run: FloorRun | None = None


@dataclass(frozen=True, slots=True)
class GapEvidence:
    """The gaps the clock must bridge inside beats, and the recommended quiet time.

    Attributes
    ----------
    n_gaps : int
        Narration gaps of at least ``min_gap_s`` (the distribution's n).
    n_all_gaps : int
        Every narration gap, short dips included.
    floor : float or None
        The floor they were measured at.
    p50_s, p90_s, p99_s : float or None
    max_gap_s : float or None
        Over every gap the clock bridges (acknowledgment silences included).
    longest : tuple of (str, float, float)
        The five longest: recording, time of the last word, gap.
    n_ack : int
        Silences between an overlapping acknowledgment and its narration.
    ack_max_s : float or None
    room_s : float or None
        The least quiet left after a beat's last word before its bound: a
        quiet time above it stalls that beat.
    room_at : (str, float) or None
        Where: recording and last word.
    unlogged : tuple of str
        Recordings without an event log, all of whose gaps were counted.
    quiet_margin_s : float
    quiet_s : float or None
        The recommendation.
    rule : str
    p_exceed_rule_of_three : float or None
        95 % upper bound on the chance a future gap exceeds the longest seen
        (3/n; None with fewer than 4 gaps, where it says nothing).
    p_exceed_tail : float or None
        Exponential-tail estimate of the chance a future gap exceeds
        ``quiet_s`` (None with fewer than 5 gaps over the 75th percentile,
        a quiet time at or under it, or gaps too alike to fit a tail).
    gaps_s : tuple of float
        The narration gaps of at least ``min_gap_s`` (for plots).
    thin : bool
    margin_left_s : float or None
        The quiet time less the longest gap the clock bridges inside a
        logged beat: the margin the recommendation really keeps.
    margin_kept : bool
        Whether that is more than ``quiet_margin_s`` (so ``check``'s gap
        check holds); False when the room after a beat's last word cannot
        hold the longest gap plus the margin (a warning names the beat).
    """

    n_gaps: int
    n_all_gaps: int
    floor: float | None
    min_gap_s: float
    p50_s: float | None
    p90_s: float | None
    p99_s: float | None
    max_gap_s: float | None
    longest: tuple[tuple[str, float, float], ...]
    n_ack: int
    ack_max_s: float | None
    room_s: float | None
    room_at: tuple[str, float] | None
    unlogged: tuple[str, ...]
    quiet_margin_s: float
    quiet_s: float | None
    rule: str
    p_exceed_rule_of_three: float | None
    p_exceed_tail: float | None
    gaps_s: tuple[float, ...]
    thin: bool
    margin_left_s: float | None = None
    margin_kept: bool = True


@dataclass(frozen=True, slots=True)
class OnsetEvidence:
    """Latency from terminal response to the narration's onset, and the onset timeout."""

    n_beats: int
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    slowest: tuple[str, float, float] | None
    onset_margin_s: float
    onset_timeout_s: float | None
    thin: bool


@dataclass(frozen=True, slots=True)
class Unsatisfied:
    """A beat the recommended setting does not end right, and why.

    Attributes
    ----------
    recording : str
    beat : int
    t_s : float
        Where to look.
    outcome : str
        ``premature``, ``stalled``, ``outpaced`` or ``missed-onset``.
    reason : str
    unheard : bool
        A missed onset because the floor hears none of the guide's speech in
        the beat (the floor's doing, not the onset timeout's).
    """

    recording: str
    beat: int
    t_s: float
    outcome: str
    reason: str
    unheard: bool = False


@dataclass(frozen=True, slots=True)
class CorpusOutcome:
    """The recommended setting, replayed over every recording with an event log.

    Attributes
    ----------
    n_recordings : int
    tally : Tally
        How its beats ended: every beat the clock heard (``n_beats``), each
        an outcome of :data:`clock.core.outcome.OUTCOMES` or ``unheard
        speech``. ``n_aborted`` are beats the visitor ended (a ``prompt`` or
        ``end`` before the page's clock declared) while the guide was still
        speaking: neither right nor a failure; ``n_outpaced`` beats the
        visitor ended after the guide had finished, before the clock declared
        quiet: not a failure (the visitor did not wait); ``n_speech_unheard``
        beats the replay finds silent where the guide spoke (as derive tells
        speech without the floor: see :meth:`Corpus.spoke`): the floor hears
        none of the guide there, a failure of the floor (counted by
        ``derive`` for its recommendation and the compared setting; not in
        ``n_silent``); ``n_superseded``, ``n_recording_ended`` beats a
        terminal response superseded, or the recording's end cut, before the
        clock declared quiet: not the setting's doing. ``n_failed``: the
        setting's failures (premature ends, stalls, missed onsets) and the
        spoken beats the floor does not hear.
    unsatisfied : tuple of Unsatisfied
    narration_pause_s : float or None
        ``P``: the longest pause inside a narration of these recordings at
        the floor, which tells an aborted beat from an outpaced one.
    """

    #: Its output's fields, in order (:func:`clock.core.tally.record`): its own, and its tally's counts.
    RECORD: ClassVar[tuple[str, ...]] = (
        "n_recordings", "n_beats", "n_ok", "n_premature", "n_stalled", "n_missed_onset", "n_silent", "unsatisfied",
        "n_aborted", "n_outpaced", "narration_pause_s", "n_speech_unheard", "n_superseded", "n_recording_ended",
    )  # fmt: skip

    n_recordings: int
    tally: Tally
    unsatisfied: tuple[Unsatisfied, ...]
    narration_pause_s: float | None = None


@dataclass(frozen=True, slots=True)
class Comparison:
    """Another setting (the committed one, or a candidate), replayed as the recommendation is.

    Attributes
    ----------
    label : str
        ``committed`` (the config's) or ``candidate`` (given on the command line).
    floor, quiet_s, onset_timeout_s : float
    outcome : CorpusOutcome or None
        Its replay over every recording with beats (None when none has).
    dead_air : DeadAir or None
        What its beats ended right wait after the last word (None when none has beats).
    """

    label: str
    floor: float
    quiet_s: float
    onset_timeout_s: float
    outcome: CorpusOutcome | None
    dead_air: DeadAir | None = None


@dataclass(frozen=True, slots=True)
class Stability:
    """Which recording drives a number, and the number without it (leave one recording out).

    Attributes
    ----------
    quantity : {"floor", "quiet_s", "onset_timeout_s"}
    value : float or None
    driver : str or None
        The recording that decides it.
    without : float or None
        The recommendation with that recording left out.
    """

    quantity: str
    value: float | None
    driver: str | None
    without: float | None


@dataclass(frozen=True, slots=True)
class HeldOutRecording:
    """One recording left out: the setting derived without it, replayed on it.

    Attributes
    ----------
    recording : str
    floor, quiet_s, onset_timeout_s : float or None
        Derived from the other recordings (None: they recommend nothing).
    n_beats : int
        Its beats the replay judged (the clock heard them).
    right : bool
        No premature end, stall or missed onset (and a setting to replay).
    failing : tuple of Unsatisfied
        Its beats that setting does not end right (reason: the outcome).
    """

    recording: str
    floor: float | None
    quiet_s: float | None
    onset_timeout_s: float | None
    n_beats: int
    right: bool
    failing: tuple[Unsatisfied, ...]


@dataclass(frozen=True, slots=True)
class HeldOut:
    """Out-of-sample evidence: derived without each recording with an event log in turn, replayed on it.

    Attributes
    ----------
    n_recordings : int
        Recordings with beats, each left out once.
    n_right : int
        Those the setting derived without them ends every beat of right.
    recordings : tuple of HeldOutRecording
    n_folds : int
        How many derivations it took: one per recording (``n_folds ==
        n_recordings``), or, in a larger corpus, one per fold of every
        ``n_folds``-th recording left out together (so the work stays linear
        in the recordings).
    """

    n_recordings: int
    n_right: int
    recordings: tuple[HeldOutRecording, ...]
    n_folds: int = 0


@dataclass(frozen=True, slots=True)
class Derivation:
    """Everything ``derive`` found, for one group of recordings.

    Attributes
    ----------
    group : str
    recordings : tuple of str
    floor : FloorEvidence
    gaps : GapEvidence
    onsets : OnsetEvidence
    outcome : CorpusOutcome or None
        The recommendation replayed (None when nothing was recommended or
        no recording has beats).
    stability : tuple of Stability
    warnings : tuple of str
    compared : Comparison or None
        The setting it was asked to compare with (``derive(compare=...)``).
    held_out : HeldOut or None
        Derived without each recording with an event log in turn, and
        replayed on it: how the recommendation may hold on recordings it
        did not see (None when not asked, or fewer than 2 recordings).
    rules : RuleEvidence or None
        The dead air of the recommendation, and the rules that could end a
        beat sooner replayed on the same beats (:mod:`clock.core.recommend.rules`;
        None when nothing was recommended or no recording has beats).
    """

    group: str
    recordings: tuple[str, ...]
    floor: FloorEvidence
    gaps: GapEvidence
    onsets: OnsetEvidence
    outcome: CorpusOutcome | None
    stability: tuple[Stability, ...]
    warnings: tuple[str, ...]
    compared: Comparison | None = None
    held_out: HeldOut | None = None
    rules: RuleEvidence | None = None

    @property
    def setting(self) -> tuple[float | None, float | None, float | None]:
        """(floor, quiet_s, onset_timeout_s) as recommended."""
        return self.floor.floor, self.gaps.quiet_s, self.onsets.onset_timeout_s


def counted(n: int, noun: str) -> str:
    """``1 gap``, ``2 gaps`` (nouns given in the plural)."""
    return f"{n} {noun if n != 1 else noun[:-1]}"
