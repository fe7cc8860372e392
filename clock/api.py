"""The library's one-call check: ``clock.check(recordings, thresholds=None, config=None)``.

It reads the recordings (or takes a loaded :class:`~clock.io.corpus.Corpus`),
applies the config's thresholds, margins and tolerances, and gives the one
list of :class:`~clock.core.check.CheckResult` that ``speechclock check``
prints, writes as JSON and JUnit, and the report shows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from .core.check import CheckResult, check_corpus, in_time_order
from .core.derive import Observation
from .core.thresholds import Thresholds
from .errors import ConfigError

__all__ = ["check", "check_config"]


def check_config(
    cfg: Any, observations: Iterable[Observation], baseline: Mapping[str, Any], *, page: Any = None
) -> list[CheckResult]:
    """Every check of ``observations`` with a config's thresholds, margins and tolerances.

    Parameters
    ----------
    cfg : Config
    observations : iterable of Observation
    baseline : mapping
        The baseline's entries by recording name (``{}`` for none).
    page : Config, optional
        The config as committed (the setting the page ran, before a candidate
        replaced it): logged decisions are compared only at that setting
        [default: ``cfg``].
    """
    return in_time_order(
        check_corpus(
            list(observations),
            thresholds=cfg.thresholds,
            margins=cfg.margins,
            baseline=dict(baseline),
            onset_tolerance_s=cfg.baseline.onset_tolerance_s,
            max_gap_tolerance_s=cfg.baseline.max_gap_tolerance_s,
            lossless_tolerance=cfg.agreement.lossless_tolerance,
            recorder_tolerance=cfg.agreement.recorder_tolerance,
            max_floor_disagreements=cfg.agreement.max_floor_disagreements,
            page_thresholds=(page or cfg).thresholds,
            align_log=cfg.agreement.align_log,
        )
    )


def check(
    recordings: Any,
    *,
    thresholds: Thresholds | Mapping[str, float] | None = None,
    config: str | os.PathLike[str] | None = None,
    jobs: int = 1,
) -> list[CheckResult]:
    """Check recordings against the committed thresholds (or given ones), as ``speechclock check`` does.

    Parameters
    ----------
    recordings : path-like, iterable of path-like, or Corpus
        Files, folders or a ``speechclock.toml`` (as the command line takes
        them), or a corpus already loaded with :func:`clock.load_corpus`.
    thresholds : Thresholds or mapping, optional
        The thresholds to check, or some of them by name (``floor``,
        ``quiet_s``, ``onset_timeout_s``) over the config's.
    config : path-like, optional
        The ``speechclock.toml`` [default: the one in the recordings' folder].
    jobs : int
        Processes that decode the recordings.

    Returns
    -------
    list of CheckResult
        One per failure, else one per check; :func:`clock.check_counts` gives
        the counts every view prints.

    Raises
    ------
    ConfigError
        No config was found and no ``thresholds`` were given (as the command
        line, which wants ``--allow-defaults``), or the config is malformed.

    Examples
    --------
    >>> results = clock.check("recordings")                      # doctest: +SKIP
    >>> clock.check_counts(results).failed                       # doctest: +SKIP
    >>> clock.check("recordings", thresholds={"quiet_s": 0.5})   # doctest: +SKIP
    """
    from .io.baseline import read_baseline
    from .io.corpus import Corpus, load_corpus

    if isinstance(recordings, Corpus):
        corpus = recordings
        if config is not None:
            from .io.config import read_config

            corpus = replace(corpus, config=read_config(config))
    else:
        paths = [recordings] if isinstance(recordings, str | os.PathLike) else list(recordings)
        corpus = load_corpus(paths, config=config, jobs=jobs)
    cfg = corpus.config
    if thresholds is None and cfg.path is None:
        raise ConfigError(
            "no speechclock.toml beside the recordings: give config=PATH, or thresholds= to check against"
        )
    if isinstance(thresholds, Thresholds):
        cfg = replace(cfg, thresholds=thresholds)
    elif thresholds is not None:
        cfg = replace(cfg, thresholds=cfg.thresholds.with_(**thresholds))
    baseline = read_baseline(cfg.baseline_path) if cfg.path is not None else {}
    return check_config(cfg, corpus.observations, baseline, page=corpus.config)
