"""The command line's shared options, and reading what they name: one recording (:func:`load`) or a corpus
(:func:`load_corpus`), the config, the candidate setting, the outputs checked against the inputs.

Exit codes, in every command: 0 success; 1 a check failed (only ``check``
has checks); 2 bad input or usage (the message names the file and line, key
or option). Any other failure (out of memory, a bug) is also one line and
exit 2, never a traceback (``SPEECHCLOCK_DEBUG=1`` shows it). Interrupted by
a signal: 130 (SIGINT), 143 (SIGTERM), 141 (the reader of the output went
away), with every temporary file removed.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..core.analyser import AnalyserOptions
from ..core.thresholds import DEFAULT_THRESHOLDS, Thresholds, check_floor, check_tick_s, check_wait_s
from ..core.ticks import Ticks, parse_period
from ..core.times import parse_time
from ..errors import ConfigError, InvalidParameterError
from ..io.decode import probe
from ..io.files import find_config
from ..io.inputs import Inputs
from ..io.output import check_target
from ..io.recording import MAX_RATE_HZ, MIN_RATE_HZ, Recording, analysis_rate, read_recording
from ..io.sources import name_of
from ..io.terminal import printable
from .scale import SOURCE, scale_options, scale_settings

if TYPE_CHECKING:
    from ..io.config import AgreementConfig, Config

F = TypeVar("F", bound=Callable[..., Any])

#: The most worker processes ``--jobs`` starts.
MAX_JOBS = 256


def library_check(check: Callable[[Any], Any]) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback from a library check (its error names the value; click adds the option)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return check(value)
        except InvalidParameterError as err:
            raise click.BadParameter(str(err)) from None

    return callback


_period = library_check(lambda v: check_tick_s(parse_period(v), "the tick"))


def _bounded_int(low: int, high: int, what: str = "") -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
        if value is not None and not low <= value <= high:
            raise click.BadParameter(f"must be {what}in [{low}, {high}], got {value}")
        return value

    return callback


def _fft_size(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None:
        analyser_options(value)
    return value


class TimeType(click.ParamType):
    """A time option: seconds (``2.5``) or ``[h:]mm:ss.mmm`` (``02:10.500``, as every check line prints)."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        """The option's value in seconds."""
        try:
            return parse_time(value, "the time")
        except InvalidParameterError as err:
            self.fail(str(err).replace("the time must be", "must be"), param, ctx)


#: Seconds or mm:ss.mmm.
TIME = TimeType()


def finite_seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback: a time on the recording's timeline, within 1e7 s (``plot --start``)."""
    if value is not None and not abs(value) <= 1e7:
        raise click.BadParameter(f"must be a time of at most 1e7 s, got {value}")
    return value


_floor = library_check(check_floor)
_quiet = library_check(lambda v: check_wait_s(v, "the quiet time"))
_onset_timeout = library_check(lambda v: check_wait_s(v, "the onset timeout"))
#: The ``--onset-timeout`` check, for commands that take it alone (``sweep``).
onset_timeout_callback = _onset_timeout

# Frames between ticks: at most 60 s at the highest AudioContext rate (checked against the real rate later).
_MAX_TICK_FRAMES = 60 * MAX_RATE_HZ


class LocalPathType(click.ParamType):
    """A local file (REC of a one-recording command): a URL is refused as it was written."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        """The option's path."""
        from ..io.sources import is_url

        if is_url(value):
            self.fail(
                f"{printable(value, newlines=False)}: a local file is needed (URLs are read by the corpus commands: "
                "derive, check, sweep, report)",
                param,
                ctx,
            )
        return Path(value)


def recording_argument(f: F) -> F:
    """The REC argument, a local file (problems with the file are reported by the decoder)."""
    return click.argument("rec", type=LocalPathType())(f)


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
                callback=_fft_size,
                metavar="N",
                help=f"AnalyserNode.fftSize: power of two in 32..32768 [default: {DEFAULT_THRESHOLDS.fft_size}].",
            ),
            click.option(
                "--tick",
                "tick_s",
                callback=_period,
                metavar="S",
                help="Seconds between the clock's ticks (it polls its analyser on a timer), exact: "
                "1/60 (default), 0.05, 1.",
            ),
            click.option(
                "--tick-frames",
                type=int,
                callback=_bounded_int(1, _MAX_TICK_FRAMES),
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
                callback=_bounded_int(MIN_RATE_HZ, MAX_RATE_HZ, "an AudioContext rate "),
                metavar="HZ",
                help=f"Resample to this AudioContext rate first (soxr; {MIN_RATE_HZ}..{MAX_RATE_HZ}).",
            ),
        ],
    )


def clock_options(f: F) -> F:
    """The clock's thresholds: ``--floor``, ``--quiet-time``, ``--onset-timeout`` (over the committed ones)."""
    return _apply(f, _threshold_options(candidate=False))


def candidate_options(f: F) -> F:
    """The clock's thresholds as a candidate, for ``derive`` (shown beside the recommendation) and ``check``."""
    return _apply(f, _threshold_options(candidate=True))


def _threshold_options(*, candidate: bool) -> list[Callable[[Any], Any]]:
    d = DEFAULT_THRESHOLDS
    over = "; a candidate, over the committed one" if candidate else ""
    return [
        click.option(
            "--floor",
            type=float,
            callback=_floor,
            metavar="F",
            help=f"Speech is level > F (RMS, 0..1){over} [default: the config's, else {d.floor}].",
        ),
        click.option(
            "--quiet-time",
            "quiet_s",
            type=TIME,
            callback=_quiet,
            metavar="S",
            help=f"Quiet after the last word that ends a beat, in seconds or mm:ss.mmm{over} "
            f"[default: the config's, else {d.quiet_s}].",
        ),
        click.option(
            "--onset-timeout",
            "onset_timeout_s",
            type=TIME,
            callback=_onset_timeout,
            metavar="S",
            help=f"How long the clock waits for speech after a terminal response{over} "
            f"[default: the config's, else {d.onset_timeout_s}].",
        ),
    ]


def given_thresholds(opts: Mapping[str, Any]) -> dict[str, float]:
    """The thresholds given on the command line (``floor``, ``quiet_s``, ``onset_timeout_s``), by name."""
    return {k: opts[k] for k in ("floor", "quiet_s", "onset_timeout_s") if opts.get(k) is not None}


def with_candidate(cfg: Config, opts: Mapping[str, Any]) -> tuple[Config, str]:
    """The config with the candidate thresholds of :func:`candidate_options` over its own, and its label.

    The label is ``candidate`` when any was given, ``committed`` when the
    config is a file, and ``built-in defaults`` otherwise.
    """
    given = given_thresholds(opts)
    if given:
        try:
            return replace(cfg, thresholds=cfg.thresholds.with_(**given)), "candidate"
        except InvalidParameterError as err:
            # The only combination a single option cannot check: a quiet time at or under the config's hangover.
            where = f"{cfg.path}: [thresholds] hangover_s" if cfg.path is not None else "[thresholds] hangover_s"
            raise click.BadParameter(f"{err} ({where})", param_hint="'--quiet-time'") from None
    return cfg, "committed" if cfg.path is not None else "built-in defaults"


def candidate_text(opts: Mapping[str, Any]) -> str:
    """``--floor 0.002 --quiet-time 2.4``: the candidate thresholds as given, for the ``config:`` line."""
    names = {"floor": "--floor", "quiet_s": "--quiet-time", "onset_timeout_s": "--onset-timeout"}
    return " ".join(f"{names[k]} {v:g}" for k, v in given_thresholds(opts).items())


#: Options that always name a figure (its suffix says the format); ``plot``'s ``-o`` checks its own.
FIGURE_OPTIONS = ("--plot", "--heatmap", "--tradeoff")

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


class OutputPath(click.Path):
    """A file to write (``-`` standard output); an empty name is a usage error, not the current folder."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """The output's path (an empty name is an error)."""
        if isinstance(value, str) and value == "":
            self.fail("an empty file name (give a file, or - for standard output)", param, ctx)
        return super().convert(value, param, ctx)


def output_file(help: str, *, required: str | None = None) -> Callable[[F], F]:
    """``-o FILE``, written atomically; ``required`` names what to give (``FILE.png``) when it must be given."""

    def callback(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
        if value is None and required is not None:
            raise click.UsageError(f"{ctx.info_name} writes a file: add -o {required}")
        return value

    return click.option(
        "-o",
        "--output",
        type=OutputPath(),
        default=None,
        callback=callback,
        help=help + (" [required]" if required else ""),
    )


def refuse_binary_to_terminal(output: Path | None, what: str, example: str) -> None:
    """Refuse, before any work, to write binary ``what`` to a terminal (usage error naming ``-o``)."""
    if (output is None or str(output) == "-") and sys.stdout.isatty():
        raise click.UsageError(f"{what} is binary, not for a terminal: add -o {example} (or redirect to a file)")


#: ``-o FILE`` for commands that print to standard output by default.
output_option = output_file("Write here (atomically) instead of standard output.")

#: ``--events FILE``.
events_option = click.option(
    "--events",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Event log (JSON Lines) [default: NAME.events.jsonl beside REC].",
)

#: ``--labels FILE``: an Audacity label track of ground truth (``segments`` and ``beats``).
labels_option = click.option(
    "--labels",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Audacity label track of ground truth: adds onset and offset errors.",
)

#: The parameter names :func:`level_options` adds.
LEVEL_KEYS = ("fft_size", "tick_s", "tick_frames", "align", "context_rate")


@dataclass(frozen=True, slots=True)
class LevelOptions:
    """How the level is read, as :func:`level_options` gives it (None: the config's, or the recording's).

    Attributes
    ----------
    fft_size : int or None
        ``--fft-size``.
    tick_s : Fraction or None
        ``--tick``.
    tick_frames : int or None
        ``--tick-frames`` (instead of ``--tick``).
    align : str
        ``--align``.
    context_rate : int or None
        ``--context-rate``.
    """

    fft_size: int | None
    tick_s: Fraction | None
    tick_frames: int | None
    align: str
    context_rate: int | None


def level_opts(opts: Mapping[str, Any]) -> LevelOptions:
    """The values of :func:`level_options` among a command's parameters."""
    return LevelOptions(**{k: opts[k] for k in LEVEL_KEYS})


def analyser_options(fft_size: int) -> AnalyserOptions:
    """Validated analyser options, as a usage error naming --fft-size."""
    try:
        return AnalyserOptions(fft_size=fft_size)
    except InvalidParameterError as err:
        raise click.BadParameter(str(err), param_hint="'--fft-size'") from None


def make_ticks(tick_s: Fraction | None, tick_frames: int | None, align: str, rate_hz: int, default: Fraction) -> Ticks:
    """The cadence from --tick / --tick-frames / --align (a tick of 1 ms to 60 s)."""
    if tick_s is not None and tick_frames is not None:
        raise click.UsageError("give --tick or --tick-frames, not both")
    if tick_frames is not None:
        try:
            check_tick_s(Fraction(tick_frames, rate_hz), f"the tick ({tick_frames} frames at {rate_hz} Hz)")
        except InvalidParameterError as err:
            raise click.BadParameter(str(err), param_hint="'--tick-frames'") from None
        return Ticks.every_frames(tick_frames, rate_hz, align=align)  # type: ignore[arg-type]
    return Ticks(tick_s if tick_s is not None else default, align)  # type: ignore[arg-type]


def make_thresholds(base: Thresholds, **changes: Any) -> Thresholds:
    """Thresholds with the options the user gave."""
    return base.with_(**changes)


@dataclass(frozen=True, slots=True)
class CorpusArgs:
    """What every corpus command reads its recordings with (:func:`corpus_options`), passed as one value.

    Attributes
    ----------
    recordings : tuple of Path
        RECORDINGS: files, folders or sources.
    config : Path or None
        --config.
    jobs : int
        --jobs.
    no_progress, lenient : bool
        --no-progress, --lenient.
    """

    recordings: tuple[Path, ...]
    config: Path | None
    jobs: int
    no_progress: bool
    lenient: bool


def corpus_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """RECORDINGS..., --config, --jobs, --no-progress, --lenient, --scheduler, --cache: every corpus command.

    The command gets the first five as one :class:`CorpusArgs`, ``corpus_args`` (the scale options are kept
    apart: :func:`clock.cli.scale.scale_settings`).
    """

    @functools.wraps(f)
    def command(*args: Any, recordings: Any, config: Any, jobs: Any, no_progress: Any, lenient: Any, **kw: Any) -> Any:
        return f(*args, corpus_args=CorpusArgs(recordings, config, jobs, no_progress, lenient), **kw)

    return _apply(
        command,
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
                callback=_bounded_int(1, MAX_JOBS),
                help="Decode and analyse recordings in N processes (results identical to one).",
            ),
            click.option("--no-progress", is_flag=True, help="No progress bar (none is shown off a terminal)."),
            click.option("--lenient", is_flag=True, help="Skip malformed event lines with a warning."),
            *scale_options(),
        ],
    )


def check_outputs(
    inputs: Inputs, outputs: Mapping[str, Path | None], *, allow: Mapping[str, tuple[str, ...]] | None = None
) -> None:
    """Refuse, before any work, outputs that land on an input or on each other (usage errors, exit 2)."""
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None or str(path) == "-":
            continue
        if option in FIGURE_OPTIONS:
            figure_format(path, option)
        inputs.check_output(path, option, allow=(allow or {}).get(option, ()))
        check_target(path, option)
        key = os.path.realpath(path)
        if key in seen:
            raise click.UsageError(f"{seen[key]} and {option} name the same file ({path})")
        seen[key] = option


def recording_inputs(
    rec: Path,
    *,
    config: Path | None = None,
    events: Path | None = None,
    labels: Path | None = None,
    outputs: Mapping[str, Path | None] | None = None,
) -> Inputs:
    """The files a one-recording command reads (REC, its log and labels, the config); outputs checked against them."""
    inputs = Inputs()
    inputs.add_recording(rec, events=events, labels=labels)
    inputs.add(config or find_config(rec.parent), "config")
    check_outputs(inputs, outputs or {})
    return inputs


def load_corpus(  # type: ignore[no-untyped-def]
    corpus_args: CorpusArgs,
    *,
    outputs: Mapping[str, Path | None] | None = None,
    baseline: Path | None = None,
    writes_baseline: bool = False,
    require_config: bool = False,
    envelope_bins: int | None = None,
):
    """The corpus, with a progress bar on a terminal (unless ``--no-progress``).

    Outputs (and the baseline, when ``writes_baseline``) are checked against
    the inputs before any decoding, and so is the config with ``require_config``.
    ``envelope_bins``: each decoded recording's waveform envelope too (for its plot).
    """
    from ..run.corpus import collect, observe_corpus

    recordings, config = corpus_args.recordings, corpus_args.config
    scheduler, cache = scale_settings()
    inputs = Inputs()
    cfg, files = collect(recordings, config=config, inputs=inputs, baseline=baseline)
    if require_config and cfg.path is None:
        first = recordings[0]
        missing = (first if first.is_dir() else first.parent) / "speechclock.toml" if isinstance(first, Path) else first
        raise ConfigError(
            f"{missing}: no config: give --config FILE, or --allow-defaults to check against the built-in defaults"
        )
    writes = dict(outputs or {})
    if writes_baseline:
        writes["--update-baseline"] = baseline if baseline is not None else cfg.baseline_path
    check_outputs(inputs, writes, allow={"--update-baseline": ("baseline",)})
    where: dict[str, Any] = {
        "jobs": corpus_args.jobs,
        "lenient": corpus_args.lenient,
        "scheduler": scheduler,
        "cache": cache,
        "envelope_bins": envelope_bins,
    }
    if corpus_args.no_progress or not sys.stderr.isatty():
        return observe_corpus(cfg, files, inputs, **where)
    bar: Any
    with click.progressbar(
        length=len(files),
        label="recordings",
        file=sys.stderr,
        item_show_func=lambda p: printable(name_of(p), newlines=False) if p else "",
    ) as bar:
        return observe_corpus(cfg, files, inputs, progress=lambda p: bar.update(1, p), **where)


config_option = click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    help="speechclock.toml with the committed thresholds [default: the one beside REC].",
)


def committed_thresholds(rec: Path, config: Path | None) -> Thresholds:
    """The thresholds of --config, or of the speechclock.toml beside REC, or the defaults."""
    path = config or find_config(rec.parent)
    if path is None:
        return DEFAULT_THRESHOLDS
    from ..io.config import read_config  # here: a command without a config never imports what it needs

    return read_config(path).thresholds


def agreement_config(rec: Path, config: Path | None) -> AgreementConfig:
    """The ``[agreement]`` table of --config, or of the speechclock.toml beside REC, or the defaults."""
    from ..io.config import AgreementConfig, read_config

    path = config or find_config(rec.parent)
    return read_config(path).agreement if path is not None else AgreementConfig()


def cadence(
    rec: Path, level: LevelOptions, *, config: Path | None = None
) -> tuple[Thresholds, AnalyserOptions, int, Ticks]:
    """The committed thresholds, analyser options, context rate and ticks that the level options give for REC."""
    base = committed_thresholds(rec, config)
    options = analyser_options(base.fft_size if level.fft_size is None else level.fft_size)
    rate = analysis_rate(probe(rec), level.context_rate)
    return base, options, rate, make_ticks(level.tick_s, level.tick_frames, level.align, rate, base.tick_s)


def load(
    rec: Path,
    level: LevelOptions,
    *,
    config: Path | None = None,
    quantum: bool = False,
    events: Path | None = None,
    lenient: bool = False,
    envelope_bins: int | None = None,
    **thresholds: Any,
) -> tuple[Recording, Thresholds]:
    """Read REC with the options given, and the thresholds they make (over the committed ones).

    With ``quantum``, the render-quantum level is kept as one bit per quantum
    at the floor (what ``segments`` needs), so memory stays small on long recordings.
    With ``envelope_bins``, the waveform's envelope comes from the same decode
    (:func:`~clock.io.recording.read_recording`).
    """
    base, options, _, ticks = cadence(rec, level, config=config)
    th = base.with_(tick_s=ticks.period_s, fft_size=options.fft_size, **thresholds)
    recording = read_recording(
        rec,
        ticks=ticks,
        options=options,
        context_rate_hz=level.context_rate,
        quantum=quantum,
        quantum_floor=th.floor if quantum else None,
        events=events,
        lenient=lenient,
        envelope_bins=envelope_bins,
    )
    return recording, th
