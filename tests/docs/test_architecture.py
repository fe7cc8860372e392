"""The pure core never imports I/O, CLI or plotting libraries."""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import clock
import clock.core

EDGE_LIBRARIES = ("soundfile", "av", "click", "matplotlib", "soxr")
CORE_MODULES = ["clock"] + [m.name for m in pkgutil.walk_packages(clock.core.__path__, "clock.core.")]


#: One fresh interpreter imports numpy (no edge library, checked) and forks a child per module: each child starts
#: with nothing of the package imported and says which edge libraries its one import brought in.
_IMPORT_EACH = """
import json, os, sys
import numpy
edges = {edges!r}
assert not [m for m in edges if m in sys.modules], "numpy alone brought in an edge library"
found = {{}}
for module in {modules!r}:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        __import__(module)
        os.write(write, ",".join(m for m in edges if m in sys.modules).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        bad = f.read().decode()
    _, status = os.waitpid(pid, 0)
    found[module] = bad if status == 0 else "(its import failed)"
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def edges_imported() -> dict[str, str]:
    """Each core module's edge libraries, imported in a process of its own."""
    code = _IMPORT_EACH.format(edges=EDGE_LIBRARIES, modules=CORE_MODULES)
    # One BLAS thread: the interpreter that forks holds no thread of numpy's.
    env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_pure_core_imports_no_edge_library(edges_imported, module):
    assert edges_imported[module] == ""


def test_core_modules_are_found():
    assert {"clock.core.analyser", "clock.core.levels"} <= set(CORE_MODULES)


# --- import cycles --------------------------------------------------------------------------------------------------

PACKAGE = Path(clock.__file__).parent


def _modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of the package by dotted name: its file and whether it is a package's ``__init__``."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Which package modules each module imports: every ``import`` and ``from ... import`` in its AST, at module
    level, in functions and under ``TYPE_CHECKING`` alike, relative ones resolved. ``from .a import b`` is an edge to
    the module ``a.b`` where that is a module, else to ``a``; a parent package imported on the way is not an edge
    (``clock/__init__.py`` imports every public name lazily, in a function)."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - node.level + 1] + ([node.module] if node.module else [])
                    target = ".".join(base)
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        graph[name].add(sub)
                    elif target in modules:
                        graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing itself), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        # Tarjan's algorithm, iteratively: (node, its successors still to visit).
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, rest = work[-1]
            nxt = next(rest, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return sorted(found)


def test_cycle_finder_finds_a_constructed_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"a"}}
    assert cycles(graph) == [["a", "b", "c"], ["e"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_import_graph_resolves_every_kind_of_import(tmp_path):
    files = {
        "__init__.py": "from . import low\nVERSION = 1\n",
        "low.py": "import os\n",
        "sub/__init__.py": "",
        "sub/a.py": "from .. import VERSION\nfrom ..low import x\n",
        "sub/b.py": "def f():\n    from .a import y\n    import pkg.sub.c\n",
        "sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n",
    }
    for name, text in files.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    graph = import_graph(tmp_path / "pkg")
    assert graph == {
        "pkg": {"pkg.low"},  # `from . import low`: a module
        "pkg.low": set(),  # outside the package: no edge
        "pkg.sub": set(),
        "pkg.sub.a": {"pkg", "pkg.low"},  # `from .. import VERSION`: a name of the package
        "pkg.sub.b": {"pkg.sub.a", "pkg.sub.c"},  # in a function, relative and absolute
        "pkg.sub.c": {"pkg.sub.b"},  # under TYPE_CHECKING
    }
    assert cycles(graph) == [["pkg.sub.b", "pkg.sub.c"]]


def test_the_package_graph_has_its_imports():
    graph = import_graph()
    assert "clock.run.stress" in graph["clock.cli.stress"]  # `from ..run.stress import ...` inside a function
    assert "clock.core.recommend.engine" in graph["clock.api"]
    assert "clock._version" in graph["clock.run.cache"]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def private_imports(package: Path = PACKAGE) -> list[tuple[str, str, str]]:
    """(module, module imported from, name) of every ``_name`` imported from another module of the package."""
    modules = _modules(package)
    found = []
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                source = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                for alias in node.names:
                    private = alias.name.startswith("_") and not alias.name.startswith("__")
                    if private and f"{source}.{alias.name}" not in modules:  # a private module is its own
                        found.append((name, source, alias.name))
    return sorted(found)


def test_no_private_name_is_imported_across_modules(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from . import _hidden\nfrom .a import _x, y\n")
    (tmp_path / "pkg" / "_hidden.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("_x = y = 1\n")
    assert private_imports(tmp_path / "pkg") == [("pkg", "pkg.a", "_x")]
    assert private_imports() == []


# --- layers ---------------------------------------------------------------------------------------------------------

#: The lower layers, each with the layers it may import besides its own: the pure core; the file edges (decoding,
#: reading logs and configs, writing outputs); the running of work (collecting a corpus, workers, caches, the stress
#: runner, other endpointers). The surface (clock.cli, clock.report, clock.api, clock.frames) sits over them all.
LAYERS = {"clock.core": (), "clock.io": ("clock.core",), "clock.run": ("clock.core", "clock.io")}
#: Modules every layer may import: the errors and the version.
SHARED = {"clock.errors", "clock._version"}


def layer_of(module: str) -> str:
    """``clock.io.decode`` -> ``clock.io``; ``clock.api`` -> ``clock.api``."""
    return ".".join(module.split(".")[:2])


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, module imported) of every import of a lower layer that reaches above it (or beside it)."""
    return sorted(
        (module, target)
        for module, targets in graph.items()
        if layer_of(module) in LAYERS
        for target in targets
        if target not in SHARED and layer_of(target) not in (layer_of(module), *LAYERS[layer_of(module)])
    )


def test_layer_violations_finds_constructed_ones():
    graph = {
        "clock.core.a": {"clock.core.b", "clock.errors"},
        "clock.core.b": {"clock.io.decode"},  # the core reads no file
        "clock.io.decode": {"clock.core.a", "clock.run.cache"},  # the file edges run no work
        "clock.run.cache": {"clock.io.decode", "clock.core.a", "clock._version"},
        "clock.cli.x": {"clock.run.cache", "clock.report.y"},  # the surface may import anything
    }
    assert layer_violations(graph) == [("clock.core.b", "clock.io.decode"), ("clock.io.decode", "clock.run.cache")]


def test_each_layer_imports_only_the_layers_below_it():
    assert layer_violations(import_graph()) == []
    assert set(LAYERS) <= {layer_of(m) for m in import_graph()}


# --- rooms a reader can hold ----------------------------------------------------------------------------------------

#: No function of the package is longer than this (its ``def`` line to its last, docstring included).
MAX_FUNCTION_LINES = 80
#: No module of the core is longer than this: a module holds one idea.
MAX_CORE_MODULE_LINES = 600


def long_functions(package: Path = PACKAGE, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, str, int]]:
    """(file, function, lines) of every function or method over ``limit`` lines, nested ones included."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append((path.relative_to(package.parent).as_posix(), node.name, lines))
    return found


def test_long_functions_finds_a_constructed_one(tmp_path):
    (tmp_path / "pkg").mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))  # 81 lines with its def
    (tmp_path / "pkg" / "a.py").write_text(f"def long():\n{body}\n\nclass C:\n    def short(self):\n        pass\n")
    assert long_functions(tmp_path / "pkg") == [("pkg/a.py", "long", MAX_FUNCTION_LINES + 1)]


def test_no_function_is_longer_than_a_reader_can_hold():
    assert long_functions() == []


def test_no_core_module_is_longer_than_one_idea_needs():
    core = PACKAGE / "core"
    lengths = {
        p.relative_to(core).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in core.rglob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > MAX_CORE_MODULE_LINES} == {}
    assert len(lengths) > 20  # the walk found the core's modules, subpackages included
