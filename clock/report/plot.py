"""Plots: a recording as the clock saw it, and the sweep's heatmap and trade-off.

matplotlib is imported inside each function (never at module import), and
no function touches pyplot's global state: each makes its own Figure and
returns it (save it with ``fig.savefig(path)``).
"""

from __future__ import annotations

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

__all__ = ["plot_evidence", "plot_recording", "plot_sweep_heatmap", "plot_tradeoff", "save_figure"]

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


def save_figure(fig: Figure, path: Any, *, fmt: str | None = None) -> None:
    """Save with no timestamps in the file, so reruns give the same bytes."""
    kind = (fmt or str(path).rsplit(".", 1)[-1]).lower()
    metadata = {"Software": None} if kind == "png" else {"Date": None, "Creator": None} if kind == "svg" else {}
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
    ax_wave.set_title(title or "recording")

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
                ax_wave.annotate(e.kind, (e.t_s, 0.95), rotation=90, fontsize=7, va="top", ha="right", color=colour)
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


def _grid_position(values: Sequence[float], x: float) -> float:
    """Where ``x`` falls on an axis of grid indices (fractional between points, clamped to the ends)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 1:
        return 0.0
    return float(np.interp(x, v, np.arange(v.size)))


def plot_sweep_heatmap(result: SweepResult, *, committed: tuple[float, float] | None = None) -> Figure:
    """Premature ends and stalls (with missed onsets) per (floor, quiet), counts in the cells, settings marked.

    Parameters
    ----------
    result : SweepResult
    committed : (floor, quiet_s), optional
        The committed setting, marked with a diamond.
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
        marks.append(("committed", committed[0], committed[1], "D", "tab:green"))
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
    ax_lv.set_yticks(range(len(names)), names, fontsize=8)
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
    fig.suptitle(f"{derivation.group}: {len(derivation.recordings)} recordings", fontsize=11)
    return fig
