"""What several commands share: the baseline option, the checks with a config's settings, figure files.

Below :mod:`clock.cli.derive` and :mod:`clock.cli.tune`, so neither imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..core.check import CheckResult, check_corpus
from ..core.derive import Observation
from ..io.config import Config
from ..io.inputs import Inputs
from ..io.output import atomic_output

__all__ = ["baseline_option", "figure_format", "run_checks", "save_figure_file"]

#: ``--baseline FILE``: the baseline, wherever it is (the config's ``[baseline] file`` stays in its folder).
baseline_option = click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The baseline file [default: the config's [baseline] file, in the recordings' folder].",
)


def run_checks(
    cfg: Config, obs: list[Observation], baseline: dict[str, dict[str, Any]], *, page: Config | None = None
) -> list[CheckResult]:
    """``check`` over observations with the config's thresholds, margins and tolerances.

    ``page`` is the config as committed (the setting the page ran, before a
    candidate replaced it): logged decisions are compared only at that setting.
    """
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
        page_thresholds=(page or cfg).thresholds,
    )


_FIGURE_FORMATS = ("png", "svg", "pdf")


def figure_format(output: Path | None, option: str) -> str | None:
    """The figure format a file name asks for (png, svg, pdf), as a usage error before any work."""
    if output is None:
        return None
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in _FIGURE_FORMATS:
        raise click.BadParameter(
            f"the file must end in {', '.join('.' + f for f in _FIGURE_FORMATS)}", param_hint=f"'{option}'"
        )
    return fmt


def save_figure_file(fig: Any, output: Path, inputs: Inputs, option: str = "-o") -> None:
    """Save a figure to ``output`` atomically, in the format its name asks for."""
    from ..report.plot import save_figure

    fmt = figure_format(output, option)
    with atomic_output(output, binary=True, inputs=inputs, option=option) as out:
        save_figure(fig, out, fmt=fmt)
