"""An endpointer's scores as speech decisions on the clock's tick grid, replayed as the level clock is.

Pure numpy. An endpointer (a VAD: webrtcvad, Silero, an energy detector)
gives a score per frame of ``frame_len`` samples at ``rate_hz``
(:class:`FrameScores`: a probability, an energy in dB, or one decision per
mode); its **detection threshold** turns the scores into speech decisions.
:func:`decisions_trace` puts the decisions on the clock's tick grid as a
level-like trace (:data:`SPEECH_LEVEL` where the latest frame complete at the
tick's frame is speech, :data:`SILENCE_LEVEL` elsewhere), so that
:func:`clock.core.analysis.analyse` and :func:`~clock.core.decide.decide_quiets`
replay it at :data:`DECISION_FLOOR` exactly as they replay the level clock.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .levels import LevelTrace

__all__ = [
    "DECISION_FLOOR",
    "ENERGY_THRESHOLDS_DB",
    "PROBABILITIES",
    "SILENCE_LEVEL",
    "SPEECH_LEVEL",
    "WEBRTC_MODES",
    "FrameScores",
    "decisions_trace",
    "energy_db",
    "hangover",
]

#: The level of a tick an endpointer calls speech, and of one it calls silence; the floor between them.
SPEECH_LEVEL, SILENCE_LEVEL, DECISION_FLOOR = 1.0, 1e-3, 0.03

#: A model's speech probability thresholds (Silero, TEN VAD).
PROBABILITIES = tuple(round(0.05 * k, 2) for k in range(1, 20))

#: webrtcvad's aggressiveness modes.
WEBRTC_MODES = (0.0, 1.0, 2.0, 3.0)

#: The energy detector's thresholds, dB of 16-bit samples (50 dB is auditok's default, -40.3 dBFS).
ENERGY_THRESHOLDS_DB = tuple(float(x) for x in range(25, 71))


def decisions_trace(trace: LevelTrace, speech: NDArray[np.bool_], *, frame_len: int, rate_hz: int) -> LevelTrace:
    """An endpointer's per-frame decisions on the clock's tick grid, as a level trace.

    Tick ``k`` reads the latest decision whose frame is complete at the
    tick's frame ``trace.frames[k]`` (a streaming detector has seen no later
    audio); before the first complete frame it reads silence.

    Parameters
    ----------
    trace : LevelTrace
        The level clock's trace (its ticks, frames and rate).
    speech : ndarray of bool, shape (n_frames,)
        The endpointer's decision for each consecutive frame.
    frame_len : int
        Samples per frame, at ``rate_hz``.
    rate_hz : int
        The rate the endpointer ran at (the audio is resampled to it).
    """
    done = (trace.frames.astype(np.int64) * rate_hz) // (trace.sample_rate_hz * frame_len)
    j = np.minimum(done, speech.size) - 1
    heard = np.zeros(j.size, bool)
    ok = j >= 0
    heard[ok] = speech[j[ok]]
    level = np.where(heard, SPEECH_LEVEL, SILENCE_LEVEL)
    return LevelTrace(trace.frames, level, trace.sample_rate_hz, trace.ticks, "decisions", trace.options)


def energy_db(samples: NDArray[np.float32], *, frame_len: int) -> NDArray[np.float32]:
    """An energy detector's frame energies, as auditok's: ``10 log10(mean(x**2))`` of the samples as
    16-bit values (-inf for a silent frame); ``samples`` are float in [-1, 1], only whole frames count."""
    n = samples.size // frame_len
    x = samples[: n * frame_len].astype(np.float64).reshape(n, frame_len) * 32768.0
    with np.errstate(divide="ignore"):
        return np.asarray(10 * np.log10(np.mean(x * x, axis=1)), np.float32)


def hangover(loud: NDArray[np.bool_], frames: int) -> NDArray[np.bool_]:
    """Speech runs on for ``frames`` quiet frames after the last loud one (auditok's ``max_silence``)."""
    idx = np.where(loud, np.arange(loud.size), -(frames + 1))
    last = np.maximum.accumulate(idx) if loud.size else idx
    return np.asarray(np.arange(loud.size) - last <= frames, dtype=bool)


@dataclass(frozen=True, slots=True)
class FrameScores:
    """One endpointer's frame scores over one recording, and the thresholds it is tuned over.

    Attributes
    ----------
    name : str
    kind : str
        ``probability`` or ``energy_db`` (``scores`` is one score per frame,
        speech where it reaches the threshold), ``mode`` (``scores`` holds one
        row of decisions per threshold), ``fixed`` (one row, no threshold),
        ``floor`` (the level clock: no scores, its CPU time only).
    thresholds : tuple of float or None
    scores : ndarray
        float32, shape (n_frames,), or bool, shape (n_thresholds, n_frames).
    frame_len, rate_hz : int
        Samples per frame, and the rate the detector ran at.
    cpu_s : tuple of float
        CPU seconds the detector took: one for every threshold, or one per threshold.
    hangover_frames : int
        Speech runs on for this many frames after the last one at the threshold.
    """

    name: str
    kind: str
    thresholds: tuple[float | None, ...]
    scores: NDArray[np.generic]
    frame_len: int
    rate_hz: int
    cpu_s: tuple[float, ...]
    hangover_frames: int = 0

    @classmethod
    def fixed(cls, name: str, speech: NDArray[np.bool_], frame_len: int, rate_hz: int, cpu_s: float) -> FrameScores:
        """Decisions with no threshold to tune."""
        return cls(name, "fixed", (None,), np.asarray(speech, bool)[None, :], frame_len, rate_hz, (cpu_s,))

    def speech(self, j: int) -> NDArray[np.bool_]:
        """The decisions at threshold ``j``."""
        threshold = self.thresholds[j]
        if self.kind in ("mode", "fixed") or threshold is None:
            out = np.asarray(self.scores[j], bool)
        else:
            out = np.asarray(np.asarray(self.scores, np.float64) >= threshold, bool)
        return hangover(out, self.hangover_frames) if self.hangover_frames else out

    def cpu_at(self, j: int) -> float:
        """CPU seconds of the detector at threshold ``j``."""
        return self.cpu_s[j] if len(self.cpu_s) > 1 else self.cpu_s[0]
