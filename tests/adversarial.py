"""Adversarial tours: every timing relation the speech clock depends on, drawn across its whole range.

Generator API (all seeded, no files unless asked, 16 kHz):

``adversarial_tour(rng, name, *, level, longest_pause_s, longest_silence_s=3.5, room_s=1.2, noise=None,
noise_dbfs=None, ends=True, page_pauses=True, silent=False, stopped=False) -> Tour``
    Two to four beats. Each beat: a ``prompt``, the ``terminal_response``
    0.3-0.8 s later, sometimes (p = 0.5; always in the first beat) an
    acknowledgment that overlaps the terminal response (a steady burst from
    0.2-0.5 s before it, after the prompt, 0.4-0.9 s long) followed by a
    silence of 0.3 s up to ``longest_silence_s`` (at most 3.5 s) before the
    narration, else an onset latency of 0.3-1.5 s; then a narration of one
    to four sentences (speech-like words, 0.8-2 s each) with pauses of 0.2 s
    up to ``longest_pause_s`` (at most 3 s) between them. The first beat
    holds one pause of exactly ``longest_pause_s`` and an acknowledgment
    followed by exactly ``longest_silence_s``, so every tour of a corpus
    drawn with the same values has the same longest narration pause ``P``
    and longest acknowledgment silence.
    ``ends``: later beats may be ended by the page (``end``, p = 0.6)
    anywhere from 1 s inside the narration (inside a sentence; the guide's
    audio stops there) to 5 s after its last word, never within 0.35 s of
    ``P`` (where the analyser's 128 ms window would decide "speaking" or
    "finished") and, past ``P``, never sooner than ``room_s`` after the last
    word. Other beats are bounded by the next ``prompt`` ``room_s`` (p = 0.3)
    to ``room_s`` + 2.5 s after the last word, the last one by the
    recording's end. ``page_pauses``: a beat not ended by the page may get a
    ``pause``/``resume`` of 0.3-2 s in one of its narration pauses (not the
    one of length ``P``) or in the room after its last word (the room then
    lasts as much longer). ``silent``: one beat (never the first) gets a
    terminal response and no speech. ``stopped``: the provider's
    ``output_audio_buffer.stopped`` is logged from 0.5 s before the last
    word to 1 s after it, missing in about one beat in five (for dead-air
    tests, issue 25). ``level``: the RMS of the words (they vary -6..+4 dB
    word by word); ``noise``: ``"pink"`` (a 1/f bed) or ``"comfort"`` (white,
    as DTX comfort noise) under the whole recording at ``noise_dbfs`` RMS.

``adversarial_corpus(seed, kind, *, setup=None, longest_pause_s=None, longest_silence_s=None, width_s=None)``
    Three to five tours of one kind (see :data:`KINDS`): voices from 12 dB
    above to 12 dB below the floor's edge (a reference floor
    :data:`EDGE_FLOOR` against the quietest words, 6 dB under the level),
    beds from -70 to -50 dBFS and at least 22 dB under the voice. One tour
    has a silent beat. The shortest room before a bound lies ``width_s``
    past the longer of ``P`` and the longest silence, so right quiet times
    exist, in a band as narrow as 0.25 s. ``setup`` seeds the voices,
    rooms and relations (the same guide, next week), ``seed`` what is said
    and when.

``reading_corpus(corpus_dir, half, seed) -> list[Tour]``
    Tours cut from the shared corpus's human reading (``human-read/
    sonnet001.wav`` and its ``.vad.tsv``): its utterances, with the real
    pauses between them, make the narrations (``half`` 0 or 1: which half of
    the reading, so two corpora of one kind share no sentence); the room is
    the reading's own tone, and the whole is 12 dB quieter (:data:`READING_GAIN`).
    Ends as above; no acknowledgments.

``layered_tour(name, *, floor=EDGE_FLOOR) -> Tour``
    One beat whose failures are not nested in the voice's gain (a soft
    middle between a louder start and a loudest end), for ``stress``.

What each beat carries (:class:`BeatTruth`, from the construction only):
``runs`` (every stretch of constructed speech in the beat: the
acknowledgment, each sentence, with true start and end), the narration
pauses (between sentences) and page pauses, what bounds the beat and when,
``speaking_at_end`` (for a beat the page ended: the end fell inside the
narration, or closer to its last word than ``P``), and the provider's
``stopped_s``. :meth:`Tour.trace` is the browser-exact level trace
(:func:`clock.core.levels.levels`, cached); :meth:`Tour.observation` the
tool's view; :meth:`Tour.write` the recording and its log as files.

Judging by construction (second half of this module; nothing of the tool's
replay, analysis or judge is used):

``Simulated(tour, floor, quiets_s)``
    The page clock replayed tick by tick on the trace at one floor: per beat
    (:class:`Played`) the tick it declares quiet for every quiet time, the
    wait before it first hears speech, the ticks above the floor whose
    analyser window overlaps the beat's constructed speech, the narration
    pauses at that floor (acknowledgment silences excluded), and whether a
    sentence of the narration goes unheard (``deaf``).
``outcome(played, sim, qi, timeout_s, longest_pause_s)``
    The shared outcome definition (issue 22): ``ok``, ``premature``,
    ``stalled``, ``outpaced``, ``missed-onset``, ``aborted``, ``silent``,
    ``unheard``, with P of the recordings judged together.
``judge_setting`` / ``judge_quiets`` / ``judge_grid``
    The failing beats (:data:`FAILING`, ``deaf`` included) of tours judged
    together, at one setting or along quiet times and onset timeouts.
``noise_max(tour)``
    The loudest tick that hears no constructed speech: above it, every tick
    above the floor is the guide's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from clock.core.events import Event, EventLog
from clock.core.levels import LevelTrace, levels
from clock.core.model import Observation

RATE = 16000
WINDOW = 2048  # the analyser's fftSize: a tick sees the 128 ms before its frame
#: The floor whose edge the voices are drawn around.
EDGE_FLOOR = 0.003
#: The kinds of corpora :func:`adversarial_corpus` draws.
KINDS = ("timing", "voices", "beds", "comfort")
#: The human reading is captured 12 dB quieter (its room tone -48 dBFS at most, its speech around -37 dBFS).
READING_GAIN = 10 ** (-12 / 20)
#: A page's end is never drawn closer than this to the longest narration pause (s).
CLEARANCE_S = 0.35


@dataclass(frozen=True)
class Run:
    """One stretch of constructed speech: an acknowledgment or a sentence of the narration."""

    start_s: float
    end_s: float
    kind: str  # "ack" or "narration"


@dataclass
class BeatTruth:
    """What the construction knows of one beat."""

    index: int
    terminal_s: float
    bound_s: float
    bound: str  # "prompt", "end" or "recording end"
    runs: tuple[Run, ...] = ()
    page_pauses: tuple[tuple[float, float], ...] = ()
    speaking_at_end: bool | None = None  # for a beat the page ended
    stopped_s: float | None = None  # the provider's output_audio_buffer.stopped, when logged

    @property
    def silent(self) -> bool:
        return not self.runs

    @property
    def speech_start_s(self) -> float | None:
        return self.runs[0].start_s if self.runs else None

    @property
    def speech_end_s(self) -> float | None:
        return self.runs[-1].end_s if self.runs else None

    @property
    def narration_pauses(self) -> tuple[tuple[float, float], ...]:
        """The pauses between sentences (acknowledgment silences excluded)."""
        narr = [r for r in self.runs if r.kind == "narration"]
        return tuple((a.end_s, b.start_s) for a, b in zip(narr, narr[1:]))


@dataclass
class Tour:
    """One recording: samples, the log as the page writes it, the truth of each beat."""

    name: str
    samples: np.ndarray
    events: list[dict]
    beats: list[BeatTruth]
    level: float = 0.0
    longest_pause_s: float = 0.0

    @cached_property
    def trace(self) -> LevelTrace:
        return levels(self.samples.astype(np.float32), RATE)

    @cached_property
    def log(self) -> EventLog:
        kinds = {"terminal_response": "terminal"}
        return EventLog(
            tuple(Event(kinds.get(e["type"], e["type"]), e["type"], e["t"], i + 1) for i, e in enumerate(self.events))
        )

    def observation(self) -> Observation:
        return Observation(f"{self.name}.wav", self.trace, self.log)

    def write(self, folder: Path) -> Path:
        import soundfile as sf

        path = folder / f"{self.name}.wav"
        sf.write(str(path), self.samples.astype(np.float32), RATE, "FLOAT")
        (folder / f"{self.name}.events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in self.events))
        return path


def words(rng: np.random.Generator, duration_s: float, level: float) -> np.ndarray:
    """Speech-like words filling ``duration_s``: harmonic bursts, gains -6..+4 dB, dips of 40-140 ms."""
    n = int(duration_s * RATE)
    x = np.zeros(n)
    t = 0.0
    f0 = rng.uniform(110, 230)
    while t < duration_s - 0.1:
        m = int(min(rng.uniform(0.15, 0.45), duration_s - t) * RATE)
        tt = np.arange(m) / RATE
        burst = sum(np.sin(2 * np.pi * f0 * h * tt + rng.uniform(0, 6)) / h for h in range(1, 6))
        burst = burst * np.sin(np.pi * np.arange(m) / m) ** 0.5
        burst *= level * 10 ** (rng.uniform(-6, 4) / 20) / max(np.sqrt(np.mean(burst**2)), 1e-12)
        i = int(t * RATE)
        x[i : i + m] += burst[: n - i]
        t += m / RATE + rng.uniform(0.04, 0.14)
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
    """Pink noise (1/f power) of ``n`` samples at this RMS."""
    size = 1 << max(n - 1, 1).bit_length()  # a power of two: a fast transform
    spectrum = np.fft.rfft(rng.standard_normal(size))
    f = np.arange(spectrum.size)
    spectrum[1:] /= np.sqrt(f[1:])
    spectrum[0] = 0
    x = np.fft.irfft(spectrum, size)[:n]
    return x * rms / max(float(np.sqrt(np.mean(x**2))), 1e-12)


def _end_offset(rng: np.random.Generator, p: float, room_s: float) -> float:
    """An ``end`` from 1 s inside the narration to 5 s after its last word.

    Never within CLEARANCE_S of ``p``, and, once past it, at least ``room_s``
    after the last word (so the corpus keeps a right quiet time).
    """
    while True:
        e = float(rng.uniform(-1.0, 5.0))
        if e <= p - CLEARANCE_S or e >= max(p + CLEARANCE_S, room_s):
            return e


class _Builder:
    """Lays out one tour: speech pieces on a timeline, the log, the truths."""

    def __init__(self, level: float, pause_s: float, room_s: float = 1.2):
        self.level = level
        self.p = pause_s
        self.room_s = room_s
        self.pieces: list[tuple[float, np.ndarray]] = []
        self.events: list[dict] = []
        self.beats: list[BeatTruth] = []
        self.t = 0.5

    def event(self, type_: str, t: float) -> None:
        self.events.append({"type": type_, "t": float(t)})

    def beat(
        self,
        rng: np.random.Generator,
        sentences: list[np.ndarray],
        pauses: list[float],
        *,
        end: bool,
        page_pause: bool,
        stopped: bool,
        ack: np.ndarray | None,
        ack_silence_s: float,
    ) -> None:
        index = len(self.beats)
        self.event("prompt", self.t)
        terminal = self.t + float(rng.uniform(0.3, 0.8))
        self.event("terminal_response", terminal)
        runs = []
        if ack is not None:
            at = max(self.t + 0.05, terminal - float(rng.uniform(0.2, 0.5)))  # it answers the prompt
            self.pieces.append((at, ack))
            runs.append(Run(at, at + ack.size / RATE, "ack"))
            start = runs[-1].end_s + ack_silence_s
        else:
            start = terminal + float(rng.uniform(0.3, 1.5))
        cursor = start
        narr: list[tuple[float, np.ndarray]] = []
        for i, s in enumerate(sentences):
            narr.append((cursor, s))
            cursor += s.size / RATE
            if i < len(pauses):
                cursor += pauses[i]
        last = cursor
        truth = BeatTruth(index, terminal, 0.0, "prompt")
        page: list[tuple[float, float]] = []
        if end:
            offset = _end_offset(rng, self.p, self.room_s)
            at_end = max(last + offset, narr[0][0] + 0.3)
            if offset < 0:
                # Inside the narration means inside a sentence: an end in a pause moves into the next one.
                for a, s in narr:
                    if at_end < a:
                        at_end = a + min(0.2, s.size / RATE / 2)
                        break
                    if at_end <= a + s.size / RATE:
                        break
            kept = []
            for a, s in narr:
                if a >= at_end - 0.05:
                    break
                kept.append((a, s[: int((at_end - a) * RATE)]))
            narr = kept
            speaking = offset < 0 or offset < self.p  # inside the narration, or closer to its last word than P
            truth.speaking_at_end = speaking
            self.event("end", at_end)
            truth.bound, truth.bound_s = "end", at_end
            next_t = at_end + float(rng.uniform(1.0, 2.0))
        else:
            room = self.room_s if rng.random() < 0.3 else self.room_s + float(rng.uniform(0.0, 2.5))
            next_t = last + room
            if page_pause:
                # In the longest narration pause but the designed one, or in the room after the last word.
                spots = [(a + s.size / RATE, pauses[i]) for i, (a, s) in enumerate(narr[:-1]) if pauses[i] != self.p]
                spots.append((last, room))
                a, length = spots[int(rng.integers(len(spots)))]
                lo = a + 0.1
                hi = lo + min(float(rng.uniform(0.3, 2.0)), max(0.2, length - 0.3))
                self.event("pause", lo)
                self.event("resume", hi)
                page.append((lo, hi))
                if a == last:
                    next_t += hi - lo  # the visitor waited while the page was paused
            truth.bound_s = next_t
        for a, s in narr:
            self.pieces.append((a, s))
            runs.append(Run(a, a + s.size / RATE, "narration"))
        truth.runs = tuple(runs)
        truth.page_pauses = tuple(page)
        if stopped and narr and rng.random() > 0.2:
            truth.stopped_s = runs[-1].end_s + float(rng.uniform(-0.5, 1.0))
            self.event("output_audio_buffer.stopped", truth.stopped_s)
        self.beats.append(truth)
        self.t = next_t

    def silent_beat(self, rng: np.random.Generator) -> None:
        self.event("prompt", self.t)
        terminal = self.t + float(rng.uniform(0.3, 0.8))
        self.event("terminal_response", terminal)
        self.t = terminal + float(rng.uniform(3.0, 5.0))
        self.beats.append(BeatTruth(len(self.beats), terminal, self.t, "prompt"))

    def tour(self, name: str, room: np.ndarray | None = None) -> Tour:
        duration = self.t + 0.3
        if self.beats[-1].bound == "prompt":
            self.beats[-1].bound, self.beats[-1].bound_s = "recording end", duration
        x = np.zeros(int(duration * RATE))
        if room is not None:
            x += np.resize(room, x.size)
        for at, piece in self.pieces:
            i = int(round(at * RATE))
            x[i : i + piece.size] += piece[: x.size - i]
        self.events.sort(key=lambda e: e["t"])
        return Tour(name, x, self.events, self.beats, self.level, self.p)


def adversarial_tour(
    rng: np.random.Generator,
    name: str,
    *,
    level: float,
    longest_pause_s: float,
    longest_silence_s: float = 3.5,
    room_s: float = 1.2,
    noise: str | None = None,
    noise_dbfs: float | None = None,
    ends: bool = True,
    page_pauses: bool = True,
    silent: bool = False,
    stopped: bool = False,
) -> Tour:
    """One tour (see the module notes)."""
    p = longest_pause_s
    b = _Builder(level, p, room_s)
    n_beats = int(rng.integers(2, 5))
    silent_at = int(rng.integers(1, n_beats)) if silent else -1
    for k in range(n_beats):
        if k == silent_at:
            b.silent_beat(rng)
            continue
        n = 2 if k == 0 else int(rng.integers(1, 5))
        sentences = [words(rng, float(rng.uniform(0.8, 2.0)), level) for _ in range(n)]
        pauses = [float(rng.uniform(0.2, p)) for _ in range(n - 1)]
        if k == 0:
            pauses[0] = p
        with_ack = k == 0 or rng.random() < 0.5
        ack = steady(rng, float(rng.uniform(0.4, 0.9)), level) if with_ack else None
        end = ends and k > 0 and rng.random() < 0.6
        b.beat(
            rng,
            sentences,
            pauses,
            end=end,
            page_pause=page_pauses and not end and rng.random() < 0.35,
            stopped=stopped,
            ack=ack,
            ack_silence_s=longest_silence_s if k == 0 else float(rng.uniform(0.3, longest_silence_s)),
        )
    room = None
    if noise is not None:
        duration = b.t + 0.3
        rms = 10 ** ((noise_dbfs if noise_dbfs is not None else -60.0) / 20)
        n = int(duration * RATE)
        room = pink(rng, n, rms) if noise == "pink" else rng.standard_normal(n) * rms
    return b.tour(name, room)


def adversarial_corpus(
    seed: int,
    kind: str = "timing",
    *,
    setup: int | None = None,
    longest_pause_s: float | None = None,
    longest_silence_s: float | None = None,
    width_s: float | None = None,
) -> list[Tour]:
    """Three to five tours of one kind.

    ``timing``: voices 0-12 dB above the floor's edge, no noise, ends and
    page pauses; ``voices``: voices from 12 dB above to 12 dB below it;
    ``beds``: pink noise from -70 to -50 dBFS under each recording;
    ``comfort``: white comfort noise likewise, and the provider's
    ``output_audio_buffer.stopped``. Every kind has a silent beat in one tour.

    The corpus's relations (from ``setup`` unless given): P, the longest
    narration pause (0.5-3 s); the longest acknowledgment silence (0.3-3.5 s);
    and the shortest room before a bound, ``width_s`` (0.25, 0.6 or 1.5 s)
    past the longer of the two: the quiet times between are the right ones,
    so a right setting exists, in a region as narrow as 0.25 s.
    """
    rng = np.random.default_rng(seed)
    given = np.random.default_rng(setup if setup is not None else seed + 7919)
    p = float(given.uniform(0.5, 3.0)) if longest_pause_s is None else longest_pause_s
    silence = float(given.uniform(0.3, 3.5)) if longest_silence_s is None else longest_silence_s
    width = float(given.choice([0.25, 0.6, 1.5])) if width_s is None else width_s
    n = int(given.integers(3, 6))
    tours = []
    for i in range(n):
        lo, hi = (0.0, 12.0) if kind == "timing" else (-12.0, 12.0)
        rel_db = float(given.uniform(lo, hi))
        # The floor's edge: the quietest words (6 dB under the level) at EDGE_FLOOR.
        level = EDGE_FLOOR * 10 ** ((rel_db + 6) / 20)
        noise = {"beds": "pink", "comfort": "comfort"}.get(kind)
        # A bed at -70 to -50 dBFS, at least 22 dB under the voice (else no floor could tell them apart).
        noise_dbfs = min(float(given.uniform(-70, -50)), 20 * np.log10(level) - 22) if noise else None
        tours.append(
            adversarial_tour(
                rng,
                f"{kind}{i}",
                level=level,
                longest_pause_s=p,
                longest_silence_s=silence,
                room_s=max(p, silence) + width,
                noise=noise,
                noise_dbfs=noise_dbfs,
                silent=i == 1,
                stopped=kind == "comfort",
            )
        )
    return tours


def reading_corpus(corpus_dir: Path, half: int, seed: int) -> list[Tour]:
    """Two tours cut from one half of the shared corpus's human reading (see the module notes)."""
    import soundfile as sf

    folder = corpus_dir / "human-read"
    x, rate = sf.read(str(folder / "sonnet001.wav"), dtype="float64")
    assert rate == RATE
    spans = []
    for row in (folder / "sonnet001.vad.tsv").read_text().splitlines():
        a, b, what = row.split("\t")
        spans.append((float(a), float(b), what))
    tone = np.concatenate(
        [x[int((a + 0.05) * RATE) : int((b - 0.05) * RATE)] for a, b, w in spans if w == "nonspeech" and b - a > 0.4]
    )
    speech = [(a, b) for a, b, w in spans if w == "speech"]
    # Rooms before a bound at least 0.6 s past the reading's longest pause (both halves): a right quiet time exists.
    room_s = max(b2[0] - b1[1] for b1, b2 in zip(speech, speech[1:])) + 0.6
    x = x * READING_GAIN
    tone = tone * READING_GAIN
    mid = len(speech) // 2
    speech = speech[:mid] if half == 0 else speech[mid:]
    rng = np.random.default_rng(seed)
    # The longest pause the narrations hold, between utterances of this half.
    tours = []
    at = 0
    for k in range(2):
        groups = []
        while at < len(speech) and len(groups) < 3:
            n = int(rng.integers(2, 4))
            groups.append(speech[at : at + n])
            at += n
        if not groups:
            break
        p = max((g2[0] - g1[1] for g in groups for g1, g2 in zip(g, g[1:])), default=0.5)
        b = _Builder(READING_GAIN, p, room_s)
        for i, g in enumerate(groups):
            sentences = [x[int(a * RATE) : int(c * RATE)] for a, c in g]
            pauses = [g2[0] - g1[1] for g1, g2 in zip(g, g[1:])]
            # A reading's pauses hold its own room tone: lay each sentence with the tone after it.
            b.beat(
                rng,
                sentences,
                pauses,
                end=i > 0 and rng.random() < 0.6,
                page_pause=False,
                stopped=False,
                ack=None,
                ack_silence_s=0.0,
            )
        start = int(rng.integers(tone.size))
        tours.append(b.tour(f"reading{half}{k}", np.roll(tone, -start)))
    return tours


# --- judging by construction: an independent brute-force replay and the listener's outcome -------------------------
#
# Nothing below calls the tool's replay, analysis or judge: the page clock is simulated tick by tick on the level
# trace (the browser-exact input), and each beat is judged with the shared outcome definition (docs: BRIEF, issue 22)
# against what the construction knows: which ticks hear which run of speech (the analyser's window overlaps it),
# which quiet is a narration pause and which an acknowledgment's silence, what bounds the beat.

EPS_S = 1e-9
#: A setting's failures (``deaf``: a sentence of the narration the clock never hears at the floor). An ``end``
#: the visitor pressed before the clock declared (``outpaced``, ``aborted``) is not the setting's doing.
FAILING = ("premature", "stalled", "missed-onset", "deaf")


def unpaused(a: float, b: float, spans: tuple[tuple[float, float], ...]) -> float:
    """Seconds of [a, b] outside the page's paused spans (an unresumed pause runs on)."""
    paused = 0.0
    for lo, hi in spans:
        paused += max(0.0, min(b, hi) - max(a, lo))
    return (b - a) - paused


@dataclass
class Played:
    """The simulated clock in one beat at one floor, for every quiet time of a sorted array and any timeout."""

    truth: BeatTruth
    k0: int  # first tick the clock sees
    ka: int  # the tick at which the next terminal response or an end closes its life
    kb: int  # the first tick at or after the beat's bound
    start: int | None  # first tick above the floor
    wait_max_s: float  # the unpaused wait at the last waiting tick (a timeout at or under it gives up)
    declared: np.ndarray  # per quiet time: the tick of the declaration, -1 if none
    heard: np.ndarray  # ticks in [k0, kb) above the floor whose window overlaps this beat's speech
    narration_gaps_s: list[float]  # unpaused quiet between heard narration ticks
    deaf: bool  # a sentence of the narration no tick above the floor hears


class Simulated:
    """One tour's clock at one floor, every quiet time of ``quiets_s`` (sorted) at once."""

    def __init__(self, tour: Tour, floor: float, quiets_s: np.ndarray):
        trace = tour.trace
        t = trace.t_s
        n = t.size
        self.floor = floor
        self.speech = speech = trace.level > floor
        owner, run_beat, run_kind = run_labels(tour)
        self.t, self.owner, self.run_beat = t, owner, run_beat
        spans = pause_spans(tour)
        queue = sorted(tour.events, key=lambda e: e["t"])
        stops = [e["t"] for e in queue if e["type"] in ("terminal_response", "end")]
        self.beats: list[Played] = []
        nq = quiets_s.size
        qs = (quiets_s - EPS_S).tolist()
        tl, sp = t.tolist(), speech.tolist()
        paused = np.zeros(n, bool)
        for lo, hi in spans:
            paused |= (t >= lo) & (t < hi)  # events at a tick's time apply before it
        held = paused.tolist()
        for truth in tour.beats:
            k0 = int(np.searchsorted(t, truth.terminal_s, "left"))
            later = [s for s in stops if s > truth.terminal_s]
            ka = int(np.searchsorted(t, later[0], "left")) if later else n
            kb = ka if truth.bound == "recording end" else min(int(np.searchsorted(t, truth.bound_s, "left")), ka)
            declared = np.full(nq, -1, np.int64)
            start, last, qi = None, -1, 0
            for k in range(k0, ka):
                if start is None:
                    if sp[k]:
                        start = last = k
                    continue
                if sp[k]:
                    last = k
                    continue
                if held[k]:
                    continue  # paused: the count is frozen, nothing is declared
                count = unpaused(tl[last], tl[k], spans) if spans else tl[k] - tl[last]
                while qi < nq and count >= qs[qi]:
                    declared[qi] = k
                    qi += 1
                if qi == nq:
                    break
            # The unpaused wait at the last tick the clock waited (none: it heard speech at once).
            waited = (start - 1) if start is not None else ka - 1
            wait = unpaused(truth.terminal_s, tl[waited], spans) if waited >= k0 else float("-inf")
            mine = np.array([i for i, (b, _) in enumerate(zip(run_beat, run_kind)) if b == truth.index])
            in_span = np.arange(k0, max(k0, kb))
            heard = in_span[speech[in_span] & np.isin(owner[in_span], mine)] if mine.size else in_span[:0]
            narr = heard[[run_kind[owner[k]] == "narration" for k in heard]] if heard.size else heard
            gaps = [unpaused(float(t[a]), float(t[b]), spans) for a, b in zip(narr, narr[1:]) if b > a + 1]
            narr_runs = [i for i in mine.tolist() if run_kind[i] == "narration"]
            deaf = any(not np.any(owner[heard] == i) for i in narr_runs)
            self.beats.append(Played(truth, k0, ka, kb, start, wait, declared, heard, gaps, deaf))

    def longest_pause_s(self) -> float:
        """P at this floor: the longest unpaused quiet between heard narration ticks, over the tour."""
        return max((g for b in self.beats for g in b.narration_gaps_s), default=0.0)


def run_labels(tour: Tour) -> tuple[np.ndarray, list[int], list[str]]:
    """Per tick, the run of speech its analyser window overlaps (-1: none), and each run's beat and kind."""
    cached = tour.__dict__.get("_labels")
    if cached is not None:
        return cached
    frames = tour.trace.frames
    lo_s, hi_s = (frames - WINDOW) / RATE, frames / RATE
    owner = np.full(frames.size, -1, np.int64)
    run_beat, run_kind = [], []
    for b in tour.beats:
        for r in b.runs:
            owner[(lo_s < r.end_s) & (hi_s > r.start_s)] = len(run_beat)
            run_beat.append(b.index)
            run_kind.append(r.kind)
    tour.__dict__["_labels"] = (owner, run_beat, run_kind)
    return owner, run_beat, run_kind


def pause_spans(tour: Tour) -> tuple[tuple[float, float], ...]:
    """The page's paused spans, from its pause and resume events."""
    spans, since = [], None
    for e in sorted(tour.events, key=lambda e: e["t"]):
        if e["type"] == "pause" and since is None:
            since = e["t"]
        elif e["type"] == "resume" and since is not None:
            spans.append((since, e["t"]))
            since = None
    if since is not None:
        spans.append((since, float("inf")))
    return tuple(spans)


def noise_max(tour: Tour) -> float:
    """The loudest tick whose window hears no constructed speech (the room alone)."""
    owner, _, _ = run_labels(tour)
    room = tour.trace.level[owner < 0]
    return float(room.max()) if room.size else 0.0


def outcome(p: Played, sim: Simulated, qi: int, timeout_s: float, longest_pause_s: float) -> str:
    """The listener's outcome of one beat with quiet time ``quiets_s[qi]`` and this onset timeout.

    ``longest_pause_s`` is P of the recordings judged together at the floor.
    """
    t_end = p.truth.bound_s
    if p.ka <= p.k0:
        return "unheard"
    d = int(p.declared[qi])
    declared = 0 <= d < p.kb
    if p.heard.size == 0:
        # Nothing of the guide heard: the room taken for speech, never declared quiet, holds the tour up; where
        # the guide spoke, the clock never heard it (a missed onset), else the beat is silent.
        started = p.start is not None and p.start < p.kb and p.wait_max_s < timeout_s - EPS_S
        if started and not declared and p.truth.bound != "end":
            return "stalled"
        return "silent" if p.truth.silent else "missed-onset"
    if p.wait_max_s >= timeout_s - EPS_S:
        return "missed-onset"
    if declared:
        return "premature" if bool(np.any(p.heard > d)) else "ok"
    if p.truth.bound != "end":
        return "stalled"
    k = p.kb
    at_bound = k < sim.t.size and bool(sim.speech[k]) and sim.owner[k] >= 0
    at_bound = at_bound and sim.run_beat[sim.owner[k]] == p.truth.index
    speaking = at_bound or t_end - float(sim.t[p.heard[-1]]) < longest_pause_s
    return "aborted" if speaking else "outpaced"


def judge_setting(tours: list[Tour], floor: float, quiet_s: float, onset_timeout_s: float) -> list[str]:
    """The failing beats of these tours, judged together, at one setting (any floor and quiet time)."""
    return judge_quiets(tours, floor, np.array([quiet_s]), onset_timeout_s)[0]


def judge_quiets(tours: list[Tour], floor: float, quiets_s: np.ndarray, onset_timeout_s: float) -> list[list[str]]:
    """Per quiet time of ``quiets_s`` (sorted), the failing beats of these tours judged together."""
    return judge_grid(tours, floor, quiets_s, [onset_timeout_s])[0]


def judge_grid(tours: list[Tour], floor: float, quiets_s: np.ndarray, timeouts_s: list[float]) -> list[list[list[str]]]:
    """Per onset timeout and quiet time (``quiets_s`` sorted), the failing beats of these tours judged together."""
    sims = [Simulated(t, floor, quiets_s) for t in tours]
    p = max(s.longest_pause_s() for s in sims)
    out: list[list[list[str]]] = [[[] for _ in quiets_s] for _ in timeouts_s]
    for t, sim in zip(tours, sims):
        for b in sim.beats:
            for ti, timeout in enumerate(timeouts_s):
                for qi in range(quiets_s.size):
                    found = "deaf" if b.deaf else outcome(b, sim, qi, timeout, p)
                    if found in FAILING:
                        out[ti][qi].append(f"{t.name} beat {b.truth.index + 1}: {found}")
    return out


def layered_tour(name: str, *, floor: float = EDGE_FLOOR) -> Tour:
    """A beat whose failures are not nested in the voice's gain (for ``stress``).

    One narration of steady voiced bursts: a first sentence (1.5 s) 7.5 dB
    above ``floor``, a softer stretch (3 s) 2.5 dB above it, a last
    sentence (1.5 s) 11.5 dB above it; the next prompt 4 s after the last
    word. With a quiet time of 2 s: made 3-7 dB quieter, the soft stretch
    is a quiet the clock ends the beat in (premature); 8-11 dB quieter, only
    the last sentence is heard and the beat ends right; 12 dB or more, the
    clock hears nothing of it.
    """
    rng = np.random.default_rng(5)
    b = _Builder(floor, 0.0, 4.0)
    parts = []
    for duration, rel_db in ((1.5, 7.5), (3.0, 2.5), (1.5, 11.5)):
        level = floor * 10 ** (rel_db / 20)
        parts.append(np.concatenate([steady(rng, 0.3, level) for _ in range(int(duration / 0.3))]))
    b.beat(rng, [np.concatenate(parts)], [], end=False, page_pause=False, stopped=False, ack=None, ack_silence_s=0.0)
    b.beats[-1].bound_s = b.t = b.beats[-1].runs[-1].end_s + 4.0
    return b.tour(name)


def near_p(p: Played, sim: Simulated, longest_pause_s: float, *, ticks: int = 2) -> bool:
    """A beat the page ended whose last heard word lies within ``ticks`` of P before the end.

    There "closer to the bound than P" depends on whether the bound is taken at the end's time or at its tick,
    a choice the outcome definition leaves open: the construction does not call such a beat either way.
    """
    if p.truth.bound != "end" or p.heard.size == 0:
        return False
    gap = p.truth.bound_s - float(sim.t[p.heard[-1]])
    return abs(gap - longest_pause_s) < ticks * float(sim.t[1] - sim.t[0])
