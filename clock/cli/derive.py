"""``speechclock derive`` and ``speechclock check``."""

from __future__ import annotations

import functools
import os
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import click

from ..api import PREFERENCES, corpus_checks
from ..api import derive as derive_thresholds
from ..core.agreement import page_trace
from ..core.beats import beats as find_beats
from ..core.check import CheckResult, baseline_entry, check_counts
from ..core.levels import LevelTrace
from ..core.model import MARGIN_BOUNDS, Observation
from ..core.recommend.evidence import Derivation
from ..core.recommend.rule_choice import GROUP_KEYS
from ..core.thresholds import LEVEL, Thresholds, check_bounded
from ..errors import InvalidParameterError, SpeechClockError
from ..io.baseline import read_baseline
from ..io.baseline import update_baseline as merge_into_baseline
from ..io.corpus import Corpus
from ..io.output import atomic_output, json_text
from ..io.terminal import printable
from ..report.text import (
    check_summary,
    check_text,
    dead_air_summary,
    derive_dict,
    derive_markdown,
    derive_text,
    not_applicable_lines,
    saving_line,
    unused_lines,
)
from .options import (
    TIME,
    OutputPath,
    candidate_options,
    corpus_options,
    library_check,
    load_corpus,
    output_option,
    with_candidate,
)
from .shared import allow_defaults_option, baseline_option, config_source, save_figure_file
from .stress import stress_progress, where_to_run


@click.command()
@corpus_options
@candidate_options
@click.option("--by", metavar="KEY", help="Derive per value of a metadata key in the config (e.g. voice).")
@click.option(
    "--min-saving",
    "min_saving_s",
    type=TIME,
    metavar="S",
    callback=library_check(lambda v: check_bounded(v, "the saving", 0.0, MARGIN_BOUNDS["min_saving_s"][0], " s")),
    help="Name a rule on the provider's event only where it saves at least this much median dead air against the "
    "level clock, at the recommended and the committed setting (default: [margins] min_saving_s, 0.3 s).",
)
@click.option(
    "--prefer",
    type=click.Choice(PREFERENCES),
    default="evidence",
    show_default=True,
    help="robust: among the settings that replay right, the one with the widest smallest margin "
    "(speechclock stress), naming the axis that limits it.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "markdown", "js", "toml"]),
    default="table",
    show_default=True,
    help="js: the recommendation as speechclock.js's configuration (docs/clock.md); toml: as a speechclock.toml "
    "for these recordings (each one's beat count; log = false, beats = 0 or speech = false where it has none), "
    "to review and commit (-o FILE never replaces an existing config).",
)
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(),
    help="Also save the evidence figure (levels and windows per recording, narration gaps) as .png, .svg or .pdf.",
)
@output_option
def derive(
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    no_progress: bool,
    lenient: bool,
    by: str | None,
    min_saving_s: float | None,
    prefer: str,
    fmt: str,
    plot_path: Path | None,
    output: Path | None,
    **opts: Any,
) -> None:
    """Recommend the floor, quiet time and onset timeout from RECORDINGS, with the evidence.

    RECORDINGS are files, folders (every recording in them) or a
    speechclock.toml (its folder). Labels (NAME.labels.txt) and event logs
    (NAME.events.jsonl) beside each recording are used when present. The
    committed setting (or a candidate given with --floor, --quiet-time,
    --onset-timeout) is replayed beside the recommendation.
    """
    toml_output = fmt == "toml" and output is not None and os.fspath(output) != "-"
    _never_replaced(output if toml_output else None)
    outputs = {"-o": None if toml_output else output, "--plot": plot_path}  # a new config is its own check
    corpus = load_corpus(recordings, config, jobs, no_progress, lenient, outputs=outputs)
    obs = list(corpus.observations)
    cfg, label = with_candidate(corpus.config, opts)
    if min_saving_s is not None:
        cfg = replace(cfg, margins=replace(cfg.margins, min_saving_s=min_saving_s))
    compare = cfg.thresholds if label != "built-in defaults" else None
    keys = tuple(dict.fromkeys(((by,) if by else ()) + GROUP_KEYS))
    groups: dict[str, list[Observation]] = {"all": obs}
    if by:
        known = sorted({key for o in obs for key in o.meta})
        if not any(by in o.meta for o in obs):
            raise click.BadParameter(
                f"no recording has the key {by!r} (known: {', '.join(known) or 'none'}; keys come from the "
                "config's [recordings.\"NAME\"] tables and the logs' session lines)",
                param_hint="'--by'",
            )
        for o in obs:
            groups.setdefault(f"{by}={o.meta.get(by, '(none)')}", []).append(o)
    # A derivation of unchanged recordings is the same every time: with a cache, read it back (its
    # leave-one-out runs are most of a cached run's time). --prefer robust depends on the audio itself (stress
    # decodes it again, changed): it is derived, from each recording's stress result, kept by content.
    from ..io.cache import resolve_cache
    from ..io.results import cached_result
    from .scale import scale_settings

    scheduler, cache = scale_settings()
    results = None if prefer == "robust" else resolve_cache(cache)
    where = {id(o): r.info.path for r, o in zip(corpus.recordings, corpus.observations)}

    def derived(members: list[Observation], name: str) -> Derivation:
        return derive_thresholds(
            members,
            margins=cfg.margins,
            group=name,
            compare=compare,
            compare_label=label,
            prefer=prefer,
            group_keys=keys,
            committed=corpus.config.thresholds,
            sources=[where[id(o)] for o in members],
            jobs=jobs,
            scheduler=scheduler,
            cache=cache,
        )

    found = [
        cached_result(
            results,
            "derive",
            members,
            functools.partial(derived, members, name),
            margins=cfg.margins,
            group=name,
            compare=compare,
            compare_label=label,
            group_keys=keys,
            committed=corpus.config.thresholds,
        )
        for name, members in groups.items()
    ]
    committed = corpus.config.thresholds if corpus.config.path is not None else None
    if plot_path is not None:
        from ..report.plot import plot_evidence

        drawn = None if compare is None else compare.floor
        figure = plot_evidence(found[0], committed_floor=drawn, committed_label=label)
        save_figure_file(figure, plot_path, corpus.inputs, "--plot")
    if fmt == "js":
        _write_page_config(found[0], cfg.thresholds, recordings, output, corpus.inputs)
        return
    if fmt == "toml":
        _write_config(found[0], cfg, obs, recordings, output, corpus.inputs)
        return
    # What could not be used leads the text (a folder without logs is not a quiet time measured).
    lead = unused_lines(obs, found[0])
    with atomic_output(output, inputs=corpus.inputs) as out:
        if fmt == "json":
            out.write(json_text(derive_dict(found, committed)))
        elif fmt == "markdown":
            quoted = "".join(f"> **{line}**\n" for line in lead) + ("\n" if lead else "")
            out.write(printable(quoted + derive_markdown(found)))
        else:
            out.write(printable("".join(line + "\n" for line in lead) + derive_text(found)))


def _recommended(found: Derivation, thresholds: Thresholds, what: str) -> Thresholds:
    """The recommended thresholds (the rest as committed), or the error that nothing is recommended."""
    floor, quiet_s, timeout_s = found.setting
    if floor is None or quiet_s is None:
        # Writing nothing where a config was asked for is an error (exit 2), said as the table says it.
        if floor is None:
            why = f"no floor recommended ({found.floor.rule})"
        else:
            why = f"no quiet time recommended ({found.gaps.rule or 'no gap inside a beat'})"
        raise InvalidParameterError(f"--format {what}: nothing to write, {why}")
    return thresholds.with_(floor=floor, quiet_s=quiet_s, onset_timeout_s=timeout_s)


def _never_replaced(output: Path | None) -> None:
    """``derive --format toml`` writes a new file only: an existing file (or a link) at ``output`` is an error.

    Standard output (``-``, ``/dev/stdout``) and other devices are written through as for every output.
    """
    if output is None or os.fspath(output) == "-" or os.fspath(output).startswith("/dev/"):
        return
    if os.path.isfile(output) or os.path.islink(output):
        raise InvalidParameterError(f"{output}: exists; derive --format toml never replaces a file (give a new name)")


def _write_config(
    found: Derivation, cfg: Any, obs: list[Observation], recordings: tuple[Path, ...], output: Path | None, inputs: Any
) -> None:
    """``derive --format toml``: a speechclock.toml for these recordings, at the recommendation.

    Each recording's entry keeps the config's keys and adds its beat count at the recommended setting, or
    ``log = false`` (no event log), ``beats = 0`` (no terminal response) and ``speech = false`` (no speech), so
    that ``check`` with it holds each recording to what it has.
    """
    from ..io.config import config_toml

    th = _recommended(found, cfg.thresholds, "toml")
    no_speech = {r.name for r in found.floor.recordings if r.speech_low is None}
    entries: dict[str, dict[str, Any]] = {}
    for o in obs:
        entry = dict(cfg.meta(o.name))
        if o.events is None:
            entry["log"] = False
        elif not o.events.terminals:
            entry["beats"] = 0
        else:
            found_beats = find_beats(
                o.trace, o.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
            )
            entry["beats"] = len(found_beats)
        if o.name in no_speech:
            entry["speech"] = False
        entries[o.name] = entry
    text = config_toml(th, cfg.margins, entries, source="derive " + " ".join(str(r) for r in recordings))
    _never_replaced(output)  # made meanwhile
    with atomic_output(output, inputs=inputs, allow=("config",)) as out:
        out.write(printable(text))


def _write_page_config(
    found: Derivation, thresholds: Thresholds, recordings: tuple[Path, ...], output: Path | None, inputs: Any
) -> None:
    """``derive --format js``: the recommendation (the rest of the config as committed) for speechclock.js.

    Where derive recommends a rule that uses the provider's event (``Derivation.rules``), the config also
    carries ``rule`` and ``hangover_s`` (docs/clock.md); with the level clock it has only the thresholds.
    """
    from ..web import page_config_js

    # Only a rule derive recommended is written (never the committed one): without it, the level clock.
    th = replace(_recommended(found, thresholds, "js"), rule=LEVEL, hangover_s=None)
    source = "derive " + " ".join(str(r) for r in recordings)
    saving = found.rules.saving if found.rules is not None else None
    text = page_config_js(th, source=source, rule=None if saving is None else saving.rule)
    with atomic_output(output, inputs=inputs) as out:
        out.write(text)


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
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    no_progress: bool,
    lenient: bool,
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
        corpus = load_corpus(
            recordings,
            config,
            jobs,
            no_progress,
            lenient,
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
            th = cfg.thresholds
            entries = {
                o.name: baseline_entry(
                    find_beats(
                        o.trace, o.events, floor=th.floor, quiet_s=th.quiet_s, onset_timeout_s=th.onset_timeout_s
                    )
                )
                for o in obs
                if o.events is not None and o.events.terminals
            }
            base = merge_into_baseline(base_path, entries, inputs=corpus.inputs)
            click.echo(printable(f"wrote {base_path} ({len(base)} recordings)"), err=True)
        # A progress bar only for the [robustness] table's stress runs (the rest is quick).
        with stress_progress(corpus, no_progress=no_progress or not cfg.robustness) as progress:
            results = corpus_checks(
                corpus, cfg, base, observations=obs, label=label, progress=progress, **where_to_run(jobs)
            )
    except SpeechClockError as err:
        _junit_error(junit, recordings, err)
        raise
    except (KeyboardInterrupt, SystemExit) as err:  # Ctrl-C, SIGTERM: no previous verdict may stay behind
        why = "SIGTERM" if isinstance(err, SystemExit) else "SIGINT (Ctrl-C)"
        _junit_error(junit, recordings, RuntimeError(f"the run was interrupted by {why}; no verdict"))
        raise
    if junit is not None:
        from ..report.junit import junit_xml

        with atomic_output(junit, inputs=corpus.inputs, option="--junit") as f:
            f.write(junit_xml(results))
    counts = check_counts(results)
    cost = _dead_air_beside(obs, cfg, label)
    if fmt == "json":
        click.echo(
            json_text(
                {
                    "schema": 1,
                    "config": source,
                    "passed": counts.failed == 0,
                    "counts": {
                        "recordings": counts.recordings,
                        "checks": counts.checks,
                        "passed": counts.passed,
                        "failed": counts.failed,
                        "not_applicable": counts.not_applicable,
                        "failures": counts.failures,
                    },
                    "results": [_result_dict(r) for r in results],
                    "dead_air": None if cost is None else cost[1],
                }
            ),
            nl=False,
        )
    elif fmt == "github":
        paths = {Path(rec.info.path).name: rec.info.path for rec in corpus.recordings}
        for r in results:
            if not r.passed:
                click.echo(
                    f"::error file={_gh(annotation_path(paths.get(r.recording, r.recording)), True)},"
                    f"title={_gh('speechclock ' + r.check, True)}::{_gh(r.line(), False)}"
                )
        notice = "\n".join([f"config {source}; {check_summary(counts)}", *not_applicable_lines(results)])
        click.echo(f"::notice title=speechclock check::{_gh(notice, False)}")
    else:
        click.echo(printable(f"config: {source}"))
        lines = check_text(results, counts)
        if cost is not None:
            lines.insert(len(lines) - 1, cost[0])
        for line in lines:
            click.echo(printable(line, newlines=False))
    ctx.exit(1 if counts.failed else 0)


def _dead_air_beside(obs: list[Observation], cfg: Any, label: str) -> tuple[str, dict[str, Any]] | None:
    """The checked setting's dead air over the corpus beside the recommendation's (derive, without held-out runs).

    None when no recording has beats or nothing is recommended.
    """
    from ..io.cache import resolve_cache
    from ..io.results import cached_result
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
        from ..io.inputs import Inputs
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
