"""Other endpointers on the same beats: each one tuned and judged by the level clock's own replay.

Pure numpy. An endpointer's frame scores become speech decisions on the
clock's tick grid, replayed as the level clock is (:mod:`clock.core.decisions`),
and each beat is judged against a reference (:mod:`clock.core.reference`):
wait for onset after the terminal response, then end after a silence
duration. This module tunes each contestant and judges it.

**Tuning** (:func:`tune`, the same for every contestant, the level clock
among them): a grid of its threshold (the level clock's floor in 1 dB steps
about derive's floor, Silero's probability, webrtcvad's mode, the energy
detector's level in dB) by the quiet times of :data:`QUIET_LADDER_S`, every
quiet time of a threshold decided at once (``decide_quiets``). Of the
settings with the fewest failing beats, the best by the one margin policy
derive's grid placement ranks by (:mod:`clock.core.recommend.margin`;
``quiet_margin_s`` along the quiet time, ``floor_margin_db`` along a
threshold in dB: the floor and the energy level; each measured from the
region's last setting before one that fails more): one that no worse
setting comes within both margins of; else one that keeps each margin along
its axes, or stands at the centre of a run too narrow for it; else any.
Then the one with the least mean added latency, then the least quiet time.

**The reference** (:class:`clock.core.reference.Reference`) is not a contestant: the recording's
labels (each extended by the analyser's window, which hears a word that
long), else its speech by a two-mode split of its level (Otsu's threshold on
the log-levels, the floor-free split derive tells speech from noise with),
runs joined across dips shorter than :data:`REFERENCE_JOIN_S` and kept when
at least :data:`REFERENCE_MIN_S` long. Against it, a beat is

``premature``
    the endpointer declared the end, and the reference has speech after
    that, within the span;
``stalled``
    the reference has speech, and the endpointer did not declare the end
    before the span's bound, where that is not the page's ``end``;
``outpaced``, ``aborted``
    the reference has speech, the page's ``end`` bounds the span, and the
    endpointer did not declare the end before it: as
    :meth:`clock.core.beat_analysis.BeatAnalysis.undone` judges it on the
    reference's beats, ``aborted`` (neither right nor a failure) when the
    reference speaks at the bound's tick or its last word is closer to the
    ``end`` than ``P``, the longest narration pause of the reference over
    the recordings compared together
    (:func:`clock.core.analysis.narration_pause_s`), else ``outpaced`` (not a
    failure either: the guide had finished, and the visitor did not wait for
    the endpointer);
``missed-onset``
    the reference has speech, and it never heard the guide start;
``silent``
    the reference has no speech in the span; ``unheard``: no tick of the
    beat's life.

**Added latency** is the declaration minus the reference's last word, over
the beats ended right.

**Many beats** (:func:`clock.core.reference.prepare`): a terminal response whose life holds no
tick (the next one supersedes it first) is unheard for every contestant;
only the beats the clock hears, and the terminal that bounds each, are
analysed, and only a beat with speech in its life is replayed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from .analysis import FloorAnalysis, analyse, narration_pause_s
from .decide import decide_quiets
from .decisions import DECISION_FLOOR, FrameScores, decisions_trace
from .model import Margins, Observation
from .outcome import (
    FAILURES,
    MISSED_ONSET,
    OK,
    OUTCOMES,
    PREMATURE,
    SILENT,
    UNHEARD,
    undone_against_reference,
)
from .recommend.margin import choose_setting
from .reference import Prepared, prepare
from .tally import Tally

__all__ = [
    "LEVEL_CLOCK",
    "LEVEL_STEPS_DB",
    "QUIET_LADDER_S",
    "EndpointerResult",
    "compare_endpointers",
    "level_floors",
    "tune",
]

#: The level clock's name among the endpointers.
LEVEL_CLOCK = "level"
#: The quiet times every endpointer's silence duration is chosen from (0.05 s steps up to 6 s).
QUIET_LADDER_S = tuple(round(0.05 * k, 2) for k in range(1, 121))
#: The level clock's floors: derive's floor and 1 dB steps up to 18 dB either side.
LEVEL_STEPS_DB = tuple(range(-18, 19))

#: Threshold kinds whose unit is dB (``floor_margin_db`` holds along them).
_DB_KINDS = ("floor", "energy_db")
_CODE = {name: i for i, name in enumerate(OUTCOMES)}
_FAIL_CODES = np.array([_CODE[x] for x in FAILURES], np.int8)


@dataclass(frozen=True, slots=True)
class _Judged:
    """One recording at one threshold, every quiet time: outcome codes (n_beats, n_quiets) and added latency."""

    codes: NDArray[np.int8]
    latency_s: NDArray[np.float64]


def _judge(
    p: Prepared, a: FloorAnalysis, quiets_s: Sequence[float], onset_timeout_s: float, *, narration_pause_s: float
) -> _Judged:
    """Every beat of ``p`` against the reference, for each quiet time (see the module notes).

    ``narration_pause_s`` is ``P`` of the reference over the recordings compared together.
    """
    n_b, n_q = len(a.beats), len(quiets_s)
    codes = np.full((n_b, n_q), _CODE[UNHEARD], np.int8)
    latency = np.full((n_b, n_q), np.nan)
    started = np.array([b.start_tick is not None for b in a.beats], bool) & p.heard
    quiet_beats = p.heard & ~started
    codes[quiet_beats & ~p.has_speech] = _CODE[SILENT]
    codes[quiet_beats & p.has_speech] = _CODE[MISSED_ONSET]
    live = np.flatnonzero(started)
    if live.size == 0:
        return _Judged(codes, latency)
    d = decide_quiets(
        # A subset of the beats: the analysis's index of its active ones no longer applies. Where the guide spoke is
        # the reference's here (``p.has_speech``), not the contestant's decisions' (a missed onset is set above).
        replace(
            a,
            beats=tuple(replace(a.beats[i], guide_spoke=False) for i in live.tolist()),
            active=None,
            unheard=None,
            guide_spoke=None,
        ),  # fmt: skip
        quiets_s=quiets_s,
        onset_timeout_s=onset_timeout_s,
        narration_pause_s=narration_pause_s,
    )
    own, declared = d.outcome, d.declared_tick
    has = p.has_speech[live][:, None]
    last = p.last_word_s[live][:, None]
    bound = p.bound_s[live][:, None]
    at = np.where(declared >= 0, a.t_s[np.maximum(declared, 0)], np.inf)
    # Not declared before the bound: the one outcome judge on the reference's beat says how (stalled,
    # or, where the page's end bounds it, aborted while the reference spoke or outpaced after it finished).
    ref = p.reference.beats
    undone = np.array([_CODE[ref[i].undone(narration_pause_s)] for i in live.tolist()], np.int8)[:, None]
    room = np.array([ref[i].room_s for i in live.tolist()], np.float64)[:, None]
    undone = undone_against_reference(undone, room, at, np.asarray(quiets_s, np.float64))
    out = np.where(at >= bound, undone, np.where(last > at, _CODE[PREMATURE], _CODE[OK])).astype(np.int8)
    missed = (own == _CODE[SILENT]) | (own == _CODE[MISSED_ONSET])
    out = np.where(missed, _CODE[MISSED_ONSET], out)
    out = np.where(has, out, _CODE[SILENT]).astype(np.int8)
    codes[live] = out
    latency[live] = np.where(out == _CODE[OK], at - last, np.nan)
    return _Judged(codes, latency)


def _analysis(p: Prepared, scores: FrameScores | None, threshold: float | None, j: int) -> FloorAnalysis:
    """The contestant's beats at threshold ``j`` (the level clock: at the floor ``threshold``)."""
    if scores is None:
        assert threshold is not None
        return analyse(p.trace, p.events, floor=threshold)
    trace = decisions_trace(p.trace, scores.speech(j), frame_len=scores.frame_len, rate_hz=scores.rate_hz)
    return analyse(trace, p.events, floor=DECISION_FLOOR)


def _choose(
    failures: NDArray[np.int64],
    mean_latency: NDArray[np.float64],
    quiets_s: NDArray[np.float64],
    thresholds_db: NDArray[np.float64] | None,
    margins: Margins,
) -> tuple[int, int]:
    """The setting (threshold index, quiet index) by the one margin policy
    (:func:`clock.core.recommend.margin.choose_setting`), then the least mean added latency, then the least quiet
    time."""

    def key(j: int, q: int) -> tuple[float, float, float]:
        lat = mean_latency[j, q]
        return (float(lat) if np.isfinite(lat) else math.inf, float(quiets_s[q]), float(j))

    return choose_setting(failures, quiets_s, thresholds_db, margins, tiebreak=key)


@dataclass(frozen=True, slots=True)
class EndpointerResult:
    """One endpointer at its tuned setting, over the corpus.

    Attributes
    ----------
    name : str
    threshold_kind : str
        ``floor``, ``probability``, ``mode``, ``energy_db`` or ``fixed``.
    threshold : float or None
        Its detection threshold (tuned; None when it has none).
    quiet_s : float
        Its silence duration (tuned).
    n_settings : int
        The settings replayed (thresholds by quiet times).
    tally : Tally
        How the beats ended at its tuned setting, against the reference:
        every beat of the recordings, those the clock never hears
        ``unheard`` (not in ``n_beats``); ``n_failed``: beats with a failing
        outcome (:data:`clock.core.outcome.FAILURES`: premature, stalled,
        missed onset).
    added_latency_median_s, added_latency_p95_s : float or None
        After the reference's last word, over the beats it ended right.
    cpu_s_per_hour : float or None
        CPU seconds the detector took per hour of audio, at its tuned
        threshold (None: not measured).
    narration_pause_s : float
        ``P``: the longest narration pause of the reference over the
        recordings compared together (the same for every contestant), which
        tells an aborted beat from an outpaced one.
    """

    #: Its output's fields, in order (:func:`clock.core.tally.record`): its own, and its tally's counts.
    RECORD: ClassVar[tuple[str, ...]] = (
        "name", "threshold_kind", "threshold", "quiet_s", "n_settings", "n_beats", "n_ok", "n_premature",
        "n_stalled", "n_outpaced", "n_missed_onset", "n_silent", "n_aborted", "added_latency_median_s",
        "added_latency_p95_s", "cpu_s_per_hour", "n_failed", "narration_pause_s",
    )  # fmt: skip

    name: str
    threshold_kind: str
    threshold: float | None
    quiet_s: float
    n_settings: int
    tally: Tally
    added_latency_median_s: float | None
    added_latency_p95_s: float | None
    cpu_s_per_hour: float | None
    narration_pause_s: float


def tune(
    prepared: Sequence[Prepared],
    scores: Sequence[FrameScores] | None,
    *,
    name: str,
    kind: str,
    thresholds: Sequence[float | None],
    onset_timeout_s: float,
    margins: Margins,
    cpu_s: float | None = None,
    quiets_s: Sequence[float] = QUIET_LADDER_S,
) -> EndpointerResult:
    """One contestant tuned over its thresholds by ``quiets_s`` and judged at the chosen setting.

    Parameters
    ----------
    prepared : sequence of Prepared
        The recordings (:func:`prepare`), compared together: ``P`` is the
        longest narration pause of their references.
    scores : sequence of FrameScores, or None
        Per recording, the endpointer's scores; None for the level clock
        (``thresholds`` are then its floors).
    name, kind : str
    thresholds : sequence of float or None
    onset_timeout_s : float
    margins : Margins
        ``quiet_margin_s`` and ``floor_margin_db`` (see the module notes).
    cpu_s : float, optional
        The level clock's CPU seconds (an endpointer's come with its scores).
    quiets_s : sequence of float
    """
    q = np.asarray(quiets_s, np.float64)
    failures, mean = _grid(prepared, scores, thresholds, quiets_s, onset_timeout_s)
    in_db: NDArray[np.float64] | None = None
    if kind in _DB_KINDS and len(thresholds) > 1:
        values = np.array(thresholds, np.float64)
        in_db = 20 * np.log10(values) if kind == "floor" else values
    j, k = _choose(failures, mean, q, in_db, margins)
    tally, lat = _judged_at(prepared, scores, thresholds[j], j, float(q[k]), onset_timeout_s)
    audio_s = sum(p.audio_s for p in prepared)
    if scores is not None:
        cpu_s = sum(s.cpu_at(j) for s in scores)
    per_hour = None if cpu_s is None else (cpu_s * 3600.0 / audio_s if audio_s > 0 else 0.0)
    return EndpointerResult(
        name=name,
        threshold_kind=kind,
        threshold=thresholds[j],
        quiet_s=float(q[k]),
        n_settings=len(thresholds) * q.size,
        tally=tally,
        added_latency_median_s=float(np.median(lat)) if lat.size else None,
        added_latency_p95_s=float(np.percentile(lat, 95)) if lat.size else None,
        cpu_s_per_hour=per_hour,
        narration_pause_s=narration_pause_s([p.reference for p in prepared]),
    )


def _grid(
    prepared: Sequence[Prepared],
    scores: Sequence[FrameScores] | None,
    thresholds: Sequence[float | None],
    quiets_s: Sequence[float],
    onset_timeout_s: float,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Every setting of the grid (thresholds by quiet times): its failing beats, and its mean added latency over the
    beats it ends right (NaN where it ends none right)."""
    n_t, q = len(thresholds), np.asarray(quiets_s, np.float64)
    failures = np.zeros((n_t, q.size), np.int64)
    lat_sum = np.zeros((n_t, q.size))
    n_ok = np.zeros((n_t, q.size), np.int64)
    for j, th in enumerate(thresholds):
        for r, p in enumerate(prepared):
            a = _analysis(p, None if scores is None else scores[r], th, j)
            found = _judge(p, a, quiets_s, onset_timeout_s, narration_pause_s=p.reference.narration_pause_s)
            failures[j] += np.isin(found.codes, _FAIL_CODES).sum(axis=0)
            ok = found.codes == _CODE[OK]
            n_ok[j] += ok.sum(axis=0)
            lat_sum[j] += np.where(ok, found.latency_s, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n_ok > 0, lat_sum / np.maximum(n_ok, 1), np.nan)
    return failures, mean


def _judged_at(
    prepared: Sequence[Prepared],
    scores: Sequence[FrameScores] | None,
    threshold: float | None,
    j: int,
    quiet_s: float,
    onset_timeout_s: float,
) -> tuple[Tally, NDArray[np.float64]]:
    """The chosen setting judged: the tally of its beats (a beat the clock never hears is unheard), and the added
    latency of each it ends right."""
    tally = Tally.of_codes([])
    latencies = []
    for r, p in enumerate(prepared):
        a = _analysis(p, None if scores is None else scores[r], threshold, j)
        found = _judge(p, a, [quiet_s], onset_timeout_s, narration_pause_s=p.reference.narration_pause_s)
        codes = found.codes[:, 0]
        tally += Tally.of_codes(np.concatenate([codes, np.full(p.n_dropped, _CODE[UNHEARD])]))
        latencies.append(found.latency_s[codes == _CODE[OK], 0])
    return tally, np.concatenate(latencies) if latencies else np.zeros(0)


def level_floors(floor: float) -> tuple[float, ...]:
    """The level clock's floors: ``floor`` and :data:`LEVEL_STEPS_DB` about it (within (0, 1))."""
    out = {float(floor)} | {float(f"{floor * 10 ** (k / 20):.3g}") for k in LEVEL_STEPS_DB}
    return tuple(sorted(f for f in out if 0 < f < 1))


def compare_endpointers(
    observations: Sequence[Observation],
    scores: Sequence[Sequence[FrameScores]],
    *,
    floor: float,
    onset_timeout_s: float,
    margins: Margins,
    floors: Sequence[float] | None = None,
    quiet_s: float | None = None,
) -> tuple[EndpointerResult, ...]:
    """The level clock and each endpointer, each tuned and judged on the same beats.

    Parameters
    ----------
    observations : sequence of Observation
        The recordings (those without terminal responses in a log are skipped).
    scores : sequence of sequence of FrameScores
        Per observation, every endpointer's scores (the same names in the same
        order); an entry named :data:`LEVEL_CLOCK` carries the level clock's
        CPU time only.
    floor : float
        Derive's floor: the level clock's floors are :func:`level_floors` of it.
    onset_timeout_s : float
        How long every endpointer waits for speech after a terminal response.
    margins : Margins
    floors : sequence of float, optional
        The level clock's floors instead.
    quiet_s : float, optional
        Derive's quiet time: with it, the level clock is judged at derive's
        recommendation (``floor``, ``quiet_s``), chosen by derive's engine,
        so the tool names one best floor (not tuned again on a grid).

    Returns
    -------
    tuple of EndpointerResult
        The level clock first, then the endpointers in the order given.
    """
    keep = [i for i, o in enumerate(observations) if o.has_beats]
    prepared = [prepare(observations[i]) for i in keep]
    names = [s.name for s in scores[keep[0]]] if keep else []
    level_cpu = None
    if LEVEL_CLOCK in names:
        level_cpu = sum(scores[i][names.index(LEVEL_CLOCK)].cpu_s[0] for i in keep)
    grid = tuple(floors) if floors is not None else level_floors(floor)
    at = {} if quiet_s is None or floors is not None else {"quiets_s": (quiet_s,)}
    results = [
        tune(
            prepared,
            None,
            name=LEVEL_CLOCK,
            kind="floor",
            thresholds=grid if not at else (floor,),
            cpu_s=level_cpu,
            onset_timeout_s=onset_timeout_s,
            margins=margins,
            **at,
        )
    ]
    for n, name in enumerate(names):
        if name == LEVEL_CLOCK:
            continue
        own = [scores[i][n] for i in keep]
        assert all(s.name == name for s in own)
        first = own[0]
        found = tune(
            prepared,
            own,
            name=name,
            kind=first.kind,
            thresholds=first.thresholds,
            onset_timeout_s=onset_timeout_s,
            margins=margins,
        )
        results.append(found)
    return tuple(results)
