"""Every dotted reference ``clock.…`` in the package's docstrings, docs/*.md and README.md names what it says.

A reference names a module, or a name the module it names defines (a ``def``, a ``class`` or an assignment at its
top level, not a name it merely imports), then that name's attributes. The package's own public face
(``clock.derive``, ``clock.Beat``: :data:`clock.__all__`, each imported on first use) counts as defined there.
The page clock's JavaScript API (``clock.start(…)``, ``clock.stopped``: a ``clock`` object in the browser) is
allowed by name.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import clock

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "clock"
REFERENCE = re.compile(r"(?<![\w.])clock(?:\.[A-Za-z_]\w*)+")
#: A path or file name, not a reference (``clock.core.x.py``).
SUFFIXES = (".py", ".md", ".js", ".ts", ".toml", ".json", ".jsonl", ".html")

#: The page clock's JavaScript API (clock/web/src/speechclock.js and docs/clock.md): ``clock`` is the object
#: ``createSpeechClock`` returns, its methods and the fields of its events; and the lines it logs
#: (``clock.quiet``, ``clock.level``, ``clock.setting``: docs/formats.md).
PAGE_CLOCK = frozenset(
    {
        "addEventListener",
        "end",
        "event",
        "fallback",
        "frozen",
        "jump",
        "late",
        "level",
        "onset_timeout",
        "path",
        "pause",
        "prompt",
        "providerStopped",
        "quiet",
        "resume",
        "resumed",
        "setting",
        "speaking",
        "start",
        "state",
        "stop",
        "stopped",
        "suspended",
        "terminalResponse",
    }
)


def _module(name: str) -> bool:
    """Whether ``name`` is an importable module of the package."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@cache
def _defined(module: str) -> frozenset[str]:
    """The names a module defines at its top level (not those it imports); the package's public face for ``clock``."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    names: set[str] = set(clock.__all__) if module == "clock" else set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


def _has(obj: Any, name: str) -> bool:
    """Whether ``obj`` has attribute ``name``, a dataclass field or an annotated attribute included."""
    fields = getattr(obj, "__dataclass_fields__", {})
    return hasattr(obj, name) or name in fields or name in getattr(obj, "__annotations__", {})


def stale(ref: str) -> str | None:
    """Why ``ref`` (``clock.a.b…``) names nothing, or None where it names a module or what a module defines."""
    parts = ref.split(".")
    if len(parts) == 2 and parts[1] in PAGE_CLOCK:
        return None
    at = max(i for i in range(1, len(parts) + 1) if _module(".".join(parts[:i])))
    module, rest = ".".join(parts[:at]), parts[at:]
    if not rest:
        return None
    if rest[0] not in _defined(module):
        obj = importlib.import_module(module)
        return f"{module} does not define {rest[0]}" + (" (it imports it)" if hasattr(obj, rest[0]) else "")
    obj = getattr(importlib.import_module(module), rest[0])
    for i, name in enumerate(rest[1:], 1):
        if not _has(obj, name):
            return f"{module}.{'.'.join(rest[:i])} has no {name}"
        obj = getattr(obj, name, None)
    return None


def references(text: str) -> list[str]:
    """The dotted ``clock.…`` references in ``text`` (file names left out)."""
    found = (m.group(0).rstrip(".") for m in REFERENCE.finditer(text))
    return [r for r in found if not r.endswith(SUFFIXES)]


def _docstrings(path: Path) -> list[tuple[int, str]]:
    """Each docstring of a Python file (module, class, function) with its first line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    out.append((body[0].lineno, body[0].value.value))
    return out


def _texts() -> list[tuple[str, str]]:
    """Every place a reference may stand: the package's docstrings, docs/*.md and README.md, by where."""
    rel = lambda p: str(p.relative_to(REPO))  # noqa: E731
    out = [(f"{rel(p)}:{line}", doc) for p in sorted(PACKAGE.rglob("*.py")) for line, doc in _docstrings(p)]
    for path in [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]:
        out.extend((f"{rel(path)}:{i}", line) for i, line in enumerate(path.read_text().splitlines(), 1))
    return out


def test_every_dotted_reference_names_a_module_or_what_it_defines():
    bad = [f"{where}: {ref}: {why}" for where, text in _texts() for ref in references(text) if (why := stale(ref))]
    assert not bad, "\n".join(bad)


def test_the_scan_finds_references():
    found = {ref for _, text in _texts() for ref in references(text)}
    assert {"clock.core.analyser", "clock.core.speech.guide_sound"} <= found


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("clock.core.beats.BeatAnalysis.allows", "clock.core.beats does not define BeatAnalysis (it imports it)"),
        ("clock.core.speech.no_such_name", "clock.core.speech does not define no_such_name"),
        ("clock.core.beat_analysis.BeatAnalysis.no_such_field", "BeatAnalysis has no no_such_field"),
        ("clock.core.no_such_module.x", "clock.core does not define no_such_module"),
        ("clock.no_such_js_name", "clock does not define no_such_js_name"),
    ],
)
def test_a_stale_reference_is_found(ref, why):
    found = stale(ref)
    assert found is not None and why in found
    text = f"See :func:`{ref}` (and clock.core.speech.py, a file)."
    assert references(text) == [ref]


@pytest.mark.parametrize(
    "ref",
    [
        "clock.core.beat_analysis.BeatAnalysis.allows",
        "clock.core.beat_analysis.BeatAnalysis.guide_spoke",
        "clock.core.speech.CLEAR_DB",
        "clock.core.recommend",
        "clock.derive",
        "clock.stopped",
    ],
)
def test_a_live_reference_passes(ref):
    assert stale(ref) is None
