"""The recommendation, held to generated corpora of real voices whose truth is known by construction.

The sessions (tests/voices.py) are built from the shared corpus's real TTS
voices: a loud voice in a float WAV with noise in its pauses, a quiet voice,
comfort noise under a whole session, a log without terminal responses, a log
without prompts. Nothing is labelled: ``derive`` and ``sweep`` see only the
audio and the logs. The right answer is computed independently: every setting
of a grid is replayed tick by tick and judged against the construction (a
beat cut before its narration really ended, a beat never declared quiet
before its bound, an onset given up on). The recommendation must be a
setting that the construction, not the tool, says is right.
"""

from __future__ import annotations

import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from voices import VoiceSession, mixed_sessions, truth_failures

from clock.core.derive import derive
from clock.core.sweep import grid, sweep
from clock.io.corpus import load_corpus

FLOORS = (0.001, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.006, 0.01)
QUIETS = tuple(float(q) for q in np.round(np.arange(1.5, 4.51, 0.25), 2))


class Built:
    def __init__(self, folder: Path, corpus: Path, sessions: list[VoiceSession]):
        for s in sessions:
            s.write(folder, corpus)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.corpus = load_corpus([folder])
        self.sessions = {s.name: s for s in sessions}
        self.truths = {s.name: s.build(corpus)[2] for s in sessions}
        self.obs = {o.name.removesuffix(".wav"): o for o in self.corpus.observations}

    def failures(self, names, floor: float, quiet_s: float, onset_timeout_s: float) -> list[str]:
        out = []
        for name in names:
            o = self.obs[name]
            if o.has_beats:
                for f in truth_failures(
                    o.trace, o.events, self.truths[name], floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s
                ):
                    out.append(f"{name}: {f}")
        return out

    def region(self, names) -> np.ndarray:
        """Which grid settings the construction says are right, for these sessions."""
        return np.array([[not self.failures(names, f, q, 10.0) for q in QUIETS] for f in FLOORS])


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, request):
    from conftest import require_corpus

    corpus = require_corpus()
    return Built(tmp_path_factory.mktemp("mixed"), corpus, mixed_sessions())


def test_the_brute_force_region_is_what_the_corpus_was_built_for(mixed):
    region = mixed.region(list(mixed.obs))
    # Comfort noise at 0.0018 RMS: a floor under it never hears quiet, the tour stalls.
    assert not region[FLOORS.index(0.001)].any() and not region[FLOORS.index(0.0015)].any()
    assert any("stalled" in f for f in mixed.failures(["comfort-noise"], 0.001, 2.5, 10.0))
    # A 2.3 s pause between sentences: a quiet time under it cuts the narration.
    assert not region[:, QUIETS.index(2.0)].any()
    # And there are right settings.
    assert region.any()


def test_derive_recommends_a_right_setting_without_labels(mixed):
    d = derive(mixed.corpus.observations, margins=mixed.corpus.config.margins)
    floor, quiet, timeout = d.setting
    assert floor is not None and quiet is not None and timeout is not None
    assert all(r.method == "split" for r in d.floor.recordings)
    assert mixed.failures(list(mixed.obs), floor, quiet, timeout) == []
    # The tool's own replay of it agrees: nothing cut, stalled or missed.
    assert d.outcome.n_failed == 0 and d.outcome.n_beats == 15
    # The log with prompts but no terminal response gave no narration gap, and said so exactly.
    assert not any(name == "no-terminal.wav" for name, _, _ in d.gaps.longest)
    assert (
        "no-terminal.wav: its event log has prompts but no terminal response, so it has no beats "
        "and contributes no narration gaps"
    ) in d.warnings


def test_sweep_recommends_the_same_right_setting(mixed):
    d = derive(mixed.corpus.observations, margins=mixed.corpus.config.margins)
    result = sweep(mixed.corpus.observations, floors=grid("0.001:0.006:0.0005"), quiets_s=grid("1.5:3.0:0.1"))
    assert result.recommended == d.setting
    # The grid itself counts the stalls a floor under the comfort noise causes.
    assert all(p.n_stalled >= 3 for p in result.points if p.floor <= 0.0015)


@pytest.mark.parametrize(
    "names",
    [
        pytest.param(pair, id="+".join(pair))
        for pair in combinations(["clean", "loud-float", "quiet", "comfort-noise", "no-prompt"], 2)
    ],
)
def test_every_pair_of_sessions_gets_a_right_setting(mixed, names):
    d = derive([mixed.obs[n] for n in names])
    floor, quiet, timeout = d.setting
    region = mixed.region(names)
    if region.any():
        assert mixed.failures(names, floor, quiet, timeout) == [], d.floor.rule
    else:
        # No setting on the grid is right: the tool must say which beats fail.
        assert d.outcome is not None and d.outcome.unsatisfied


@pytest.mark.parametrize("seed", range(8))
def test_random_corpora_of_real_voices_get_a_right_setting(tmp_path, seed):
    from conftest import require_corpus
    from voices import random_voice_corpus

    corpus = require_corpus()
    built = Built(tmp_path, corpus, random_voice_corpus(seed))
    d = derive(built.corpus.observations)
    assert truth_wrongs(built, d) == [], d.warnings


def truth_wrongs(built: Built, d) -> list[str]:
    """What the construction says the recommended setting gets wrong (nothing to judge without beats)."""
    floor, quiet, timeout = d.setting
    if not any(o.has_beats for o in built.obs.values()):
        return []
    assert floor is not None and quiet is not None and timeout is not None
    return built.failures(list(built.obs), floor, quiet, timeout)


# --- random tours of a synthetic voice (no corpus needed) ------------------------------


def _truth_failures(tours, obs, floor, quiet_s, onset_timeout_s):
    out = []
    for tour, o in zip(tours, obs):
        if o.has_beats:
            found = truth_failures(
                o.trace, o.events, tour.truths, floor=floor, quiet_s=quiet_s, onset_timeout_s=onset_timeout_s
            )
            out.extend(f"{tour.name}: {f}" for f in found)
    return out


@pytest.mark.parametrize("seed", range(24))
def test_random_corpora_get_a_right_setting_when_one_exists(seed):
    from tours import random_corpus

    tours = random_corpus(seed)
    obs = [t.observation() for t in tours]
    d = derive(obs)
    floor, quiet, timeout = d.setting
    if not any(o.has_beats for o in obs):
        pytest.skip("no recording of this corpus has beats")
    assert floor is not None and quiet is not None and timeout is not None
    wrong = _truth_failures(tours, obs, floor, quiet, timeout)
    if wrong:
        # Then no setting of a brute-force grid may be right either, and the tool must say which beats fail.
        floors = (0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.007, 0.01, 0.015, 0.02)
        for f in floors:
            for q in (2.0, 2.4, 2.5, 2.6, 2.8, 3.0, 3.2, 3.5):
                assert _truth_failures(tours, obs, f, q, 10.0), f"({f}, {q}) is right, but derive chose {d.setting}"
        assert d.outcome is not None and d.outcome.unsatisfied
