"""The one builder of the tests' synthetic recordings: sounds, a timeline, each beat's truth, the tour.

Every generated recording of the tests is laid out here and judged by what
this construction knows, never by the tool's own replay. The map:

``construction`` (this module)
    The sounds (:func:`words`, :func:`steady`, :func:`pink`), one stretch of
    constructed speech (:class:`Run`), what the construction knows of a beat
    (:class:`BeatTruth`), a recording with its log and truths (:class:`Tour`),
    and :class:`Layout`, which lays speech and the page's events on a
    timeline. Traces are computed once per content (:func:`cached_levels`).
``adversarial``
    Tours drawing every timing relation across its whole range, the human
    reading cut into tours (``reading_corpus``), and the brute-force judge by
    construction.
``tours``
    Random tours and corpora of a synthetic voice with log damage (cached on
    disk), and Opus round trips.
``voices``
    Tours read by real voices (clips of the shared corpus) and their judge.
``closed_loop``
    Tours recorded with the page's clock in the loop.
``sessions``
    Square-wave sessions at 48 kHz with sample-exact truths (the provider's
    and the rules' tours).
``signals`` / ``audiofiles``
    Signals with known levels; recordings written in every container.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace, levels
from clock.core.model import Observation

RATE = 16000  # enough for the level; keeps the tests fast
WINDOW = 2048  # the analyser's fftSize: a tick sees the 128 ms before its frame
#: The judges' tolerance on times (s): a count of quiet reaches a quiet time within it.
EPS_S = 1e-9


# --- sounds ----------------------------------------------------------------------------------------------------------


def words(rng: np.random.Generator, duration_s: float, level: float) -> np.ndarray:
    """Speech-like words filling ``duration_s``: harmonic bursts of 0.15-0.45 s, gains -6..+4 dB, dips of 40-140 ms."""
    n = int(duration_s * RATE)
    x = np.zeros(n)
    t = 0.0
    f0 = rng.uniform(110, 230)
    while t < duration_s - 0.1:
        length = min(rng.uniform(0.15, 0.45), duration_s - t)
        m = int(length * RATE)
        tt = np.arange(m) / RATE
        tone = sum(np.sin(2 * np.pi * f0 * h * tt + rng.uniform(0, 6)) / h for h in range(1, 6))
        burst = tone * np.sin(np.pi * np.arange(m) / m) ** 0.5
        burst *= level * 10 ** (rng.uniform(-6, 4) / 20) / max(np.sqrt(np.mean(burst**2)), 1e-12)
        i = int(t * RATE)
        x[i : i + m] += burst[: n - i]
        t += length + rng.uniform(0.04, 0.14)
    return x


def steady(rng: np.random.Generator, duration_s: float, level: float) -> np.ndarray:
    """An acknowledgment ("mm-hm"): one steady voiced burst with 20 ms ramps."""
    m = int(duration_s * RATE)
    tt = np.arange(m) / RATE
    f0 = rng.uniform(110, 230)
    x = sum(np.sin(2 * np.pi * f0 * h * tt) / h for h in range(1, 4))
    ramp = np.minimum(1.0, np.minimum(np.arange(m), m - 1 - np.arange(m)) / (0.02 * RATE))
    x = x * ramp
    return x * level / np.sqrt(np.mean(x**2))


def pink(rng: np.random.Generator, n: int, rms: float) -> np.ndarray:
    """Pink noise (1/f power) of ``n`` samples at this RMS.

    The white noise is padded with zeros to a length the FFT takes fast (a
    tour's length can be a large prime, ten times slower), and the filtered
    noise cut back to ``n``.
    """
    return at_rms(pink_shape(rng.standard_normal(n)), rms)


def pink_shape(white: np.ndarray) -> np.ndarray:
    """White noise filtered to 1/f power, at no particular level (:func:`pink`)."""
    from scipy.fft import next_fast_len

    n = white.size
    size = next_fast_len(n, real=True)
    spectrum = np.fft.rfft(white, size)
    f = np.arange(spectrum.size)
    spectrum[1:] /= np.sqrt(f[1:])
    spectrum[0] = 0
    return np.fft.irfft(spectrum, size)[:n]


def at_rms(x: np.ndarray, rms: float, *, x_rms: float | None = None) -> np.ndarray:
    """``x`` scaled to this RMS (``x_rms``: the RMS to scale from, ``x``'s own by default)."""
    return x * rms / max(float(np.sqrt(np.mean(x**2))) if x_rms is None else x_rms, 1e-12)


# --- truth -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One stretch of constructed speech: an acknowledgment or a sentence of the narration."""

    start_s: float
    end_s: float
    kind: str  # "ack" or "narration"


@dataclass
class BeatTruth:
    """What the construction knows of one beat.

    ``runs``: every stretch of constructed speech in the beat (the
    acknowledgment, each sentence) with its true start and end; ``bound``:
    what bounds the beat (``"prompt"``, ``"end"`` or ``"recording end"``) and
    ``bound_s`` when; ``page_pauses``: the page's paused spans;
    ``speaking_at_end``: for a beat the page ended, the end fell inside the
    narration or closer to its last word than the longest narration pause;
    ``stopped_s``: the provider's ``output_audio_buffer.stopped``, when logged.
    """

    index: int
    terminal_s: float
    bound_s: float
    bound: str
    runs: tuple[Run, ...] = ()
    page_pauses: tuple[tuple[float, float], ...] = ()
    speaking_at_end: bool | None = None
    stopped_s: float | None = None

    @property
    def silent(self) -> bool:
        """The guide said nothing after the terminal response."""
        return not self.runs

    @property
    def aborted(self) -> bool:
        """The page ended the beat while the guide was speaking."""
        return self.bound == "end" and bool(self.speaking_at_end)

    @property
    def speech_start_s(self) -> float | None:
        return self.runs[0].start_s if self.runs else None

    @property
    def speech_end_s(self) -> float | None:
        return self.runs[-1].end_s if self.runs else None

    @property
    def narration(self) -> tuple[Run, ...]:
        """The sentences of the narration (acknowledgments excluded)."""
        return tuple(r for r in self.runs if r.kind == "narration")

    @property
    def narration_start_s(self) -> float | None:
        narr = self.narration
        return narr[0].start_s if narr else None

    @property
    def narration_end_s(self) -> float | None:
        narr = self.narration
        return narr[-1].end_s if narr else None

    @property
    def narration_pauses(self) -> tuple[tuple[float, float], ...]:
        """The pauses between sentences (acknowledgment silences excluded)."""
        narr = self.narration
        return tuple((a.end_s, b.start_s) for a, b in zip(narr, narr[1:]))

    @property
    def longest_pause_s(self) -> float:
        """The longest pause between sentences of the narration (0 with fewer than two)."""
        return max((b - a for a, b in self.narration_pauses), default=0.0)


# --- the recording ---------------------------------------------------------------------------------------------------


@dataclass
class Tour:
    """One recording: samples, the log as the page writes it (``{"type", "t"}`` lines), the truth of each beat.

    ``has_log``: without, no events file is written and the observation has
    no log (the events are kept for the truth's sake).
    """

    name: str
    samples: np.ndarray
    events: list[dict]
    beats: list[BeatTruth]
    level: float = 0.0
    longest_pause_s: float = 0.0
    has_log: bool = True

    @cached_property
    def trace(self) -> LevelTrace:
        """The browser-exact level trace (computed once per content)."""
        return cached_levels(self.samples.astype(np.float32))

    @cached_property
    def log(self) -> EventLog:
        """The events as the tool reads them (:func:`page_log`)."""
        return page_log(self.events)

    def observation(self) -> Observation:
        """The tool's view of the recording ``NAME.wav``."""
        if not self.has_log:
            return Observation(f"{self.name}.wav", self.trace)
        return Observation(f"{self.name}.wav", self.trace, self.log)

    def write(self, folder: Path) -> Path:
        """``NAME.wav`` (float) and, with a log, ``NAME.events.jsonl`` (as the page's capture helper writes them)."""
        import soundfile as sf

        path = folder / f"{self.name}.wav"
        sf.write(str(path), np.clip(self.samples, -1, 1).astype(np.float32), RATE, "FLOAT")
        if self.has_log:
            (folder / f"{self.name}.events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in self.events))
        return path


def page_log(events: list[dict]) -> EventLog:
    """Log lines as the page writes them (``{"type", "t"}``, maybe a ``response_id``) as the tool reads them: a
    ``terminal_response`` line is a terminal response; in time order, lines of one time in the order written."""
    kinds = {"terminal_response": "terminal"}
    read = (
        Event(kinds.get(e["type"], e["type"]), e["type"], e["t"], i + 1, None, e.get("response_id"))
        for i, e in enumerate(events)
    )
    return EventLog(tuple(sorted(read, key=lambda e: (e.t_s, e.line))))


class Layout:
    """Lays out one recording: pieces of speech on a timeline, the page's log, each beat's truth."""

    def __init__(self, rate: int = RATE) -> None:
        self.rate = rate
        self.pieces: list[tuple[float, np.ndarray]] = []
        self.events: list[dict] = []
        self.beats: list[BeatTruth] = []

    def event(self, type_: str, t: float, **fields) -> None:
        """One line of the page's log."""
        self.events.append({"type": type_, "t": float(t), **fields})

    def say(self, at: float, piece: np.ndarray, kind: str, runs: list[Run]) -> float:
        """Lay ``piece`` at ``at`` as one run of speech of this kind (appended to ``runs``); returns where it ends."""
        self.pieces.append((at, piece))
        end = at + piece.size / self.rate
        runs.append(Run(at, end, kind))
        return end

    def close(self, duration_s: float) -> None:
        """The last beat, if the next prompt bounds it, is bounded by the recording's end instead (none follows)."""
        if self.beats and self.beats[-1].bound == "prompt":
            self.beats[-1].bound, self.beats[-1].bound_s = "recording end", duration_s

    def mix(self, duration_s: float, room: np.ndarray | None = None, *, first: int = 0) -> np.ndarray:
        """The recording's first ``duration_s``: the room (tiled) under every piece; from frame ``first`` on (each
        sample the whole mix's)."""
        x = np.zeros(max(0, int(duration_s * self.rate) - first))
        if room is not None and room.size:
            # (a slice where the room covers the span: the same samples as tiled, with no index arrays to build)
            x += (
                room[first : first + x.size]
                if first + x.size <= room.size
                else room[np.arange(first, first + x.size) % room.size]
            )
        for at, piece in self.pieces:
            i = int(round(at * self.rate)) - first
            if i + piece.size > 0:
                lo = max(0, -i)
                x[i + lo : i + piece.size] += piece[lo : max(lo, x.size - i)]
        return x

    def tour(self, name: str, duration_s: float, *, room: np.ndarray | None = None, **kw) -> Tour:
        """The tour of :meth:`mix`, its log in time order (``kw``: the other :class:`Tour` fields)."""
        self.events.sort(key=lambda e: e["t"])
        return Tour(name, self.mix(duration_s, room), self.events, self.beats, **kw)


# --- caches ----------------------------------------------------------------------------------------------------------


@cache
def generated_cache() -> Path:
    """Where generated corpora and traces are kept between runs, keyed by the builders' own source and the
    libraries their draws depend on: outside the repository, shared by a run's workers."""
    import hashlib
    import tempfile

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(np.__version__.encode())
    for name in ("construction.py", "tours.py"):
        digest.update((here / name).read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or tempfile.gettempdir())
    return base / "speechclock-tests" / f"tours-{digest.hexdigest()[:16]}"


@cache
def core_digest() -> str:
    """The tool's pure core, by content: a trace cached under it is the trace the code would compute now."""
    import hashlib

    core = Path(__file__).resolve().parent.parent / "clock" / "core"
    digest = hashlib.sha256(np.__version__.encode())
    for path in sorted(core.rglob("*.py")):
        digest.update(str(path.relative_to(core)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cached_levels(x: np.ndarray) -> LevelTrace:
    """``levels(x, RATE)``, cached by the samples' content and the core's source (so a change to how levels
    are computed is never hidden by the cache)."""
    import hashlib
    import pickle

    key = hashlib.sha256(x.tobytes()).hexdigest()[:24]
    path = generated_cache() / f"traces-{core_digest()}" / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    trace = levels(x, RATE)
    write_atomically(path, trace)
    return trace


def write_atomically(path: Path, value) -> None:
    """Pickle ``value`` to ``path`` whole or not at all, whichever worker writes it first."""
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    with open(part, "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(part, path)
