"""The committed baseline: per recording, beat count, onsets and the longest gap.

``check --update-baseline`` rewrites the baseline under a lock: it takes an
exclusive ``flock`` on ``.NAME.lock`` beside the baseline, reads what is on
disk then, merges its own recordings into it, writes it atomically and
removes the lock file. Two runs updating at once therefore both keep their
recordings, whatever the order they finish in.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .files import MAX_CONFIG_BYTES, read_text
from .inputs import Inputs
from .output import atomic_output, json_text

__all__ = ["locked", "read_baseline", "update_baseline", "write_baseline"]


def read_baseline(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Recording name -> entry; an absent file is an empty baseline.

    Raises
    ------
    ConfigError
        A file that is not a baseline (names the file and the problem).
    """
    p = Path(path)
    if not os.path.lexists(p):
        return {}
    text = read_text(p, what="baseline", error=ConfigError, max_bytes=MAX_CONFIG_BYTES)
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ConfigError(f"{p}: not a readable baseline (nested too deeply)") from None
    except ValueError as err:
        raise ConfigError(f"{p}: not a readable baseline ({str(err)[:80]})") from None
    recs = doc.get("recordings") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("schema") != 1 or not isinstance(recs, dict):
        raise ConfigError(f"{p}: not a speechclock baseline (needs schema 1 and a 'recordings' object)")
    for name, entry in recs.items():
        problem = _entry_problem(entry)
        if problem is not None:
            raise ConfigError(f"{p}: recording {json.dumps(name)}: {problem}")
    return recs


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _entry_problem(entry: Any) -> str | None:
    """What is wrong with one baseline entry (``beats``, ``onsets_s``, ``max_gap_s``), or None."""
    if not isinstance(entry, dict):
        return "must be an object with beats, onsets_s and max_gap_s"
    beats = entry.get("beats")
    if beats is not None and (isinstance(beats, bool) or not isinstance(beats, int) or beats < 0):
        return f"'beats' must be a whole number >= 0, got {json.dumps(beats)[:40]}"
    onsets = entry.get("onsets_s", [])
    if not isinstance(onsets, list) or not all(o is None or _number(o) for o in onsets):
        return "'onsets_s' must be a list of seconds (or null)"
    gap = entry.get("max_gap_s")
    if gap is not None and not _number(gap):
        return f"'max_gap_s' must be seconds or null, got {json.dumps(gap)[:40]}"
    return None


def write_baseline(
    path: str | os.PathLike[str],
    entries: dict[str, dict[str, Any]],
    *,
    inputs: Inputs | None = None,
    protect: tuple[Path, ...] = (),
) -> None:
    """Write the baseline atomically (temporary file, then rename), sorted by name.

    Raises
    ------
    InvalidParameterError
        The path is another input of the run (a recording, a log, the config).
    """
    with atomic_output(path, inputs=inputs, protect=protect, option="the baseline", allow=("baseline",)) as out:
        out.write(json_text({"schema": 1, "recordings": dict(sorted(entries.items()))}))


@contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock for ``path`` (a ``flock`` on ``.NAME.lock`` beside it).

    The lock file is removed while still held; a waiter that then gets the
    lock of the removed file sees that the name now leads elsewhere (or
    nowhere) and tries again, so two holders never overlap.
    """
    p = Path(path)
    lock = p.with_name(f".{p.name}.lock")
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as err:
            raise ConfigError(f"{p}: cannot lock the baseline ({lock}: {err.strerror or err})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                now = os.stat(lock)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the holder before us removed it: lock the new one
    try:
        yield
    finally:
        try:
            os.unlink(lock)
        except OSError:
            pass
        os.close(fd)


def update_baseline(
    path: str | os.PathLike[str], entries: dict[str, dict[str, Any]], *, inputs: Inputs | None = None
) -> dict[str, dict[str, Any]]:
    """Merge ``entries`` into the baseline on disk, under :func:`locked`, and write it.

    Returns
    -------
    dict
        The baseline as written (what was on disk, with ``entries`` replacing
        the recordings they name).
    """
    if inputs is not None:
        inputs.check_output(path, "the baseline", allow=("baseline",))
    with locked(path):
        merged = dict(read_baseline(path)) | entries
        write_baseline(path, merged, inputs=inputs)
    return merged
