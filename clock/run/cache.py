"""A cache of level traces, so a corpus is decoded once, not on every run.

A recording's level traces depend only on its bytes and on the options that
shape them (fftSize and the analyser's other attributes, the cadence, the
alignment, the context rate, the metric, the render-quantum trace) and on
the code that decodes and measures it. The cache keeps each recording's
traces (with its header and the decoder's warnings, which are replayed on a
hit) under a key made of all of these:

* the **content**: the SHA-256 of the file's bytes, read in blocks. So that
  an unchanged corpus is not read in full on every run, a small index maps a
  file's identity (resolved path, device, inode, size, mtime and ctime, all
  in nanoseconds) to the hash taken the last time; any change to the file
  changes its ctime, so a changed file is always hashed again. A file
  modified within :data:`RACY_S` of its hashing is hashed again too (git's
  "racily clean" rule: a write in the same clock tick as the hash would not
  show in the mtime). A URL is keyed by its object store's content tag
  (ETag, MD5, CRC32C or version) with its size; a URL without one is read
  once per run to hash it. ``file://`` URLs use the index as paths do.
* the **options**, as given to :func:`clock.io.recording.read_recording`.
* the **tool**: the package version, a hash of the package's own source
  files, and the versions of numpy, soundfile/libsndfile, PyAV/FFmpeg and
  soxr. Any new release, local edit or decoder upgrade starts afresh.

Nothing in the folder is trusted on its word: CI caches are restored from
other branches and machines, and anyone who can write the folder could
rewrite an entry with a recomputed checksum. Index records and entries are
therefore authenticated with an HMAC-SHA256 under a per-user **key kept
outside the cache** (:func:`default_key_file`, ``$SPEECHCLOCK_CACHE_KEY`` to
move it), 32 random bytes created ``0600`` on first use. The key's id is part
of every entry's name, so a cache made with another key (another machine, a
restored CI cache) is simply cold; an index record or entry whose HMAC does
not verify is never used: the file is hashed, the recording decoded again.
A key that cannot be read or created, or one inside the cache folder, means
the run goes on without the cache, with one warning.

Entries are written to a temporary file and renamed into place, so a reader
never sees half an entry, and they end with the HMAC of their bytes: an
entry that is truncated, damaged, forged or filed under the wrong key is
recomputed, with a warning naming it, and never trusted. Every entry carries the key it
was made for, checked on every read; its header is read first (at most
4 MiB) and the rest only as far as the traces it declares, which must fit the
recording it describes (its length, else :data:`MAX_CACHED_S`) at the key's
cadence; decompression stops there too. Implausible values (a tick period of
zero, frames out of order, NaN levels) make the entry a miss. An index file
is read up to 64 KiB; a damaged one only means the file is hashed again. A
FIFO or device is never hashed. A URL whose ETag is weak (``W/``) or made of
the file's mtime and size, as web servers make them, is keyed by its content.

Where: ``$SPEECHCLOCK_CACHE``, else ``$XDG_CACHE_HOME/speechclock``, else
``~/.cache/speechclock`` (``~/Library/Caches/speechclock`` on macOS,
``%LOCALAPPDATA%\\speechclock\\Cache`` on Windows). The command line's
``--cache DIR`` moves it and ``--no-cache`` skips it. The folder holds a
``CACHEDIR.TAG`` (backup tools skip it) and is bounded: after a corpus run,
the least recently used entries are removed until it is under
:data:`DEFAULT_MAX_MB` megabytes (``$SPEECHCLOCK_CACHE_MB`` to change). An
hour of audio at 60 ticks per second takes about 2 MB.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import stat
import sys
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..core.analyser import AnalyserOptions
from ..core.levels import LevelTrace
from ..core.ticks import Ticks
from ..errors import InvalidParameterError, SpeechClockWarning
from ..io.decode import AudioInfo
from ..io.sources import Source, is_url, local_path, open_binary, url_info

__all__ = [
    "CACHE_ENV",
    "KEY_ENV",
    "DEFAULT_MAX_MB",
    "MAX_CACHED_S",
    "NoCacheKey",
    "RACY_S",
    "SIZE_ENV",
    "TraceCache",
    "default_folder",
    "default_key_file",
    "resolve_cache",
    "tool_fingerprint",
]

#: Environment variable that moves the cache.
CACHE_ENV = "SPEECHCLOCK_CACHE"
#: Environment variable that moves the key authenticating the cache (a file outside the cache folder).
KEY_ENV = "SPEECHCLOCK_CACHE_KEY"
#: Environment variable that bounds its size (megabytes).
SIZE_ENV = "SPEECHCLOCK_CACHE_MB"
#: Default bound on the cache's size (megabytes).
DEFAULT_MAX_MB = 2048
#: A file modified this close to its hashing is hashed again next time.
RACY_S = 2.0

_FORMAT = 2
_KEY_BYTES = 32
#: The longest recording an entry may describe when its header gives no length (seconds).
MAX_CACHED_S = 24 * 3600
# An index file, and an entry's header, are never read beyond these.
_MAX_INDEX_BYTES = 64 << 10
_MAX_HEADER_BYTES = 4 << 20
_MAGIC = b"speechclock trace cache\n"
_DIGEST = 32  # bytes of HMAC-SHA256 at the end of an entry
_READ = 1 << 20
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by speech-clock (level traces).\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
# Keys a URL's filesystem gives that change whenever the content does.
_CONTENT_TAGS = ("ETag", "etag", "md5Hash", "crc32c", "VersionId", "generation")

#: What :meth:`TraceCache.traces` computes and keeps: the header and the traces.
Decoded = tuple[AudioInfo, list[LevelTrace]]


def default_folder() -> Path:
    """The cache folder: ``$SPEECHCLOCK_CACHE``, else the user's cache folder + ``speechclock``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "speechclock"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return (Path(local) if local else Path.home() / "AppData" / "Local") / "speechclock" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "speechclock"


def default_key_file() -> Path:
    """The key authenticating the cache: ``$SPEECHCLOCK_CACHE_KEY``, else the user's config folder + ``speechclock``."""
    env = os.environ.get(KEY_ENV)
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "speechclock" / "cache-key"
    if sys.platform == "win32":
        roaming = os.environ.get("APPDATA")
        return (Path(roaming) if roaming else Path.home() / "AppData" / "Roaming") / "speechclock" / "cache-key"
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "speechclock" / "cache-key"


class NoCacheKey(Exception):
    """The cache key cannot be had (the message says why)."""


@functools.cache
def _load_secret(key_file: str, folder: str) -> bytes:
    """The key in ``key_file``, created (32 random bytes, mode 0600) when absent; never one inside ``folder``."""
    real_key = os.path.realpath(key_file)
    real_folder = os.path.realpath(folder)
    if real_key == real_folder or real_key.startswith(real_folder.rstrip(os.sep) + os.sep):
        raise NoCacheKey("it is inside the cache folder, where anyone restoring the cache could replace it")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(key_file, flags)
    except FileNotFoundError:
        try:
            _create_key(Path(key_file))
            fd = os.open(key_file, flags)
        except OSError as err:
            raise NoCacheKey(err.strerror or str(err)) from None
    except OSError as err:
        raise NoCacheKey(err.strerror or str(err)) from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise NoCacheKey("not a regular file")
        data = f.read(4096)
    if len(data) < _KEY_BYTES:
        raise NoCacheKey(f"{len(data)} bytes, fewer than the {_KEY_BYTES} of a key")
    return data


def _create_key(path: Path) -> None:
    """Write a new key to ``path`` (0600), never replacing one another process wrote meanwhile."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".cache-key.", suffix=".tmp", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(_KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another run made it first: use theirs
    finally:
        Path(tmp).unlink(missing_ok=True)


def _mac(secret: bytes, data: bytes) -> bytes:
    return hmac.new(secret, data, hashlib.sha256).digest()


def _max_bytes() -> int:
    text = os.environ.get(SIZE_ENV)
    if not text:
        return DEFAULT_MAX_MB * 2**20
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if not 0 <= mb < float("inf"):
        raise InvalidParameterError(f"${SIZE_ENV} must be a number of megabytes >= 0, got {text!r}")
    return int(mb * 2**20)


#: The decoding libraries' packages (and the shared libraries auditwheel puts beside them), read without importing.
_DECODERS = ("av", "av.libs", "soundfile", "_soundfile", "_soundfile_data", "soxr", "soxr.libs")
#: The distributions that install :data:`_DECODERS` (PyAV's is ``av``), by their normalised names.
_DECODER_DISTRIBUTIONS = frozenset({"av", "soundfile", "soxr"})


@functools.cache
def tool_fingerprint() -> str:
    """A hash of what computes a trace: the package (version and sources) and the decoding libraries.

    The decoders (PyAV with its FFmpeg, soundfile with its libsndfile, soxr) are named by every file they
    installed (path, size, and the content hash their wheel's ``RECORD`` gives it, else its modification
    time), which changes with any upgrade or rebuild, found without importing them: a cached run need not pay
    for loading decoders it does not use. The hash, not the time: a fresh install of the same wheels (a CI
    runner's) writes new times, and must find its restored cache warm. Where libsndfile is not soundfile's own
    copy, its version is read from soundfile.
    """
    from .._version import __version__

    h = hashlib.sha256(f"speech-clock {__version__}\n".encode())
    root = Path(__file__).resolve().parent.parent
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    libs: dict[str, Any] = {"python": sys.version.split()[0], "numpy": np.__version__}
    for name in _DECODERS:
        libs[name] = _installed_files(name)
    if libs["_soundfile_data"] is None:  # a system libsndfile
        import soundfile

        libs["libsndfile"] = soundfile.__libsndfile_version__
    h.update(json.dumps(libs, sort_keys=True).encode())
    return h.hexdigest()


def _installed_files(name: str) -> list[tuple[str, int, int | str]] | None:
    """Every file of the module or folder ``name`` on ``sys.path`` (relative path, size, and the hash its
    wheel's ``RECORD`` gives when the size is the recorded one, else its mtime in ns), or None."""
    for entry in sys.path:
        base = entry or "."
        top = os.path.join(base, name)
        if not (os.path.isfile(top + ".py") or os.path.isdir(top)):
            continue
        if os.path.isfile(top + ".py"):
            return [_named(top + ".py", name + ".py", base)]
        found = []
        for folder, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")  # (bytecode comes and goes)
            for f in sorted(files):
                path = os.path.join(folder, f)
                found.append(_named(path, os.path.relpath(path, top), base))
        return found
    return None


def _named(path: str, rel: str, entry: str) -> tuple[str, int, int | str]:
    """A decoder's file as the fingerprint names it: ``rel``, its size, and its ``RECORD`` hash when it is as
    installed (the recorded size, written no later than the RECORD: pip writes the RECORD last), else its mtime."""
    st = os.stat(path)
    digest, size, written = _recorded(entry).get(os.path.relpath(path, entry).replace(os.sep, "/"), ("", -1, 0))
    installed = digest and size == st.st_size and st.st_mtime_ns <= written
    return (rel, st.st_size, digest if installed else st.st_mtime_ns)


@functools.cache
def _recorded(entry: str) -> dict[str, tuple[str, int, int]]:
    """The files the decoders' wheels installed in a ``sys.path`` entry, from their RECORD files: path -> (hash,
    size, the RECORD's mtime in ns). Only the RECORDs of :data:`_DECODER_DISTRIBUTIONS` are read (an environment
    holds a hundred others); a decoder's file in none of them is named by its time."""
    import csv
    import glob

    out: dict[str, tuple[str, int, int]] = {}
    for record in sorted(glob.glob(os.path.join(glob.escape(entry), "*.dist-info", "RECORD"))):
        project = os.path.basename(os.path.dirname(record)).split("-", 1)[0]
        if project.lower().replace("_", "-").replace(".", "-") not in _DECODER_DISTRIBUTIONS:
            continue
        try:
            written = os.stat(record).st_mtime_ns
            with open(record, encoding="utf-8", newline="") as f:
                for row in csv.reader(f):
                    if len(row) == 3 and row[1] and row[2].isdigit():
                        out[row[0]] = (row[1], int(row[2]), written)
        except (OSError, UnicodeDecodeError, csv.Error):
            continue  # an unreadable RECORD: its files are named by their times
    return out


def _sha256_of(f: Any) -> str:
    h = hashlib.sha256()
    while True:
        block = f.read(_READ)
        if not block:
            return h.hexdigest()
        h.update(block)


# A web server's ETag made of the file's mtime and size ("5f3c2a1b-1a2b", Apache's "2d-432a5e4a73a80"),
# or a weak one (W/"..."): the same size rewritten in the same second keeps it, so the content is hashed instead.
_WEAK_ETAG = re.compile(r'^(?:W/.*|"?[0-9a-fA-F]{1,16}(?:-[0-9a-fA-F]{1,16}){1,2}"?)$', re.DOTALL)


def _weak_tag(name: str, value: str) -> bool:
    """Whether a URL's content tag may stay the same when the content changes."""
    return name.lower() == "etag" and _WEAK_ETAG.match(value.strip()) is not None


def _identity(st: os.stat_result, real: str) -> dict[str, Any]:
    return {
        "path": real,
        "dev": st.st_dev,
        "ino": st.st_ino,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
    }


class _Damaged(Exception):
    """A cache entry that cannot be trusted (the message says why)."""


@dataclass(frozen=True, slots=True)
class TraceCache:
    """Level traces on disk, keyed by content, options and tool (see the module notes).

    Parameters
    ----------
    folder : Path
    max_bytes : int
        :meth:`prune` keeps the cache under this size.
    key_file : Path, optional
        The key authenticating the cache (default :func:`default_key_file`); never inside ``folder``.
    """

    folder: Path
    max_bytes: int = DEFAULT_MAX_MB * 2**20
    key_file: Path | None = None

    def _secret(self) -> bytes:
        """The key; raises :class:`NoCacheKey` when it cannot be had."""
        return _load_secret(os.fspath(self.key_file or default_key_file()), os.fspath(self.folder))

    def _key_id(self, secret: bytes) -> str:
        return hmac.new(secret, b"speechclock trace cache key id", hashlib.sha256).hexdigest()[:32]

    # -- keys -------------------------------------------------------------

    def _local_content(self, path: str, secret: bytes | None = None) -> tuple[str, dict[str, Any] | None]:
        """The content hash of a local file, and its identity (None when it must not be indexed).

        The index file is read only up to :data:`_MAX_INDEX_BYTES`; a damaged,
        oversized, too deeply nested or unauthenticated one (its HMAC under
        ``secret`` does not verify) is ignored: the file is hashed again.
        A path that is not a regular file raises OSError before anything opens it.
        """
        real = os.path.realpath(path)
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device: never hashed (the decoder refuses it)
            raise OSError(f"{path}: not a regular file")
        secret = self._secret() if secret is None else secret
        ident = _identity(st, real)
        name = hmac.new(secret, real.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()
        index = self.folder / "files" / name[:2] / f"{name}.json"
        try:
            with open(index, "rb") as f:
                raw = f.read(_MAX_INDEX_BYTES + 1)
            known = json.loads(raw) if len(raw) <= _MAX_INDEX_BYTES else None
            if (
                isinstance(known, dict)
                and _index_authentic(known, secret)
                and {k: known.get(k) for k in ident} == ident
                and known.get("format") == _FORMAT
                and isinstance(known.get("content"), str)
                and max(st.st_mtime_ns, st.st_ctime_ns) < known.get("hashed_at_ns", 0) - RACY_S * 1e9
            ):
                return known["content"], ident
        except (OSError, ValueError, RecursionError, TypeError):
            pass  # no index, or a damaged one: hash the file again
        hashed_at = time.time_ns()
        with open(real, "rb", buffering=0) as raw_file:
            if not stat.S_ISREG(os.fstat(raw_file.fileno()).st_mode):
                raise OSError(f"{path}: not a regular file")
            content = _sha256_of(raw_file)
        if _identity(os.stat(real), real) != ident:
            return content, None  # changed while it was read: keep nothing
        record = {**ident, "format": _FORMAT, "content": content, "hashed_at_ns": hashed_at}
        record["mac"] = _mac(secret, _canonical(record)).hex()
        self._write(index, json.dumps(record))
        return content, ident

    def _url_content(self, url: str) -> str:
        meta = url_info(url)
        tags = {k: str(meta[k]) for k in _CONTENT_TAGS if meta.get(k) and not _weak_tag(k, str(meta[k]))}
        if tags:
            text = json.dumps({"url": url, "size": meta.get("size"), "tags": tags}, sort_keys=True)
            return hashlib.sha256(text.encode()).hexdigest()
        with open_binary(url) as f:
            return _sha256_of(f)

    def _content(self, source: Source, secret: bytes | None = None) -> tuple[str, dict[str, Any] | None]:
        secret = self._secret() if secret is None else secret
        if is_url(source):
            path = local_path(str(source))
            if path is not None:
                return self._local_content(path, secret)
            return self._url_content(str(source)), None
        return self._local_content(os.fspath(source), secret)

    def content_key(self, source: Source) -> str | None:
        """What the cache knows ``source``'s content by: a hash of its bytes (None without a key, or unreadable).

        For results computed from the recording itself (``stress`` decodes it
        again, changed), which :mod:`clock.run.results` keeps under it.
        """
        try:
            return self._content(source)[0]
        except (OSError, NoCacheKey):
            return None

    def _entry_path(self, key: Mapping[str, Any]) -> Path:
        digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return self.folder / "traces" / digest[:2] / f"{digest}.trace"

    # -- reading and writing ------------------------------------------------

    def traces(self, source: Source, params: Mapping[str, Any], compute: Callable[[], Decoded]) -> Decoded:
        """The header and traces of ``source`` with ``params``: from the cache, or computed and kept.

        ``compute`` decodes the recording; the :class:`SpeechClockWarning`
        it emits are kept with the entry and shown again on every hit.
        """
        display = str(source) if is_url(source) else str(Path(source))
        try:
            secret = self._secret()
        except NoCacheKey as err:
            _warn_no_key(self.key_file or default_key_file(), str(err))
            return compute()
        try:
            content, ident = self._content(source, secret)
        except OSError:
            return compute()  # the decoder names the problem
        key = {
            "format": _FORMAT,
            "tool": tool_fingerprint(),
            "keyed": self._key_id(secret),
            "content": content,
            "params": dict(params),
        }
        entry = self._entry_path(key)
        try:
            f = open(entry, "rb")  # noqa: SIM115 - closed below
        except OSError:
            f = None
        if f is not None:
            try:
                with f:
                    info, traces, messages = _decode_entry(_read_entry(f, key), key, display, secret)
            except OSError:
                pass  # vanished or unreadable: a miss
            except _Damaged as err:
                warnings.warn(
                    f"{entry}: damaged cache entry for {display} ({err}); recomputed", SpeechClockWarning, stacklevel=2
                )
            else:
                for message in messages:
                    warnings.warn(message, SpeechClockWarning, stacklevel=2)
                try:
                    os.utime(entry)  # least recently used goes first
                except OSError:
                    pass
                return info, traces
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SpeechClockWarning)
            info, traces = compute()
        messages = [str(w.message) for w in caught if issubclass(w.category, SpeechClockWarning)]
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)  # shown as without the cache
        still = ident is None or self._unchanged(ident)
        if still:
            self._write(entry, _encode_entry(key, info, traces, messages, display, secret))
        return info, traces

    def _unchanged(self, ident: Mapping[str, Any]) -> bool:
        try:
            return _identity(os.stat(ident["path"]), ident["path"]) == dict(ident)
        except OSError:
            return False

    def _write(self, path: Path, data: str | bytes) -> None:
        """Write atomically (temp + rename); a cache that cannot be written is skipped with a warning."""
        raw = data.encode() if isinstance(data, str) else data
        try:
            if not self.folder.is_dir():
                self.folder.mkdir(parents=True, exist_ok=True)
                (self.folder / "CACHEDIR.TAG").write_text(_TAG, encoding="ascii")
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(raw)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as err:
            _warn_unwritable(self.folder, err.strerror or str(err))

    def writable(self) -> bool:
        """Whether entries can be written here (creating the folder) under a key; warns once when not."""
        try:
            self._secret()
        except NoCacheKey as err:
            _warn_no_key(self.key_file or default_key_file(), str(err))
            return False
        try:
            if not self.folder.is_dir():
                self.folder.mkdir(parents=True, exist_ok=True)
                (self.folder / "CACHEDIR.TAG").write_text(_TAG, encoding="ascii")
            fd, tmp = tempfile.mkstemp(prefix=".probe.", suffix=".tmp", dir=self.folder)
            os.close(fd)
            os.unlink(tmp)
        except OSError as err:
            _warn_unwritable(self.folder, err.strerror or str(err))
            return False
        return True

    # -- size ---------------------------------------------------------------

    def size_bytes(self) -> int:
        """Bytes held by trace entries."""
        return sum(size for _, _, size in self._entries())

    def _entries(self) -> list[tuple[float, Path, int]]:
        found: list[tuple[float, Path, int]] = []
        root = self.folder / "traces"
        if not root.is_dir():
            return found
        for sub in os.scandir(root):
            if not sub.is_dir():
                continue
            for e in os.scandir(sub.path):
                if e.name.endswith(".trace"):
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    found.append((st.st_mtime, Path(e.path), st.st_size))
        return found

    def prune(self) -> int:
        """Remove the least recently used entries until the cache is under ``max_bytes``; the bytes freed."""
        entries = sorted(self._entries())
        total = sum(size for _, _, size in entries)
        freed = 0
        for _, path, size in entries:
            if total - freed <= self.max_bytes:
                break
            try:
                path.unlink()
                freed += size
            except OSError:
                pass
        return freed


@functools.cache
def _warn_once(message: str) -> None:
    """Warn ``message`` once a process (a :class:`SpeechClockWarning`, at the cache's caller)."""
    warnings.warn(message, SpeechClockWarning, stacklevel=4)


def _warn_unwritable(folder: Path, reason: str) -> None:
    _warn_once(f"{folder}: cannot write the trace cache ({reason}); continuing without it")


def _warn_no_key(key_file: Path, reason: str) -> None:
    _warn_once(f"{key_file}: cannot use it as the trace cache's key ({reason}); continuing without the cache")


def _canonical(record: Mapping[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in record.items() if k != "mac"}, sort_keys=True).encode()


def _index_authentic(record: Mapping[str, Any], secret: bytes) -> bool:
    """Whether an index record was written under ``secret`` (and not changed since)."""
    mac = record.get("mac")
    return isinstance(mac, str) and hmac.compare_digest(mac.encode(), _mac(secret, _canonical(record)).hex().encode())


def resolve_cache(spec: TraceCache | str | os.PathLike[str] | bool | None) -> TraceCache | None:
    """A cache from ``True`` (the default folder), a folder, a :class:`TraceCache`, or None/False (none)."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, TraceCache):
        return spec
    folder = default_folder() if spec is True else Path(spec).expanduser()
    return TraceCache(folder, _max_bytes())


# -- the entry format -----------------------------------------------------------
#
#   magic | 8-byte little-endian header length | header (JSON) | zlib(arrays) | HMAC-SHA256 of all before
#
# The header repeats the key, so an entry filed under the wrong name is refused.


def _trace_meta(t: LevelTrace) -> dict[str, Any]:
    return {
        "n": t.n_ticks,
        "sample_rate_hz": t.sample_rate_hz,
        "period_s": str(t.ticks.period_s),
        "align": t.ticks.align,
        "metric": t.metric,
        "options": asdict(t.options),
    }


def _encode_entry(
    key: Mapping[str, Any],
    info: AudioInfo,
    traces: list[LevelTrace],
    messages: list[str],
    display: str,
    secret: bytes,
) -> bytes:
    prefix = display + ":"
    header = {
        "key": dict(key),
        "info": {k: v for k, v in asdict(info).items() if k != "path"},
        # A message naming the recording is kept without the name (a copy elsewhere is named as itself).
        "warnings": [[True, m[len(prefix) :]] if m.startswith(prefix) else [False, m] for m in messages],
        "traces": [_trace_meta(t) for t in traces],
    }
    body = b"".join(
        np.ascontiguousarray(t.frames, "<i8").tobytes() + np.ascontiguousarray(t.level, "<f8").tobytes() for t in traces
    )
    head = json.dumps(header, sort_keys=True).encode()
    data = _MAGIC + len(head).to_bytes(8, "little") + head + zlib.compress(body, 1)
    return data + _mac(secret, data)


def _read_header(data: bytes) -> dict[str, Any]:
    """The header of an entry's first bytes (bounded in size; nesting bounded by the JSON reader)."""
    header = json.loads(data)
    if not isinstance(header, dict) or not isinstance(header.get("traces"), list):
        raise _Damaged("a header that is not an entry's")
    return header


def _planned_ticks(header: Mapping[str, Any], key: Mapping[str, Any]) -> int:
    """The ticks the header declares, checked against what the recording it describes allows."""
    info = header["info"]
    rate = int(info["sample_rate_hz"])
    n_frames = info.get("n_frames")
    if not 1 <= rate <= 10**6 or not (n_frames is None or 0 <= int(n_frames) <= rate * MAX_CACHED_S):
        raise _Damaged("an implausible recording header")
    duration_s = MAX_CACHED_S if n_frames is None else int(n_frames) / rate + 1.0
    metas = header["traces"]
    params = key["params"]
    quantum = bool(params.get("quantum"))
    if "ticks" in params and len(metas) != 1 + quantum:
        raise _Damaged(f"{len(metas)} traces where {1 + quantum} belong")
    total = 0
    for i, meta in enumerate(metas):
        period = Fraction(meta["period_s"])
        expected = Fraction(params["ticks"][0]) if i == 0 and "ticks" in params else None
        if period <= 0 or (expected is not None and period != expected) or (i == 1 and meta["align"] != "ceil"):
            raise _Damaged(f"an implausible tick period ({meta['period_s']})")
        n = int(meta["n"])
        if not 0 <= n <= duration_s / float(period) + 2:
            raise _Damaged(f"{n} ticks, more than a recording of {duration_s:.0f} s has")
        total += n
    return total


def _read_entry(f: Any, key: Mapping[str, Any]) -> bytes:
    """An entry's bytes, read no further than its (checked) header allows."""
    start = len(_MAGIC) + 8
    head = f.read(start)
    if len(head) < start or not head.startswith(_MAGIC):
        raise _Damaged("truncated or not a cache entry")
    n_head = int.from_bytes(head[len(_MAGIC) :], "little")
    if n_head > _MAX_HEADER_BYTES:
        raise _Damaged(f"a header of {n_head} bytes")
    raw_header = f.read(n_head)
    try:
        ticks = _planned_ticks(_read_header(raw_header), key)
    except _Damaged:
        raise
    except (ValueError, KeyError, TypeError, ArithmeticError, RecursionError, AttributeError) as err:
        raise _Damaged(f"unreadable header: {type(err).__name__}") from None
    # zlib never grows data by more than 0.1% + 64 bytes: a longer body is not what the header says.
    room = 16 * ticks + (16 * ticks) // 1000 + 64 + _DIGEST
    rest = f.read(room + 1)
    if len(rest) > room:
        raise _Damaged("longer than its header allows")
    return head + raw_header + rest


def _decode_entry(
    data: bytes, key: Mapping[str, Any], display: str, secret: bytes
) -> tuple[AudioInfo, list[LevelTrace], list[str]]:
    start = len(_MAGIC) + 8
    if len(data) < start + _DIGEST or not data.startswith(_MAGIC):
        raise _Damaged("truncated or not a cache entry")
    if not hmac.compare_digest(_mac(secret, data[:-_DIGEST]), data[-_DIGEST:]):
        raise _Damaged("not authenticated by this cache's key")
    n_head = int.from_bytes(data[len(_MAGIC) : start], "little")
    try:
        if n_head > _MAX_HEADER_BYTES:
            raise _Damaged(f"a header of {n_head} bytes")
        header = _read_header(data[start : start + n_head])
        if header["key"] != json.loads(json.dumps(dict(key), sort_keys=True)):
            raise _Damaged("filed under another key")
        expected = 16 * _planned_ticks(header, key)
        inflate = zlib.decompressobj()
        body = inflate.decompress(data[start + n_head : -_DIGEST], expected + 1)  # never more than declared
        if len(body) != expected or inflate.unconsumed_tail or not inflate.eof:
            raise _Damaged("arrays of another length than the header says")
        info = AudioInfo(display, **header["info"])
        traces = []
        at = 0
        for meta in header["traces"]:
            n = int(meta["n"])
            frames = np.frombuffer(body, "<i8", n, at).astype(np.int64)
            level = np.frombuffer(body, "<f8", n, at + 8 * n).astype(np.float64)
            at += 16 * n
            if n and (frames[0] < 0 or np.any(np.diff(frames) < 0) or np.isnan(level).any()):
                raise _Damaged("implausible values (frames out of order, or NaN levels)")
            ticks = Ticks(Fraction(meta["period_s"]), meta["align"])
            traces.append(
                LevelTrace(
                    frames,
                    level,
                    int(meta["sample_rate_hz"]),
                    ticks,
                    meta["metric"],
                    AnalyserOptions(**meta["options"]),
                )
            )
        if at != len(body):
            raise _Damaged("arrays longer than the header says")
        messages = [f"{display}:{m}" if named else m for named, m in header["warnings"]]
    except _Damaged:
        raise
    except (ValueError, KeyError, TypeError, ArithmeticError, RecursionError, AttributeError, zlib.error) as err:
        raise _Damaged(f"unreadable: {type(err).__name__}") from None
    return info, traces, messages
