"""Derivations kept beside the trace cache, keyed by what they are computed from.

A derivation (with its leave-one-out stability and held-out evidence, most
of a cached run's time) is a pure function of the observations (traces,
event logs, labels, metadata), the margins, the setting it is compared
with and the tool's code. ``derive`` on unchanged recordings with a cache
therefore reads the result back instead of replaying every recording left
out again. The key is the SHA-256 of all of them (and of the tool's
fingerprint, :func:`clock.run.cache.tool_fingerprint`), so a change to any
input or to the code derives afresh; an entry that cannot be read is
derived afresh and replaced. Entries live under ``results/`` in the cache
folder (``--no-cache`` uses none), are written atomically, and are Python
pickles of the tool's own frozen dataclasses, each signed with the trace
cache's key (an HMAC-SHA256 with the secret kept outside the cache, see
:mod:`clock.run.cache`): an entry another machine wrote, or anyone forged, is
never unpickled, and is derived afresh, so a cache can change no verdict.
Without the key no result is kept.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .cache import NoCacheKey, TraceCache, tool_fingerprint

__all__ = ["cached_result", "result_key"]

T = TypeVar("T")

#: Bumped when what an entry holds changes shape.
_FORMAT = 2
_DIGEST = hashlib.sha256().digest_size


def result_key(kind: str, observations: Sequence[Any], params: dict[str, Any]) -> str | None:
    """The content key of a result: ``kind``, the observations, the keyword parameters and the tool.

    None when the inputs cannot be serialised (then nothing is cached).
    """
    h = hashlib.sha256(f"speech-clock results {_FORMAT} {kind}\n{tool_fingerprint()}\n".encode())
    try:
        for o in observations:
            t = o.trace
            # Fields only (their reprs are exact: floats round-trip), never state a computation cached on them.
            head = (o.name, t.sample_rate_hz, t.ticks, t.metric, t.options, t.frames.dtype.str, t.level.dtype.str)
            h.update(repr(head).encode() + b"\0")
            h.update(t.frames.tobytes() + b"\0" + t.level.tobytes() + b"\0")
            h.update(repr((o.events, o.labels, sorted(o.meta.items()), o.agreement)).encode() + b"\0")
        h.update(repr(sorted(params.items())).encode())
    except (AttributeError, TypeError):
        return None
    return h.hexdigest()


def cached_result(
    cache: TraceCache | None,
    kind: str,
    observations: Sequence[Any],
    compute: Callable[[], T],
    *,
    keep: Callable[[], bool] | None = None,
    **params: Any,
) -> T:
    """``compute()``, or the result a run on the same inputs kept in ``cache`` (None: always computed).

    ``keep``, asked after computing, says whether the inputs are still what
    the key says (a recording unchanged while it was read); else nothing is kept.
    """
    key = None if cache is None else result_key(kind, observations, params)
    if cache is None or key is None:
        return compute()
    try:
        secret = cache._secret()
    except NoCacheKey:
        return compute()  # the trace cache has said why, once
    path = Path(cache.folder) / "results" / key[:2] / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            data = f.read()
        mac, body = data[:_DIGEST], data[_DIGEST:]
        if not hmac.compare_digest(mac, hmac.new(secret, key.encode() + body, hashlib.sha256).digest()):
            raise ValueError("not signed with this cache's key")
        value, shown = pickle.loads(body)
        _show(shown)  # the warnings the computation gave, again, as the trace cache does
        return value  # type: ignore[no-any-return]
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a damaged or foreign entry: derive afresh and replace it
        pass
    with warnings.catch_warnings(record=True) as caught:  # the filters in force decide what is kept
        value = compute()
    shown = [(str(w.message), w.category, w.filename, w.lineno) for w in caught]
    _show(shown)
    if keep is not None and not keep():
        return value
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")
        try:
            body = pickle.dumps((value, shown), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(fd, "wb") as f:
                f.write(hmac.new(secret, key.encode() + body, hashlib.sha256).digest() + body)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass  # a cache that cannot be written only costs the next run its time
    return value


def _show(shown: Sequence[tuple[str, type[Warning], str, int]]) -> None:
    for message, category, filename, lineno in shown:
        warnings.showwarning(category(message), category, filename, lineno)
