"""Where a recording's bytes come from: a local path, or an fsspec URL.

A recording, its event log, its label track and a config may be local paths
(read directly: the fast path) or URLs that `fsspec <https://filesystem-spec.readthedocs.io>`_
reads (``s3://``, ``gs://``, ``https://``, ``file://``, ...). A URL is read
through a buffered, seekable file object in blocks of :data:`BLOCK_BYTES`
(soundfile and PyAV both take file objects), never downloaded whole. fsspec is
part of the optional ``cluster`` extra (``pip install '.[cluster]'`` in a checkout of speech-clock)
and is imported only when a URL is met; ``s3://`` needs ``s3fs`` and ``gs://``
needs ``gcsfs`` besides.

A URL read waits at most :func:`network_timeout_s` (30 s, ``$SPEECHCLOCK_TIMEOUT``)
for a connection or for data, then stops with one line naming the URL; an
unreachable host is said to be unreachable, never "no such file".

A URL keeps its spelling everywhere the tool names it (messages, outputs), so
a run over URLs prints what a run over the same files as paths would, with
the URL in place of the path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import InvalidParameterError, RecordingError

__all__ = [
    "BLOCK_BYTES",
    "Source",
    "is_file",
    "is_url",
    "list_folder",
    "local_path",
    "name_of",
    "network_timeout_s",
    "open_binary",
    "read_text",
    "sibling",
    "url_info",
]

#: Bytes per read from a URL (fsspec's read-ahead block).
BLOCK_BYTES = 4 * 2**20

#: A recording, log or config: a local path or a URL string.
Source = str | os.PathLike[str]

# scheme://... with a scheme of two or more letters (so a Windows drive "C:\" is a path).
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+://")

EXTRA_HINT = "pip install '.[cluster]' in a checkout of speech-clock"

#: Environment variable: seconds a URL read or a scheduler connection may wait for an answer.
TIMEOUT_ENV = "SPEECHCLOCK_TIMEOUT"
#: Its default, and its largest value (seconds).
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 3600.0


def network_timeout_s() -> float:
    """How long a URL read or a scheduler connection waits for an answer: ``$SPEECHCLOCK_TIMEOUT``, else 30 s.

    Raises
    ------
    InvalidParameterError
        The variable is not a number of seconds in (0, 3600].
    """
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_TIMEOUT_S:
        raise InvalidParameterError(f"${TIMEOUT_ENV} must be seconds in (0, {MAX_TIMEOUT_S:g}], got {text!r}")
    return value


def is_url(source: object) -> bool:
    """Whether ``source`` is a URL (``scheme://...``) rather than a local path."""
    return isinstance(source, str) and _URL.match(source) is not None


def _fs(url: str) -> tuple[Any, str]:
    """The fsspec filesystem of a URL and the path inside it."""
    try:
        import fsspec
    except ImportError:
        raise InvalidParameterError(f"{url}: reading URLs needs fsspec: {EXTRA_HINT}") from None
    options: dict[str, Any] = {}
    if url.split("://", 1)[0].lower() in ("http", "https"):
        import aiohttp

        wait = network_timeout_s()
        options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(total=None, sock_connect=wait, sock_read=wait)}
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
    except (ImportError, ValueError) as err:
        # fsspec names the package a protocol needs ("Install s3fs to access S3").
        raise InvalidParameterError(f"{url}: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None
    except Exception as err:  # noqa: BLE001 - a filesystem that connects as it is made (ftp://, sftp://) raises anything
        raise _unreachable(url, err) from None
    return fs, path


def _unreachable(url: str, err: BaseException) -> RecordingError:
    """One error naming the URL: no answer in time, or why it cannot be read (never "no such file")."""
    if isinstance(err, FileNotFoundError) and err.__cause__ is not None:
        err = err.__cause__  # fsspec's HTTP filesystem calls every failure "not found"
    if isinstance(err, TimeoutError):
        return RecordingError(f"{url}: no answer within {network_timeout_s():g} s (${TIMEOUT_ENV} to wait longer)")
    reason = getattr(err, "strerror", None) or str(err).splitlines()[0] if str(err) else type(err).__name__
    return RecordingError(f"{url}: cannot read ({reason})")


def _missing(url: str, err: FileNotFoundError) -> RecordingError:
    """A FileNotFoundError: a real 404 is "no such file"; a failure fsspec calls one is said as it is."""
    cause = err.__cause__
    if (
        cause is not None
        and not isinstance(cause, FileNotFoundError)
        and getattr(cause, "status", None) not in (404, 410)
    ):
        return _unreachable(url, cause)
    return RecordingError(f"{url}: no such file")


def url_info(url: str) -> dict[str, Any]:
    """What the URL's filesystem says about it (``size``, ``type``, and a content tag where it has one).

    Raises
    ------
    RecordingError
        No such object, or it cannot be reached.
    """
    fs, path = _fs(url)
    try:
        return dict(fs.info(path))
    except FileNotFoundError as err:
        raise _missing(url, err) from None
    except Exception as err:  # noqa: BLE001 - network filesystems raise anything
        raise _unreachable(url, err) from None


def local_path(url: str) -> str | None:
    """The local path of a ``file://`` URL (None for any other URL)."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    parsed = urlparse(url)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return url2pathname(parsed.path)


def name_of(source: Source) -> str:
    """The file name of a path or a URL (its last component)."""
    if is_url(source):
        return str(source).rstrip("/").rsplit("/", 1)[-1]
    return Path(source).name


def sibling(source: Source, name: str) -> Source:
    """The file called ``name`` in the same folder as ``source``."""
    if is_url(source):
        return str(source).rstrip("/").rsplit("/", 1)[0] + "/" + name
    return Path(source).with_name(name)


def is_file(source: Source) -> bool:
    """Whether ``source`` is an existing file (False for a URL that cannot be reached)."""
    if not is_url(source):
        return Path(source).is_file()
    fs, path = _fs(str(source))
    try:
        return bool(fs.isfile(path))
    except Exception:  # noqa: BLE001
        return False


def list_folder(url: str) -> list[str] | None:
    """The files directly in a URL folder, as URLs sorted by name; None when the URL is not a folder."""
    fs, path = _fs(url)
    try:
        if not fs.isdir(path):
            return None
        entries = fs.ls(path, detail=True)
    except Exception as err:  # noqa: BLE001
        raise _unreachable(url, err) from None
    base = url.rstrip("/")
    names = sorted(name_of(str(e["name"])) for e in entries if e.get("type") == "file")
    return [f"{base}/{n}" for n in names]


@contextmanager
def open_binary(source: Source) -> Iterator[IO[bytes]]:
    """A local file or a URL, opened for reading bytes (a URL through a buffered, seekable reader)."""
    if not is_url(source):
        with open(source, "rb") as f:
            yield f
        return
    fs, path = _fs(str(source))
    try:
        f = fs.open(path, "rb", block_size=BLOCK_BYTES)
    except FileNotFoundError as err:
        raise _missing(str(source), err) from None
    except Exception as err:  # noqa: BLE001
        raise _unreachable(str(source), err) from None
    with f:
        yield f


def read_text(source: Source) -> str:
    """The UTF-8 text of a local file or a URL (raises OSError or UnicodeDecodeError as reading a file does)."""
    if not is_url(source):
        return Path(source).read_text(encoding="utf-8")
    with open_binary(source) as f:
        return f.read().decode("utf-8")


@contextmanager
def decoder_input(source: Source) -> Iterator[str | IO[bytes]]:
    """What soundfile and PyAV open: a local path as it is (the fast path), a URL as a file object."""
    if not is_url(source):
        yield str(source)
        return
    with open_binary(source) as f:
        yield f
