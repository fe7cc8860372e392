"""The inputs of a run, so that no output ever lands on one.

Every command collects the files it reads (each recording, its event log and
label track, the config and the baseline) into one :class:`Inputs`; every
writer checks its path against it (:mod:`clock.io.output`). Paths are
compared both resolved (symbolic links followed) and by device and inode (so
a hard link to a recording is caught too). A folder that is read also
protects the names the next run would read there: any file with a recording's
suffix, the config, and each recording's event log and label track even when
they do not exist yet.
"""

from __future__ import annotations

import os
import re
import stat
from contextvars import ContextVar
from pathlib import Path

from ..errors import InvalidParameterError
from .files import CONFIG_NAME

__all__ = ["AUDIO_SUFFIXES", "Inputs", "owned_kind", "set_force", "sidecar"]

#: Files in a folder that are taken as recordings.
AUDIO_SUFFIXES = (".webm", ".mkv", ".ogg", ".opus", ".oga", ".wav", ".flac", ".mp3", ".mp4", ".m4a")

_SIDECARS = {"event log": ".events.jsonl", "label track": ".labels.txt"}


def sidecar(recording: str | os.PathLike[str], what: str) -> Path:
    """The file beside a recording that holds its ``"event log"`` or ``"label track"``."""
    p = Path(recording)
    return p.with_name(p.stem + _SIDECARS[what])


# ``--force``: outputs may replace files that look like the user's recordings, logs, labels, configs, baselines.
_FORCE: ContextVar[bool] = ContextVar("speechclock_force", default=False)

# The first bytes of audio containers: RIFF/WAVE, Ogg, FLAC, Matroska/WebM (EBML), MP3 (ID3 or a frame sync), AIFF.
_AUDIO_MAGIC = re.compile(
    rb"^(?:RIFF....(?:WAVE|AVI )|RF64|OggS|fLaC|\x1a\x45\xdf\xa3|ID3|\xff[\xe0-\xff]|FORM....AIF|caff)", re.DOTALL
)
# A baseline as :func:`clock.io.baseline.write_baseline` writes it, and an event log's first line.
_BASELINE_MAGIC = re.compile(rb'^\s*\{\s*"schema"\s*:\s*1\s*,\s*"recordings"\s*:')
_EVENT_MAGIC = re.compile(rb'^\s*\{[^\n]*"(?:type|event)"\s*:')
_SNIFF_BYTES = 512


def set_force(force: bool) -> None:
    """Set ``--force`` for the rest of this command (the command line's option callback)."""
    _FORCE.set(force)


def owned_kind(path: str | os.PathLike[str]) -> str | None:
    """What file of the user's ``path`` looks like ("a recording", "an event log", ...), or None.

    Judged by name (a recording's suffix, ``.events.jsonl``, ``.jsonl``,
    ``.labels.txt``, ``.toml``, ``baseline.json``) and, for an existing
    regular file, by its first bytes (audio containers, a baseline, an event
    log). A new file named as a recording counts too: no command writes audio.
    Never opens anything but a regular file (a FIFO would block).
    """
    name = os.path.basename(os.fspath(path)).lower()
    if name.endswith(AUDIO_SUFFIXES):
        return "a recording (by its name)"
    if name.endswith((".events.jsonl", ".jsonl")):
        return "an event log (by its name)"
    if name.endswith(".labels.txt"):
        return "a label track (by its name)"
    if name.endswith(".toml"):
        return "a config (by its name)"
    if name.endswith("baseline.json"):
        return "a baseline (by its name)"
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        head = os.read(fd, _SNIFF_BYTES) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        head = b""
    finally:
        os.close(fd)
    if _AUDIO_MAGIC.match(head) or head[4:8] == b"ftyp":
        return "a recording (by its content)"
    if _BASELINE_MAGIC.match(head):
        return "a baseline (by its content)"
    if _EVENT_MAGIC.match(head):
        return "an event log (by its content)"
    return None


def _resolved(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.abspath(os.fspath(path)))


class Inputs:
    """The files one run reads (and the names it would read), to refuse outputs onto them.

    Examples
    --------
    >>> inputs = Inputs()
    >>> inputs.add_recording("recordings/tour.webm")
    >>> inputs.find("recordings/tour.events.jsonl")
    ('event log', 'the event log of the recording recordings/tour.webm')
    >>> inputs.find("recordings/tour.csv") is None
    True
    """

    __slots__ = ("_by_id", "_by_path", "_folders", "_plain")

    def __init__(self) -> None:
        self._plain: dict[str, tuple[str, str]] = {}  # resolved -> (as named, phrase without the name)
        self._by_path: dict[str, tuple[str, str]] = {}
        self._by_id: dict[tuple[int, int], tuple[str, str]] = {}
        self._folders: dict[str, str] = {}

    def add(self, path: str | os.PathLike[str] | None, what: str, phrase: str | None = None) -> None:
        """Record ``path`` as an input (``what``: "recording", "event log", "config", ...); None is ignored.

        ``phrase`` says what it is in messages (default: "the WHAT this run reads").
        """
        if path is None:
            return
        named = os.fspath(path)
        entry = (what, phrase or f"the {what} {named} this run reads")
        if phrase is None:
            self._plain[_resolved(path)] = (named, f"the {what} this run reads")
        self._by_path.setdefault(_resolved(path), entry)
        try:
            st = os.stat(path)
        except OSError:
            return
        self._by_id.setdefault((st.st_dev, st.st_ino), entry)

    def add_recording(
        self,
        path: str | os.PathLike[str],
        *,
        events: str | os.PathLike[str] | None = None,
        labels: str | os.PathLike[str] | None = None,
    ) -> None:
        """A recording, with its event log and label track (given, and the ones beside it)."""
        self.add(path, "recording")
        for what in _SIDECARS:
            self.add(sidecar(path, what), what, f"the {what} of the recording {os.fspath(path)}")
        self.add(events, "event log")
        self.add(labels, "label track")

    def add_folder(self, folder: str | os.PathLike[str]) -> None:
        """A folder whose recordings and config are read: names a later run would read there are inputs too."""
        self._folders.setdefault(_resolved(folder), os.fspath(folder))
        self.add(Path(folder) / CONFIG_NAME, "config")

    def find(self, path: str | os.PathLike[str]) -> tuple[str, str] | None:
        """``(what, description)`` of the input ``path`` is (or would be), or None."""
        resolved = _resolved(path)
        if resolved in self._by_path:
            return self._by_path[resolved]
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) in self._by_id:
            return self._by_id[(st.st_dev, st.st_ino)]
        folder, name = os.path.split(resolved)
        if folder in self._folders and os.path.splitext(name)[1].lower() in AUDIO_SUFFIXES:
            return ("recording", f"named as a recording in {self._folders[folder]}, a folder this run reads")
        return None

    def check_output(self, path: str | os.PathLike[str] | None, option: str, *, allow: tuple[str, ...] = ()) -> None:
        """Refuse to write ``option``'s output at ``path`` when it is an input (``allow``: kinds it may be).

        Raises
        ------
        InvalidParameterError
            ``path`` is one of the inputs, or a name the run reads.
        """
        if path is None or os.fspath(path) == "-":
            return
        found = self.find(path)
        if found is None:
            owned = None if _FORCE.get() else owned_kind(path)
            if owned is not None and not any(owned.startswith(f"a {k}") for k in allow):
                raise InvalidParameterError(
                    f"{os.fspath(path)}: looks like {owned}; refusing to write {option} there (--force to replace it)"
                )
            return
        if found[0] in allow:
            return
        phrase = found[1]
        named, plain = self._plain.get(_resolved(path), (None, ""))
        if named is not None and os.path.abspath(named) == os.path.abspath(os.fspath(path)):
            phrase = plain  # the message names it already
        raise InvalidParameterError(f"{os.fspath(path)}: is {phrase}; refusing to write {option} there")

    def check_descriptor(self, fd: int, option: str) -> None:
        """Refuse to write to an open descriptor (standard output) that is an input file."""
        try:
            st = os.fstat(fd)
        except OSError:
            return
        found = self._by_id.get((st.st_dev, st.st_ino))
        if found is not None:
            raise InvalidParameterError(f"{option}: is {found[1]}; refusing to write there")
