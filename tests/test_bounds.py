"""Bounded everywhere: outputs never replace the user's files, workers die with their run, the cache never
answers wrongly, no input, option or server makes a command hang, and work grows at most as n log n."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid``."""
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


# --- no worker outlives its run -------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_pool_workers_die_when_their_parent_is_killed():
    script = (
        "import sys, time\n"
        "from clock.io.workers import Workers, run_ordered\n"
        "print('ready', flush=True)\n"
        "run_ordered(time.sleep, [60.0, 60.0, 60.0], workers=Workers(jobs=2))\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], env=_env(), stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 30
        workers: set[int] = set()
        while time.monotonic() < deadline:  # the pool's two workers (and its resource tracker, if any)
            workers = _children(parent.pid)
            if len(workers) >= 2:
                break
            time.sleep(0.05)
        assert len(workers) >= 2, "the pool did not start its workers"
        time.sleep(0.3)  # let the workers run their initializer
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.05)
        left = [p for p in workers if _alive(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        assert not left, f"workers {left} outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stdout.close()


def test_schedulers_are_bounded_and_their_scheme_checked_at_once():
    from clock.errors import InvalidParameterError
    from clock.io.workers import MAX_LOCAL_WORKERS, parse_scheduler

    assert parse_scheduler(f"local:{MAX_LOCAL_WORKERS}") == f"local:{MAX_LOCAL_WORKERS}"
    with pytest.raises(InvalidParameterError, match=rf"local:N needs N in \[1, {MAX_LOCAL_WORKERS}\]"):
        parse_scheduler("local:100000")
    with pytest.raises(InvalidParameterError, match="unknown address scheme 'udp'"):
        parse_scheduler("udp://127.0.0.1:1")
    with pytest.raises(InvalidParameterError) as err:
        parse_scheduler("udp://user:secret@127.0.0.1:1")
    assert "secret" not in str(err.value)
