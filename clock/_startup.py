"""The command line's first moment: signals exit 130/143 at once, and a previous verdict is set aside.

Imported first by :mod:`clock`, before numpy or click. Only for
``python -m clock`` (``sys.argv[0]`` is ``"-m"`` while the package is
imported) and the ``speechclock`` script:

* SIGINT and SIGTERM print one line and exit 128 + the signal (130, 143)
  while the libraries are still importing; :class:`clock.cli.boundary.Group`
  puts unwinding handlers in place once the command starts (so that an
  interrupted run removes its temporary files) and these back when it ends,
  so that a signal at any moment of the run, its start and its end included,
  exits 130 or 143. Once the run has ended and its exit code is set, the
  last exit handler holds both signals and ends the process at once: with
  130/143 when one came meanwhile, else with the run's code (Python's own
  shutdown would drop a signal, or die of it with no code);
* ``check --junit FILE`` replaces a previous JUnit report at ``FILE`` (or an
  absent one, in an existing folder) by one ``<error>`` case saying the run
  did not finish, before any work (an absent one only when its name ends
  in ``.xml``, so that the stand-in is never a file the run, or a later
  one, takes for an input). A run interrupted at any moment, or
  killed, leaves that case or its own verdict, never the previous run's.
  As when the run reports an error, only a JUnit report or a new file is
  written: any other file (an input named by mistake) is left to the
  command's own output checks.

A library import of :mod:`clock`, and a worker process, leave signals alone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import stat
import sys
from collections.abc import Iterator

#: The message of the ``<error>`` case that stands in for the verdict until the run writes it.
SET_ASIDE_MESSAGE = "the run did not finish (interrupted or stopped before its verdict); no verdict"

# What clock.report.junit.junit_xml([], error=SET_ASIDE_MESSAGE) writes (tests/cli/test_bounds.py checks it).
_SET_ASIDE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<testsuites name="speechclock check" tests="1" failures="0" errors="1">\n'
    '  <testsuite name="speechclock check" tests="1" failures="0" errors="1" skipped="0">\n'
    '    <testcase classname="speechclock" name="input">\n'
    f'      <error message="{SET_ASIDE_MESSAGE}">{SET_ASIDE_MESSAGE}</error>\n'
    "    </testcase>\n"
    "  </testsuite>\n"
    "</testsuites>\n"
).encode()


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, b"speechclock: interrupted\n")
    os._exit(128 + signum)


def install() -> None:
    """SIGINT and SIGTERM: one line and exit 130 or 143 at once (no unwinding: nothing to clean up).

    Until the interpreter ends: once the run's exit code is decided and its
    cleanup done (the last exit handler), both are ignored, because Python
    then puts back the system's default for the rest of its shutdown, where
    a signal would end the process as killed by it, not with a code.
    """
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup's SIG_IGN stays
                signal.signal(sig, _interrupted_while_starting)
        except (ValueError, OSError):  # not the main thread
            pass
    atexit.register(_ignored_while_ending)  # registered first: runs after every other exit handler


#: The run's exit code, once the command line has decided it (:func:`ended`); None until then.
_exit_code: int | None = None


def ended(code: object) -> None:
    """Record the exit code the command line ends with (``SystemExit.code``), for the last exit handler."""
    global _exit_code
    _exit_code = code if isinstance(code, int) else (0 if code is None else 1)


def _ignored_while_ending() -> None:
    """The last exit handler: a signal from here to the process's end still exits 130/143.

    With the run's exit code known, the signals are held, the standard
    streams flushed, and the process ends at once with 128 + a signal that
    came meanwhile (pending, held), else with the run's code: no moment is
    left where Python's shutdown would drop a signal or die of it. Without
    it (the run ended otherwise), both signals are ignored from here on.
    """
    if _exit_code is not None and hasattr(signal, "pthread_sigmask"):
        # A signal another thread (a library's pool) takes from here on is written to this pipe by Python's own
        # handler; one held for this thread stays pending; one handled before is the handler's exit already.
        woken = -1
        try:
            woken, wake = os.pipe()
            os.set_blocking(wake, False)
            os.set_blocking(woken, False)
            signal.set_wakeup_fd(wake)
        except (OSError, ValueError):
            pass
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        code = _exit_code
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):
                if stream is sys.stdout and code == 0:
                    code = 120  # as Python ends a run whose output could not be flushed
        pending = set(signal.sigpending())
        try:
            pending.update(os.read(woken, 64) if woken >= 0 else b"")
        except OSError:  # nothing written
            pass
        for sig in (signal.SIGINT, signal.SIGTERM):
            if sig in pending and signal.getsignal(sig) is _interrupted_while_starting:
                code = 128 + sig
                os.write(2, b"speechclock: interrupted\n")
                break
        os._exit(code)
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            if signal.getsignal(sig) is _interrupted_while_starting:
                signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):
            pass


def _command_line() -> bool:
    """Whether this is the command line's main process (not a library import, not a worker it spawned)."""
    if not sys.argv or (sys.argv[0] != "-m" and os.path.basename(sys.argv[0]) != "speechclock"):
        return False
    mp = sys.modules.get("multiprocessing")  # a spawned worker has it already; the main process not yet
    return mp is None or mp.current_process().name == "MainProcess"


def junit_target(argv: list[str]) -> str | None:
    """The ``--junit`` file of a ``check`` command line, or None."""
    if len(argv) < 2 or argv[1] != "check":
        return None
    found = None
    args = iter(argv[2:])
    for arg in args:
        if arg == "--":
            break
        if arg in ("-h", "--help"):
            return None  # help only: no run, nothing to set aside
        if arg == "--junit":
            found = next(args, None)
        elif arg.startswith("--junit="):
            found = arg[len("--junit=") :]
    return found or None


#: The stand-in this run wrote where no file was (path, device, inode), until the run writes its own verdict.
_placeholder: tuple[str, int, int] | None = None


def discard_placeholder() -> None:
    """Remove the stand-in written where no file was, if it is still there unchanged (a refused ``--junit``
    path leaves nothing behind: the run writes nothing where it refuses to write)."""
    global _placeholder
    if _placeholder is None:
        return
    path, dev, ino = _placeholder
    _placeholder = None
    with _signals_held():
        try:
            st = os.lstat(path)
            if (st.st_dev, st.st_ino) != (dev, ino) or st.st_size != len(_SET_ASIDE):
                return
            with open(path, "rb") as f:
                if f.read(len(_SET_ASIDE) + 1) != _SET_ASIDE:
                    return
            os.unlink(path)
        except OSError:
            pass


def set_aside(path: str) -> None:
    """Replace a previous JUnit report at ``path`` (or none, in an existing folder) by the stand-in error case.

    Signals are held while it is written and renamed into place, so a file is
    never left half written; one that came meanwhile exits right after.
    """
    global _placeholder
    if path == "-" or path.startswith("/dev/"):
        return
    full = os.path.realpath(path)  # a link is followed, as every output does
    try:
        st: os.stat_result | None = os.stat(full)
    except FileNotFoundError:
        st = None
        if not os.path.isdir(os.path.dirname(full)):
            return  # the command names the missing folder
        if not full.lower().endswith(".xml"):
            return  # a new file only where its name says XML: never one the run could take for an input
    except (OSError, ValueError):
        return
    if st is not None:
        if not stat.S_ISREG(st.st_mode) or not os.access(full, os.W_OK) or not st.st_mode & 0o222:
            return  # a read-only file is never replaced (the command refuses it)
        try:
            with open(full, "rb") as f:
                if b"<testsuites" not in f.read(4096):
                    return  # not a JUnit report: the command's output checks say what it is
        except OSError:
            return
    # Named as clock.io.output names its temporary files, so that one left by a kill -9 is removed later.
    tmp = os.path.join(
        os.path.dirname(full), f".speechclock-{os.path.basename(full)[:200]}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
    )
    with _signals_held():
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                if st is not None:
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))  # the report keeps its permissions
                os.write(fd, _SET_ASIDE)
            finally:
                os.close(fd)
            os.replace(tmp, full)
            if st is None:
                new = os.stat(full)
                _placeholder = (full, new.st_dev, new.st_ino)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held (delivered when it ends), where the platform can hold them."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


if _command_line():
    # Held until the handlers are in place and a previous verdict is set aside: a signal meanwhile exits
    # 130/143 right after, leaving the stand-in error case, never the previous verdict.
    with _signals_held():
        install()
        _target = junit_target(sys.argv)
        if _target is not None:
            set_aside(_target)
