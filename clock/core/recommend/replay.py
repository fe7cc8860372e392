"""A setting replayed over the corpus, beat by beat, and counted: the one judge of a corpus.

Pure numpy. :func:`judge` and :func:`replay_outcome` count outcomes as
``derive`` counts its recommendation's replay (``stress`` too); the failing
beats are named with their reason. Also the ladder replayed on one recording
(:func:`floor_that_works`) and the beats a level check fails on
(:func:`level_failures`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..analysis import FloorAnalysis, analyse
from ..beats import Beat, beats, heard, outpaced_line
from ..decide import failing_beats
from ..model import Margins, Observation
from ..outcome import (
    FAILURES,
    MISSED_ONSET,
    OUTCOMES,
    OUTPACED,
    PREMATURE,
    SILENT,
    STALLED,
    UNHEARD,
)
from ..tally import UNHEARD_SPEECH, Tally
from .corpus import Corpus, Setting
from .evidence import CorpusOutcome, Unsatisfied, counted
from .floor_math import floor_ladder
from .windows import NOISE_PERCENTILE, RecordingLevels, recording_levels

FAILURE_CODES = [OUTCOMES.index(x) for x in FAILURES]


def count_failing(analyses: list[FloorAnalysis], quiet_s: float, onset_timeout_s: float) -> int:
    """Failing beats at one quiet time (:func:`count_failing_at`)."""
    return count_failing_at(analyses, [quiet_s], onset_timeout_s)[0]


def count_failing_at(analyses: list[FloorAnalysis], quiets_s: list[float], onset_timeout_s: float) -> list[int]:
    """Failing beats for each quiet time, every quiet time decided at once per recording (the one judge).

    Each recording is judged on its own (``P``, which tells an aborted beat from an outpaced one, is its own).
    """
    total = np.zeros(len(quiets_s), np.int64)
    for a in analyses:
        total += failing_beats(a, quiets_s=quiets_s, onset_timeout_s=onset_timeout_s)
    return [int(x) for x in total]


def replay_outcome(
    corpus: Corpus,
    members: list[int],
    floor: float,
    quiet: float,
    timeout: float,
    *,
    narration_pause_s: float | None = None,
    spoke: bool = False,
) -> CorpusOutcome:
    """The recommendation replayed tick by tick over every recording with beats (``P`` over them, unless given).

    With ``spoke``, a beat the replay finds silent where the guide spoke (:meth:`Corpus.spoke`) is a failure
    of the floor (its tally's ``n_speech_unheard``), named with the others.
    """
    kinds: list[str] = []
    failing: list[Unsatisfied] = []
    n_rec = 0
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
        said = heard(found)
        kinds += [UNHEARD] * (len(found) - len(said))  # counted, never made (not in ``n_beats``)
        for b in said:
            if b.outcome == SILENT and b.index in deaf:
                kinds.append(UNHEARD_SPEECH)
                failing.append(_unheard_speech(o, b, floor))
                continue
            kinds.append(b.outcome)
            if b.outcome in FAILURES:
                failing.append(_why(o, b, a.beats[b.index], a, floor, quiet, timeout, corpus.levels[i]))
    return CorpusOutcome(
        n_recordings=n_rec,
        tally=Tally.of(kinds, extra=(UNHEARD_SPEECH,)),
        unsatisfied=tuple(failing),
        narration_pause_s=pause,
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


def judge(
    observations: Sequence[Observation],
    *,
    floor: float,
    quiet_s: float,
    onset_timeout_s: float,
    margins: Margins | None = None,
    narration_pause_s: float | None = None,
) -> CorpusOutcome:
    """One setting replayed over recordings and counted as :func:`derive` counts its recommendation's replay.

    The one judge of a replay: ``derive`` (its recommendation and the
    compared setting) and ``stress`` (every transformed corpus) both count
    outcomes here. Each beat is judged by its own recording: ``P``, which
    tells an aborted beat from an outpaced one, is its recording's longest
    narration pause at the floor (:func:`clock.core.analysis.narration_pause_s`),
    unless ``narration_pause_s`` gives one for every recording.
    """
    obs = list(observations)
    margins = margins or Margins()
    corpus = Corpus(obs, _LazyLevels(obs, margins), [], [], margins)  # type: ignore[arg-type]
    return replay_outcome(
        corpus, list(range(len(obs))), floor, quiet_s, onset_timeout_s, narration_pause_s=narration_pause_s
    )


class _LazyLevels(Sequence[RecordingLevels]):
    """A recording's levels, computed only when a failing beat's reason needs them."""

    def __init__(self, obs: list[Observation], margins: Margins) -> None:
        self._obs, self._margins = obs, margins
        self._done: dict[int, RecordingLevels] = {}

    def __len__(self) -> int:
        return len(self._obs)

    def __getitem__(self, i):  # type: ignore[no-untyped-def,override]
        if i not in self._done:
            self._done[i] = recording_levels(self._obs[i], self._margins)[0]
        return self._done[i]


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
    floors = floor_ladder(float(positive.min()), float(positive.max()))
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
    (:func:`clock.core.recommend.windows.classify_ticks`); ``found`` the replay of the
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


def replay_recommendation(
    corpus: Corpus, members: list[int], chosen: Setting | None, notes: list[str]
) -> CorpusOutcome | None:
    """The recommendation replayed over every recording with beats, the guide's unheard speech a failure (None
    without a full setting); a note where it fails beats."""
    if chosen is None or chosen.quiet_s is None or chosen.onset_timeout_s is None:
        return None
    outcome = replay_outcome(corpus, members, chosen.floor, chosen.quiet_s, chosen.onset_timeout_s, spoke=True)
    if outcome.tally.n_failed:
        notes.append(
            f"the recommendation fails {counted(outcome.tally.n_failed, 'beats')} of {outcome.tally.n_beats}: "
            "no setting ends every beat right (see the failing beats)"
        )
    return outcome
