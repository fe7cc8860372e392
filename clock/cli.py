"""The ``speechclock`` command line: parse options, call the library, format results.

Exit codes: 0 success; 1 a problem with an input (the message names the file);
2 a usage error (the message names the option).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import click
import numpy as np

from . import __version__
from .core.analyser import AnalyserOptions
from .io.decode import iter_blocks, probe
from .errors import InvalidParameterError, SpeechClockError
from .core.levels import DEFAULT_TICK_S, METRICS, Ticks, iter_levels, parse_period, summarize
from .io.output import atomic_output, json_text, write_npz

F = TypeVar("F", bound=Callable[..., Any])


class _Group(click.Group):
    """Turn the library's errors into one line on stderr and exit 1, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="speechclock")
def main() -> None:
    """Measure the speech clock of a browser voice guide from recordings of its voice."""


def _period(ctx: click.Context, param: click.Parameter, value: str | None) -> Fraction | None:
    if value is None:
        return None
    try:
        return parse_period(value)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err)) from None


def _positive(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and value < 1:
        raise click.BadParameter(f"must be >= 1, got {value}")
    return value


def _analyser_options(fft_size: int) -> AnalyserOptions:
    try:
        return AnalyserOptions(fft_size=fft_size)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err), param_hint="'--fft-size'") from None


def recording_argument(f: F) -> F:
    """The REC argument: an existing path (problems are reported by the decoder)."""
    return click.argument("rec", type=click.Path(dir_okay=True, path_type=Path))(f)


def level_options(f: F) -> F:
    """Options shared by every command that computes levels."""
    decorators = [
        click.option("--fft-size", type=int, default=AnalyserOptions().fft_size, show_default=True,
                     help="AnalyserNode.fftSize: power of two in 32..32768."),
        click.option("--tick", "tick_s", callback=_period, metavar="S",
                     help="Seconds between ticks, exact: 1/60 (default, requestAnimationFrame), 0.05, 1."),
        click.option("--tick-frames", type=int, callback=_positive, metavar="N",
                     help="Frames between ticks (instead of --tick)."),
        click.option("--align", type=click.Choice(["ceil", "floor"]), default="ceil", show_default=True,
                     help="Read the quantum boundary at or after the tick (ceil, as "
                          "OfflineAudioContext.suspend) or the last one rendered (floor)."),
        click.option("--context-rate", type=int, callback=_positive, metavar="HZ",
                     help="Resample to this AudioContext rate first (soxr)."),
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def _ticks(tick_s: Fraction | None, tick_frames: int | None, align: str, rate_hz: int) -> Ticks:
    if tick_s is not None and tick_frames is not None:
        raise click.UsageError("give --tick or --tick-frames, not both")
    if tick_frames is not None:
        return Ticks.every_frames(tick_frames, rate_hz, align=align)  # type: ignore[arg-type]
    return Ticks(tick_s if tick_s is not None else DEFAULT_TICK_S, align)  # type: ignore[arg-type]


def _fmt(value: float) -> str:
    return repr(float(value))


@main.command()
@recording_argument
@level_options
@click.option("--metric", type=click.Choice(METRICS), default="rms", show_default=True,
              help="rms and peak of the time-domain data (what the clock uses); "
                   "byte-mean of getByteFrequencyData; max-db of getFloatFrequencyData.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "npz"]), default="csv", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here (atomically) instead of standard output.")
def levels(rec: Path, fft_size: int, tick_s: Fraction | None, tick_frames: int | None, align: str,
           context_rate: int | None, metric: str, fmt: str, output: Path | None) -> None:
    """The level the clock reads at every tick of REC.

    CSV columns: tick,t_s,frame,level (frame: where the analyser window
    ends; -inf where max-db reads silence). JSON and npz hold the same
    columns and the parameters.
    """
    options = _analyser_options(fft_size)
    info = probe(rec)
    rate = context_rate or info.sample_rate_hz
    ticks = _ticks(tick_s, tick_frames, align, rate)
    blocks = iter_blocks(info, context_rate_hz=context_rate)
    chunks = iter_levels(blocks, rate, ticks=ticks, metric=metric, options=options)
    params = {"recording": str(rec), "sample_rate_hz": rate, "tick_s": str(ticks.period_s),
              "align": ticks.align, "fft_size": fft_size, "metric": metric}
    if fmt == "csv":
        with atomic_output(output, protect=(rec,)) as out:
            out.write("tick,t_s,frame,level\n")
            for chunk in chunks:
                k = np.arange(chunk.first_tick, chunk.first_tick + chunk.frames.size)
                t = ticks.time_s(k)
                out.write("".join(
                    f"{i},{_fmt(ti)},{fi},{_fmt(li)}\n"
                    for i, ti, fi, li in zip(k.tolist(), t.tolist(), chunk.frames.tolist(), chunk.level.tolist())
                ))
        return
    collected = list(chunks)
    frames = np.concatenate([c.frames for c in collected]) if collected else np.zeros(0, np.int64)
    level = np.concatenate([c.level for c in collected]) if collected else np.zeros(0)
    k = np.arange(frames.size, dtype=np.int64)
    columns = {"tick": k, "t_s": ticks.time_s(k), "frame": frames, "level": level}
    if fmt == "json":
        with atomic_output(output, protect=(rec,)) as out:
            out.write(json_text({"schema": 1, "params": params, **columns}))
    else:
        with atomic_output(output, binary=True, protect=(rec,)) as out:
            write_npz(out, {**columns, "params": np.array(json_text(params))})


@main.command()
@recording_argument
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def info(rec: Path, fmt: str) -> None:
    """Container, codec, rate, channels, duration, exact-zero share, peak and RMS of REC."""
    head = probe(rec)
    summary = summarize(iter_blocks(head), head.sample_rate_hz)
    rows = {
        "path": head.path,
        "container": head.container,
        "codec": head.codec,
        "sample_rate_hz": head.sample_rate_hz,
        "n_channels": head.n_channels,
        "n_frames": summary.n_frames,
        "duration_s": round(summary.duration_s, 6),
        "exact_zero_share": round(summary.exact_zero_share, 6),
        "peak": summary.peak,
        "peak_dbfs": round(summary.peak_dbfs, 2),
        "rms": summary.rms,
        "rms_dbfs": round(summary.rms_dbfs, 2),
    }
    if fmt == "json":
        click.echo(json_text({"schema": 1, **rows}), nl=False)
        return
    width = max(len(k) for k in rows)
    for key, value in rows.items():
        click.echo(f"{key:<{width}}  {value}")


def run() -> None:
    """Entry point for ``python -m clock`` and the console script."""
    main(prog_name="speechclock")

