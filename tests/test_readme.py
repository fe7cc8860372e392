"""The README shows what the tool prints: its demo block is the real output of `make demo`'s commands."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_readme_demo_is_what_make_demo_prints():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.search(r"then the regression check.*?\n```\n(.*?)```\n", readme, flags=re.S)
    assert shown is not None
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    demo = re.search(r"^demo: install\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert demo is not None
    printed = ""
    for line in demo.group(1).splitlines():
        command = line.strip().replace("$(BIN)/speechclock", "").split()
        done = subprocess.run(
            [sys.executable, "-m", "clock", *command], cwd=REPO, capture_output=True, text=True, check=True
        )
        printed += done.stdout
    assert shown.group(1) == printed


def test_the_readme_lists_every_command():
    from clock.cli import main

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in main.commands:
        assert f"| `speechclock {name} " in readme, name


def test_the_readme_library_example_runs(monkeypatch, tmp_path):
    pytest.importorskip("pandas")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    code = re.search(r"## Library\n.*?```python\n(.*?)```\n", readme, flags=re.S)
    assert code is not None
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("SPEECHCLOCK_CACHE", str(tmp_path / "cache"))
    exec(compile(code.group(1), "README.md", "exec"), {})
