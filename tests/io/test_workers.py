"""Where per-recording work runs: serial, a process pool and a Dask cluster give the same bytes."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clock.errors import InvalidParameterError, RecordingError, SpeechClockWarning
from clock.run.corpus import load_corpus
from clock.run.workers import Workers, parse_scheduler, run_ordered

REPO = Path(__file__).resolve().parents[2]
RATE = 16000
N_RECORDINGS = 60  # enough for two workers to finish tasks out of order many times over


def square(item: int) -> int:
    """A task: warns for multiples of 3, fails on 13 and 17."""
    if item % 3 == 0:
        warnings.warn(f"item {item} is a multiple of three", SpeechClockWarning, stacklevel=2)
    if item in (13, 17):
        raise RecordingError(f"item {item}: unlucky")
    return item * item


def shown(func, *args, **kwargs) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out: object = func(*args, **kwargs)
        except RecordingError as err:
            out = err
    return out, [str(w.message) for w in caught]


@pytest.mark.parametrize("jobs", [1, 2])
def test_results_and_warnings_in_input_order(jobs):
    out, messages = shown(run_ordered, square, list(range(12)), workers=Workers(jobs=jobs))
    assert out == [i * i for i in range(12)]
    assert messages == [f"item {i} is a multiple of three" for i in (0, 3, 6, 9)]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_first_error_in_input_order_comes_after_the_warnings_before_it(jobs):
    out, messages = shown(run_ordered, square, list(range(20)), workers=Workers(jobs=jobs))
    assert isinstance(out, RecordingError) and str(out) == "item 13: unlucky"
    assert messages == [f"item {i} is a multiple of three" for i in (0, 3, 6, 9, 12)]


def fail_first_or_sleep(item: int) -> int:
    """A task: the first fails at once, the others would run for minutes."""
    if item == 0:
        raise RecordingError("item 0: broken")
    time.sleep(300)
    return item


def test_an_error_stops_the_pool_workers_rather_than_letting_them_finish():
    raised: list[BaseException] = []
    before = set(multiprocessing.active_children())  # any other test left behind

    def run() -> None:
        try:
            run_ordered(fail_first_or_sleep, [0, 1, 2], workers=Workers(jobs=2))
        except RecordingError as err:
            raised.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)  # a pool left to finish would take 300 s (the sleeping task)
    assert not thread.is_alive(), "the error waited for the other workers to finish"
    assert [str(e) for e in raised] == ["item 0: broken"]
    assert set(multiprocessing.active_children()) - before == set()


def test_an_error_returns_only_after_the_pool_manager_has_reaped_its_workers(monkeypatch):
    # The pool's manager thread reaps the stopped workers too; while it is still at it, a worker it has reaped can
    # read as alive, and at exit its wake-up pipe can close under Python's own hook. A slow manager (a busy
    # machine) shows whether run_ordered waits for it: its thread lingers a second after its work (its run, the
    # one method every Python version's manager ends in).
    from concurrent.futures import process as pool_module

    run = pool_module._ExecutorManagerThread.run

    def slowly(self) -> None:
        run(self)
        time.sleep(1.0)

    monkeypatch.setattr(pool_module._ExecutorManagerThread, "run", slowly)
    before = set(multiprocessing.active_children())
    with pytest.raises(RecordingError, match="item 0: broken"):
        run_ordered(fail_first_or_sleep, [0, 1, 2], workers=Workers(jobs=2))
    managers = [t for t in threading.enumerate() if isinstance(t, pool_module._ExecutorManagerThread)]
    assert managers == []
    assert set(multiprocessing.active_children()) - before == set()


def test_schedulers_are_checked():
    assert parse_scheduler("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert parse_scheduler("local:3") == "local:3" and parse_scheduler("local") == "local"
    for bad in ("local:0", "10.0.0.5:8786", "local:two", ""):
        with pytest.raises(InvalidParameterError, match="scheduler"):
            parse_scheduler(bad)
    with pytest.raises(InvalidParameterError, match="jobs"):
        Workers(jobs=0)


def test_without_the_extra_one_line_names_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(
        InvalidParameterError,
        match=r"^--scheduler needs Dask: pip install '\.\[cluster\]' in a checkout of speech-clock$",
    ):
        run_ordered(square, [1, 2], workers=Workers(scheduler="local:2"))
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(
        InvalidParameterError,
        match=r"reading URLs needs fsspec: pip install '\.\[cluster\]' in a checkout of speech-clock",
    ):
        load_corpus(["s3://bucket/sessions/"])


# -- a generated corpus on a Dask cluster ---------------------------------------------------------


def _write_corpus(folder: Path, n: int) -> Path:
    """n short recordings with logs: some logs out of order or with malformed lines (warnings), some without."""
    rng = np.random.default_rng(11)
    folder.mkdir()
    for i in range(n):
        x = np.zeros(int(1.6 * RATE), np.float32)
        level = 10 ** rng.uniform(-2.2, -0.8)
        for start, end in ((0.25, 0.6), (0.75, 1.05 + 0.1 * rng.random())):
            a, b = int(start * RATE), int(end * RATE)
            x[a:b] = (rng.standard_normal(b - a) * level).astype(np.float32)
        x[x.size // 2 :] += (rng.standard_normal(x.size - x.size // 2) * 1e-5).astype(np.float32)
        name = f"s{i:03d}"
        sf.write(str(folder / f"{name}.wav"), x, RATE, subtype="PCM_16" if i % 2 else "FLOAT")
        if i % 7 == 6:
            continue  # no log
        lines = [{"type": "prompt", "t": 0.05}, {"type": "response.done", "t": 0.2}]
        if i % 5 == 0:
            lines.reverse()  # out of order: a warning naming the line
        text = "\n".join(json.dumps(e) for e in lines) + "\n"
        if i % 11 == 0:
            text += "{not json\n"  # skipped with --lenient: a warning naming the line
        (folder / f"{name}.events.jsonl").write_text(text)
    (folder / "speechclock.toml").write_text("[thresholds]\nfloor = 0.003\nquiet_s = 0.3\nonset_timeout_s = 1.0\n")
    return folder


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    return _write_corpus(tmp_path_factory.mktemp("corpus") / "sessions", N_RECORDINGS)


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes on the loopback interface, closed at the end."""
    import logging

    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # any free port: its HTTP server always starts
        silence_logs=logging.ERROR,
    ) as c:
        yield c.scheduler_address


def same_run(a, b) -> None:
    assert (a.exit_code, a.stdout, a.stderr) == (b.exit_code, b.stdout, b.stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    "command", [["derive"], ["check"], ["sweep", "--floors", "0.002:0.004:0.001", "--quiet-times", "0.2:0.5:0.1"]]
)
def test_a_dask_cluster_gives_the_serial_bytes(cli, generated, cluster, command, tmp_path):
    serial = cli(*command, generated, "--lenient", "--no-cache")
    assert serial.stdout and "out of order" not in serial.stdout
    assert serial.stderr.count("speechclock: warning:") >= N_RECORDINGS // 11
    on_dask = cli(*command, generated, "--lenient", "--no-cache", "--scheduler", cluster)
    same_run(on_dask, serial)
    # With the cache: a cold and a warm run on the cluster, the same bytes again.
    for _ in range(2):
        same_run(cli(*command, generated, "--lenient", "--cache", tmp_path / "c", "--scheduler", cluster), serial)


@pytest.mark.slow
def test_a_bad_recording_fails_the_same_way_on_the_cluster(cli, generated, cluster, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(generated, broken)
    (broken / "s050.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEnot audio")
    serial = cli("derive", broken, "--lenient", "--no-cache")
    assert serial.exit_code != 0 and serial.stderr.strip().splitlines()[-1].startswith(f"speechclock: error: {broken}")
    assert "s050.wav" in serial.stderr.strip().splitlines()[-1]
    same_run(cli("derive", broken, "--lenient", "--no-cache", "--scheduler", cluster), serial)
    same_run(cli("derive", broken, "--lenient", "--no-cache", "-j", "2"), serial)


@pytest.mark.slow
def test_progress_is_reported_for_every_recording_on_the_cluster(generated, cluster):
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpeechClockWarning)
        corpus = load_corpus([generated], lenient=True, cache=False, scheduler=cluster, progress=seen.append)
    assert sorted(map(str, seen)) == sorted(r.info.path for r in corpus.recordings) and len(seen) == N_RECORDINGS


@pytest.mark.slow
def test_file_urls_on_the_cluster_read_as_the_paths_do(cli, generated, cluster):
    config = generated / "speechclock.toml"
    paths = cli("derive", generated, "--no-cache", "--lenient", "--config", config)
    url = generated.as_uri() + "/"
    serial = cli("derive", url, "--no-cache", "--lenient", "--config", config)
    on_dask = cli("derive", url, "--no-cache", "--lenient", "--config", config, "--scheduler", cluster)
    same_run(on_dask, serial)
    assert serial.stdout == paths.stdout and serial.exit_code == 0
    # The warnings name the URL where the paths' name the path.
    assert serial.stderr == paths.stderr.replace(str(generated), url.rstrip("/"))


# The test server runs in its own process with its stderr sent to /dev/null, so nothing it says (a
# traceback for a client that hung up early, on a busy machine) can reach the stderr the CLI's tests read;
# its handler and server keep quiet as well. It prints its port once it listens, so no wait is timed.
_SERVER = """
import functools, http.server, sys

class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass

server = Server(("127.0.0.1", 0), functools.partial(Quiet, directory=sys.argv[1]))
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.fixture
def web(tmp_path):
    """Two of the bundled recordings served over HTTP on the loopback interface, from another process."""
    from conftest import copy_short_recordings

    root = copy_short_recordings(tmp_path / "www")
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = server.stdout.readline().strip()
        assert port.isdigit(), "the test server did not start"
        yield f"http://127.0.0.1:{port}", root
    finally:
        server.kill()
        server.wait()
        server.stdout.close()


def test_https_style_urls_stream_through_fsspec(cli, web, tmp_path):
    base, root = web
    local = cli("derive", root, "--no-cache")
    remote = cli("derive", base + "/", "--config", root / "speechclock.toml", "--no-cache")
    assert remote.exit_code == 0 and remote.stdout == local.stdout
    # Cached: keyed by the content (this server gives no ETag, so it is read to hash it).
    for _ in range(2):
        cached = cli("derive", base + "/", "--config", root / "speechclock.toml", "--cache", tmp_path / "c")
        assert cached.stdout == local.stdout
    one = cli("check", base + "/tour-en-us-48k.webm", "--config", root / "speechclock.toml")
    assert one.exit_code in (0, 1) and "on 1 recording:" in one.stdout
    missing = cli("derive", base + "/nope.webm", "--no-cache")
    assert missing.exit_code != 0 and missing.stderr == f"speechclock: error: {base}/nope.webm: no such file\n"


def test_a_url_folders_config_is_named_not_read(cli, web):
    base, _ = web
    result = cli("derive", base + "/", "--no-cache")
    assert (
        f"speechclock: warning: {base}/speechclock.toml: not read (a config is read from a local file; give --config)"
        in result.stderr
    )


def test_check_of_a_url_without_a_config_names_the_url(cli, web, tmp_path):
    base, _ = web
    result = cli("check", base + "/tour-en-us-48k.webm", "--no-cache", "--junit", tmp_path / "j.xml")
    assert result.exit_code == 2
    assert result.stderr.endswith(
        f"speechclock: error: {base}/tour-en-us-48k.webm: no config: give --config FILE, "
        "or --allow-defaults to check against the built-in defaults\n"
    )
    assert "<error" in (tmp_path / "j.xml").read_text()


def test_an_unreachable_scheduler_is_one_line(cli, monkeypatch, generated):
    pytest.importorskip("distributed")
    monkeypatch.setenv("SPEECHCLOCK_TIMEOUT", "1")
    result = cli("derive", generated / "s000.wav", "--scheduler", "tcp://127.0.0.1:9")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code in (1, 2) and len(lines) == 1
    assert lines[0].startswith("speechclock: error: --scheduler tcp://127.0.0.1:9: cannot reach the Dask scheduler")


def test_a_malformed_scheduler_is_a_usage_error(cli, generated):
    result = cli("derive", generated / "s000.wav", "--scheduler", "8786")
    assert result.exit_code == 2 and "--scheduler" in result.stderr and "tcp://host:8786" in result.stderr


@pytest.mark.slow
def test_remote_workers_keep_their_own_default_cache(generated, cluster, monkeypatch, tmp_path):
    # The workers started with the tests' cache folder; this process's default now points elsewhere.
    monkeypatch.setenv("SPEECHCLOCK_CACHE", str(tmp_path / "client-default"))
    files = sorted(generated.glob("s00*.wav"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SpeechClockWarning)
        load_corpus(files, lenient=True, scheduler=cluster)
        assert not (tmp_path / "client-default").exists()
        load_corpus(files, lenient=True, scheduler=cluster, cache=tmp_path / "given")
    assert len(list((tmp_path / "given" / "traces").rglob("*.trace"))) == len(files)


@pytest.mark.slow
def test_python_m_clock_starts_and_closes_a_local_cluster_of_two_workers(tmp_path, generated):
    # A whole process, as a user runs it: spawned workers, their warnings shown as a serial run shows them, and
    # Dask's own logging kept off stdout and stderr. (One cluster start: the in-process runs use the module's.)
    import subprocess

    def run(*extra: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "clock", "check", str(generated), "--lenient", "--no-progress", *extra]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)

    serial, on_dask = run(), run("--scheduler", "local:2")
    assert serial.returncode in (0, 1) and serial.stderr.count("speechclock: warning:") >= N_RECORDINGS // 11
    assert (on_dask.returncode, on_dask.stdout, on_dask.stderr) == (serial.returncode, serial.stdout, serial.stderr)
