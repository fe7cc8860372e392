"""Build the page clock from its one source: ``python -m clock.web.build`` (or ``python clock/web/build.py``).

``src/`` is the source: ``core.js`` (the decisions, which both threads run),
``worklet.js`` (the AudioWorklet processor) and ``speechclock.js`` (the main
thread's clock). This writes, in ``clock/web/``:

* ``speechclock.js``: a classic script (``<script src>``); it defines
  ``window.SpeechClock`` (and the helpers below) once, so loading it twice
  is harmless;
* ``speechclock.mjs``: an ES module exporting the same names;
* ``speechclock.cjs``: a CommonJS module exporting them (``require``);
* ``speechclock-worklet.js``: the AudioWorklet's module, for a page that
  serves it and passes its URL (``workletUrl``);
* ``speechclock.d.mts`` and ``speechclock.d.cts``: the types
  (``src/speechclock.d.ts``) for the ES and CommonJS modules;
* ``LICENSE``: the repository's, for the package.

Each build carries the worklet's module as a string made here
(``SPEECHCLOCK_WORKLET_SOURCE``): a bundler or minifier leaves a string
alone, so the audio thread runs this text whatever a page's build does to
the rest. ``SPEECHCLOCK_VERSION`` (the clock version ``clock.setting`` logs)
is the major version in ``package.json``, the one place a version is
written. All outputs are committed (``tests/web/test_page_package.py`` fails
when they are not what this script writes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
ROOT = HERE.parent.parent
#: The names every build exports.
EXPORTS = (
    "SpeechClock",
    "SpeechClockCore",
    "speechclockConfig",
    "speechclockLevel",
    "speechclockDownmix",
    "SPEECHCLOCK_VERSION",
)
_HEAD = "// Built from clock/web/src/ by clock/web/build.py: edit the source, then rebuild.\n"


def package_version() -> str:
    """The package's version, as ``package.json`` writes it (the one place)."""
    return json.loads((HERE / "package.json").read_text(encoding="utf-8"))["version"]


def clock_version() -> int:
    """The clock version (``SpeechClock.version``, ``clock_version`` in the log): the package's major version."""
    return int(package_version().split(".")[0])


def worklet_source() -> str:
    """The AudioWorklet's module: ``core.js`` and ``worklet.js``."""
    core = (SRC / "core.js").read_text(encoding="utf-8")
    worklet = (SRC / "worklet.js").read_text(encoding="utf-8")
    return f"{_HEAD}{core}\n{worklet}"


def body() -> str:
    """What every main-thread build holds: the version, the worklet's text, the core and the clock."""
    text = json.dumps(worklet_source(), ensure_ascii=True)
    return (
        f"const SPEECHCLOCK_VERSION = {clock_version()};\n"
        f"// The AudioWorklet's module (src/core.js, src/worklet.js), as text made at build time.\n"
        f"const SPEECHCLOCK_WORKLET_SOURCE = {text};\n"
        + (SRC / "core.js").read_text(encoding="utf-8")
        + "\n"
        + (SRC / "speechclock.js").read_text(encoding="utf-8")
    )


def classic(source: str) -> str:
    """The classic script: the source in a function scope, its names set on the global object once."""
    names = "\n".join(f"  root.{n} = {n};" for n in EXPORTS)
    return (
        f"{_HEAD}(function (root) {{\n"
        '"use strict";\n'
        "if (root.SpeechClock && root.SpeechClock.version !== undefined) return;  // loaded already\n"
        f"{source}\n{names}\n"
        '})(typeof globalThis !== "undefined" ? globalThis : this);\n'
    )


def module(source: str) -> str:
    """The ES module: the source, and its names exported (``SpeechClock`` also as the default)."""
    return f"{_HEAD}{source}\nexport {{ {', '.join(EXPORTS)} }};\nexport default SpeechClock;\n"


def commonjs(source: str) -> str:
    """The CommonJS module: the source, its names on ``exports`` (``SpeechClock`` also as ``default``, as the
    types declare, and ``__esModule`` set, so that a default import compiled to CommonJS gets it)."""
    names = "\n".join(f"exports.{n} = {n};" for n in EXPORTS)
    return (
        f'{_HEAD}"use strict";\n'
        'Object.defineProperty(exports, "__esModule", { value: true });  // its default export is exports.default\n'
        f"{source}\n{names}\nexports.default = SpeechClock;\n"
    )


def outputs() -> dict[Path, str]:
    """What the build writes, by path."""
    source = body()
    types = (SRC / "speechclock.d.ts").read_text(encoding="utf-8")
    return {
        HERE / "speechclock.js": classic(source),
        HERE / "speechclock.mjs": module(source),
        HERE / "speechclock.cjs": commonjs(source),
        HERE / "speechclock-worklet.js": worklet_source(),
        HERE / "speechclock.d.mts": types,
        HERE / "speechclock.d.cts": types,
        HERE / "LICENSE": (ROOT / "LICENSE").read_text(encoding="utf-8"),
    }


def main() -> int:
    """Write every built file in ``clock/web/`` (see the module notes)."""
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
