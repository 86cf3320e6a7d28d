"""kernbench-tui: a terminal debugger that steps through a kernel's simulated time.

From a script, :func:`show` opens it on a run you have just simulated::

    result = rt.run(record=True)
    from kernbench_tui import show
    show(result)            # blocks until you quit the debugger (q)
    show(result, rt)        # the same, and its what-if prompt (r) re-times the run on rt
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernbench.events.tracefile import Trace
    from kernbench.runtime.api import RunResult, Runtime
    from kernbench_tui.sources import WholeTraceSource


def show(run: RunResult | Trace | str | os.PathLike[str], rt: Runtime | None = None) -> None:
    """Open the debugger on ``run`` — a :class:`~kernbench.runtime.api.RunResult` recorded with
    ``Runtime.run(record=True)``, an opened trace, or a ``.kbtrace`` path — and return when it is closed.
    With the Runtime that ran a RunResult, the debugger's what-if prompt (``r``) re-times it.

    Needs an interactive terminal (like ``kernbench-tui``); a run that kept no events is a
    :class:`~kernbench.errors.NotRecordedError` naming the fix.
    """
    from kernbench.errors import KernbenchError
    from kernbench_tui.cli import terminal_problem

    source = source_of(run, rt)
    if why := terminal_problem():
        raise KernbenchError(f"kernbench_tui.show needs an interactive terminal ({why}); save the run with result.save_trace(PATH) instead")
    from kernbench_tui.app import KernbenchApp

    KernbenchApp(source).run()


def source_of(run: RunResult | Trace | str | os.PathLike[str], rt: Runtime | None = None) -> WholeTraceSource:
    """What :func:`show` opens the debugger on (checked: a run without events fails here); a RunResult with
    the Runtime that ran it can be re-timed."""
    from kernbench.errors import KernbenchError
    from kernbench.events.tracefile import Trace, open_trace
    from kernbench_tui.sources import StoreSource, TraceFileSource

    if rt is not None and isinstance(run, (Trace, str, os.PathLike)):
        raise KernbenchError("kernbench_tui.show: a Runtime re-times a RunResult, not a trace (a trace keeps no command log)")
    if isinstance(run, Trace):
        return StoreSource(run.store, run.metadata, description="trace")
    if isinstance(run, (str, os.PathLike)):
        return TraceFileSource(run, open_trace(run))
    meta = run.trace_metadata()
    if rt is None:
        return StoreSource(run.store(), meta, description=run.kernel or "recorded run")
    from kernbench.commands.run import RecordedRun

    return StoreSource(run.store(), meta, description=run.kernel or "recorded run", retimer=RecordedRun(rt, run, meta))
