"""Collecting recordings from files, folders and configs, and reading each once."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.analyser import AnalyserOptions
from ..core.derive import Observation
from ..core.levels import Ticks
from ..errors import RecordingError, SpeechClockWarning
from .cache import TraceCache, resolve_cache
from .config import CONFIG_NAME, Config, find_config, read_config
from .events import read_labels
from .recording import Recording, read_recording
from .sources import is_file, is_url, list_folder, name_of, sibling, url_info
from .workers import Workers, run_ordered

__all__ = [
    "AUDIO_SUFFIXES",
    "CONFIG_NAME",
    "Corpus",
    "collect",
    "labels_path_for",
    "load_corpus",
    "observe",
    "observe_all",
]

#: Files in a folder that are taken as recordings.
AUDIO_SUFFIXES = (".webm", ".mkv", ".ogg", ".opus", ".oga", ".wav", ".flac", ".mp3", ".mp4", ".m4a")


def labels_path_for(recording: str | os.PathLike[str]) -> Path | None:
    """The ground-truth label track beside a recording (``x.webm`` -> ``x.labels.txt``; a URL's beside it), or None."""
    candidate = sibling(recording, Path(name_of(recording)).stem + ".labels.txt")
    return candidate if is_file(candidate) else None  # type: ignore[return-value]


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


def collect(
    paths: Iterable[str | os.PathLike[str]], *, config: str | os.PathLike[str] | None = None
) -> tuple[Config, list[Path]]:
    """The recordings named by files, folders or configs, and the config that governs them.

    A folder gives every audio file in it (sorted by name) and its
    ``speechclock.toml``; a ``.toml`` file gives its folder's recordings and
    itself. ``config`` overrides the config found.

    Raises
    ------
    RecordingError
        A path that does not exist, or a folder with no recordings.
    ConfigError
        A malformed config.
    """
    found: list[Path] = []
    config_path = Path(config) if config is not None else None
    for raw in paths:
        if is_url(raw):
            found.extend(_collect_url(str(raw), configured=config_path is not None))
            continue
        p = Path(raw)
        if not p.exists():
            raise RecordingError(f"{p}: no such file or folder")
        if p.suffix == ".toml":
            config_path = config_path or p
            p = p.parent
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in AUDIO_SUFFIXES)
            if not files:
                raise RecordingError(f"{p}: no recordings in this folder ({', '.join(AUDIO_SUFFIXES)})")
            found.extend(files)
            config_path = config_path or find_config(p)
        else:
            found.append(p)
            config_path = config_path or find_config(p.parent)
    unique = list(dict.fromkeys(found))
    return (read_config(config_path) if config_path is not None else Config()), unique


def observe(
    path: Path, config: Config, *, lenient: bool = False, cache: TraceCache | None = None
) -> tuple[Recording, Observation]:
    """Read one recording with the config's cadence and analyser, with its log and labels."""
    th = config.thresholds
    rec = read_recording(
        path, ticks=Ticks(th.tick_s), options=AnalyserOptions(fft_size=th.fft_size), lenient=lenient, cache=cache
    )
    labels_path = labels_path_for(path)
    labels = tuple(read_labels(labels_path)) if labels_path else None
    return rec, Observation(name_of(path), rec.trace, rec.events, labels, config.meta(name_of(path)))


def _observe_task(args: tuple[Path, Config, bool, TraceCache | bool | None]) -> tuple[Recording, Observation]:
    path, config, lenient, cache = args
    # True: the default cache of the machine the task runs on (a remote worker's own).
    return observe(path, config, lenient=lenient, cache=resolve_cache(cache) if cache is True else cache or None)


def observe_all(
    files: Iterable[Path],
    config: Config,
    *,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
    scheduler: str | None = None,
    cache: TraceCache | bool | None = None,
) -> list[tuple[Recording, Observation]]:
    """Observe several recordings where :mod:`clock.io.workers` says (here, a process pool or Dask).

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
        A Dask scheduler (``tcp://host:8786``, or ``local:N``); see :class:`~clock.io.workers.Workers`.
    cache : TraceCache or bool, optional
        Level traces kept between runs (see :mod:`clock.io.cache`); True for
        the default cache of the machine each task runs on.
    """
    todo = [(f, config, lenient, cache) for f in files]
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
    """

    config: Config
    recordings: tuple[Recording, ...]
    observations: tuple[Observation, ...]


def load_corpus(
    paths: Iterable[str | os.PathLike[str]],
    *,
    config: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
    scheduler: str | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> Corpus:
    """Read recordings named by files, folders or a config (see :func:`collect`).

    Parameters
    ----------
    paths : iterable of path-like or URL
    config : path-like, optional
    jobs : int
        Processes on this machine (see :class:`~clock.io.workers.Workers`).
    lenient : bool
        Skip malformed event lines with a warning.
    progress : callable, optional
        Called with each recording as it finishes.
    scheduler : str, optional
        Run on a Dask cluster instead: ``tcp://host:8786`` or ``local:N``.
    cache : TraceCache, path-like, bool or None
        Where level traces are kept between runs: True (default) for the
        user's cache folder (``$SPEECHCLOCK_CACHE`` moves it), a folder, or
        False/None for none (see :mod:`clock.io.cache`).

    Examples
    --------
    >>> corpus = load_corpus(["recordings"])  # doctest: +SKIP
    >>> clock.derive(corpus.observations)     # doctest: +SKIP
    """
    cfg, files = collect(paths, config=config)
    traces: TraceCache | None = None
    spec: TraceCache | bool | None = True
    if not (cache is True and scheduler is not None and not scheduler.startswith("local")):
        traces = resolve_cache(cache)
        if traces is not None and not traces.writable():
            traces = None  # said once here, not once per worker
        spec = traces
    # else: each remote worker keeps its own default cache (an explicit folder is used as given).
    pairs = observe_all(files, cfg, jobs=jobs, lenient=lenient, progress=progress, scheduler=scheduler, cache=spec)
    if traces is not None:
        traces.prune()
    return Corpus(cfg, tuple(r for r, _ in pairs), tuple(o for _, o in pairs))
