"""Every docstring example in the package runs and prints what it shows (``doctest``), from the repository's root
(the examples read ``recordings/``); an example that needs what a test cannot have says ``# doctest: +SKIP``."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import clock

REPO = Path(__file__).resolve().parents[2]


def modules() -> list[str]:
    names = [clock.__name__]
    for info in pkgutil.walk_packages(clock.__path__, prefix="clock."):
        names.append(info.name)
    return sorted(names)


def with_examples() -> list[str]:
    found = []
    for name in modules():
        module = importlib.import_module(name)
        if any(t.examples for t in doctest.DocTestFinder(exclude_empty=True).find(module, name)):
            found.append(name)
    return found


def test_the_package_has_examples_to_run():
    # The collection below is not empty by accident, and runs examples (not only skipped ones).
    assert {"clock.core.segments", "clock.core.levels", "clock.io.terminal"} <= set(with_examples())
    from clock.core import segments

    assert doctest.testmod(segments, optionflags=doctest.ELLIPSIS).attempted >= 4


@pytest.mark.parametrize("name", with_examples())
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(REPO)
    module = importlib.import_module(name)
    failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True, verbose=False)
    assert failed == 0, f"{name}: {failed} of {attempted} examples failed (doctest's report above)"
