"""Benchmark: levels of a long WebM/Opus voice recording against a bare libopus decode of it.

Writes a WebM of a synthetic voice (libopus, 32 kb/s, ``application=voip``:
SILK and hybrid packets, as a realtime voice model's speech), then times, each
in a fresh process and interleaved:

* ``levels``: ``speechclock levels FILE -o /dev/null``, run in the process
  (demux, libopus 16-bit decode, Chromium's int16 -> float rule, down-mix,
  60 Hz rms, the CSV);
* ``decode``: the bare decode, PyAV's demuxer and libopus decoder with each
  frame's samples taken as a numpy array, nothing else.

CPU time (both threads) is reported beside wall time: on a machine whose
cores are busy with other work, it is the steadier measure.

It also measures how FFmpeg's own Opus decoder differs from libopus on the
same kind of speech (``--decoders``).

Usage::

    python benchmarks/bench_opus.py                 # 60 minutes, 5 runs each (best and median)
    python benchmarks/bench_opus.py --decoders      # decoder differences on 5 minutes

The WebM is written to a temporary folder and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from signals import voice  # noqa: E402

CHILD = r"""
import json, resource, sys, time
path, job = sys.argv[1], sys.argv[2]
start = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = start.ru_utime + start.ru_stime
t0 = time.perf_counter()
if job == "levels":
    import os
    from clock.cli import main
    main(["levels", path, "-o", os.devnull], standalone_mode=False)  # the command, its CSV included
    n = 0
else:
    import av
    n = 0
    with av.open(path) as container:
        stream = container.streams.audio[0]
        ctx = av.CodecContext.create("libopus", "r")
        ctx.extradata = stream.codec_context.extradata
        ctx.sample_rate = stream.codec_context.sample_rate
        ctx.layout = stream.codec_context.layout
        for packet in container.demux(stream):
            for frame in ctx.decode(packet):
                n += frame.to_ndarray().shape[-1]
wall = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
cpu = usage.ru_utime + usage.ru_stime - cpu0
try:  # VmHWM starts afresh at exec; ru_maxrss keeps the parent's high-water mark across fork and exec
    with open("/proc/self/status") as f:
        peak_kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak_kb = usage.ru_maxrss
print(json.dumps({"job": job, "wall_s": wall, "cpu_s": cpu, "peak_mb": peak_kb / 1024, "n": n}))
"""


def write_webm(path: Path, minutes: float, *, bitrate: int = 32000, fmt: str = "webm") -> None:
    """A voice recording: one synthetic minute, encoded over and over with libopus."""
    minute = voice(syllables=150)
    minute = np.resize(minute, 48000 * 60)
    pcm = np.clip(np.round(minute * 32767), -32768, 32767).astype(np.int16)
    with av.open(str(path), mode="w", format=fmt) as out:
        stream = out.add_stream("libopus", rate=48000, layout="mono")
        stream.bit_rate = bitrate
        stream.codec_context.options = {"application": "voip"}
        pts = 0
        for _ in range(int(round(minutes))):
            for start in range(0, pcm.size, 960):
                frame = av.AudioFrame.from_ndarray(pcm[start : start + 960].reshape(1, -1), format="s16", layout="mono")
                frame.sample_rate = 48000
                frame.pts = pts
                frame.time_base = Fraction(1, 48000)
                pts += 960
                for packet in stream.encode(frame):
                    out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def run(path: Path, job: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), job], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def decoders(tmp: Path) -> None:
    """How far FFmpeg's native Opus decoder is from libopus, per sample and per tick."""
    from clock.core.levels import levels
    from clock.io.decode import iter_blocks

    header = f"{'file':<30}{'modes':>22}{'sample max':>12}{'level max':>11}{'level p99':>11}{'dB p99':>8}"
    print(header + f"{'crossings':>11}")
    for bitrate, application in ((24000, "voip"), (48000, "voip"), (32000, "audio")):
        path = tmp / f"voice-{bitrate // 1000}k-{application}.ogg"
        write_webm(path, 5, bitrate=bitrate, fmt="ogg")
        modes = {"silk": 0, "hybrid": 0, "celt": 0}
        with av.open(str(path)) as container:
            for packet in container.demux(container.streams.audio[0]):
                if packet.size:
                    config = bytes(packet)[0] >> 3
                    modes["silk" if config < 12 else "hybrid" if config < 16 else "celt"] += 1
        ours = np.concatenate(list(iter_blocks(path)))
        with av.open(str(path)) as container:
            native = np.concatenate([f.to_ndarray()[0] for f in container.decode(container.streams.audio[0])])
        a, b = levels(ours, 48000), levels(native, 48000)
        diff = np.abs(a.level - b.level)
        speech = a.level > 0.003
        db = np.abs(20 * np.log10(b.level[speech] / a.level[speech]))
        crossings = int(np.count_nonzero((a.level > 0.0045) != (b.level > 0.0045)))
        total = sum(modes.values())
        share = f"{modes['silk'] / total:.0%} silk {modes['hybrid'] / total:.0%} hybrid"
        print(
            f"{path.name:<30}{share:>22}{np.abs(ours - native).max():>12.3g}{diff.max():>11.3g}"
            f"{np.percentile(diff, 99):>11.3g}{np.percentile(db, 99):>8.2f}{crossings:>6}/{a.n_ticks}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--decoders", action="store_true", help="measure FFmpeg's decoder against libopus instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.decoders:
            decoders(Path(tmp))
            return
        path = Path(tmp) / "long.webm"
        write_webm(path, args.minutes)
        runs: dict[str, list[dict]] = {"levels": [], "decode": []}
        for _ in range(args.repeat):
            for job in runs:  # interleaved, so both see the same machine state
                runs[job].append(run(path, job))
        size_mb = path.stat().st_size / 2**20
    median = {job: sorted(rs, key=lambda r: r["wall_s"])[len(rs) // 2] for job, rs in runs.items()}
    best = {job: min(rs, key=lambda r: r["wall_s"]) for job, rs in runs.items()}
    cpu = {job: sorted(r["cpu_s"] for r in rs)[len(rs) // 2] for job, rs in runs.items()}
    print(f"file: {args.minutes:g} min WebM/Opus 32 kb/s voip, {size_mb:.1f} MB; {args.repeat} runs each, interleaved")
    print(f"{'job':<34}{'best s':>8}{'median s':>10}{'CPU s':>8}{'peak MB':>10}")
    names = {"levels": "speechclock levels (rms)", "decode": "bare libopus decode (PyAV)"}
    for job in runs:
        row = f"{best[job]['wall_s']:>8.2f}{median[job]['wall_s']:>10.2f}{cpu[job]:>8.2f}{best[job]['peak_mb']:>10.0f}"
        print(f"{names[job]:<34}" + row)
    ratio_best = best["levels"]["wall_s"] / best["decode"]["wall_s"]
    ratio_median = median["levels"]["wall_s"] / median["decode"]["wall_s"]
    ratio_cpu = cpu["levels"] / cpu["decode"]
    print(
        f"levels / bare decode: {ratio_best:.2f}x best, {ratio_median:.2f}x median wall time; "
        f"{ratio_cpu:.2f}x CPU time (target: at most 1.3x)"
    )


if __name__ == "__main__":
    main()
