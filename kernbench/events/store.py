"""The columnar event store: numpy columns sorted by ``(t_ns, seq)``.

Events arrive as :class:`~kernbench.events.types.Event` records, in batches
while a simulation runs or all at once from a recorder or a trace file. The
store keeps one numpy column per field, sorted by ``(t_ns, seq)``, with the
strings interned into two tables (component ids; labels, details and
source sites share one). On top of the columns it keeps, per *stream* — one ``(component,
kind)`` pair, e.g. the GEMM engine's ENGINE_BUSY spans — the sorted row
numbers of that stream and the sorted end times of its spans, plus the
sorted end times of all spans. That is all the index a point query needs:
everything else is a binary search (see ``kernbench.events.timeline``).

Appending keeps every query correct on what has been appended so far. A span
is often published when it ends, so a batch may hold events earlier than the
last stored one; only the tail from the earliest such event is re-sorted, and
only the streams present in that tail are re-indexed.

Memory: 57 bytes of columns per event, plus 4 (stream rows) and, for spans,
16 (stream and global sorted ends): 61–77 bytes per event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from kernbench.events.bus import Bus
from kernbench.events.types import SPAN_KINDS, Event, EventKind

N_KINDS = len(EventKind)
_SPAN_KIND_MASK = np.zeros(N_KINDS, dtype=bool)
for _k in SPAN_KINDS:
    _SPAN_KIND_MASK[int(_k)] = True

#: Column name → numpy dtype. The order is the trace file's column order.
COLUMNS: dict[str, np.dtype] = {
    "t_ns": np.dtype(np.float64),
    "end_ns": np.dtype(np.float64),
    "kind": np.dtype(np.uint8),
    "component": np.dtype(np.int32),
    "label": np.dtype(np.int32),
    "detail": np.dtype(np.int32),
    "value": np.dtype(np.float64),
    "corr_id": np.dtype(np.int64),
    "seq": np.dtype(np.int64),
    "pred": np.dtype(np.int64),
    "src": np.dtype(np.int32),
}


def is_span_kind(kind: int) -> bool:
    return bool(_SPAN_KIND_MASK[kind])


class ColumnBatch:
    """Events as columns, sorted by ``(t_ns, seq)``, with batch-local string
    tables (``component``, ``label`` and ``detail`` index into them)."""

    __slots__ = ("columns", "components", "strings")

    def __init__(self, columns: dict[str, np.ndarray], components: list[str], strings: list[str]) -> None:
        self.columns = columns
        self.components = components
        self.strings = strings

    def __len__(self) -> int:
        return len(self.columns["t_ns"])


def columnize(events: Sequence[Event]) -> ColumnBatch:
    """Turn events into a :class:`ColumnBatch` (the per-event Python work of
    appending; a live source runs it on its own thread)."""
    n = len(events)
    # Intern in first-seen order (never set order: ids must not depend on hashing).
    comp_ids = {name: i for i, name in enumerate(dict.fromkeys(e.component for e in events))}
    str_ids = {name: i for i, name in enumerate(dict.fromkeys(s for e in events for s in (e.label, e.detail, e.src)))}
    kind = np.fromiter((e.kind for e in events), dtype=np.uint8, count=n)
    t = np.fromiter((e.t_ns for e in events), dtype=np.float64, count=n)
    end = np.fromiter((e.end_ns for e in events), dtype=np.float64, count=n)
    cols = {
        "t_ns": t,
        "end_ns": np.where(_SPAN_KIND_MASK[kind], end, t),
        "kind": kind,
        "component": np.fromiter((comp_ids[e.component] for e in events), dtype=np.int32, count=n),
        "label": np.fromiter((str_ids[e.label] for e in events), dtype=np.int32, count=n),
        "detail": np.fromiter((str_ids[e.detail] for e in events), dtype=np.int32, count=n),
        "value": np.fromiter((e.value for e in events), dtype=np.float64, count=n),
        "corr_id": np.fromiter((e.corr_id for e in events), dtype=np.int64, count=n),
        "seq": np.fromiter((e.seq for e in events), dtype=np.int64, count=n),
        "pred": np.fromiter((e.pred for e in events), dtype=np.int64, count=n),
        "src": np.fromiter((str_ids[e.src] for e in events), dtype=np.int32, count=n),
    }
    if n:
        order = np.lexsort((cols["seq"], cols["t_ns"]))
        cols = {k: v[order] for k, v in cols.items()}
    return ColumnBatch(cols, list(comp_ids), list(str_ids))


class _Vec:
    """A growable 1-D numpy array (amortized O(1) append)."""

    __slots__ = ("data", "size")

    def __init__(self, dtype: np.dtype, capacity: int = 8) -> None:
        self.data = np.empty(max(capacity, 8), dtype=dtype)
        self.size = 0

    @classmethod
    def wrap(cls, arr: np.ndarray) -> _Vec:
        vec = cls(arr.dtype, 0)
        vec.data = np.ascontiguousarray(arr)
        vec.size = len(arr)
        return vec

    def view(self) -> np.ndarray:
        return self.data[: self.size]

    def _reserve(self, size: int) -> None:
        if size > len(self.data):
            grown = np.empty(max(size, 2 * len(self.data)), dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown

    def truncate(self, size: int) -> None:
        self.size = min(self.size, size)

    def extend(self, values: np.ndarray) -> None:
        end = self.size + len(values)
        self._reserve(end)
        self.data[self.size : end] = values
        self.size = end

    def merge_sorted(self, values: np.ndarray) -> None:
        """Insert already-sorted ``values`` keeping the vector sorted."""
        if len(values) == 0:
            return
        if self.size == 0 or values[0] >= self.data[self.size - 1]:
            self.extend(values)
            return
        pos = int(np.searchsorted(self.view(), values[0], side="right"))
        tail = np.concatenate([self.data[pos : self.size], values])
        tail.sort(kind="stable")
        self.size = pos
        self.extend(tail)

    def nbytes(self) -> int:
        return self.size * self.data.itemsize


class _Stream:
    """Rows (and, for spans, sorted end times) of one ``(component, kind)``."""

    __slots__ = ("component", "ends", "kind", "rows")

    def __init__(self, component: int, kind: int) -> None:
        self.component = component
        self.kind = kind
        self.rows = _Vec(np.dtype(np.int32))
        self.ends = _Vec(np.dtype(np.float64)) if is_span_kind(kind) else None


class EventStore:
    """Columnar, time-sorted events with per-stream indices.

    Build with :meth:`from_events` or :meth:`append` batches. Columns are read
    through :meth:`col`; strings through :attr:`components` / :attr:`strings`.
    :attr:`version` increases with every append so views can key caches on it.
    """

    def __init__(self) -> None:
        self._cols: dict[str, _Vec] = {name: _Vec(dt, 1024) for name, dt in COLUMNS.items()}
        self.components: list[str] = []
        self.strings: list[str] = [""]
        self._component_ids: dict[str, int] = {}
        self._string_ids: dict[str, int] = {"": 0}
        self._streams: dict[int, _Stream] = {}
        self._by_component: dict[int, list[int]] = {}
        self._by_kind: dict[int, list[int]] = {}
        self._ends = _Vec(np.dtype(np.float64), 1024)
        self.version = 0
        self._end_ns = 0.0
        self._start_ns = 0.0

    # ------------------------------------------------------------------ build
    @classmethod
    def from_events(cls, events: Iterable[Event]) -> EventStore:
        store = cls()
        store.append(list(events))
        return store

    @classmethod
    def from_columns(cls, columns: dict[str, np.ndarray], components: Sequence[str], strings: Sequence[str]) -> EventStore:
        """Rebuild from saved columns (as written by :meth:`columns`)."""
        store = cls()
        store.components = list(components)
        store.strings = list(strings)
        store._component_ids = {c: i for i, c in enumerate(store.components)}
        store._string_ids = {s: i for i, s in enumerate(store.strings)}
        n = len(columns["t_ns"])
        for name, dt in COLUMNS.items():
            arr = np.asarray(columns[name])
            if arr.shape != (n,):
                raise ValueError(f"column {name!r} has shape {arr.shape}, expected ({n},)")
            if arr.dtype != dt:
                raise ValueError(f"column {name!r} has dtype {arr.dtype}, expected {dt}")
            store._cols[name] = _Vec.wrap(arr.copy())
        if n:
            order = np.lexsort((store.col("seq"), store.col("t_ns")))
            if not np.array_equal(order, np.arange(n)):
                for vec in store._cols.values():
                    vec.data = vec.data[order]
            kinds, comps = store.col("kind"), store.col("component")
            if kinds.min() < 0 or kinds.max() >= N_KINDS:
                raise ValueError(f"unknown event kind {int(kinds.max() if kinds.max() >= N_KINDS else kinds.min())}")
            if comps.min() < 0 or comps.max() >= len(store.components):
                raise ValueError("component index out of range")
            for name in ("label", "detail", "src"):
                ids = store.col(name)
                if ids.min() < 0 or ids.max() >= len(store.strings):
                    raise ValueError(f"{name} index out of range")
        store._index_from(0, n)
        return store

    def append(self, events: Sequence[Event]) -> None:
        """Add a batch; queries stay correct on everything appended so far."""
        self.append_columns(columnize(events))

    def append_columns(self, batch: ColumnBatch) -> None:
        """Add a batch already turned into columns (see :func:`columnize`).

        Costs O(batch + re-sorted tail) numpy work and a dictionary lookup per
        *distinct* string of the batch — cheap enough for a UI thread while
        :func:`columnize`, the per-event Python work, runs elsewhere.
        """
        m = len(batch)
        if m == 0:
            return
        cols = dict(batch.columns)
        cols["component"] = self._intern(batch.components, self._component_ids, self.components)[cols["component"]]
        strings = self._intern(batch.strings, self._string_ids, self.strings)
        cols["label"], cols["detail"], cols["src"] = strings[cols["label"]], strings[cols["detail"]], strings[cols["src"]]
        n = len(self)
        p = n
        t, seq = self.col("t_ns"), self.col("seq")
        t0, s0 = cols["t_ns"][0], cols["seq"][0]
        if n and (t0 < t[-1] or (t0 == t[-1] and s0 < seq[-1])):
            lo = int(np.searchsorted(t, t0, side="left"))
            hi = int(np.searchsorted(t, t0, side="right"))
            p = lo + int(np.searchsorted(seq[lo:hi], s0, side="right"))
        for name, vec in self._cols.items():
            tail = np.concatenate([vec.data[p:n], cols[name]])
            vec.size = p
            vec.extend(tail)
        if p < n:
            order = np.lexsort((self._cols["seq"].data[p : n + m], self._cols["t_ns"].data[p : n + m]))
            for vec in self._cols.values():
                vec.data[p : n + m] = vec.data[p : n + m][order]
        self._index_from(p, n, new_spans=cols)
        self.version += 1

    @staticmethod
    def _intern(names: Sequence[str], ids: dict[str, int], table: list[str]) -> np.ndarray:
        """Global ids of a batch's local table, adding new names in order."""
        out = np.empty(len(names), dtype=np.int32)
        for i, name in enumerate(names):
            gid = ids.get(name)
            if gid is None:
                gid = ids[name] = len(table)
                table.append(name)
            out[i] = gid
        return out

    def _index_from(self, p: int, old_n: int, new_spans: dict[str, np.ndarray] | None = None) -> None:
        """Re-index rows ``p:`` (rows before ``p`` did not move)."""
        n = len(self)
        kind = self._cols["kind"].data[p:n].astype(np.int64)
        key = self._cols["component"].data[p:n].astype(np.int64) * N_KINDS + kind
        order = np.argsort(key, kind="stable")
        skey = key[order]
        bounds = np.flatnonzero(np.diff(skey)) + 1
        starts = np.concatenate([[0], bounds]) if len(skey) else np.array([], dtype=np.int64)
        stops = np.concatenate([bounds, [len(skey)]]) if len(skey) else starts
        for a, b in zip(starts.tolist(), stops.tolist(), strict=True):
            k = int(skey[a])
            stream = self._stream(k)
            rows = stream.rows
            if rows.size and rows.data[rows.size - 1] >= p:  # rows from p on moved: drop them
                rows.truncate(int(np.searchsorted(rows.view(), p, side="left")))
            rows.extend((order[a:b] + p).astype(np.int32))
        # Sorted end times: only values are kept, so only new spans are merged.
        if new_spans is None:
            ends_src = {name: self._cols[name].data[p:n] for name in ("kind", "component", "end_ns")}
        else:
            ends_src = new_spans
        skind = ends_src["kind"].astype(np.int64)
        mask = _SPAN_KIND_MASK[skind]
        if mask.any():
            ends = ends_src["end_ns"][mask]
            skeys = ends_src["component"][mask].astype(np.int64) * N_KINDS + skind[mask]
            order = np.lexsort((ends, skeys))
            skeys, ends = skeys[order], ends[order]
            bounds = np.flatnonzero(np.diff(skeys)) + 1
            for a, b in zip(np.concatenate([[0], bounds]).tolist(), np.concatenate([bounds, [len(skeys)]]).tolist(), strict=True):
                span_ends = self._streams[int(skeys[a])].ends
                assert span_ends is not None  # a span kind's stream (the mask)
                span_ends.merge_sorted(ends[a:b])
            self._ends.merge_sorted(np.sort(ends, kind="stable"))
        if n:
            self._start_ns = float(self._cols["t_ns"].data[0])
            tail_end = float(ends_src["end_ns"].max()) if len(ends_src["end_ns"]) else 0.0
            self._end_ns = max(self._end_ns if old_n else 0.0, float(self._cols["t_ns"].data[n - 1]), tail_end)

    def _stream(self, key: int) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            comp, kind = divmod(key, N_KINDS)
            stream = self._streams[key] = _Stream(comp, kind)
            self._by_component.setdefault(comp, []).append(key)
            self._by_component[comp].sort()
            self._by_kind.setdefault(kind, []).append(key)
            self._by_kind[kind].sort()
        return stream

    # ------------------------------------------------------------------ read
    def __len__(self) -> int:
        return self._cols["t_ns"].size

    def col(self, name: str) -> np.ndarray:
        """A read-only view of one column (length ``len(self)``)."""
        view = self._cols[name].view()
        view.flags.writeable = False
        return view

    def columns(self) -> dict[str, np.ndarray]:
        return {name: self.col(name) for name in COLUMNS}

    @property
    def start_ns(self) -> float:
        return self._start_ns if len(self) else 0.0

    @property
    def end_ns(self) -> float:
        """Latest instant or span end seen so far."""
        return self._end_ns if len(self) else 0.0

    def component_id(self, name: str) -> int | None:
        return self._component_ids.get(name)

    def string_id(self, s: str) -> int | None:
        return self._string_ids.get(s)

    def event(self, row: int) -> Event:
        """The :class:`Event` stored at ``row`` (spans keep ``end_ns``)."""
        c = self._cols
        kind = EventKind(int(c["kind"].data[row]))
        return Event(
            t_ns=float(c["t_ns"].data[row]),
            kind=kind,
            component=self.components[int(c["component"].data[row])],
            end_ns=float(c["end_ns"].data[row]) if kind in SPAN_KINDS else -1.0,
            corr_id=int(c["corr_id"].data[row]),
            label=self.strings[int(c["label"].data[row])],
            value=float(c["value"].data[row]),
            detail=self.strings[int(c["detail"].data[row])],
            seq=int(c["seq"].data[row]),
            pred=int(c["pred"].data[row]),
            src=self.strings[int(c["src"].data[row])],
        )

    def events(self, rows: Iterable[int] | None = None) -> list[Event]:
        rows = range(len(self)) if rows is None else rows
        return [self.event(int(r)) for r in rows]

    def stream_keys_of_component(self, component: int) -> list[int]:
        return list(self._by_component.get(component, ()))

    def stream_keys_of_kind(self, kind: int) -> list[int]:
        return list(self._by_kind.get(int(kind), ()))

    def stream_key(self, component: int, kind: int) -> int:
        return component * N_KINDS + int(kind)

    def stream_rows(self, key: int) -> np.ndarray:
        """Rows of one stream in time order (empty if the stream is absent)."""
        stream = self._streams.get(key)
        return stream.rows.view() if stream else np.empty(0, dtype=np.int32)

    def stream_ends(self, key: int) -> np.ndarray:
        """Sorted end times of a span stream (empty for instants/absent)."""
        stream = self._streams.get(key)
        if stream is None or stream.ends is None:
            return np.empty(0, dtype=np.float64)
        return stream.ends.view()

    def all_span_ends(self) -> np.ndarray:
        return self._ends.view()

    def nbytes(self) -> int:
        """Bytes held for events (columns and indices; not string tables)."""
        total = sum(v.nbytes() for v in self._cols.values()) + self._ends.nbytes()
        for s in self._streams.values():
            total += s.rows.nbytes() + (s.ends.nbytes() if s.ends is not None else 0)
        return total


class StoreRecorder:
    """A bus subscriber that fills an :class:`EventStore` in batches.

    ``rec = StoreRecorder(bus)``; run the simulation; ``store = rec.finish()``.
    Events are buffered and appended every ``batch_events`` so recording
    costs one list append per event while the simulation runs.
    """

    def __init__(self, bus: Bus | None = None, batch_events: int = 65536) -> None:
        self.store = EventStore()
        self._buf: list[Event] = []
        self._batch = batch_events
        if bus is not None:
            bus.subscribe(self)

    def __call__(self, event: Event) -> None:
        self._buf.append(event)
        if len(self._buf) >= self._batch:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self.store.append(self._buf)
            self._buf = []

    def finish(self) -> EventStore:
        """Append what is buffered and return the store."""
        self.flush()
        return self.store
