"""Writing results: atomic files that never replace what they should not, deterministic bytes.

An output path is handled the way careful command-line tools do:

* ``-`` (or no ``-o``) is standard output; ``/dev/stdout``, ``/dev/stderr``
  and ``/dev/fd/N`` are the open descriptors themselves;
* anything that exists and is not a regular file (``/dev/null``, a FIFO, a
  terminal, another device) is opened and written through, never replaced;
* a symbolic link is followed: the file it points to is replaced, the link
  stays;
* a regular file is written to a temporary file in the same folder and
  renamed over the target only once complete, so a failed or interrupted
  run never leaves a half-written file or destroys the previous one. The
  replacement keeps the target's permission bits (and owner, where allowed);
  a new file gets ``0666`` less the umask. A read-only target (no write
  bit) is refused, even for root;
* a file that looks like one of the user's recordings (by name or by its
  first bytes), event logs, label tracks, configs or baselines is refused
  unless ``--force`` (:func:`clock.io.inputs.owned_kind`), whoever's input
  it is; the inputs of the run are refused even then.

Temporary files are named ``.speechclock-NAME.PID-XXXXXXXX.tmp`` (NAME
shortened so that the name fits in 255 bytes). They are removed when the run
fails or is interrupted (SIGINT, SIGTERM); one left by a run killed outright
(SIGKILL, a power cut) is removed by a later write into the same folder once
it is :data:`STALE_TEMP_S` old and its process is gone.

No output may land on an input of the run (see :class:`clock.io.inputs.Inputs`).
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import re
import stat
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import InvalidParameterError, SpeechClockError
from .files import file_kind
from .inputs import Inputs

__all__ = [
    "FIFO_WAIT_S",
    "STALE_TEMP_S",
    "TEMP_PATTERN",
    "atomic_output",
    "check_target",
    "json_text",
    "remove_temporaries",
    "write_json_columns",
    "write_npz",
]

#: A temporary file of ours older than this (seconds), whose process is gone, is a left-over.
STALE_TEMP_S = 3600.0

#: How long an output FIFO may go without a reader before the run is refused (seconds).
FIFO_WAIT_S = 10.0

#: The names of temporary files (group ``pid``: the process that made it).
TEMP_PATTERN = re.compile(r"^\.speechclock-.*\.(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp$", re.DOTALL)

# Longest file name (NAME_MAX on Linux and macOS), in bytes.
_NAME_MAX = 255

# Temporary files being written by this process (removed on SIGTERM/SIGINT and at exit).
_LIVE: set[str] = set()

# Names that stand for a descriptor already open.
_DESCRIPTOR = re.compile(r"^/(?:dev/(?:(?P<std>stdout|stderr)|fd/(?P<fd>[0-9]+))|proc/self/fd/(?P<pfd>[0-9]+))$")


def remove_temporaries() -> None:
    """Remove this process's unfinished temporary files (for signal handlers and exit)."""
    for tmp in list(_LIVE):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _LIVE.discard(tmp)


def _temp_name(target: str) -> str:
    """``.speechclock-NAME.PID-XXXXXXXX.tmp``, NAME cut (at a byte boundary) to fit in NAME_MAX."""
    tail = f".{os.getpid()}-{os.urandom(4).hex()}.tmp"
    room = _NAME_MAX - len(".speechclock-") - len(tail)
    short = os.fsdecode(os.fsencode(target)[:room])
    while len(os.fsencode(short)) > room:  # a cut multi-byte character re-encodes longer
        short = short[:-1]
    return f".speechclock-{short}{tail}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _remove_stale(folder: str) -> None:
    """Remove left-over temporary files of killed runs in ``folder`` (old, ours, their process gone)."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        m = TEMP_PATTERN.match(entry.name)
        if m is None or entry.path in _LIVE:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > STALE_TEMP_S and not _pid_alive(int(m["pid"])):
                os.unlink(entry.path)
        except (OSError, ValueError):
            continue


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def _stream(f: IO[Any], binary: bool, name: str = "standard output") -> Iterator[IO[Any]]:
    """An already open text stream, or its binary buffer, left open afterwards."""
    with _write_errors(name):
        f.flush()
        out = getattr(f, "buffer", f) if binary else f
        yield out
        out.flush()


@contextmanager
def _write_through(fd: int, binary: bool, name: str) -> Iterator[IO[Any]]:
    with _write_errors(name), _fdopen(fd, binary) as f:
        yield f


@contextmanager
def _write_errors(name: str) -> Iterator[None]:
    """A failed write (a full disk, an I/O error) as one error naming the output."""
    try:
        yield
    except (BrokenPipeError, SpeechClockError):
        raise
    except OSError as err:
        if err.errno is None or err.filename is not None:
            raise
        raise InvalidParameterError(f"{name}: cannot write ({err.strerror or err})") from None


def _fdopen(fd: int, binary: bool) -> IO[Any]:
    """A file object on ``fd``: binary, or UTF-8 text (file names that are not UTF-8 keep their bytes)."""
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="")


@contextmanager
def atomic_output(
    path: str | os.PathLike[str] | None,
    *,
    binary: bool = False,
    inputs: Inputs | None = None,
    option: str = "-o",
    allow: tuple[str, ...] = (),
    protect: tuple[Path, ...] = (),
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing (see the module notes), or standard output when ``path`` is None or ``-``.

    Parameters
    ----------
    path : path-like or None
    binary : bool
        Open in binary mode.
    inputs : Inputs, optional
        The files the run reads; naming one of them as the output is an error.
    option : str
        The option that gave ``path``, for messages.
    allow : tuple of str
        Kinds of input that this output may replace (the baseline, for ``--update-baseline``).
    protect : tuple of Path
        More input files (added to ``inputs``).

    Raises
    ------
    InvalidParameterError
        The output would overwrite an input, its folder does not exist, it is
        a directory or a read-only file.
    """
    guard = inputs if inputs is not None else Inputs()
    for p in protect:
        guard.add(p, "input")
    if path is None or os.fspath(path) == "-":
        _check_stdout(guard, option)
        with _stream(sys.stdout, binary) as out:
            yield out
        return
    name = os.fspath(path)
    guard.check_output(name, option, allow=allow)
    m = _DESCRIPTOR.match(os.path.abspath(name))
    if m is not None:
        if m["std"] is not None:
            if m["std"] == "stdout":
                _check_stdout(guard, option)
            with _stream(sys.stdout if m["std"] == "stdout" else sys.stderr, binary, name) as out:
                yield out
            return
        fd = int(m["fd"] or m["pfd"])
        guard.check_descriptor(fd, option)
        try:
            dup = os.dup(fd)
        except OSError as err:
            raise InvalidParameterError(f"{name}: cannot write ({err.strerror or err})") from None
        with _write_through(dup, binary, name) as out:
            yield out
        return
    st = _existing_target(name, option)
    if st is not None and not stat.S_ISREG(st.st_mode):
        # /dev/null, a FIFO, a terminal: write to it, never replace it.
        fd = _open_write_through(name, st)
        with _write_through(fd, binary, name) as out:
            yield out
        return
    with _replace(name, st, binary) as out:
        yield out


def _existing_target(name: str, option: str) -> os.stat_result | None:
    """What stands at an output's name (None: nothing), refused where no output can go there.

    A directory, a block device or a device like ``/dev/full`` is refused
    with one line; anything else (a file, ``/dev/null``, a FIFO, a terminal)
    is returned for the caller to replace or write through.
    """
    try:
        st = os.stat(name)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise InvalidParameterError(f"{name}: cannot write ({err.strerror or err})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InvalidParameterError(f"{name}: is a directory")
    if not stat.S_ISREG(st.st_mode):
        why = _holds_nothing(st)
        if why is not None:
            raise InvalidParameterError(f"{name}: cannot write {option} to {why}")
    return st


def _holds_nothing(st: os.stat_result) -> str | None:
    """Why a device cannot take an output (a block device, or one like /dev/full), or None."""
    if stat.S_ISBLK(st.st_mode):
        return "a block device (a disk), never an output"
    if stat.S_ISCHR(st.st_mode):
        try:
            full = os.stat("/dev/full")
        except OSError:
            return None
        if stat.S_ISCHR(full.st_mode) and st.st_rdev == full.st_rdev:
            return "a device that holds nothing (every write to it fails: no space left)"
    return None


def check_target(path: str | os.PathLike[str] | None, option: str = "-o") -> None:
    """Refuse, before any work, an output that could not be written where it is named.

    The checks :func:`atomic_output` makes when it writes, made first: the
    name is not empty, not a directory, its folder exists and takes a new
    file (a temporary file is made and removed there), an existing file is
    writable, and a device can hold it (a block device or ``/dev/full``
    cannot; ``/dev/null``, a FIFO or a terminal is written through).
    Standard output (``-``, ``/dev/stdout``, ``/dev/fd/N``) is not checked.

    Raises
    ------
    InvalidParameterError
        One line naming the output and the problem.
    """
    if path is None:
        return
    name = os.fspath(path)
    if name == "":
        raise InvalidParameterError(f"{option}: an empty file name (give a file, or - for standard output)")
    if name == "-" or _DESCRIPTOR.match(os.path.abspath(name)):
        return
    st = _existing_target(name, option)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return  # written through when the time comes (a FIFO waits for its reader then)
    target = os.path.realpath(name)
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise InvalidParameterError(f"{name}: output folder {os.path.dirname(name) or '.'} does not exist")
    if st is not None and (not os.access(target, os.W_OK) or not st.st_mode & 0o222):
        raise InvalidParameterError(f"{name}: not writable (permission denied); it is left as it is")
    tmp = os.path.join(folder, _temp_name(os.path.basename(target)))
    _LIVE.add(tmp)  # (a signal while the probe stands removes it)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as err:
        _LIVE.discard(tmp)
        raise InvalidParameterError(f"{name}: cannot write in {folder} ({err.strerror or err})") from None
    os.close(fd)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    _LIVE.discard(tmp)


def _open_write_through(name: str, st: os.stat_result) -> int:
    """A descriptor writing to a device or FIFO; a FIFO that nothing reads within :data:`FIFO_WAIT_S` is refused."""
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            # O_NONBLOCK: a FIFO with no reader fails (ENXIO) instead of blocking the run forever.
            fd = os.open(name, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            os.set_blocking(fd, True)
            return fd
        except OSError as err:
            if err.errno == errno.ENXIO and time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            why = f"nothing reads it within {FIFO_WAIT_S:g} s" if err.errno == errno.ENXIO else (err.strerror or err)
            raise InvalidParameterError(f"{name}: cannot write to {file_kind(st.st_mode)} ({why})") from None


def _check_stdout(guard: Inputs, option: str) -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    guard.check_descriptor(fd, "standard output" if option == "-o" else option)


@contextmanager
def _replace(name: str, st: os.stat_result | None, binary: bool) -> Iterator[IO[Any]]:
    """Write a temporary file beside the target (a link's target) and rename it over the target."""
    target = os.path.realpath(name)  # a symbolic link: replace the file it points to
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        shown = os.path.dirname(name) or "."
        raise InvalidParameterError(f"{name}: output folder {shown} does not exist")
    if st is not None and (not os.access(target, os.W_OK) or not st.st_mode & 0o222):  # read-only even for root
        raise InvalidParameterError(f"{name}: not writable (permission denied); it is left as it is")
    _remove_stale(folder)
    tmp = os.path.join(folder, _temp_name(os.path.basename(target)))
    # Known before it exists: a signal the moment after it is made still finds it to remove.
    _LIVE.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as err:
        _LIVE.discard(tmp)  # (not made: nothing of ours to remove)
        raise InvalidParameterError(f"{name}: cannot write in {folder} ({err.strerror or err})") from None
    try:
        with _write_errors(name), _fdopen(fd, binary) as f:
            yield f
            f.flush()
            if st is not None:
                try:
                    os.fchown(f.fileno(), st.st_uid, st.st_gid)
                except OSError:
                    pass
            os.fchmod(f.fileno(), stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            os.fsync(f.fileno())
        os.replace(tmp, target)
        _LIVE.discard(tmp)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        _LIVE.discard(tmp)
        raise
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (np.floating,)):
        return _jsonable(float(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def json_text(obj: Any) -> str:
    """Serialise to JSON deterministically; NaN and infinities become null."""
    return json.dumps(_jsonable(obj), indent=2, allow_nan=False) + "\n"


def write_json_lazily(f: IO[str], obj: Mapping[str, Any], key: str, items: Iterable[Any]) -> None:
    """Write ``json_text`` of ``obj`` with ``obj[key]`` (a list) being ``items``, made one at a time.

    The bytes are those of :func:`json_text`; memory stays at one item, where the text of a million beats
    would take gigabytes.
    """
    marker = "speechclock-lazy-" + os.urandom(8).hex()  # (never written)
    text = json_text({k: (marker if k == key else v) for k, v in obj.items()})
    head, tail = text.split(f"{json.dumps(key)}: {json.dumps(marker)}", 1)
    f.write(head + json.dumps(key) + ": [")
    first = True
    for item in items:
        body = json.dumps(_jsonable(item), indent=2, allow_nan=False).replace("\n", "\n    ")
        f.write(("\n    " if first else ",\n    ") + body)
        first = False
    f.write(("]" if first else "\n  ]") + tail)


def write_json_columns(
    f: IO[str], head: Mapping[str, Any], columns: Mapping[str, np.ndarray], *, chunk: int = 65536
) -> None:
    """Write ``json_text({**head, **columns})`` without building it: columns go out in chunks.

    The bytes are those of :func:`json_text` (one value per line, NaN and
    infinities as null); memory stays at the arrays themselves, where the
    whole text of a 3-hour level trace would take hundreds of MB.
    """
    text = json.dumps(_jsonable(dict(head)), indent=2, allow_nan=False)
    f.write(text[:-2] if head else "{")  # without the closing "\n}"
    first = not head
    for name, values in columns.items():
        f.write(("\n" if first else ",\n") + f"  {json.dumps(name)}: [")
        first = False
        arr = np.asarray(values)
        for start in range(0, arr.size, chunk):
            part = arr[start : start + chunk].tolist()
            body = ",\n    ".join("null" if isinstance(v, float) and not math.isfinite(v) else repr(v) for v in part)
            f.write(("\n    " if start == 0 else ",\n    ") + body)
        f.write("\n  ]" if arr.size else "]")
    f.write("\n}\n" if not first else "}\n")


def write_npz(f: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    """Write arrays as an ``.npz`` archive with fixed timestamps (byte-identical reruns).

    ``numpy.savez`` stamps each member with the current time; this writes the
    same format (readable by ``numpy.load``) with every timestamp at
    1980-01-01, members in the given order.
    """
    import zipfile

    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.external_attr = 0o644 << 16
            data = io.BytesIO()
            np.lib.format.write_array(data, np.ascontiguousarray(arr), allow_pickle=False)
            zf.writestr(member, data.getvalue())
