"""What several commands share: the baseline and allow-defaults options, the config line, figure files.

Below the command modules (:mod:`clock.cli.derive`, :mod:`clock.cli.tune`, :mod:`clock.cli.compare`,
:mod:`clock.cli.stress`), which take these from here and not through one another; above
:mod:`clock.cli.options` (where a figure file's name is checked, :func:`~clock.cli.options.figure_format`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import click

from ..errors import SpeechClockWarning
from ..io.inputs import Inputs
from ..io.output import atomic_output
from .options import candidate_text, figure_format

__all__ = ["allow_defaults_option", "baseline_option", "config_source", "save_figure_file"]

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


def save_figure_file(fig: Any, output: Path, inputs: Inputs, option: str = "-o") -> None:
    """Save a figure to ``output`` atomically, in the format its name asks for."""
    from ..report.plot import save_figure

    fmt = figure_format(output, option)
    with atomic_output(output, binary=True, inputs=inputs, option=option) as out:
        save_figure(fig, out, fmt=fmt)
