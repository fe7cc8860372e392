"""Generate the bundled fixture recordings (run by hand; the outputs are committed).

    python recordings/make.py            # needs espeak-ng (apt-get install espeak-ng)
    python recordings/make.py sample-session-48k   # only the named recordings
    python recordings/make.py --relog     # only the logs' clock.quiet lines, from the audio there

Each recording is a synthetic voice-guide session: espeak-ng speaks the
sentences of a short tour, placed on a timeline with exact-zero silence
between utterances and low-level noise (-75 to -60 dBFS) in the pauses
inside a narration, as real TTS voices leave it. Beside each recording:

* ``NAME.events.jsonl``: the page's event log, with ``performance.now()``
  times and a ``recording.started`` line (prompts, tool-call and terminal
  responses, arrivals, and the page clock's own ``clock.quiet`` decisions,
  computed by replaying the clock over the encoded audio);
* ``NAME.labels.txt``: an Audacity label track of the ground truth (every
  utterance's start and end, and its text).

The recordings are encoded as a browser's MediaRecorder writes them (WebM
with Opus, no duration or cues), plus Ogg/Opus and WAV. Two Opus recordings
use libopus's CELT-only mode, whose digital silence decodes to exact zeros;
the stereo one lets libopus choose SILK for speech, as a browser's encoder
may, and its silence decodes to a noise floor near -91 dBFS instead. Everything is
deterministic: the same espeak-ng and libopus give the same bytes.

Licence: the texts are written for this project; espeak-ng (GPL-3.0) is a
tool run here, and its output is not covered by its licence. The recordings
are released with this repository under its licence.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import soundfile as sf
import soxr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from clock.core.events import Event, EventLog  # noqa: E402
from clock.core.levels import levels  # noqa: E402
from clock.core.replay import replay  # noqa: E402
from clock.io.decode import iter_blocks  # noqa: E402

QUIET_S = 2.5
FLOOR = 0.003
TICK = Fraction(1, 60)
T0_MS = 73519.4  # the page's performance.now() when the recorder started


@dataclass
class BeatSpec:
    sentences: list[tuple[str, float]]  # (text, pause after it in seconds; the last is ignored)
    latency_s: float = 0.6  # terminal response to narration onset
    ack: str | None = None  # an acknowledgment that overlaps the terminal response
    ack_silence_s: float = 0.8  # between the acknowledgment's end and the narration
    tool_call: bool = False  # a response.done with a function_call before the terminal one
    linger_s: float = 1.0
    idle_before_s: float = 0.0  # silence before the prompt (the visitor looks around)
    # sentence index -> seconds the page paused the clock after that sentence (the guide is silent)
    paused_after: dict[int, float] = field(default_factory=dict)
    end_in_sentence: int | None = None  # the page ends the session halfway through this sentence


@dataclass
class RecordingSpec:
    name: str
    voice: list[str]  # espeak-ng arguments
    rate_hz: int
    channels: int
    container: str  # "webm", "ogg" or "wav"
    gain: float  # applied to espeak-ng's output (peak about 0.66)
    noise_dbfs: float
    beats: list[BeatSpec]
    late_quiet_ticks: dict[int, int] = field(default_factory=dict)  # beat -> ticks the page logged late
    # libopus mode: "audio" lets it pick SILK for speech, whose silence decodes to a
    # -91 dBFS noise floor; "lowdelay" is CELT only, whose silence decodes to exact zeros.
    opus_application: str = "lowdelay"
    bit_rate: int = 48000


RECORDINGS = [
    RecordingSpec(
        "tour-en-us-48k",
        ["-v", "en-us", "-s", "165"],
        48000,
        1,
        "webm",
        0.75,
        -70,
        [
            BeatSpec(
                [
                    ("Welcome to the old harbour.", 0.45),
                    ("Boats have landed here for eight hundred years.", 0.9),
                    ("Look left, and you will see the fish market.", 0.3),
                    ("It opens at five every morning.", 0.0),
                ],
                latency_s=0.55,
            ),
            BeatSpec(
                [
                    ("This is the customs house.", 1.4),
                    ("Its clock tower was added in eighteen twelve.", 0.25),
                    ("The bell still rings at noon.", 2.3),
                    ("Listen closely, you might hear it now.", 0.0),
                ],
                ack="Sure, let me find that.",
                ack_silence_s=0.7,
            ),
            BeatSpec(
                [
                    ("Here is the lighthouse.", 0.6),
                    ("It guided ships past the northern rocks.", 1.1),
                    ("The lamp was electrified in nineteen twenty.", 0.2),
                    ("That is the end of our walk.", 0.0),
                ],
                tool_call=True,
                latency_s=0.9,
            ),
        ],
        late_quiet_ticks={1: 1},
    ),
    RecordingSpec(
        "tour-en-gb-48k-stereo",
        ["-v", "en-gb-x-rp", "-s", "150", "-p", "40"],
        48000,
        2,
        "webm",
        0.72,
        -65,
        [
            BeatSpec(
                [
                    ("Good afternoon, and welcome to the gardens.", 0.35),
                    ("The glasshouse ahead holds palms from Brazil.", 1.7),
                    ("Mind the step as you enter.", 0.5),
                    ("It is warm inside all year.", 0.0),
                ],
                latency_s=0.45,
            ),
            BeatSpec(
                [
                    ("Now we reach the rose garden.", 0.8),
                    ("There are over four hundred varieties.", 2.1),
                    ("The oldest was planted by the founder.", 0.0),
                ],
                ack="One moment, please.",
                ack_silence_s=1.1,
                tool_call=True,
            ),
            BeatSpec(
                [
                    ("Finally, the lake.", 1.0),
                    ("Swans nest on the island every spring.", 0.4),
                    ("Thank you for visiting.", 0.0),
                ],
                latency_s=1.2,
            ),
        ],
        opus_application="audio",
    ),
    RecordingSpec(
        "tour-en-us-f3-48k",
        ["-v", "en-us+f3", "-s", "175"],
        48000,
        1,
        "ogg",
        0.55,
        -75,
        [
            BeatSpec(
                [
                    ("This quiet room is the library.", 0.6),
                    ("Please keep your voice low.", 1.9),
                    ("The shelves hold ten thousand books.", 0.28),
                    ("Some are older than the building itself.", 0.0),
                ],
                latency_s=0.7,
            ),
            BeatSpec(
                [
                    ("The reading desk was made from a ship's timber.", 1.25),
                    ("Touch it gently.", 0.75),
                    ("Next we go upstairs.", 0.0),
                ],
                ack="Okay.",
                ack_silence_s=0.6,
            ),
            BeatSpec(
                [
                    ("The map room is on your right.", 2.0),
                    ("Its charts cover every coast of the island.", 0.5),
                    ("We will end our tour here.", 0.0),
                ],
                latency_s=0.5,
            ),
        ],
    ),
    RecordingSpec(
        "short-en-029-44k",
        ["-v", "en-029", "-s", "160"],
        44100,
        1,
        "wav",
        0.6,
        -68,
        [
            BeatSpec([("Welcome aboard the ferry.", 0.65), ("The crossing takes twenty minutes.", 0.0)], latency_s=0.4),
            BeatSpec([("On the left is the fort.", 1.6), ("It was never attacked.", 0.0)], latency_s=0.8),
        ],
    ),
]


# A session as a visitor lives it, for the README's pictures: acknowledgments, a tool
# call, a long pause between stops, a beat the visitor paused, and (with ABORTED_BEAT)
# a last beat the page ended while the guide spoke (the visitor closed the tour).
ABORTED_BEAT = True
SAMPLE = RecordingSpec(
    "sample-session-48k",
    ["-v", "en-gb-x-rp", "-s", "160"],
    48000,
    1,
    "webm",
    0.7,
    -70,
    [
        BeatSpec(
            [
                ("Hello, and welcome to the city museum.", 0.5),
                ("I will be your guide for the next few rooms.", 0.9),
                ("Walk through the arch when you are ready.", 0.0),
            ],
            latency_s=0.6,
        ),
        BeatSpec(
            [
                ("This is the Roman gallery.", 0.7),
                ("The mosaic on the floor was found under the market square.", 1.6),
                ("It shows a sea god surrounded by fish.", 0.4),
                ("Almost every tile is original.", 0.0),
            ],
            ack="Sure, let me look that up.",
            ack_silence_s=0.7,
            tool_call=True,
        ),
        BeatSpec(
            [
                ("The coins in this case were minted in the city.", 0.6),
                ("The oldest is nearly two thousand years old.", 2.2),
                ("Take your time with them.", 0.0),
            ],
            latency_s=0.8,
        ),
        BeatSpec(
            [
                ("Welcome back.", 0.5),
                ("Upstairs is the gallery of maps.", 0.8),
                ("The largest shows the harbour in sixteen fifty.", 0.0),
            ],
            latency_s=0.7,
            idle_before_s=40.0,
        ),
        BeatSpec(
            [
                ("This map was drawn by a ship's captain.", 0.4),
                ("He marked every sandbank by hand.", 0.5),
                ("Notice the sea monsters in the corners.", 1.1),
                ("Mapmakers drew them where nobody had sailed.", 0.0),
            ],
            latency_s=0.6,
            paused_after={1: 7.0},
        ),
        BeatSpec(
            [
                ("They were a warning to sailors, and partly a joke.", 0.6),
                ("Nobody believed in them even then.", 0.0),
            ],
            ack="Good question.",
            ack_silence_s=0.5,
            latency_s=0.5,
        ),
        BeatSpec(
            [
                ("The last room holds the clock collection.", 0.6),
                ("Each clock was wound by hand every morning.", 0.9),
                ("The tallest one chimes on the hour.", 0.0),
            ],
            tool_call=True,
            latency_s=1.1,
        ),
        BeatSpec(
            [
                ("Before you leave, look up at the ceiling.", 0.5),
                ("It was painted in a single summer.", 0.0),
            ],
            latency_s=0.6,
            end_in_sentence=1 if ABORTED_BEAT else None,
        ),
    ],
    bit_rate=24000,
)


def speak(text: str, voice: list[str]) -> tuple[np.ndarray, int]:
    """espeak-ng's rendering of ``text``, without its leading and trailing silence."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.wav"
        subprocess.run(["espeak-ng", *voice, "-w", str(out), text], check=True)
        x, rate = sf.read(str(out), dtype="float32")
    nz = np.flatnonzero(x)
    return x[nz[0] : nz[-1] + 1], rate


class Timeline:
    def __init__(self, spec: RecordingSpec) -> None:
        self.spec = spec
        self.parts: list[tuple[float, np.ndarray]] = []  # (start_s, samples at rate_hz)
        self.noise: list[tuple[float, float]] = []
        self.labels: list[tuple[float, float, str]] = []
        self.events: list[dict] = []

    def utter(self, start_s: float, text: str, tag: str, *, cut: float = 1.0) -> float:
        """Place an utterance; ``cut`` < 1 keeps that share of it (the page stopped the audio)."""
        x, rate = speak(text, self.spec.voice)
        y = soxr.resample(x, rate, self.spec.rate_hz, quality="VHQ").astype(np.float32) * self.spec.gain
        y = y[: int(round(cut * y.size))]
        self.parts.append((start_s, y))
        end_s = start_s + y.size / self.spec.rate_hz
        self.labels.append((start_s, end_s, f"{tag}: {text}"))
        return end_s

    def event(self, type_: str, t_s: float, **fields: object) -> None:
        self.events.append({"type": type_, "t_ms": round(T0_MS + 1000 * t_s, 1), **fields})

    def render(self, duration_s: float, seed: int) -> np.ndarray:
        n = int(round(duration_s * self.spec.rate_hz))
        x = np.zeros(n, np.float32)
        rng = np.random.default_rng(seed)
        for a_s, b_s in self.noise:
            a, b = int(round(a_s * self.spec.rate_hz)), int(round(b_s * self.spec.rate_hz))
            x[a:b] = (rng.standard_normal(b - a) * 10 ** (self.spec.noise_dbfs / 20)).astype(np.float32)
        for start_s, y in self.parts:
            a = int(round(start_s * self.spec.rate_hz))
            x[a : a + y.size] = y
        return x


def compose(spec: RecordingSpec) -> Timeline:
    tl = Timeline(spec)
    t = 0.8
    for i, beat in enumerate(spec.beats):
        t += beat.idle_before_s
        tl.event("prompt", t)
        if beat.tool_call:
            tl.event("response.done", t + 0.35, response={"output": [{"type": "function_call", "name": "move_camera"}]})
        if beat.ack:
            ack_start = t + 0.3
            ack_end = tl.utter(ack_start, beat.ack, f"beat {i + 1} ack")
            terminal = ack_start + 0.5 * (ack_end - ack_start)
            onset = ack_end + beat.ack_silence_s
        else:
            terminal = t + 0.7
            onset = terminal + beat.latency_s
        tl.event("terminal_response", terminal, linger_s=beat.linger_s)
        start = onset
        for j, (text, pause) in enumerate(beat.sentences):
            if j == beat.end_in_sentence:
                end = tl.utter(start, text, f"beat {i + 1} sentence {j + 1} (cut)", cut=0.5)
                tl.event("end", end)
                tl.duration_s = end + 1.0  # type: ignore[attr-defined]
                return tl
            end = tl.utter(start, text, f"beat {i + 1} sentence {j + 1}")
            if j in beat.paused_after:
                tl.event("pause", end + 0.3)
                tl.event("resume", end + 0.3 + beat.paused_after[j])
                pause += beat.paused_after[j]
            if j + 1 < len(beat.sentences):
                tl.noise.append((end, end + pause))
                start = end + pause
        t = end + QUIET_S + beat.linger_s + 0.5
        tl.event("arrival", end + QUIET_S + beat.linger_s)
    tl.duration_s = t + 0.5  # type: ignore[attr-defined]
    return tl


def encode(path: Path, x: np.ndarray, spec: RecordingSpec) -> None:
    samples = np.stack([x, x], axis=1) if spec.channels == 2 else x[:, None]
    if spec.container == "wav":
        sf.write(str(path), samples, spec.rate_hz, subtype="PCM_16")
        return
    fmt = {"webm": "webm", "ogg": "ogg"}[spec.container]
    options = {"fflags": "+bitexact"} | ({"live": "1"} if fmt == "webm" else {})
    layout = "stereo" if spec.channels == 2 else "mono"
    with av.open(str(path), "w", format=fmt, options=options) as out:
        stream = out.add_stream(
            "libopus", rate=spec.rate_hz, layout=layout, options={"application": spec.opus_application}
        )
        stream.bit_rate = spec.bit_rate
        for start in range(0, samples.shape[0], 960):
            chunk = np.ascontiguousarray(samples[start : start + 960].reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(chunk, format="flt", layout=layout)
            frame.sample_rate = spec.rate_hz
            frame.pts = start
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def page_clock_quiet(path: Path, events: list[dict], spec: RecordingSpec) -> list[float]:
    """The page clock's clock.quiet times: the replay over what the page heard.

    A tick's time is its frame over the rate, as the page measures it; a beat the page logged
    ``late_quiet_ticks`` late is logged at that later tick's time.
    """
    audio = np.concatenate(list(iter_blocks(path)))
    trace = levels(audio, spec.rate_hz)
    log = EventLog(
        tuple(
            Event(kind, e["type"], (e["t_ms"] - T0_MS) / 1000)
            for e in events
            for kind in [{"terminal_response": "terminal"}.get(e["type"], e["type"])]
            if kind in ("terminal", "pause", "resume", "end")
        )
    )
    played = replay(trace, log, floor=FLOOR, quiet_s=QUIET_S)
    t = trace.t_s
    return [
        float(t[int(np.searchsorted(t, r.quiet_declared_s)) + spec.late_quiet_ticks.get(i, 0)])
        for i, r in enumerate(played)
        if r.quiet_declared_s is not None
    ]


def relog(spec: RecordingSpec, folder: Path) -> Path:
    """Rewrite only the ``clock.quiet`` lines of a recording's log, from the audio already there."""
    path = folder / f"{spec.name}.{spec.container}"
    log_path = folder / f"{spec.name}.events.jsonl"
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    head, rest = lines[:1], [e for e in lines[1:] if e["type"] != "clock.quiet"]
    rest += [{"type": "clock.quiet", "t_ms": round(T0_MS + 1000 * t, 1)} for t in page_clock_quiet(path, rest, spec)]
    rest.sort(key=lambda e: e["t_ms"])
    log_path.write_text("\n".join(json.dumps(e) for e in head + rest) + "\n")
    return path


def make(spec: RecordingSpec, folder: Path, seed: int) -> Path:
    tl = compose(spec)
    x = tl.render(tl.duration_s, seed)  # type: ignore[attr-defined]
    path = folder / f"{spec.name}.{spec.container}"
    encode(path, x, spec)
    for t in page_clock_quiet(path, tl.events, spec):
        tl.event("clock.quiet", t)
    tl.events.sort(key=lambda e: e["t_ms"])
    lines = [json.dumps({"type": "recording.started", "t_ms": T0_MS})] + [json.dumps(e) for e in tl.events]
    (folder / f"{spec.name}.events.jsonl").write_text("\n".join(lines) + "\n")
    (folder / f"{spec.name}.labels.txt").write_text("".join(f"{a:.6f}\t{b:.6f}\t{text}\n" for a, b, text in tl.labels))
    return path


def main(names: list[str]) -> None:
    """Make the named recordings (all of them when none is named); ``--relog`` rewrites only the
    logs' ``clock.quiet`` lines from the recordings already there (no espeak-ng needed)."""
    only_log = "--relog" in names
    names = [n for n in names if n != "--relog"]
    for seed, spec in enumerate([*RECORDINGS, SAMPLE]):
        if names and spec.name not in names:
            continue
        path = relog(spec, HERE) if only_log else make(spec, HERE, seed)
        print(f"{path.name}: {path.stat().st_size / 1024:.0f} KiB, {len(spec.beats)} beats")


if __name__ == "__main__":
    main(sys.argv[1:])
