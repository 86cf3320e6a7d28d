"""The what-if prompt on a saved trace: its kernel run again, once, for the command log the file does not hold.

A ``.kbtrace`` says how its run was made (:mod:`kernbench.commands.rerun`). The first re-timing asked of
a :class:`SavedTraceRetimer` runs that kernel again in a child process, as ``kernbench-tui run`` does (a
few seconds for the GQA default), and keeps the rerun only if its events are the trace's, every one: a
kernel file, a topology or kernbench itself that changed since the trace was saved gives another run,
and re-timing that would answer for a run nobody is looking at. Every re-timing after the first is done
by the rerun's child, as a live run's (:class:`~kernbench_tui.child_run.ChildRetimer`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from kernbench.commands.rerun import NotRerunnable, describe, difference, rerun_base, topology_changed
from kernbench.errors import KernbenchError
from kernbench.events.store import BatchMerger, ColumnBatch
from kernbench.events.tracefile import Trace
from kernbench.events.types import Event
from kernbench_tui.child_run import ChildRetimer, ProcessSource


class Stopped(KernbenchError):
    """The rerun was abandoned (the prompt was closed while it ran)."""


class SavedTraceRetimer:
    """Re-times a saved trace (see the module doc). ``argv``: the rerun's arguments but the kernel's own options
    (:func:`~kernbench.commands.rerun.rerun_base`: what the prompt names before anything runs; the child adds the
    options, loading the kernel there, not here); ``stopping()``: whether to abandon a rerun under way (asked about
    ten times a second while it runs); ``target``: what the child calls with the trace's metadata."""

    def __init__(
        self,
        trace: Trace,
        argv: list[str],
        stopping: Callable[[], bool] = lambda: False,
        target: str = "kernbench.commands.rerun:tui_rerun",
    ) -> None:
        self.trace = trace
        self.argv = argv
        self.stopping = stopping
        self.target = target
        self._lock = threading.Lock()
        self._child: ChildRetimer | None = None

    @classmethod
    def of(cls, trace: Trace, stopping: Callable[[], bool] = lambda: False) -> SavedTraceRetimer | str:
        """The retimer of ``trace``, or one line saying why it cannot have one (read from its metadata alone)."""
        try:
            argv = rerun_base(trace.metadata)
        except NotRerunnable as exc:
            return f"this saved trace cannot be re-timed: {exc}"
        return cls(trace, argv, stopping)

    @property
    def note(self) -> str:
        """What the prompt says before the first what-if: what Enter will run."""
        if self._child is not None:
            return ""
        return f"a saved trace holds no command log: the first what-if runs its kernel again, once ({describe(self.argv)})"

    @property
    def busy_text(self) -> str:
        """What the prompt says while its first re-timing is under way ("": the prompt's own, after that)."""
        if self._child is not None:
            return ""
        return f"re-running the kernel once for its command log (a saved trace holds none): {describe(self.argv)}; then re-timing…"

    def retime(self, changes: Sequence[str]) -> Trace:
        with self._lock:
            if self._child is None:
                self._child = self._rerun()
        return self._child.retime(changes)

    def close(self) -> None:
        if self._child is not None:
            self._child.close()

    def _rerun(self) -> ChildRetimer:
        if (changed := topology_changed(self.trace.metadata, self.argv)) is not None:
            raise KernbenchError(f"this saved trace cannot be re-timed: {changed}; re-run the kernel and re-time the new run")
        merger = BatchMerger()

        def take(batch: list[Event] | ColumnBatch) -> None:
            if self.stopping():
                raise Stopped("the rerun was stopped")
            if isinstance(batch, ColumnBatch) and len(batch):
                merger.add(batch)

        source = ProcessSource(self.target, (self.trace.metadata,), description=describe(self.argv))
        try:
            source.run(take)  # (the child sends column batches; a heartbeat is an empty list)
        except Stopped:
            raise
        except KernbenchError as exc:  # (the kernel file is gone, its options no longer parse, the run fails, ...)
            raise KernbenchError(f"this saved trace cannot be re-timed: its rerun ({describe(self.argv)}) failed: {exc}") from None
        child = source.retimer
        if child is None:
            raise KernbenchError(f"this saved trace cannot be re-timed: its rerun ({describe(self.argv)}) keeps no command log")
        if (differs := difference(self.trace.store, merger.store())) is not None:
            child.close()
            raise KernbenchError(
                f"this saved trace cannot be re-timed: its rerun ({describe(self.argv)}) is another run — {differs}. "
                "The kernel, its topology or kernbench changed since the trace was saved; re-run it and re-time the new run"
            )
        return child
