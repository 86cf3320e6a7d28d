"""Where a sweep's points run: this process, worker processes (``--jobs``), a Dask cluster (``--scheduler``).

Each executor takes the tasks and yields their :class:`~kernbench.sweep.point.Outcome`
as they finish (in any order; the caller puts them back in grid order). A
point's result does not depend on where it ran: the simulation is
deterministic and every process uses one BLAS thread (``kernbench/__init__``).

Ctrl-C or SIGTERM in the parent stops the workers: worker processes ignore
SIGINT (so the terminal's Ctrl-C, sent to the whole process group, prints
nothing there) and are terminated by the parent. A parent that is killed
outright (SIGKILL, SIGHUP) cannot do that: each worker ends itself when its
parent is gone (:mod:`kernbench.lifeline`), freeing the parent's stdout and
stderr and, with them gone, the resource tracker too. On Dask the tasks not started
are cancelled (Dask cannot stop a task that is running: it finishes on its
worker and its result is dropped).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from kernbench import limits
from kernbench.errors import KernbenchError
from kernbench.lifeline import end_with_parent, quiet_resource_tracker
from kernbench.sweep.point import Outcome, Task, code_id

#: Runs one task to its outcome; a module-level function, so a worker process or a Dask worker imports it by name.
Work = Callable[[Task], Outcome]

CONNECT_TIMEOUT_S = 10
T = TypeVar("T")
R = TypeVar("R")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity), at least 1."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def execute(work: Work, tasks: Sequence[Task], jobs: int, scheduler: str | None = None) -> Iterator[Outcome]:
    """``work`` on every task: on the Dask ``scheduler``, in ``jobs`` worker processes, or here (``jobs`` 1, or one task)."""
    if scheduler:
        return on_dask(work, tasks, scheduler)
    if jobs <= 1 or len(tasks) <= 1:
        return in_this_process(work, tasks)
    return in_processes(work, tasks, min(jobs, len(tasks)))


def in_this_process(work: Callable[[T], R], tasks: Sequence[T]) -> Iterator[R]:
    for task in tasks:
        yield work(task)


#: set while this process starts a child, so the child's ``python -c`` does not put the current folder first on
#: its sys.path: started in a folder holding a ``threading.py`` or ``logging.py``, it would import those
#: before the standard ones (Python 3.11's PYTHONSAFEPATH; the child takes it off again)
SAFE_PATH = "PYTHONSAFEPATH"


@contextmanager
def children_start_clean() -> Iterator[bool]:
    """While inside, processes started (spawned workers, multiprocessing's resource tracker) do not import
    from the current folder; yields whether the variable was set already (then a child keeps it)."""
    had = SAFE_PATH in os.environ
    if not had:
        os.environ[SAFE_PATH] = "1"
    try:
        yield had
    finally:
        if not had:
            os.environ.pop(SAFE_PATH, None)


def drop_safe_path(had: bool) -> None:
    """In a child started by :func:`children_start_clean`: its environment as its parent's was."""
    if not had:
        os.environ.pop(SAFE_PATH, None)


def _start_worker(init: Callable[..., None] | None = None, init_args: tuple[Any, ...] = (), had_safe_path: bool = True) -> None:
    """A worker process's first steps: Ctrl-C is the parent's to handle; the parent's end is the worker's;
    then the caller's own ``init``."""
    drop_safe_path(had_safe_path)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    end_with_parent()
    limits.hard_stop = _end_worker
    if init is not None:
        init(*init_args)


def _end_worker(message: str) -> None:
    """A point's code did not stop at the wall-time limit: end this worker (its parent says why, from the status)."""
    os._exit(limits.WALL_EXIT_STATUS)


def in_processes(
    work: Callable[[T], R],
    tasks: Sequence[T],
    jobs: int,
    what: str = "a sweep worker process",
    init: Callable[..., None] | None = None,
    init_args: tuple[Any, ...] = (),
) -> Iterator[R]:
    """``jobs`` spawned worker processes (spawn: no state inherited from this process, safe with threads);
    ``work`` and the tasks must pickle (``work`` a module-level function). Results come as they finish.
    ``init(*init_args)``, if given, runs first in each worker (``init_args`` may hold what only a process's
    start can pass on, such as shared memory)."""
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool

    quiet_resource_tracker()
    finished = False
    workers: list[Any] = []
    with children_start_clean() as had:
        pool = ProcessPoolExecutor(
            jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker, initargs=(init, init_args, had)
        )
    try:
        with children_start_clean():  # (the workers start as tasks are submitted)
            futures = [pool.submit(work, task) for task in tasks]
        workers = list((getattr(pool, "_processes", None) or {}).values())  # (how they ended says why the pool broke)
        for future in as_completed(futures):
            yield future.result()
        finished = True
    except BrokenProcessPool:
        ended = exit_statuses(workers)
        if limits.WALL_EXIT_STATUS in ended:
            raise KernbenchError(
                f"{what} ran past the wall-time limit (--max-wall-s) in the user's code and did not stop when asked "
                "(it catches the stop, or waits in C code), so it was ended; what it had was not run"
            ) from None
        if -signal.SIGKILL in ended:
            raise KernbenchError(
                f"{what} was ended by SIGKILL: by the wall-time limit's last resort (--max-wall-s: the user's code did "
                "not stop when asked, on a machine too busy to end it gently), or by the system (out of memory?); "
                "what it had was not run"
            ) from None
        raise KernbenchError(f"{what} died (killed, or out of memory?); what it had was not run") from None
    finally:
        if finished:
            pool.shutdown()
        else:
            _terminate(pool)


#: how long a broken pool's workers are given to be reaped before their statuses are read
REAP_WAIT_S = 5.0
REAP_POLL_S = 0.01


def exit_statuses(processes: Sequence[Any], wait_s: float = REAP_WAIT_S) -> list[int | None]:
    """How each of a broken pool's worker processes ended (``exitcode``; None: still unknown after ``wait_s``).

    The pool's own thread reaps them as it breaks, at the same time: two threads calling ``waitpid`` on one
    pid, the loser is told there is no such child, and its ``exitcode`` reads None until the winner, waiting
    for the interpreter lock, records the status. On a loaded machine that was seen often enough to turn a
    worker's wall-time exit (124) into "died (killed, or out of memory?)". So each status is read again until
    it is known."""

    deadline = time.monotonic() + wait_s
    statuses: list[int | None] = []
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        while process.exitcode is None and time.monotonic() < deadline:
            time.sleep(REAP_POLL_S)
        statuses.append(process.exitcode)
    return statuses


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop a process pool now: cancel what has not started, end what runs (SIGTERM), reap the workers."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # public only from Python 3.14 (terminate_workers)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=5)


def on_dask(work: Work, tasks: Sequence[Task], address: str) -> Iterator[Outcome]:
    """The tasks on the Dask cluster whose scheduler is at ``address``; every worker must run this kernbench."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise KernbenchError("--scheduler needs Dask distributed: pip install 'kernbench[dask]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)  # type: ignore[no-untyped-call]
    except Exception as exc:  # OSError, TimeoutError, ValueError for a malformed address, …
        raise KernbenchError(f"--scheduler {address}: cannot connect: {exc}") from None
    mine = code_id()
    futures: list[Any] = []
    finished = False
    try:
        futures = client.map(work, list(tasks), pure=False)
        for future in as_completed(futures, loop=client.loop):  # type: ignore[no-untyped-call]
            try:
                outcome = future.result()
            except Exception as exc:  # the cluster lost the task (a worker died more often than allowed, …)
                raise KernbenchError(f"--scheduler {address}: a point failed on the cluster: {type(exc).__name__}: {exc}") from None
            if outcome.code != mine:
                raise KernbenchError(
                    f"--scheduler {address}: a worker runs kernbench {outcome.code}, this client {mine}; install the same kernbench on the workers"
                )
            yield outcome
        finished = True
    finally:
        if not finished and futures:
            client.cancel(futures)  # type: ignore[no-untyped-call]
        client.close()  # type: ignore[no-untyped-call]
