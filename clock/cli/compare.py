"""``speechclock compare``: other endpointers on the same beats, beside the level clock."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ..core.compare import compare_endpointers
from ..core.decisions import FrameScores
from ..core.recommend.engine import derive as derive_thresholds
from ..core.reference import reference_sources
from ..io.output import atomic_output, json_text
from ..io.terminal import printable
from ..report.compare import Compared, compare_dict, compare_text
from ..run.corpus import Corpus
from .options import CorpusArgs, OutputPath, corpus_options, load_corpus, output_option
from .scale import scale_settings


@click.command()
@corpus_options
@click.option(
    "--endpointers",
    default="all",
    show_default=True,
    metavar="NAMES",
    help=(
        "Comma-separated: webrtcvad, silero, ten-vad, energy (each with its threshold tuned), webrtcvad-0..3 "
        "(one mode), or all: every tuned one that runs here."
    ),
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option(
    "--plot",
    "plot_path",
    type=OutputPath(),
    help="Also save the figure (added latency against failures, one point per endpointer) as .png, .svg or .pdf.",
)
@output_option
def compare(
    corpus_args: CorpusArgs,
    endpointers: str,
    fmt: str,
    plot_path: Path | None,
    output: Path | None,
    **_: Any,
) -> None:
    """Replay other endpointers (VADs) over the beats of RECORDINGS, beside the level clock.

    Each waits for onset after the terminal response, then ends the beat
    after a silence duration; its detection threshold and silence duration
    are tuned together on these recordings by replaying a grid, and all are
    judged against the labels (else a two-mode split of each recording's
    level, which is none of them). Needs the extra: pip install
    'speech-clock[compare]'.
    """
    names, skipped = endpointer_names(endpointers)
    outputs = {"-o": output, "--plot": plot_path}
    corpus = load_corpus(corpus_args, outputs=outputs)
    found = run_compare(corpus, names, jobs=corpus_args.jobs, no_progress=corpus_args.no_progress)
    if plot_path is not None:
        from ..report.plot import plot_compare
        from .shared import save_figure_file

        save_figure_file(plot_compare(found.results), plot_path, corpus.inputs, "--plot")
    with atomic_output(output, inputs=corpus.inputs) as out:
        if fmt == "json":
            out.write(json_text(compare_dict(found, skipped=skipped)))
        else:
            out.write(printable(compare_text(found, skipped=skipped)))


def endpointer_names(spec: str, option: str = "--endpointers") -> tuple[list[str], dict[str, str]]:
    """The endpointers ``option`` (``--endpointers``, ``report --compare``) names, and those ``all`` leaves out.

    Usage errors (exit 2): the extra is missing, a name is unknown, or a named one cannot run here.
    """
    from ..io.terminal import clipped
    from ..run.endpointers import ENDPOINTERS, FIXED, missing_extra, unavailable

    need = missing_extra()
    if need is not None:
        raise click.UsageError(need)
    skipped = unavailable()
    if spec == "all":
        return [n for n in ENDPOINTERS if n not in skipped], skipped
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENDPOINTERS + FIXED]
    if unknown or not names:
        raise click.BadParameter(
            f"unknown endpointer {clipped(', '.join(unknown) or '(none)')}; known: {', '.join(ENDPOINTERS + FIXED)}",
            param_hint=f"'{option}'",
        )
    cannot = [n for n in names if n in skipped]
    if cannot:
        raise click.BadParameter(f"{clipped(cannot[0])}: {skipped[cannot[0]]}", param_hint=f"'{option}'")
    return names, {}


def run_compare(corpus: Corpus, names: Sequence[str], *, jobs: int, no_progress: bool) -> Compared:
    """Derive the level clock's floor and onset timeout, run the endpointers where --jobs says, compare."""
    from ..run.endpointers import detect_all
    from ..run.workers import Workers

    obs = list(corpus.observations)
    floor, quiet, timeout = derive_thresholds(obs, margins=corpus.config.margins, held_out=False).setting
    th = corpus.config.thresholds
    floor = th.floor if floor is None else floor
    timeout = th.onset_timeout_s if timeout is None else timeout
    logged = [i for i, o in enumerate(obs) if o.has_beats]
    paths = [corpus.recordings[i].info.path for i in logged]
    levels = [(t.sample_rate_hz, t.ticks, t.metric, t.options) for t in (obs[i].trace for i in logged)]
    workers = Workers(jobs=jobs, scheduler=scale_settings()[0])
    if no_progress or not sys.stderr.isatty():
        found = detect_all(paths, names, levels=levels, workers=workers)
    else:
        with click.progressbar(length=len(paths), label="endpointers", file=sys.stderr) as bar:
            found = detect_all(paths, names, levels=levels, workers=workers, progress=lambda _: bar.update(1))
    scores: list[list[FrameScores]] = [[] for _ in obs]
    for i, d in zip(logged, found):
        scores[i] = d
    margins = corpus.config.margins
    # The level clock at derive's recommendation: one engine chooses the level clock's floor and quiet time.
    results = compare_endpointers(obs, scores, floor=floor, onset_timeout_s=timeout, margins=margins, quiet_s=quiet)
    return Compared(results, floor, timeout, reference_sources(obs))
