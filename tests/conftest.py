from __future__ import annotations

import os
import signal
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

# The trace cache of the tests' runs lives in a temporary folder, never in the user's.
_CACHE_HOME = tempfile.TemporaryDirectory(prefix="speechclock-cache-")
os.environ["SPEECHCLOCK_CACHE"] = _CACHE_HOME.name
# ... and its key outside it, never the user's.
_KEY_HOME = tempfile.TemporaryDirectory(prefix="speechclock-key-")
os.environ["SPEECHCLOCK_CACHE_KEY"] = os.path.join(_KEY_HOME.name, "cache-key")

# The command line keeps an ignored SIGINT or SIGTERM ignored (nohup's SIG_IGN; clock/_startup.py), and a
# child inherits an ignored signal across exec. A shell without job control starts a background job (`make test &`
# in a script, a CI runner's step) with SIGINT ignored, so the tests that interrupt a run would send a signal their
# child ignores. The tests' children start with both signals at their defaults, as from an interactive shell: a
# handler of this process's own is reset to the default in every child it execs.
for _sig in (signal.SIGINT, signal.SIGTERM):
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT else signal.SIG_DFL)

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


#: Two short bundled recordings (WAV and WebM/Opus, with logs and labels): enough for a test
#: whose subject is not the whole bundled set, and quick to decode, plot and report.
SHORT_RECORDINGS = ("short-en-029-44k", "tour-en-us-48k")


def copy_short_recordings(folder: Path) -> Path:
    """Copy the two short recordings with the committed config and baseline into ``folder``."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    source = REPO / "recordings"
    for path in sorted(source.iterdir()):
        if path.name in ("speechclock.toml", "baseline.json") or path.name.split(".")[0] in SHORT_RECORDINGS:
            shutil.copy2(path, folder / path.name)
    return folder


@pytest.fixture(scope="session")
def short_recordings(tmp_path_factory) -> Path:
    """A read-only folder of the two short recordings (copy it before changing anything in it)."""
    return copy_short_recordings(tmp_path_factory.mktemp("short") / "recordings")


@pytest.fixture
def figures_unrendered(monkeypatch):
    """A report's figures made (every call that builds them runs) but not rendered to PNG, each an empty image: for
    tests whose subject is the report's text or counts. Rendering, about two thirds of a report's time, is what the
    tests of tests/report and the figures' own tests hold."""
    import clock.report.html

    monkeypatch.setattr(clock.report.html, "png_data_uri", lambda fig: "data:image/png;base64,")


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


# The modules that take longest by the wall clock (module fixtures, browsers waiting on real time, worker processes),
# longest first. `make test` hands whole modules to its workers (--dist loadscope) in the order they are collected;
# collected by folder, the browser's modules came last and ran on after the other workers had finished. Started
# first, the longest modules end while the many short ones still fill the other workers. Only the order changes.
LONGEST_FIRST = (
    "tests/core/test_heldback.py",
    "tests/cli/test_bounds.py",
    "tests/web/test_page_clock.py",
    "tests/cli/test_gate.py",
    "tests/io/test_workers.py",
    "tests/cli/test_stress.py",
    "tests/core/test_noise_beds.py",
    "tests/core/test_decide.py",
    "tests/report/test_report.py",
    "tests/web/test_webrtc_loopback.py",
    "tests/web/test_page_bundles.py",
)


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.path)).relative_to(REPO).as_posix(), len(rank)))
