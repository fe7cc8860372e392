"""The ``speechclock`` command line: parse options, call the library, format results.

One module per group of commands; shared options and the error boundary in
:mod:`clock.cli.options`. Exit codes, in every command: 0 success; 1 a check
failed (``check`` only); 2 bad input or usage (one line naming the file and
line, key or option); 130, 143 or 141 when interrupted by SIGINT, SIGTERM
or a closed pipe.
"""

from __future__ import annotations

import click

from .. import __version__
from ..io.inputs import set_force
from .beats import beats, segments
from .compare import compare
from .derive import check, derive
from .levels import info, levels
from .options import Group
from .stress import stress
from .tune import plot, report, sweep

__all__ = ["main", "run"]


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="speechclock")
def main() -> None:
    """Measure the speech clock of a browser voice guide from recordings of its voice."""


def _force(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    set_force(value)
    return value


for command in (levels, info, segments, beats, derive, check, sweep, plot, report, compare, stress):
    if command is not info:  # every command that writes files
        command.params.append(
            click.Option(
                ["--force"],
                is_flag=True,
                expose_value=False,
                callback=_force,
                help="Let outputs replace files that look like recordings, event logs, label tracks, configs or "
                "baselines (never this run's own inputs).",
            )
        )
    main.add_command(command)


def run() -> None:
    """Entry point for ``python -m clock`` and the console script."""
    main(prog_name="speechclock")
