"""The command line's error boundary: every error is one line and an exit code, never a traceback.

Kept light (click and the standard library; the rest when an error needs
it), so that ``speechclock`` starts without importing what its command does
not use. Exit codes: see :mod:`clock.cli`.
"""

from __future__ import annotations

import _thread
import functools
import io
import os
import signal
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ..errors import SpeechClockError, SpeechClockWarning
from ..io.terminal import printable

#: Exit code for bad input or usage (click's own usage errors use it too).
EXIT_INPUT = 2


def _one_line(text: object) -> str:
    return " ".join(str(text).split("\n")).strip()


def _fail(message: str, code: int = EXIT_INPUT) -> None:
    if "--junit" in message:  # the JUnit path itself refused: the stand-in written where no file was goes too
        startup = sys.modules.get("clock._startup")
        if startup is not None:
            startup.discard_placeholder()
    click.echo(f"speechclock: error: {printable(_one_line(message), newlines=False)}", err=True)
    sys.exit(code)


class Group(click.Group):
    """Turn every error into one line on stderr and an exit code, never a traceback.

    Warnings print as one line each, once per distinct message, and do not
    change the exit code. SIGTERM ends the run like Ctrl-C: temporary files
    are removed and the previous outputs are left as they were.
    """

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        """Click's context, a usage error turned into one line and exit code 2."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.ClickException as err:
            if isinstance(err, getattr(click.exceptions, "NoArgsIsHelpError", ())):
                raise  # no command: click shows the help
            _usage_error(err)
            raise  # not reached

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command: every error the user can cause one line, and exit codes that mean the same."""
        try:
            previous = signal.getsignal(signal.SIGINT)
            if previous is not signal.SIG_IGN:
                try:  # from here on Ctrl-C unwinds (temporary files removed), no longer the start-up handler
                    signal.signal(signal.SIGINT, _interrupt)
                except ValueError:  # not the main thread
                    previous = None
            try:
                return self._invoke(ctx)
            finally:
                if previous is not None and previous is not signal.SIG_IGN:
                    # the start-up handler again: a signal while the interpreter ends still exits 130/143
                    signal.signal(signal.SIGINT, previous)
        except KeyboardInterrupt:
            # Ctrl-C in the moments around the command's own handling (entering or leaving it): click would take it
            # for an "Aborted!" and exit 1, and the run would end with no verdict and a code that says one.
            _remove_temporaries()
            click.echo("speechclock: interrupted", err=True)
            sys.exit(128 + signal.SIGINT)

    def _invoke(self, ctx: click.Context) -> Any:
        with _signals(), _warnings_to_stderr():
            _stdout_keeps_bytes()
            _set_force(False)  # until the command's --force says otherwise
            try:
                return super().invoke(ctx)
            except click.exceptions.ClickException as err:
                _remove_temporaries()
                _usage_error(err)
            except (click.exceptions.Exit, click.exceptions.Abort):
                raise
            except BrokenPipeError:
                # The reader went away (``speechclock levels REC | head``): stop quietly, as if by SIGPIPE.
                _remove_temporaries()
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                sys.exit(128 + signal.SIGPIPE)
            except KeyboardInterrupt:
                _remove_temporaries()
                click.echo("speechclock: interrupted", err=True)
                sys.exit(128 + signal.SIGINT)
            except Exception as err:  # the boundary: one line, never a traceback
                _remove_temporaries()
                signalled = _signal_within(err)
                if signalled is not None:  # unwound as itself: SIGTERM's exit, or the interrupt's line and code
                    raise signalled from None
                if os.environ.get("SPEECHCLOCK_DEBUG"):
                    raise
                _fail(_describe(err))


#: Options that were renamed: what to use instead, where the command has it.
_RENAMED = {
    "--quiet": (
        ("--quiet-time", "--quiet-time S (the quiet time)"),
        ("--quiet-times", "--quiet-times LO:HI:STEP (the quiet times to sweep)"),
        ("--no-progress", "--no-progress"),
    ),
    "-q": (("--no-progress", "--no-progress"),),
    "--floor": (("--floors", "--floors LO:HI:STEP (the floors to sweep)"),),
}


def _usage_error(err: click.exceptions.ClickException) -> None:
    """A usage error as one line (click's own shows the usage first), exit 2."""
    where = getattr(err, "ctx", None)
    hint = f" (see '{where.command_path} --help')" if isinstance(err, click.UsageError) and where is not None else ""
    message = err.format_message()
    if isinstance(err, click.NoSuchOption) and where is not None and err.option_name in _RENAMED:
        has = {o for p in where.command.params for o in p.opts}
        instead = [text for option, text in _RENAMED[err.option_name] if option in has]
        if instead:
            message = f"no option {err.option_name}: use {' or '.join(instead)}"
    _fail(f"{message}{hint}")


def _describe(err: Exception) -> str:
    """One line for an error that reached the command line's boundary."""
    if isinstance(err, SpeechClockError):
        return str(err)
    if isinstance(err, OSError):
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        return f"{where}{err.strerror or err}"
    if isinstance(err, MemoryError):
        return "out of memory (an input too large for this machine?)"
    if isinstance(err, RecursionError):
        return "an input nested too deeply to read"
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(err, BrokenProcessPool):
        return "a worker process died (out of memory?); run with fewer --jobs"
    return f"internal error: {type(err).__name__}: {err} (please report it; SPEECHCLOCK_DEBUG=1 shows where)"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a command: a KeyboardInterrupt, to unwind as one, that Python itself does not report.

    CPython ends a process whose ``exec`` of a string (a dataclass being
    made, a module being imported) was interrupted by a bare
    ``KeyboardInterrupt`` by killing it with SIGINT at exit, even when the
    exception was caught; this subclass is not that exception, so the
    command's own exit code (130) stands.
    """


def _signal_within(err: BaseException) -> BaseException | None:
    """The interrupt or termination an error wraps, if any.

    Python 3.11 wraps what a descriptor's ``__set_name__`` raises in a
    RuntimeError, so a signal that lands while a dataclass is being made (as a
    module is imported) arrives as "Error calling __set_name__", caused by the
    :class:`Interrupted` or ``SystemExit`` that the handler raised.
    """
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (KeyboardInterrupt, SystemExit)):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__
    return None


def _interrupt(signum: int, frame: object) -> None:
    """SIGINT: unwind like Ctrl-C (:class:`Interrupted`), so that temporary files are removed."""
    raise Interrupted


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM: unwind like Ctrl-C, so that temporary files are removed."""
    raise SystemExit(128 + signum)


def _send_again(previous: Any, unraisable: Any) -> None:
    """``sys.unraisablehook`` while a command runs: a signal is never lost in a callback.

    A handler that raises inside a callback Python cannot raise from (a
    finaliser, or a weakref callback such as the import system's module
    locks) has its exception printed as "Exception ignored", with a
    traceback, and the run goes on as if never signalled. The signal is sent
    again from a thread 0.1 s later, so that its handler runs in the
    command's own code (should it land in a callback again, it is sent again).
    """
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        signum = signal.SIGINT
    elif isinstance(exc, SystemExit) and exc.code == 128 + signal.SIGTERM:
        signum = signal.SIGTERM
    else:
        previous(unraisable)
        return
    try:  # (threading's start would wait here for the thread, and the signal could land in this hook)
        _thread.start_new_thread(_send_later, (signum,))
    except RuntimeError:  # the interpreter is ending: the run's exit code is set
        pass


def _send_later(signum: int) -> None:
    time.sleep(0.1)  # once the hook and the callback have returned
    os.kill(os.getpid(), signum)


@contextmanager
def _signals() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    hook = sys.unraisablehook
    sys.unraisablehook = functools.partial(_send_again, hook)
    try:
        yield
    finally:
        _remove_temporaries()
        signal.signal(signal.SIGTERM, previous)
        sys.unraisablehook = hook


def _stdout_keeps_bytes() -> None:
    """File names that are not UTF-8 are written back as the bytes they were (not a UnicodeEncodeError)."""
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors == "strict":
        try:
            sys.stdout.reconfigure(errors="surrogateescape")
        except (AttributeError, ValueError, io.UnsupportedOperation):
            pass


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    seen: set[str] = set()

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        text = _one_line(message)
        if text not in seen:  # once per cause, however many times it comes (a sweep replays 176 settings)
            seen.add(text)
            click.echo(f"speechclock: warning: {printable(text, newlines=False)}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", SpeechClockWarning)
        previous, warnings.showwarning = warnings.showwarning, show
        try:
            yield
        finally:
            warnings.showwarning = previous


def _remove_temporaries() -> None:
    """Remove this run's temporary files (only :mod:`clock.io.output` makes them: none before it is imported)."""
    output = sys.modules.get("clock.io.output")
    if output is not None:
        output.remove_temporaries()


def _set_force(value: bool) -> None:
    from ..io.inputs import set_force

    set_force(value)
