"""Benchmark: levels of a long 48 kHz mono 16-bit WAV (60 Hz ticks, fftSize 2048, rms).

Compares the wall time of ``clock.levels`` over ``clock.io.decode.iter_blocks``
with ``soundfile.read`` of the same file in the same run, and measures the
peak resident memory of each in a fresh subprocess (so one does not inherit
the other's pages).

Usage::

    python benchmarks/bench_levels.py            # 60 minutes
    python benchmarks/bench_levels.py --minutes 600 --skip-read   # 10 hours

The WAV is written to a temporary folder and removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

CHILD = r"""
import json, resource, sys, time
import numpy, soundfile
from clock.io.decode import iter_blocks, probe
from clock.core.levels import levels
path, job = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if job == "levels":
    info = probe(path)
    n = levels(iter_blocks(info), info.sample_rate_hz).n_ticks
else:
    n = len(soundfile.read(path, dtype=job)[0])
wall = time.perf_counter() - t0
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"job": job, "wall_s": wall, "peak_mb": peak_mb, "n": n}))
"""


def write_wav(path: Path, minutes: float, rate: int = 48000) -> None:
    rng = np.random.default_rng(0)
    block = rate * 60
    with sf.SoundFile(str(path), "w", rate, 1, "PCM_16") as f:
        for _ in range(int(minutes)):
            # speech-like bursts over exact-zero silence
            x = (rng.standard_normal(block) * 2000).astype(np.int16)
            x[(np.arange(block) // (rate * 2)) % 3 == 2] = 0
            f.write(x)


def run(path: Path, job: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), job], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-read", action="store_true", help="do not time soundfile.read (for 10-hour files)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.wav"
        write_wav(path, args.minutes)
        jobs = ["levels"] + ([] if args.skip_read else ["float64", "float32"])
        runs: dict[str, list[dict]] = {job: [] for job in jobs}
        for _ in range(args.repeat):
            for job in jobs:  # interleaved, so both see the same machine state
                runs[job].append(run(path, job))
        size_mb = path.stat().st_size / 2**20
    best = {job: sorted(rs, key=lambda r: r["wall_s"])[len(rs) // 2] for job, rs in runs.items()}
    print(f"file: {args.minutes:g} min, 48 kHz mono PCM_16, {size_mb:.0f} MB; median of {args.repeat} runs")
    print(f"{'job':<28}{'wall s':>8}{'peak MB':>10}")
    names = {
        "levels": "speechclock levels (rms)",
        "float64": "soundfile.read (float64)",
        "float32": "soundfile.read (float32)",
    }
    for job, r in best.items():
        print(f"{names[job]:<28}{r['wall_s']:>8.2f}{r['peak_mb']:>10.0f}")
    for job in ("float64", "float32"):
        if job in best:
            print(f"levels / soundfile.read {job}: {best['levels']['wall_s'] / best[job]['wall_s']:.2f}x")


if __name__ == "__main__":
    main()
