"""A recorded run's figures, read from its events alone (so a run and a trace file compare alike).

Latency, PEs, commands and dispatch cycles, each engine's busy time and
share, PE_CPU's stalls by reason, and the critical-path attribution
(:mod:`kernbench.analysis.critical`); with the trace's metadata, what ran
(kernel, topology, options), so :meth:`RunSummary.as_json` is a run record
(:mod:`kernbench.record`) like ``kernbench run --json``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernbench.analysis.critical import Attribution, PathError, attribute
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import ENGINES, EventKind
from kernbench.sim.fidelity import FIDELITIES
from kernbench.topology.ids import pe_of


@dataclass(frozen=True)
class RunSummary:
    """What one run did, from its events."""

    name: str
    latency_ns: float
    pes: int
    commands: int
    dispatch_cycles: float
    engine_busy_ns: dict[str, float]  # per engine kind, all PEs
    stall_ns_by_reason: dict[str, float]  # PE_CPU stalls per reason, all PEs
    attribution: Attribution | None
    why_no_attribution: str = ""
    metadata: TraceMetadata = field(default_factory=TraceMetadata)

    @property
    def stall_ns(self) -> float:
        return sum(self.stall_ns_by_reason.values())

    def engine_util_pct(self) -> dict[str, float]:
        """Busy time of each engine kind over (latency × PEs), in percent."""
        span = self.latency_ns * self.pes
        return {e: (100.0 * ns / span if span > 0 else 0.0) for e, ns in self.engine_busy_ns.items()}

    def as_json(self) -> dict[str, object]:
        """The run record (:mod:`kernbench.record`); what the trace's metadata does not say is empty (or null)."""
        from kernbench.record import record

        meta = self.metadata
        extra = meta.extra if isinstance(meta.extra, dict) else {}
        params = extra.get("params")
        err = extra.get("max_abs_err")
        overrides = extra.get("overrides")
        digest = extra.get("topology_digest")
        figures = extra.get("figures")
        return record(
            kernel=meta.kernel,
            kernel_file=extra.get("kernel_file") if isinstance(extra.get("kernel_file"), str) else None,
            topology=meta.topology,
            timing=str(extra.get("timing") or ""),
            fidelity=fidelity_of(meta),
            variant=meta.variant,
            params=params if isinstance(params, dict) else {},
            overrides=overrides if isinstance(overrides, dict) else None,  # (a trace written before they were kept)
            topology_digest=digest if isinstance(digest, str) else None,
            latency_ns=self.latency_ns,
            pes=self.pes,
            commands=self.commands,
            dispatch_cycles=self.dispatch_cycles,
            max_abs_err=float(err) if isinstance(err, (int, float)) and not isinstance(err, bool) else None,
            stall_ns_by_reason=self.stall_ns_by_reason,
            engine_busy_ns=self.engine_busy_ns,
            attribution=self.attribution.as_json() if self.attribution is not None else None,
            figures=_figures(figures),
            data="none" if extra.get("data") == "none" else "held",
        )


def _figures(figures: object) -> dict[str, object]:
    """The kernel's figures a trace kept, those that still fit a run record (a hand-made trace may hold anything)."""
    from kernbench.record import figure_problems

    if not isinstance(figures, dict) or figure_problems(figures):
        return {}
    return dict(figures)


def fidelity_of(meta: TraceMetadata) -> str:
    """The level of the model a trace's run ran at (``paper`` for a trace written before it was kept)."""
    fidelity = meta.extra.get("fidelity") if isinstance(meta.extra, dict) else None
    return fidelity if fidelity in FIDELITIES else "paper"


def summarize(store: EventStore, name: str = "", latency_ns: float | None = None, metadata: TraceMetadata | None = None) -> RunSummary:
    """The figures of a recorded run (``latency_ns``: the run's own, when known; ``metadata``: what ran)."""
    cols = store.columns()
    kind, comp = cols["kind"], cols["component"]
    dur = np.maximum(cols["end_ns"] - cols["t_ns"], 0.0)
    lanes = {}  # component index -> (pe, engine)
    for i, c in enumerate(store.components):
        pe = pe_of(c)
        if pe is not None:
            lanes[i] = (pe, c[len(pe) + 1 :])
    busy = dict.fromkeys(ENGINES, 0.0)
    stalls: dict[str, float] = {}
    dispatch = kind == int(EventKind.DISPATCH)
    for k in (EventKind.DISPATCH, EventKind.CPU_WORK, EventKind.ENGINE_BUSY):
        rows = kind == int(k)
        sums = np.bincount(comp[rows], weights=dur[rows], minlength=len(store.components))
        for i in np.flatnonzero(sums).tolist():
            engine = lanes.get(i, (None, None))[1]
            if engine in busy:
                busy[engine] += float(sums[i])
    stall_rows = np.flatnonzero(kind == int(EventKind.STALL))
    for r in stall_rows.tolist():
        reason = store.strings[int(cols["label"][r])]
        stalls[reason] = stalls.get(reason, 0.0) + float(dur[r])
    end = float(latency_ns) if latency_ns is not None else _end(store)
    try:
        attribution: Attribution | None = attribute(store, latency_ns)
        why = ""
    except PathError as exc:
        attribution, why = None, str(exc)
    return RunSummary(
        name=name,
        latency_ns=end,
        pes=len({pe for pe, _ in lanes.values()}),
        commands=int(dispatch.sum()),
        dispatch_cycles=float(cols["value"][dispatch].sum()),
        engine_busy_ns=busy,
        stall_ns_by_reason=dict(sorted(stalls.items())),
        attribution=attribution,
        why_no_attribution=why,
        metadata=metadata or TraceMetadata(),
    )


def _end(store: EventStore) -> float:
    kind = store.col("kind")
    lanes = np.isin(kind, [int(EventKind.DISPATCH), int(EventKind.CPU_WORK), int(EventKind.ENGINE_BUSY)])
    return float(store.col("end_ns")[lanes].max()) if lanes.any() else store.end_ns
