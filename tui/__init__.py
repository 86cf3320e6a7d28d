"""kernbench-tui: a terminal debugger that steps through a kernel's simulated time.

From a script, :func:`show` opens it on a run you have just simulated::

    result = rt.run(record=True)
    from kernbench_tui import show
    show(result)            # blocks until you quit the debugger (q)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernbench.events.tracefile import Trace
    from kernbench.runtime.api import RunResult
    from kernbench_tui.sources import WholeTraceSource


def show(run: RunResult | Trace | str | os.PathLike[str]) -> None:
    """Open the debugger on ``run`` — a :class:`~kernbench.runtime.api.RunResult` recorded with
    ``Runtime.run(record=True)``, an opened trace, or a ``.kbtrace`` path — and return when it is closed.

    Needs an interactive terminal (like ``kernbench-tui``); a run that kept no events is a
    :class:`~kernbench.errors.NotRecordedError` naming the fix.
    """
    from kernbench.errors import KernbenchError
    from kernbench_tui.cli import terminal_problem

    source = source_of(run)
    if why := terminal_problem():
        raise KernbenchError(f"kernbench_tui.show needs an interactive terminal ({why}); save the run with result.save_trace(PATH) instead")
    from kernbench_tui.app import KernbenchApp

    KernbenchApp(source).run()


def source_of(run: RunResult | Trace | str | os.PathLike[str]) -> WholeTraceSource:
    """What :func:`show` opens the debugger on (checked: a run without events fails here)."""
    from kernbench.events.tracefile import Trace, open_trace
    from kernbench_tui.sources import StoreSource, TraceFileSource

    if isinstance(run, Trace):
        return StoreSource(run.store, run.metadata, description="trace")
    if isinstance(run, (str, os.PathLike)):
        return TraceFileSource(run, open_trace(run))
    return StoreSource(run.store(), run.trace_metadata(), description=run.kernel or "recorded run")
