"""Reading the text inputs (event logs, label tracks, configs, baselines) with limits.

A text input must be a regular file: a FIFO, a device or a directory given as
``--events``, ``--labels`` or ``--config`` is refused with one line, and is
never opened (a FIFO with no writer would block; ``/dev/zero`` never ends).
Files are read up to a size limit, line by line where the format has lines,
each line up to :data:`MAX_LINE_BYTES`; every violation is one error naming
the file (and line).
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import SpeechClockError

__all__ = [
    "CONFIG_NAME",
    "MAX_CONFIG_BYTES",
    "MAX_EVENT_LOG_BYTES",
    "MAX_EVENT_LOG_LINES",
    "MAX_LABELS_BYTES",
    "MAX_LABELS_LINES",
    "MAX_LINE_BYTES",
    "file_kind",
    "find_config",
    "iter_lines",
    "read_text",
]

#: The name of the config file a folder of recordings holds.
CONFIG_NAME = "speechclock.toml"

#: The longest line of an event log or label track (an OpenAI ``response.done`` with its transcript fits).
MAX_LINE_BYTES = 1 << 20
#: What is kept of an overlong line: enough to tell its type.
_HEAD_BYTES = 4096
#: The largest event log, and the most lines in one (a session logs an event every few seconds;
#: each line costs a few hundred bytes of memory once read).
MAX_EVENT_LOG_BYTES = 64 << 20
MAX_EVENT_LOG_LINES = 1_000_000
#: The largest label track, and the most lines in one.
MAX_LABELS_BYTES = 64 << 20
MAX_LABELS_LINES = 1_000_000
#: The largest ``speechclock.toml`` or baseline.
MAX_CONFIG_BYTES = 16 << 20


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is (``"a FIFO (named pipe)"``, ...), for messages."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _open_regular(path: Path, what: str, error: type[SpeechClockError]) -> int:
    """A read-only descriptor of a regular file, checked before and after opening (never blocks)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: cannot read {what} (no such file)") from None
    except OSError as err:
        raise error(f"{path}: cannot read {what} ({err.strerror or err})") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: is {file_kind(st.st_mode)}; the {what} must be a regular file")
    try:
        # O_NONBLOCK: should the file be swapped for a FIFO after the check, opening it still cannot hang.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise error(f"{path}: cannot read {what} ({err.strerror or err})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error(f"{path}: is not a regular file; the {what} must be a regular file")
    os.set_blocking(fd, True)
    return fd


def _too_big(path: Path, what: str, limit: int, error: type[SpeechClockError]) -> SpeechClockError:
    return error(f"{path}: {what} larger than {limit >> 20} MiB (the limit for one file)")


def read_text(path: str | os.PathLike[str], *, what: str, error: type[SpeechClockError], max_bytes: int) -> str:
    """The whole text (UTF-8) of a regular file of at most ``max_bytes``.

    Raises
    ------
    error
        Missing, unreadable, not a regular file, larger than ``max_bytes``,
        or not UTF-8 (the message names the file).
    """
    p = Path(path)
    with os.fdopen(_open_regular(p, what, error), "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_big(p, what, max_bytes, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise error(f"{p}:{line}: not UTF-8 text (byte {err.start})") from None


def iter_lines(
    path: str | os.PathLike[str],
    *,
    what: str,
    error: type[SpeechClockError],
    max_bytes: int,
    max_lines: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Iterator[tuple[int, str, str | None]]:
    """``(line number, text, problem)`` of each line of a regular file (or a URL), read line by line.

    Lines are split at ``\\n`` only (a trailing ``\\r`` is dropped). A line
    longer than ``max_line_bytes`` comes with the problem and, as its text,
    its first 4 KiB (undecodable bytes replaced; the rest is skipped), so
    that the caller can tell what it was; one not UTF-8 with an empty text
    and the problem; otherwise the problem is None.

    Raises
    ------
    error
        Missing, unreadable, not a regular file, larger than ``max_bytes`` or
        longer than ``max_lines``.
    """
    from .sources import is_url, open_binary

    p: Any = path if is_url(path) else Path(path)
    if is_url(p):
        try:
            with open_binary(p) as remote:
                data = remote.read(max_bytes + 1)  # a URL is read whole, within the same limit
        except OSError as err:
            raise error(f"{p}: cannot read {what} ({getattr(err, 'strerror', None) or err})") from None
        if len(data) > max_bytes:
            raise _too_big(p, what, max_bytes, error)
        opened: Any = io.BytesIO(data)
    else:
        opened = os.fdopen(_open_regular(p, what, error), "rb")
    with opened as f:
        total = 0
        number = 0
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if max_lines is not None and number > max_lines:
                raise error(f"{p}: {what} of more than {max_lines} lines (the limit for one file)")
            total += len(raw)
            overlong = len(raw) > max_line_bytes and not raw.endswith(b"\n")
            head = raw[:_HEAD_BYTES]
            while overlong and not raw.endswith(b"\n"):
                raw = f.readline(1 << 16)
                if not raw:
                    break
                total += len(raw)
                if total > max_bytes:
                    break
            if total > max_bytes:
                raise _too_big(p, what, max_bytes, error)
            if overlong:
                yield number, head.decode("utf-8", errors="replace"), f"line longer than {max_line_bytes >> 10} KiB"
                continue
            try:
                text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
            except UnicodeDecodeError as err:
                yield number, "", f"not UTF-8 text (byte {err.start} of the line)"
                continue
            yield number, text, None


def find_config(folder: str | os.PathLike[str]) -> Path | None:
    """``speechclock.toml`` in a folder, if there is one."""
    p = Path(folder) / CONFIG_NAME
    try:
        return p if p.is_file() else None
    except (OSError, ValueError):  # a path too long to exist (ENAMETOOLONG), or one with a NUL: no config there
        return None
