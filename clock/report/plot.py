"""Every figure: a recording as the clock saw it and its beats, derive's evidence and rules, the sweep's heatmap
and trade-off, the endpointers compared, the stress margins; and how a figure is saved (reproducible bytes).

matplotlib is imported inside each function (never at module import), and
no function touches pyplot's global state: each makes its own Figure and
returns it (save it with :func:`save_figure` for reproducible bytes).

Text that comes from the user (event types, file names) is drawn as it is:
never parsed as mathtext or LaTeX (``$x$`` stays ``$x$``), cut to
:data:`MAX_TEXT_CHARS`, with control characters shown as U+FFFD.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..core.beats import Beat
from ..core.compare import LEVEL_CLOCK, EndpointerResult
from ..core.events import EventLog
from ..core.levels import LevelTrace
from ..core.model import MIN_GAP_S
from ..core.recommend.evidence import Derivation, FloorEvidence, GapEvidence
from ..core.recommend.rule_evidence import RuleEvidence
from ..core.replay import DONE, SPEAKING, WAITING, Replay
from ..core.segments import Segmentation
from ..core.stress import StressResult, held_text
from ..core.sweep import SweepResult
from .text import outside_grid

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "MAX_TEXT_CHARS",
    "OUTCOME_STYLE",
    "beat_outcome",
    "mmss",
    "plain_text",
    "plot_beat_timeline",
    "plot_evidence",
    "plot_recording",
    "plot_rules",
    "plot_stress",
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

#: A long recording is drawn from at most this many min/max bins per series (far more than a figure has pixels).
MAX_PLOT_BINS = 10_000


def _bins(
    t: NDArray[np.float64], lows: NDArray[Any], highs: NDArray[Any], start: float, end: float
) -> tuple[NDArray[np.float64], NDArray[Any], NDArray[Any]]:
    """``(t, lows, highs)`` within ``[start, end]``, as at most :data:`MAX_PLOT_BINS` min/max bins.

    A series short enough is returned as it is (the same figure as ever);
    a longer one is the min of ``lows`` and the max of ``highs`` in equal
    bins, each at its first time, so memory and drawing time stay bounded
    whatever the recording's length.
    """
    i0 = max(0, int(np.searchsorted(t, start, "left")) - 1)
    i1 = min(t.size, int(np.searchsorted(t, end, "right")) + 1)
    if i1 - i0 <= 2 * MAX_PLOT_BINS:
        return t, lows, highs
    edges = np.linspace(i0, i1, MAX_PLOT_BINS + 1).astype(np.int64)[:-1]
    return t[edges], np.minimum.reduceat(lows[i0:i1], edges - i0), np.maximum.reduceat(highs[i0:i1], edges - i0)


def _zigzag(
    t: NDArray[np.float64], y: NDArray[np.float64], start: float, end: float
) -> tuple[NDArray[Any], NDArray[Any]]:
    """A line through ``y`` over ``t`` drawn from bounded min/max bins (min then max in each bin)."""
    bt, lo, hi = _bins(t, y, y, start, end)
    if bt is t:
        return t, y
    return np.repeat(bt, 2), np.column_stack([lo, hi]).ravel()


def _writable_config() -> None:
    """Before matplotlib's first import: a temporary MPLCONFIGDIR when its usual one cannot be made.

    matplotlib prints four lines when the user's home is not writable; a
    folder of our own (removed at exit) keeps stderr to our one-line messages.
    """
    if "matplotlib" in sys.modules or os.environ.get("MPLCONFIGDIR"):
        return
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    folder = os.path.join(base, "matplotlib")
    try:
        os.makedirs(folder, exist_ok=True)
        if os.access(folder, os.W_OK):
            return
    except OSError:
        pass
    import atexit
    import shutil
    import tempfile

    temp = tempfile.mkdtemp(prefix="speechclock-matplotlib-")
    atexit.register(shutil.rmtree, temp, True)
    os.environ["MPLCONFIGDIR"] = temp
    # A new folder has no font cache: matplotlib builds it, and says so when that takes more than 5 s (a loaded
    # machine), a line of its own on our stderr for a folder that is ours.
    import logging

    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)


# Acknowledgments are pink: orange and red mean a gap near or past the quiet time's limit.
_ACK_COLOUR = "tab:pink"

#: How each beat outcome is drawn: (colour, marker). Failures are red.
OUTCOME_STYLE: dict[str, tuple[str, str]] = {
    "ok": ("tab:green", "o"),
    "premature": ("tab:red", "X"),
    "stalled": ("tab:red", "s"),
    "missed-onset": ("tab:red", "v"),
    # Not the setting's doing (clock.core.outcome.WORLD_ENDED): never red.
    "outpaced": ("tab:purple", "P"),
    "aborted": ("tab:purple", "D"),
    "superseded": ("tab:purple", "^"),
    "recording-ended": ("tab:purple", ">"),
    "silent": ("0.5", "o"),
    "no-speech": ("0.5", "o"),
    "unheard": ("0.5", "o"),
}


def beat_outcome(beat: Beat) -> str:
    """The outcome a figure shows for a beat (the one place figures read a beat's verdict from)."""
    return beat.outcome


def _outcome_style(outcome: str) -> tuple[str, str]:
    return OUTCOME_STYLE.get(outcome, ("0.5", "o"))


def _beat_name(index: int) -> str:
    """A beat as the figures name it (the tables' numbering, from 1; ``index`` counts from 0)."""
    return f"beat {index + 1}"


def _figure(**kwargs: Any) -> Figure:
    _writable_config()
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def plain_text(text: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """User text as a plot shows it: control characters as U+FFFD, at most ``max_chars``."""
    text = _UNDRAWABLE.sub("\ufffd", text)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "\u2026"


#: The PNG text key that holds :func:`figure_data_digest` (``make figures``' pictures are tested against it).
DATA_DIGEST_KEY = "speechclock-data"


def figure_data_digest(fig: Figure) -> str:
    """SHA-256 of what a figure draws, whatever draws it: every axes' lines, collections, patches and images (their
    data, to 9 decimals) and its texts (title, labels, annotations, legend). Not its pixels: a figure drawn from the
    same data by another matplotlib or with other fonts has the same digest."""
    import hashlib

    digest = hashlib.sha256()

    def put(tag: str, values: Any) -> None:
        digest.update(tag.encode())
        if isinstance(values, str):
            digest.update(values.encode())
        else:
            data = np.ma.filled(np.ma.asarray(values, dtype=np.float64), np.nan)
            digest.update(str(data.shape).encode() + np.round(data, 9).tobytes())

    for text in fig.texts:
        put("figtext", text.get_text())
    for ax in fig.axes:
        put("axes", f"{ax.get_title()}|{ax.get_xlabel()}|{ax.get_ylabel()}|{ax.get_xscale()}|{ax.get_yscale()}")
        for line in ax.get_lines():
            put("line", line.get_xydata())
        for collection in ax.collections:
            put("offsets", collection.get_offsets())
            array = collection.get_array()
            if array is not None:
                put("array", array)
            for path in collection.get_paths():
                put("path", path.vertices)
        for patch in ax.patches:
            put("patch", patch.get_path().vertices)
            put("patch-at", patch.get_patch_transform().get_matrix())
        for image in ax.images:
            put("image", image.get_array())
        for text in ax.texts:
            put("text", f"{text.get_text()}|{text.get_position()}")
        legend = ax.get_legend()
        if legend is not None:
            for text in legend.get_texts():
                put("legend", text.get_text())
    return digest.hexdigest()


def save_figure(fig: Figure, path: Any, *, fmt: str | None = None) -> None:
    """Save with no timestamps and fixed ids in the file, so reruns give the same bytes.

    PNG without the Software stamp (and with :func:`figure_data_digest` under
    :data:`DATA_DIGEST_KEY`), SVG without a date and with ids from a fixed
    salt (``svg.hashsalt``), PDF without a creation date. A glyph the font
    lacks is drawn as a box, without a warning.
    """
    _writable_config()
    import matplotlib

    kind = (fmt or str(path).rsplit(".", 1)[-1]).lower()
    metadata = {
        "png": {"Software": None, DATA_DIGEST_KEY: figure_data_digest(fig)},
        "svg": {"Date": None, "Creator": None},
        "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
    }.get(kind, {})
    with matplotlib.rc_context({"svg.hashsalt": "speechclock"}), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support", category=UserWarning)
        engine = fig.get_layout_engine()
        if engine is None or kind != "png" or matplotlib.rcParams["savefig.dpi"] != "figure":
            fig.savefig(path, format=kind, metadata=metadata)
            return
        # With a layout engine, savefig draws the figure twice: once with rendering disabled (to lay it out), then
        # for real. A PNG at the figure's dpi is laid out by the figure's own Agg renderer, the same text extents
        # as the one savefig makes: laid out here, its positions then fixed, it is drawn once (the same bytes).
        engine.execute(fig)
        fig.set_layout_engine(None)
        try:
            fig.savefig(path, format=kind, metadata=metadata)
        finally:
            fig.set_layout_engine(engine)


def _db(level: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.maximum(20 * np.log10(level), _DB_FLOOR)


def mmss(x: float, _pos: Any = None, *, decimals: int = 0) -> str:
    """Seconds as ``m:ss`` (``h:mm:ss`` past an hour; ``m:ss.s`` with ``decimals``), for time axes."""
    sign = "-" if x < 0 else ""
    scale = 10**decimals
    units = int(round(abs(x) * scale))
    total, frac = divmod(units, scale)
    h, rest = divmod(total, 3600)
    m, sec = divmod(rest, 60)
    tail = f".{frac:0{decimals}d}" if decimals else ""
    return f"{sign}{h}:{m:02d}:{sec:02d}{tail}" if h else f"{sign}{m}:{sec:02d}{tail}"


def _time_axis(ax: Any, lo: float, hi: float, label: str = "time") -> None:
    """One time format on every axis: ``m:ss``, with tenths when the ticks fall closer than a second."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    locator = MaxNLocator(nbins=12, steps=[1, 2, 5, 10])
    step = float(np.diff(locator.tick_values(lo, hi)[:2])[0]) if hi > lo else 1.0
    decimals = 0 if step >= 1 - 1e-9 else 1 if step >= 0.1 - 1e-9 else 2
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _p: mmss(x, decimals=decimals)))
    ax.set_xlabel(f"{label} (m:ss)")


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


# Gap numbers in a darker shade of their colour, on a white box: readable on any fill.
_TEXT_SHADE = {"tab:green": "darkgreen", "tab:orange": "#a04f00", "tab:red": "darkred"}
_LABEL_BOX: dict[str, Any] = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}


def _gap_label(ax: Any, x: float, y: float, text: str, colour: str, **kwargs: Any) -> Any:
    return ax.text(x, y, text, color=_TEXT_SHADE.get(colour, colour), bbox=_LABEL_BOX, **kwargs)


def _outcome_at(b: Beat) -> float:
    """Where a beat's verdict falls: the declared tick, else the beat's bound (the onset wait for a missed onset)."""
    declared = b.quiet_declared_s
    if declared is not None and declared < b.span_end_s:
        return declared
    if b.last_word_s is None and b.onset_s is None:
        return b.terminal_s
    return b.span_end_s


#: At most this many rows of event labels; past them, labels shorten to the kind's initial.
MAX_EVENT_ROWS = 10

#: Events in view past which they are not labelled one by one (a label each would cost memory and seconds).
MAX_EVENT_LABELS = 400

#: Event lines in view past which they are drawn aggregated: one line per colour and 1/MAX_EVENT_LINES of the view.
MAX_EVENT_LINES = 2000


def _event_lines(shown: Sequence[Any], lo: float, hi: float) -> tuple[list[float], list[str], str]:
    """The event lines to draw (x, colour), and the note that says how they were drawn ("" for one per event).

    Past :data:`MAX_EVENT_LINES` events in view, one line per colour in each bin of ``1/MAX_EVENT_LINES`` of the
    view where any falls (at the bin's centre), so the figure costs the same for a hundred thousand events; past
    :data:`MAX_EVENT_LABELS`, they are not labelled. The note says both.
    """
    colours = [_EVENT_COLOURS.get(e.kind, "0.5") for e in shown]
    xs = [e.t_s for e in shown]
    if len(shown) <= MAX_EVENT_LABELS:
        return xs, colours, ""
    note = f"{len(shown)} events in view: too many to label"
    if len(shown) <= MAX_EVENT_LINES:
        return xs, colours, note + " (--start/--end to zoom)"
    width = max(hi - lo, 1e-9) / MAX_EVENT_LINES
    cells: dict[tuple[int, str], None] = {}
    for x, colour in zip(xs, colours):
        cells.setdefault((min(int((x - lo) / width), MAX_EVENT_LINES - 1), colour), None)
    ordered = sorted(cells)
    return (
        [lo + (i + 0.5) * width for i, _ in ordered],
        [colour for _, colour in ordered],
        note + f"; drawn aggregated, one line per {width:.3g} s where any falls (--start/--end to zoom)",
    )


def _event_labels(events: EventLog | None, lo: float, hi: float) -> list[tuple[float, str, str, int]]:
    """Every event line in view, labelled: (x, text, colour, row), rows staggered so no two labels collide.

    Terminal responses come first, "terminal N" where every one fits in two rows, else the beat's number
    alone; the other events (prompts, arrivals, pauses, resumes, end, tool calls, ...) fill the rows above,
    by name, or by their initial where no row of the :data:`MAX_EVENT_ROWS` has room for the name.
    """
    if events is None:
        return []
    char = max(hi - lo, 1e-9) * 0.0065
    terminals = [(n, e) for n, e in enumerate(events.terminals) if lo <= e.t_s <= hi]
    xs = [e.t_s for _, e in terminals]
    texts = [f"terminal {_beat_name(n).split()[-1]}" for n, _ in terminals]
    rows_t = _stagger(xs, [char * (len(x) + 1) for x in texts], 2)
    if None in rows_t:
        texts = [_beat_name(n).split()[-1] for n, _ in terminals]
        rows_t = _stagger(xs, [char * (len(x) + 1.5) for x in texts], MAX_EVENT_ROWS // 2)
    placed = [r if r is not None else i % (MAX_EVENT_ROWS // 2) for i, r in enumerate(rows_t)]
    used = max(placed, default=-1) + 1
    out = [(x, text, _EVENT_COLOURS["terminal"], row) for x, text, row in zip(xs, texts, placed)]
    free = max(1, MAX_EVENT_ROWS - used)
    ends = [-np.inf] * free
    for i, e in enumerate(ev for ev in events.events if lo <= ev.t_s <= hi and ev.kind != "terminal"):
        # By name in the lowest free row; by initial where no row has room for the name.
        found: int | None = None
        for name in (e.kind, e.kind[:1]):
            w = char * (len(name) + 1)
            found = next((r for r in range(free) if ends[r] < e.t_s - w / 2), None)
            if found is not None:
                break
        at = i % free if found is None else found
        ends[at] = max(ends[at], e.t_s + w / 2)
        out.append((e.t_s, name, _EVENT_COLOURS.get(e.kind, "0.5"), used + at))
    return out


def plot_recording(
    trace: LevelTrace,
    *,
    floor: float,
    segmentation: Segmentation,
    envelope: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None = None,
    events: EventLog | None = None,
    beats: Sequence[Beat] = (),
    replay: Replay | None = None,
    min_gap_s: float = MIN_GAP_S,
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
    lo = 0.0 if start_s is None else start_s
    hi = (float(trace.t_s[-1]) if trace.n_ticks else 1.0) if end_s is None else end_s
    strip = _event_strip(events, lo, hi)
    heights = [max(0.55, 0.3 + 0.1 * strip.n_rows), 1.0, 2.2] + ([0.35, 1.1] if replay is not None else [])
    fig = _figure(figsize=(13, 1.35 * sum(heights) + 1.4), layout="constrained")
    axes = fig.subplots(len(heights), 1, sharex=True, height_ratios=heights)
    handles: dict[str, Any] = {}
    keep = handles.setdefault  # the first artist of each name, for the legend
    _draw_event_strip(axes, title, events, strip)
    _draw_waveform(axes[1], envelope, lo, hi, keep)
    _draw_level_panel(axes[2], trace, floor, derived_floor, segmentation, beats, lo, hi, keep, min_gap_s=min_gap_s,
                      quiet_s=quiet_s, quiet_margin_s=quiet_margin_s, label_gaps_s=label_gaps_s)  # fmt: skip
    if replay is not None:
        _draw_clock_state(axes[3], trace.t_s, replay, events, lo, hi, keep)
        _draw_quiet_count(axes[4], trace.t_s, replay, quiet_s, quiet_margin_s, lo, hi, keep)
    _mark_outcomes(axes[3] if replay is not None else axes[0], beats, lo, hi, keep)
    _time_axis(axes[-1], lo, hi)
    axes[-1].set_xlim(lo, hi)
    _legend(fig, handles, ncols=6)
    return fig


def _legend(fig: Figure, handles: dict[str, Any], *, ncols: int) -> None:
    """The figure's legend below its panels: each named artist once, in the order first drawn."""
    fig.legend(
        list(handles.values()), list(handles), loc="outside lower center", ncols=min(ncols, len(handles)), fontsize=7
    )


@dataclass(frozen=True, slots=True)
class EventStrip:
    """How a recording's events in view are drawn: their lines, and their labels staggered in rows.

    Attributes
    ----------
    xs : list of float
        Each line's time (s); ``colours`` its colour.
    colours : list of str
        Each line's colour.
    dense : str
        When there are too many to draw each, the note saying how they were drawn ("" otherwise).
    labels : list of (x, text, colour, row)
        The labels that found a free row.
    n_rows : int
        The label rows used.
    """

    xs: list[float]
    colours: list[str]
    dense: str
    labels: list[tuple[float, str, str, int]]
    n_rows: int


def _event_strip(events: EventLog | None, lo: float, hi: float) -> EventStrip:
    """The events between ``lo`` and ``hi`` as the strip draws them (labels only when they are not dense)."""
    shown = [] if events is None else [e for e in events.events if lo <= e.t_s <= hi]
    xs, colours, dense = _event_lines(shown, lo, hi)
    layout = [] if dense else _event_labels(events, lo, hi)
    n_rows = max((row for _, _, _, row in layout), default=-1) + 1
    return EventStrip(xs, colours, dense, layout, n_rows)


#: How a panel's drawing names an artist for the figure's legend (the first artist of each name is kept).
Keep = Callable[[str, Any], object]


def _draw_event_strip(axes: Any, title: str, events: EventLog | None, strip: EventStrip) -> None:
    """The title, and the events: a strip of their own, every line labelled, labels staggered in as many rows as
    they need, and each event's line across the other panels."""
    ax_events = axes[0]
    xs, colours, dense = strip.xs, strip.colours, strip.dense
    ax_events.set_yticks([])
    ax_events.set_ylim(0, 0.3 + 0.17 * max(strip.n_rows, 4))
    ax_events.set_title(plain_text(title or "recording", 4 * MAX_TEXT_CHARS), loc="left", fontsize=10, **_LITERAL)
    for side in ("left", "right", "top"):
        ax_events.spines[side].set_visible(False)
    if events is None:
        return
    # One collection of lines per panel, however many events (one artist each would cost seconds an hour).
    if xs:
        for ax in axes[1:]:
            ax.vlines(xs, 0, 1, transform=ax.get_xaxis_transform(), colors=colours, linewidth=0.7, alpha=0.55)
        ax_events.vlines(xs, 0, 0.25, colors=colours, linewidth=1.2)
    for x, text, colour, label_row in strip.labels:
        _text(ax_events, x, 0.3 + 0.17 * label_row, text, fontsize=6.5, ha="center", va="bottom", color=colour)
    if dense:  # the figure says how its events were drawn
        ax_events.text(
            0.0, 0.45, plain_text(dense, 3 * MAX_TEXT_CHARS), **_LITERAL, transform=ax_events.transAxes, fontsize=7,
            ha="left", va="bottom",
        )  # fmt: skip


def _draw_level(
    ax: Any,
    t: NDArray[np.float64],
    level: NDArray[np.float64],
    floor: float,
    derived_floor: float | None,
    lo: float,
    hi: float,
    keep: Keep,
) -> None:
    """The level in dBFS, the floor the clock runs with, and a recommended floor beside it."""
    keep("level (dBFS)", ax.plot(*_zigzag(t, _db(level), lo, hi), color="tab:blue", linewidth=0.7)[0])
    keep(f"floor {floor:g}", ax.axhline(20 * np.log10(floor), color="tab:red", linestyle="--", linewidth=1))
    if derived_floor is not None and derived_floor > 0 and derived_floor != floor:
        keep(
            f"derived floor {derived_floor:g}",
            ax.axhline(20 * np.log10(derived_floor), color="tab:purple", linestyle=":", linewidth=1.2),
        )


def _draw_waveform(
    ax: Any,
    envelope: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None,
    lo: float,
    hi: float,
    keep: Keep,
) -> None:
    """The waveform's envelope, binned to the view."""
    if envelope is not None:
        et, emin, emax = _bins(*envelope, lo, hi)
        keep("waveform", ax.fill_between(et, emin, emax, color="0.35", linewidth=0))
    ax.set_ylabel("sample")
    ax.set_ylim(-1, 1)


def _draw_level_panel(
    ax: Any,
    trace: LevelTrace,
    floor: float,
    derived_floor: float | None,
    segmentation: Segmentation,
    beats: Sequence[Beat],
    lo: float,
    hi: float,
    keep: Keep,
    *,
    min_gap_s: float,
    quiet_s: float | None,
    quiet_margin_s: float,
    label_gaps_s: float | None,
) -> None:
    """The level panel: the level with the floors, the speech shaded, the narrations and their gaps."""
    _draw_level(ax, trace.t_s, trace.level, floor, derived_floor, lo, hi, keep)
    _draw_speech(ax, segmentation, beats, lo, hi, keep)
    limit = None if quiet_s is None else quiet_s - quiet_margin_s
    threshold = label_gaps_s if label_gaps_s is not None else (0.4 * quiet_s if quiet_s else 1.0)
    _draw_gaps(ax, beats, lo, hi, min_gap_s=min_gap_s, label_from_s=threshold, limit_s=limit)
    ax.set_ylabel("level (dBFS)")
    ax.set_ylim(_DB_FLOOR, 0)


def _draw_speech(ax: Any, segmentation: Segmentation, beats: Sequence[Beat], lo: float, hi: float, keep: Keep) -> None:
    """Speech shaded by what it is (acknowledgment, narration, other) and each narration underlined."""
    narrations = [(b.onset_s, b.last_word_s) for b in beats if b.onset_s is not None and b.last_word_s is not None]
    acks = []
    previous_end = 0.0
    for b in beats:
        if b.ack_overlap and b.ack_last_word_s is not None:
            acks.append((previous_end, b.ack_last_word_s))
        previous_end = b.span_end_s
    in_view = [seg for seg in segmentation.segments if seg.last_word_s >= lo and seg.onset_s <= hi]
    onsets = np.array([seg.onset_s for seg in in_view])
    ends = np.array([seg.last_word_s for seg in in_view])
    is_ack = _inside_any(onsets, ends, acks, 0.0)
    is_narration = ~is_ack & _inside_any(onsets, ends, narrations, 1e-9)
    for kind, colour, alpha, mask in (
        ("acknowledgment", _ACK_COLOUR, 0.4, is_ack),
        ("narration speech", "tab:green", 0.22, is_narration),
        ("other speech", "0.6", 0.22, ~is_ack & ~is_narration),
    ):
        if mask.any():
            keep(kind, _spans(ax, onsets[mask], ends[mask], color=colour, alpha=alpha, linewidth=0))
    if narrations:
        x0s, x1s = zip(*narrations)
        keep("narration", ax.hlines([_DB_FLOOR + 3] * len(x0s), x0s, x1s, color="tab:green", linewidth=4))


def _draw_gaps(
    ax: Any,
    beats: Sequence[Beat],
    lo: float,
    hi: float,
    *,
    min_gap_s: float,
    label_from_s: float,
    limit_s: float | None,
) -> None:
    """The narration gaps in view as bars coloured by how close each comes to ``limit_s``; those at least
    ``label_from_s`` long, and the three longest, labelled in two staggered rows."""
    gaps = [(at, g) for b in beats for at, g in zip(b.gap_at_s, b.quiet_gaps_s) if g >= min_gap_s and lo <= at <= hi]
    longest = sorted((g for _, g in gaps), reverse=True)[:3]
    labelled = [(at, g) for at, g in gaps if g >= label_from_s or g in longest]
    span = max(hi - lo, 1e-9)
    rows = _stagger([at + g / 2 for at, g in labelled], [span * 0.045] * len(labelled), 2)
    bars: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for (at, g), row in zip(labelled, rows):
        colour = _gap_colour(g, limit_s)
        bars.setdefault((colour, row or 0), []).append((at, at + g))
        if row is not None:
            _gap_label(ax, at + g / 2, -8 - 6 * row, f"{g:.2f} s", colour, ha="center", va="top", fontsize=7)
    for (colour, row), xs01 in bars.items():
        x0s, x1s = zip(*xs01)
        ax.hlines([-6 - 6 * row] * len(x0s), x0s, x1s, color=colour, linewidth=1.5)


def _draw_clock_state(
    ax: Any, t: NDArray[np.float64], replay: Replay, events: EventLog | None, lo: float, hi: float, keep: Keep
) -> None:
    """The replayed clock's state: waiting, speaking, each beat done, the linger after it, and paused spans."""
    state = replay.state
    for code, colour, name in ((WAITING, "gold", "waiting for speech"), (SPEAKING, "tab:green", "speaking")):
        st, _, inside = _bins(t, state == code, state == code, lo, hi)
        keep(
            name,
            ax.fill_between(st, 0, 1, where=inside, step="mid", color=colour, alpha=0.5, linewidth=0),
        )
    done = t[state == DONE]
    keep("beat done", ax.vlines(done, 0, 1, color="black", linewidth=2))
    lingers = [
        (rb.quiet_declared_s, rb.prompt_allowed_s)
        for rb in replay.beats
        if rb.quiet_declared_s is not None
        and rb.prompt_allowed_s is not None
        and rb.prompt_allowed_s > rb.quiet_declared_s
    ]
    if lingers:
        linger = np.array(lingers)
        keep("linger", _spans(ax, linger[:, 0], linger[:, 1], color="0.75", alpha=0.6, linewidth=0))
    paused = [(a, b) for a, b in _paused_spans(events, hi) if b >= lo and a <= hi and b > a]
    if paused:  # one collection, however many pauses
        p0, p1 = np.array(paused).T
        keep("paused", _spans(ax, p0, p1, facecolor="none", hatch="///", edgecolor="0.3"))
    ax.set_yticks([])
    ax.set_ylabel("clock", rotation=0, ha="right", va="center")
    ax.set_ylim(0, 1)


def _draw_quiet_count(
    ax: Any,
    t: NDArray[np.float64],
    replay: Replay,
    quiet_s: float | None,
    quiet_margin_s: float,
    lo: float,
    hi: float,
    keep: Keep,
) -> None:
    """The replayed clock's quiet count in seconds, with the quiet time and the quiet time less its margin."""
    keep("quiet count (s)", ax.plot(*_zigzag(t, replay.quiet_count_s, lo, hi), color="tab:purple", linewidth=1)[0])
    top = float(replay.quiet_count_s.max(initial=0.0))
    if quiet_s is not None:
        keep(f"quiet time {quiet_s:g} s", ax.axhline(quiet_s, color="black", linewidth=1))
        keep(
            f"quiet - margin {quiet_s - quiet_margin_s:g} s",
            ax.axhline(quiet_s - quiet_margin_s, color="black", linestyle=":", linewidth=1),
        )
        top = max(top, quiet_s)
    ax.set_ylim(0, max(1.0, top * 1.12))
    ax.set_ylabel("quiet (s)")


def _inside_any(
    starts: NDArray[np.float64], ends: NDArray[np.float64], spans: Sequence[tuple[float, float]], slack: float
) -> NDArray[np.bool_]:
    """Whether each ``[start, end]`` lies within one of ``spans`` (widened by ``slack`` before, 1e-9 after).

    Sorted once and searched: among the spans that start early enough, the
    one that ends latest decides (a prefix maximum), so it costs
    ``n log n`` where testing each interval against each span would cost
    ``n * m`` (thousands of segments and beats on a long recording).
    """
    if not spans or not starts.size:
        return np.zeros(starts.size, bool)
    order = sorted(spans)
    span_starts = np.array([x0 - slack for x0, _ in order])
    latest_end = np.maximum.accumulate(np.array([x1 + 1e-9 for _, x1 in order]))
    i = np.searchsorted(span_starts, starts, side="right") - 1
    return (i >= 0) & (latest_end[np.maximum(i, 0)] >= ends)


def _spans(ax: Any, x0s: NDArray[np.float64], x1s: NDArray[np.float64], **style: Any) -> Any:
    """Full-height spans ``[x0, x1]`` (as ``axvspan`` draws each) as one collection."""
    return ax.broken_barh(list(zip(x0s, x1s - x0s)), (0, 1), transform=ax.get_xaxis_transform(), **style)


def _mark_outcomes(ax: Any, beats: Sequence[Beat], lo: float, hi: float, keep: Any) -> None:
    """Each beat's outcome where it was decided: a marker always, its name where it fits."""
    shown = [(b, _outcome_at(b)) for b in beats if lo <= _outcome_at(b) <= hi]
    span = max(hi - lo, 1e-9)
    # A name goes right of its marker, where it covers neither the next marker nor the next name.
    nexts = [x for _, x in shown[1:]] + [hi + span]
    rows = [0 if nxt - x > span * 0.0065 * (len(beat_outcome(b)) + 4) else None for (b, x), nxt in zip(shown, nexts)]
    # One line of markers per outcome, however many beats.
    by_outcome: dict[str, list[float]] = {}
    for b, x in shown:
        by_outcome.setdefault(beat_outcome(b), []).append(x)
    for outcome, xs in by_outcome.items():
        colour, marker = _outcome_style(outcome)
        (markers,) = ax.plot(
            xs, [0.5] * len(xs), marker=marker, color=colour, markeredgecolor="black", markersize=7, linestyle="none"
        )
        keep(f"beat {outcome}", markers)
    for (b, x), row in zip(shown, rows):
        outcome = beat_outcome(b)
        colour, _ = _outcome_style(outcome)
        if row is not None:
            ax.annotate(
                outcome,
                (x, 0.5),
                xytext=(6, 0),
                textcoords="offset points",
                fontsize=7,
                va="center",
                ha="left",
                color=colour,
                fontweight="bold",
                bbox=_LABEL_BOX,
            )


def _paused_spans(events: EventLog | None, end_s: float) -> list[tuple[float, float]]:
    """The log's paused intervals (``pause`` to the next ``resume``; one never resumed lasts to ``end_s``)."""
    spans: list[tuple[float, float]] = []
    paused_at = None
    for e in () if events is None else events.of_kind("pause", "resume"):
        if e.kind == "pause" and paused_at is None:
            paused_at = e.t_s
        elif e.kind == "resume" and paused_at is not None:
            spans.append((paused_at, e.t_s))
            paused_at = None
    if paused_at is not None and paused_at < end_s:
        spans.append((paused_at, end_s))
    return spans


def plot_beat_timeline(
    beats: Sequence[Beat],
    *,
    quiet_s: float,
    quiet_margin_s: float = 0.2,
    title: str = "",
    events: EventLog | None = None,
) -> Figure:
    """One row per beat, on time since its terminal response: legible for a session of any length.

    Each row shows the wait for speech (terminal response to onset), an
    overlapping acknowledgment, the narration with its gaps coloured by how
    close each comes to ``quiet_s - quiet_margin_s``, the time the page paused
    the clock inside the beat (hatched, from ``events``), the replayed clock's
    declaration and the linger after it, and the beat's bound.
    """
    n = max(1, len(beats))
    fig = _figure(figsize=(12, 0.42 * n + 1.8), layout="constrained")
    ax = fig.subplots()
    handles: dict[str, Any] = {}
    keep = handles.setdefault  # the first artist of each name, for the legend
    right = 0.0
    end_s = max((b.span_end_s for b in beats), default=0.0)
    pauses = _paused_spans(events, end_s)
    limit = quiet_s - quiet_margin_s
    for y, b in enumerate(beats):
        right = max(right, _draw_beat_row(ax, y, b, pauses, quiet_s=quiet_s, limit_s=limit, keep=keep))
    for name, colour in (("gap near quiet - margin (80 %)", "tab:orange"), ("gap past quiet - margin", "tab:red")):
        keep(name, ax.broken_barh([(0, 0)], (0, 0), color=colour))
    ax.set_yticks(range(len(beats)), [f"{_beat_name(b.index)} ({mmss(b.terminal_s)})" for b in beats], fontsize=8)
    ax.set_ylim(len(beats) - 0.5, -0.5)
    ax.set_xlim(0, max(right, 1.0) * 1.05)
    _time_axis(ax, 0, max(right, 1.0) * 1.05, "since the terminal response")
    ax.set_title(plain_text(title or "beats", 4 * MAX_TEXT_CHARS), loc="left", fontsize=10, **_LITERAL)
    _legend(fig, handles, ncols=5)
    return fig


def _draw_beat_row(
    ax: Any, y: int, b: Beat, pauses: list[tuple[float, float]], *, quiet_s: float, limit_s: float, keep: Keep
) -> float:
    """One beat's row, on time since its terminal response; returns how far right it reaches (s)."""
    right = 0.0
    t0 = b.terminal_s
    own = [(max(a, t0), min(z, b.span_end_s)) for a, z in pauses if a < b.span_end_s and z > t0]
    if own:
        keep(
            "paused",
            ax.broken_barh(
                [(a - t0, z - a) for a, z in own], (y - 0.42, 0.84), facecolor="none", hatch="///", edgecolor="0.3",
                zorder=3,
            ),
        )  # fmt: skip
        right = max(right, max(z for _, z in own) - t0)
    if b.onset_s is not None:
        keep("waiting", ax.broken_barh([(0, b.onset_s - t0)], (y - 0.15, 0.3), color="gold", alpha=0.7))
    if b.ack_overlap and b.ack_last_word_s is not None:
        keep("acknowledgment", ax.broken_barh([(0, b.ack_last_word_s - t0)], (y - 0.3, 0.18), color=_ACK_COLOUR))
    if b.onset_s is not None and b.last_word_s is not None:
        _draw_narration(ax, y, b, quiet_s=quiet_s, limit_s=limit_s, keep=keep)
        right = max(right, b.last_word_s - t0)
    declared = b.quiet_declared_s
    if declared is not None:
        keep("beat done (replay)", ax.plot([declared - t0] * 2, [y - 0.4, y + 0.4], color="black", linewidth=2)[0])
        if b.linger_s:
            keep("linger", ax.broken_barh([(declared - t0, b.linger_s)], (y - 0.1, 0.2), color="0.6"))
        right = max(right, declared - t0 + (b.linger_s or 0))
    keep("bound", ax.plot([b.span_end_s - t0] * 2, [y - 0.45, y + 0.45], color="tab:blue", linestyle=":")[0])
    outcome = beat_outcome(b)
    colour, marker = _outcome_style(outcome)
    keep(
        f"beat {outcome}",
        ax.plot(
            1.012, y, marker=marker, color=colour, markeredgecolor="black", linestyle="none",
            transform=ax.get_yaxis_transform(), clip_on=False,
        )[0],
    )  # fmt: skip
    ax.text(1.025, y, outcome, transform=ax.get_yaxis_transform(), fontsize=8, va="center", color=colour)
    return right


def _draw_narration(ax: Any, y: int, b: Beat, *, quiet_s: float, limit_s: float, keep: Keep) -> None:
    """A beat's narration bar, its gaps coloured by how close each comes to ``limit_s``, the long ones labelled."""
    assert b.onset_s is not None and b.last_word_s is not None
    t0 = b.terminal_s
    keep(
        "narration",
        ax.broken_barh([(b.onset_s - t0, b.last_word_s - b.onset_s)], (y - 0.3, 0.6), color="tab:green", alpha=0.45),
    )
    for at, g in zip(b.gap_at_s, b.quiet_gaps_s):
        colour = _gap_colour(g, limit_s)
        ax.broken_barh([(at - t0, g)], (y - 0.3, 0.6), color=colour, alpha=0.9 if colour != "tab:green" else 0.0)
        if g >= 0.4 * quiet_s:
            _gap_label(ax, at - t0 + g / 2, y, f"{g:.2f} s", colour, fontsize=6.5, ha="center", va="center")


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
        (
            "stalls and missed onsets",
            result.matrix("n_stalled") + result.matrix("n_missed_onset"),
        ),
    )
    top = int(max(1, *(np.nanmax(m) if m.size else 0 for _, m in panels)))
    bounds = np.arange(-0.5, top + 1.5, 1.0)
    norm = BoundaryNorm(bounds, 256)
    image: Any = None
    for ax, (title, m) in zip(axes, panels):
        image = ax.imshow(m, origin="lower", aspect="auto", cmap="magma_r", norm=norm)
        if m.size <= 600:
            _write_counts(ax, m, top)
        # Unrotated tick labels: every k-th quiet time, as many as fit side by side.
        k = max(1, int(np.ceil(len(result.quiets_s) / 12)))
        ticks = range(0, len(result.quiets_s), k)
        ax.set_xticks(list(ticks), [f"{result.quiets_s[j]:g}" for j in ticks], fontsize=8)
        ax.set_xlabel("quiet time (s)")
        ax.set_title(f"{title} (beats), {result.n_recordings} recordings", fontsize=10)
    k = max(1, int(np.ceil(len(result.floors) / 16)))
    ticks = range(0, len(result.floors), k)
    axes[0].set_yticks(list(ticks), [f"{result.floors[i]:g}" for i in ticks], fontsize=8)
    axes[0].set_ylabel("floor (RMS)")
    floor, quiet, _ = result.recommended
    marks = []
    if floor is not None and quiet is not None:
        marks.append(("recommended", floor, quiet, "*", "tab:cyan"))
    if committed is not None:
        marks.append((committed_label, committed[0], committed[1], "s", "tab:green"))
    for ax in axes:
        for name, f, q, marker, colour in marks:
            _mark_cell(ax, result, name, f, q, marker=marker, colour=colour)
    if marks:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(marks), fontsize=8)
    fig.colorbar(image, ax=axes, label="beats", ticks=range(0, top + 1, max(1, top // 10)))
    return fig


def _write_counts(ax: Any, m: NDArray[np.float64], top: float) -> None:
    """Each cell's count in it, as large as a cell allows (a panel is about 4.4 in by 3.6 in), never below 6 pt."""
    cell_pt = min(4.4 * 72 / max(1, m.shape[1]), 3.6 * 72 / max(1, m.shape[0]))
    size = float(np.clip(cell_pt * 0.45, 6, 10))
    for (i, j), v in np.ndenumerate(m):
        if not np.isnan(v):
            ax.text(
                j, i, f"{int(v)}", ha="center", va="center", fontsize=size, fontweight="bold",
                color="white" if v > top / 2 else "black",
            )  # fmt: skip


def _mark_cell(ax: Any, result: SweepResult, name: str, f: float, q: float, *, marker: str, colour: str) -> None:
    """A setting on the heatmap: the committed cell (``marker`` ``s``) outlined, so its count stays readable; the
    recommendation a marker in its cell's upper right corner, clear of the count; each with its legend entry."""
    from matplotlib.patches import Rectangle

    x, y = _grid_position(result.quiets_s, q), _grid_position(result.floors, f)
    label = f"{name}: floor {f:g}, quiet {q:g} s"
    if outside := outside_grid(result, f, q):  # drawn at the grid's edge, which is not it: said so
        label = plain_text(f"{label}, drawn at the grid's edge: {outside}", 2 * MAX_TEXT_CHARS)
    if marker == "s":
        ax.add_patch(Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor=colour, linewidth=2.5))
        ax.plot(
            [], [], marker="s", markerfacecolor="none", markeredgecolor=colour, markeredgewidth=2.5, markersize=10,
            linestyle="none", label=label,
        )  # fmt: skip
    else:
        ax.plot(
            x + 0.3, y + 0.28, marker=marker, color=colour, markeredgecolor="black", markersize=9, linestyle="none",
            label=label,
        )  # fmt: skip


def _nearest_point(result: SweepResult, floor: float, quiet_s: float) -> Any:
    """The sweep's point at a setting, or the grid point nearest it (floors compared in dB)."""
    exact = result.point(floor, quiet_s)
    if exact is not None or not result.points or floor <= 0:
        return exact
    return min(
        result.points,
        key=lambda p: abs(20 * np.log10(max(p.floor, 1e-12) / floor)) / 3 + abs(p.quiet_s - quiet_s) / 0.1,
    )


def plot_tradeoff(
    result: SweepResult, *, committed: tuple[float, float] | None = None, committed_label: str = "committed"
) -> Figure:
    """Beats cut short or stalled against the latency added after the last word, one series per floor.

    Floors whose series are identical share one line (named by all of them);
    the remaining lines are drawn slightly apart vertically, upwards only (a
    count is never drawn below 0), so none hides another. The recommended
    setting is a star and the committed one a diamond, each drawn with its
    own series' offset (at the nearest grid point when a setting is not on
    the grid: ``report`` puts both on its grid); their legend markers stay small.

    Parameters
    ----------
    result : SweepResult
    committed : (floor, quiet_s), optional
    committed_label : str
        Its name in the legend (``candidate`` for one given on the command line).
    """
    fig = _figure(figsize=(9, 5.2), layout="constrained")
    ax = fig.subplots()
    dodge, offsets = _draw_floor_series(ax, result)
    front = [p for p in result.pareto if p.latency_mean_s is not None]
    ax.plot(
        [float(p.latency_mean_s or 0.0) for p in front],
        [p.tally.n_failed for p in front],
        color="tab:red",
        linewidth=5,
        alpha=0.25,
        label="Pareto front",
        zorder=1,
    )
    floor, quiet, _ = result.recommended
    marks = [] if floor is None or quiet is None else [("recommended", floor, quiet, "*", "black", 16)]
    if committed is not None:
        marks.append((committed_label, committed[0], committed[1], "D", "tab:green", 15))
    for name, f, q, marker, colour, size in marks:
        _mark_setting(ax, result, name, f, q, marker=marker, colour=colour, size=size, offsets=offsets)
    ax.set_xlabel("mean latency added after the last word (s per beat)")
    ax.set_ylabel("beats cut short or stalled" + (" (floors drawn slightly apart, upwards)" if dodge else ""))
    ax.set_ylim(bottom=-0.4)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("talking over the guide, or stalling the tour, vs making every stop drag", fontsize=10)
    fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="outside lower center", ncols=3)
    return fig


def _draw_floor_series(ax: Any, result: SweepResult) -> tuple[float, dict[float, float]]:
    """One line per floor (floors whose series are identical share one), drawn apart upwards; returns the step
    between lines and each floor's offset."""
    from matplotlib import colormaps

    markers = "osD^vP*Xh<>"
    cmap = colormaps["viridis"]
    series: dict[tuple[tuple[float, int], ...], list[float]] = {}
    for f in result.floors:
        pts = [p for p in result.points if p.floor == f and p.latency_mean_s is not None]
        if pts:
            series.setdefault(tuple((float(p.latency_mean_s or 0.0), p.tally.n_failed) for p in pts), []).append(f)
    n = len(series)
    dodge = 0.0 if n <= 1 else min(0.08, 0.4 / n)
    offsets: dict[float, float] = {}
    for i, (xy, floors) in enumerate(series.items()):
        name = f"floor {floors[0]:g}" if len(floors) == 1 else "floors " + ", ".join(f"{f:g}" for f in floors)
        offset = i * dodge  # upwards from the true count: a count of 0 is never drawn below 0
        offsets.update((f, offset) for f in floors)
        ax.plot(
            [x for x, _ in xy],
            [y + offset for _, y in xy],
            marker=markers[i % len(markers)],
            markersize=4,
            linewidth=1.0,
            color=cmap(i / max(1, n - 1)),
            label=plain_text(name, 2 * MAX_TEXT_CHARS),
        )
    return dodge, offsets


def _mark_setting(
    ax: Any,
    result: SweepResult,
    name: str,
    f: float,
    q: float,
    *,
    marker: str,
    colour: str,
    size: float,
    offsets: dict[float, float],
) -> None:
    """A setting on the trade-off plot, at its grid point (or the nearest) with its series' offset, and its small
    legend marker; a setting off the grid is not drawn, and its legend entry says so."""
    point = _nearest_point(result, f, q)
    if point is None or point.latency_mean_s is None:
        return
    outside = outside_grid(result, f, q)
    if outside:  # not drawn on a grid point it is not (which may fail where it does not): the legend says so
        ax.plot([], [], marker=marker, color=colour, markeredgecolor="black", markerfacecolor="none",
                markersize=8, linestyle="none", label=plain_text(f"{name}: floor {f:g}, quiet {q:g} s, not drawn: "
                f"{outside}", 2 * MAX_TEXT_CHARS))  # fmt: skip
        return
    where = (
        "" if (point.floor, point.quiet_s) == (f, q) else f" (nearest grid point {point.floor:g}, {point.quiet_s:g} s)"
    )
    style: dict[str, Any] = dict(
        marker=marker,
        color=colour,
        markeredgecolor="black" if marker == "*" else colour,
        markerfacecolor=colour if marker == "*" else "none",
        markeredgewidth=1.2 if marker == "*" else 2,
        linestyle="none",
    )
    y = point.tally.n_failed + offsets.get(point.floor, 0.0)
    ax.plot(point.latency_mean_s, y, markersize=size, zorder=5, **style)
    # The legend's marker: the same, small (a proxy drawn nowhere).
    ax.plot([], [], markersize=8, label=f"{name}: floor {f:g}, quiet {q:g} s{where}", **style)


def plot_rules(evidence: RuleEvidence) -> Figure:
    """Each rule's failures and its dead air per beat, side by side (the rules table of ``derive``).

    Left: beats each rule fails, by cause (premature, stalled, missed onset,
    no provider event). Right: the dead air of every beat it ends right, one
    dot per beat, with the median marked; the level clock's median as a line.

    Parameters
    ----------
    evidence : RuleEvidence
        ``Derivation.rules``.
    """
    fig = _figure(figsize=(10, 4.2), layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True, width_ratios=(1, 2))
    results = evidence.results
    names = [plain_text(r.rule.label) for r in results]
    y = np.arange(len(results))[::-1]
    causes = (
        ("premature", "n_premature", "tab:red"),
        ("stalled", "n_stalled", "tab:orange"),
        ("missed onset", "n_missed_onset", "tab:purple"),
        ("no provider event", "n_no_event", "0.5"),
    )
    start = np.zeros(len(results))
    for label, field, colour in causes:
        n = np.array([getattr(r.tally, field) for r in results], np.float64)
        left.barh(y, n, left=start, color=colour, label=label, height=0.6)
        start += n
    for yi, r in zip(y, results):
        left.text(
            start[list(y).index(yi)] + 0.1, yi, f"{r.tally.n_failed} of {r.tally.n_beats}", va="center", fontsize=7
        )
    left.set_yticks(y, names, fontsize=8)
    left.set_xlabel("beats failed")
    left.set_xlim(0, max(1.0, float(start.max()) * 1.3 + 1))
    left.legend(fontsize=7, loc="lower right")
    rng = np.random.default_rng(0)  # a fixed jitter: the same figure every run
    for yi, r in zip(y, results):
        air = np.array([c.dead_air_s for c in r.beats if c.dead_air_s is not None], np.float64)
        if not air.size:
            continue
        right.plot(air, yi + rng.uniform(-0.2, 0.2, air.size), "o", markersize=3, alpha=0.6, color="tab:blue")
        median = float(np.median(air))
        right.plot([median, median], [yi - 0.3, yi + 0.3], color="black", linewidth=2)
        right.text(median, yi + 0.33, f"median {median:.2f} s", fontsize=7, ha="center")
    level = evidence.level.dead_air.median_s
    if level is not None:
        right.axvline(level, color="tab:green", linestyle="--", linewidth=1, label=f"level clock {level:.2f} s")
        right.legend(fontsize=7, loc="lower right")
    right.set_xlabel("dead air: last word to the declaration (s), beats ended right")
    right.set_xlim(left=0)
    fig.suptitle(
        f"rules replayed on the same beats (floor {evidence.floor:g}); the provider's event in "
        f"{evidence.n_with_event} of {evidence.n_beats_with_speech} beats",
        fontsize=10,
    )
    return fig


def _to_db(x: float) -> float:
    return _DB_FLOOR if x <= 0 else max(20 * float(np.log10(x)), _DB_FLOOR)


def plot_evidence(
    derivation: Derivation, *, committed_floor: float | None = None, committed_label: str = "committed"
) -> Figure:
    """What a recommendation rests on: each recording's levels and window, and the narration gaps.

    Left: per recording, the spread of its speech levels (box p5..p95,
    whiskers p1..p99, the median) and of its silence levels, its window of
    floors (shaded), the windows' intersection and the recommended floor.
    Right: how often a narration gap is longer than x (log scale), the
    exponential tail fitted above the 75th percentile, the quiet time, the
    limit ``check`` holds gaps to (quiet time minus its margin) and the least
    room a beat leaves after its last word.

    ``committed_floor`` (named ``committed_label``: ``candidate`` for one given
    on the command line) is drawn beside the recommendation. A level of exact
    digital zero has no dBFS; it is drawn at -100 dBFS, and the axis says so.
    """
    fig = _figure(figsize=(13, 0.5 * max(4, len(derivation.floor.recordings)) + 3.2), layout="constrained")
    engine: Any = fig.get_layout_engine()
    engine.set(w_pad=0.15, h_pad=0.15)
    ax_lv, ax_gap = fig.subplots(1, 2, width_ratios=[3, 2])
    _draw_recording_levels(ax_lv, derivation.floor)
    _draw_floors(ax_lv, derivation.floor, committed_floor=committed_floor, committed_label=committed_label)
    _draw_gap_survival(ax_gap, derivation.gaps)
    fig.suptitle(plain_text(f"{derivation.group}: {len(derivation.recordings)} recordings"), fontsize=11, **_LITERAL)
    return fig


def _draw_recording_levels(ax_lv: Any, f: FloorEvidence) -> None:
    """Per recording, the spread of its speech and silence levels, its window of floors and whether it is outside."""
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


def _draw_floors(ax_lv: Any, f: FloorEvidence, *, committed_floor: float | None, committed_label: str) -> None:
    """The windows' intersection, the recommended and the committed floor, the legend and the recordings' axis."""
    names = [r.name for r in f.recordings]
    if f.window is not None:
        # The shared window can be narrower than a line is wide: its edges are drawn above the
        # floor, hatched between, and its width is in the legend.
        w0, w1 = _to_db(f.window[0]), _to_db(f.window[1])
        ax_lv.axvspan(
            w0,
            w1,
            facecolor=(0.17, 0.63, 0.17, 0.18),
            edgecolor=(0.0, 0.39, 0.0, 0.35),
            hatch="\\\\",
            linewidth=0,
            label=f"floors for all: {w0:.1f} .. {w1:.1f} dBFS ({w1 - w0:.1f} dB)",
        )
        for edge in (w0, w1):
            ax_lv.axvline(edge, color="darkgreen", linewidth=1.3, zorder=4)
    if f.floor is not None:
        ax_lv.axvline(
            _to_db(f.floor),
            color="tab:red",
            linewidth=1.0,
            linestyle="--",
            zorder=3,
            label=f"floor {f.floor:g} ({_to_db(f.floor):.1f} dBFS)",
        )
    if committed_floor is not None and committed_floor > 0:
        ax_lv.axvline(
            _to_db(committed_floor),
            color="black",
            linewidth=1.2,
            linestyle=":",
            zorder=3,
            label=f"{committed_label} floor {committed_floor:g} ({_to_db(committed_floor):.1f} dBFS)",
        )
    ax_lv.plot([], [], color="tab:blue", linewidth=6, alpha=0.75, label="speech p5..p95 (p1..p99)")
    ax_lv.plot([], [], color="0.45", linewidth=6, alpha=0.75, label="silence p5..p95 (p1..p99)")
    ax_lv.fill_between([], [], color="tab:green", alpha=0.3, label="its window of floors")
    ax_lv.set_yticks(range(len(names)), [plain_text(n) for n in names], fontsize=8, **_LITERAL)
    ax_lv.set_ylim(-0.6, len(names) - 0.4)
    ax_lv.invert_yaxis()
    ax_lv.set_xlabel(f"level (dBFS; digital zero is drawn at {_DB_FLOOR:g} dBFS)")
    ax_lv.set_title("levels per recording, and the floors that separate speech from noise", fontsize=10)
    ax_lv.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.14), ncols=2, frameon=False)


def _draw_gap_survival(ax_gap: Any, g: GapEvidence) -> None:
    """How often a narration gap is longer than x (log scale) with its exponential tail, the quiet time and its
    limits, and the least room a beat leaves after its last word."""
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
    ax_gap.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.14), ncols=2, frameon=False)


def plot_compare(results: Sequence[EndpointerResult]) -> Figure:
    """Endpointers at their tuned thresholds and silence durations: median latency added after the last word
    against beats failed (premature, stalled or missed onset), one point each, the level clock among them."""
    fig = _figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    shown = [r for r in results if r.added_latency_median_s is not None]
    for n, r in enumerate(sorted(shown, key=lambda r: (r.tally.n_failed, r.added_latency_median_s))):
        x = float(r.added_latency_median_s or 0.0)
        level = r.name == LEVEL_CLOCK
        ax.plot(
            x,
            r.tally.n_failed,
            marker="*" if level else "o",
            markersize=14 if level else 7,
            color="black" if level else "tab:blue",
            linestyle="none",
            zorder=3,
        )
        # Labels fan out (points often sit close together), start clear of the largest marker (the star's
        # radius is 7 points) and are drawn over every marker on a white box, so none covers a label.
        ax.annotate(
            plain_text(f"{r.name} ({'' if r.threshold is None else f'{r.threshold:g}, '}quiet {r.quiet_s:g} s)"),
            (x, r.tally.n_failed),
            xytext=(14, (14 + 12 * (n % 6 // 2)) * (1 if n % 2 else -1)),  # above or below, never level
            textcoords="offset points",
            fontsize=8,
            va="center",
            zorder=4,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
            arrowprops={"arrowstyle": "-", "linewidth": 0.5, "color": "grey", "shrinkA": 0, "shrinkB": 8},
        )
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("median latency added after the last word (s)")
    ax.set_ylabel("beats failed (premature, stalled, missed onset)")
    ax.set_title("each endpointer at its tuned threshold and silence duration")
    ax.set_ylim(-0.6, max((r.tally.n_failed for r in shown), default=0) + 1)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # beats come whole, and never fewer than 0
    return fig


def plot_stress(result: StressResult) -> Figure:
    """The margins of each setting side by side: one row per axis direction, the held share, the break marked.

    Each row spans its line from the recordings as they are (left) to the
    end of its range (right); a bar shows how far each setting holds, and a
    cross marks its first failing value, labelled with the value.
    """
    rows = [m.name for m in result.settings[0].margins] if result.settings else []
    n_set = max(1, len(result.settings))
    fig = _figure(figsize=(9.0, 1.0 + 0.45 * max(1, len(rows)) * n_set))
    ax = fig.add_subplot(1, 1, 1)
    colours = ("tab:blue", "tab:orange", "tab:green")
    height = 0.8 / n_set
    for k, s in enumerate(result.settings):
        colour = colours[k % len(colours)]
        for r, m in enumerate(s.margins):
            y = r + (k - (n_set - 1) / 2) * height
            ax.barh(y, m.margin_fraction, height=height * 0.9, color=colour, alpha=0.7,
                    label=f"{s.label} (floor {s.floor:g}, quiet {s.quiet_s:g} s)" if r == 0 else None)  # fmt: skip
            if m.first_failure is not None:
                ax.plot([m.margin_fraction], [y], marker="x", color="tab:red", markersize=8)
                _text(ax, m.margin_fraction + 0.01, y, f"breaks at {m.first_failure:g} {m.unit}",
                      va="center", fontsize=7)  # fmt: skip
            else:
                _text(ax, 1.01, y, held_text(m), va="center", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.3)
    ax.set_xlabel("share of each line that holds (left: the recordings as they are; 1: the end of its range)")
    ax.set_title(f"stress: margins over {len(result.recordings)} recordings (x: first failure)")
    if result.settings:
        ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    return fig
