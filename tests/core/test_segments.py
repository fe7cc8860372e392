"""Render-quantum boundaries of segments: the linear algorithms agree with the definition."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clock.core.levels import LevelChunk, LevelTrace
from clock.core.segments import QuantumSpeech, runs, segments
from clock.core.ticks import Ticks
from clock.errors import InvalidParameterError

RATE = 48000


def reference_bounds(trace: LevelTrace, quantum: LevelTrace, floor: float) -> list[tuple[float, float] | None]:
    """The definition, quadratic: every quantum above the floor strictly between the neighbouring quiet ticks."""
    q_speech = quantum.level > floor
    out = []
    for start, end in runs(trace.level > floor).tolist():
        lo = int(trace.frames[start - 1]) if start > 0 else -1
        hi = int(trace.frames[end + 1]) if end + 1 < trace.n_ticks else int(quantum.frames[-1]) + 1
        idx = np.flatnonzero((quantum.frames > lo) & (quantum.frames < hi) & q_speech)
        out.append(None if not idx.size else (quantum.frames[idx[0]] / RATE, quantum.frames[idx[-1]] / RATE))
    return out


def traces(tick_levels: list[int], quantum_levels: list[int]) -> tuple[LevelTrace, LevelTrace]:
    ticks = Ticks(Fraction(1, 60))
    n_q = len(quantum_levels)
    q_ticks = Ticks.every_frames(128, RATE)
    q_frames = q_ticks.frames(np.arange(n_q), RATE)
    frames = ticks.frames(np.arange(len(tick_levels)), RATE)
    frames = frames[frames <= q_frames[-1]]
    level = np.array(tick_levels[: frames.size], float) * 0.01
    return (
        LevelTrace(frames, level, RATE, ticks),
        LevelTrace(q_frames, np.array(quantum_levels, float) * 0.01, RATE, q_ticks),
    )


@given(
    st.lists(st.integers(0, 2), min_size=1, max_size=80),
    st.lists(st.integers(0, 2), min_size=1, max_size=700),
    st.sampled_from([0.0, 0.005, 0.015]),
)
def test_quantum_boundaries_agree_with_the_definition(tick_levels, quantum_levels, floor):
    trace, quantum = traces(tick_levels, quantum_levels)
    want = reference_bounds(trace, quantum, floor)
    for q in (quantum, QuantumSpeech.from_trace(quantum, floor=floor)):
        got = [
            None if s.onset_quantum_s is None else (s.onset_quantum_s, s.offset_quantum_s)
            for s in segments(trace, floor=floor, quantum=q).segments
        ]
        assert got == want


def test_quantum_speech_packs_chunks_as_they_come():
    rng = np.random.default_rng(5)
    level = rng.uniform(0, 0.01, 1000)
    frames = np.arange(1000) * 128
    whole = QuantumSpeech.from_trace(LevelTrace(frames, level, RATE, Ticks.every_frames(128, RATE)), floor=0.005)
    cuts = [0, 3, 10, 11, 500, 993, 1000]
    parts = [LevelChunk(a, frames[a:b], level[a:b]) for a, b in zip(cuts, cuts[1:])]
    chunked = QuantumSpeech.from_chunks(parts, floor=0.005, sample_rate_hz=RATE)
    assert chunked.n_quanta == 1000 and np.array_equal(chunked.bits, whole.bits)
    assert np.array_equal(np.unpackbits(whole.bits)[:1000].astype(bool), level > 0.005)
    assert whole.bits.size == 125  # one bit per quantum


def test_quantum_speech_at_another_floor_is_refused():
    trace, quantum = traces([0, 1, 0], [0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    with pytest.raises(InvalidParameterError, match="floor"):
        segments(trace, floor=0.001, quantum=QuantumSpeech.from_trace(quantum, floor=0.002))
