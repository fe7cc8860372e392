"""Robustness margins: how far each change the world brings can go before a setting breaks.

Pure numpy. ``speechclock stress`` replays a setting over the corpus changed
along each axis, from the recording as it is outward, and reports where the
first beat goes wrong:

=========  ==========================================================  =====================
axis       how the recording is changed                                range
=========  ==========================================================  =====================
gain       the whole recording scaled (clipped at full scale)          -18 .. +12 dB, 1 dB
noise      pink noise (1/f above 50 Hz) added, RMS in dBFS, seeded      -80 .. -35 dBFS, 1 dB
codec      re-encoded with libopus, decoded as the receive path does   64 .. 6 kb/s (12), DTX off and on
loss       20 ms Opus packets dropped, concealed by libopus, seeded    1 .. 20 % (11), random, burst
pause      every narration gap stretched (whole ticks)                 up to +400 ms
=========  ==========================================================  =====================

Each direction of an axis is a :class:`Line`: its values ordered from the
unchanged recording outward (gain has two, ``down`` and ``up``). A line
holds up to the value before its first failure. Failures are judged by
:func:`clock.core.recommend.replay.judge`, the same count ``derive`` gives its own
recommendation's replay (so a new outcome there is one here), and a beat
the voice spoke in that the change hides under the floor (the judge calls
it silent) fails too (:func:`lost_beat`). Along a line, every value is
replayed in order from the unchanged recording outward until the first
failure (a step scan): failures are not nested (a quieter voice can lose a
dip inside a narration at -7 dB and pass again at -9 dB, where the dip and
its neighbours sink together), so no value inside a reported margin is
assumed to hold, each was replayed. The failing beat and its reason are the
judge's for that changed recording.

The corpus breaks where its first recording breaks: per recording the first
failing value along a line, then the one nearest the unchanged recording
over all recordings (the first recording in order on a tie).

Gain, noise and pause need no codec: gain and noise change the decoded
samples block by block before the level computation (:func:`apply_gain`,
:func:`add_noise`, with the noise from :class:`PinkNoise`, which streams),
pause stretches the unchanged level trace and shifts the event log
(:func:`stretch_gaps`: no decoding at all). The codec and loss transforms are in
:mod:`clock.io.transforms`.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .analysis import analyse
from .beats import Beat
from .check import CheckResult
from .events import EventLog
from .levels import LevelTrace
from .outcome import MISSED_ONSET, OUTPACED, PREMATURE
from .recommend.evidence import CorpusOutcome, Unsatisfied
from .times import clock_time

__all__ = [
    "AXES",
    "ROBUSTNESS",
    "UNCHANGED",
    "Failure",
    "Line",
    "LineMargin",
    "SettingStress",
    "StressResult",
    "add_noise",
    "apply_gain",
    "combine",
    "PinkNoise",
    "first_failure",
    "held_text",
    "lost_beat",
    "lines",
    "margin_line",
    "pink_noise",
    "recording_seed",
    "robust_score",
    "robustness_axes",
    "robustness_checks",
    "stretch_gaps",
]

#: The axes, in report order.
AXES = ("gain", "noise", "codec", "loss", "pause")
#: Pink noise is shaped 1/f above this frequency (Hz) and empty below.
PINK_LOW_HZ = 50.0
#: The longest stretch of the narration gaps (s).
MAX_PAUSE_S = 0.4
#: ``step`` (the default) and ``bisect`` search a line the same way, by a step scan (see the module notes);
#: ``bisect`` is kept as a name so that scripts that ask for it keep working.
SEARCHES = ("step", "bisect")
#: The codec line's bitrates (kb/s), each a re-encode: coarse where a voice keeps its band, every 1 kb/s around
#: 13 kb/s (where libopus narrows a mono voice from super-wideband to wideband).
CODEC_KBPS = (64.0, 48.0, 32.0, 24.0, 20.0, 16.0, 14.0, 13.0, 12.0, 10.0, 8.0, 6.0)
#: The loss line's percentages, each a decode of the one encode.
LOSS_PCT = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0)


@dataclass(frozen=True, slots=True)
class Line:
    """One direction of one axis: the values tried, from the unchanged recording outward.

    Attributes
    ----------
    axis : str
        One of :data:`AXES`.
    variant : str
        ``down``/``up`` (gain), ``pink`` (noise), ``dtx-off``/``dtx-on``
        (codec), ``random``/``burst`` (loss), ``stretch`` (pause).
    unit : str
        ``dB``, ``dBFS``, ``kb/s``, ``%``, ``ms``.
    values : tuple of float
        Ordered outward; the unchanged recording comes before the first.
    """

    axis: str
    variant: str
    unit: str
    values: tuple[float, ...]

    @property
    def name(self) -> str:
        """``axis`` or ``axis variant`` (``gain down``, ``codec dtx-on``)."""
        return self.axis if self.variant in ("pink", "stretch") else f"{self.axis} {self.variant}"


def lines(*, tick_s: float, axes: Sequence[str] = AXES) -> tuple[Line, ...]:
    """The lines of the issue's axes (pause in whole ticks of ``tick_s`` up to :data:`MAX_PAUSE_S`)."""
    unknown = [a for a in axes if a not in AXES]
    if unknown:
        raise InvalidParameterError(f"unknown axis {unknown[0]!r} (known: {', '.join(AXES)})")
    n_pause = int(math.floor(MAX_PAUSE_S / tick_s + 1e-9))
    every = {
        "gain": (
            Line("gain", "down", "dB", tuple(float(-g) for g in range(1, 19))),
            Line("gain", "up", "dB", tuple(float(g) for g in range(1, 13))),
        ),
        "noise": (Line("noise", "pink", "dBFS", tuple(float(x) for x in range(-80, -34))),),
        "codec": tuple(Line("codec", dtx, "kb/s", CODEC_KBPS) for dtx in ("dtx-off", "dtx-on")),
        "loss": tuple(Line("loss", mode, "%", LOSS_PCT) for mode in ("random", "burst")),
        "pause": (Line("pause", "stretch", "ms", tuple(round(k * tick_s * 1000, 1) for k in range(1, n_pause + 1))),),
    }
    return tuple(line for a in AXES if a in axes for line in every[a])


# --- the search along a line ----------------------------------------------------


def first_failure(n: int, fails: Callable[[int], bool], *, search: str = "step") -> int | None:
    """The index of the first failing value of a line of ``n`` values (None: every value holds).

    Every value is tried in order from the unchanged recording outward until
    one fails (``search`` is ``step`` or ``bisect``, both this step scan: see
    the module notes). ``fails(i)`` is called at most once per index, and
    never past the first failing one.
    """
    if search not in SEARCHES:
        raise InvalidParameterError(f"search must be one of {', '.join(SEARCHES)}, got {search!r}")
    return next((i for i in range(n) if fails(i)), None)


# --- results -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """The first beat that goes wrong on a line.

    Attributes
    ----------
    recording : str
    beat : int
        The beat's index in its recording, from 0 (as the JSON gives it);
        text numbers it from 1, as every view does.
    t_s : float
        Where to look, on the unchanged recording's timeline.
    outcome : str
        The judge's outcome for the beat on the changed recording: ``premature``,
        ``stalled`` or ``missed-onset`` (or a failure the judge adds), or
        ``silent`` for a spoken beat the change hides under the floor.
    threshold : str
        The threshold the change broke: ``quiet_s`` (a premature end),
        ``onset_timeout_s`` (a missed onset), ``floor`` (a stall: the level
        stayed above it, or a quiet under it was too short).
    reason : str
    """

    recording: str
    beat: int
    t_s: float
    outcome: str
    threshold: str
    reason: str


def failure_of(u: Unsatisfied, *, t_s: float | None = None) -> Failure:
    """A judged failing beat as a :class:`Failure` (``t_s`` mapped back to the unchanged timeline)."""
    threshold = {PREMATURE: "quiet_s", OUTPACED: "quiet_s", MISSED_ONSET: "onset_timeout_s"}.get(u.outcome, "floor")
    if u.outcome == MISSED_ONSET and u.unheard:
        threshold = "floor"  # (the floor heard none of the guide's speech)
    return Failure(u.recording, u.beat, u.t_s if t_s is None else t_s, u.outcome, threshold, u.reason)


#: The outcomes of a beat in which the clock hears no speech.
_UNSPOKEN = ("silent", "unheard")


def lost_beat(name: str, before: Sequence[Beat], after: Sequence[Beat], *, floor: float) -> Failure | None:
    """The first beat the voice spoke in (``before``) that the judge calls silent on the changed recording.

    ``before`` and ``after`` are :func:`clock.core.beats.beats` of the
    unchanged and the changed recording at one setting. The judge counts a
    beat without speech above the floor as silent, not failed; a change
    that hides a narration under the floor is a failure all the same (the
    clock gives up waiting while the guide speaks). ``t_s`` is the changed
    beat's terminal response (on the changed timeline).
    """
    for a, c in zip(before, after):
        if a.outcome not in _UNSPOKEN and c.outcome in _UNSPOKEN:
            reason = (
                f"the level never rises above the floor {floor:g} in the beat, "
                f"so the clock hears no speech where the recording as it is was {a.outcome}"
            )
            return Failure(name, c.index, c.terminal_s, c.outcome, "floor", reason)
    return None


@dataclass(frozen=True, slots=True)
class LineMargin:
    """How far one line holds, for one recording or the corpus.

    Attributes
    ----------
    axis, variant, unit : str
    holds_to : float or None
        The furthest value that holds (None: even the first value fails).
    first_failure : float or None
        The first value that fails (None: the whole range holds, or the
        recording fails unchanged).
    failure : Failure or None
        Its first failing beat (the unchanged recording's, when it fails as it is).
    range_end : float
        The last value of the line.
    margin_fraction : float
        The share of the line that holds (0: the first value fails; 1: all).
    fails_unchanged : bool
        The setting fails on the recording as it is: no margin at all.
    """

    axis: str
    variant: str
    unit: str
    holds_to: float | None
    first_failure: float | None
    failure: Failure | None
    range_end: float
    margin_fraction: float
    fails_unchanged: bool = False

    @property
    def name(self) -> str:
        """As :attr:`Line.name`."""
        return self.axis if self.variant in ("pink", "stretch") else f"{self.axis} {self.variant}"


#: The index of a line's first failure when the recording fails as it is.
UNCHANGED = -1


def line_margin(line: Line, index: int | None, failure: Failure | None) -> LineMargin:
    """The margin of ``line`` whose first failing value is ``line.values[index]`` (None: none fails).

    ``index`` :data:`UNCHANGED`: the recording fails as it is.
    """
    n = len(line.values)
    if index is None:
        return LineMargin(line.axis, line.variant, line.unit, line.values[-1], None, None, line.values[-1], 1.0)
    if index == UNCHANGED:
        return LineMargin(line.axis, line.variant, line.unit, None, None, failure, line.values[-1], 0.0, True)
    holds = line.values[index - 1] if index > 0 else None
    return LineMargin(
        line.axis, line.variant, line.unit, holds, line.values[index], failure, line.values[-1], index / n
    )


def _v(x: float, unit: str) -> str:
    """A value on a line with its unit (gain and pause signed)."""
    sign = "+" if unit in ("dB", "ms") and x > 0 else ""
    return f"{sign}{x:g} {unit}"


def held_text(m: LineMargin) -> str:
    """What a line holds, in its own terms: ``-7 .. 0 dB``, ``up to -53 dBFS``, ``down to 8 kb/s``."""
    if m.holds_to is None:
        return "nowhere: its first step fails"
    h = _v(m.holds_to, m.unit)
    if m.axis == "gain":
        return f"{m.holds_to:g} .. 0 dB" if m.variant == "down" else f"0 .. {h}"
    if m.axis == "codec":
        return f"down to {h}"
    return f"up to {h}"


def margin_line(m: LineMargin, *, where: bool = True) -> str:
    """``holds for gain down -7 .. 0 dB; first failure at -8 dB: rec:00:12.345: beat 2 premature (quiet_s): ...``.

    Without ``where``, the failing beat's recording and time are left out (a check line gives them).
    """
    f = m.failure
    if m.fails_unchanged:
        text = f"holds for {m.name} nowhere: the setting fails on the recording as it is"
        if f is not None:
            at = f"{f.recording}:{clock_time(f.t_s)}: " if where else ""
            text += f": {at}beat {f.beat + 1} {f.outcome} ({f.threshold}): {f.reason}"
        return text
    text = f"holds for {m.name} {held_text(m)}"
    if m.first_failure is None:
        return text + " (the whole range)"
    text += f"; first failure at {_v(m.first_failure, m.unit)}"
    if f is not None:
        at = f"{f.recording}:{clock_time(f.t_s)}: " if where else ""
        text += f": {at}beat {f.beat + 1} {f.outcome} ({f.threshold}): {f.reason}"
    return text


@dataclass(frozen=True, slots=True)
class SettingStress:
    """One setting's margins over a corpus.

    Attributes
    ----------
    label : str
        ``committed``, ``candidate`` or ``recommended``.
    floor, quiet_s, onset_timeout_s : float
    unchanged : CorpusOutcome
        The setting replayed over the recordings as they are.
    margins : tuple of LineMargin
        One per line, in :func:`lines` order (all zero when the unchanged
        recordings already fail).
    per_recording : tuple of tuple of LineMargin
        The same per recording, in corpus order.
    """

    label: str
    floor: float
    quiet_s: float
    onset_timeout_s: float
    unchanged: CorpusOutcome
    margins: tuple[LineMargin, ...]
    per_recording: tuple[tuple[LineMargin, ...], ...]

    @property
    def limiting(self) -> LineMargin | None:
        """The line with the smallest share held (the first in order on a tie); None without lines."""
        return min(self.margins, key=lambda m: m.margin_fraction) if self.margins else None


@dataclass(frozen=True, slots=True)
class StressResult:
    """``speechclock stress``: each setting's margins over the corpus.

    Attributes
    ----------
    recordings : tuple of str
        The recordings with beats that were replayed.
    settings : tuple of SettingStress
    search : str
        ``bisect`` or ``step``.
    seed : int
    """

    recordings: tuple[str, ...]
    settings: tuple[SettingStress, ...]
    search: str
    seed: int


def combine(line: Line, found: Sequence[tuple[int | None, Failure | None]]) -> LineMargin:
    """The corpus's margin on a line from each recording's first failing index (the nearest one wins)."""
    failing = [(i, k) for k, (i, _) in enumerate(found) if i is not None]
    if not failing:
        return line_margin(line, None, None)
    index, k = min(failing)
    return line_margin(line, index, found[k][1])


def robust_score(stress: SettingStress) -> tuple[float, ...]:
    """The shares held over the lines, smallest first: ``derive --prefer robust`` takes the largest.

    Compared in order: the widest smallest margin, then the next smallest on a tie.
    """
    return tuple(sorted(m.margin_fraction for m in stress.margins))


# --- the transforms that need no codec ------------------------------------------


def recording_seed(seed: int, name: str) -> int:
    """A recording's own seed: the run's seed and its name (the same in any order, serial or parallel)."""
    return (int(seed) * 1_000_003 + zlib.crc32(name.encode("utf-8"))) % 2**63


@functools.lru_cache(maxsize=8)
def _pink_filter(sample_rate_hz: int) -> tuple[NDArray[np.float64], float]:
    """:class:`PinkNoise`'s filter at a rate (second-order sections) and the scale that makes its RMS 1.

    The same for every seed: made once per rate (the scale filters a 4 s impulse); each noise takes a copy.
    """
    from scipy import signal

    rate = float(sample_rate_hz)
    top, ratio = min(0.4 * rate, 20000.0), 10.0 ** (1.0 / 3.0)
    poles = []
    f = PINK_LOW_HZ
    while f < top:
        poles.append(f)
        f *= ratio
    hz = np.asarray(poles)

    def warped(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return -2.0 * rate * np.tan(np.pi * x / rate)

    z, p, k = signal.bilinear_zpk(warped(hz * math.sqrt(ratio)), warped(hz), 1.0, rate)
    high = signal.butter(2, PINK_LOW_HZ, "highpass", fs=rate, output="sos")
    sos = np.vstack([high, signal.zpk2sos(z, p, k)])
    impulse = np.zeros(int(4 * rate))
    impulse[0] = 1.0
    h = signal.sosfilt(sos, impulse)
    return sos, 1.0 / float(np.sqrt(np.sum(h * h)))


class PinkNoise:
    """Seeded pink noise, as long as asked for, block by block: power 1/f above :data:`PINK_LOW_HZ`, RMS 1.

    White noise (``numpy.random.default_rng(seed)``, drawn in order) through
    a fixed filter: three pole-zero pairs per decade from 50 Hz to 0.4 of the
    rate (or 20 kHz), -3 dB per octave within 0.5 dB, after a second-order
    Butterworth high-pass at 50 Hz. Scaled by the filter's power gain, so
    its RMS is 1 in expectation (within 0.1 % over a minute). The samples
    are the same however the length is split into blocks.
    """

    def __init__(self, sample_rate_hz: int, *, seed: int) -> None:
        from scipy import signal

        sos, self._scale = _pink_filter(int(sample_rate_hz))
        self._sos = sos.copy()
        self._state = np.zeros((self._sos.shape[0], 2))
        self._rng = np.random.default_rng(seed)
        self._filter = signal.sosfilt

    def take(self, n: int) -> NDArray[np.float32]:
        """The next ``n`` samples."""
        if n <= 0:
            return np.zeros(0, np.float32)
        y, self._state = self._filter(self._sos, self._rng.standard_normal(n), zi=self._state)
        return (y * self._scale).astype(np.float32)


def pink_noise(n: int, sample_rate_hz: int, *, seed: int) -> NDArray[np.float32]:
    """The first ``n`` samples of :class:`PinkNoise` (RMS 1 in expectation), seeded."""
    return PinkNoise(sample_rate_hz, seed=seed).take(n)


def apply_gain(samples: NDArray[np.float32], gain_db: float) -> NDArray[np.float32]:
    """The samples scaled by ``gain_db`` and clipped to full scale (as the 16-bit receive path would)."""
    g = np.float32(10.0 ** (gain_db / 20.0))
    return np.clip(samples * g, np.float32(-1.0), np.float32(1.0))


def add_noise(samples: NDArray[np.float32], unit_noise: NDArray[np.float32], level_dbfs: float) -> NDArray[np.float32]:
    """The samples with ``unit_noise`` (RMS 1) added at an RMS of ``level_dbfs``, clipped to full scale."""
    scale = np.float32(10.0 ** (level_dbfs / 20.0))
    return np.clip(samples + unit_noise * scale, np.float32(-1.0), np.float32(1.0))


def stretch_gaps(
    trace: LevelTrace, events: EventLog, *, floor: float, extra_ticks: int
) -> tuple[LevelTrace, EventLog, Callable[[float], float]]:
    """Every narration gap (at ``floor``) made ``extra_ticks`` ticks longer: the trace and the log moved apart.

    A narration gap runs from a last word to the next onset inside a beat's
    narration (as :meth:`~clock.core.analysis.FloorAnalysis.gaps` counts
    them). Its middle tick is repeated ``extra_ticks`` times, and every
    event after it moves by that much.

    Returns
    -------
    trace, events : the stretched recording
    back : callable
        Maps a time on the stretched timeline to the unchanged one.
    """
    if extra_ticks < 0:
        raise InvalidParameterError(f"extra_ticks must be >= 0, got {extra_ticks}")
    a = analyse(trace, events, floor=floor)
    at = sorted(
        (int(w) + int(e)) // 2
        for b in a.beats
        if b.spoken and b.onset_tick is not None
        for w, e in zip(b.run_word[b.inner].tolist(), b.run_end[b.inner].tolist())
        if w >= b.onset_tick
    )
    if not at or extra_ticks == 0:
        return trace, events, lambda t: t
    cut = np.asarray(at, np.int64)
    idx = np.concatenate([np.arange(trace.n_ticks, dtype=np.int64), np.repeat(cut, extra_ticks)])
    order = np.argsort(idx, kind="stable")
    level = trace.level[idx[order]]
    n = level.size
    frames = trace.ticks.frames(np.arange(n, dtype=np.int64), trace.sample_rate_hz)
    stretched = replace(trace, frames=frames, level=level)
    tick_s = trace.tick_s
    starts = trace.t_s[cut]  # the repeats go in after these ticks; events after them move
    added = extra_ticks * tick_s

    def moved(t: float) -> float:
        return t + added * int(np.searchsorted(starts, t, side="left"))

    log = replace(events, events=tuple(replace(e, t_s=moved(e.t_s)) for e in events.events))
    new_starts = starts + added * np.arange(len(at))  # where each gap's repeat begins, stretched

    def back(t: float) -> float:
        k = int(np.searchsorted(new_starts, t, side="left"))
        if k and t <= new_starts[k - 1] + added:
            return float(starts[k - 1])  # inside an added stretch: where it was added
        return t - added * k

    return stretched, log, back


# --- [robustness]: what the team decided, as checks ----------------------------------

#: ``[robustness]`` keys: the lines each holds to, how (``below``: the first failure must lie below
#: ``sign * value``; else above it), and the value's bounds (the axis's range).
ROBUSTNESS: dict[str, tuple[tuple[str, ...], float, bool, float, float]] = {
    "min_gain_db": (("gain down",), -1.0, True, 0.0, 18.0),
    "min_gain_up_db": (("gain up",), 1.0, False, 0.0, 12.0),
    "max_noise_dbfs": (("noise",), 1.0, False, -80.0, -35.0),
    "min_bitrate_kbps": (("codec dtx-off", "codec dtx-on"), 1.0, True, 6.0, 64.0),
    "max_loss_pct": (("loss random", "loss burst"), 1.0, False, 0.0, 20.0),
    "min_pause_ms": (("pause",), 1.0, False, 0.0, 400.0),
}


def robustness_axes(required: dict[str, float]) -> tuple[str, ...]:
    """The axes a ``[robustness]`` table needs stressed, in :data:`AXES` order."""
    names = {line.split()[0] for key in required for line in ROBUSTNESS[key][0]}
    return tuple(a for a in AXES if a in names)


def robustness_checks(
    stress: SettingStress, recordings: Sequence[str], required: dict[str, float], *, all_names: Sequence[str] = ()
) -> list[CheckResult]:
    """One check per recording and line a ``[robustness]`` key asks for: whether the line holds that far.

    The check is ``robustness-<line>`` (``robustness-gain-down``,
    ``robustness-codec-dtx-on``); it fails when the recording's first
    failure on the line comes at or before the required value (a recording
    whose unchanged replay already fails has no margin). Recordings without
    beats (``all_names`` not in ``recordings``) are not applicable.
    """
    out: list[CheckResult] = []
    by_name = dict(zip(recordings, stress.per_recording))
    for name in list(all_names) or list(recordings):
        margins = {m.name: m for m in by_name.get(name, ())}
        for key, value in required.items():
            names, sign, below, _, _ = ROBUSTNESS[key]
            for line_name in names:
                check = "robustness-" + line_name.replace(" ", "-")
                m = margins.get(line_name)
                target = sign * value
                unit = m.unit if m is not None else ""
                expected = f"{key} = {value:g}: holds at {target:g} {unit}".rstrip()
                if m is None:
                    detail = "no beats to replay" if name not in by_name else f"{line_name} not stressed"
                    out.append(CheckResult(name, check, True, None, detail, expected, applicable=False))
                    continue
                f = m.first_failure
                passed = not m.fails_unchanged and (f is None or (f < target if below else f > target))
                detail = margin_line(m, where=False)
                t_s = m.failure.t_s if m.failure is not None and not passed else None
                out.append(CheckResult(name, check, passed, t_s, detail, expected, f, target, m.unit))
    return out
