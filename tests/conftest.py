from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import configuration, settings

# The tests never write into the source tree: no example database, and
# hypothesis's own storage in a temporary folder.
_HYPOTHESIS_HOME = tempfile.TemporaryDirectory(prefix="speechclock-hypothesis-")
configuration.set_hypothesis_home_dir(_HYPOTHESIS_HOME.name)
settings.register_profile("speechclock", database=None)
settings.load_profile("speechclock")

sys.path.insert(0, str(Path(__file__).parent))

# The trace cache of the tests' runs lives in a temporary folder, never in the user's.
_CACHE_HOME = tempfile.TemporaryDirectory(prefix="speechclock-cache-")
os.environ["SPEECHCLOCK_CACHE"] = _CACHE_HOME.name

from clock.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def corpus_dir() -> Path | None:
    """The shared real-speech corpus, or None when it is absent."""
    env = os.environ.get("SPEECHCLOCK_CORPUS")
    path = Path(env) if env else REPO.parent / "shared" / "corpus"
    return path if path.is_dir() else None


def require_corpus() -> Path:
    """The shared real-speech corpus, or skip the test saying where it comes from."""
    path = corpus_dir()
    if path is None:
        env = os.environ.get("SPEECHCLOCK_CORPUS")
        where = (
            f"$SPEECHCLOCK_CORPUS ({env})" if env else f"{REPO.parent / 'shared' / 'corpus'} (next to the repository)"
        )
        pytest.skip(
            f"real-speech corpus not found at {where}; set SPEECHCLOCK_CORPUS to a copy of the shared corpus: "
            "published recordings (OpenAI TTS output, LibriVox, the AMI Meeting Corpus) that may not be copied "
            "into the repository; its MANIFEST.md lists each file's source and licence"
        )
    return path


@pytest.fixture
def corpus() -> Path:
    return require_corpus()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(440)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def cli(runner):
    def invoke(*args: str):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)

    return invoke


@pytest.fixture
def chromium():
    """Headless Chromium (Debian's chromium package); `make test` installs it where it can."""
    from browser import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return CHROMIUM
