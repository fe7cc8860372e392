"""``speechclock levels``: the AnalyserNode levels of a recording at the page's cadence, as CSV, JSON or NPZ."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import click
import numpy as np

from ..core.level_metrics import METRICS
from ..core.levels import LevelChunk, iter_levels
from ..core.ticks import frame_times_s
from ..io.decode import iter_level_blocks, probe
from ..io.output import atomic_output, json_text, write_json_columns, write_npz
from .options import (
    cadence,
    config_option,
    level_options,
    level_opts,
    output_option,
    recording_argument,
    recording_inputs,
    refuse_binary_to_terminal,
)


def csv_rows(chunk: LevelChunk, rate: int) -> Callable[[], str]:
    """The CSV rows of a chunk (``tick,t_s,frame,level``, floats as ``repr``), formatted when called.

    ``t_s`` is the tick's time, its frame over ``rate`` (:func:`clock.core.ticks.frame_times_s`).

    A float's ``repr`` is the shortest string that reads back to it (``inf``
    and ``-inf`` as Python writes them). One f-string per row, joined: the
    fastest way Python formats them (a third faster than one ``%`` over the
    whole chunk), which matters, as an hour holds 216,000 rows.
    """
    first, frames, level = chunk.first_tick, chunk.frames, chunk.level
    t_s = frame_times_s(frames, rate)

    def text() -> str:
        ticks = range(first, first + frames.size)
        rows = zip(ticks, t_s.tolist(), frames.tolist(), level.tolist())
        return "".join([f"{k},{t!r},{f},{v!r}\n" for k, t, f, v in rows])

    return text


def write_behind(out: IO[str], parts: Iterable[Callable[[], str]], *, depth: int = 8) -> None:
    """Write ``part()`` for each part, formatting and writing in a second thread while the next parts are computed.

    The decoder and the analyser spend most of their time in C without the
    GIL, so the text of one chunk is made while the next is decoded. Order is
    kept; at most ``depth`` parts wait (memory stays bounded); an error on
    either side stops both and is raised here.
    """
    pending: queue.Queue[Callable[[], str] | None] = queue.Queue(maxsize=depth)
    failed: list[BaseException] = []

    def drain() -> None:
        try:
            while (part := pending.get()) is not None:
                out.write(part())
        except BaseException as err:  # noqa: BLE001 - handed to the main thread
            failed.append(err)
            while pending.get() is not None:  # let the producer finish or stop
                pass

    writer = threading.Thread(target=drain, name="speechclock-csv", daemon=True)
    writer.start()
    try:
        for part in parts:
            if failed:
                break
            pending.put(part)
    finally:
        pending.put(None)
        writer.join()
    if failed:
        raise failed[0]


@click.command()
@recording_argument
@level_options
@click.option(
    "--metric",
    type=click.Choice(METRICS),
    default="rms",
    show_default=True,
    help="rms and peak of the time-domain data (what the clock uses); "
    "byte-mean of getByteFrequencyData; max-db of getFloatFrequencyData.",
)
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "npz"]), default="csv", show_default=True)
@config_option
@output_option
def levels(rec: Path, metric: str, fmt: str, config: Path | None, output: Path | None, **opts: Any) -> None:
    """The level the clock reads at every tick of REC.

    CSV columns: tick,t_s,frame,level (frame: where the analyser window
    ends; -inf where max-db reads silence). JSON (null for -inf) and npz hold
    the same columns and the parameters.
    """
    if fmt == "npz":
        refuse_binary_to_terminal(output, "npz", "FILE.npz")
    inputs = recording_inputs(rec, config=config, outputs={"-o": output})
    read_as = level_opts(opts)
    _, options, rate, ticks = cadence(rec, read_as, config=config)
    chunks = iter_levels(
        iter_level_blocks(probe(rec), context_rate_hz=read_as.context_rate),
        rate,
        ticks=ticks,
        metric=metric,
        options=options,
    )
    params = {
        "recording": str(rec),
        "sample_rate_hz": rate,
        "tick_s": str(ticks.period_s),
        "align": ticks.align,
        "fft_size": options.fft_size,
        "metric": metric,
    }
    if fmt == "csv":
        with atomic_output(output, inputs=inputs) as out:
            out.write("tick,t_s,frame,level\n")
            write_behind(out, (csv_rows(chunk, rate) for chunk in chunks))
        return
    collected = list(chunks)
    frames = np.concatenate([c.frames for c in collected]) if collected else np.zeros(0, np.int64)
    level = np.concatenate([c.level for c in collected]) if collected else np.zeros(0)
    del collected  # the chunks, now copied (a 3-hour trace is 10 MB)
    k = np.arange(frames.size, dtype=np.int64)
    columns = {"tick": k, "t_s": frame_times_s(frames, rate), "frame": frames, "level": level}
    if fmt == "json":
        with atomic_output(output, inputs=inputs) as out:
            write_json_columns(out, {"schema": 1, "params": params}, columns)
    else:
        with atomic_output(output, binary=True, inputs=inputs) as out:
            write_npz(out, {**columns, "params": np.array(json_text(params))})
