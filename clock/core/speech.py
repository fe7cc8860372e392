"""Where the guide spoke, told without a floor: the level's two-mode split, labels, and the room's noise bumps.

Pure numpy. A floor decides what the page's clock hears; it cannot decide
where the guide spoke, or every judgement of a floor would be the floor's
own. So the judge takes speech from here:

* **labels** (ground truth, an Audacity label track), where a recording has
  them;
* else the **split**: Otsu's threshold on the log levels of the ticks above
  digital silence (speech and the room are two modes), runs above it joined
  across dips shorter than 0.3 s. tests/core/test_noise_beds.py holds it to
  constructions with pink and white beds from -65 to -30 dBFS. Where the
  voice's quiet words reach into a pink bed's slow swings (a -36 dBFS bed
  under a voice at -26 dBFS), the split takes some swings for speech: that
  is where it is known to be fooled.

**Noise bumps.** A floor inside a noise bed hears some of the bed: the
page's clock counts each such tick as sound (its quiet count starts again),
but it is no word of the guide's. :func:`noise_bumps` marks the ticks a
floor may hear that are the room's: away from the split's speech ticks (more
than ``GUARD_BEFORE_S`` and a window before one, ``BUMP_AFTER_S`` and two windows
after one; a swing
of the bed above the split too short to hold an analyser window is no
speech tick) and within ``CLEAR_DB`` of the room's median level. A recording whose room is digital
silence (its silence's median reads exactly 0) has none: every tick a floor
hears there is the guide's.

**A log's guide.** What every floor's analysis of a log reads of the guide (:func:`log_guide`: the noise bumps
and where the guide made sound) is found once per trace and kept with the log; :func:`spoke_in` says whether the
guide made sound in each beat's span.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .events import EventLog, Label
from .levels import LevelTrace
from .segments import runs

__all__ = [
    "CLEAR_DB",
    "GUARD_AFTER_S",
    "GUARD_BEFORE_S",
    "TickClasses",
    "classify",
    "clear_level",
    "guide_sound",
    "log_guide",
    "log_noise_bumps",
    "noise_bumps",
    "running_count",
    "spoke_in",
]

#: Silence keeps this far from speech: before an utterance, and after it (tails).
GUARD_BEFORE_S, GUARD_AFTER_S = 0.1, 0.5
#: A bump is at least this far, and two analyser windows, after the guide's last speech tick.
BUMP_AFTER_S = 0.1
#: A recording's clear floor stands this far (dB) over the median of its silence: over a steady bed's swings.
CLEAR_DB = 12.0
#: A bed's reach over its median: its p99 over its median is about 1.42 times its median over its p5 (normal in dB).
BED_REACH = 1.42
#: And this much more (dB).
BED_MARGIN_DB = 3.0
#: Runs above the split closer than this are one utterance.
JOIN_S = 0.3


@dataclass(frozen=True, slots=True)
class TickClasses:
    """Which ticks of one trace are speech and which are silence.

    Attributes
    ----------
    speech, silence : ndarray of bool, shape (n_ticks,)
    method : {"labels", "split"}
    split_level : float or None
        The two-mode split, when used.
    """

    speech: NDArray[np.bool_]
    silence: NDArray[np.bool_]
    method: str
    split_level: float | None


def otsu_log_split(levels: NDArray[np.float64]) -> float | None:
    """Otsu's threshold on log10 of positive levels (None when fewer than 2 distinct values)."""
    logs = np.log10(levels[levels > 0])
    if logs.size < 2 or logs.min() == logs.max():
        return None
    hist, edges = np.histogram(logs, bins=256)
    centres = (edges[:-1] + edges[1:]) / 2
    w0 = np.cumsum(hist)
    w1 = w0[-1] - w0
    s0 = np.cumsum(hist * centres)
    m0 = s0 / np.maximum(w0, 1)
    m1 = (s0[-1] - s0) / np.maximum(w1, 1)
    k = int(np.argmax(w0 * w1 * (m0 - m1) ** 2))
    return float(10 ** edges[k + 1])


def near(mask: NDArray[np.bool_], before: int, after: int) -> NDArray[np.bool_]:
    """Ticks within ``before`` ticks before, or ``after`` ticks after, a True tick.

    One running count, padded so that tick ``k`` reads it at ``k - after`` and ``k + before + 1`` by slicing (no
    index arrays: hours of ticks stay a few bytes each).
    """
    n = mask.size
    count = np.cumsum(mask, dtype=np.int32)
    padded = np.zeros(after + 1 + n + before, np.int32)
    padded[after + 1 : after + 1 + n] = count
    padded[after + 1 + n :] = count[-1] if n else 0
    return padded[after + before + 1 : after + before + 1 + n] > padded[:n]


def _bed_reach(quiet: NDArray[np.float64]) -> float:
    """How high a noise bed's own swings reach, from the ticks taken for silence: ``BED_REACH`` times the spread of
    its lower half over its median (in dB), and ``BED_MARGIN_DB`` more; 0 where the room is digital silence.

    The lower half, because the bed's loudest swings sit near the speech the split found and so are not among the
    silence ticks; a bed's level (in dB) swings about as far above its median as below it.
    """
    if not quiet.size:
        return 0.0
    median, low = np.percentile(quiet, [50.0, 5.0])
    if low <= 0:
        return 0.0
    spread_db = 20 * math.log10(median / low)
    return float(median * 10 ** ((BED_REACH * spread_db + BED_MARGIN_DB) / 20))


def classify(trace: LevelTrace, *, labels: Sequence[Label] | None = None, speech_range_db: float = 20.0) -> TickClasses:
    """Tell speech ticks from silence ticks without a floor, over the whole trace (see the module notes).

    Speech ticks are those whose analyser window lies inside an utterance (a
    label, or a run above the split) and within ``speech_range_db`` of its
    median; silence ticks are those at least the guards away from one, and
    every tick that reads exactly 0.
    """
    t = trace.t_s
    level = trace.level
    window_s = trace.options.fft_size / trace.sample_rate_hz
    n = trace.n_ticks
    zero = level == 0.0
    groups: list[NDArray[np.int64]] = []
    if labels:
        method, split = "labels", None
        touched = np.zeros(n, bool)
        for lab in labels:
            touched |= (t + GUARD_BEFORE_S > lab.start_s) & (t - window_s - GUARD_AFTER_S < lab.end_s)
            groups.append(np.flatnonzero((t - window_s >= lab.start_s) & (t <= lab.end_s)))
        silence = ~touched | zero
    else:
        method = "split"
        split = otsu_log_split(level)
        above = level > split if split is not None else ~zero
        tick = trace.tick_s
        silence = ~near(above, math.ceil(GUARD_BEFORE_S / tick), math.ceil(GUARD_AFTER_S / tick)) | zero
        reach = _bed_reach(level[silence])
        if split is not None and reach > split:
            # The two modes overlap: the bed's own swings reach over the split. Speech stands over the bed's reach.
            split = reach
            above = level > split
            silence = ~near(above, math.ceil(GUARD_BEFORE_S / tick), math.ceil(GUARD_AFTER_S / tick)) | zero
        # Runs above the split, joined across dips shorter than JOIN_S, are the utterances.
        merged: list[list[int]] = []
        for a, b in runs(above).tolist():
            if merged and t[a] - t[merged[-1][1]] < JOIN_S:
                merged[-1][1] = b
            else:
                merged.append([a, b])
        # As with labels, keep the ticks whose window lies inside the utterance:
        # a run starts when the window first reaches speech and ends when it leaves.
        starts = np.searchsorted(t, [t[a] + window_s for a, _ in merged], side="left")
        ends = np.searchsorted(t, [t[b] - window_s for _, b in merged], side="right")
        groups = [np.arange(a, b) for a, b in zip(starts.tolist(), ends.tolist())]
    speech = np.zeros(n, bool)
    ratio = 10 ** (-speech_range_db / 20)
    for idx in groups:
        if idx.size == 0:
            continue
        vals = level[idx]
        positive = vals[vals > 0]
        if positive.size == 0:
            continue
        speech[idx[vals >= np.median(positive) * ratio]] = True
    speech &= ~zero
    return TickClasses(speech, silence & ~speech, method, split)


def _room_median(trace: LevelTrace, classes: TickClasses) -> float:
    """The median level of the ticks taken for silence (0 without any)."""
    quiet = trace.level[classes.silence]
    return float(np.median(quiet)) if quiet.size else 0.0


def clear_level(room_median: float) -> float:
    """The room's clear floor: ``CLEAR_DB`` over ``room_median``, the median level of its silence (0 where the room
    is digital silence)."""
    return room_median * 10 ** (CLEAR_DB / 20)


def running_count(mask: NDArray[np.bool_]) -> NDArray[np.int32]:
    """The running count of ``mask``'s true ticks, from 0 and one longer than it: a span ``[a, b)`` holds one where
    ``count[b] > count[a]`` (:func:`spoke_in`)."""
    return np.concatenate([[0], np.cumsum(mask, dtype=np.int32)])


def guide_sound(trace: LevelTrace, classes: TickClasses | None = None) -> NDArray[np.bool_]:
    """The ticks where the guide made sound, whatever a floor hears: the split's speech, and every tick over the
    room's clear floor (``CLEAR_DB`` over its median; over 0 where the room is digital silence)."""
    classes = classify(trace) if classes is None else classes
    return classes.speech | (trace.level > clear_level(_room_median(trace, classes)))


def noise_bumps(trace: LevelTrace, classes: TickClasses | None = None) -> NDArray[np.bool_] | None:
    """The ticks a floor may hear that are the room's, not the guide's (see the module notes); None where the
    room is digital silence (no tick is a bump)."""
    classes = classify(trace) if classes is None else classes
    if not classes.silence.any():
        return None
    median = _room_median(trace, classes)
    if median == 0.0:
        return None
    tick, window_s = trace.tick_s, trace.options.fft_size / trace.sample_rate_hz
    # (a speech tick's window lies inside its utterance: the utterance began up to a window before it, and a window
    # after its last speech tick the analyser still hears its tail)
    before, after = GUARD_BEFORE_S + window_s, BUMP_AFTER_S + 2 * window_s
    guarded = near(classes.speech, math.ceil(before / tick), math.ceil(after / tick))
    return ~guarded & (trace.level <= clear_level(median))


def log_guide(trace: LevelTrace, events: EventLog) -> tuple[NDArray[np.bool_] | None, NDArray[np.int32]]:
    """Where the guide spoke, whatever the floor (:func:`classify`), found once per trace and kept with the
    log: the trace's noise bumps, and the running count of the ticks where the guide made sound (from 0, one
    longer than the trace: a span ``[a, b)`` holds its sound where ``count[b] > count[a]``)."""

    def make() -> tuple[NDArray[np.float64], NDArray[np.bool_] | None, NDArray[np.int32]]:
        classes = classify(trace)
        sound = running_count(guide_sound(trace, classes))
        return trace.level, noise_bumps(trace, classes), sound

    found = events.shared("guide", make, valid=lambda b: b[0] is trace.level)
    return found[1], found[2]


def log_noise_bumps(trace: LevelTrace, events: EventLog) -> NDArray[np.bool_] | None:
    """The trace's noise bumps (:func:`clock.core.speech.noise_bumps`; None where the room is digital silence), as
    the analyses of this log found them (found once, kept with the log)."""
    return log_guide(trace, events)[0]


def spoke_in(sound: NDArray[np.int32], k0: Any, kb: Any) -> Any:
    """Whether the guide made sound in each span ``[k0, kb)`` (:func:`log_guide`'s running count)."""
    n = sound.size - 1
    return sound[np.clip(kb, 0, n)] > sound[np.clip(k0, 0, n)]
