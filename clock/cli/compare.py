"""``speechclock compare``: other endpointers on the same beats, beside the level clock."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..core.compare import LEVEL_CLOCK, EndpointerResult, compare_endpointers
from ..core.derive import derive as derive_thresholds
from ..io.output import atomic_output, json_text
from ..report.text import table
from .options import corpus_options, load_corpus, output_option
from .scale import scale_settings

#: The table's columns (the names of the JSON fields they show).
COMPARE_HEADER = [
    "name",
    "quiet_s",
    "n_beats",
    "n_ok",
    "n_premature",
    "n_stalled",
    "n_missed_onset",
    "added_latency_median_s",
    "added_latency_p95_s",
    "cpu_s_per_hour",
]


@click.command()
@corpus_options
@click.option(
    "--endpointers",
    default="all",
    show_default=True,
    metavar="NAMES",
    help="Comma-separated: webrtcvad-0..3, silero, ten-vad, energy (or all: every one that runs here).",
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also save the figure (added latency against failures, one point per endpointer) as .png, .svg or .pdf.",
)
@output_option
def compare(
    recordings: tuple[Path, ...],
    config: Path | None,
    jobs: int,
    no_progress: bool,
    lenient: bool,
    endpointers: str,
    fmt: str,
    plot_path: Path | None,
    output: Path | None,
    **_: Any,
) -> None:
    """Replay other endpointers (VADs) over the beats of RECORDINGS, beside the level clock.

    Each waits for onset after the terminal response, then ends the beat
    after a silence duration tuned on these recordings by replaying a ladder
    of quiet times; all are judged against the labels (else the level
    clock's speech). Needs the extra: pip install 'speech-clock[compare]'.
    """
    from ..io.endpointers import ENDPOINTERS, detect_all, missing_extra, unavailable
    from ..io.workers import Workers

    need = missing_extra()
    if need is not None:
        raise click.UsageError(need)
    skipped = unavailable()
    if endpointers == "all":
        names = [n for n in ENDPOINTERS if n not in skipped]
    else:
        names = [n.strip() for n in endpointers.split(",") if n.strip()]
        unknown = [n for n in names if n not in ENDPOINTERS]
        if unknown or not names:
            raise click.BadParameter(
                f"unknown endpointer {', '.join(unknown) or '(none)'}; known: {', '.join(ENDPOINTERS)}",
                param_hint="'--endpointers'",
            )
        cannot = [n for n in names if n in skipped]
        if cannot:
            raise click.BadParameter(f"{cannot[0]}: {skipped[cannot[0]]}", param_hint="'--endpointers'")
        skipped = {}
    outputs = {"-o": output, "--plot": plot_path}
    corpus = load_corpus(recordings, config, jobs, no_progress, lenient, outputs=outputs)
    obs = list(corpus.observations)
    found = derive_thresholds(obs, margins=corpus.config.margins)
    floor, _quiet, timeout = found.setting
    th = corpus.config.thresholds
    floor = th.floor if floor is None else floor
    timeout = th.onset_timeout_s if timeout is None else timeout
    logged = [i for i, o in enumerate(obs) if o.has_beats]
    paths = [corpus.recordings[i].info.path for i in logged]
    workers = Workers(jobs=jobs, scheduler=scale_settings()[0])
    if no_progress or not sys.stderr.isatty():
        found_decisions = detect_all(paths, names, workers=workers)
    else:
        with click.progressbar(length=len(paths), label="endpointers", file=sys.stderr) as bar:
            found_decisions = detect_all(paths, names, workers=workers, progress=lambda _: bar.update(1))
    decisions: list[list[Any]] = [[] for _ in obs]
    for i, d in zip(logged, found_decisions):
        decisions[i] = d
    results = compare_endpointers(
        obs, decisions, floor=floor, onset_timeout_s=timeout, margin_s=corpus.config.margins.quiet_margin_s
    )
    if plot_path is not None:
        from ..report.plot import plot_compare
        from .tune import save_figure_file

        save_figure_file(plot_compare(results), plot_path, corpus.inputs, "--plot")
    with atomic_output(output, inputs=corpus.inputs) as out:
        if fmt == "json":
            out.write(json_text(compare_dict(results, floor=floor, onset_timeout_s=timeout, skipped=skipped)))
        else:
            out.write(compare_text(results, floor=floor, onset_timeout_s=timeout, skipped=skipped))


def compare_dict(
    results: tuple[EndpointerResult, ...], *, floor: float, onset_timeout_s: float, skipped: dict[str, str]
) -> dict[str, Any]:
    """``compare --format json`` (schema 1; docs/formats.md)."""
    rows = []
    for r in results:
        row = {k: getattr(r, k) for k in COMPARE_HEADER}
        row["n_silent"] = r.n_silent
        row["n_failed"] = r.n_failed
        rows.append(row)
    return {
        "schema": 1,
        "level_floor": floor,
        "onset_timeout_s": onset_timeout_s,
        "endpointers": rows,
        "skipped": [{"name": name, "reason": why} for name, why in skipped.items()],
    }


def _cell(value: Any) -> Any:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return value


def compare_text(
    results: tuple[EndpointerResult, ...], *, floor: float, onset_timeout_s: float, skipped: dict[str, str]
) -> str:
    """The comparison as a table, with the settings every endpointer shares."""
    head = (
        f"{LEVEL_CLOCK}: the level clock at floor {floor:g}; every endpointer waits {onset_timeout_s:g} s "
        "for onset, its quiet time tuned on these recordings\n"
    )
    body = table(COMPARE_HEADER, [[_cell(getattr(r, k)) for k in COMPARE_HEADER] for r in results])
    notes = "".join(f"not run: {name}: {why}\n" for name, why in skipped.items())
    return head + body + notes
