"""Random tours of a synthetic voice, with their ground truth (no files, no corpus needed).

A voice here is words: harmonic bursts of 0.15-0.45 s with a smooth
envelope, their loudness varying by word, short dips between words, longer
pauses between sentences. A tour is beats as the page logs them (a prompt,
the terminal response, sometimes an acknowledgment over it, the narration,
the next prompt after some room). Each corpus draws its own voice loudness,
room (exact zeros, comfort noise under everything, noise only in pauses),
pauses, rooms after the last word and log damage (no prompts, no terminal
responses, no log). The truth is the construction's (tests/construction.py).
"""

from __future__ import annotations

import numpy as np
from construction import RATE, BeatTruth, Layout, Run, Tour, generated_cache, pink, words, write_atomically


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
    lay = Layout()
    t = 0.5
    n_beats = int(rng.integers(2, 4))
    aborted_beat = int(rng.integers(n_beats)) if abort else -1
    silent_beat = int(rng.integers(n_beats)) if silent else -1
    for k in range(n_beats):
        lay.event("prompt", t)
        terminal = t + rng.uniform(0.4, 1.0)
        lay.event("terminal_response", terminal)
        if k == silent_beat:
            t = terminal + float(rng.uniform(3.0, 5.0))
            lay.beats.append(BeatTruth(k, terminal, t, "prompt"))
            continue
        runs: list[Run] = []
        start = terminal + rng.uniform(0.3, 1.4)
        if rng.random() < 0.4:  # an acknowledgment over the terminal response
            ack_end = lay.say(terminal - 0.3, words(rng, rng.uniform(0.5, 1.0), level), "ack", runs)
            start = max(start, ack_end + rng.uniform(0.3, 0.8))
        cursor = start
        n_sentences = int(rng.integers(2, 5))
        for i in range(n_sentences):
            sentence = words(rng, rng.uniform(1.0, 3.0), level)
            if k == aborted_beat and i == n_sentences - 1:
                # The visitor ends the beat in the middle of its last sentence: the audio stops there.
                sentence = sentence[: int(sentence.size * rng.uniform(0.3, 0.7))]
            cursor = lay.say(cursor, sentence, "narration", runs)
            if i < n_sentences - 1:
                cursor += float(rng.choice([0.3, 0.6, 1.0, 1.5, 2.0, 2.3]))
        if k == aborted_beat:
            lay.event("end", cursor)
            lay.beats.append(BeatTruth(k, terminal, cursor, "end", tuple(runs), speaking_at_end=True))
            t = cursor + float(rng.uniform(1.0, 3.0))
            continue
        t = cursor + float(rng.uniform(3.2, 5.0))
        lay.beats.append(BeatTruth(k, terminal, t, "prompt", tuple(runs)))
    duration = t + 0.5
    if not lay.beats[-1].silent:
        lay.close(duration)  # no prompt follows the last beat: the log bounds it by the recording's end
    tour = lay.tour(name, duration, has_log=log != "none")
    x = tour.samples
    if room == "comfort":
        rel = rng.uniform(-36, -26) if noise_rel_db is None else noise_rel_db
        x += rng.standard_normal(x.size) * level * 10 ** (rel / 20)
    elif room == "pauses":
        noise = level * 10 ** ((rng.uniform(-40, -30) if noise_rel_db is None else noise_rel_db - 4) / 20)
        for a, b in (p for truth in lay.beats for p in truth.narration_pauses):
            i, j = int(a * RATE), int(b * RATE)
            x[i:j] += rng.standard_normal(j - i) * noise
    if bed_dbfs is not None:
        x += pink(rng, x.size, 10 ** (bed_dbfs / 20))
    if log == "no-prompt":
        tour.events = [e for e in tour.events if e["type"] != "prompt"]
    elif log == "no-terminal":
        tour.events = [e for e in tour.events if e["type"] != "terminal_response"]
    return tour


#: The kinds of random corpora: plain, and each documented hardship.
KINDS = ("plain", "aborted", "silent", "bed", "quiet", "opus")


def random_corpus(seed: int, kind: str = "plain", *, setup: int | None = None) -> list[Tour]:
    """:func:`generate_corpus`, built once for given parameters and generator: later calls (other tests,
    other workers, later runs) read the same corpus back from a cache keyed by them (fresh objects each time).
    """
    import pickle

    key = f"{seed}-{kind}-{setup}"
    if kind == "opus":
        import av

        key += f"-av{av.__version__}"
    path = generated_cache() / f"{key}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    tours = generate_corpus(seed, kind, setup=setup)
    write_atomically(path, tours)
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
