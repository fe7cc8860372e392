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
from ..errors import SpeechClockError
from ..io.baseline import read_baseline, write_baseline
from ..io.config import Config
from ..io.output import atomic_output, json_text
from ..report.junit import junit_xml
from ..report.text import derive_dict, derive_markdown, derive_text
from .options import corpus_options, load_corpus, output_option


def read_all(
    recordings: tuple[Path, ...], config: Path | None, jobs: int, quiet: bool, lenient: bool
) -> tuple[Config, list[Observation]]:
    """The config and one observation per recording."""
    corpus = load_corpus(recordings, config, jobs, quiet, lenient)
    return corpus.config, list(corpus.observations)


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
    cfg, obs = read_all(recordings, config, jobs, quiet, lenient)
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
    with atomic_output(output) as out:
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
@click.option(
    "--update-baseline",
    is_flag=True,
    help="Rewrite the baseline from these recordings (atomically; audio and logs are never touched).",
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
    update_baseline: bool,
) -> None:
    """Check RECORDINGS against the committed thresholds (speechclock.toml).

    Exit 0 when every check holds, 1 when any fails (one line each:
    recording:mm:ss.mmm: check: measured vs threshold), 2 on a usage or
    input error.
    """
    try:
        cfg, obs = read_all(recordings, config, jobs, quiet, lenient)
        base = read_baseline(cfg.baseline_path)
        if update_baseline:
            th = cfg.thresholds
            base = dict(base) | {
                o.name: baseline_entry(
                    find_beats(
                        o.trace, o.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
                    )
                )
                for o in obs
                if o.events is not None and o.events.terminals
            }
            write_baseline(cfg.baseline_path, base, protect=tuple(recordings))
            click.echo(f"wrote {cfg.baseline_path} ({len(base)} recordings)", err=True)
        results = run_checks(cfg, obs, base)
        if junit is not None:
            with atomic_output(junit, protect=tuple(recordings)) as f:
                f.write(junit_xml(results))
    except SpeechClockError as err:
        click.echo(f"speechclock: error: {err}", err=True)
        ctx.exit(2)
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
        lossless_tolerance=cfg.agreement.lossless_tolerance,
        recorder_tolerance=cfg.agreement.recorder_tolerance,
        max_floor_disagreements=cfg.agreement.max_floor_disagreements,
    )


def _result_dict(r: CheckResult) -> dict[str, Any]:
    return asdict(r) | {"line": r.line()}
