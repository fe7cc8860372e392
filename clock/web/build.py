"""Build the page clock from its one source: ``python -m clock.web.build`` (or ``python clock/web/build.py``).

``src/speechclock.js`` is the source. This writes, beside it in ``clock/web/``:

* ``speechclock.js``: a classic script (``<script src>``); it defines
  ``window.SpeechClock`` (and the helpers below) once, so loading it twice
  is harmless;
* ``speechclock.mjs``: an ES module exporting the same names.

Both are committed (``tests/test_page_package.py`` fails when they are not
what this script writes). No bundler: the source is plain JavaScript in one
scope, wrapped two ways.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "src" / "speechclock.js"
#: The names both builds export.
EXPORTS = (
    "SpeechClock",
    "SpeechClockCore",
    "speechclockConfig",
    "speechclockLevel",
    "speechclockDownmix",
    "SPEECHCLOCK_VERSION",
)
_HEAD = "// Built from clock/web/src/speechclock.js by clock/web/build.py: edit the source, then rebuild.\n"


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


def outputs() -> dict[Path, str]:
    """What the build writes, by path."""
    source = SOURCE.read_text(encoding="utf-8")
    return {HERE / "speechclock.js": classic(source), HERE / "speechclock.mjs": module(source)}


def main() -> int:
    for path, text in outputs().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
