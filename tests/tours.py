"""Random tours of a synthetic voice, with their ground truth (no files, no corpus needed).

A voice here is words: harmonic bursts of 0.15-0.45 s with a smooth
envelope, their loudness varying by word, short dips between words, longer
pauses between sentences. A tour is beats as the page logs them (a prompt,
the terminal response, sometimes an acknowledgment over it, the narration,
the next prompt after some room). Each corpus draws its own voice loudness,
room (exact zeros, comfort noise under everything, noise only in pauses),
pauses, rooms after the last word and log damage (no prompts, no terminal
responses, no log). The truth is the construction's, as in tests/voices.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from voices import BeatTruth

from clock.core.events import Event, EventLog
from clock.core.levels import levels
from clock.core.model import Observation

RATE = 16000  # enough for the level; keeps the tests fast


def words(rng: np.random.Generator, duration_s: float, level: float) -> np.ndarray:
    """Speech-like words filling ``duration_s``: harmonic bursts with dips between them."""
    n = int(duration_s * RATE)
    x = np.zeros(n)
    t = 0.0
    f0 = rng.uniform(110, 230)
    while t < duration_s - 0.1:
        length = min(rng.uniform(0.15, 0.45), duration_s - t)
        m = int(length * RATE)
        tt = np.arange(m) / RATE
        tone = sum(np.sin(2 * np.pi * f0 * h * tt + rng.uniform(0, 6)) / h for h in range(1, 6))
        envelope = np.sin(np.pi * np.arange(m) / m) ** 0.5
        gain = level * 10 ** (rng.uniform(-6, 4) / 20)
        burst = tone * envelope
        burst *= gain / max(np.sqrt(np.mean(burst**2)), 1e-12)
        i = int(t * RATE)
        x[i : i + m] += burst[: n - i]
        t += length + rng.uniform(0.04, 0.14)
    return x


@dataclass
class Tour:
    """One recording of a random tour: samples, log and truth."""

    name: str
    samples: np.ndarray
    events: list[dict]
    truths: list[BeatTruth]
    has_log: bool = True

    def write(self, folder) -> None:
        """``NAME.wav`` and, with a log, ``NAME.events.jsonl`` (as the page's capture helper writes them)."""
        import json

        import soundfile as sf

        sf.write(str(folder / f"{self.name}.wav"), np.clip(self.samples, -1, 1).astype(np.float32), RATE, "FLOAT")
        if self.has_log:
            kinds = {"terminal": "terminal_response"}
            lines = [{"type": kinds.get(e["kind"], e["kind"]), "t": e["t"]} for e in self.events]
            (folder / f"{self.name}.events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    def observation(self) -> Observation:
        trace = cached_levels(self.samples.astype(np.float32))
        if not self.has_log:
            return Observation(self.name, trace)
        log = EventLog(tuple(Event(e["kind"], e["kind"], e["t"], i + 1, None) for i, e in enumerate(self.events)))
        return Observation(self.name, trace, log)


def pink(rng: np.random.Generator, n: int, rms: float) -> np.ndarray:
    """Pink noise (1/f power) of ``n`` samples at this RMS.

    The white noise is padded with zeros to a length the FFT takes fast (a
    tour's length can be a large prime, ten times slower), and the filtered
    noise cut back to ``n``.
    """
    from scipy.fft import next_fast_len

    size = next_fast_len(n, real=True)
    spectrum = np.fft.rfft(rng.standard_normal(n), size)
    f = np.arange(spectrum.size)
    spectrum[1:] /= np.sqrt(f[1:])
    spectrum[0] = 0
    x = np.fft.irfft(spectrum, size)[:n]
    return x * rms / max(float(np.sqrt(np.mean(x**2))), 1e-12)


def random_tour(
    rng: np.random.Generator,
    name: str,
    *,
    level: float,
    room: str,
    log: str,
    abort: bool = False,
    silent: bool = False,
    bed_dbfs: float | None = None,
    noise_rel_db: float | None = None,
) -> Tour:
    """A tour of 2 or 3 beats, its noise and log damage as asked.

    ``abort``: the page ends one beat (``end``) in the middle of a sentence
    (the audio stops there); ``silent``: one beat gets a terminal response
    and no speech; ``bed_dbfs``: pink noise at this RMS under the whole
    recording (a room); ``noise_rel_db``: the room's noise against the
    voice (else drawn: -36 to -26 dB for comfort noise, -40 to -30 dB in
    pauses).
    """
    pieces: list[tuple[float, np.ndarray]] = []
    pauses: list[tuple[float, float]] = []
    events: list[dict] = []
    truths: list[BeatTruth] = []
    t = 0.5
    n_beats = int(rng.integers(2, 4))
    aborted_beat = int(rng.integers(n_beats)) if abort else -1
    silent_beat = int(rng.integers(n_beats)) if silent else -1
    for k in range(n_beats):
        events.append({"kind": "prompt", "t": t})
        terminal = t + rng.uniform(0.4, 1.0)
        events.append({"kind": "terminal", "t": terminal})
        if k == silent_beat:
            wait = float(rng.uniform(3.0, 5.0))
            truths.append(BeatTruth(terminal, terminal + wait, terminal + wait, terminal + wait, 0.0, silent=True))
            t = terminal + wait
            continue
        start = terminal + rng.uniform(0.3, 1.4)
        if rng.random() < 0.4:  # an acknowledgment over the terminal response
            ack = words(rng, rng.uniform(0.5, 1.0), level)
            at = terminal - 0.3
            pieces.append((at, ack))
            start = max(start, at + ack.size / RATE + rng.uniform(0.3, 0.8))
        cursor, longest = start, 0.0
        n_sentences = int(rng.integers(2, 5))
        for i in range(n_sentences):
            sentence = words(rng, rng.uniform(1.0, 3.0), level)
            if k == aborted_beat and i == n_sentences - 1:
                # The visitor ends the beat in the middle of its last sentence: the audio stops there.
                sentence = sentence[: int(sentence.size * rng.uniform(0.3, 0.7))]
            pieces.append((cursor, sentence))
            cursor += sentence.size / RATE
            if i < n_sentences - 1:
                gap = float(rng.choice([0.3, 0.6, 1.0, 1.5, 2.0, 2.3]))
                pauses.append((cursor, cursor + gap))
                longest = max(longest, gap)
                cursor += gap
        if k == aborted_beat:
            events.append({"kind": "end", "t": cursor})
            truths.append(BeatTruth(terminal, start, cursor, cursor, longest, aborted=True))
            t = cursor + float(rng.uniform(1.0, 3.0))
            continue
        room_s = float(rng.uniform(3.2, 5.0))
        truths.append(BeatTruth(terminal, start, cursor, cursor + room_s, longest))
        t = cursor + room_s
    duration = t + 0.5
    if not truths[-1].aborted and not truths[-1].silent:
        # No prompt follows the last beat: the log bounds it by the recording's end.
        truths[-1].bound_s = duration
    x = np.zeros(int(duration * RATE))
    for at, piece in pieces:
        i = int(round(at * RATE))
        x[i : i + piece.size] += piece[: x.size - i]
    if room == "comfort":
        rel = rng.uniform(-36, -26) if noise_rel_db is None else noise_rel_db
        x += rng.standard_normal(x.size) * level * 10 ** (rel / 20)
    elif room == "pauses":
        noise = level * 10 ** ((rng.uniform(-40, -30) if noise_rel_db is None else noise_rel_db - 4) / 20)
        for a, b in pauses:
            i, j = int(a * RATE), int(b * RATE)
            x[i:j] += rng.standard_normal(j - i) * noise
    if bed_dbfs is not None:
        x += pink(rng, x.size, 10 ** (bed_dbfs / 20))
    if log == "no-prompt":
        events = [e for e in events if e["kind"] != "prompt"]
    elif log == "no-terminal":
        events = [e for e in events if e["kind"] != "terminal"]
    return Tour(name, x, events, truths, has_log=log != "none")


#: The kinds of random corpora: plain, and each documented hardship.
KINDS = ("plain", "aborted", "silent", "bed", "quiet", "opus")


@cache
def _corpus_cache() -> Path:
    """Where generated corpora are kept between runs, keyed by the generator's own source and the
    libraries its draws depend on: outside the repository, shared by a run's workers."""
    import hashlib
    import tempfile

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256(np.__version__.encode())
    for name in ("tours.py", "voices.py"):
        digest.update((here / name).read_bytes())
    base = Path(os.environ.get("XDG_CACHE_HOME") or tempfile.gettempdir())
    return base / "speechclock-tests" / f"tours-{digest.hexdigest()[:16]}"


@cache
def _core_digest() -> str:
    """The tool's pure core, by content: a trace cached under it is the trace the code would compute now."""
    import hashlib

    core = Path(__file__).resolve().parent.parent / "clock" / "core"
    digest = hashlib.sha256(np.__version__.encode())
    for path in sorted(core.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cached_levels(x: np.ndarray):
    """``levels(x, RATE)``, cached by the samples' content and the core's source (so a change to how levels
    are computed is never hidden by the cache)."""
    import hashlib
    import pickle

    key = hashlib.sha256(x.tobytes()).hexdigest()[:24]
    path = _corpus_cache() / f"traces-{_core_digest()}" / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    trace = levels(x, RATE)
    _write_atomically(path, trace)
    return trace


def _write_atomically(path: Path, value) -> None:
    import pickle

    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    with open(part, "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(part, path)  # whole or absent, whichever worker writes it first


def random_corpus(seed: int, kind: str = "plain", *, setup: int | None = None) -> list[Tour]:
    """:func:`generate_corpus`, built once for given parameters and generator: later calls (other tests,
    other workers, later runs) read the same corpus back from a cache keyed by them (fresh objects each time).
    """
    import pickle

    key = f"{seed}-{kind}-{setup}"
    if kind == "opus":
        import av

        key += f"-av{av.__version__}"
    path = _corpus_cache() / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    tours = generate_corpus(seed, kind, setup=setup)
    _write_atomically(path, tours)
    return tours


def generate_corpus(seed: int, kind: str = "plain", *, setup: int | None = None) -> list[Tour]:
    """Three to five tours with different voices, rooms and logs.

    ``kind``: ``plain``; ``aborted`` (tours whose page ends a beat mid-sentence,
    at least one); ``silent`` (a beat with no speech, at least one);
    ``bed`` (pink noise at -60 to -45 dBFS under each whole recording);
    ``quiet`` (every voice 12 dB quieter); ``opus`` (each recording
    re-encoded as Opus at 32 kb/s and decoded, as the page's recorder would).

    ``setup``: the voices, rooms and logs come from this seed instead, and
    only what is said (beats, sentences, pauses, timing) from ``seed``: the
    same guide in the same rooms, next week.
    """
    rng = np.random.default_rng(seed)
    given = rng if setup is None else np.random.default_rng(setup)
    tours = []
    n = int(given.integers(3, 6))
    for i in range(n):
        level = float(10 ** given.uniform(np.log10(0.015), np.log10(0.25)))
        room = str(given.choice(["zero", "zero", "comfort", "pauses"]))
        log = str(given.choice(["full", "full", "full", "no-prompt", "no-terminal", "none"]))
        extra: dict = {}
        if kind in ("aborted", "silent"):
            extra[{"aborted": "abort", "silent": "silent"}[kind]] = i == 0 or bool(rng.random() < 0.4)
            if i == 0:
                log = "full"
        elif kind == "bed":
            extra["bed_dbfs"] = float(given.uniform(-60, -45))
        elif kind == "quiet":
            level *= 10 ** (-12 / 20)
        if setup is not None:
            extra["noise_rel_db"] = float(given.uniform(-36, -26))
        tour = random_tour(rng, f"tour{i}-{room}-{log}", level=level, room=room, log=log, **extra)
        if kind == "opus":
            tour.samples = opus_roundtrip(tour.samples)
        tours.append(tour)
    return tours


def opus_roundtrip(x: np.ndarray, bitrate: int = 32000) -> np.ndarray:
    """``x`` encoded as Opus (libopus, through PyAV) at ``bitrate`` and decoded, aligned to the input."""
    import io

    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=RATE)
        stream.bit_rate = bitrate
        stream.layout = "mono"
        frame = av.AudioFrame.from_ndarray(np.clip(x, -1, 1).astype(np.float32)[None, :], format="flt", layout="mono")
        frame.sample_rate = RATE
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    buf.seek(0)
    chunks = []
    resampler = av.AudioResampler(format="flt", layout="mono", rate=RATE)  # libopus decodes at 48 kHz
    with av.open(buf) as inp:
        for f in inp.decode(audio=0):
            for g in resampler.resample(f):
                chunks.append(g.to_ndarray().reshape(-1))
        for g in resampler.resample(None):
            chunks.append(g.to_ndarray().reshape(-1))
    y = np.concatenate(chunks).astype(np.float64)
    y = y[: x.size]
    return np.pad(y, (0, x.size - y.size))


def reading_corpus(seed: int, corpus: Path) -> list[Tour]:
    """Two or three tours cut from a human reading (LibriVox, ``human-read/sonnet001.wav`` of the shared corpus).

    The reading's own speech and pauses (its ``.vad.tsv``) make the
    narrations: runs of 2-4 utterances with the real pauses between them.
    The waits (before the narration, and the room after its last word) are
    the recording's own room tone: its non-speech stretches, tiled. Each
    tour gets its own grouping, latencies, rooms and gain (0 to -6 dB).
    """
    import soundfile as sf

    wav = corpus / "human-read" / "sonnet001.wav"
    x, rate = sf.read(str(wav), dtype="float64")
    assert rate == RATE
    spans = []
    for row in (corpus / "human-read" / "sonnet001.vad.tsv").read_text().splitlines():
        a, b, what = row.split("\t")
        spans.append((float(a), float(b), what))
    speech = [(a, b) for a, b, w in spans if w == "speech"]
    tone = np.concatenate(
        [x[int((a + 0.05) * RATE) : int((b - 0.05) * RATE)] for a, b, w in spans if w == "nonspeech" and b - a > 0.4]
    )
    rng = np.random.default_rng(seed)

    def room(duration_s: float) -> np.ndarray:
        n = int(duration_s * RATE)
        start = int(rng.integers(tone.size))
        return np.resize(np.roll(tone, -start), n)

    tours = []
    first = int(rng.integers(0, 2))
    for k in range(4):
        pieces: list[np.ndarray] = []
        events: list[dict] = []
        truths: list[BeatTruth] = []
        t = 0.0
        gain = 10 ** (-rng.uniform(0, 6) / 20)
        while first < len(speech) - 1 and len(truths) < 3:
            n = int(rng.integers(2, 5))
            group = speech[first : first + n]
            first += n
            lead = 0.5 + float(rng.uniform(0.5, 1.2))  # prompt, terminal response, then the narration
            pieces.append(room(lead))
            events.append({"kind": "prompt", "t": t})
            events.append({"kind": "terminal", "t": t + 0.5})
            start = t + lead
            narration = x[int(group[0][0] * RATE) : int(group[-1][1] * RATE)]
            pauses = [b2[0] - b1[1] for b1, b2 in zip(group, group[1:])]
            pieces.append(narration)
            end = start + narration.size / RATE
            room_s = float(rng.uniform(3.5, 5.0))
            pieces.append(room(room_s))
            truths.append(BeatTruth(t + 0.5, start, end, end + room_s, max(pauses, default=0.0)))
            t = end + room_s
        if not truths:
            break
        truths[-1].bound_s = t
        tours.append(Tour(f"reading{k}", np.concatenate(pieces) * gain, events, truths))
    return tours
