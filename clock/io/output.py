"""Writing results: atomic files, deterministic bytes.

Every file the tool writes goes to a temporary file in the destination's
folder first and is renamed over the destination only once complete, so a
failed run never leaves a half-written file or destroys the previous one.
The tool never writes to a recording or an event log.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["atomic_output", "json_text", "write_npz"]


@contextmanager
def atomic_output(
    path: str | os.PathLike[str] | None, *, binary: bool = False, protect: tuple[Path, ...] = ()
) -> Iterator[IO[Any]]:
    """Open ``path`` for writing atomically, or standard output when ``path`` is None or ``-``.

    Parameters
    ----------
    path : path-like or None
    binary : bool
        Open in binary mode.
    protect : tuple of Path
        Files that must never be overwritten (the inputs); naming one of them
        as the output is an error.

    Raises
    ------
    InvalidParameterError
        The output would overwrite an input, or its folder does not exist.
    """
    if path is None or str(path) == "-":
        yield sys.stdout.buffer if binary else sys.stdout
        return
    target = Path(path)
    for p in protect:
        if target.exists() and p.exists() and target.resolve() == p.resolve():
            raise InvalidParameterError(f"{target}: refusing to overwrite an input file with output")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InvalidParameterError(f"{target}: output folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(
            fd, "wb" if binary else "w", encoding=None if binary else "utf-8", newline=None if binary else ""
        ) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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


def write_npz(f: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    """Write arrays as an ``.npz`` archive with fixed timestamps (byte-identical reruns).

    ``numpy.savez`` stamps each member with the current time; this writes the
    same format (readable by ``numpy.load``) with every timestamp at
    1980-01-01, members in the given order.
    """
    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.external_attr = 0o644 << 16
            data = io.BytesIO()
            np.lib.format.write_array(data, np.ascontiguousarray(arr), allow_pickle=False)
            zf.writestr(member, data.getvalue())
