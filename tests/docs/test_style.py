"""Lint, format (ruff) and types (mypy), configured in pyproject.toml, hold for the whole tree."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PATHS = ["clock", "tests", "benchmarks", "recordings", "notebooks"]


def test_ruff_check():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", *PATHS], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *PATHS], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _mypy_cache() -> Path:
    """mypy's incremental cache, outside the repository and kept between runs (one per checkout and
    Python): a warm run re-checks only the modules that changed; mypy validates its cache itself."""
    key = hashlib.sha256(f"{REPO}|{sys.version}|{sys.executable}".encode()).hexdigest()[:16]
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path(tempfile.gettempdir()))
    return base / "speechclock-tests" / f"mypy-{key}"


def test_mypy():
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--incremental", "--cache-dir", str(_mypy_cache()), "clock"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
