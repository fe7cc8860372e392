"""The ``speechclock`` command line: parse options, call the library, format results.

One module per command; shared options in :mod:`clock.cli.options` and :mod:`clock.cli.shared`,
the error boundary in :mod:`clock.cli.boundary`. Exit codes, in every
command: 0 success; 1 a check failed (``check`` only); 2 bad input or usage
(one line naming the file and line, key or option); 130, 143 or 141 when
interrupted by SIGINT, SIGTERM or a closed pipe.

A command's module (and what it imports: numpy, the decoders, plotting) is
imported only when that command runs or its help is shown, so the command
line starts light.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import click

from .._version import __version__
from .boundary import Group

__all__ = ["main", "run"]

# Each command, and the module that defines it.
_COMMANDS = {
    "levels": "clock.cli.levels",
    "info": "clock.cli.info",
    "segments": "clock.cli.segments",
    "beats": "clock.cli.beats",
    "derive": "clock.cli.derive",
    "check": "clock.cli.check",
    "sweep": "clock.cli.sweep",
    "plot": "clock.cli.plot",
    "report": "clock.cli.report",
    "compare": "clock.cli.compare",
    "stress": "clock.cli.stress",
}

# Commands that write no file (the others take --force).
_READ_ONLY = ("info",)


def _force(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    from ..io.inputs import set_force

    set_force(value)
    return value


class _Commands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported from its module when first looked up."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in _COMMANDS:
                raise KeyError(name)
            command: click.Command = getattr(importlib.import_module(_COMMANDS[name]), name)
            if name not in _READ_ONLY:
                command.params.append(
                    click.Option(
                        ["--force"],
                        is_flag=True,
                        expose_value=False,
                        callback=_force,
                        help="Let outputs replace files that look like recordings, event logs, label tracks, "
                        "configs or baselines (never this run's own inputs).",
                    )
                )
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("the command line's commands are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(_COMMANDS)

    def __len__(self) -> int:
        return len(_COMMANDS)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="speechclock")
def main() -> None:
    """Measure the speech clock of a browser voice guide from recordings of its voice."""


main.commands = _Commands()


def run() -> None:
    """Entry point for ``python -m clock`` and the console script."""
    try:
        main(prog_name="speechclock")
    except SystemExit as end:  # the exit code, for the last exit handler (clock._startup)
        from .. import _startup

        _startup.ended(end.code)
        raise
