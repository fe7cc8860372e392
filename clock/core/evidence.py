"""The evidence behind a recommendation: what the engine found, and the replay of a setting over the corpus.

Pure numpy. Part of the recommendation engine (see :mod:`clock.core.derive`):
the result dataclasses, the per-corpus cache of analyses, the gaps, rooms and
latencies at one floor, and the replay of a setting beat by beat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .analysis import FloorAnalysis, analyse, narration_pause_s
from .beats import Beat, beats, heard, outpaced_line
from .decide import failing_beats
from .model import EPS_S
from .outcome import (
    ABORTED,
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    OUTPACED,
    PREMATURE,
    RECORDING_ENDED,
    STALLED,
    SUPERSEDED,
)
from .provider import BeatStop, beat_stops
from .segments import segments
from .times import clock_time
from .windows import (
    NOISE_PERCENTILE,
    Margins,
    Observation,
    RecordingLevels,
    TickClasses,
    _beat_spans,
    _clear_floor,
    _db,
    _ladder,
    _own_floor,
)

if TYPE_CHECKING:  # pragma: no cover
    from .rules import DeadAir, RuleEvidence

__all__ = [
    "Comparison",
    "Derivation",
    "FloorEvidence",
    "FloorRun",
    "GapEvidence",
    "HeldOut",
    "HeldOutRecording",
    "OnsetEvidence",
    "Outcome",
    "Stability",
    "Unsatisfied",
    "round_sig",
]

PERCENTILES = (("min", 0.0), ("p0.1", 0.1), ("p1", 1.0), ("p5", 5.0), ("p50", 50.0), ("p95", 95.0), ("max", 100.0))
#: Fewer than these make the evidence thin.
THIN = {"gaps": 30, "speech_ticks": 1000, "silence_ticks": 1000, "beats": 10, "recordings": 3}
#: What bounds a beat whose log has no prompt before the next terminal response.
_UNPROMPTED = ("terminal", "acknowledgment")
#: Without a prompt in the log, a beat's room ends this long before the next response (when no log shows it).
DEFAULT_PROMPT_DELAY_S = 1.0


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
class Outcome:
    """The recommended setting, replayed over every recording with an event log.

    Attributes
    ----------
    n_recordings, n_beats : int
    n_ok, n_premature, n_stalled, n_missed_onset, n_silent : int
    unsatisfied : tuple of Unsatisfied
    n_aborted : int
        Beats the visitor ended (a ``prompt`` or ``end`` before the page's
        clock declared) while the guide was still speaking: neither right
        nor a failure.
    n_outpaced : int
        Beats the visitor ended after the guide had finished, before the
        clock declared quiet: not a failure (the visitor did not wait).
    narration_pause_s : float or None
        ``P``: the longest pause inside a narration of these recordings at
        the floor, which tells an aborted beat from an outpaced one.
    n_speech_unheard : int
        Beats the replay finds silent where the guide spoke (as derive tells
        speech without the floor: see :meth:`_Corpus.spoke`): the floor
        hears none of the guide there. A failure of the floor (counted by
        ``derive`` for its recommendation and the compared setting; not in
        ``n_silent``).
    n_superseded, n_recording_ended : int
        Beats a terminal response superseded, or the recording's end cut,
        before the clock declared quiet: not the setting's doing.
    """

    n_recordings: int
    n_beats: int
    n_ok: int
    n_premature: int
    n_stalled: int
    n_missed_onset: int
    n_silent: int
    unsatisfied: tuple[Unsatisfied, ...]
    n_aborted: int = 0
    n_outpaced: int = 0
    narration_pause_s: float | None = None
    n_speech_unheard: int = 0
    n_superseded: int = 0
    n_recording_ended: int = 0

    @property
    def n_failed(self) -> int:
        """The setting's failures (premature ends, stalls, missed onsets), and spoken beats the floor does not hear."""
        return self.n_premature + self.n_stalled + self.n_missed_onset + self.n_speech_unheard


@dataclass(frozen=True, slots=True)
class Comparison:
    """Another setting (the committed one, or a candidate), replayed as the recommendation is.

    Attributes
    ----------
    label : str
        ``committed`` (the config's) or ``candidate`` (given on the command line).
    floor, quiet_s, onset_timeout_s : float
    outcome : Outcome or None
        Its replay over every recording with beats (None when none has).
    dead_air : DeadAir or None
        What its beats ended right wait after the last word (None when none has beats).
    """

    label: str
    floor: float
    quiet_s: float
    onset_timeout_s: float
    outcome: Outcome | None
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
    outcome : Outcome or None
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
        beat sooner replayed on the same beats (:mod:`clock.core.rules`;
        None when nothing was recommended or no recording has beats).
    """

    group: str
    recordings: tuple[str, ...]
    floor: FloorEvidence
    gaps: GapEvidence
    onsets: OnsetEvidence
    outcome: Outcome | None
    stability: tuple[Stability, ...]
    warnings: tuple[str, ...]
    compared: Comparison | None = None
    held_out: HeldOut | None = None
    rules: RuleEvidence | None = None

    @property
    def setting(self) -> tuple[float | None, float | None, float | None]:
        """(floor, quiet_s, onset_timeout_s) as recommended."""
        return self.floor.floor, self.gaps.quiet_s, self.onsets.onset_timeout_s


def round_sig(x: float, *, up: bool, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, rounded up or down, as written (a floor said to fail, or to end
    every beat right, rounded away from the edge it stands beside so the words stay true)."""
    d = Decimal(repr(x))
    exp = d.adjusted() - digits + 1
    return f"{float(d.scaleb(-exp).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR).scaleb(exp)):g}"


#: A tail whose exceedances spread less than this (s) has no scale to extrapolate (gaps nearly identical).
_TAIL_SCALE_MIN_S = 1e-6


def _tail_exceedance(gaps: NDArray[np.float64], q: float) -> float | None:
    """P(gap > q) from an exponential tail over the 75th percentile.

    None where there is no tail to extrapolate: fewer than 5 exceedances,
    ``q`` at or below the 75th percentile (the fit says nothing there), or
    gaps over it nearly identical (their mean excess under
    ``_TAIL_SCALE_MIN_S``, e.g. bursts exactly every 3 s), where the fit's
    scale is float noise.
    """
    u = float(np.percentile(gaps, 75))
    excess = gaps[gaps > u] - u
    if excess.size < 5:
        return None
    scale = float(excess.mean())
    if q <= u or scale < _TAIL_SCALE_MIN_S:
        return None
    return float(excess.size / gaps.size * math.exp(-(q - u) / scale))


def gap_margin_waived(quiet_s: float, need_s: float, room_s: float, *, margin_s: float, tick_s: float) -> bool:
    """Whether ``check``'s gap check notes, rather than fails, a gap within ``margin_s`` of ``quiet_s``.

    Only where no quiet time could keep the margin on both sides: the quiet
    times that end every beat right (the replay's ``need_s < q <= room_s``,
    :meth:`clock.core.analysis.FloorAnalysis.quiet_range` over the recordings
    judged together) span less than twice the margin, ``quiet_s`` lies
    inside them, and no more than a tick below their centre (what ``derive``
    recommends there). Where a wider run could have held the margin, or
    the quiet time sits nearer the longest gap than the centre, the gap
    fails.
    """
    return (
        need_s < quiet_s - EPS_S <= room_s
        and room_s - need_s < 2 * margin_s - EPS_S
        and quiet_s - need_s >= (room_s - need_s) / 2 - tick_s - EPS_S
    )


def _percentiles(values: NDArray[np.float64]) -> dict[str, float]:
    return {name: float(np.percentile(values, q)) for name, q in PERCENTILES} if values.size else {}


@dataclass
class _Corpus:
    """What the engine computes once per recording, shared by the leave-one-out runs."""

    obs: list[Observation]
    levels: list[RecordingLevels]
    speech: list[NDArray[np.float64]]
    silence: list[NDArray[np.float64]]
    margins: Margins
    #: Each recording's ticks told apart (empty where only a replay is judged: :func:`clock.core.derive.judge`).
    classes: list[TickClasses] = field(default_factory=list)
    analyses: dict[tuple[int, float], FloorAnalysis] = field(default_factory=dict)
    own: dict[int, float | None] = field(default_factory=dict)
    times: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    #: Derivations without some recordings (by the members left), shared by the stability and held-out runs.
    without: dict[tuple[int, ...], Derivation] = field(default_factory=dict)
    spoken: dict[int, NDArray[np.bool_]] = field(default_factory=dict)
    quiet: dict[int, tuple[list[int], float, float] | None] = field(default_factory=dict)

    def own_floor(self, i: int) -> float | None:
        if i not in self.own:
            self.own[i] = _own_floor(self.levels[i])
        return self.own[i]

    def reference(self, i: int, floor: float) -> FloorAnalysis | None:
        """Recording ``i`` at the floor other floors are held to, where it lies under ``floor``, or None.

        Its own floor (:func:`clock.core.windows._own_floor`); where a quieter voice the level split takes for
        silence puts its noise within the margin of its speech (:meth:`quiet_voice`), no higher than 12 dB under
        that voice's median and 6 dB over its room's noise, so it hears that voice.
        """
        ref = self.own_floor(i)
        quiet = self.quiet_voice(i)
        if quiet is not None:
            _, room, voice = quiet
            under = max(2 * room, voice / 4)
            ref = under if ref is None else min(ref, under)
        return self.analysis(i, ref) if ref is not None and ref < floor else None

    def misread(self, i: int, a: FloorAnalysis) -> tuple[list[tuple[int, float]], list[int]]:
        """Where ``a`` (recording ``i`` at a floor) reads a beat otherwise than its reference (:meth:`reference`).

        Returns, per beat whose end both can tell (a prompt or the page's ``end`` bounds it alike at both floors,
        and the reference hears it), how much of its narration's end ``a``'s floor hides (s: the reference's last
        word less ``a``'s, inf where ``a`` hears none of it); and the beats whose acknowledgment ``a``'s floor
        takes for narration (the reference sees an acknowledgment, and ``a`` the narration's onset more than the
        quiet margin earlier).
        """
        ref = self.reference(i, a.floor)
        if ref is None:
            return [], []
        margin = self.margins.quiet_margin_s
        hidden, acks = [], []
        # Only beats with speech at this floor or at the reference say anything here.
        for j in np.union1d(a.active_beats(), ref.active_beats()).tolist():
            b, r = a.beats[j], ref.beats[j]
            # Only where a prompt (or the end) bounds the beat: without prompts, the span runs to the next terminal
            # response, and the next beat's acknowledgment, heard at one floor and not the other, is not its end.
            if not r.spoken or r.bound_s != b.bound_s or b.bound in _UNPROMPTED or r.last_word_s is None:
                continue
            now = b.last_word_s if b.spoken and b.last_word_s is not None else float("-inf")
            hidden.append((j, r.last_word_s - now))
            if r.ack_end_tick is not None and r.onset_tick is not None and b.spoken:
                onset = b.onset_tick if b.onset_tick is not None else b.start_tick
                if onset is not None and float(a.t_s[r.onset_tick]) - float(a.t_s[onset]) > margin:
                    acks.append(j)
        return hidden, acks

    def spoke(self, i: int) -> NDArray[np.bool_]:
        """Each beat of recording ``i`` in which the guide spoke, as derive tells speech without the floor.

        By its labels where it has them; else where the level split finds
        speech in the beat's span, or where the recording's clear floor
        (:func:`clock.core.windows._clear_floor`: the lowest floor clear of
        its room) hears it. A floor at which such a beat is silent does not
        hear the guide there: a failure of that floor.
        """
        if i not in self.spoken:
            heard, said = self._spoke(i)
            self.spoken[i] = heard | said
        return self.spoken[i]

    def _spoke(self, i: int) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Per beat of recording ``i``: heard at its clear floor (not with labels), and told speech by its ticks'
        classes (labels or split) within the beat's span."""
        o, rec = self.obs[i], self.levels[i]
        assert o.events is not None
        n = len(o.events.terminals)
        heard, said = np.zeros(n, bool), np.zeros(n, bool)
        clear = None if rec.method == "labels" else _clear_floor(rec)
        if clear is not None:
            heard = self.analysis(i, clear).spoken()
        if self.classes and n:
            lo, hi = self.spans(i)
            ticks = np.concatenate([[0], np.cumsum(self.classes[i].speech, dtype=np.int64)])
            said = ticks[hi] > ticks[lo]
        return heard, said

    def spans(self, i: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each beat's span of ticks ``[lo, hi)`` in recording ``i``, from the log alone (as its ticks' classes are
        kept inside beats: :func:`clock.core.windows._beat_spans`)."""
        o = self.obs[i]
        assert o.events is not None
        return _beat_spans(o.trace, o.events)

    def quiet_voice(self, i: int) -> tuple[list[int], float, float] | None:
        """The beats of recording ``i`` whose quieter voice the level split takes for silence, where that is what
        puts its noise (p99) within the margin of its speech, or None.

        They are the beats heard at its clear floor whose spans hold silence ticks (as the split tells them) at
        or over the top of the window that noise would leave; the room's noise is not confined to some beats, so
        where every heard beat holds such ticks, or the silence outside them still reaches that top, it is the
        room's. Returns them, the recording's silence p99 outside their spans, and the median of their levels at
        its clear floor.
        """
        if i not in self.quiet:
            self.quiet[i] = self._quiet_voice(i)
        return self.quiet[i]

    def _quiet_voice(self, i: int) -> tuple[list[int], float, float] | None:
        rec = self.levels[i]
        o = self.obs[i]
        if not self.classes or not o.has_beats or rec.speech_low is None or rec.noise_high is None:
            return None
        top = rec.speech_low * 10 ** (-self.margins.floor_margin_db / 20)
        heard, _ = self._spoke(i)
        silence = self.classes[i].silence
        loud = np.concatenate([[0], np.cumsum(silence & (o.trace.level >= top), dtype=np.int64)])
        lo, hi = self.spans(i)
        quiet = np.flatnonzero(heard & (loud[hi] > loud[lo]))
        if quiet.size == 0 or quiet.size == np.count_nonzero(heard):
            return None
        inside = np.zeros(o.trace.n_ticks + 1, np.int64)
        np.add.at(inside, lo[quiet], 1)
        np.add.at(inside, hi[quiet], -1)
        rest = silence & (np.cumsum(inside)[:-1] == 0)
        noise = float(np.percentile(o.trace.level[rest], NOISE_PERCENTILE)) if rest.any() else 0.0
        if noise >= top:
            return None  # without them its silence still reaches its speech: the noise is the room's
        clear = _clear_floor(rec)
        level = o.trace.level[(np.cumsum(inside)[:-1] > 0) & (o.trace.level > (clear or 0.0))]
        return quiet.tolist(), noise, float(np.median(level)) if level.size else 0.0

    def speech_unheard(self, i: int, a: FloorAnalysis) -> NDArray[np.int64]:
        """The beats of recording ``i`` in which the guide spoke (:meth:`spoke`) that ``a``'s floor does not hear
        (silent there; a beat the clock sees no tick of is unheard at every floor, and not counted)."""
        spoke = self.spoke(i)
        if not spoke.any():
            return np.zeros(0, np.int64)
        heard = a.spoken()
        if a.unheard is not None:
            heard[a.unheard] = True
        else:
            heard |= np.array([b.life_end_tick <= b.first_tick for b in a.beats], bool)
        return np.flatnonzero(spoke & ~heard)

    def pause(self, members: Sequence[int], floor: float) -> float:
        """``P`` of these recordings at this floor (:func:`clock.core.analysis.narration_pause_s`)."""
        return narration_pause_s([self.analysis(i, floor) for i in members if self.obs[i].has_beats])

    def stopped(self, i: int, floor: float) -> tuple[BeatStop, ...]:
        """Each beat's own provider event as the page's clock applies it, at one floor (:func:`beat_stops`)."""
        events = self.obs[i].events
        assert events is not None
        return beat_stops(events, self.analysis(i, floor))

    def analysis(self, i: int, floor: float) -> FloorAnalysis:
        """One recording's beats at one floor, analysed once (the tick times shared by every floor)."""
        key = (i, floor)
        if key not in self.analyses:
            o = self.obs[i]
            assert o.events is not None
            if i not in self.times:
                self.times[i] = o.trace.t_s
            self.analyses[key] = analyse(o.trace, o.events, floor=floor, t_s=self.times[i])
        return self.analyses[key]


@dataclass(frozen=True)
class _Setting:
    floor: float
    quiet_s: float | None
    onset_timeout_s: float | None
    failures: int
    quiet_rule: str
    extended: bool = False
    #: What ``derive(prefer=...)`` said of its pick (for the floor's rule).
    note: str = ""
    #: How the replayed grid moved or placed the floor (for the floor's rule; empty: the engine's floor stands).
    floor_rule: str = ""
    #: The floors that end every beat right around it, where the replayed grid placed it.
    run: FloorRun | None = None


@dataclass
class _AtFloor:
    """At one floor: the gaps, the room after last words, the waits and latencies of every beat."""

    gaps: list[tuple[str, float, float, bool]]  # recording, last word, gap, narration (logged beats)
    unlogged_gaps: list[tuple[str, float, float]]  # recording, last word, gap (recordings without a log)
    latencies: list[tuple[str, float, float]]  # recording, terminal, latency
    rooms: list[tuple[str, float, float]]  # recording, last word, room (less the prompt delay where unlogged)
    waits: list[float]
    needs: list[float]
    hidden: list[tuple[str, int, float]]  # recording, beat, narration end hidden by this floor (s)
    analyses: list[FloorAnalysis]
    narration_pause_s: float = 0.0  # P of these recordings at this floor
    unheard: list[tuple[str, int]] = field(default_factory=list)  # recording, beat: spoken, silent at this floor
    acks: list[tuple[str, int]] = field(default_factory=list)  # recording, beat: acknowledgment taken for narration


def _prompt_delay(corpus: _Corpus, members: Sequence[int]) -> float:
    """The median time from a prompt to its terminal response, over the logs that have both."""
    delays = []
    for i in members:
        events = corpus.obs[i].events
        if events is None:
            continue
        prompt = None
        for e in events.of_kind("prompt", "terminal"):
            if e.kind == "prompt":
                prompt = e.t_s
            elif prompt is not None:
                delays.append(e.t_s - prompt)
                prompt = None
    return float(np.median(delays)) if delays else DEFAULT_PROMPT_DELAY_S


def _at_floor(corpus: _Corpus, members: Sequence[int], floor: float, *, prompt_delay_s: float = 0.0) -> _AtFloor:
    out = _AtFloor([], [], [], [], [], [], [], [])
    out.narration_pause_s = corpus.pause(members, floor)
    for i in members:
        o = corpus.obs[i]
        if not o.has_beats:
            if o.events is None:
                seg = segments(o.trace, floor=floor)
                out.unlogged_gaps.extend((o.name, s.last_word_s, g) for s, g in zip(seg.segments, seg.gaps_s))
            continue
        a = corpus.analysis(i, floor)
        out.analyses.append(a)
        out.unheard.extend((o.name, j) for j in corpus.speech_unheard(i, a).tolist())
        out.gaps.extend((o.name, w, g, narration) for _, w, g, narration in a.gaps())
        hidden, acks = corpus.misread(i, a)
        out.hidden.extend((o.name, j, h) for j, h in hidden)
        out.acks.extend((o.name, j) for j in acks)
        for b in (a.beats[j] for j in a.active_beats().tolist()):
            if not b.spoken:
                continue
            out.needs.append(b.need_s)
            if b.onset_tick is not None and not b.after_early_end:  # (an early end's consequence is not the voice's)
                out.latencies.append((o.name, b.terminal_s, float(a.t_s[b.onset_tick]) - b.terminal_s))
            if b.last_word_tick is not None and b.undone(a.narration_pause_s) == STALLED:
                # Only a bound whose passing is a stall leaves room to respect: one the page caused moves with the
                # clock's declaration, and one the visitor, a superseding response or the recording's end caused is
                # not the setting's doing. Without the prompt in the log, the page prompted some time before the
                # next response.
                unknown = b.bound in ("terminal", "acknowledgment")
                if b.room_s in (float("-inf"), float("inf")):
                    continue  # speech runs into the bound: no quiet time ends it (the replay names it)
                out.rooms.append(
                    (o.name, float(a.t_s[b.last_word_tick]), b.room_s - (prompt_delay_s if unknown else 0))
                )
            if b.wait_s is not None:
                out.waits.append(b.wait_s)
    return out


def _count(n: int, noun: str) -> str:
    """``1 gap``, ``2 gaps`` (nouns given in the plural)."""
    return f"{n} {noun if n != 1 else noun[:-1]}"


def _floor_evidence(
    corpus: _Corpus,
    members: list[int],
    meeting: list[int],
    window: tuple[float, float] | None,
    lower_by: str | None,
    upper_by: str | None,
    outside: tuple[str, ...],
    no_window: tuple[str, ...],
    floor: float | None,
    rule: str,
    run: FloorRun | None = None,
) -> FloorEvidence:
    sp = np.concatenate([corpus.speech[i] for i in meeting]) if meeting else np.zeros(0)
    si = np.concatenate([corpus.silence[i] for i in meeting]) if meeting else np.zeros(0)
    methods: dict[str, int] = {}
    for i in members:
        methods[corpus.levels[i].method] = methods.get(corpus.levels[i].method, 0) + 1
    above = below = None
    if floor is not None and window is not None:
        above = _db(floor) - _db(window[0]) if window[0] > 0 else float("inf")
        below = _db(window[1]) - _db(floor)
    return FloorEvidence(
        recordings=tuple(corpus.levels[i] for i in members),
        window=window,
        lower_by=lower_by,
        upper_by=upper_by,
        outside=outside,
        no_window=no_window,
        floor=floor,
        rule=rule,
        above_db=above,
        below_db=below,
        n_speech_ticks=int(sp.size),
        n_silence_ticks=int(si.size),
        speech=_percentiles(sp),
        speech_percentile=corpus.margins.speech_percentile,
        floor_margin_db=corpus.margins.floor_margin_db,
        methods=methods,
        exact_zero_share=float(np.count_nonzero(si == 0) / si.size) if si.size else 0.0,
        thin=sp.size < THIN["speech_ticks"] or si.size < THIN["silence_ticks"],
        run=run,
    )


def _gap_onset_outcome(
    corpus: _Corpus,
    members: list[int],
    judged: list[int],
    chosen: _Setting | None,
    notes: list[str],
    *,
    replay: bool = True,
) -> tuple[GapEvidence, OnsetEvidence, Outcome | None]:
    margins = corpus.margins
    obs = corpus.obs
    for i in members:
        o = obs[i]
        if o.events is not None and not o.events.terminals:
            has_prompts = bool(o.events.of_kind("prompt"))
            notes.append(
                f"{o.name}: its event log has {'prompts but ' if has_prompts else ''}no terminal response, "
                "so it has no beats and contributes no narration gaps"
            )
    unlogged = tuple(obs[i].name for i in judged if obs[i].events is None)
    if unlogged:
        notes.append(
            f"no event log for {_count(len(unlogged), 'recordings')} ({', '.join(unlogged[:3])}"
            f"{', ...' if len(unlogged) > 3 else ''}): all their gaps were counted as narration gaps"
        )
    floor = None if chosen is None else chosen.floor
    c = _at_floor(corpus, judged, floor) if floor is not None else _AtFloor([], [], [], [], [], [], [], [])
    all_gaps = c.gaps + [(name, w, g, True) for name, w, g in c.unlogged_gaps]
    narration = [(name, w, g) for name, w, g, is_narration in all_gaps if is_narration]
    acks = [g for _, _, g, is_narration in all_gaps if not is_narration]
    g_all = np.array([g for _, _, g in narration])
    g = g_all[g_all >= margins.min_gap_s]
    bridged = [g for _, _, g, _ in all_gaps]
    room = min(c.rooms, key=lambda r: (r[2], r[0], r[1])) if c.rooms else None
    quiet = None if chosen is None else chosen.quiet_s
    # The gaps the replay and check hold the quiet time to: those inside logged beats.
    longest_bridged = max((g for _, _, g, _ in c.gaps), default=None)
    left = None if quiet is None or longest_bridged is None else quiet - longest_bridged
    kept = left is None or left > margins.quiet_margin_s + EPS_S
    if not kept and left is not None:
        where = "" if room is None else f" (the beat whose last word is at {room[0]}:{clock_time(room[1])} leaves "
        where += "" if room is None else f"{room[2]:.3f} s of quiet before its bound)"
        # check's gap check holds the narration's gaps (not an acknowledgment's silence) to quiet - margin.
        limit = (quiet or 0.0) - margins.quiet_margin_s - 1e-9
        held = sum(g >= limit for _, _, g, is_narration in c.gaps if is_narration)
        ranges = [a.quiet_range(narration_pause_s=a.narration_pause_s) for a in c.analyses]
        need_s = max((r[0] for r in ranges), default=float("-inf"))
        room_s = min((r[1] for r in ranges), default=float("inf"))
        tick = float(obs[judged[0]].trace.tick_s) if judged else 0.0
        says = (
            "no quiet time keeps the margin on both sides (the quiet times that end every beat right span "
            f"{need_s:.3f} .. {room_s:.3f} s), so check's gap check passes "
            f"{'that gap' if held == 1 else f'{held} gaps'} with a note"
            if held and gap_margin_waived(quiet or 0.0, need_s, room_s, margin_s=margins.quiet_margin_s, tick_s=tick)
            else f"check's gap check fails {'that gap' if held == 1 else f'{held} gaps'}"
            if held
            else "the longest is an acknowledgment's silence, so check's gap check (narration gaps) still passes"
        )
        notes.append(
            f"the margin is not kept: at floor {floor:g}, the quiet time {quiet:g} s leaves {left:.3f} s over the "
            f"longest gap inside a logged beat ({longest_bridged:.3f} s), not the margin "
            f"{margins.quiet_margin_s:g} s{where}; {says}"
        )
    gaps_ev = GapEvidence(
        n_gaps=int(g.size),
        n_all_gaps=int(g_all.size),
        floor=floor,
        min_gap_s=margins.min_gap_s,
        p50_s=float(np.percentile(g, 50)) if g.size else None,
        p90_s=float(np.percentile(g, 90)) if g.size else None,
        p99_s=float(np.percentile(g, 99)) if g.size else None,
        max_gap_s=max(bridged) if bridged else None,
        longest=tuple(sorted(narration, key=lambda x: (-x[2], x[0], x[1]))[:5]),
        n_ack=len(acks),
        ack_max_s=max(acks) if acks else None,
        room_s=None if room is None else room[2],
        room_at=None if room is None else (room[0], room[1]),
        unlogged=unlogged,
        quiet_margin_s=margins.quiet_margin_s,
        quiet_s=quiet,
        rule="" if chosen is None else chosen.quiet_rule,
        p_exceed_rule_of_three=3 / g.size if g.size > 3 else None,
        p_exceed_tail=_tail_exceedance(g, quiet) if (g.size and quiet is not None) else None,
        gaps_s=tuple(float(x) for x in g),
        thin=g.size < THIN["gaps"],
        margin_left_s=left,
        margin_kept=kept,
    )
    latencies = c.latencies
    lat = np.array([x for _, _, x in latencies])
    timeout = None if chosen is None else chosen.onset_timeout_s
    onsets_ev = OnsetEvidence(
        n_beats=int(lat.size),
        p50_s=float(np.percentile(lat, 50)) if lat.size else None,
        p95_s=float(np.percentile(lat, 95)) if lat.size else None,
        max_s=float(lat.max()) if lat.size else None,
        slowest=max(latencies, key=lambda x: x[2]) if latencies else None,
        onset_margin_s=margins.onset_margin_s,
        onset_timeout_s=timeout,
        thin=lat.size < THIN["beats"],
    )
    outcome = None
    if replay and floor is not None and quiet is not None and timeout is not None:
        outcome = _replay_outcome(corpus, members, floor, quiet, timeout, spoke=True)
        if outcome.n_failed:
            notes.append(
                f"the recommendation fails {_count(outcome.n_failed, 'beats')} of {outcome.n_beats}: "
                "no setting ends every beat right (see the failing beats)"
            )
    return gaps_ev, onsets_ev, outcome


def _replay_outcome(
    corpus: _Corpus,
    members: list[int],
    floor: float,
    quiet: float,
    timeout: float,
    *,
    narration_pause_s: float | None = None,
    spoke: bool = False,
) -> Outcome:
    """The recommendation replayed tick by tick over every recording with beats (``P`` over them, unless given).

    With ``spoke``, a beat the replay finds silent where the guide spoke (:meth:`_Corpus.spoke`) is a failure
    of the floor (``Outcome.n_speech_unheard``), named with the others.
    """
    counts = dict.fromkeys((*OUTCOMES, "unheard speech"), 0)
    failing: list[Unsatisfied] = []
    n_rec = n_beats = 0
    # ``P`` said with the outcome: the largest of the recordings' own (each beat is judged by its recording's).
    pause = corpus.pause(members, floor) if narration_pause_s is None else narration_pause_s
    for i in members:
        o = corpus.obs[i]
        if not o.has_beats:
            continue
        n_rec += 1
        assert o.events is not None
        # The replay warns (once per recording and cause) about events outside the recording.
        found = beats(
            o.trace, o.events, floor=floor, quiet_s=quiet, onset_timeout_s=timeout, narration_pause_s=narration_pause_s
        )
        a = corpus.analysis(i, floor)
        deaf = set(corpus.speech_unheard(i, a).tolist()) if spoke else set()
        for b in heard(found):
            ba = a.beats[b.index]
            n_beats += 1
            if b.outcome == "silent" and b.index in deaf:
                counts["unheard speech"] += 1
                failing.append(_unheard_speech(o, b, floor))
                continue
            counts[b.outcome] += 1
            if b.outcome in FAILURES:
                failing.append(_why(o, b, ba, a, floor, quiet, timeout, corpus.levels[i]))
    return Outcome(
        n_rec,
        n_beats,
        counts[OK],
        counts[PREMATURE],
        counts[STALLED],
        counts[MISSED_ONSET],
        counts["silent"],
        tuple(failing),
        counts[ABORTED],
        counts[OUTPACED],
        pause,
        counts["unheard speech"],
        counts[SUPERSEDED],
        counts[RECORDING_ENDED],
    )


def _unheard_speech(o: Observation, b: Beat, floor: float) -> Unsatisfied:
    """A beat in which the guide spoke that the floor does not hear: its loudest level stays at or under it."""
    t = o.trace.t_s
    lo, hi = np.searchsorted(t, [b.terminal_s, b.span_end_s], side="left")
    peak = float(o.trace.level[lo:hi].max()) if hi > lo else 0.0
    reason = (
        f"the guide speaks in it, but the floor {floor:g} hears none of it (its loudest level {peak:.4g}): "
        "the clock waits on and never hears it"
    )
    return Unsatisfied(o.name, b.index, b.terminal_s, MISSED_ONSET, reason, unheard=True)


def _why(o, b, ba, a, floor, quiet, timeout, rec) -> Unsatisfied:  # type: ignore[no-untyped-def]
    t, name = a.t_s, o.name
    noise = "" if rec.noise_high is None else f" (its noise p{NOISE_PERCENTILE:g} is {rec.noise_high:.4g})"
    if b.outcome == PREMATURE:
        longest = ba.need_s
        reason = f"a quiet of {longest:.3f} s inside the beat reaches the quiet time {quiet:g} s"
        return Unsatisfied(name, b.index, float(b.quiet_declared_s), PREMATURE, reason)
    if b.outcome == MISSED_ONSET and not ba.spoken:
        return _unheard_speech(o, b, floor)
    if b.outcome == MISSED_ONSET:
        reason = f"the guide starts {ba.wait_s:.3f} s after the terminal response, past the timeout {timeout:g} s"
        return Unsatisfied(name, b.index, b.terminal_s, MISSED_ONSET, reason)
    last = None if ba.last_word_tick is None else float(t[ba.last_word_tick])
    if b.outcome == OUTPACED:
        return Unsatisfied(name, b.index, last if last is not None else b.terminal_s, OUTPACED, outpaced_line(b, quiet))
    if ba.room_s == float("-inf"):
        reason = f"the level stays above the floor {floor:g} until the {ba.bound}{noise}"
    else:
        reason = (
            f"only {ba.room_s:.3f} s of quiet after the last word before the {ba.bound} at {ba.bound_s:.3f} s, "
            f"less than the quiet time {quiet:g} s"
        )
    return Unsatisfied(name, b.index, last if last is not None else b.terminal_s, STALLED, reason)


def floor_that_works(
    obs: Observation,
    *,
    spoke: Sequence[bool] | None = None,
    onset_timeout_s: float = float("inf"),
) -> tuple[float, float, float, int] | None:
    """A floor at which some quiet time ends every beat of one recording right, replayed on a ladder.

    The ladder runs about 1 dB apart from the recording's quietest non-zero
    level to its loudest. At each floor the replay's own answer
    (:meth:`clock.core.analysis.FloorAnalysis.quiet_range`, which the tests hold
    to the tick-by-tick replay) says whether a quiet time ``need < q <= room``
    exists, with every beat in ``spoke`` (where the guide spoke, as derive
    tells speech) heard, and the replay holds it: no beat fails at the
    interval's ends (just above ``need_s``, and at ``room_s``, or a second
    past ``need_s`` where no bound limits it) with ``onset_timeout_s``, so a
    line that names the interval is what a replay shows. Returns ``(floor,
    need_s, room_s, n_floors)``, or None when no floor of the ladder works:
    only then can a level-floor clock not work on the recording.
    """
    assert obs.events is not None
    level = obs.trace.level
    positive = level[level > 0]
    if positive.size == 0:
        return None
    floors = _ladder(float(positive.min()), float(positive.max()))
    t = obs.trace.t_s
    for f in floors:
        a = analyse(obs.trace, obs.events, floor=f, t_s=t)
        need, room, _ = a.quiet_range(narration_pause_s=a.narration_pause_s)
        spoken = a.spoken()
        every = bool(spoken.all()) if spoke is None else not bool((np.asarray(spoke, bool) & ~spoken).any())
        if every and spoken.any() and need < room:
            low = max(need, 0.0) + 0.01
            ends = [q for q in (min(low, room), room if room < float("inf") else low + 1.0) if q > 0]
            if not failing_beats(a, quiets_s=ends, onset_timeout_s=onset_timeout_s).any():
                return f, max(need, 0.0), room, len(floors)
    return None


def level_failures(obs: Observation, speech: NDArray[np.bool_], found: Sequence[Beat]) -> list[Beat]:
    """The beats a level check fails on: the replay's failures, and beats silent at the floor where the guide spoke.

    ``speech`` is where the guide speaks as derive tells it, without the floor
    (:func:`clock.core.windows.classify_ticks`); ``found`` the replay of the
    setting. ``check``'s noise-level and speech-level verdicts, and what
    ``derive`` says of them, both come from here.
    """
    t = obs.trace.t_s
    out = []
    for b in found:
        lo, hi = np.searchsorted(t, [b.terminal_s, b.span_end_s])
        if b.failed or (b.outcome == "silent" and bool(speech[lo:hi].any())):
            out.append(b)
    return out
