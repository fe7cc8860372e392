"""Agreement between the levels a page logged and the levels of the recording.

Pure numpy. A page that logs its clock's readings (``clock.level`` lines,
:class:`clock.core.events.Reading`) can be checked against the recording: the
tool's level at each reading's frame should be the page's, bit for bit for a
lossless capture (an AudioWorklet on the analyser's source node), and within
the codec's accuracy for a ``MediaRecorder`` file.

Where a reading is
------------------
A reading's recording frame is its logged context frame minus the frame of
the recording's first sample (both from the log), or, when the log gives no
frames, its time times the rate. Readings whose analyser window reaches
before the recording's first sample (the analyser saw audio the recording
does not hold) or past its last are not compared.

A reading taken on the page's main thread (``polled``: the clock's poll path,
or capture.js's ``speechclockRead``) is logged at the context's frame, yet in
Chromium the window it read can end one render quantum later: the analyser's
window is written while a quantum renders and ``currentTime`` advances after
the render, so a read that lands in between holds the next quantum's window
(found out in headless Chromium: ``tests/web/test_page_clock.py``). Such a reading
that is not the recording's level at its frame but is, bit for bit, its level
one quantum later is compared there and counted (``n_ahead``): only a lossless
capture can show that, and only where the level changed between the quanta.
Every other reading, and every reading on the audio thread (the worklet
path), is compared at its frame.

The offset
----------
When the recording's start is uncertain (a ``MediaRecorder`` starts some
milliseconds after the page saw it start), the offset that best aligns the
readings with the recording is searched in render quanta (128 frames) within
``search_s``: the one with the smallest mean absolute difference in dB
(levels below -80 dBFS count as -80 dBFS). ``offset_s`` is added to the log's
times to put them on the recording's timeline
(:meth:`clock.core.events.EventLog.shifted`). Each reading is scored at its
frame: where most readings taken on the main thread hold the next quantum's
window, the offset can come out one quantum (2.7 ms at 48 kHz) later, within
a recorder file's own accuracy. (Scoring the nearer of the two quanta would
make every lossy reading fit two offsets a quantum apart.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .analyser import RENDER_QUANTUM_FRAMES
from .events import CaptureStart, Reading
from .levels import LevelTrace
from .ticks import Ticks

__all__ = ["MAX_SEARCH_S", "Agreement", "PageTrace", "agreement", "page_trace"]

#: The widest offset search (``[agreement] search_s``), in seconds: its work grows with the span.
MAX_SEARCH_S = 10.0

# Levels below this count as this in the offset search (-80 dBFS).
_DB_FLOOR = 1e-4
# At most this many readings are used to search the offset (evenly spaced).
_SEARCH_READINGS = 4000


@dataclass(frozen=True, slots=True)
class Agreement:
    """How the page's logged levels compare with the recording's.

    Attributes
    ----------
    n_readings : int
        ``clock.level`` readings in the log.
    n_compared : int
        Readings whose analyser window lies inside the recording.
    n_exact : int
        Compared readings equal to the tool's level bit for bit.
    max_diff : float or None
        Largest ``|logged - tool|`` (None when nothing was compared).
    p99_diff : float or None
        99th percentile of ``|logged - tool|``.
    worst_s : float or None
        Where the largest difference is (recording time).
    floor : float
        The floor the side-of-floor comparison used.
    n_floor_disagree : int
        Readings on one side of the floor in the log and on the other in the
        recording: ticks the two would decide differently.
    first_floor_disagree_s : float or None
    offset_s : float
        Seconds added to the log's times to put them on the recording's
        timeline (0 unless estimated).
    offset_estimated : bool
        The offset was searched (the recording's start is uncertain).
    start_exact : bool
        The log gives the recording's first sample to the frame.
    n_ahead : int
        Compared readings (``polled`` only) that are, bit for bit, the
        recording's level one render quantum after their frame and not the
        level at it: read while Chromium rendered that quantum.
    """

    n_readings: int
    n_compared: int
    n_exact: int
    max_diff: float | None
    p99_diff: float | None
    worst_s: float | None
    floor: float
    n_floor_disagree: int
    first_floor_disagree_s: float | None
    offset_s: float
    offset_estimated: bool
    start_exact: bool
    n_ahead: int = 0

    @property
    def exact(self) -> bool:
        """Every compared reading equals the tool's level bit for bit."""
        return self.n_compared > 0 and self.n_exact == self.n_compared


def _reading_quanta(readings: Sequence[Reading], rate: int, start: CaptureStart | None) -> NDArray[np.int64]:
    """Each reading's recording frame, in render quanta (rounded to the nearest quantum)."""
    frames = np.array(
        [
            r.frame
            if r.frame is not None and start is not None and start.sample_rate_hz == rate
            else int(round(r.t_s * rate))
            for r in readings
        ],
        dtype=np.int64,
    )
    return np.floor_divide(frames + RENDER_QUANTUM_FRAMES // 2, RENDER_QUANTUM_FRAMES)


def _db(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 20 * np.log10(np.maximum(x, _DB_FLOOR))


def _best_shift(
    tool: NDArray[np.float64], quanta: NDArray[np.int64], logged: NDArray[np.float64], lo: int, hi: int, search: int
) -> int:
    """The shift in quanta (|shift| <= search) with the smallest mean |dB| difference."""
    pick = np.linspace(0, quanta.size - 1, min(quanta.size, _SEARCH_READINGS)).round().astype(np.int64)
    q, want = quanta[pick], _db(logged[pick])
    tool_db = _db(tool)
    best, best_score = 0, np.inf
    for shift in sorted(range(-search, search + 1), key=abs):
        idx = q + shift
        ok = (idx >= lo) & (idx < hi)
        if ok.sum() < max(1, q.size // 2):
            continue
        score = float(np.mean(np.abs(tool_db[idx[ok]] - want[ok])))
        if score < best_score - 1e-12:
            best, best_score = shift, score
    return best


def agreement(
    quantum: LevelTrace,
    readings: Sequence[Reading],
    *,
    floor: float,
    start: CaptureStart | None = None,
    estimate_offset: bool | None = None,
    search_s: float = 1.0,
    polled: bool = False,
) -> Agreement | None:
    """Compare the page's logged readings with the recording's levels.

    Parameters
    ----------
    quantum : LevelTrace
        The recording's level every render quantum
        (``Ticks.every_frames(128, rate)``), with the page's analyser options.
    readings : sequence of Reading
        The log's ``clock.level`` readings.
    floor : float
        The clock's floor, for the readings that fall on different sides of it.
    start : CaptureStart, optional
        The log's ``recording.started`` (exact for a worklet capture).
    estimate_offset : bool, optional
        Search the offset that best aligns the readings (default: when the
        start is not exact).
    search_s : float
        The offset search spans ``±search_s`` seconds.
    polled : bool
        The readings were taken on the page's main thread: a reading that is
        the recording's level one render quantum after its frame, to the bit,
        and not its frame's, is compared there (see the module notes).
        Default: on the audio thread, at its frame.

    Returns
    -------
    Agreement or None
        None when the log holds no readings.

    Raises
    ------
    InvalidParameterError
        ``quantum`` is not a trace at every render quantum, or ``search_s`` is outside
        [0, :data:`MAX_SEARCH_S`] (the search's work grows with it).
    """
    if not readings:
        return None
    _check_quantum(quantum, search_s)
    rate = quantum.sample_rate_hz
    exact_start = start is not None and start.exact
    estimate = (not exact_start) if estimate_offset is None else estimate_offset
    logged = np.array([r.level for r in readings], dtype=np.float64)
    quanta = _reading_quanta(readings, rate, start)
    # Windows inside the recording: from the quantum that holds a whole window to the last.
    lo = -(-quantum.options.fft_size // RENDER_QUANTUM_FRAMES)
    hi = quantum.n_ticks
    shift = 0
    if estimate and hi > lo:
        shift = _best_shift(quantum.level, quanta, logged, lo, hi, int(search_s * rate / RENDER_QUANTUM_FRAMES))
    offset_s = shift * RENDER_QUANTUM_FRAMES / rate
    found = _compare(quantum, logged, quanta + shift, (lo, hi), floor=floor, polled=polled)
    return Agreement(
        n_readings=len(readings), offset_s=offset_s, offset_estimated=estimate, start_exact=exact_start, **found
    )


def _check_quantum(quantum: LevelTrace, search_s: float) -> None:
    """Raise InvalidParameterError where ``quantum`` is not a trace at every render quantum, or ``search_s`` is out
    of bounds."""
    if quantum.n_ticks and not np.array_equal(
        quantum.frames, np.arange(quantum.n_ticks, dtype=np.int64) * RENDER_QUANTUM_FRAMES
    ):
        raise InvalidParameterError("agreement needs the level at every render quantum (128 frames)")
    if not (0 <= search_s <= MAX_SEARCH_S):
        raise InvalidParameterError(f"search_s must be in [0, {MAX_SEARCH_S:g}] s, got {search_s!r}")


def _compare(
    quantum: LevelTrace,
    logged: NDArray[np.float64],
    idx: NDArray[np.int64],
    inside: tuple[int, int],
    *,
    floor: float,
    polled: bool,
) -> dict[str, Any]:
    """The readings ``logged`` against the recording's levels at quanta ``idx`` (those inside ``[lo, hi)``): the
    :class:`Agreement` fields of the comparison (a polled reading one quantum ahead, to the bit, compared there)."""
    tool, (lo, hi) = quantum.level, inside
    rate = quantum.sample_rate_hz
    ok = (idx >= lo) & (idx < hi)
    n = int(ok.sum())
    if n == 0:
        return dict(
            n_compared=0, n_exact=0, max_diff=None, p99_diff=None, worst_s=None, floor=floor, n_floor_disagree=0,
            first_floor_disagree_s=None,
        )  # fmt: skip
    got, want = tool[idx[ok]], logged[ok]
    diff = np.abs(got - want)
    n_ahead = 0
    if polled:
        nxt = idx[ok] + 1
        later = np.where(nxt < hi, tool[np.minimum(nxt, hi - 1)], np.nan)
        ahead = (later == want) & (got != want)  # NaN (no next quantum) compares False
        n_ahead = int(np.count_nonzero(ahead))
        got, diff = np.where(ahead, later, got), np.where(ahead, 0.0, diff)
    at_s = idx[ok] * RENDER_QUANTUM_FRAMES / rate
    k = int(np.argmax(diff))
    sides = (got > floor) != (want > floor)
    return dict(
        n_compared=n,
        n_exact=int(np.count_nonzero(got == want)),
        max_diff=float(diff[k]),
        p99_diff=float(np.percentile(diff, 99)),
        worst_s=float(at_s[k]),
        floor=floor,
        n_floor_disagree=int(np.count_nonzero(sides)),
        first_floor_disagree_s=float(at_s[np.argmax(sides)]) if sides.any() else None,
        n_ahead=n_ahead,
    )


@dataclass(frozen=True, slots=True)
class PageTrace(LevelTrace):
    """The recording's levels at the page's own ticks: the frames of its logged readings.

    A :class:`LevelTrace` whose tick times are the readings' times (the page's
    timer fires at irregular frames) instead of ``k * period``; the replay
    (:func:`clock.core.replay.replay_ticks`) then decides at exactly the ticks
    the page's clock decided at. ``ticks`` keeps the nominal cadence.
    """

    times_s: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        LevelTrace.__post_init__(self)
        times = np.asarray(self.times_s if self.times_s is not None else np.zeros(0), dtype=np.float64)
        times.flags.writeable = False
        object.__setattr__(self, "times_s", times)
        if times.shape != self.level.shape:
            raise InvalidParameterError(f"times_s must have the levels' shape, got {times.shape}")

    @property
    def t_s(self) -> NDArray[np.float64]:  # type: ignore[override]
        """The page's tick times (seconds on the recording's timeline)."""
        assert self.times_s is not None
        return self.times_s


def page_trace(
    quantum: LevelTrace,
    readings: Sequence[Reading],
    *,
    start: CaptureStart | None = None,
    ticks: Ticks | None = None,
) -> PageTrace:
    """The recording's levels at the frames of the page's readings (see :class:`PageTrace`).

    Parameters
    ----------
    quantum : LevelTrace
        The recording's level every render quantum.
    readings : sequence of Reading
        The log's ``clock.level`` readings: to replay the page's clock, one per
        tick of it (``levelEvery`` 1).
    start : CaptureStart, optional
    ticks : Ticks, optional
        The nominal cadence to record in the trace.

    Returns
    -------
    PageTrace
        One tick per reading whose window lies inside the recording, in order.
    """
    rate = quantum.sample_rate_hz
    quanta = _reading_quanta(readings, rate, start)
    lo = -(-quantum.options.fft_size // RENDER_QUANTUM_FRAMES)
    ok = (quanta >= lo) & (quanta < quantum.n_ticks)
    idx = quanta[ok]
    return PageTrace(
        idx * RENDER_QUANTUM_FRAMES,
        quantum.level[idx],
        rate,
        ticks or Ticks(),
        quantum.metric,
        quantum.options,
        times_s=idx * RENDER_QUANTUM_FRAMES / rate,
    )
