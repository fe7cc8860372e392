"""The library's calls that are the commands': ``clock.check`` and ``clock.derive``.

:func:`check` reads the recordings (or takes a loaded
:class:`~clock.run.corpus.Corpus`), applies the config's thresholds, margins,
tolerances and ``[robustness]`` table, and gives the one list of
:class:`~clock.core.check.CheckResult` that ``speechclock check`` prints,
writes as JSON and JUnit, and the report shows (:func:`corpus_checks`).
:func:`derive` is the engine (:func:`clock.core.recommend.engine.derive`) with the
preference ``speechclock derive --prefer`` names: ``"robust"`` stresses the
recordings (:func:`clock.run.stress.robust_preference`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .core.check import CheckResult, check_corpus, in_time_order
from .core.model import Margins, Observation
from .core.recommend.engine import derive as derive_engine
from .core.recommend.evidence import Derivation
from .core.recommend.rule_choice import GROUP_KEYS
from .core.recommend.search import Prefer
from .core.thresholds import Thresholds
from .errors import ConfigError, InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover
    from .run.cache import TraceCache

__all__ = ["PREFERENCES", "check", "check_config", "corpus_checks", "derive"]

#: What ``derive(prefer=...)`` takes by name (``speechclock derive --prefer``).
PREFERENCES = ("evidence", "robust")


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


def corpus_checks(
    corpus: Any,
    cfg: Any,
    baseline: Mapping[str, Any],
    *,
    observations: Iterable[Observation] | None = None,
    label: str = "committed",
    jobs: int = 1,
    scheduler: str | None = None,
    progress: Callable[[int], None] | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> list[CheckResult]:
    """Every check ``speechclock check`` makes of a corpus: :func:`check_config`'s, then the ``[robustness]`` table's.

    Parameters
    ----------
    corpus : Corpus
        From :func:`clock.load_corpus`; its config is the one the page ran.
    cfg : Config
        The config checked (the corpus's, or it with a candidate's thresholds).
    baseline : mapping
        The baseline's entries by recording name (``{}`` for none).
    observations : iterable of Observation, optional
        What :func:`check_config` checks [default: the corpus's] (``check
        --page-ticks`` replays some at the page's own ticks); the robustness
        checks stress the corpus's recordings as they are.
    label : str
        What ``cfg``'s setting is (``committed``, ``candidate``), as the stress
        runs' results cache keeps it.
    jobs, scheduler, progress, cache :
        Where the robustness checks' stress runs go, what they report, and
        their trace cache (:func:`clock.run.stress.robustness_results`).
    """
    from .run.stress import robustness_results

    obs = corpus.observations if observations is None else observations
    results = check_config(cfg, obs, baseline, page=corpus.config)
    return results + robustness_results(
        corpus, config=cfg, label=label, jobs=jobs, scheduler=scheduler, progress=progress, cache=cache
    )


def check(
    recordings: Any,
    *,
    thresholds: Thresholds | Mapping[str, float] | None = None,
    config: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
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
        Processes that decode the recordings (and stress them, for the
        config's ``[robustness]`` table).
    cache : TraceCache, path-like, bool or None
        Where level traces are kept (as :func:`clock.load_corpus` takes it;
        True: the user's cache folder).

    Returns
    -------
    list of CheckResult
        One per failure, else one per check, the ``[robustness]`` table's
        last; :func:`clock.check_counts` gives the counts every view prints.

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
    from .run.corpus import Corpus, load_corpus

    if isinstance(recordings, Corpus):
        corpus = recordings
        if config is not None:
            from .io.config import read_config

            corpus = replace(corpus, config=read_config(config))
    else:
        paths = [recordings] if isinstance(recordings, str | os.PathLike) else list(recordings)
        corpus = load_corpus(paths, config=config, jobs=jobs, cache=cache)
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
    label = "committed" if thresholds is None else "candidate"
    return corpus_checks(corpus, cfg, baseline, label=label, jobs=jobs, cache=cache)


def derive(
    observations: Any,
    *,
    margins: Margins | None = None,
    group: str = "all",
    compare: Thresholds | None = None,
    compare_label: str = "committed",
    prefer: str | Prefer | None = None,
    held_out: bool = True,
    group_keys: Sequence[str] = GROUP_KEYS,
    committed: Thresholds | None = None,
    sources: Sequence[Any] | None = None,
    jobs: int = 1,
    scheduler: str | None = None,
    cache: TraceCache | str | os.PathLike[str] | bool | None = True,
) -> Derivation:
    """Derive the floor, the quiet time and the onset timeout from recordings, and replay them, as
    ``speechclock derive`` does.

    Parameters
    ----------
    observations : sequence of Observation, or Corpus
        A corpus loaded with :func:`clock.load_corpus` brings its recordings
        (``sources``), its config's margins (``margins``) and the setting
        its config commits (``committed``), as ``speechclock derive`` takes
        them.
    margins, group, compare, compare_label, held_out, group_keys, committed :
        As :func:`clock.core.recommend.engine.derive` takes them.
    prefer : {"evidence", "robust"} or callable, optional
        Which of the settings that end every beat right to recommend:
        ``"evidence"`` (or None) the engine's first; ``"robust"`` the one
        with the widest smallest margin when the recordings are changed
        (``speechclock derive --prefer robust``,
        :func:`clock.run.stress.robust_preference`); a callable chooses (see
        :data:`clock.core.recommend.search.Prefer`).
    sources : sequence of path-like or URL, optional
        Where each observation was decoded from, for ``prefer="robust"``
        (which decodes them again, changed) [default: a corpus's recordings].
    jobs, scheduler :
        Where the recordings are stressed (see :class:`~clock.run.workers.Workers`).
    cache : TraceCache, path-like, bool or None
        Where the changed recordings' level traces are kept (as
        :func:`clock.load_corpus` takes it; True: the user's cache folder).

    Returns
    -------
    Derivation
        The recommendation (``Derivation.setting``), its evidence, its
        replay over the corpus, and how stable it is.

    Raises
    ------
    InvalidParameterError
        ``prefer`` is another name, or ``"robust"`` without the recordings'
        sources (give a corpus, or ``sources``).

    Examples
    --------
    >>> corpus = clock.load_corpus(["recordings"])      # doctest: +SKIP
    >>> clock.derive(corpus, prefer="robust").setting   # doctest: +SKIP
    """
    obs, sources, margins, committed = _with_corpus(observations, sources, margins, committed)
    return derive_engine(
        obs,
        margins=margins,
        group=group,
        compare=compare,
        compare_label=compare_label,
        prefer=_preference(prefer, obs, sources, margins=margins, jobs=jobs, scheduler=scheduler, cache=cache),
        held_out=held_out,
        group_keys=group_keys,
        committed=committed,
    )


def _with_corpus(
    observations: Any, sources: Sequence[Any] | None, margins: Margins | None, committed: Thresholds | None
) -> tuple[list[Observation], Sequence[Any] | None, Margins | None, Thresholds | None]:
    """The observations, and for a corpus its recordings' sources, its config's margins and committed setting
    where they are not given."""
    from .run.corpus import Corpus

    if isinstance(observations, Corpus):
        if sources is None:
            sources = [r.info.path for r in observations.recordings]
        if margins is None:
            margins = observations.config.margins
        if committed is None:
            committed = observations.config.thresholds
        observations = observations.observations
    return list(observations), sources, margins, committed


def _preference(
    prefer: str | Prefer | None,
    obs: list[Observation],
    sources: Sequence[Any] | None,
    *,
    margins: Margins | None,
    jobs: int,
    scheduler: str | None,
    cache: Any,
) -> Prefer | None:
    """The engine's ``prefer`` for :func:`derive`'s."""
    if prefer is None or callable(prefer):
        return prefer
    if prefer not in PREFERENCES:
        raise InvalidParameterError(f"prefer must be one of {', '.join(PREFERENCES)} or a callable, got {prefer!r}")
    if prefer == "evidence":
        return None
    if sources is None:
        raise InvalidParameterError(
            'prefer="robust" stresses the recordings: give a corpus (clock.load_corpus), or sources= beside the '
            "observations"
        )
    sources = list(sources)
    if len(sources) != len(obs):
        raise InvalidParameterError(f"sources: {len(sources)} given for {len(obs)} observations")
    from .run.stress import robust_preference, usable_cache
    from .run.workers import Workers

    return robust_preference(
        sources,
        obs,
        margins=margins,
        workers=Workers(jobs=jobs, scheduler=scheduler),
        cache=usable_cache(cache, scheduler),
    )
