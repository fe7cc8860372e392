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
from ..core.derive import Derivation
from ..core.events import EventLog
from ..core.levels import LevelTrace
from ..core.segments import Segmentation
from ..core.sweep import SweepResult

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "MAX_TEXT_CHARS",
    "mmss",
    "plain_text",
    "plot_beat_timeline",
    "plot_evidence",
    "plot_recording",
    "plot_sweep_heatmap",
    "plot_tradeoff",
    "save_figure",
]

#: The longest user text drawn in a plot (longer is cut, with an ellipsis).
MAX_TEXT_CHARS = 80

# Characters no font draws: control characters and lone surrogates (file names that are not UTF-8).
_UNDRAWABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

# Text properties for user strings: literal, never mathtext or TeX.
_LITERAL: dict[str, Any] = {"parse_math": False, "usetex": False}

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


def mmss(x: float, _pos: Any = None) -> str:
    """Seconds as ``m:ss`` (``h:mm:ss`` past an hour), for time axes."""
    sign = "-" if x < 0 else ""
    total = int(round(abs(x)))
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    return f"{sign}{h}:{m:02d}:{sec:02d}" if h else f"{sign}{m}:{sec:02d}"


def _time_axis(ax: Any, lo: float, hi: float) -> None:
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_formatter(FuncFormatter(mmss) if hi - lo >= 20 else FuncFormatter(lambda x, _p: f"{x:.1f}"))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=12, steps=[1, 2, 5, 10]))
    ax.set_xlabel("time (m:ss)" if hi - lo >= 20 else "time (s)")


def _text(ax: Any, x: float, y: float, text: str, **kwargs: Any) -> Any:
    """Literal text (user strings may hold ``$``, control characters, or run long)."""
    return ax.text(x, y, plain_text(text), **_LITERAL, **kwargs)


def _stagger(xs: Sequence[float], widths: Sequence[float], rows: int) -> list[int | None]:
    """Give each label (at x, of a width in data units) a row where it overlaps no other; None if none is free."""
    ends = [-np.inf] * rows
    out: list[int | None] = []
    for x, w in zip(xs, widths):
        row = next((r for r in range(rows) if ends[r] < x - w / 2), None)
        if row is not None:
            ends[row] = x + w / 2
        out.append(row)
    return out


def _gap_colour(gap_s: float, limit_s: float | None) -> str:
    if limit_s is None or limit_s <= 0:
        return "tab:green"
    ratio = gap_s / limit_s
    return "tab:red" if ratio >= 1 else "tab:orange" if ratio >= 0.8 else "tab:green"


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
    quiet_s: float | None = None,
    quiet_margin_s: float = 0.2,
    derived_floor: float | None = None,
    label_gaps_s: float | None = None,
) -> Figure:
    """A recording as the clock saw it: events, waveform, level with the floor, and the replayed clock.

    Parameters
    ----------
    trace : LevelTrace
    floor : float
        The floor the clock runs with (drawn across the level panel).
    segmentation : Segmentation
        Speech is shaded: acknowledgments in orange, narrations in green,
        other speech in grey.
    envelope : (times_s, min, max), optional
        The waveform's envelope (see :func:`clock.io.recording.envelope`).
    events : EventLog, optional
        Marked in a strip of their own, labels staggered so none collide
        (a label that finds no free row is left out; its mark stays).
    beats : sequence of Beat
        Narrations are underlined and their gaps labelled, coloured by how
        close each comes to ``quiet_s - quiet_margin_s`` (green below 80 %,
        orange from 80 %, red at or past it).
    replay : Replay, optional
        The clock's state per tick (waiting, speaking, beat done, linger)
        and its quiet count in seconds, with the quiet time and its margin.
    min_gap_s : float
        Shorter gaps are dips inside words, never labelled.
    start_s, end_s : float, optional
        Zoom.
    title : str
    quiet_s : float, optional
        The clock's quiet time (default: the largest quiet count reached).
    quiet_margin_s : float
    derived_floor : float, optional
        A recommended floor to draw beside the committed one.
    label_gaps_s : float, optional
        Label narration gaps at least this long (default: 40 % of the quiet
        time, or 1 s), and always the three longest in view.

    Returns
    -------
    matplotlib.figure.Figure
    """
    t = trace.t_s
    lo = 0.0 if start_s is None else start_s
    hi = (float(t[-1]) if trace.n_ticks else 1.0) if end_s is None else end_s
    limit = None if quiet_s is None else quiet_s - quiet_margin_s
    heights = [0.55, 1.0, 2.2] + ([0.35, 1.1] if replay is not None else [])
    fig = _figure(figsize=(13, 1.35 * sum(heights) + 1.4), layout="constrained")
    axes = fig.subplots(len(heights), 1, sharex=True, height_ratios=heights)
    ax_events, ax_wave, ax_level = axes[0], axes[1], axes[2]
    handles: dict[str, Any] = {}

    def keep(name: str, artist: Any) -> None:
        handles.setdefault(name, artist)

    # Events: a strip of their own, labels staggered.
    ax_events.set_yticks([])
    ax_events.set_ylim(0, 1)
    ax_events.set_title(plain_text(title or "recording", 4 * MAX_TEXT_CHARS), loc="left", fontsize=10, **_LITERAL)
    for side in ("left", "right", "top"):
        ax_events.spines[side].set_visible(False)
    if events is not None:
        shown = [e for e in events.events if lo <= e.t_s <= hi]
        span = max(hi - lo, 1e-9)
        widths = [span * (0.0065 * len(e.kind) + 0.006) for e in shown]
        rows = _stagger([e.t_s for e in shown], widths, 3)
        for e, row in zip(shown, rows):
            colour = _EVENT_COLOURS.get(e.kind, "0.5")
            for ax in axes[1:]:
                ax.axvline(e.t_s, color=colour, linewidth=0.7, alpha=0.55)
            ax_events.vlines(e.t_s, 0, 0.25, color=colour, linewidth=1.2)
            if row is not None:
                _text(ax_events, e.t_s, 0.32 + 0.22 * row, e.kind, fontsize=7, ha="center", va="bottom", color=colour)

    # Waveform.
    if envelope is not None:
        et, emin, emax = envelope
        keep("waveform", ax_wave.fill_between(et, emin, emax, color="0.35", linewidth=0))
    ax_wave.set_ylabel("sample")
    ax_wave.set_ylim(-1, 1)

    # Level, floors, speech and narrations.
    keep("level (dBFS)", ax_level.plot(t, _db(trace.level), color="tab:blue", linewidth=0.7)[0])
    keep(f"floor {floor:g}", ax_level.axhline(20 * np.log10(floor), color="tab:red", linestyle="--", linewidth=1))
    if derived_floor is not None and derived_floor > 0 and derived_floor != floor:
        keep(
            f"derived floor {derived_floor:g}",
            ax_level.axhline(20 * np.log10(derived_floor), color="tab:purple", linestyle=":", linewidth=1.2),
        )
    narrations = [(b.onset_s, b.last_word_s) for b in beats if b.onset_s is not None and b.last_word_s is not None]
    acks = []
    previous_end = 0.0
    for b in beats:
        if b.ack_overlap and b.ack_last_word_s is not None:
            acks.append((previous_end, b.ack_last_word_s))
        previous_end = b.span_end_s
    for seg in segmentation.segments:
        if not (seg.last_word_s >= lo and seg.onset_s <= hi):
            continue
        if any(x0 <= seg.onset_s and seg.last_word_s <= x1 + 1e-9 for x0, x1 in acks):
            kind, colour = "acknowledgment", "tab:orange"
        elif any(x0 - 1e-9 <= seg.onset_s and seg.last_word_s <= x1 + 1e-9 for x0, x1 in narrations):
            kind, colour = "narration speech", "tab:green"
        else:
            kind, colour = "other speech", "0.6"
        keep(kind, ax_level.axvspan(seg.onset_s, seg.last_word_s, color=colour, alpha=0.22, linewidth=0))
    for x0, x1 in narrations:
        keep("narration", ax_level.hlines(_DB_FLOOR + 3, x0, x1, color="tab:green", linewidth=4))
    gaps = [(at, g) for b in beats for at, g in zip(b.gap_at_s, b.quiet_gaps_s) if g >= min_gap_s and lo <= at <= hi]
    threshold = label_gaps_s if label_gaps_s is not None else (0.4 * quiet_s if quiet_s else 1.0)
    longest = sorted((g for _, g in gaps), reverse=True)[:3]
    labelled = [(at, g) for at, g in gaps if g >= threshold or g in longest]
    span = max(hi - lo, 1e-9)
    rows = _stagger([at + g / 2 for at, g in labelled], [span * 0.045] * len(labelled), 2)
    for (at, g), row in zip(labelled, rows):
        colour = _gap_colour(g, limit)
        ax_level.hlines(-6 - 6 * (row or 0), at, at + g, color=colour, linewidth=1.5)
        if row is not None:
            _text(ax_level, at + g / 2, -7 - 6 * row, f"{g:.2f} s", ha="center", va="top", fontsize=7, color=colour)
    ax_level.set_ylabel("level (dBFS)")
    ax_level.set_ylim(_DB_FLOOR, 0)

    if replay is not None:
        ax_state, ax_count = axes[3], axes[4]
        state = replay.state
        for code, colour, name in ((WAITING, "gold", "waiting for speech"), (SPEAKING, "tab:green", "speaking")):
            keep(
                name,
                ax_state.fill_between(t, 0, 1, where=state == code, step="mid", color=colour, alpha=0.5, linewidth=0),
            )
        done = t[state == DONE]
        keep("beat done", ax_state.vlines(done, 0, 1, color="black", linewidth=2))
        for rb in replay.beats:
            if (
                rb.quiet_declared_s is not None
                and rb.prompt_allowed_s is not None
                and rb.prompt_allowed_s > rb.quiet_declared_s
            ):
                keep(
                    "linger",
                    ax_state.axvspan(rb.quiet_declared_s, rb.prompt_allowed_s, color="0.75", alpha=0.6, linewidth=0),
                )
        ax_state.set_yticks([])
        ax_state.set_ylabel("clock", rotation=0, ha="right", va="center")
        ax_state.set_ylim(0, 1)
        keep("quiet count (s)", ax_count.plot(t, replay.quiet_count_s, color="tab:purple", linewidth=1)[0])
        top = float(replay.quiet_count_s.max(initial=0.0))
        if quiet_s is not None:
            keep(f"quiet time {quiet_s:g} s", ax_count.axhline(quiet_s, color="black", linewidth=1))
            keep(
                f"quiet - margin {quiet_s - quiet_margin_s:g} s",
                ax_count.axhline(quiet_s - quiet_margin_s, color="black", linestyle=":", linewidth=1),
            )
            top = max(top, quiet_s)
        ax_count.set_ylim(0, max(1.0, top * 1.12))
        ax_count.set_ylabel("quiet (s)")
    _time_axis(axes[-1], lo, hi)
    axes[-1].set_xlim(lo, hi)
    fig.legend(
        list(handles.values()), list(handles), loc="outside lower center", ncols=min(6, len(handles)), fontsize=7
    )
    return fig


def plot_beat_timeline(
    beats: Sequence[Beat], *, quiet_s: float, quiet_margin_s: float = 0.2, title: str = ""
) -> Figure:
    """One row per beat, on time since its terminal response: legible for a session of any length.

    Each row shows the wait for speech (terminal response to onset), an
    overlapping acknowledgment, the narration with its gaps coloured by how
    close each comes to ``quiet_s - quiet_margin_s``, the replayed clock's
    declaration and the linger after it, and the beat's bound.
    """
    n = max(1, len(beats))
    fig = _figure(figsize=(12, 0.42 * n + 1.8), layout="constrained")
    ax = fig.subplots()
    limit = quiet_s - quiet_margin_s
    handles: dict[str, Any] = {}

    def keep(name: str, artist: Any) -> None:
        handles.setdefault(name, artist)

    right = 0.0
    for y, b in enumerate(beats):
        t0 = b.terminal_s
        if b.onset_s is not None:
            keep("waiting", ax.broken_barh([(0, b.onset_s - t0)], (y - 0.15, 0.3), color="gold", alpha=0.7))
        if b.ack_overlap and b.ack_last_word_s is not None:
            keep("acknowledgment", ax.broken_barh([(0, b.ack_last_word_s - t0)], (y - 0.3, 0.18), color="tab:orange"))
        if b.onset_s is not None and b.last_word_s is not None:
            keep(
                "narration",
                ax.broken_barh(
                    [(b.onset_s - t0, b.last_word_s - b.onset_s)], (y - 0.3, 0.6), color="tab:green", alpha=0.45
                ),
            )
            for at, g in zip(b.gap_at_s, b.quiet_gaps_s):
                colour = _gap_colour(g, limit)
                ax.broken_barh(
                    [(at - t0, g)], (y - 0.3, 0.6), color=colour, alpha=0.9 if colour != "tab:green" else 0.0
                )
                if g >= 0.4 * quiet_s:
                    _text(ax, at - t0 + g / 2, y + 0.32, f"{g:.2f}", fontsize=6, ha="center", va="bottom", color=colour)
            right = max(right, b.last_word_s - t0)
        declared = b.quiet_declared_s
        if declared is not None:
            keep("beat done (replay)", ax.plot([declared - t0] * 2, [y - 0.4, y + 0.4], color="black", linewidth=2)[0])
            if b.linger_s:
                keep("linger", ax.broken_barh([(declared - t0, b.linger_s)], (y - 0.1, 0.2), color="0.6"))
            right = max(right, declared - t0 + (b.linger_s or 0))
        keep("bound", ax.plot([b.span_end_s - t0] * 2, [y - 0.45, y + 0.45], color="tab:blue", linestyle=":")[0])
        if b.outcome not in ("ok", "silent"):
            _text(
                ax,
                1.0,
                y,
                f" {b.outcome}",
                transform=ax.get_yaxis_transform(),
                fontsize=8,
                va="center",
                color="0.35" if b.outcome == "aborted" else "tab:red",  # the page ended it: not a failure
            )
    for name, colour in (("gap near quiet - margin (80 %)", "tab:orange"), ("gap past quiet - margin", "tab:red")):
        keep(name, ax.broken_barh([(0, 0)], (0, 0), color=colour))
    ax.set_yticks(range(len(beats)), [f"beat {b.index} ({mmss(b.terminal_s)})" for b in beats], fontsize=8)
    ax.set_ylim(len(beats) - 0.5, -0.5)
    ax.set_xlim(0, max(right, 1.0) * 1.05)
    ax.set_xlabel("seconds since the terminal response")
    ax.set_title(plain_text(title or "beats", 4 * MAX_TEXT_CHARS), loc="left", fontsize=10, **_LITERAL)
    fig.legend(
        list(handles.values()), list(handles), loc="outside lower center", ncols=min(5, len(handles)), fontsize=7
    )
    return fig


def _grid_position(values: Sequence[float], x: float) -> float:
    """Where ``x`` falls on an axis of grid indices (fractional between points, clamped to the ends)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 1:
        return 0.0
    return float(np.interp(x, v, np.arange(v.size)))


def plot_sweep_heatmap(
    result: SweepResult, *, committed: tuple[float, float] | None = None, committed_label: str = "committed"
) -> Figure:
    """Premature ends and stalls (with missed onsets) per (floor, quiet), counts in the cells, settings marked.

    Parameters
    ----------
    result : SweepResult
    committed : (floor, quiet_s), optional
        The committed setting, marked with a diamond.
    committed_label : str
        Its name in the legend (``candidate`` for one given on the command line).
    """
    from matplotlib.colors import BoundaryNorm

    fig = _figure(figsize=(11, 4.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    panels = (
        ("premature ends", result.matrix("n_premature")),
        ("stalls and missed onsets", result.matrix("n_stalled") + result.matrix("n_missed_onset")),
    )
    top = int(max(1, *(np.nanmax(m) if m.size else 0 for _, m in panels)))
    bounds = np.arange(-0.5, top + 1.5, 1.0)
    norm = BoundaryNorm(bounds, 256)
    image: Any = None
    for ax, (title, m) in zip(axes, panels):
        image = ax.imshow(m, origin="lower", aspect="auto", cmap="magma_r", norm=norm)
        if m.size <= 600:
            for (i, j), v in np.ndenumerate(m):
                if not np.isnan(v):
                    ax.text(
                        j,
                        i,
                        f"{int(v)}",
                        ha="center",
                        va="center",
                        fontsize=6,
                        color="white" if v > top / 2 else "black",
                    )
        ax.set_xticks(range(len(result.quiets_s)), [f"{q:g}" for q in result.quiets_s], fontsize=7, rotation=90)
        ax.set_xlabel("quiet time (s)")
        ax.set_title(f"{title} (beats), {result.n_recordings} recordings", fontsize=10)
    axes[0].set_yticks(range(len(result.floors)), [f"{f:g}" for f in result.floors], fontsize=7)
    axes[0].set_ylabel("floor (RMS)")
    floor, quiet, _ = result.recommended
    marks = []
    if floor is not None and quiet is not None:
        marks.append(("recommended", floor, quiet, "*", "tab:cyan"))
    if committed is not None:
        marks.append((committed_label, committed[0], committed[1], "D", "tab:green"))
    for ax in axes:
        for name, f, q, marker, colour in marks:
            ax.plot(
                _grid_position(result.quiets_s, q),
                _grid_position(result.floors, f),
                marker=marker,
                color=colour,
                markeredgecolor="black",
                markersize=12 if marker == "*" else 8,
                linestyle="none",
                label=f"{name}: floor {f:g}, quiet {q:g} s",
            )
    if marks:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(marks), fontsize=8)
    fig.colorbar(image, ax=axes, label="beats", ticks=range(0, top + 1, max(1, top // 10)))
    return fig


def plot_tradeoff(result: SweepResult) -> Figure:
    """Beats cut short or stalled against the latency added after the last word, one series per floor."""
    fig = _figure(figsize=(8, 4.8), layout="constrained")
    ax = fig.subplots()
    markers = "osD^vP*Xh<>"
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    for i, f in enumerate(result.floors):
        pts = [p for p in result.points if p.floor == f and p.latency_mean_s is not None]
        if not pts:
            continue
        ax.plot(
            [float(p.latency_mean_s or 0.0) for p in pts],
            [p.n_failed for p in pts],
            marker=markers[i % len(markers)],
            markersize=4,
            linewidth=0.8,
            color=cmap(i / max(1, len(result.floors) - 1)),
            label=f"floor {f:g}",
        )
    front = [p for p in result.pareto if p.latency_mean_s is not None]
    ax.plot(
        [float(p.latency_mean_s or 0.0) for p in front],
        [p.n_failed for p in front],
        color="tab:red",
        linewidth=2,
        alpha=0.5,
        label="Pareto front",
    )
    floor, quiet, _ = result.recommended
    point = None if floor is None or quiet is None else result.point(floor, quiet)
    if point is not None and point.latency_mean_s is not None:
        ax.plot(
            point.latency_mean_s,
            point.n_failed,
            marker="*",
            color="black",
            markersize=14,
            linestyle="none",
            label=f"recommended: floor {floor:g}, quiet {quiet:g} s",
        )
    ax.set_xlabel("mean latency added after the last word (s per beat)")
    ax.set_ylabel("beats cut short or stalled")
    ax.set_title("talking over the guide, or stalling the tour, vs making every stop drag")
    fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="outside right upper")
    return fig


def _to_db(x: float) -> float:
    return _DB_FLOOR if x <= 0 else max(20 * float(np.log10(x)), _DB_FLOOR)


def plot_evidence(derivation: Derivation) -> Figure:
    """What a recommendation rests on: each recording's levels and window, and the narration gaps.

    Left: per recording, the spread of its speech levels (box p5..p95,
    whiskers p1..p99, the median) and of its silence levels, its window of
    floors (shaded), the windows' intersection and the recommended floor.
    Right: how often a narration gap is longer than x (log scale), the
    exponential tail fitted above the 75th percentile, the quiet time, the
    limit ``check`` holds gaps to (quiet time minus its margin) and the least
    room a beat leaves after its last word.
    """
    fig = _figure(figsize=(13, 0.5 * max(4, len(derivation.floor.recordings)) + 2.6), layout="constrained")
    ax_lv, ax_gap = fig.subplots(1, 2, width_ratios=[3, 2])
    f = derivation.floor
    names = [r.name for r in f.recordings]
    for y, r in enumerate(f.recordings):
        for q, colour, dy in ((r.speech_quantiles, "tab:blue", 0.17), (r.noise_quantiles, "0.45", -0.17)):
            if not q:
                continue
            lo, hi = _to_db(q["p5"]), _to_db(q["p95"])
            ax_lv.broken_barh([(lo, max(hi - lo, 0.2))], (y + dy - 0.12, 0.24), color=colour, alpha=0.75)
            ax_lv.plot([_to_db(q["p1"]), _to_db(q["p99"])], [y + dy] * 2, color=colour, linewidth=1)
            ax_lv.plot([_to_db(q["p50"])] * 2, [y + dy - 0.14, y + dy + 0.14], color="black", linewidth=1.2)
        if r.window is not None:
            ax_lv.fill_betweenx(
                [y - 0.42, y + 0.42],
                _to_db(r.window[0]),
                _to_db(r.window[1]),
                color="tab:green",
                alpha=0.15,
                linewidth=0,
            )
        status = "no window" if r.window is None else ("outside" if r.name in f.outside else "")
        if status:
            ax_lv.text(1.0, y, f" {status}", transform=ax_lv.get_yaxis_transform(), va="center", fontsize=8)
    if f.window is not None:
        ax_lv.axvspan(_to_db(f.window[0]), _to_db(f.window[1]), color="tab:green", alpha=0.12, label="floors for all")
    if f.floor is not None:
        ax_lv.axvline(
            _to_db(f.floor), color="tab:red", linewidth=1.5, label=f"floor {f.floor:g} ({_to_db(f.floor):.1f} dBFS)"
        )
    ax_lv.plot([], [], color="tab:blue", linewidth=6, alpha=0.75, label="speech p5..p95 (p1..p99)")
    ax_lv.plot([], [], color="0.45", linewidth=6, alpha=0.75, label="silence p5..p95 (p1..p99)")
    ax_lv.fill_between([], [], color="tab:green", alpha=0.3, label="its window of floors")
    ax_lv.set_yticks(range(len(names)), [plain_text(n) for n in names], fontsize=8, **_LITERAL)
    ax_lv.set_ylim(-0.6, len(names) - 0.4)
    ax_lv.invert_yaxis()
    ax_lv.set_xlabel("level (dBFS)")
    ax_lv.set_title("levels per recording, and the floors that separate speech from noise", fontsize=10)
    ax_lv.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12), ncols=3, frameon=False)

    g = derivation.gaps
    gaps = np.sort(np.asarray(g.gaps_s, dtype=np.float64))
    if gaps.size:
        survival = 1.0 - np.arange(gaps.size) / gaps.size
        ax_gap.step(
            gaps, survival, where="post", color="tab:blue", label=f"narration gaps >= {g.min_gap_s:g} s (n={gaps.size})"
        )
        u = float(np.percentile(gaps, 75))
        excess = gaps[gaps > u] - u
        if excess.size >= 5 and excess.mean() > 0:
            x = np.linspace(u, max(gaps[-1], g.quiet_s or u) * 1.1, 100)
            ax_gap.plot(
                x,
                excess.size / gaps.size * np.exp(-(x - u) / excess.mean()),
                color="tab:purple",
                linestyle="--",
                label="exponential tail above p75",
            )
        ax_gap.set_yscale("log")
        ax_gap.set_ylim(min(0.5 / gaps.size, 0.01), 1.2)
    else:
        ax_gap.text(0.5, 0.5, "no narration gap", transform=ax_gap.transAxes, ha="center")
    if g.quiet_s is not None:
        ax_gap.axvline(g.quiet_s, color="tab:red", linewidth=1.5, label=f"quiet time {g.quiet_s:g} s")
        ax_gap.axvline(
            g.quiet_s - g.quiet_margin_s, color="tab:red", linestyle=":", label=f"quiet - margin {g.quiet_margin_s:g} s"
        )
    if g.room_s is not None and np.isfinite(g.room_s):
        ax_gap.axvline(g.room_s, color="black", linestyle="-.", label=f"least room after a last word {g.room_s:.2f} s")
    ax_gap.set_xlabel("gap (s)")
    ax_gap.set_ylabel("share of gaps longer")
    ax_gap.set_title("narration gaps, the quiet time and its limits", fontsize=10)
    ax_gap.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0, -0.12), ncols=2, frameon=False)
    fig.suptitle(plain_text(f"{derivation.group}: {len(derivation.recordings)} recordings"), fontsize=11, **_LITERAL)
    return fig
