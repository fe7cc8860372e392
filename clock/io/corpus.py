"""Collecting recordings from files, folders and configs, and reading each once."""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..core.agreement import Agreement, agreement
from ..core.analyser import AnalyserOptions
from ..core.derive import Observation
from ..core.events import EventLog
from ..core.levels import LevelTrace, Ticks
from ..errors import InvalidParameterError, RecordingError, SpeechClockWarning
from .config import CONFIG_NAME, AgreementConfig, Config, find_config, read_config
from .events import read_labels
from .inputs import AUDIO_SUFFIXES, Inputs, sidecar
from .recording import Recording, read_recording

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
    """The ground-truth label track beside a recording (``x.webm`` -> ``x.labels.txt``), or None."""
    candidate = sidecar(recording, "label track")
    return candidate if candidate.is_file() else None


def collect(
    paths: Iterable[str | os.PathLike[str]],
    *,
    config: str | os.PathLike[str] | None = None,
    inputs: Inputs | None = None,
    baseline: str | os.PathLike[str] | None = None,
) -> tuple[Config, list[Path]]:
    """The recordings named by files, folders or configs, and the config that governs them.

    A folder gives every audio file in it (sorted by name) and its
    ``speechclock.toml``; a ``.toml`` file gives its folder's recordings and
    itself. ``config`` overrides the config found. A recording named twice
    (by a folder and by itself, or through a link) counts once.

    Parameters
    ----------
    paths : iterable of path-like
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
    found: list[Path] = []
    folders: list[Path] = []
    config_path = Path(config) if config is not None else None
    for raw in paths:
        p = Path(raw)
        if not os.path.lexists(p):
            raise RecordingError(f"{p}: no such file or folder")
        if p.suffix == ".toml":
            config_path = config_path or p
            p = p.parent
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in AUDIO_SUFFIXES)
            if not files:
                raise RecordingError(f"{p}: no recordings in this folder ({', '.join(AUDIO_SUFFIXES)})")
            found.extend(files)
            folders.append(p)
            config_path = config_path or find_config(p)
        else:
            found.append(p)
            config_path = config_path or find_config(p.parent)
    unique: dict[object, Path] = {}
    for f in found:
        try:
            st = f.stat()
            key: object = (st.st_dev, st.st_ino)
        except OSError:
            key = os.path.realpath(f)
        unique.setdefault(key, f)
    cfg = read_config(config_path) if config_path is not None else Config()
    if inputs is not None:
        for f in unique.values():
            inputs.add_recording(f)
        for folder in folders:
            inputs.add_folder(folder)
        inputs.add(config_path, "config")
        inputs.add(baseline if baseline is not None else cfg.baseline_path, "baseline")
    return cfg, list(unique.values())


def observe(path: Path, config: Config, *, lenient: bool = False) -> tuple[Recording, Observation]:
    """Read one recording with the config's cadence and analyser, with its log and labels."""
    th = config.thresholds
    rec = read_recording(path, ticks=Ticks(th.tick_s), options=AnalyserOptions(fft_size=th.fft_size), lenient=lenient)
    labels_path = labels_path_for(path)
    labels = tuple(read_labels(labels_path, duration_s=rec.duration_s)) if labels_path else None
    found, events = log_agreement(rec, floor=th.floor, config=config.agreement)
    meta = {**(rec.events.session if rec.events is not None else {}), **config.meta(path.name)}
    return rec, Observation(path.name, rec.trace, events, labels, meta, found)


def log_agreement(
    rec: Recording, *, floor: float, config: AgreementConfig, align_log: bool | None = None
) -> tuple[Agreement | None, EventLog | None]:
    """The agreement of a recording's page-logged levels, and its log (shifted when asked and uncertain).

    The log is shifted by the estimated offset only when ``align_log`` (default:
    the config's) is set and the recording's start is not exact.
    """
    log = rec.events
    if log is None or not log.readings or not isinstance(rec.quantum, LevelTrace):
        return None, log
    found = agreement(rec.quantum, log.readings, floor=floor, start=log.start, search_s=config.search_s)
    align = config.align_log if align_log is None else align_log
    if found is not None and align and found.offset_estimated and found.offset_s:
        log = log.shifted(found.offset_s)
    return found, log


def _observe_quietly(args: tuple[Path, Config, bool]) -> tuple[Recording, Observation, list[str]]:
    """Observe one recording, returning its warnings instead of showing them."""
    path, config, lenient = args
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpeechClockWarning)
        rec, obs = observe(path, config, lenient=lenient)
    return rec, obs, [str(w.message) for w in caught if issubclass(w.category, SpeechClockWarning)]


def observe_all(
    files: Iterable[Path],
    config: Config,
    *,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
) -> list[tuple[Recording, Observation]]:
    """Observe several recordings, in a process pool when ``jobs > 1``.

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
        Called with each recording's path as it finishes (in order).
    """
    if jobs < 1:
        raise InvalidParameterError(f"jobs must be >= 1, got {jobs}")
    todo = [(f, config, lenient) for f in files]
    out: list[tuple[Recording, Observation]] = []

    def take(results: Iterable[tuple[Recording, Observation, list[str]]]) -> None:
        for (path, _, _), (rec, obs, messages) in zip(todo, results):
            for message in messages:
                warnings.warn(message, SpeechClockWarning, stacklevel=3)
            out.append((rec, obs))
            if progress is not None:
                progress(path)

    if jobs == 1 or len(todo) < 2:
        take(map(_observe_quietly, todo))
        return out
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), initializer=_worker_signals)
    try:
        take(pool.map(_observe_quietly, todo))
    except BaseException:
        # An error, Ctrl-C or SIGTERM: stop the workers now rather than let them finish the corpus.
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
        raise
    pool.shutdown()
    return out


def _worker_signals() -> None:
    """Workers leave Ctrl-C to the main process, and die at once when it stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


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
) -> Corpus:
    """Read recordings named by files, folders or a config (see :func:`collect`).

    Examples
    --------
    >>> corpus = load_corpus(["recordings"])  # doctest: +SKIP
    >>> clock.derive(corpus.observations)     # doctest: +SKIP
    """
    inputs = Inputs()
    cfg, files = collect(paths, config=config, inputs=inputs, baseline=baseline)
    return observe_corpus(cfg, files, inputs, jobs=jobs, lenient=lenient, progress=progress)


def observe_corpus(
    config: Config,
    files: Iterable[Path],
    inputs: Inputs,
    *,
    jobs: int = 1,
    lenient: bool = False,
    progress: Callable[[Path], None] | None = None,
) -> Corpus:
    """The corpus of recordings already collected (see :func:`collect`)."""
    pairs = observe_all(files, config, jobs=jobs, lenient=lenient, progress=progress)
    return Corpus(config, tuple(r for r, _ in pairs), tuple(o for _, o in pairs), inputs)
