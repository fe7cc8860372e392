"""What every check of :mod:`clock.core.check` reads, and what it gives.

A check reads one :class:`Checked`: the recording, how derive classes its
ticks, the setting and margins under test, the tolerances of
:class:`CheckOptions`, and, where the recording has beats, the
:class:`BeatReplay` beats and what its event log says of the page. It gives
one :class:`Verdict`: its failures (one :class:`Finding` each, one line
each), or the finding it holds (or does not apply) with.
:class:`LevelReplay` is the replay behind a level check's verdict: at the
setting, at the floor scaled by a gain, at any floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .beats import FAILURES, LEVEL, Beat, analyse
from .beats import beats as replay_beats
from .decide import decide_quiets
from .events import EventLog
from .model import Margins, Observation
from .outcome import OUTCOMES
from .recommend.replay import floor_that_works, level_failures
from .recommend.windows import RecordingLevels
from .thresholds import Thresholds

__all__ = [
    "GAIN_SEARCH_DB",
    "CheckOptions",
    "Checked",
    "Finding",
    "LevelReplay",
    "BeatReplay",
    "Verdict",
    "fmt_s",
    "plural",
    "rms",
]

#: How far (dB, in 1 dB steps) a level check's note looks for the gain that breaks a beat.
GAIN_SEARCH_DB = 24


@dataclass(frozen=True, slots=True)
class Finding:
    """What a check found at one spot (a failure, or the passing summary): a line's words and its numbers.

    Attributes
    ----------
    t_s : float or None
        Where in the recording (None: recording-wide).
    detail, expected : str
        What was measured and what it was held against, in words.
    measured, threshold : float or None
        The same as numbers, in ``unit``.
    unit : str
    """

    t_s: float | None
    detail: str
    expected: str
    measured: float | None = None
    threshold: float | None = None
    unit: str = ""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one check of one recording gives.

    Attributes
    ----------
    failures : sequence of Finding
        One per failure (one line each); empty when the check holds.
    ok : Finding
        What a check that holds (or does not apply) says.
    applicable : bool
        False when the recording lacks what the check needs; a failure is always applicable.
    """

    failures: Sequence[Finding]
    ok: Finding
    applicable: bool = True


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """The tolerances and settings a recording is checked at, beyond the thresholds and margins.

    The keyword options of :func:`clock.core.check.check_recording`, which says what each means.
    """

    expected_beats: int | None = None
    baseline: dict[str, Any] | None = None
    onset_tolerance_s: float = 0.05
    max_gap_tolerance_s: float = 0.05
    lossless_tolerance: float = 0.0
    recorder_tolerance: float = 0.03
    max_floor_disagreements: int = 0
    page_thresholds: Thresholds | None = None
    narration_pause_s: float | None = None
    quiet_range_s: tuple[float, float] | None = None
    align_log: bool = True


@dataclass(frozen=True, slots=True)
class BeatReplay:
    """What the beat checks read of a recording with beats: its log, and its beats replayed at the setting.

    Attributes
    ----------
    log : EventLog
    beats : sequence of Beat
        Every beat, replayed at the setting.
    heard : sequence of Beat
        The beats the clock saw a tick of: an unheard beat has no speech, gap or decision.
    tick_s : float
        One tick: the longest interval between two ticks' times (frames over the rate; a tick reads at a
        render-quantum boundary, so 1/60 s at 48 kHz is 768 or 896 frames), at least the cadence's period.
    """

    log: EventLog
    beats: Sequence[Beat]
    heard: Sequence[Beat]
    tick_s: float

    @property
    def rule(self) -> tuple[str, float | None]:
        """``(rule, hangover_s)`` the log's ``clock.setting`` says the page ran (the level rule without one)."""
        setting = self.log.setting
        return (LEVEL, None) if setting is None else (setting.rule, setting.hangover_s)


@dataclass(frozen=True, slots=True)
class Checked:
    """One recording as every check reads it.

    Attributes
    ----------
    obs : Observation
    th : Thresholds
        The setting under test.
    margins : Margins
    options : CheckOptions
    levels : RecordingLevels
        Its noise and speech percentiles, ticks told apart as derive does (never with the floor under test).
    speech : numpy.ndarray of bool
        Which ticks derive takes as speech.
    level_replay : LevelReplay or None
        The replay behind the level checks' verdict (None without beats: the percentiles decide).
    beat_replay : BeatReplay or None
        None without beats: the beat checks do not apply (or fail ``beat-count``).
    """

    obs: Observation
    th: Thresholds
    margins: Margins
    options: CheckOptions
    levels: RecordingLevels
    speech: np.ndarray
    level_replay: LevelReplay | None
    beat_replay: BeatReplay | None

    @property
    def replayed(self) -> BeatReplay:
        """:attr:`beat_replay`, for a check that runs only on a recording with beats."""
        assert self.beat_replay is not None
        return self.beat_replay

    def replay_at(
        self,
        *,
        floor: float,
        quiet_s: float,
        onset_timeout_s: float,
        rule: str = LEVEL,
        hangover_s: float | None = None,
    ) -> Sequence[Beat]:
        """The recording's beats replayed at another setting or rule (``P`` as the checked setting's)."""
        return replay_beats(
            self.obs.trace,
            self.replayed.log,
            floor=floor,
            quiet_s=quiet_s,
            onset_timeout_s=onset_timeout_s,
            narration_pause_s=self.options.narration_pause_s,
            rule=rule,
            hangover_s=hangover_s,
        )


class LevelReplay:
    """The replay behind a level check's verdict: at the setting, at the floor scaled by a gain, at any floor."""

    def __init__(
        self,
        obs: Observation,
        th: Thresholds,
        found: Sequence[Beat],
        seen: Sequence[Beat],
        speech: np.ndarray,
    ) -> None:
        self.obs, self.th, self.found, self.speech = obs, th, found, speech
        # The beats in which the guide speaks at the setting: one silent at another floor is lost there.
        self.speaking = np.zeros(len(found), bool)
        self.speaking[[b.index for b in seen if b.outcome != "silent"]] = True
        self.failing = level_failures(obs, speech, seen)

    def _fails(self, floor: float) -> tuple[int, str] | None:
        """The first beat the setting fails with the floor at ``floor`` (its index and outcome), or None."""
        assert self.obs.events is not None
        a = analyse(self.obs.trace, self.obs.events, floor=min(floor, 1.0))
        codes = decide_quiets(a, quiets_s=[self.th.quiet_s], onset_timeout_s=self.th.onset_timeout_s).outcome[:, 0]
        # A beat whose guide the changed level hides entirely is lost too (silent where it spoke).
        silent = codes == OUTCOMES.index("silent")
        lost = np.flatnonzero(np.isin(codes, [OUTCOMES.index(x) for x in FAILURES]) | (silent & self.speaking))
        if not lost.size:
            return None
        j = int(lost[0])
        return j, "silent (its speech under the floor)" if silent[j] else OUTCOMES[codes[j]]

    @property
    def spoke(self) -> list[bool]:
        """Where the guide spoke in each beat's span, as derive tells speech (without the floor)."""
        t = self.obs.trace.t_s
        return [bool(self.speech[slice(*np.searchsorted(t, [b.terminal_s, b.span_end_s]))].any()) for b in self.found]

    def breaking_gain(self, sign: int) -> tuple[int, int, str] | None:
        """The least gain (dB; ``sign`` -1 quieter, +1 louder) at which a beat fails: (dB, beat, outcome)."""
        for db in range(1, GAIN_SEARCH_DB + 1):
            # The level scales with the gain: the floor scaled the other way replays the same decisions.
            found = self._fails(self.th.floor * 10 ** (-sign * db / 20))
            if found is not None:
                return db, found[0], found[1]
        return None

    def any_floor_works(self) -> tuple[float, float, float, int] | None:
        """A floor at which some quiet time ends every beat right.

        See :func:`clock.core.recommend.replay.floor_that_works`.
        """
        return floor_that_works(self.obs, spoke=self.spoke, onset_timeout_s=self.th.onset_timeout_s)


def plural(n: int, noun: str) -> str:
    """``1 beat``, ``2 beats``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def fmt_s(x: float) -> str:
    """A time in a line: ``2.500 s``."""
    return f"{x:.3f} s"


def rms(x: float) -> str:
    """A level in a line: five decimals, or three significant digits where five decimals would read as 0 (a
    level above digital silence is never said as 0)."""
    return f"{x:.5f}" if x == 0 or abs(x) >= 5e-6 else f"{x:.3g}"
