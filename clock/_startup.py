"""Ctrl-C while the command line is still importing its libraries: one line, no traceback.

Imported first by :mod:`clock`. Only for ``python -m clock`` (``sys.argv[0]``
is ``"-m"`` while the package is imported) and the ``speechclock`` script;
:class:`clock.cli.options.Group` puts Python's own handler back once the
command starts, so that an interrupted run unwinds (temporary files removed).
A library import of :mod:`clock`, and a worker process, leave signals alone.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"speechclock: interrupted\n")
    os._exit(128 + signum)


def _command_line() -> bool:
    """Whether this is the command line's main process (not a library import, not a worker it spawned)."""
    if not sys.argv or (sys.argv[0] != "-m" and os.path.basename(sys.argv[0]) != "speechclock"):
        return False
    import multiprocessing

    return multiprocessing.current_process().name == "MainProcess"


if _command_line():
    try:
        signal.signal(signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # not the main thread
        pass
