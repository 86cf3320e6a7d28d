"""Export an event store as Chrome / Perfetto trace-event JSON.

Open the file in https://ui.perfetto.dev or ``chrome://tracing``:

* one *process* per PE (``pid`` in natural PE order, named by
  ``process_name`` metadata), one *thread* per engine lane in
  :data:`~kernbench.events.timeline.ENGINES` order;
* edges live in a ``links`` process (a thread per edge), other components
  (HBM channels, routers…) in a process per parent node;
* spans become complete (``"X"``) events, instants become ``"i"`` events,
  FIFO depths become counter (``"C"``) tracks named after the edge;
* a transfer's EDGE_BUSY hops, joined by ``corr_id``, are linked with flow
  events (``"s"`` on the first hop, ``"t"`` on the middle ones, ``"f"`` on the
  last) whose ``id`` is the ``corr_id``.

Timestamps are microseconds (the format's unit); ``displayTimeUnit`` is ns.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from kernbench.events.store import EventStore, is_span_kind
from kernbench.events.timeline import ENGINES, natural_key, pe_of
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import EventKind
from kernbench.outputs import write_atomic

LINKS_PROCESS = "links"


class _Tracks:
    """Assigns a (pid, tid) to every component and records their names."""

    def __init__(self, components: list[str]) -> None:
        self.meta: list[dict[str, Any]] = []
        self.of: dict[str, tuple[int, int]] = {}
        pes = sorted({p for c in components if (p := pe_of(c))}, key=natural_key)
        groups: dict[str, list[str]] = {}
        for c in components:
            if pe_of(c) is None:
                group = LINKS_PROCESS if "->" in c else (c.rsplit(".", 1)[0] if "." in c else c)
                groups.setdefault(group, []).append(c)
        pid = 0
        for pe in pes:
            pid += 1
            self._process(pid, pe)
            lanes = sorted(
                (c for c in components if pe_of(c) == pe),
                key=lambda c: (
                    ENGINES.index(c[len(pe) + 1 :]) if c[len(pe) + 1 :] in ENGINES else len(ENGINES),
                    natural_key(c),
                ),
            )
            for tid, lane in enumerate(lanes, start=1):
                self._thread(pid, tid, lane[len(pe) + 1 :], lane)
        for group in sorted(groups, key=natural_key):
            pid += 1
            self._process(pid, group)
            for tid, comp in enumerate(sorted(groups[group], key=natural_key), start=1):
                self._thread(pid, tid, comp, comp)

    def _process(self, pid: int, name: str) -> None:
        self.meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        self.meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})

    def _thread(self, pid: int, tid: int, name: str, component: str) -> None:
        self.of[component] = (pid, tid)
        self.meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        self.meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})


def perfetto_trace(store: EventStore, metadata: TraceMetadata | None = None) -> dict[str, Any]:
    """The trace-event JSON object for ``store``."""
    used = sorted({store.components[int(c)] for c in np.unique(store.col("component"))})
    tracks = _Tracks(used)
    events: list[dict[str, Any]] = list(tracks.meta)
    hops: dict[int, list[tuple[float, float, int, int]]] = {}
    cols = {name: store.col(name).tolist() for name in store.columns()}
    for row in range(len(store)):
        kind = EventKind(cols["kind"][row])
        comp = store.components[cols["component"][row]]
        pid, tid = tracks.of[comp]
        t_ns, end_ns = cols["t_ns"][row], cols["end_ns"][row]
        label = store.strings[cols["label"][row]]
        args: dict[str, Any] = {"value": cols["value"][row]}
        if cols["corr_id"][row] >= 0:
            args["corr_id"] = cols["corr_id"][row]
        if cols["detail"][row]:
            args["detail"] = store.strings[cols["detail"][row]]
        if label:
            args["label"] = label
        name = label or kind.name.lower()
        if kind == EventKind.QUEUE_DEPTH:
            events.append({"ph": "C", "name": comp, "cat": "fifo", "ts": t_ns / 1000.0, "pid": pid, "tid": tid,
                           "args": {"depth_flits": cols["value"][row]}})
        elif is_span_kind(kind):
            events.append({"ph": "X", "name": name, "cat": kind.name.lower(), "ts": t_ns / 1000.0,
                           "dur": max(0.0, end_ns - t_ns) / 1000.0, "pid": pid, "tid": tid, "args": args})
            if kind == EventKind.EDGE_BUSY and cols["corr_id"][row] >= 0:
                hops.setdefault(cols["corr_id"][row], []).append((t_ns, end_ns, pid, tid))
        else:
            events.append({"ph": "i", "s": "t", "name": name, "cat": kind.name.lower(), "ts": t_ns / 1000.0,
                           "pid": pid, "tid": tid, "args": args})
    for corr in sorted(hops):
        chain = hops[corr]
        if len(chain) < 2:
            continue
        for i, (t_ns, _end, pid, tid) in enumerate(chain):
            ph = "s" if i == 0 else ("f" if i == len(chain) - 1 else "t")
            flow = {"ph": ph, "id": corr, "name": "transfer", "cat": "transfer", "ts": t_ns / 1000.0,
                    "pid": pid, "tid": tid}
            if ph == "f":
                flow["bp"] = "e"
            events.append(flow)
    other = {"generator": "kernbench"}
    if metadata is not None:
        other.update(kernel=metadata.kernel, topology=metadata.topology, variant=metadata.variant,
                     end_ns=metadata.end_ns, **{f"extra.{k}": v for k, v in sorted(metadata.extra.items())})
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def save_perfetto(path: str | os.PathLike, store: EventStore, metadata: TraceMetadata | None = None) -> None:
    """Write :func:`perfetto_trace` to ``path`` as compact JSON (whole or not at all)."""
    text = json.dumps(perfetto_trace(store, metadata), separators=(",", ":"), allow_nan=False)
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))
