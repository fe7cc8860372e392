"""Tours recorded with the page's clock in the loop, and their truth by re-simulation (no files, no corpus).

Real recordings come from a page that runs the clock: after its clock declares a beat quiet, the page logs
``clock.quiet``, waits the beat's linger, prompts the next stop; the voice acknowledges the prompt (its audio
queued after whatever still plays), the backend's terminal response follows after its latency, then the
narration (queued likewise); after the last stop the page logs ``end``. So where the page prompts, and so
where every later piece of audio lands, is a consequence of the page's setting.

A :class:`VoiceDraw` is what the world does, whatever the setting: each beat's acknowledgment, latencies,
sentences and pauses, and the visitor's actions. :func:`record` plays it through a page at a setting and
returns the recording (samples, the page's log) and, per beat, when the page declared it and when its
narration really ended. The truth of any setting is :func:`record` again at that setting: the same audio and
latencies, judged by construction (premature: the page declared before the narration's last word; stalled:
it never declared while the beat was open). The page's clock here is this module's own few lines over the
levels (the analyser's levels are held to Chromium's elsewhere), never the tool's replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache, cached_property

import numpy as np
from construction import EPS_S, RATE, Layout, Run, at_rms, pink_shape, words

from clock.core.analyser import RENDER_QUANTUM_FRAMES
from clock.core.events import Event, EventLog
from clock.core.levels import levels
from clock.core.model import Observation
from clock.core.ticks import frame_times_s

VISITOR_WAITS_S = 8.0  # after a narration the page's clock never ended, the visitor presses End
BED_S = 100.0  # a noise bed's length: longer than any tour here (record says if one outruns it)
BED_DRAWN_S = 240.0  # ... drawn over this long (the tours' draws stand on it: where the next voice's draw starts)
LINGER_S = 0.5


@dataclass(frozen=True, eq=False)  # (hashed by identity: the cache below)
class BeatDraw:
    """What the world does in one beat, whatever the page's setting."""

    ack: np.ndarray | None  # the voice's acknowledgment of the prompt (None: none)
    ack_latency_s: float  # prompt -> acknowledgment
    backend_s: float  # prompt -> terminal response
    onset_s: float  # terminal response -> narration (queued after what plays)
    sentences: tuple[np.ndarray, ...]
    pauses_s: tuple[float, ...]  # between sentences
    barge_in_at: float | None = None  # the visitor speaks up this far (0-1) into the last sentence: audio cut
    end_early_s: float | None = None  # the visitor presses End this long after the narration's last word
    pause_s: tuple[float, float] | None = None  # the visitor pauses (after, for) this long after the last word


@dataclass(frozen=True, eq=False)
class VoiceDraw:
    """A tour's draw: its beats, and how long the recording runs after the page's ``end`` (None: cut early)."""

    name: str
    beats: tuple[BeatDraw, ...]
    tail_s: float = 1.5
    cut_after_last_word_s: float | None = None  # the recording ends this long after the last narration's word
    bed: np.ndarray | None = None  # a noise bed under the whole recording (room tone, comfort noise), the page hears it


@dataclass
class Played:
    """One beat as the page played it."""

    terminal_s: float
    narration_end_s: float  # the narration's last sample
    declared_s: float | None  # the page's clock.quiet (None: never)
    ended_by: str = "page"  # "page" (its clock), "barge-in", "end" (the visitor), "recording"
    narration_start_s: float = float("nan")  # the narration's first sample (queued after what still played)

    @property
    def premature(self) -> bool:
        return self.declared_s is not None and self.declared_s < self.narration_end_s - EPS_S


@dataclass
class Recording:
    name: str
    samples: np.ndarray
    events: list[tuple[str, float, dict]]
    played: list[Played] = field(default_factory=list)
    voiced: np.ndarray | None = None  # per sample: the guide's audio (not the bed) is not exactly 0

    @cached_property
    def trace(self):
        """The recording's levels (computed once: a cached recording is read by many tests)."""
        return _levels(self.samples)

    def observation(self) -> Observation:
        trace = self.trace
        log = EventLog(
            tuple(
                Event(kind, kind, t, i + 1, extra.get("linger_s"), extra.get("response_id"), extra.get("cause"))
                for i, (kind, t, extra) in enumerate(self.events)
            )
        )
        return Observation(self.name, trace, log)


def draw_voice(
    rng: np.random.Generator,
    name: str,
    *,
    n_beats: int = 5,
    pauses_s: tuple[float, float] = (0.3, 2.0),
    long_pauses_s: tuple[float, float] | None = None,
    level: float = 0.05,
    bed_dbfs: float | None = None,
    bed_kind: str = "pink",
) -> VoiceDraw:
    """A tour of ``n_beats`` beats of one voice: 2-4 sentences a beat, pauses drawn from ``pauses_s``, and in
    each beat one pause from ``long_pauses_s`` where given (the voice's longest sentence pauses); ``bed_dbfs``:
    a noise bed (``bed_kind`` pink or white) at this RMS under the whole recording."""
    beats = []
    for _ in range(n_beats):
        n = int(rng.integers(2, 5))
        sentences = tuple(words(rng, float(rng.uniform(0.8, 2.2)), level) for _ in range(n))
        pauses = [float(rng.uniform(*pauses_s)) for _ in range(n - 1)]
        if long_pauses_s is not None:
            pauses[int(rng.integers(n - 1))] = float(rng.uniform(*long_pauses_s))
        ack = words(rng, float(rng.uniform(0.5, 1.0)), level) if rng.random() < 0.6 else None
        beats.append(
            BeatDraw(
                ack,
                float(rng.uniform(0.2, 0.6)),
                float(rng.uniform(1.5, 3.5)),
                float(rng.uniform(0.2, 0.6)),
                sentences,
                tuple(pauses),
            )  # fmt: skip
        )
    bed = None if bed_dbfs is None else _bed(rng, bed_kind, 10 ** (bed_dbfs / 20))
    return VoiceDraw(name, tuple(beats), bed=bed)


#: Noise drawn for beds, by the generator's state it was drawn from: the first ``BED_S`` of the white draw and of
#: the draw filtered to pink, the pink draw's RMS over its whole length, and the generator's state after the draw.
_NOISE: dict[str, tuple[np.ndarray, np.ndarray, float, dict]] = {}


def _bed(rng: np.random.Generator, kind: str, rms: float) -> np.ndarray:
    """The first ``BED_S`` of a noise bed of this kind (``"pink"``: :func:`pink`, else white) at this RMS drawn over
    ``BED_DRAWN_S`` from ``rng``, and ``rng`` left where that draw leaves it: each sample as drawn anew.

    The same draw from the same state is drawn once: a tour's beats do not depend on its bed, so the tours of one
    seed draw the same noise under them at every level and of either kind (white, or white filtered to pink).
    """
    state = repr(rng.bit_generator.state)
    n = int(BED_S * RATE)
    if state not in _NOISE:
        white = rng.standard_normal(int(BED_DRAWN_S * RATE))
        shape = pink_shape(white)
        _NOISE[state] = (white[:n].copy(), shape[:n].copy(), float(np.sqrt(np.mean(shape**2))), rng.bit_generator.state)
    white, shape, shape_rms, rng.bit_generator.state = _NOISE[state]
    if kind == "pink":
        return at_rms(shape, rms, x_rms=shape_rms)  # (pink(rng, BED_DRAWN_S * RATE, rms)[:n])
    return white * rms


def _levels(x: np.ndarray):
    return levels(np.asarray(x, np.float32), RATE)


def _window_grid() -> tuple[int, int]:
    """The analyser's window (frames) and the stride (frames) at which the tick grid repeats: a slice of the
    recording starting at a multiple of the stride has its ticks on the recording's frames, less the start."""
    trace = levels(np.zeros(1, np.float32), RATE)
    per_quantum = Fraction(RATE) * trace.ticks.period_s / RENDER_QUANTUM_FRAMES  # quanta a tick
    return trace.options.fft_size, per_quantum.numerator * RENDER_QUANTUM_FRAMES


WINDOW, STRIDE = _window_grid()


def _declares_from(terminal_s: float) -> int:
    """The first frame of a slice whose levels hold every tick from ``terminal_s`` on as the whole recording's
    do: a multiple of the grid's stride at least one window before the first such tick's frame."""
    return max(0, (int(terminal_s * RATE) - WINDOW - 1) // STRIDE * STRIDE)


def _page_declares(
    x: np.ndarray,
    terminal_s: float,
    *,
    floor: float,
    quiet_s: float,
    paused: tuple[float, float] | None = None,
    start: int = 0,
) -> float | None:
    """The page's level clock from a terminal response: wait for the first tick above the floor, then declare at
    the first tick at which the time since the last tick above it, less any time the visitor paused it
    (``paused``: from, to), reaches the quiet time (None: never, in ``x``).

    ``x``: the recording from frame ``start`` (:func:`_declares_from`; each tick reads only the window before its
    frame, so its level is the whole recording's), to the end of what the page has heard.
    """
    trace = _levels(x)
    t, above = frame_times_s(trace.frames + start, RATE), trace.level > floor
    k = int(np.searchsorted(t, terminal_s, side="left"))
    last = None
    for i in range(k, t.size):
        if above[i]:
            last = t[i]
        elif last is not None:
            held = 0.0 if paused is None else max(0.0, min(t[i], paused[1]) - max(last, paused[0]))
            if t[i] - last - held >= quiet_s - EPS_S:
                return float(t[i])
    return None


def record(
    voice: VoiceDraw, *, floor: float, quiet_s: float, linger_s: float = LINGER_S, provider: bool = False
) -> Recording:
    """The recording a page at this setting makes of ``voice`` (see the module notes).

    ``provider``: the log also has the provider's ``output_audio_buffer.stopped`` for each narration, 0 to 0.3 s
    after its last sample, with the terminal response's ``response_id``.
    """
    lay = Layout()
    runs: list[Run] = []  # the guide's audio as queued
    events: list[tuple[str, float, dict]] = []
    played: list[Played] = []
    busy = 0.0  # audio is queued until here
    prompt = 0.5

    def place(at: float, x: np.ndarray, kind: str = "narration") -> float:
        """Queue ``x`` at the sample nearest ``at``; returns where it ends."""
        return lay.say(int(round(at * RATE)) / RATE, x, kind, runs)

    def samples(until_s: float, bed: bool = True, first: int = 0) -> np.ndarray:
        """The recording up to ``until_s`` (its sample included), with the bed or without, from frame ``first``."""
        n = int(until_s * RATE) + 1
        if bed and voice.bed is not None and n > voice.bed.size:
            raise ValueError(f"{voice.name}: the page hears {n / RATE:.1f} s, past its noise bed (raise BED_S)")
        return lay.mix((n + 0.5) / RATE, voice.bed if bed else None, first=first)  # (n samples: half a sample clear)

    def declares(until_s: float, terminal_s: float, paused: tuple[float, float] | None = None) -> float | None:
        """The page's clock on the recording up to ``until_s``, read from the slice its ticks from ``terminal_s``
        need."""
        first = _declares_from(terminal_s)
        return _page_declares(
            samples(until_s, first=first), terminal_s, floor=floor, quiet_s=quiet_s, paused=paused, start=first
        )

    for j, b in enumerate(voice.beats):
        events.append(("prompt", prompt, {} if j == 0 else {"cause": None}))
        if b.ack is not None:
            busy = place(max(prompt + b.ack_latency_s, busy), b.ack, "ack")
        terminal = prompt + b.backend_s
        events.append(("terminal", terminal, {"linger_s": linger_s, "response_id": f"r{j}"}))
        cursor = start = max(terminal + b.onset_s, busy)
        barge_in = b.barge_in_at
        for i, sentence in enumerate(b.sentences):
            if barge_in is not None and i == len(b.sentences) - 1:
                cut = place(cursor, sentence[: int(sentence.size * barge_in)])
                if declares(cut, terminal) is None:
                    cursor = cut
                    break
                # The page's clock declared in a pause before the visitor would have spoken up: it prompted
                # first, and the visitor did not barge in.
                lay.pieces.pop()
                runs.pop()
                barge_in = None
            cursor = place(cursor, sentence)
            if i < len(b.pauses_s):
                cursor += b.pauses_s[i]
        busy = narration_end = cursor
        if provider:
            drained = narration_end + 0.3 * ((j * 7919) % 10) / 10  # (a fixed spread: the draw stays the same)
            events.append(("output_audio_buffer.stopped", drained, {"response_id": f"r{j}"}))
        if barge_in is not None:
            # The visitor speaks up in the last sentence: the provider cuts the audio, the page prompts again.
            played.append(Played(terminal, narration_end, None, "barge-in", start))
            events.append(("prompt", narration_end, {"cause": "visitor"}))
            prompt = narration_end + 0.8
            continue
        early_end = b.end_early_s is not None and (
            # (unless the page's clock declared first, in a pause: then it prompted, and the visitor did not end it)
            declares(narration_end + b.end_early_s, terminal) is None
        )
        if early_end:
            played.append(Played(terminal, narration_end, None, "end", start))
            events.append(("end", narration_end + b.end_early_s, {"cause": "visitor"}))
            prompt = None
            break
        paused = None
        # The visitor pauses in the silence after the narration while the page's clock still waits (its count held).
        if b.pause_s is not None and declares(narration_end + b.pause_s[0], terminal) is None:
            paused = (narration_end + b.pause_s[0], narration_end + b.pause_s[0] + b.pause_s[1])
            events.append(("pause", paused[0], {}))
            events.append(("resume", paused[1], {}))
        horizon = narration_end + max(quiet_s + 1.0, VISITOR_WAITS_S) + (0.0 if b.pause_s is None else b.pause_s[1])
        declared = declares(horizon, terminal, paused)
        played.append(Played(terminal, narration_end, declared, narration_start_s=start))
        if declared is None:
            # The page's clock stalled (its floor hears the room): the visitor waits, then presses End.
            events.append(("end", narration_end + VISITOR_WAITS_S, {"cause": "visitor"}))
            prompt = None
            break
        events.append(("clock.quiet", declared, {}))
        prompt = declared + linger_s
    last_word = max(p.narration_end_s for p in played)
    if prompt is not None:
        events.append(("end", prompt, {}))
        end_s = max(prompt, busy) + voice.tail_s
    else:
        end_s = max(busy, max(t for _, t, _ in events)) + voice.tail_s
    if voice.cut_after_last_word_s is not None:
        end_s = last_word + voice.cut_after_last_word_s
        events = [e for e in events if e[1] < end_s]
        if played[-1].declared_s is None or played[-1].declared_s >= end_s:
            played[-1].ended_by = "recording"
    events.sort(key=lambda e: e[1])
    heard = samples(end_s)
    voiced = (heard if voice.bed is None else samples(end_s, bed=False)) != 0  # (no bed: the guide's audio is all)
    return Recording(voice.name, heard, events, played, voiced)


#: Recordings made by :func:`_cached_record`, by its arguments.
_RECORDS: dict[tuple, Recording] = {}


def _cached_record(
    voice: VoiceDraw, floor: float, quiet_s: float, linger_s: float = LINGER_S, provider: bool = False
) -> Recording:
    key = (voice, floor, quiet_s, linger_s, provider)
    if key not in _RECORDS:
        _RECORDS[key] = record(voice, floor=floor, quiet_s=quiet_s, linger_s=linger_s, provider=provider)
    return _RECORDS[key]


@cache
def _played(voice: VoiceDraw, floor: float, quiet_s: float, linger_s: float = LINGER_S) -> list[Played]:
    """What a page at this setting played of ``voice`` (:func:`record`'s ``played``), without keeping the
    recording's samples where no test has asked for them: a re-simulation needs only this."""
    rec = _RECORDS.get((voice, floor, quiet_s, linger_s, False))
    return (rec or record(voice, floor=floor, quiet_s=quiet_s, linger_s=linger_s)).played


def truth(voices: list[VoiceDraw], *, floor: float, quiet_s: float, linger_s: float = LINGER_S) -> list[str]:
    """The beats a page at this setting ends wrong, by re-simulating each tour at it: ``name beat k: premature``
    (declared before the narration's last word) or ``stalled`` (never declared while the beat was open)."""
    out = []
    for v in voices:
        for k, p in enumerate(_played(v, floor, quiet_s, linger_s)):
            if p.ended_by != "page":
                continue
            if p.premature:
                out.append(f"{v.name} beat {k + 1}: premature")
            elif p.declared_s is None:
                out.append(f"{v.name} beat {k + 1}: stalled")
    return out
