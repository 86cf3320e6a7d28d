"""A child process that ends when its parent does, however the parent ended (``kill -9`` included).

A ``multiprocessing`` child outlives a parent that was killed: a process
pool's worker waits for its next task on a pipe it holds both ends of, so it
never sees EOF; meanwhile it holds the parent's stdout and stderr (a reader
of ``kernbench sweep | …`` never gets EOF) and the write end of the resource
tracker's pipe (so the tracker lives on too). :func:`end_with_parent`, called
first thing in the child, ends it instead:

* on Linux the kernel kills the child (SIGKILL) the moment its parent dies
  (``prctl(PR_SET_PDEATHSIG)``), even while the child is inside C code that
  holds the interpreter lock. The request counts from when it is made, so a
  parent that died before it is caught by comparing ``os.getppid()`` with the
  parent's pid afterwards. (The kernel's "parent" is the *thread* that started
  the child: start children from a thread that outlives them, as the process
  pools here and the debugger's simulation source do.)
* everywhere, a daemon thread waits on multiprocessing's parent sentinel (a
  pipe only the parent holds open: EOF once it is gone) and ends the process.

The child ends with :func:`os._exit`: nothing of its own is worth finishing
once nobody is left to receive it, and nothing is printed.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def end_with_parent() -> None:
    """End this process as soon as its parent process has ended (no-op outside a ``multiprocessing`` child)."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.pid is None:
        return
    _kernel_kills_orphan(parent.pid)
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _kernel_kills_orphan(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies; exit now if it already has."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            return  # (refused: the sentinel thread still ends the process)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the request was made
        os._exit(0)


#: multiprocessing's resource tracker copies its interpreter flags, warning filters included, from ``sys.warnoptions``
QUIET_TRACKER = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Keep the resource tracker from warning into the terminal after its parent was killed.

    The tracker frees what a killed parent left (its semaphores) and says so:
    "UserWarning: resource_tracker: There appear to be 5 leaked semaphore
    objects to clean up at shutdown", three lines of stderr after a ``kill``
    that asked for nothing else. The cleanup is what should happen; the
    warning is dropped. Call before the first child process starts (the
    tracker starts with it and reads its flags then)."""
    if QUIET_TRACKER not in sys.warnoptions:
        sys.warnoptions.append(QUIET_TRACKER)
