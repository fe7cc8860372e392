"""Where per-recording work runs: in this process, a process pool, or a Dask cluster.

This is the one place that decides it. The corpus commands (derive, check,
sweep, report) and :func:`clock.run.corpus.load_corpus` hand it one task per
recording (decode, levels, log and labels); :func:`run_ordered` runs the
tasks

* in this process (``Workers()``, the default),
* in a pool of ``jobs`` processes on this machine (``Workers(jobs=4)``), or
* on a Dask cluster (``Workers(scheduler="tcp://host:8786")``, or
  ``Workers(scheduler="local:4")`` for a ``distributed.LocalCluster`` of four
  worker processes on this machine, on the loopback interface only),

and gives the results **in input order**, whatever order they finish in. A
task's :class:`~clock.errors.SpeechClockWarning` warnings are caught where it
runs and shown again here, in input order, once every earlier task has been
shown; the first error (in input order) is raised after the warnings before
it, and the remaining tasks are cancelled. So the output of a parallel run is
byte for byte the output of a serial one. Progress is reported as tasks
finish, in any order.

Dask is part of the optional ``cluster`` extra (``pip install
'speech-clock[cluster]'``) and is imported only when a scheduler is given.
The functions a task runs must be importable on the workers (install
speech-clock there too), and the recordings must be readable there: paths
are sent as they are given (give absolute paths, or URLs, to a remote
cluster; a relative path is read relative to each worker's folder).
Workers with one thread each (``dask worker --nthreads 1``) use the cores
best: a task catches its warnings under a lock, so the threads of one worker
take turns.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..errors import InvalidParameterError, SpeechClockError, SpeechClockWarning
from ..io.sources import EXTRA_HINT, network_timeout_s
from ..io.terminal import redact

__all__ = ["Done", "Workers", "parse_scheduler", "quietly", "run_ordered"]

T = TypeVar("T")
R = TypeVar("R")

_LOCAL = re.compile(r"^local(?::(\d+))?$")
_ADDRESS = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://\S+$")


#: The most worker processes ``--scheduler local:N`` starts (as ``--jobs``).
MAX_LOCAL_WORKERS = 256

#: The address schemes of a Dask scheduler.
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")

#: How often a worker process checks that its parent is alive (seconds).
WATCHDOG_S = 0.5

#: How long a stopped pool's manager thread gets to reap its workers and close its pipes (seconds).
MANAGER_JOIN_S = 60.0

_PR_SET_PDEATHSIG = 1


def parse_scheduler(text: str) -> str:
    """Validate a ``--scheduler``: ``local``, ``local:N`` (N >= 1) or an address ``tcp://host:port``.

    Raises
    ------
    InvalidParameterError
        Anything else.
    """
    m = _LOCAL.match(text)
    if m is not None:
        if m.group(1) is not None and not 1 <= int(m.group(1)) <= MAX_LOCAL_WORKERS:
            raise InvalidParameterError(
                f"--scheduler local:N needs N in [1, {MAX_LOCAL_WORKERS}] workers, got {redact(text)!r}"
            )
        return text
    if _ADDRESS.match(text):
        scheme = text.split("://", 1)[0].lower()
        if scheme not in SCHEMES:
            raise InvalidParameterError(
                f"--scheduler {redact(text)}: unknown address scheme {scheme!r} (use one of {', '.join(SCHEMES)})"
            )
        return text
    raise InvalidParameterError(
        f"--scheduler must be a Dask scheduler address like tcp://host:8786, or local:N, got {redact(text)!r}"
    )


@dataclass(frozen=True, slots=True)
class Workers:
    """Where per-recording work runs.

    Parameters
    ----------
    jobs : int
        Processes on this machine (1: in this process). Ignored with a scheduler.
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``), or ``local:N`` for a
        local cluster of N worker processes (``local``: one per core).
    """

    jobs: int = 1
    scheduler: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise InvalidParameterError(f"jobs must be an integer >= 1, got {self.jobs!r}")
        if self.scheduler is not None:
            parse_scheduler(self.scheduler)

    @property
    def size(self) -> int | None:
        """How many tasks run at once: ``jobs``, or a local cluster's workers (None: a remote cluster's, unknown)."""
        if self.scheduler is None:
            return self.jobs
        m = _LOCAL.match(self.scheduler)
        if m is None:
            return None
        return int(m.group(1)) if m.group(1) else os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class Done(Generic[R]):
    """What a task gives back: its result or its error, and its warnings."""

    result: R | None
    error: SpeechClockError | None
    messages: tuple[str, ...]


# catch_warnings changes process-wide state: threads of one Dask worker take turns. Reentrant: a task may itself be
# ``partial(quietly, func)`` (clock.run.stress keeps its tasks' errors and warnings to show them in its own order).
_WARNINGS_LOCK = threading.RLock()


def quietly(func: Callable[[T], R], item: T) -> Done[R]:
    """Run one task, keeping its warnings (and a SpeechClockError) to be shown in order."""
    with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpeechClockWarning)
        try:
            result: R | None = func(item)
            error = None
        except SpeechClockError as err:
            result, error = None, err
    messages = tuple(str(w.message) for w in caught if issubclass(w.category, SpeechClockWarning))
    return Done(result, error, messages)


def _in_order(n: int, finished: Iterator[tuple[int, Done[R]]], progress: Callable[[int], None] | None) -> list[R]:
    """Results in input order from tasks finishing in any order; warnings and the first error in order."""
    pending: dict[int, Done[R]] = {}
    out: list[R] = []
    for i, done in finished:
        pending[i] = done
        if progress is not None:
            progress(i)
        while len(out) in pending:
            head = pending.pop(len(out))
            for message in head.messages:
                warnings.warn(message, SpeechClockWarning, stacklevel=4)
            if head.error is not None:
                raise head.error
            out.append(head.result)  # type: ignore[arg-type]
    if len(out) != n:  # pragma: no cover - every task reports once
        raise RuntimeError(f"{n - len(out)} tasks did not report")
    return out


def run_ordered(
    func: Callable[[T], R],
    items: Sequence[T],
    *,
    workers: Workers | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[R]:
    """``[func(item) for item in items]``, run where ``workers`` says, identical to a serial run.

    Parameters
    ----------
    func : callable
        A module-level function (it is pickled to other processes).
    items : sequence
    workers : Workers, optional
        Default: in this process.
    progress : callable, optional
        Called with each item's index as it finishes (in the order they finish).

    Raises
    ------
    SpeechClockError
        The first task (in input order) that raised one, after the warnings
        of the tasks before it.
    InvalidParameterError
        A scheduler that cannot be reached, or Dask is not installed.
    """
    workers = workers or Workers()
    n = len(items)
    if workers.scheduler is not None:
        return _on_dask(func, items, workers.scheduler, progress)
    if workers.jobs == 1 or n < 2:
        return _in_order(n, ((i, quietly(func, item)) for i, item in enumerate(items)), progress)
    from concurrent.futures import ProcessPoolExecutor  # (its import costs a serial run 10 ms)

    pool = ProcessPoolExecutor(max_workers=min(workers.jobs, n), initializer=_worker_signals, initargs=(os.getpid(),))
    try:
        futures = {pool.submit(quietly, func, item): i for i, item in enumerate(items)}
        out = _in_order(n, _as_finished(futures), progress)
    except BaseException:
        # An error, Ctrl-C or SIGTERM: stop the workers now rather than let them finish the corpus. Take the
        # processes and the manager thread first: shutdown(wait=False) drops the pool's references to both.
        processes = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5)
        # The manager thread, seeing its workers gone, reaps them too and closes its wake-up pipe. Until it has
        # ended, a worker it reaped can still read as alive (its return code not yet stored), and at exit Python's
        # own hook (before 3.12) can write to the pipe as it closes ("Exception ignored ... Bad file descriptor").
        if manager is not None and manager.ident is not None:  # started (a signal can land in between)
            manager.join(timeout=MANAGER_JOIN_S)
        raise
    pool.shutdown()
    return out


def _worker_signals(parent: int) -> None:
    """Workers leave Ctrl-C to the main process, die at once when it stops them, and never outlive it.

    On Linux the kernel kills the worker when its parent dies, however it
    dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); elsewhere (and should that
    fail) a watchdog thread exits once the worker's parent is no longer
    ``parent`` (checked every :data:`WATCHDOG_S`).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), name="speechclock-parent-watchdog", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_S)
    os._exit(1)


def _as_finished(futures: dict[Future[Done[R]], int]) -> Iterator[tuple[int, Done[R]]]:
    left = set(futures)
    while left:
        done, left = wait(left, return_when=FIRST_COMPLETED)
        for f in sorted(done, key=futures.__getitem__):
            yield futures[f], f.result()


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise InvalidParameterError(f"--scheduler needs Dask: {EXTRA_HINT}") from None
    return distributed


@contextmanager
def dask_client(scheduler: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``scheduler`` (``local:N`` starts and closes a LocalCluster)."""
    import logging

    distributed = _import_distributed()
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", module=r"distributed(\.|$)")
    m = _LOCAL.match(scheduler)
    if m is not None:
        n = int(m.group(1)) if m.group(1) else None
        cluster = distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # any free port: its HTTP server always starts
            silence_logs=logging.CRITICAL,  # a worker's own noise (slow start, closed comms) is not the user's
        )
        try:
            with distributed.Client(cluster, set_as_default=False) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(scheduler, timeout=network_timeout_s(), set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise InvalidParameterError(
            f"--scheduler {redact(scheduler)}: cannot reach the Dask scheduler ({redact(str(err))})"
        ) from None
    with client:
        yield client


def _on_dask(
    func: Callable[[T], R], items: Sequence[T], scheduler: str, progress: Callable[[int], None] | None
) -> list[R]:
    distributed = _import_distributed()
    with dask_client(scheduler) as client:
        futures = client.map(quietly, [func] * len(items), list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}

        def finished() -> Iterator[tuple[int, Done[R]]]:
            for f in distributed.as_completed(futures, loop=client.loop):
                yield index[f.key], f.result()

        try:
            return _in_order(len(items), finished(), progress)
        finally:
            client.cancel(futures)
