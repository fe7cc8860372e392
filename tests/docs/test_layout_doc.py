"""docs/layout.md names every module of the package, in the section of its package, and no file that is gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "layout.md"

#: Where each package's files are listed: the text from the first marker to the second.
SECTIONS = {
    "core": ("## The core", "**Recommending a setting"),
    "core/recommend": ("**Recommending a setting", "**What the recommendation"),
    "io": ("## The file edges", "## Running work"),
    "run": ("## Running work", "## The surface"),
    "report": ("- `report/`", "\n"),
    "cli": ("- `cli/`", "\n"),
    "web": ("- `web/`", "\n"),
    "": ("## The surface", "\n- `report/`"),
}
#: Held to the core's section too: the core's files listed after the engine's.
TAIL = ("**What the recommendation", "## The file edges")


def section(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i : text.index(end, i + len(start)) if end else len(text)]


def named(text: str) -> set[str]:
    """File names a section names: ``levels.py`` as written, and a command's module by its name in backticks."""
    return set(re.findall(r"`([a-z_]+\.py)`", text)) | {f"{m}.py" for m in re.findall(r"`([a-z_]+)`", text)}


def modules(package: str) -> set[str]:
    folder = REPO / "clock" / package
    return {p.name for p in folder.glob("*.py") if p.name != "__init__.py" or package == ""}


@pytest.mark.parametrize("package", sorted(SECTIONS))
def test_every_module_is_named_in_its_section(package):
    text = DOC.read_text(encoding="utf-8")
    listed = named(section(text, *SECTIONS[package]))
    if package == "core":
        listed |= named(section(text, *TAIL))
    assert modules(package) - listed == set()


def test_every_file_the_map_names_exists():
    text = DOC.read_text(encoding="utf-8")
    for package, (start, end) in SECTIONS.items():
        body = section(text, start, end) + (section(text, *TAIL) if package == "core" else "")
        files = set(re.findall(r"`([a-z_]+\.py)`", body))
        assert files <= modules(package) | {"__init__.py"}, package


def test_a_missing_module_is_found(tmp_path):
    # The section parser reads what the map says: a module it leaves out is reported.
    text = DOC.read_text(encoding="utf-8").replace("- `tally.py`", "- `tallies`")
    listed = named(section(text, *SECTIONS["core"])) | named(section(text, *TAIL))
    assert "tally.py" in modules("core") - listed


def test_the_modules_the_suite_starts_first_are_modules_of_the_suite():
    from conftest import LONGEST_FIRST

    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    assert [p for p in LONGEST_FIRST if not (REPO / p).is_file()] == []
