"""On real speech from ../shared/corpus (skipped when it is absent): what the MANIFEST says holds."""

from __future__ import annotations

import pytest

from clock.core.recommend.engine import derive
from clock.run.corpus import load_corpus


def test_tts_sentence_gaps_are_short(corpus):
    # MANIFEST: "Sentence gaps in these TTS clips run about 0.2-0.8 s".
    d = derive(load_corpus([corpus / "openai-tts"]).observations)
    assert d.gaps.n_gaps >= 10
    assert 0.2 <= d.gaps.p50_s <= 0.8 and d.gaps.max_gap_s <= 0.85
    assert d.gaps.quiet_s <= 1.05
    assert any("no event log" in w for w in d.warnings) and any("thin evidence" in w for w in d.warnings)


def test_tts_speech_reads_in_the_expected_range(corpus):
    d = derive(load_corpus([corpus / "openai-tts"]).observations)
    assert 0.002 < d.floor.speech["p5"] < 0.02 and 0.05 < d.floor.speech["max"] < 0.3


def test_a_human_noise_floor_above_0003_is_reported_not_hidden(corpus, cli):
    # MANIFEST: sonnet001 has a noise floor near -44 dBFS, which 0.003 (-50.5 dBFS) does not sit under.
    result = cli("check", corpus / "human-read" / "sonnet001.wav", "--allow-defaults")
    assert result.exit_code == 1
    assert any(": noise-level: noise p99 0.00" in line for line in result.stdout.splitlines())


@pytest.mark.parametrize("name", ["human-read", "meetings"])
def test_noisy_rooms_are_named_and_never_under_the_floor(corpus, name):
    d = derive(load_corpus([corpus / name]).observations)
    f = d.floor
    assert f.floor is not None
    for r in f.recordings:
        if r.name in f.no_window:
            # In words: a level-floor clock cannot work on it.
            assert any(w.startswith(f"{r.name}: its noise") and "cannot work on it" in w for w in d.warnings)
        elif r.name in f.outside:
            assert any(w.startswith(f"{r.name}: its window of floors (") and "does not meet" in w for w in d.warnings)
        else:
            # The floor stands above the noise of every recording it is recommended for.
            assert r.noise_high < f.floor
    # A room whose noise is within 3 dB of its speech (acoustic_corpus, -37 dBFS) has no window;
    # the meetings' floors meet only in a narrow window, and that is flagged.
    if name == "human-read":
        assert "acoustic_corpus.wav" in f.no_window
    else:
        assert any("span only" in w for w in d.warnings)
