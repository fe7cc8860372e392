"""``--scheduler``, ``--cache DIR`` and ``--no-cache``: where a corpus command's work runs, and its trace cache.

The options are read by :func:`clock.cli.options.load_corpus` from the click
context (they are not passed to the command functions), so every corpus
command takes them without a parameter of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import InvalidParameterError

F = TypeVar("F", bound=Callable[..., Any])

_KEY = "speechclock.scale"


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if param.name == "scheduler" and value is not None:
        from ..run.workers import parse_scheduler

        try:
            parse_scheduler(value)
        except InvalidParameterError as err:
            raise click.BadParameter(str(err)) from None
    ctx.meta.setdefault(_KEY, {})[param.name] = value
    return value


def scale_options() -> list[Callable[[F], F]]:
    """The decorators of ``--scheduler``, ``--cache`` and ``--no-cache``."""
    return [
        click.option(
            "--scheduler",
            metavar="ADDRESS",
            expose_value=False,
            callback=_store,
            help="Run the per-recording work on a Dask cluster: tcp://host:8786, or local:N for N local "
            "worker processes (needs the cluster extra: pip install '.[cluster]' in a checkout of speech-clock). "
            "Output is identical to --jobs 1.",
        ),
        click.option(
            "--cache",
            "cache_dir",
            type=click.Path(file_okay=False, path_type=Path),
            metavar="DIR",
            expose_value=False,
            callback=_store,
            help="Keep level traces here between runs [default: $SPEECHCLOCK_CACHE, else the user's cache "
            "folder (~/.cache/speechclock)].",
        ),
        click.option(
            "--no-cache",
            is_flag=True,
            expose_value=False,
            callback=_store,
            help="Decode every recording afresh; read and write no cache.",
        ),
    ]


def scale_settings() -> tuple[str | None, Path | bool]:
    """(scheduler, cache) of the current command: cache is a folder, True (the default folder) or False."""
    ctx = click.get_current_context(silent=True)
    given = ctx.meta.get(_KEY, {}) if ctx is not None else {}
    if given.get("no_cache") and given.get("cache_dir") is not None:
        raise click.UsageError("give --cache DIR or --no-cache, not both")
    cache: Path | bool = False if given.get("no_cache") else (given.get("cache_dir") or True)
    return given.get("scheduler"), cache


class SourceType(click.ParamType):
    """A recording, folder or config: a local path (as :class:`Path`) or a URL (kept as written)."""

    name = "path or URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The argument as a path, or as the URL it is."""
        from ..io.sources import is_url

        if isinstance(value, Path) or not is_url(value):
            return Path(value)
        return str(value)


#: RECORDINGS... of the corpus commands.
SOURCE = SourceType()
