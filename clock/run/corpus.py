"""Collecting recordings from files, folders and configs, and reading each once."""

from __future__ import annotations

import errno
import os
import stat
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.agreement import Agreement, agreement
from ..core.analyser import AnalyserOptions
from ..core.events import EventLog
from ..core.levels import LevelTrace
from ..core.model import Observation
from ..core.replay import page_declarations
from ..core.thresholds import Thresholds
from ..core.ticks import Ticks
from ..errors import RecordingError, SpeechClockWarning
from ..io.config import CONFIG_NAME, AgreementConfig, Config, find_config, read_config
from ..io.events import read_labels
from ..io.files import file_kind
from ..io.inputs import AUDIO_SUFFIXES, Inputs, sidecar
from ..io.recording import Recording, read_recording
from ..io.sources import is_file, is_url, list_folder, local_path, name_of, sibling, url_info

if TYPE_CHECKING:  # imported where used: a one-recording command that reads a log's agreement needs neither
    from .cache import TraceCache

__all__ = [
    "AUDIO_SUFFIXES",
    "CONFIG_NAME",
    "Corpus",
    "collect",
    "labels_path_for",
    "load_corpus",
    "log_agreement",
    "observe",
    "observe_all",
    "observe_corpus",
]


def labels_path_for(recording: str | os.PathLike[str]) -> Path | None:
    """The ground-truth label track beside a recording (``x.webm`` -> ``x.labels.txt``; a URL's beside it), or None."""
    if is_url(recording):
        candidate = sibling(recording, Path(name_of(recording)).stem + ".labels.txt")
        return candidate if is_file(candidate) else None  # type: ignore[return-value]
    candidate = sidecar(recording, "label track")
    return candidate if candidate.is_file() else None


def _collect_url(url: str, *, configured: bool) -> list[Path]:
    """The recordings a URL names: itself, or the audio files of a URL folder (sorted by name)."""
    listed = list_folder(url)
    if listed is None:
        url_info(url)  # a missing object is reported by name
        return [url]  # type: ignore[list-item]
    files = [f for f in listed if Path(name_of(f)).suffix.lower() in AUDIO_SUFFIXES]
    if not files:
        raise RecordingError(f"{url}: no recordings in this folder ({', '.join(AUDIO_SUFFIXES)})")
    config = sibling(files[0], CONFIG_NAME)
    if not configured and is_file(config):
        warnings.warn(
            f"{config}: not read (a config is read from a local file; give --config)", SpeechClockWarning, stacklevel=3
        )
    return files  # type: ignore[return-value]


def _not_a_recording(path: Path) -> str | None:
    """Why a folder's entry named as a recording is none (a broken link, a link loop, a folder, a FIFO), or None."""
    try:
        st = os.stat(path)
    except OSError as err:
        if os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            if err.errno == errno.ELOOP:
                return f"a symbolic link loop (to {target})"
            if err.errno == errno.ENOENT:
                return f"a broken symbolic link (to {target}, which does not exist)"
        return f"cannot be read ({err.strerror or err})"
    if not stat.S_ISREG(st.st_mode):
        return f"{file_kind(st.st_mode)}, not a recording"
    return None


def collect(
    paths: Iterable[str | os.PathLike[str]],
    *,
    config: str | os.PathLike[str] | None = None,
    inputs: Inputs | None = None,
    baseline: str | os.PathLike[str] | None = None,
) -> tuple[Config, list[Path]]:
    """The recordings named by files, folders or configs, and the config that governs them.

    A folder gives every audio file in it (sorted by name) and its
    ``speechclock.toml``; an entry with an audio name that is no regular
    file (a broken link, a link loop, a folder, a FIFO) is skipped with a
    warning naming it and why, as is a second name of one file; a ``.toml`` file gives its folder's recordings and
    itself. ``config`` overrides the config found. A recording named twice
    (by a folder and by itself, or through a link) counts once.

    Parameters
    ----------
    paths : iterable of path-like or URL
        A URL (``s3://``, ``gs://``, ``https://``, ``file://``) names a
        recording, or a folder of them (see :mod:`clock.io.sources`).
    config : path-like, optional
    inputs : Inputs, optional
        Filled with every file the run will read (recordings, their logs and
        label tracks, the config, the baseline), for the writers to refuse.
    baseline : path-like, optional
        The baseline, when given on the command line (else the config's).

    Raises
    ------
    RecordingError
        A path that does not exist, or a folder with no recordings.
    ConfigError
        A malformed config.
    """
    found, folders, config_path = _named(paths, Path(config) if config is not None else None)
    unique = _once(found)
    cfg = read_config(config_path) if config_path is not None else Config()
    if inputs is not None:
        for f in unique:
            if not is_url(f):  # an output never lands on a URL
                inputs.add_recording(f)
        for folder in folders:
            inputs.add_folder(folder)
        inputs.add(config_path, "config")
        inputs.add(baseline if baseline is not None else cfg.baseline_path, "baseline")
    return cfg, unique


def _named(
    paths: Iterable[str | os.PathLike[str]], config_path: Path | None
) -> tuple[list[Path], list[Path], Path | None]:
    """The recordings ``paths`` name (a folder's, a config's folder's, a file, a URL's), the local folders read, and
    the config: ``config_path`` if given, else the first named or found beside them."""
    found: list[Path] = []
    folders: list[Path] = []
    for raw in paths:
        if is_url(raw):
            found.extend(_collect_url(str(raw), configured=config_path is not None))
            continue
        p = Path(raw)
        if not os.path.lexists(p):
            raise RecordingError(f"{p}: no such file or folder")
        if p.suffix == ".toml":
            config_path = config_path or p
            p = p.parent
        if p.is_dir():
            found.extend(_folder_recordings(p))
            folders.append(p)
            config_path = config_path or find_config(p)
        else:
            found.append(p)
            config_path = config_path or find_config(p.parent)
    return found, folders, config_path


def _folder_recordings(p: Path) -> list[Path]:
    """Every audio file in a folder, sorted by name; an entry that is no regular file is skipped with a warning."""
    files = []
    for f in sorted(p.iterdir()):
        if f.suffix.lower() not in AUDIO_SUFFIXES:
            continue
        if (why := _not_a_recording(f)) is not None:  # never in silence: the check covers fewer recordings
            warnings.warn(f"{f}: skipped: {why}", SpeechClockWarning, stacklevel=4)
        else:
            files.append(f)
    if not files:
        raise RecordingError(f"{p}: no recordings in this folder ({', '.join(AUDIO_SUFFIXES)})")
    return files


def _once(found: list[Path]) -> list[Path]:
    """Each recording once: a file named twice (by a folder and by itself, or through a link) counts once, by its
    own name rather than a link's, with a warning; a local name that is no regular file is refused unopened."""
    unique: dict[object, Path] = {}
    for f in found:
        local = local_path(str(f)) if is_url(f) else os.fspath(f)  # file:// is the file it names
        if local is None:
            unique.setdefault(f, f)
            continue
        try:
            st = os.stat(local)
            key: object = (st.st_dev, st.st_ino)
        except OSError:
            st, key = None, os.path.realpath(local)
        if st is not None and not stat.S_ISREG(st.st_mode):  # never opened: a FIFO would block
            raise RecordingError(f"{f}: is {file_kind(st.st_mode)}; a recording must be a regular file")
        first = unique.setdefault(key, f)
        if first is not f and not is_url(first) and not is_url(f) and os.path.abspath(first) != os.path.abspath(f):
            if os.path.islink(first) and not os.path.islink(f):  # the file by its own name, not a link's
                unique[key], first, f = f, f, first
            warnings.warn(f"{f}: skipped: the same file as {first} (counted once)", SpeechClockWarning, stacklevel=3)
    return list(unique.values())


def observe(
    path: Path,
    config: Config,
    *,
    lenient: bool = False,
    cache: TraceCache | None = None,
    envelope_bins: int | None = None,
) -> tuple[Recording, Observation]:
    """Read one recording with the config's cadence and analyser, with its log and labels.

    With ``envelope_bins``, the recording's waveform envelope too, from the decode that reads its levels
    (:func:`~clock.io.recording.read_recording`; none when the trace cache had them and nothing was decoded).
    """
    th = config.thresholds
    rec = read_recording(
        path,
        ticks=Ticks(th.tick_s),
        options=AnalyserOptions(fft_size=th.fft_size),
        lenient=lenient,
        cache=cache,
        envelope_bins=envelope_bins,
    )
    labels_path = labels_path_for(path)
    labels = tuple(read_labels(labels_path, duration_s=rec.duration_s)) if labels_path else None
    found, events = log_agreement(rec, floor=th.floor, config=config.agreement, committed=th)
    name = name_of(path)
    meta = {**(rec.events.session if rec.events is not None else {}), **config.meta(name)}
    return rec, Observation(name, rec.trace, events, labels, meta, found)


def log_agreement(
    rec: Recording,
    *,
    floor: float,
    config: AgreementConfig,
    align_log: bool | None = None,
    committed: Thresholds | None = None,
) -> tuple[Agreement | None, EventLog | None]:
    """The agreement of a recording's page-logged levels, and its log (shifted when asked and uncertain).

    A log without ``clock.quiet`` lines gets the page's declarations by replay at the setting the page ran: its
    ``clock.setting``, else ``committed`` (the config's) where its prompts follow that replay
    (:func:`clock.core.replay.page_declarations`), so the causes of its bounds are known
    (:mod:`clock.core.causes`).

    The log is shifted by the estimated offset only when ``align_log`` (default:
    the config's) is set and the recording's start is not exact.
    """
    log = rec.events
    if log is not None:
        log = page_declarations(rec.trace, log, committed=committed)
    if log is None or not log.readings or not isinstance(rec.quantum, LevelTrace):
        return None, log
    # Read on the audio thread only when the page clock says it ran its worklet.
    polled = log.setting is None or log.setting.path != "worklet"
    found = agreement(rec.quantum, log.readings, floor=floor, start=log.start, search_s=config.search_s, polled=polled)
    align = config.align_log if align_log is None else align_log
    if found is not None and align and found.offset_estimated and found.offset_s:
        log = log.shifted(found.offset_s)
    return found, log


def _observe_task(
    args: tuple[Path, Config, bool, TraceCache | bool | None, int | None],
) -> tuple[Recording, Observation]:
    from .cache import resolve_cache

    path, config, lenient, cache, envelope_bins = args
    # True: the default cache of the machine the task runs on (a remote worker's own).
    found = resolve_cache(cache) if cache is True else cache or None
    return observe(path, config, lenient=lenient, cache=found, envelope_bins=envelope_bins)


def observe_all(
    files: Iterable[Path],
    config: Config,
    *,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
    scheduler: str | None = None,
    cache: TraceCache | bool | None = None,
    envelope_bins: int | None = None,
) -> list[tuple[Recording, Observation]]:
    """Observe several recordings where :mod:`clock.run.workers` says (here, a process pool or Dask).

    Results come in the order of ``files`` and are identical to a serial
    run; warnings are shown in that order too, once each recording is done.

    Parameters
    ----------
    files : iterable of Path
    config : Config
    jobs : int
        Worker processes (1: in this process).
    lenient : bool
    progress : callable, optional
        Called with each recording's path as it finishes (in the order they finish).
    scheduler : str, optional
        A Dask scheduler (``tcp://host:8786``, or ``local:N``); see :class:`~clock.run.workers.Workers`.
    cache : TraceCache or bool, optional
        Level traces kept between runs (see :mod:`clock.run.cache`); True for
        the default cache of the machine each task runs on.
    envelope_bins : int, optional
        Also each recording's waveform envelope, where it is decoded (see :func:`observe`).
    """
    todo = [(f, config, lenient, cache, envelope_bins) for f in files]
    from .workers import Workers, run_ordered

    where = Workers(jobs=jobs, scheduler=scheduler)
    return run_ordered(
        _observe_task, todo, workers=where, progress=None if progress is None else lambda i: progress(todo[i][0])
    )


@dataclass(frozen=True, slots=True)
class Corpus:
    """Recordings read once, with the config that governs them.

    Attributes
    ----------
    config : Config
    recordings : tuple of Recording
        Header, level traces and event log of each file.
    observations : tuple of Observation
        What ``derive``, ``check`` and ``sweep`` take (trace, log, labels, metadata).
    inputs : Inputs
        Every file read (and the names a later run would read), for writers to refuse.
    """

    config: Config
    recordings: tuple[Recording, ...]
    observations: tuple[Observation, ...]
    inputs: Inputs = field(default_factory=Inputs, compare=False)


def load_corpus(
    paths: Iterable[str | os.PathLike[str]],
    *,
    config: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
    baseline: str | os.PathLike[str] | None = None,
    scheduler: str | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> Corpus:
    """Read recordings named by files, folders or a config (see :func:`collect`).

    Parameters
    ----------
    paths : iterable of path-like or URL
    config : path-like, optional
    jobs : int
        Processes on this machine (see :class:`~clock.run.workers.Workers`).
    lenient : bool
        Skip malformed event lines with a warning.
    progress : callable, optional
        Called with each recording as it finishes.
    baseline : path-like, optional
        The baseline, when given on the command line (else the config's).
    scheduler : str, optional
        Run on a Dask cluster instead: ``tcp://host:8786`` or ``local:N``.
    cache : TraceCache, path-like, bool or None
        Where level traces are kept between runs: True (default) for the
        user's cache folder (``$SPEECHCLOCK_CACHE`` moves it), a folder, or
        False/None for none (see :mod:`clock.run.cache`).

    Examples
    --------
    >>> corpus = load_corpus(["recordings"])  # doctest: +SKIP
    >>> clock.derive(corpus.observations)     # doctest: +SKIP
    """
    inputs = Inputs()
    cfg, files = collect(paths, config=config, inputs=inputs, baseline=baseline)
    return observe_corpus(
        cfg, files, inputs, jobs=jobs, lenient=lenient, progress=progress, scheduler=scheduler, cache=cache
    )


def observe_corpus(
    config: Config,
    files: Iterable[Path],
    inputs: Inputs,
    *,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
    scheduler: str | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
    envelope_bins: int | None = None,
) -> Corpus:
    """The corpus of recordings already collected (see :func:`collect`), read where ``scheduler`` says.

    ``envelope_bins``: also each decoded recording's waveform envelope (see :func:`observe`).
    """
    from .cache import resolve_cache

    traces: TraceCache | None = None
    spec: TraceCache | bool | None = True
    if not (cache is True and scheduler is not None and not scheduler.startswith("local")):
        traces = resolve_cache(cache)
        if traces is not None and not traces.writable():
            traces = None  # said once here, not once per worker
        spec = traces
    # else: each remote worker keeps its own default cache (an explicit folder is used as given).
    pairs = observe_all(
        files,
        config,
        jobs=jobs,
        lenient=lenient,
        progress=progress,
        scheduler=scheduler,
        cache=spec,
        envelope_bins=envelope_bins,
    )
    if traces is not None:
        traces.prune()
    return Corpus(config, tuple(r for r, _ in pairs), tuple(o for _, o in pairs), inputs)
