"""Plots: a recording as the clock saw it, and the sweep's heatmap and trade-off.

matplotlib is imported inside each function (never at module import), and
no function touches pyplot's global state: each makes its own Figure and
returns it (save it with :func:`save_figure` for reproducible bytes).

Text that comes from the user (event types, file names) is drawn as it is:
never parsed as mathtext or LaTeX (``$x$`` stays ``$x$``), cut to
:data:`MAX_TEXT_CHARS`, with control characters shown as U+FFFD.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..core.beats import DONE, SPEAKING, WAITING, Beat, Replay
from ..core.events import EventLog
from ..core.levels import LevelTrace
from ..core.segments import Segmentation
from ..core.sweep import SweepResult

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["MAX_TEXT_CHARS", "plain_text", "plot_recording", "plot_sweep_heatmap", "plot_tradeoff", "save_figure"]

#: The longest user text drawn in a plot (longer is cut, with an ellipsis).
MAX_TEXT_CHARS = 80

# Characters no font draws: control characters and lone surrogates (file names that are not UTF-8).
_UNDRAWABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

# Text properties for user strings: literal, never mathtext or TeX.
_LITERAL = {"parse_math": False, "usetex": False}

_EVENT_COLOURS = {
    "terminal": "tab:red",
    "tool_call": "tab:orange",
    "prompt": "tab:blue",
    "arrival": "tab:cyan",
    "pause": "tab:gray",
    "resume": "tab:gray",
    "end": "black",
    "clock.quiet": "tab:purple",
}
_DB_FLOOR = -100.0


def _figure(**kwargs: Any) -> Figure:
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def plain_text(text: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """User text as a plot shows it: control characters as U+FFFD, at most ``max_chars``."""
    text = _UNDRAWABLE.sub("\ufffd", text)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "\u2026"


def save_figure(fig: Figure, path: Any, *, fmt: str | None = None) -> None:
    """Save with no timestamps and fixed ids in the file, so reruns give the same bytes.

    PNG without the Software stamp, SVG without a date and with ids from a
    fixed salt (``svg.hashsalt``), PDF without a creation date. A glyph the
    font lacks is drawn as a box, without a warning.
    """
    import matplotlib

    kind = (fmt or str(path).rsplit(".", 1)[-1]).lower()
    metadata = {
        "png": {"Software": None},
        "svg": {"Date": None, "Creator": None},
        "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
    }.get(kind, {})
    with matplotlib.rc_context({"svg.hashsalt": "speechclock"}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support", category=UserWarning)
        fig.savefig(path, format=kind, metadata=metadata)


def _db(level: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.maximum(20 * np.log10(level), _DB_FLOOR)


def plot_recording(
    trace: LevelTrace,
    *,
    floor: float,
    segmentation: Segmentation,
    envelope: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None = None,
    events: EventLog | None = None,
    beats: Sequence[Beat] = (),
    replay: Replay | None = None,
    min_gap_s: float = 0.15,
    start_s: float | None = None,
    end_s: float | None = None,
    title: str = "",
) -> Figure:
    """Waveform, level trace and the replayed clock on one time axis.

    Parameters
    ----------
    trace : LevelTrace
    floor : float
        Drawn as a line across the level axis.
    segmentation : Segmentation
        Speech segments are shaded; gaps of at least ``min_gap_s`` annotated.
    envelope : (times_s, min, max), optional
        The waveform's envelope (see :func:`clock.report.html.envelope`).
    events : EventLog, optional
        Labelled vertical markers.
    beats : sequence of Beat
        Acknowledgments and narrations are told apart.
    replay : Replay, optional
        The clock's state per tick (waiting, speaking, quiet count, done).
    start_s, end_s : float, optional
        Zoom.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
    """
    t = trace.t_s
    lo = 0.0 if start_s is None else start_s
    hi = (float(t[-1]) if trace.n_ticks else 1.0) if end_s is None else end_s
    n_rows = 2 + (replay is not None)
    fig = _figure(figsize=(12, 2.4 * n_rows + 0.6), layout="constrained")
    axes = fig.subplots(n_rows, 1, sharex=True, height_ratios=[1, 2, 1][:n_rows])
    ax_wave, ax_level = axes[0], axes[1]
    if envelope is not None:
        et, emin, emax = envelope
        ax_wave.fill_between(et, emin, emax, color="0.35", linewidth=0, label="waveform")
    ax_wave.set_ylabel("sample")
    ax_wave.set_ylim(-1, 1)
    ax_wave.set_title(plain_text(title or "recording", 4 * MAX_TEXT_CHARS), **_LITERAL)

    ax_level.plot(t, _db(trace.level), color="tab:blue", linewidth=0.8, label=f"level ({trace.metric}), dBFS")
    ax_level.axhline(20 * np.log10(floor), color="tab:red", linestyle="--", linewidth=1, label=f"floor {floor:g}")
    ack_spans = [(b.terminal_s, b.ack_last_word_s) for b in beats if b.ack_overlap and b.ack_last_word_s]
    narrations = [(b.onset_s, b.last_word_s) for b in beats if b.onset_s is not None and b.last_word_s is not None]
    labelled: set[str] = set()

    def once(name: str) -> str | None:
        if name in labelled:
            return None
        labelled.add(name)
        return name

    for seg in segmentation.segments:
        in_ack = any(a <= seg.last_word_s <= b + 1e-9 for a, b in ack_spans)
        ax_level.axvspan(
            seg.onset_s,
            seg.last_word_s,
            color="tab:orange" if in_ack else "tab:green",
            alpha=0.2,
            linewidth=0,
            label=once("acknowledgment" if in_ack else "speech (level > floor)"),
        )
    for a, b in narrations:
        ax_level.hlines(_DB_FLOOR + 4, a, b, color="tab:green", linewidth=4, label=once("narration"))
    for seg, nxt, gap in zip(segmentation.segments, segmentation.segments[1:], segmentation.gaps_s):
        if gap >= min_gap_s and lo <= seg.last_word_s <= hi:
            mid = (seg.last_word_s + nxt.onset_s) / 2
            ax_level.annotate(f"{gap:.2f} s", (mid, -8), ha="center", va="top", fontsize=7, color="tab:green")
    if events is not None:
        for e in events.events:
            if lo <= e.t_s <= hi:
                colour = _EVENT_COLOURS.get(e.kind, "0.5")
                for ax in axes:
                    ax.axvline(e.t_s, color=colour, linewidth=0.8, alpha=0.8)
                ax_wave.annotate(
                    plain_text(e.kind),
                    (e.t_s, 0.95),
                    rotation=90,
                    fontsize=7,
                    va="top",
                    ha="right",
                    color=colour,
                    **_LITERAL,
                )
    ax_level.set_ylabel("level (dBFS)")
    ax_level.set_ylim(_DB_FLOOR, 0)
    ax_level.legend(loc="lower right", fontsize=7, ncol=3)

    if replay is not None:
        ax_clock = axes[2]
        state = replay.state
        for code, colour, name in ((WAITING, "gold", "waiting"), (SPEAKING, "tab:green", "speaking")):
            ax_clock.fill_between(
                t, 0, 1, where=state == code, step="mid", color=colour, alpha=0.35, linewidth=0, label=name
            )
        ax_clock.plot(t, replay.quiet_count_s, color="tab:purple", linewidth=1, label="quiet count (s)")
        done = t[state == DONE]
        ax_clock.vlines(done, 0, ax_clock.get_ylim()[1], color="black", linewidth=1.5, label="beat done")
        ax_clock.set_ylabel("clock")
        ax_clock.set_ylim(0, max(1.0, float(replay.quiet_count_s.max(initial=0)) * 1.1))
        ax_clock.legend(loc="upper right", fontsize=7, ncol=4)
    axes[-1].set_xlabel("time (s)")
    axes[-1].set_xlim(lo, hi)
    return fig


def plot_sweep_heatmap(result: SweepResult, *, field: str = "n_premature") -> Figure:
    """A (floor x quiet) heatmap of one field of a sweep, the recommendation marked."""
    fig = _figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    m = result.matrix(field)
    image = ax.imshow(m, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(result.quiets_s)), [f"{q:g}" for q in result.quiets_s], fontsize=7)
    ax.set_yticks(range(len(result.floors)), [f"{f:g}" for f in result.floors], fontsize=7)
    ax.set_xlabel("quiet time (s)")
    ax.set_ylabel("floor (RMS)")
    ax.set_title(f"{field.replace('_', ' ')} over {result.n_recordings} recordings")
    fig.colorbar(image, ax=ax, label=field)
    if result.recommended is not None:
        r = result.recommended
        ax.plot(
            result.quiets_s.index(r.quiet_s),
            result.floors.index(r.floor),
            marker="*",
            color="red",
            markersize=14,
            label="recommended",
        )
        ax.legend(loc="upper left", fontsize=7)
    return fig


def plot_tradeoff(result: SweepResult) -> Figure:
    """Premature ends against the latency added after the last word, with the Pareto front."""
    fig = _figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    pts = [p for p in result.points if p.latency_mean_s is not None]
    ax.scatter(
        [float(p.latency_mean_s or 0.0) for p in pts],
        [p.n_premature for p in pts],
        c=[p.quiet_s for p in pts],
        cmap="viridis",
        s=18,
        label="settings",
    )
    front = [p for p in result.pareto if p.latency_mean_s is not None]
    ax.plot(
        [float(p.latency_mean_s or 0.0) for p in front],
        [p.n_premature for p in front],
        color="tab:red",
        marker="o",
        label="Pareto front",
    )
    if result.recommended is not None and result.recommended.latency_mean_s is not None:
        r = result.recommended
        ax.plot(
            float(r.latency_mean_s or 0.0),
            r.n_premature,
            marker="*",
            color="black",
            markersize=14,
            label=f"recommended: floor {r.floor:g}, quiet {r.quiet_s:g} s",
        )
    ax.set_xlabel("mean added latency after the last word (s)")
    ax.set_ylabel("premature ends (beats)")
    ax.set_title("talking over the guide vs making every stop drag")
    ax.legend(fontsize=7)
    return fig
