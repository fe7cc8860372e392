"""What several commands share: the baseline and allow-defaults options, the sweep grid, the config line, where
the library's runs go and the stress progress, figure files.

Below the command modules, which take these from here and not through one another, except ``report``: it shows
what other commands show, and takes their parts from their modules (:func:`clock.cli.plot.figure_for`,
:func:`clock.cli.compare.run_compare`, :func:`clock.cli.stress.report_stress`). Above :mod:`clock.cli.options`
(where a figure file's name is checked, :func:`~clock.cli.options.figure_format`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from ..core.sweep import MAX_SWEEP_POINTS, grid
from ..core.thresholds import check_floor, check_wait_s
from ..errors import InvalidParameterError, SpeechClockWarning
from ..io.inputs import Inputs
from ..io.output import atomic_output
from ..io.sources import name_of
from ..io.terminal import printable
from .options import candidate_text, figure_format
from .scale import scale_settings

__all__ = [
    "allow_defaults_option",
    "baseline_option",
    "check_grid",
    "config_source",
    "save_figure_file",
    "stress_progress",
    "sweep_floors",
    "sweep_quiet_times",
    "where_to_run",
]

#: ``--baseline FILE``: the baseline, wherever it is (the config's ``[baseline] file`` stays in its folder).
baseline_option = click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The baseline file [default: the config's [baseline] file, in the recordings' folder].",
)


#: ``--allow-defaults``: ``check`` and ``report`` without a speechclock.toml.
allow_defaults_option = click.option(
    "--allow-defaults",
    is_flag=True,
    help="Without a speechclock.toml, check against the built-in defaults (with a warning) instead of failing.",
)


def _range(check: Any) -> Any:
    """A LO:HI:STEP option whose every value passes ``check`` (the bounds of --floor or --quiet)."""

    def callback(ctx: click.Context, param: click.Parameter, value: str) -> tuple[float, ...]:
        try:
            values = grid(value)
            for v in values:
                check(v)
        except InvalidParameterError as err:
            raise click.BadParameter(str(err)) from None
        return values

    return callback


sweep_floors = click.option(
    "--floors",
    "floors",
    default="0.001:0.006:0.0005",
    show_default=True,
    callback=_range(check_floor),
    metavar="LO:HI:STEP",
    help="Floors to try (RMS).",
)
sweep_quiet_times = click.option(
    "--quiet-times",
    "quiets",
    default="1.5:3.0:0.1",
    show_default=True,
    callback=_range(lambda v: check_wait_s(v, "a quiet time")),
    metavar="LO:HI:STEP",
    help="Quiet times to try (seconds).",
)


def check_grid(floors: tuple[float, ...], quiets: tuple[float, ...]) -> None:
    """Refuse a sweep grid of more than ``MAX_SWEEP_POINTS`` settings (a usage error naming both options)."""
    if len(floors) * len(quiets) > MAX_SWEEP_POINTS:
        raise click.UsageError(
            f"--floors and --quiet-times give {len(floors)} x {len(quiets)} = {len(floors) * len(quiets)} settings "
            f"(at most {MAX_SWEEP_POINTS})"
        )


def config_source(cfg: Any, opts: Any) -> str:
    """What the ``config:`` line names: the config file (or the built-in defaults) and any candidate, and warns
    when there is no config file."""
    if cfg.path is None:
        th = cfg.thresholds
        warnings.warn(
            f"no speechclock.toml: checking against the built-in defaults (floor {th.floor:g}, quiet "
            f"{th.quiet_s:g} s, onset timeout {th.onset_timeout_s:g} s)",
            SpeechClockWarning,
            stacklevel=1,
        )
    source = str(cfg.path) if cfg.path is not None else "built-in defaults"
    if candidate := candidate_text(opts):
        source += f", with {candidate}"
    return source


def where_to_run(jobs: int) -> dict[str, Any]:
    """``jobs``, ``scheduler`` and ``cache`` of the library's runs (:func:`clock.api.corpus_checks`,
    :func:`clock.api.derive`): ``--jobs``, ``--scheduler``, ``--cache``/``--no-cache`` of the current command."""
    scheduler, cache = scale_settings()
    return {"jobs": jobs, "scheduler": scheduler, "cache": cache}


@contextmanager
def stress_progress(corpus: Any, *, no_progress: bool, lines: bool = False) -> Iterator[Callable[[int], None] | None]:
    """The ``progress`` of a stress run over the corpus: a progress bar on a terminal; off one, with ``lines``, one
    line on stderr per recording done (a long run is never silent); else none."""
    names = [name_of(r.info.path) for r, o in zip(corpus.recordings, corpus.observations) if o.has_beats]
    if no_progress or not names:
        yield None
    elif not sys.stderr.isatty():
        if not lines:
            yield None
            return
        done = [0]

        def line(i: int) -> None:
            done[0] += 1
            click.echo(
                printable(f"speechclock: stress: {done[0]} of {len(names)} recordings done ({names[i]})"), err=True
            )

        yield line
    else:
        bar: Any
        with click.progressbar(
            length=len(names), label="stress", file=sys.stderr, item_show_func=lambda n: n or ""
        ) as bar:
            yield lambda i: bar.update(1, names[i])


def save_figure_file(fig: Any, output: Path, inputs: Inputs, option: str = "-o") -> None:
    """Save a figure to ``output`` atomically, in the format its name asks for."""
    from ..report.plot import save_figure

    fmt = figure_format(output, option)
    with atomic_output(output, binary=True, inputs=inputs, option=option) as out:
        save_figure(fig, out, fmt=fmt)
