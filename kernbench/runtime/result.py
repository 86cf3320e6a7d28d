"""What a run produced (:class:`RunResult`): latency, per-PE accounting, op logs, the events, and the command logs a re-timing replays."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernbench.errors import NotRecordedError
from kernbench.events.types import ENGINES, Event
from kernbench.pe.cpu import OpLogEntry
from kernbench.pe.requests import CommandLog

if TYPE_CHECKING:
    from kernbench.analysis.critical import Attribution
    from kernbench.events.store import EventStore
    from kernbench.events.tracefile import TraceMetadata


@dataclass
class RunResult:
    """What a run produced: latency, per-PE accounting, op logs, events."""

    latency_ns: float
    pes: tuple[str, ...]
    op_logs: Mapping[str, list[OpLogEntry]]  # (built per PE when read: kernbench.pe.cpu.OpLogs)
    dispatch_cycles: dict[str, float]
    commands: dict[str, int]
    engine_busy_ns: dict[str, dict[str, float]]
    stall_ns: dict[str, float]  # per PE: PE_CPU stalled, all reasons
    scratch_peak_bytes: dict[str, int]
    events: list[Event] | None
    command_logs: dict[str, CommandLog] = field(repr=False, default_factory=dict)
    wall_events: int = 0
    stall_ns_by_reason: dict[str, float] = field(default_factory=dict)  # PE_CPU stalled, summed over PEs, by reason
    topology: str = ""  # the topology's name
    timing: str = ""  # the engine's mode (fast or oracle)
    fidelity: str = "paper"  # the model's level (paper, credit, full)
    kernel: str = ""  # what ran: the launched kernels' names
    kernel_files: tuple[str, ...] = ()  # the source files of the launched kernels: a save may not overwrite one
    topology_digest: str = ""  # kernbench.topology.digest of the topology it ran on
    _store: EventStore | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def total_dispatch_cycles(self) -> float:
        return sum(self.dispatch_cycles.values())

    # --- from a script to the tools --------------------------------------

    def store(self) -> EventStore:
        """The recorded events as a columnar store (what the debugger, traces and the critical path read)."""
        from kernbench.events.store import EventStore

        if self.events is None:
            raise NotRecordedError(
                "this run kept no events: run it with Runtime.run(record=True) to save a trace, export Perfetto, explain it or debug it"
            )
        if self._store is None:
            self._store = EventStore.from_events(self.events)
        return self._store

    def trace_metadata(self, **extra: Any) -> TraceMetadata:
        """What a trace of this run says it is (``extra``: more to keep beside it, e.g. the kernel's options)."""
        from kernbench.events.tracefile import TraceMetadata

        return TraceMetadata(kernel=self.kernel, topology=self.topology, end_ns=self.latency_ns, extra={"timing": self.timing, **extra})

    def save_trace(self, path: str | os.PathLike[str]) -> None:
        """Save the recorded events as a ``.kbtrace`` file (``kernbench-tui open PATH``, ``kernbench compare``)."""
        from kernbench.events.tracefile import trace_bytes

        self._save(path, "trace", trace_bytes)

    def save_perfetto(self, path: str | os.PathLike[str]) -> None:
        """Export the recorded events as Chrome/Perfetto trace JSON (ui.perfetto.dev)."""
        from kernbench.events.perfetto import perfetto_bytes

        self._save(path, "Perfetto trace", perfetto_bytes)

    def _save(self, path: str | os.PathLike[str], what: str, encode: Callable[[EventStore, TraceMetadata], bytes]) -> None:
        from kernbench.outputs import check_outputs, write_atomic

        store = self.store()
        check_outputs([(what, os.fspath(path))], inputs=self.kernel_files)
        data = encode(store, self.trace_metadata())
        write_atomic(path, lambda f: f.write(data))

    def explain(self, by: str = "cause") -> Attribution:
        """Where every ns of the latency went: the critical path and its attribution, as ``kernbench run --explain``.

        ``by`` is what :meth:`explain_text` leads with: ``"cause"``, or ``"line"`` / ``"function"`` of the
        kernel's source; the attribution holds all of them (``a.by_cause``; per line:
        :func:`kernbench.analysis.lines.by_source`, ``a.lines("line")``)."""
        from kernbench.analysis.critical import attribute
        from kernbench.analysis.lines import BY

        if by not in BY:
            raise ValueError(f"explain by {by!r}: by is one of {', '.join(BY)}")
        return attribute(self.store(), self.latency_ns)

    def explain_text(self, by: str = "cause") -> str:
        """:meth:`explain` as ``kernbench run --explain [--by line|function]`` prints it."""
        from kernbench.analysis.explain import explain_text

        return explain_text(self.explain(by), by=by)

    @property
    def total_commands(self) -> int:
        return sum(self.commands.values())

    def run_record(
        self,
        *,
        kernel: str | None = None,
        kernel_file: str | None = None,
        variant: str = "",
        params: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
        max_abs_err: float | None = None,
        attribution: Attribution | None = None,
        figures: Mapping[str, Any] | None = None,
        what_if: Mapping[str, Any] | None = None,
        speedups: Mapping[str, Any] | None = None,
        data: str = "held",
    ) -> dict[str, Any]:
        """This run as a run record (:mod:`kernbench.record`, ``kernbench run --json``'s object): the
        per-PE accounting summed over PEs under the record's names; what ran (the kernel, its options,
        the ``--set`` overrides, its check's error, …) as given, the kernel defaulting to the launched
        kernels' names and the overrides to none."""
        from kernbench.record import record

        return record(
            kernel=self.kernel if kernel is None else kernel,
            kernel_file=kernel_file,
            topology=self.topology,
            timing=self.timing,
            fidelity=self.fidelity,
            variant=variant,
            params=params or {},
            overrides=overrides or {},
            topology_digest=self.topology_digest or None,
            latency_ns=self.latency_ns,
            pes=len(self.pes),
            commands=self.total_commands,
            dispatch_cycles=self.total_dispatch_cycles,
            max_abs_err=max_abs_err,
            stall_ns_by_reason=self.stall_ns_by_reason,
            engine_busy_ns={e: sum(b[e] for b in self.engine_busy_ns.values()) for e in ENGINES},
            attribution=attribution.as_json() if attribution is not None else None,
            figures=figures,
            what_if=what_if,
            speedups=speedups,
            data=data,
        )

    def engine_util_pct(self) -> dict[str, float]:
        """Busy time of each engine kind over (latency × PEs), in percent."""
        if self.latency_ns <= 0:
            return {e: 0.0 for e in ENGINES}
        n = len(self.pes)
        return {e: 100.0 * sum(b[e] for b in self.engine_busy_ns.values()) / (self.latency_ns * n) for e in ENGINES}
