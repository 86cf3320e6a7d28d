"""Export an event store as Chrome / Perfetto trace-event JSON.

Open the file in https://ui.perfetto.dev or ``chrome://tracing``:

* one *process* per PE (``pid`` in natural PE order, named by
  ``process_name`` metadata), threads for its engine lanes in
  :data:`~kernbench.events.types.ENGINES` order;
* edges live in a ``links`` process (threads per edge), other components
  (HBM channels, routers…) in a process per parent node;
* spans become complete (``"X"``) events, instants become ``"i"`` events,
  FIFO depths (QUEUE_DEPTH) become counter (``"C"``) tracks named after the
  edge, for the demo and real kernels alike;
* a command's DISPATCH (and a ``tl.cycles``) carries the kernel source line
  that issued it in its args (``src``: ``file:line in function``, ``stack``:
  the calls through the user's helpers, :mod:`kernbench.events.source`), and
  each PE has a ``source lines`` thread: one slice per dispatch, named
  ``file.py:LINE``, so the kernel's lines read along the timeline;
* a transfer's EDGE_BUSY hops, joined by ``corr_id``, are linked with flow
  events (``"s"`` on the first hop, ``"t"`` on the middle ones, ``"f"`` on the
  last) whose ``id`` is the ``corr_id``.

Two rules keep a trace processor from dropping anything:

* **Times are whole nanoseconds**, rounded once per instant: a span runs from
  ``round(t_ns)`` to ``round(end_ns)``, so neighbours that touch still touch
  (rounding start and duration separately made them overlap by 1 ns).
  ``ts`` is written in microseconds, the format's unit, with at most three
  decimals (``displayTimeUnit`` is ns).
* **One track per concurrent operation**: spans of a component that overlap
  (two transfers sharing a link, a stall and its lazy-load wait) go to
  separate threads of that component (``r0->r1``, ``r0->r1 #2``, …), each
  holding spans that never overlap. FETCH and STORE are engines of their own
  (``fetch``, ``store``), each a track.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from kernbench.events.source import parse_site
from kernbench.events.store import EventStore, is_span_kind
from kernbench.events.timeline import natural_key
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import ENGINES, EventKind
from kernbench.outputs import write_atomic
from kernbench.topology.ids import pe_of

LINKS_PROCESS = "links"
SOURCE_THREAD = "source lines"


def pack_tracks(spans: list[tuple[int, int, int]]) -> tuple[dict[int, int], int]:
    """Spans ``(start, end, row)`` → ``({row: track}, tracks)``: the first track whose
    last span ends at or before the start; spans on one track never overlap."""
    ends: list[int] = []
    track_of: dict[int, int] = {}
    for start, end, row in sorted(spans):
        for i, last in enumerate(ends):
            if last <= start:
                ends[i] = end
                track_of[row] = i
                break
        else:
            track_of[row] = len(ends)
            ends.append(end)
    return track_of, max(1, len(ends))


class _Tracks:
    """Assigns a (pid, tid) to every track of every component and records their names."""

    def __init__(self, components: list[str], tracks_per_component: dict[str, int]) -> None:
        self.meta: list[dict[str, Any]] = []
        self.of: dict[tuple[str, int], tuple[int, int]] = {}
        self.pid_of: dict[str, int] = {}
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
            self._threads(pid, [(lane, lane[len(pe) + 1 :]) for lane in lanes], tracks_per_component)
        for group in sorted(groups, key=natural_key):
            pid += 1
            self._process(pid, group)
            self._threads(pid, [(c, c) for c in sorted(groups[group], key=natural_key)], tracks_per_component)

    def _process(self, pid: int, name: str) -> None:
        self.meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        self.meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})

    def _threads(self, pid: int, lanes: list[tuple[str, str]], tracks_per_component: dict[str, int]) -> None:
        tid = 0
        for component, name in lanes:
            self.pid_of[component] = pid
            for k in range(tracks_per_component.get(component, 1)):
                tid += 1
                self.of[(component, k)] = (pid, tid)
                label = name if k == 0 else f"{name} #{k + 1}"
                self.meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
                self.meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})


def _us(ns: int) -> float:
    """Whole nanoseconds as microseconds: ``k / 1000`` prints with at most three decimals."""
    return ns / 1000


def perfetto_trace(store: EventStore, metadata: TraceMetadata | None = None) -> dict[str, Any]:
    """The trace-event JSON object for ``store``."""
    n = len(store)
    cols = {name: store.col(name).tolist() for name in store.columns()}
    start = np.rint(store.col("t_ns")).astype(np.int64).tolist() if n else []
    end = np.rint(store.col("end_ns")).astype(np.int64).tolist() if n else []
    span_rows: dict[int, list[tuple[int, int, int]]] = {}
    transit = int(EventKind.TRANSIT)  # a transfer's causes: the attribution's input, not a timeline of their own
    for row in range(n):
        if cols["kind"][row] == transit:
            continue
        if is_span_kind(cols["kind"][row]):
            end[row] = max(end[row], start[row])
            span_rows.setdefault(cols["component"][row], []).append((start[row], end[row], row))
    track: dict[int, int] = {}
    tracks_per_component: dict[str, int] = {}
    for comp, spans in span_rows.items():
        placed, count = pack_tracks(spans)
        track.update(placed)
        tracks_per_component[store.components[comp]] = count
    used = sorted({store.components[int(c)] for c in np.unique(store.col("component")[store.col("kind") != transit])})
    tracks = _Tracks(used, tracks_per_component)
    events: list[dict[str, Any]] = list(tracks.meta)
    hops: dict[int, list[tuple[int, int, int]]] = {}
    counters: dict[tuple[int, int], dict[str, Any]] = {}
    for row in range(n):
        if cols["kind"][row] == transit:
            continue
        kind = EventKind(cols["kind"][row])
        comp = store.components[cols["component"][row]]
        pid, tid = tracks.of[(comp, track.get(row, 0))]
        label = store.strings[cols["label"][row]]
        if kind == EventKind.QUEUE_DEPTH:  # the last sample of a whole nanosecond wins
            counters[(cols["component"][row], start[row])] = {
                "ph": "C",
                "name": comp,
                "cat": "fifo",
                "ts": _us(start[row]),
                "pid": pid,
                "tid": tid,
                "args": {"depth_flits": cols["value"][row]},
            }
            continue
        args: dict[str, Any] = {"value": cols["value"][row]}
        if cols["corr_id"][row] >= 0:
            args["corr_id"] = cols["corr_id"][row]
        if cols["detail"][row]:
            args["detail"] = store.strings[cols["detail"][row]]
        if label:
            args["label"] = label
        if cols["src"][row]:
            args.update(_source_args(store.strings[cols["src"][row]]))
        name = label or kind.name.lower()
        if row in track:
            events.append(
                {
                    "ph": "X",
                    "name": name,
                    "cat": kind.name.lower(),
                    "ts": _us(start[row]),
                    "dur": _us(end[row] - start[row]),
                    "pid": pid,
                    "tid": tid,
                    "args": args,
                }
            )
            if kind == EventKind.EDGE_BUSY and cols["corr_id"][row] >= 0:
                hops.setdefault(cols["corr_id"][row], []).append((start[row], pid, tid))
        else:
            events.append(
                {"ph": "i", "s": "t", "name": name, "cat": kind.name.lower(), "ts": _us(start[row]), "pid": pid, "tid": tid, "args": args}
            )
    events.extend(counters.values())
    events.extend(_source_track(store, cols, start, end, tracks))
    for corr in sorted(hops):
        chain = hops[corr]
        if len(chain) < 2:
            continue
        for i, (t, pid, tid) in enumerate(chain):
            ph = "s" if i == 0 else ("f" if i == len(chain) - 1 else "t")
            flow = {"ph": ph, "id": corr, "name": "transfer", "cat": "transfer", "ts": _us(t), "pid": pid, "tid": tid}
            if ph == "f":
                flow["bp"] = "e"
            events.append(flow)
    other: dict[str, Any] = {"generator": "kernbench"}  # JSON values
    if metadata is not None:
        other.update(
            kernel=metadata.kernel,
            topology=metadata.topology,
            variant=metadata.variant,
            end_ns=metadata.end_ns,
            **{f"extra.{k}": v for k, v in sorted(metadata.extra.items())},
        )
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": other}


def _source_args(src: str) -> dict[str, Any]:
    """A command's source site as trace args: its line (``src``) and, called through helpers, the ``stack``."""
    frames = parse_site(src)
    args: dict[str, Any] = {"src": f"{frames[0].where} in {frames[0].function}"}
    if len(frames) > 1:
        args["stack"] = " < ".join(f"{f.where} in {f.function}" for f in frames)
    return args


def _source_track(store: EventStore, cols: dict[str, list[Any]], start: list[int], end: list[int], tracks: _Tracks) -> list[dict[str, Any]]:
    """Each PE's ``source lines`` thread: a slice per dispatch (and ``tl.cycles``) named after its line.
    PE_CPU does one thing at a time, so the slices of one PE never overlap."""
    out: list[dict[str, Any]] = []
    tid_of: dict[int, int] = {}
    own = (int(EventKind.DISPATCH), int(EventKind.CPU_WORK))
    names: dict[int, tuple[str, dict[str, Any]]] = {}
    for row in range(len(store)):
        s = cols["src"][row]
        if not s or cols["kind"][row] not in own:
            continue
        pid = tracks.pid_of[store.components[cols["component"][row]]]
        tid = tid_of.get(pid)
        if tid is None:
            tid = tid_of[pid] = 1 + max(t for (p, t) in tracks.of.values() if p == pid)
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": SOURCE_THREAD}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        if s not in names:
            f = parse_site(store.strings[s])[0]
            names[s] = (f"{os.path.basename(f.file)}:{f.line}", _source_args(store.strings[s]))
        name, args = names[s]
        out.append(
            {
                "ph": "X",
                "name": name,
                "cat": "source",
                "ts": _us(start[row]),
                "dur": _us(max(end[row], start[row]) - start[row]),
                "pid": pid,
                "tid": tid,
                "args": {**args, "corr_id": cols["corr_id"][row]},
            }
        )
    return out


def perfetto_bytes(store: EventStore, metadata: TraceMetadata | None = None) -> bytes:
    """:func:`perfetto_trace` as compact, strict JSON."""
    return json.dumps(perfetto_trace(store, metadata), separators=(",", ":"), allow_nan=False).encode("utf-8")


def save_perfetto(path: str | os.PathLike[str], store: EventStore, metadata: TraceMetadata | None = None) -> None:
    """Write :func:`perfetto_bytes` to ``path`` (whole or not at all)."""
    data = perfetto_bytes(store, metadata)
    write_atomic(path, lambda f: f.write(data))
