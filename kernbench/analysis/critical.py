"""The critical path of a recorded run, and every nanosecond of its latency attributed.

Every span a run records names what released its start (``pred``, see
:mod:`kernbench.events.types`). Walking those links back from the span that
ends last reaches time 0 through a chain of spans, each starting exactly
when the one before it ended: the *critical path*. A stall is never on it —
the path goes through what the stall waited for (the load, the message, the
command that freed the scheduler queue) — and a DMA or IPCQ transfer is
expanded into where its critical flit spent its time (``TRANSIT`` spans:
node overheads, serialization and propagation per edge, queueing behind
another transfer, HBM channel drain).

So the path's segments tile ``[0, latency]``, and each nanosecond belongs to
exactly one (component, cause) pair: :func:`attribute` adds them up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kernbench.events.store import EventStore
from kernbench.events.types import ENGINE_TABLE, Event, EventKind
from kernbench.pe.opkinds import OP_KINDS
from kernbench.topology.ids import pe_of

if TYPE_CHECKING:
    from kernbench.analysis.lines import LineCost

#: cause of an engine span by the lane it is on
LANE_CAUSE = {e.lane: e.cause for e in ENGINE_TABLE} | {"tcm": "tcm port"}  # (a DMA reading TCM's port)
#: cause of a PE_MATH span whose op kind runs at the transcendental rate (its label is the kind)
TRANSCENDENTAL_CAUSE = "math (transcendental)"
TRANSCENDENTAL_KINDS = frozenset(k.name for k in OP_KINDS.values() if k.rate == "transcendental")
#: cause of a TRANSIT part by its label
TRANSIT_CAUSE = {
    "overhead": "node overhead",
    "serialization": "serialization",
    "propagation": "propagation",
    "queueing": "queueing",
    "drain": "hbm channel drain",
    "tcm port": "tcm port",
}
#: component kind of a PE lane
LANE_KIND = {e.lane: e.block for e in ENGINE_TABLE} | {"tcm": "PE_TCM"}
_ON_PATH = (EventKind.DISPATCH, EventKind.CPU_WORK, EventKind.ENGINE_BUSY)
TOLERANCE_NS = 1e-6  # a span must start within this of its pred's end


@dataclass(frozen=True, slots=True)
class Segment:
    """One piece of the critical path: ``[start_ns, end_ns]`` on ``component`` for ``cause``."""

    start_ns: float
    end_ns: float
    component: str
    cause: str
    kind: str  # the component's kind (PE_CPU, PE_GEMM, …, node, edge, hbm channel)
    corr_id: int  # the command (or transfer) it belongs to
    label: str  # what the span was (command name, stage, transfer)
    via: str  # why it started then: what it followed on the path
    behind: int = -1  # queueing: the corr id it waited behind
    span_component: str = ""  # the span it is part of: its own component, or (a transfer's part) the transfer's lane
    src: str = ""  # the kernel source site of the command it belongs to (kernbench.events.source; "" unknown)

    @property
    def ns(self) -> float:
        return self.end_ns - self.start_ns

    def as_json(self) -> dict[str, object]:
        d: dict[str, object] = {
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "component": self.component,
            "cause": self.cause,
            "kind": self.kind,
            "corr_id": self.corr_id,
            "label": self.label,
            "via": self.via,
        }
        if self.behind >= 0:
            d["behind"] = self.behind
        return d


@dataclass(frozen=True)
class Attribution:
    """A run's latency split by cause, by component kind and by component; and the path itself."""

    latency_ns: float
    path: tuple[Segment, ...]
    by_cause: dict[str, float] = field(default_factory=dict)
    by_component_kind: dict[str, float] = field(default_factory=dict)
    by_component: dict[tuple[str, str], float] = field(default_factory=dict)

    def lines(self, by: str = "line") -> list[LineCost]:
        """The path's time per source line (``by="function"``: per function) of the kernel, most first
        (:func:`kernbench.analysis.lines.by_source`); their ns sum to the latency."""
        from kernbench.analysis.lines import by_source

        if by not in ("line", "function"):
            raise ValueError(f"lines by {by!r}: by is 'line' or 'function'")
        return by_source(self, "line" if by == "line" else "function")

    def top(self, n: int = 10) -> list[tuple[str, str, float]]:
        """The ``n`` (component, cause) pairs with the most nanoseconds on the path."""
        ranked = sorted(self.by_component.items(), key=lambda kv: (-kv[1], kv[0]))
        return [(c, cause, ns) for (c, cause), ns in ranked[:n]]

    def as_json(self, path_limit: int | None = None) -> dict[str, object]:
        from kernbench.analysis.lines import lines_json

        path = self.path if path_limit is None else self.path[:path_limit]
        return {
            "by_cause": {k: round(v, 9) for k, v in self.by_cause.items()},
            "by_component_kind": {k: round(v, 9) for k, v in self.by_component_kind.items()},
            "top": [{"component": c, "cause": cause, "ns": round(ns, 9)} for c, cause, ns in self.top()],
            **lines_json(self),
            "path": [s.as_json() for s in compact(path)],
        }


class PathError(ValueError):
    """The recorded run has no connected critical path (recorded without causes, or cut short)."""


class NoCausesError(PathError):
    """The run was recorded without causes (no span names its ``pred``): a trace from before format v2."""


def attribute(events: EventStore | Iterable[Event], latency_ns: float | None = None) -> Attribution:
    """The critical path of a recorded run and its attribution (see the module docstring)."""
    store = events if isinstance(events, EventStore) else EventStore.from_events(events)
    path = critical_path(store, latency_ns)
    by_cause: dict[str, float] = {}
    by_kind: dict[str, float] = {}
    by_comp: dict[tuple[str, str], float] = {}
    for s in path:
        by_cause[s.cause] = by_cause.get(s.cause, 0.0) + s.ns
        by_kind[s.kind] = by_kind.get(s.kind, 0.0) + s.ns
        key = (s.component, s.cause)
        by_comp[key] = by_comp.get(key, 0.0) + s.ns
    end = path[-1].end_ns if path else 0.0
    return Attribution(
        latency_ns=end,
        path=tuple(path),
        by_cause=dict(sorted(by_cause.items(), key=lambda kv: -kv[1])),
        by_component_kind=dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        by_component=by_comp,
    )


def critical_path(store: EventStore, latency_ns: float | None = None) -> list[Segment]:
    """The path's segments in time order, tiling ``[0, end]`` (``end``: the last span's end)."""
    n = len(store)
    if n == 0:
        return []
    cols = store.columns()
    kind, seq, pred = cols["kind"], cols["seq"], cols["pred"]
    t, end = cols["t_ns"], cols["end_ns"]
    row_of = _rows_by_seq(seq)
    on_path = np.isin(kind, [int(k) for k in _ON_PATH])
    if not on_path.any():
        return []
    if not (pred[on_path] >= 0).any() and (t[on_path] > TOLERANCE_NS).any():  # (spans all from t=0, as one tl.cycles: a path)
        raise NoCausesError("the run was recorded without causes (a trace from before format v2?): no critical path")
    last_end = end[on_path].max()
    if latency_ns is not None and abs(last_end - latency_ns) > TOLERANCE_NS:
        raise PathError(f"the last span ends at {last_end} ns, not at the run's latency {latency_ns} ns")
    # the last span to end (ties: the one published last)
    ends_last = np.flatnonzero(on_path & (end == last_end))
    row = int(ends_last[np.argmax(seq[ends_last])])
    children = _transit_children(store, kind, pred, row_of)
    sites = _command_sites(store, cols)
    walk: list[tuple[int, str]] = []  # (row, how it was reached) from the end back to the start
    while True:
        walk.append((row, "start"))
        p = int(pred[row])
        if p < 0:
            if t[row] > TOLERANCE_NS:
                raise PathError(f"the path stops at {store.event(row).component} at t={t[row]} ns with nothing before it")
            break
        prow = int(row_of(p))
        if prow < 0:
            raise PathError(f"{store.event(row).component} at t={t[row]} ns waits for event #{p}, which is not in the trace")
        via = _via(store, cols, row, prow)
        while kind[prow] == EventKind.STALL:  # a stall is released by what it waited for
            via = store.strings[int(cols["label"][prow])]
            q = int(pred[prow])
            if q < 0:
                raise PathError(f"a stall of {store.components[int(cols['component'][prow])]} at t={t[prow]} ns names no cause")
            prow = int(row_of(q))
            if prow < 0:
                raise PathError(f"a stall at t={t[row]} ns waits for event #{q}, which is not in the trace")
        if abs(end[prow] - t[row]) > TOLERANCE_NS:
            raise PathError(
                f"{store.event(row).component} starts at t={t[row]} ns but what it waited for "
                f"({store.event(prow).component}) ends at {end[prow]} ns"
            )
        walk[-1] = (row, via)
        row = prow
    segments: list[Segment] = []
    for row, via in reversed(walk):
        segments.extend(_segments(store, cols, row, via, children.get(row), sites))
    return segments


def _command_sites(store: EventStore, cols: dict[str, np.ndarray]) -> dict[int, str]:
    """corr id → the source site of the command: its DISPATCH names it, and every span of the command
    (its hand-off, stages, transfers and their parts) shares the DISPATCH's corr id."""
    src = cols["src"]
    rows = np.flatnonzero((cols["kind"] == int(EventKind.DISPATCH)) & (src > 0))
    strings = store.strings
    return {int(c): strings[int(s)] for c, s in zip(cols["corr_id"][rows].tolist(), src[rows].tolist(), strict=True)}


def _rows_by_seq(seq: np.ndarray) -> Callable[[Any], Any]:
    """``seq`` number(s) → row(s) of the store, -1 for one not there (by binary search: a table
    indexed by seq would be as large as the largest seq, not as the trace)."""
    order = np.argsort(seq, kind="stable")
    ordered = seq[order]
    last = len(ordered) - 1

    def rows(s: Any) -> Any:
        at = np.minimum(np.searchsorted(ordered, s), last)
        return np.where(ordered[at] == s, order[at], -1)

    return rows


def _transit_children(store: EventStore, kind: np.ndarray, pred: np.ndarray, row_of: Callable[[Any], Any]) -> dict[int, list[int]]:
    """Row of each transfer span → the rows of its TRANSIT parts, in time order."""
    out: dict[int, list[int]] = {}
    parts = np.flatnonzero(kind == int(EventKind.TRANSIT))
    for r, parent in zip(parts.tolist(), row_of(pred[parts]).tolist(), strict=True):
        out.setdefault(int(parent), []).append(r)
    return out


def _via(store: EventStore, cols: dict[str, np.ndarray], row: int, prow: int) -> str:
    """How the path reached ``row`` from ``prow`` (the span it followed)."""
    comp = cols["component"]
    if comp[row] == comp[prow]:
        return "in order" if cols["kind"][row] != EventKind.ENGINE_BUSY else "engine busy"
    if cols["corr_id"][row] == cols["corr_id"][prow] and cols["corr_id"][row] >= 0:
        return "next stage"
    if cols["kind"][prow] == EventKind.STALL:
        return store.strings[int(cols["label"][prow])]
    return f"data from corr {int(cols['corr_id'][prow])}"


def _segments(
    store: EventStore, cols: dict[str, np.ndarray], row: int, via: str, parts: list[int] | None, sites: dict[int, str]
) -> list[Segment]:
    comp = store.components[int(cols["component"][row])]
    corr = int(cols["corr_id"][row])
    own = int(cols["src"][row])
    src = store.strings[own] if own else sites.get(corr, "")
    label = store.strings[int(cols["label"][row])]
    pe = pe_of(comp)
    lane = comp[len(pe) + 1 :] if pe else comp
    k = EventKind(int(cols["kind"][row]))
    cause = "cpu work" if k == EventKind.CPU_WORK else LANE_CAUSE.get(lane, lane)
    if lane == "math" and label in TRANSCENDENTAL_KINDS:
        cause = TRANSCENDENTAL_CAUSE
    kind = LANE_KIND.get(lane, "node")
    if not parts:
        t0, t1 = float(cols["t_ns"][row]), float(cols["end_ns"][row])
        return [Segment(t0, t1, comp, cause, kind, corr, label, via, span_component=comp, src=src)] if t1 > t0 else []
    out: list[Segment] = []
    for r in parts:
        t0, t1 = float(cols["t_ns"][r]), float(cols["end_ns"][r])
        if t1 <= t0:  # empty parts are left out before "via" is given: the first kept part carries it
            continue
        part_comp = store.components[int(cols["component"][r])]
        out.append(
            Segment(
                t0,
                t1,
                part_comp,
                *_cause_kind(store.strings[int(cols["label"][r])], part_comp),
                corr,
                label,
                via if not out else "transfer",
                int(cols["value"][r]),
                comp,
                src,
            )
        )
    return out


def _cause_kind(label: str, component: str) -> tuple[str, str]:
    """A transit part's cause and component kind: a drain is an HBM channel's, also when it is
    named after the memory (its channels tied for the last burst)."""
    cause = TRANSIT_CAUSE.get(label, "transfer")
    return cause, "hbm channel" if label == "drain" else component_kind(component)


def component_kind(component: str) -> str:
    """What a network component is: an edge, an HBM/SRAM channel, or a node."""
    if "->" in component:
        return "edge"
    last = component.rsplit(".", 1)[-1]
    if (last.startswith("pc") or last.startswith("ch")) and last[2:].isdigit():
        return "hbm channel"
    if last == "tcm" and pe_of(component) is not None:  # a DMA's turn on the TCM port
        return LANE_KIND["tcm"]
    return "node"


def compact(path: Iterable[Segment]) -> list[Segment]:
    """Consecutive segments on the same component for the same cause, joined."""
    out: list[Segment] = []
    for s in path:
        if (
            out
            and out[-1].component == s.component
            and out[-1].cause == s.cause
            and out[-1].behind == s.behind
            and abs(out[-1].end_ns - s.start_ns) <= TOLERANCE_NS
        ):
            prev = out[-1]
            out[-1] = Segment(
                prev.start_ns,
                s.end_ns,
                prev.component,
                prev.cause,
                prev.kind,
                prev.corr_id,
                prev.label,
                prev.via,
                prev.behind,
                prev.span_component,
                prev.src,
            )
        else:
            out.append(s)
    return out
