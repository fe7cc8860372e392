"""``speechclock check``: hold recordings to the committed setting (speechclock.toml), for CI.

The command runs the checks (:func:`clock.api.corpus_checks`), optionally merges the recordings into the
baseline, and writes the verdict as text, JSON or GitHub annotations, and as JUnit XML on every exit.
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import click

from ..api import corpus_checks
from ..api import derive as derive_thresholds
from ..core.agreement import page_trace
from ..core.beats import beats as find_beats
from ..core.check import CheckCounts, CheckResult, check_counts
from ..core.check_beats import baseline_entry
from ..core.levels import LevelTrace
from ..core.model import Observation
from ..errors import InvalidParameterError, SpeechClockError
from ..io.baseline import read_baseline
from ..io.baseline import update_baseline as merge_into_baseline
from ..io.config import Config
from ..io.inputs import Inputs
from ..io.output import atomic_output, json_text
from ..io.terminal import printable
from ..report.text import check_summary, check_text, dead_air_summary, not_applicable_lines, saving_line
from ..run.corpus import Corpus
from .options import CorpusArgs, OutputPath, candidate_options, corpus_options, load_corpus, with_candidate
from .shared import allow_defaults_option, baseline_option, config_source, stress_progress, where_to_run


@dataclass(frozen=True, slots=True)
class Checked:
    """What a check run found, for its outputs.

    Attributes
    ----------
    corpus : Corpus
        The recordings read.
    observations : list of Observation
        What was checked (at the page's ticks with ``--page-ticks``).
    config : Config
        The config checked against (with any candidate).
    label : str
        The setting's name ("committed", a candidate's, "built-in defaults").
    source : str
        What the ``config:`` line names.
    results : list of CheckResult
        Every check's result.
    """

    corpus: Corpus
    observations: list[Observation]
    config: Config
    label: str
    source: str
    results: list[CheckResult]


@click.command()
@corpus_options
@candidate_options
@click.option("--junit", type=OutputPath(), help="Also write JUnit XML here (on every exit).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github: GitHub Actions annotations, one per failure.",
)
@allow_defaults_option
@baseline_option
@click.option(
    "--update-baseline",
    is_flag=True,
    help="Merge these recordings into the baseline (under a lock, atomically; audio and logs are never touched).",
)
@click.option(
    "--page-ticks",
    is_flag=True,
    help="Replay the clock at the page's own ticks (the frames of its clock.level readings, logged on every "
    "tick) for each recording whose log holds them, as beats --page-ticks does; the others at the cadence.",
)
@click.pass_context
def check(
    ctx: click.Context,
    corpus_args: CorpusArgs,
    junit: Path | None,
    fmt: str,
    allow_defaults: bool,
    baseline: Path | None,
    update_baseline: bool,
    page_ticks: bool,
    **opts: Any,
) -> None:
    """Check RECORDINGS against the committed thresholds (speechclock.toml).

    Prints the config it used, one line per failure
    (recording:mm:ss.mmm: check: measured vs threshold) and the counts, which
    are the JUnit file's. Exit 0 when every check holds, 1 when any fails,
    2 on a usage or input error (the JUnit file then holds it as an error).
    """
    try:
        found = _run_checks(
            corpus_args, junit=junit, allow_defaults=allow_defaults,
            baseline=baseline, update_baseline=update_baseline, page_ticks=page_ticks, opts=opts,
        )  # fmt: skip
    except SpeechClockError as err:
        _junit_error(junit, corpus_args.recordings, err)
        raise
    except (KeyboardInterrupt, SystemExit) as err:  # Ctrl-C, SIGTERM: no previous verdict may stay behind
        why = "SIGTERM" if isinstance(err, SystemExit) else "SIGINT (Ctrl-C)"
        _junit_error(junit, corpus_args.recordings, RuntimeError(f"the run was interrupted by {why}; no verdict"))
        raise
    if junit is not None:
        from ..report.junit import junit_xml

        with atomic_output(junit, inputs=found.corpus.inputs, option="--junit") as f:
            f.write(junit_xml(found.results))
    counts = check_counts(found.results)
    cost = _dead_air_beside(found.observations, found.config, found.label)
    if fmt == "json":
        click.echo(json_text(_check_dict(found, counts, cost)), nl=False)
    elif fmt == "github":
        _echo_annotations(found, counts)
    else:
        click.echo(printable(f"config: {found.source}"))
        lines = check_text(found.results, counts)
        if cost is not None:
            lines.insert(len(lines) - 1, cost[0])
        for line in lines:
            click.echo(printable(line, newlines=False))
    ctx.exit(1 if counts.failed else 0)


def _run_checks(
    corpus_args: CorpusArgs,
    *,
    junit: Path | None,
    allow_defaults: bool,
    baseline: Path | None,
    update_baseline: bool,
    page_ticks: bool,
    opts: dict[str, Any],
) -> Checked:
    """Read the recordings, merge them into the baseline where asked, and run every check."""
    corpus = load_corpus(
        corpus_args,
        outputs={"--junit": junit},
        baseline=baseline,
        writes_baseline=update_baseline,
        require_config=not allow_defaults,
    )
    obs = at_page_ticks(corpus) if page_ticks else list(corpus.observations)
    cfg, label = with_candidate(corpus.config, opts)
    source = config_source(cfg, opts)
    base_path = baseline if baseline is not None else cfg.baseline_path
    base = read_baseline(base_path)
    if update_baseline:
        base = _merged_baseline(base_path, obs, cfg, corpus.inputs)
    # A progress bar only for the [robustness] table's stress runs (the rest is quick).
    with stress_progress(corpus, no_progress=corpus_args.no_progress or not cfg.robustness) as progress:
        results = corpus_checks(
            corpus, cfg, base, observations=obs, label=label, progress=progress, **where_to_run(corpus_args.jobs)
        )
    return Checked(corpus, obs, cfg, label, source, results)


def _merged_baseline(base_path: Path, obs: list[Observation], cfg: Config, inputs: Inputs) -> dict[str, dict[str, Any]]:
    """``--update-baseline``: merge each recording's beats at the setting into the baseline file; the new baseline."""
    th = cfg.thresholds
    entries = {
        o.name: baseline_entry(
            find_beats(o.trace, o.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s)
        )
        for o in obs
        if o.events is not None and o.events.terminals
    }
    base = merge_into_baseline(base_path, entries, inputs=inputs)
    click.echo(printable(f"wrote {base_path} ({len(base)} recordings)"), err=True)
    return base


def _check_dict(found: Checked, counts: CheckCounts, cost: tuple[str, dict[str, Any]] | None) -> dict[str, Any]:
    """``check --format json`` (schema 1): the config, the verdict, the counts, every result, the dead air."""
    return {
        "schema": 1,
        "config": found.source,
        "passed": counts.failed == 0,
        "counts": {
            "recordings": counts.recordings,
            "checks": counts.checks,
            "passed": counts.passed,
            "failed": counts.failed,
            "not_applicable": counts.not_applicable,
            "failures": counts.failures,
        },
        "results": [_result_dict(r) for r in found.results],
        "dead_air": None if cost is None else cost[1],
    }


def _echo_annotations(found: Checked, counts: CheckCounts) -> None:
    """``check --format github``: an error annotation per failure, and a notice with the config and counts."""
    paths = {Path(rec.info.path).name: rec.info.path for rec in found.corpus.recordings}
    for r in found.results:
        if not r.passed:
            click.echo(
                f"::error file={_gh(annotation_path(paths.get(r.recording, r.recording)), True)},"
                f"title={_gh('speechclock ' + r.check, True)}::{_gh(r.line(), False)}"
            )
    notice = "\n".join([f"config {found.source}; {check_summary(counts)}", *not_applicable_lines(found.results)])
    click.echo(f"::notice title=speechclock check::{_gh(notice, False)}")


def _dead_air_beside(obs: list[Observation], cfg: Any, label: str) -> tuple[str, dict[str, Any]] | None:
    """The checked setting's dead air over the corpus beside the recommendation's (derive, without held-out runs).

    None when no recording has beats or nothing is recommended.
    """
    from ..run.cache import resolve_cache
    from ..run.results import cached_result
    from .scale import scale_settings

    # The same every time for unchanged recordings and config: with a cache, read back (as derive's own).
    found = cached_result(
        resolve_cache(scale_settings()[1]),
        "derive",
        obs,
        functools.partial(
            derive_thresholds, obs, margins=cfg.margins, compare=cfg.thresholds, compare_label=label, held_out=False
        ),
        margins=cfg.margins,
        compare=cfg.thresholds,
        compare_label=label,
        held_out=False,
    )
    c = found.compared
    if found.rules is None or c is None or c.dead_air is None:
        return None
    mine, theirs = c.dead_air, found.rules.level.dead_air
    floor, quiet, timeout = found.setting
    line = (
        f"dead air at this setting: {dead_air_summary(mine)}; the recommendation (floor {floor:g}, quiet {quiet:g} s): "
        f"{dead_air_summary(theirs)}"
    )
    saving = found.rules.saving
    if saving is not None:
        line += f"; {saving_line(found.rules).removeprefix('less dead air: ')}"
    data = {
        "setting": asdict(mine),
        "recommended": asdict(theirs),
        "recommended_setting": {"floor": floor, "quiet_s": quiet, "onset_timeout_s": timeout},
        "saving_rule": None if saving is None else {"label": saving.rule.label} | asdict(saving.rule),
        "saving": None if saving is None else asdict(saving.dead_air),
    }
    return line, data


def _junit_error(junit: Path | None, recordings: tuple[Path, ...], err: Exception) -> None:
    """Write the JUnit file holding a run's bad-input error, where that can harm nothing.

    Only a new file, or one that is already a JUnit report, is written (the
    error may have come before the run knew all its inputs, and no input of
    speech-clock is a JUnit report); nothing is written when the error is the
    JUnit path itself.
    """
    if junit is None or "--junit" in str(err):
        return
    try:
        if junit.exists():
            if not junit.is_file():
                return
            with open(junit, "rb") as f:
                if b"<testsuites" not in f.read(4096):
                    return
        from ..report.junit import junit_xml

        inputs = Inputs()
        for p in recordings:
            if isinstance(p, Path):
                inputs.add_folder(p) if p.is_dir() else inputs.add_recording(p)
        with atomic_output(junit, inputs=inputs, option="--junit") as out:
            out.write(junit_xml([], error=str(err)))
    except (OSError, SpeechClockError):
        pass  # it cannot be written: the message on stderr says why the run stopped


def annotation_path(path: str | Path) -> str:
    """A recording's path as GitHub attaches annotations to it: relative to ``$GITHUB_WORKSPACE`` or the
    working directory when it lies inside, else as given (a URL stays a URL)."""
    text = str(path)
    if "://" in text:
        return text
    p = Path(text).absolute()
    for root in (os.environ.get("GITHUB_WORKSPACE"), os.getcwd()):
        if root:
            try:
                return p.relative_to(Path(root).absolute()).as_posix()
            except ValueError:
                continue
    return text


def _gh(text: str, is_property: bool) -> str:
    """Escape text for a GitHub Actions workflow command (as the Actions toolkit does)."""
    out = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return printable(out.replace(":", "%3A").replace(",", "%2C") if is_property else out)


def _result_dict(r: CheckResult) -> dict[str, Any]:
    return asdict(r) | {"line": r.line()}


def at_page_ticks(corpus: Corpus) -> list[Observation]:
    """The corpus's observations, each whose log holds clock.level readings at the page's own ticks."""
    out = []
    for rec, o in zip(corpus.recordings, corpus.observations):
        log = o.events
        if log is not None and log.readings and isinstance(rec.quantum, LevelTrace):
            o = replace(o, trace=page_trace(rec.quantum, log.readings, start=log.start, ticks=o.trace.ticks))
        out.append(o)
    if all(a is b for a, b in zip(out, corpus.observations)):
        raise InvalidParameterError("--page-ticks: no recording's log holds clock.level readings (see docs/capture.md)")
    return out
