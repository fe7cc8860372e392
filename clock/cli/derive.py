"""``speechclock derive`` and ``speechclock check``."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ..core.beats import beats as find_beats
from ..core.check import CheckResult, baseline_entry, check_corpus
from ..core.derive import Observation
from ..core.derive import derive as derive_thresholds
from ..io.baseline import read_baseline
from ..io.baseline import update_baseline as merge_into_baseline
from ..io.config import Config
from ..io.output import atomic_output, json_text
from ..report.junit import junit_xml
from ..report.text import derive_dict, derive_markdown, derive_text
from .options import corpus_options, load_corpus, output_option

#: ``--baseline FILE``: the baseline, wherever it is (the config's ``[baseline] file`` stays in its folder).
baseline_option = click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The baseline file [default: the config's [baseline] file, in the recordings' folder].",
)


@click.command()
@corpus_options()
@click.option("--by", metavar="KEY", help="Derive per value of a metadata key in the config (e.g. voice).")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
@output_option
def derive(
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    quiet: bool,
    lenient: bool,
    by: str | None,
    fmt: str,
    output: Path | None,
) -> None:
    """Recommend the floor, quiet time and onset timeout from RECORDINGS, with the evidence.

    RECORDINGS are files, folders (every recording in them) or a
    speechclock.toml (its folder). Labels (NAME.labels.txt) and event logs
    (NAME.events.jsonl) beside each recording are used when present.
    """
    corpus = load_corpus(recordings, config, jobs, quiet, lenient, outputs={"-o": output})
    cfg, obs = corpus.config, list(corpus.observations)
    groups: dict[str, list[Observation]] = {"all": obs}
    if by:
        for o in obs:
            groups.setdefault(f"{by}={o.meta.get(by, '(none)')}", []).append(o)
    found = [
        derive_thresholds(
            members,
            margins=cfg.margins,
            fallback_floor=cfg.thresholds.floor,
            quiet_s=cfg.thresholds.quiet_s,
            group=name,
        )
        for name, members in groups.items()
    ]
    committed = cfg.thresholds if cfg.path is not None else None
    with atomic_output(output, inputs=corpus.inputs) as out:
        if fmt == "json":
            out.write(json_text(derive_dict(found, committed)))
        elif fmt == "markdown":
            out.write(derive_markdown(found, committed))
        else:
            out.write(derive_text(found, committed))


@click.command()
@corpus_options()
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write JUnit XML here.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@baseline_option
@click.option(
    "--update-baseline",
    is_flag=True,
    help="Merge these recordings into the baseline (under a lock, atomically; audio and logs are never touched).",
)
@click.pass_context
def check(
    ctx: click.Context,
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    quiet: bool,
    lenient: bool,
    junit: Path | None,
    fmt: str,
    baseline: Path | None,
    update_baseline: bool,
) -> None:
    """Check RECORDINGS against the committed thresholds (speechclock.toml).

    Exit 0 when every check holds, 1 when any fails (one line each:
    recording:mm:ss.mmm: check: measured vs threshold), 2 on a usage or
    input error.
    """
    corpus = load_corpus(
        recordings,
        config,
        jobs,
        quiet,
        lenient,
        outputs={"--junit": junit},
        baseline=baseline,
        writes_baseline=update_baseline,
    )
    cfg, obs = corpus.config, list(corpus.observations)
    base_path = baseline if baseline is not None else cfg.baseline_path
    base = read_baseline(base_path)
    if update_baseline:
        th = cfg.thresholds
        entries = {
            o.name: baseline_entry(
                find_beats(o.trace, o.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s)
            )
            for o in obs
            if o.events is not None and o.events.terminals
        }
        base = merge_into_baseline(base_path, entries, inputs=corpus.inputs)
        click.echo(f"wrote {base_path} ({len(base)} recordings)", err=True)
    results = run_checks(cfg, obs, base)
    if junit is not None:
        with atomic_output(junit, inputs=corpus.inputs, option="--junit") as f:
            f.write(junit_xml(results))
    failed = [r for r in results if not r.passed]
    if fmt == "json":
        click.echo(
            json_text({"schema": 1, "passed": not failed, "results": [_result_dict(r) for r in results]}), nl=False
        )
    else:
        for r in failed:
            click.echo(r.line())
        n_checks = len({(r.recording, r.check) for r in results if r.applicable})
        click.echo(
            f"{n_checks} checks on {len(obs)} recordings: {len({(r.recording, r.check) for r in failed})} failed"
        )
    ctx.exit(1 if failed else 0)


def run_checks(cfg: Config, obs: list[Observation], baseline: dict[str, dict[str, Any]]) -> list[CheckResult]:
    """``check`` over observations with the config's thresholds, margins and tolerances."""
    return check_corpus(
        obs,
        thresholds=cfg.thresholds,
        margins=cfg.margins,
        baseline=baseline,
        onset_tolerance_s=cfg.baseline.onset_tolerance_s,
        max_gap_tolerance_s=cfg.baseline.max_gap_tolerance_s,
    )


def _result_dict(r: CheckResult) -> dict[str, Any]:
    return asdict(r) | {"line": r.line()}
