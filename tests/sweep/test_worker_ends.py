"""How a broken pool's workers ended is read even when the pool's own thread reaps them at the same time.

Beside busy loops, a sweep whose worker was ended by the wall-time limit (exit
124) said "a sweep worker process died (killed, or out of memory?)": the pool's
thread and ours both called ``waitpid`` on the worker, ours lost, and
``exitcode`` read None until the winner got the interpreter lock back.
"""

from __future__ import annotations

import multiprocessing
import threading

from kernbench import limits
from kernbench.sweep.executors import exit_statuses


class LostTheReap:
    """A process whose status another thread is recording: unknown for the first ``reads`` reads."""

    def __init__(self, status: int, reads: int) -> None:
        self.status, self.reads = status, reads

    def join(self, timeout: float | None = None) -> None:
        pass

    @property
    def exitcode(self) -> int | None:
        if self.reads:
            self.reads -= 1
            return None
        return self.status


def test_a_status_another_thread_is_recording_is_waited_for():
    assert exit_statuses([LostTheReap(limits.WALL_EXIT_STATUS, reads=5), LostTheReap(-15, reads=0)]) == [limits.WALL_EXIT_STATUS, -15]


def test_a_status_never_known_is_none_after_the_wait():
    assert exit_statuses([LostTheReap(0, reads=10**9)], wait_s=0.05) == [None]


def _exit_wall() -> None:
    import os

    os._exit(limits.WALL_EXIT_STATUS)


def test_real_workers_reaped_by_two_threads_at_once_read_their_status():
    """Two threads join each worker as the pool's thread and ours do; every status comes out known."""
    ctx = multiprocessing.get_context("spawn")
    for _ in range(3):
        workers = [ctx.Process(target=_exit_wall) for _ in range(2)]
        for worker in workers:
            worker.start()
        rival = threading.Thread(target=lambda started=workers: [w.join() for w in started])
        rival.start()
        assert exit_statuses(workers) == [limits.WALL_EXIT_STATUS] * 2
        rival.join()
