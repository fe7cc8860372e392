"""The pure core never imports I/O, CLI or plotting libraries."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import clock.core

EDGE_LIBRARIES = ("soundfile", "av", "click", "matplotlib", "soxr")
CORE_MODULES = ["clock"] + [f"clock.core.{m.name}" for m in pkgutil.iter_modules(clock.core.__path__)]


@pytest.mark.parametrize("module", CORE_MODULES)
def test_pure_core_imports_no_edge_library(module):
    code = f"import sys, {module}\nbad = [m for m in {EDGE_LIBRARIES!r} if m in sys.modules]\nprint(','.join(bad))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def test_core_modules_are_found():
    assert {"clock.core.analyser", "clock.core.levels"} <= set(CORE_MODULES)
