"""Shared options and the error boundary of the command line."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import click

from ..core.analyser import AnalyserOptions
from ..core.levels import Ticks, parse_period
from ..core.thresholds import DEFAULT_THRESHOLDS, Thresholds
from ..errors import InvalidParameterError, SpeechClockError, SpeechClockWarning
from ..io.config import find_config, read_config
from ..io.decode import probe
from ..io.recording import Recording, read_recording
from ..io.sources import name_of
from .scale import SOURCE, scale_options, scale_settings

F = TypeVar("F", bound=Callable[..., Any])


class Group(click.Group):
    """Turn the library's errors into one line on stderr and exit 1, never a traceback.

    Warnings (:class:`SpeechClockWarning`) print as one line each and do not
    change the exit code.
    """

    def invoke(self, ctx: click.Context) -> Any:
        with _warnings_to_stderr():
            try:
                return super().invoke(ctx)
            except BrokenPipeError:
                # The reader went away (``speechclock levels REC | head``): stop quietly.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                sys.exit(1)
            except SpeechClockError as err:
                click.echo(f"speechclock: error: {err}", err=True)
                sys.exit(1)
            except OSError as err:
                where = f"{err.filename}: " if getattr(err, "filename", None) else ""
                click.echo(f"speechclock: error: {where}{err.strerror or err}", err=True)
                sys.exit(1)


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        click.echo(f"speechclock: warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.simplefilter("always", SpeechClockWarning)
        previous, warnings.showwarning = warnings.showwarning, show
        try:
            yield
        finally:
            warnings.showwarning = previous


def _period(ctx: click.Context, param: click.Parameter, value: str | None) -> Fraction | None:
    if value is None:
        return None
    try:
        return parse_period(value)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err)) from None


def _positive_int(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise click.BadParameter(f"must be >= 1, got {value}")
    return value


def _positive_float(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (0 < value < float("inf")):
        raise click.BadParameter(f"must be a positive number of seconds, got {value}")
    return value


def _floor(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (0 <= value < float("inf")):
        raise click.BadParameter(f"must be a finite level >= 0, got {value}")
    return value


def recording_argument(f: F) -> F:
    """The REC argument (problems with the file are reported by the decoder)."""
    return click.argument("rec", type=click.Path(path_type=Path))(f)


def _apply(f: F, decorators: list[Callable[[F], F]]) -> F:
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def level_options(f: F) -> F:
    """How the level is read: fftSize, cadence, alignment, context rate."""
    return _apply(
        f,
        [
            click.option(
                "--fft-size",
                type=int,
                default=None,
                metavar="N",
                help=f"AnalyserNode.fftSize: power of two in 32..32768 [default: {DEFAULT_THRESHOLDS.fft_size}].",
            ),
            click.option(
                "--tick",
                "tick_s",
                callback=_period,
                metavar="S",
                help="Seconds between ticks, exact: 1/60 (default, requestAnimationFrame), 0.05, 1.",
            ),
            click.option(
                "--tick-frames",
                type=int,
                callback=_positive_int,
                metavar="N",
                help="Frames between ticks (instead of --tick).",
            ),
            click.option(
                "--align",
                type=click.Choice(["ceil", "floor"]),
                default="ceil",
                show_default=True,
                help="Read the quantum boundary at or after the tick (ceil, as "
                "OfflineAudioContext.suspend) or the last one rendered (floor).",
            ),
            click.option(
                "--context-rate",
                type=int,
                callback=_positive_int,
                metavar="HZ",
                help="Resample to this AudioContext rate first (soxr).",
            ),
        ],
    )


def clock_options(f: F) -> F:
    """The clock's thresholds."""
    d = DEFAULT_THRESHOLDS
    return _apply(
        f,
        [
            click.option(
                "--floor",
                type=float,
                callback=_floor,
                metavar="F",
                help=f"Speech is level > F (RMS) [default: {d.floor}].",
            ),
            click.option(
                "--quiet",
                "quiet_s",
                type=float,
                callback=_positive_float,
                metavar="S",
                help=f"Quiet time after the last word that ends a beat [default: {d.quiet_s}].",
            ),
            click.option(
                "--onset-timeout",
                "onset_timeout_s",
                type=float,
                callback=_positive_float,
                metavar="S",
                help=f"How long the clock waits for speech after a terminal response [default: {d.onset_timeout_s}].",
            ),
        ],
    )


def output_file(help: str, *, required: bool = False) -> Callable[[F], F]:
    """``-o FILE``, written atomically."""
    return click.option(
        "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, required=required, help=help
    )


#: ``-o FILE`` for commands that print to standard output by default.
output_option = output_file("Write here (atomically) instead of standard output.")

#: ``--events FILE``.
events_option = click.option(
    "--events",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Event log (JSON Lines) [default: NAME.events.jsonl beside REC].",
)

#: The parameter names :func:`level_options` adds.
LEVEL_KEYS = ("fft_size", "tick_s", "tick_frames", "align", "context_rate")


def level_opts(opts: dict[str, Any]) -> dict[str, Any]:
    """The values of :func:`level_options` among a command's parameters."""
    return {k: opts[k] for k in LEVEL_KEYS}


def analyser_options(fft_size: int) -> AnalyserOptions:
    """Validated analyser options, as a usage error naming --fft-size."""
    try:
        return AnalyserOptions(fft_size=fft_size)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err), param_hint="'--fft-size'") from None


def make_ticks(tick_s: Fraction | None, tick_frames: int | None, align: str, rate_hz: int, default: Fraction) -> Ticks:
    """The cadence from --tick / --tick-frames / --align."""
    if tick_s is not None and tick_frames is not None:
        raise click.UsageError("give --tick or --tick-frames, not both")
    if tick_frames is not None:
        return Ticks.every_frames(tick_frames, rate_hz, align=align)  # type: ignore[arg-type]
    return Ticks(tick_s if tick_s is not None else default, align)  # type: ignore[arg-type]


def make_thresholds(base: Thresholds, **changes: Any) -> Thresholds:
    """Thresholds with the options the user gave."""
    return base.with_(**changes)


def corpus_options(*, quiet_flag: bool = True) -> Callable[[F], F]:
    """RECORDINGS..., --config, --jobs, --no-progress, --lenient: for every multi-file command.

    ``--quiet`` is an alias of ``--no-progress`` where the command has no
    ``--quiet`` of its own (sweep and report use it for the quiet-time range).
    """
    names = ("--no-progress", "--quiet", "-q") if quiet_flag else ("--no-progress",)

    def decorate(f: F) -> F:
        return _apply(
            f,
            [
                click.argument("recordings", nargs=-1, required=True, type=SOURCE),
                click.option(
                    "--config",
                    type=click.Path(dir_okay=False, path_type=Path),
                    help="speechclock.toml [default: the one in the recordings' folder].",
                ),
                click.option(
                    "--jobs",
                    "-j",
                    type=int,
                    default=1,
                    show_default=True,
                    callback=_positive_int,
                    help="Decode and analyse recordings in N processes (results identical to one).",
                ),
                click.option(*names, "quiet", is_flag=True, help="No progress bar (none is shown off a terminal)."),
                click.option("--lenient", is_flag=True, help="Skip malformed event lines with a warning."),
                *scale_options(),
            ],
        )

    return decorate


def load_corpus(recordings: tuple[Path, ...], config: Path | None, jobs: int, quiet: bool, lenient: bool):  # type: ignore[no-untyped-def]
    """The corpus, with a progress bar on a terminal (unless quiet)."""
    from ..io.corpus import collect
    from ..io.corpus import load_corpus as load

    scheduler, cache = scale_settings()
    if quiet or not sys.stderr.isatty():
        return load(recordings, config=config, jobs=jobs, lenient=lenient, scheduler=scheduler, cache=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpeechClockWarning)  # said once, by the load itself
        n = len(collect(recordings, config=config)[1])
    bar: Any
    with click.progressbar(
        length=n, label="recordings", file=sys.stderr, item_show_func=lambda p: name_of(p) if p else ""
    ) as bar:
        return load(
            recordings,
            config=config,
            jobs=jobs,
            lenient=lenient,
            scheduler=scheduler,
            cache=cache,
            progress=lambda p: bar.update(1, p),
        )


config_option = click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="speechclock.toml with the committed thresholds [default: the one beside REC].",
)


def committed_thresholds(rec: Path, config: Path | None) -> Thresholds:
    """The thresholds of --config, or of the speechclock.toml beside REC, or the defaults."""
    path = config or find_config(rec.parent)
    return read_config(path).thresholds if path is not None else DEFAULT_THRESHOLDS


def cadence(
    rec: Path,
    *,
    fft_size: int | None,
    tick_s: Fraction | None,
    tick_frames: int | None,
    align: str,
    context_rate: int | None,
    config: Path | None = None,
) -> tuple[Thresholds, AnalyserOptions, int, Ticks]:
    """The committed thresholds, analyser options, context rate and ticks that the options give for REC."""
    base = committed_thresholds(rec, config)
    options = analyser_options(fft_size or base.fft_size)
    rate = context_rate or probe(rec).sample_rate_hz
    return base, options, rate, make_ticks(tick_s, tick_frames, align, rate, base.tick_s)


def load(
    rec: Path,
    *,
    fft_size: int | None,
    tick_s: Fraction | None,
    tick_frames: int | None,
    align: str,
    context_rate: int | None,
    config: Path | None = None,
    quantum: bool = False,
    events: Path | None = None,
    lenient: bool = False,
    **thresholds: Any,
) -> tuple[Recording, Thresholds]:
    """Read REC with the options given, and the thresholds they make (over the committed ones)."""
    base, options, _, ticks = cadence(
        rec,
        fft_size=fft_size,
        tick_s=tick_s,
        tick_frames=tick_frames,
        align=align,
        context_rate=context_rate,
        config=config,
    )
    recording = read_recording(
        rec, ticks=ticks, options=options, context_rate_hz=context_rate, quantum=quantum, events=events, lenient=lenient
    )
    return recording, base.with_(tick_s=ticks.period_s, fft_size=options.fft_size, **thresholds)
