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

A store built in one go (from events, from columns, unpickled, or compacted
once a live run has ended) holds every stream's rows and ends in two flat
arrays, one sorted run per stream (:class:`_Index`): a run of 150,000 events
on 10,000 streams is a handful of numpy arrays, not 10,000 small ones, so it
is built with no Python loop over streams, pickles (to or from a child
process) as a few buffers, and gives the garbage collector nothing to scan.

Appending keeps every query correct on what has been appended so far. A span
is often published when it ends, so a batch may hold events earlier than the
last stored one; only the tail from the earliest such event is re-sorted, and
only the streams present in that tail are re-indexed (each such stream gets
its own growable arrays, copied from the flat index the first time).

Memory: 65 bytes of columns per event, plus 4 (stream rows) and, for spans,
16 (stream and global sorted ends): 69–85 bytes per event (and 24 per stream
for the flat index's keys and offsets).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

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


#: The numeric fields of an event, read in one pass (one tuple per event, consumed at once), by position: an
#: :class:`Event` or a plain tuple of its fields in the same order (what a child process sends, see
#: :func:`event_tuples`) reads the same.
_NUMERIC_FIELDS = (("t_ns", "f8"), ("end_ns", "f8"), ("value", "f8"), ("corr_id", "i8"), ("seq", "i8"), ("pred", "i8"), ("kind", "u1"))
_NUMERIC = np.dtype(list(_NUMERIC_FIELDS))
_numeric_fields = itemgetter(*(Event._fields.index(name) for name, _ in _NUMERIC_FIELDS))
_COMPONENT = itemgetter(Event._fields.index("component"))
_TEXTS = tuple(itemgetter(Event._fields.index(name)) for name in ("label", "detail", "src"))


def columnize(events: Sequence[Event] | Sequence[tuple[Any, ...]]) -> ColumnBatch:
    """Turn events into a :class:`ColumnBatch` (the per-event Python work of
    appending; a live source runs it on its own thread). ``events``: :class:`Event` records, or plain
    tuples of their fields in order (the kind as its number)."""
    n = len(events)
    numeric = np.fromiter(map(_numeric_fields, events), dtype=_NUMERIC, count=n)
    comps = list(map(_COMPONENT, events))
    texts = [list(map(get, events)) for get in _TEXTS]
    # Intern in first-seen order (never set order: ids must not depend on hashing).
    comp_ids = {name: i for i, name in enumerate(dict.fromkeys(comps))}
    str_ids = {name: i for i, name in enumerate(dict.fromkeys(chain.from_iterable(zip(*texts, strict=True))))}

    def ids(table: dict[str, int], names: list[str]) -> np.ndarray:
        return np.fromiter(map(table.__getitem__, names), dtype=np.int32, count=n)

    kind, t = numeric["kind"].copy(), numeric["t_ns"].copy()
    cols = {
        "t_ns": t,
        "end_ns": np.where(_SPAN_KIND_MASK[kind], numeric["end_ns"], t),
        "kind": kind,
        "component": ids(comp_ids, comps),
        "label": ids(str_ids, texts[0]),
        "detail": ids(str_ids, texts[1]),
        "value": numeric["value"].copy(),
        "corr_id": numeric["corr_id"].copy(),
        "seq": numeric["seq"].copy(),
        "pred": numeric["pred"].copy(),
        "src": ids(str_ids, texts[2]),
    }
    if n and not _is_sorted(t, cols["seq"]):
        order = np.lexsort((cols["seq"], t))
        cols = {k: v[order] for k, v in cols.items()}
    return ColumnBatch(cols, list(comp_ids), list(str_ids))


class BatchMerger:
    """Batches of one stream (each columnized on its own, in any order) made into the store
    :meth:`EventStore.from_events` makes of all their events at once — the same columns, string tables and
    index — at the cost of numpy work only: the per-event Python work was done batch by batch, while the
    run went on. :meth:`add` takes each batch to the merger's string tables as it comes (a dictionary
    lookup per distinct string of the batch); :meth:`store` sorts the rows by ``(t_ns, seq)`` and numbers
    the strings in the order they are first seen in that order, as :func:`columnize` does."""

    def __init__(self) -> None:
        self._comps: dict[str, int] = {}
        self._strs: dict[str, int] = {}
        self._parts: dict[str, list[np.ndarray]] = {name: [] for name in COLUMNS}

    def add(self, batch: ColumnBatch) -> None:
        comp_map = _ids_in(self._comps, batch.components)
        str_map = _ids_in(self._strs, batch.strings)
        for name, col in batch.columns.items():
            self._parts[name].append(comp_map[col] if name == "component" else str_map[col] if name in _STRING_COLUMNS else col)

    def batch(self) -> ColumnBatch:
        """Every batch added, as the one batch :func:`columnize` makes of all their events."""
        cols = {name: np.concatenate(arrs) if arrs else np.empty(0, dtype=COLUMNS[name]) for name, arrs in self._parts.items()}
        if len(cols["t_ns"]) and not _is_sorted(cols["t_ns"], cols["seq"]):
            order = _time_order(cols["t_ns"], cols["seq"])
            cols = {name: col[order] for name, col in cols.items()}
        # first-seen order of the rows: components by row; strings by (row, label | detail | src)
        comp_order, cols["component"] = _first_seen(cols["component"], len(self._comps))
        texts = np.stack([cols[name] for name in _STRING_COLUMNS], axis=1).ravel()
        str_order, ranked = _first_seen(texts, len(self._strs))
        for i, name in enumerate(_STRING_COLUMNS):
            cols[name] = np.ascontiguousarray(ranked.reshape(-1, len(_STRING_COLUMNS))[:, i])
        comp_names, str_names = list(self._comps), list(self._strs)
        return ColumnBatch(cols, [comp_names[i] for i in comp_order], [str_names[i] for i in str_order])

    def store(self) -> EventStore:
        store = EventStore()
        store.append_columns(self.batch())
        return store


def _ids_in(table: dict[str, int], names: list[str]) -> np.ndarray:
    """Each of ``names``' id in ``table``, adding the new ones."""
    return np.fromiter((table.setdefault(name, len(table)) for name in names), dtype=np.int32, count=len(names))


def merge_batches(batches: Sequence[ColumnBatch]) -> ColumnBatch:
    """``batches`` as the one batch :func:`columnize` makes of all their events (see :class:`BatchMerger`)."""
    merger = BatchMerger()
    for b in batches:
        merger.add(b)
    return merger.batch()


_STRING_COLUMNS = ("label", "detail", "src")


def _first_seen(ids: np.ndarray, n_ids: int) -> tuple[list[int], np.ndarray]:
    """The ids that occur in ``ids``, in the order first seen, and ``ids`` renumbered in that order.

    Each id's first row is found by one scatter (``np.minimum.at``), O(rows + ids), rather than by sorting
    the rows (``np.unique``): a what-if's store numbers ~450k string references this way once the child
    has answered, in ~5 ms instead of ~20-70."""
    n = len(ids)
    first = np.full(max(n_ids, 1), n, dtype=np.int64)
    np.minimum.at(first, ids, np.arange(n, dtype=np.int64))
    present = np.flatnonzero(first < n)
    by_first = present[np.argsort(first[present], kind="stable")]
    rank = np.zeros(max(n_ids, 1), dtype=np.int32)
    rank[by_first] = np.arange(len(by_first), dtype=np.int32)
    return by_first.tolist(), rank[ids]


def _time_order(t: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The rows' ``(t_ns, seq)`` order, as ``np.lexsort((seq, t))`` gives it. Batches of one stream, each in
    that order and added in publish order, are runs that a stable sort by time alone merges in that very
    order (ties keep their place, which is seq order) at a fraction of lexsort's cost (the what-if's 149k
    rows: ~1 ms instead of ~6); when ties would not come out in seq order, lexsort decides."""
    order = np.argsort(t, kind="stable")
    return order if _is_sorted(t[order], seq[order]) else np.lexsort((seq, t))


def _is_sorted(t: np.ndarray, seq: np.ndarray) -> bool:
    """Whether rows already run in ``(t_ns, seq)`` order (a recorder's events often nearly do)."""
    dt = np.diff(t)
    return bool(np.all((dt > 0) | ((dt == 0) & (np.diff(seq) >= 0))))


class _Vec:
    """A growable 1-D numpy array (amortized O(1) append)."""

    __slots__ = ("data", "size")

    def __init__(self, dtype: np.dtype, capacity: int = 8) -> None:
        self.data = np.empty(max(capacity, 8), dtype=dtype)
        self.size = 0

    @classmethod
    def wrap(cls, arr: np.ndarray) -> _Vec:
        vec = cls(arr.dtype, 0)
        vec.data = np.require(arr, requirements=["C", "W"])  # (a copy only if it must: appends write into it)
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
    """Rows (and, for spans, sorted end times) of one ``(component, kind)``, growable: a stream appended to
    after the store's flat index was built (see :class:`_Index`)."""

    __slots__ = ("component", "ends", "kind", "rows")

    def __init__(self, component: int, kind: int) -> None:
        self.component = component
        self.kind = kind
        self.rows = _Vec(np.dtype(np.int32))
        self.ends = _Vec(np.dtype(np.float64)) if is_span_kind(kind) else None


class _Index:
    """Every stream's rows and span ends in flat arrays: stream ``keys[i]`` has rows
    ``rows[row_off[i]:row_off[i + 1]]`` (ascending) and, for a span kind, ends
    ``ends[end_off[i]:end_off[i + 1]]`` (ascending). Read-only once built."""

    __slots__ = ("at", "end_off", "ends", "keys", "row_off", "rows")

    def __init__(self, keys: np.ndarray, row_off: np.ndarray, rows: np.ndarray, end_off: np.ndarray, ends: np.ndarray) -> None:
        self.keys, self.row_off, self.rows, self.end_off, self.ends = keys, row_off, rows, end_off, ends
        for arr in (keys, row_off, rows, end_off, ends):
            arr.flags.writeable = False
        self.at = dict(zip(keys.tolist(), range(len(keys)), strict=True))

    @classmethod
    def build(cls, kind: np.ndarray, component: np.ndarray, end_ns: np.ndarray) -> _Index:
        """The index of rows ``0..len(kind)`` (columns already sorted by time)."""
        key = component.astype(np.int64) * N_KINDS + kind
        order = np.argsort(key, kind="stable")  # by stream, rows ascending within one
        skey = key[order]
        first = np.flatnonzero(np.diff(skey)) + 1 if len(skey) else np.empty(0, dtype=np.int64)
        starts = np.concatenate([[0], first]).astype(np.int64) if len(skey) else first
        keys = skey[starts]
        span = _SPAN_KIND_MASK[kind]
        span_key, span_end = key[span], end_ns[span]
        by_stream = np.lexsort((span_end, span_key))
        span_key = span_key[by_stream]
        end_off = np.append(np.searchsorted(span_key, keys, side="left"), len(span_key))
        return cls(keys, np.append(starts, len(skey)), order.astype(np.int32), end_off, span_end[by_stream])

    def rows_of(self, i: int) -> np.ndarray:
        return self.rows[self.row_off[i] : self.row_off[i + 1]]

    def ends_of(self, i: int) -> np.ndarray:
        return self.ends[self.end_off[i] : self.end_off[i + 1]]

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.keys, self.row_off, self.rows, self.end_off, self.ends)

    def nbytes(self) -> int:
        return sum(arr.nbytes for arr in self.arrays())


class EventStore:
    """Columnar, time-sorted events with per-stream indices.

    Build with :meth:`from_events` or :meth:`append` batches. Columns are read
    through :meth:`col`; strings through :attr:`components` / :attr:`strings`.
    :attr:`version` increases with every append so views can key caches on it.
    A stream's rows are in the flat index (:class:`_Index`) or, once appended
    to afterwards, in its own :class:`_Stream` (which then answers for it).
    """

    def __init__(self) -> None:
        self._cols: dict[str, _Vec] = {name: _Vec(dt, 1024) for name, dt in COLUMNS.items()}
        self.components: list[str] = []
        self.strings: list[str] = [""]
        self._component_ids: dict[str, int] = {}
        self._string_ids: dict[str, int] = {"": 0}
        self._index: _Index | None = None
        self._streams: dict[int, _Stream] = {}
        self._added_keys: list[int] = []  # stream keys not in the flat index
        self._keys: np.ndarray | None = None  # every stream key, sorted (built when asked)
        self._keys_of_kind: dict[int, list[int]] = {}
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
        if not table:  # a store's first batch (a what-if's whole store, from BatchMerger): its table, as is
            fresh = dict(zip(names, range(len(names)), strict=True))
            if len(fresh) == len(names):  # (each name once, as a batch's table holds them)
                ids.update(fresh)
                table.extend(names)
                return np.arange(len(names), dtype=np.int32)
        get = ids.get
        out: list[int] = []
        for name in names:
            gid = get(name)
            if gid is None:
                gid = ids[name] = len(table)
                table.append(name)
            out.append(gid)
        return np.array(out, dtype=np.int32)

    def _index_from(self, p: int, old_n: int, new_spans: dict[str, np.ndarray] | None = None) -> None:
        """Re-index rows ``p:`` (rows before ``p`` did not move); from row 0, the whole flat index at once."""
        n = len(self)
        if p == 0:
            self._reindex()
        else:
            self._reindex_tail(p, new_spans)
        if n:
            self._start_ns = float(self._cols["t_ns"].data[0])
            tail_end = float(self._cols["end_ns"].data[p:n].max()) if p < n else 0.0
            self._end_ns = max(self._end_ns if old_n else 0.0, float(self._cols["t_ns"].data[n - 1]), tail_end)

    def _reindex(self) -> None:
        """Every stream's rows and ends as one flat index; no stream keeps arrays of its own."""
        c = self._cols
        kind, end_ns = c["kind"].view(), c["end_ns"].view()
        self._index = _Index.build(kind, c["component"].view(), end_ns)
        self._streams.clear()
        self._added_keys.clear()
        self._keys_changed()
        self._ends = _Vec.wrap(np.sort(end_ns[_SPAN_KIND_MASK[kind]], kind="stable"))

    def _reindex_tail(self, p: int, new_spans: dict[str, np.ndarray] | None) -> None:
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

    def _stream(self, key: int) -> _Stream:
        """The growable stream of ``key`` (made from the flat index's part the first time)."""
        stream = self._streams.get(key)
        if stream is None:
            comp, kind = divmod(key, N_KINDS)
            stream = self._streams[key] = _Stream(comp, kind)
            i = self._index.at.get(key) if self._index is not None else None
            if i is None:
                self._added_keys.append(key)
                self._keys_changed()
            else:
                assert self._index is not None  # (i came from it)
                stream.rows.extend(self._index.rows_of(i))
                if stream.ends is not None:
                    stream.ends.extend(self._index.ends_of(i))
        return stream

    def _keys_changed(self) -> None:
        self._keys = None
        self._keys_of_kind.clear()

    def compact(self) -> None:
        """Fold the streams appended to one by one back into one flat index (a live run that has ended: fewer
        objects to keep and to scan; the queries' answers do not change)."""
        if self._streams and len(self):
            self._reindex()

    def __getstate__(self) -> dict[str, Any]:
        """Columns, string tables and the flat index (of every stream): a few buffers, however many streams."""
        index = self._index
        if self._streams and len(self):
            c = self._cols
            index = _Index.build(c["kind"].view(), c["component"].view(), c["end_ns"].view())
        return {
            "columns": {name: vec.view() for name, vec in self._cols.items()},
            "components": self.components,
            "strings": self.strings,
            "index": index.arrays() if index is not None else None,
            "ends": self._ends.view(),
            "version": self.version,
            "span_ns": (self._start_ns, self._end_ns),
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]  # the empty store, then what was saved
        self._cols = {name: _Vec.wrap(state["columns"][name]) for name in COLUMNS}
        self.components, self.strings = list(state["components"]), list(state["strings"])
        self._component_ids = {c: i for i, c in enumerate(self.components)}
        self._string_ids = {s: i for i, s in enumerate(self.strings)}
        self._index = _Index(*state["index"]) if state["index"] is not None else None
        self._ends = _Vec.wrap(state["ends"])
        self.version = state["version"]
        self._start_ns, self._end_ns = state["span_ns"]

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

    def stream_keys(self) -> np.ndarray:
        """Every stream's key (``component * N_KINDS + kind``), ascending (read-only)."""
        if self._keys is None:
            base = self._index.keys if self._index is not None else np.empty(0, dtype=np.int64)
            keys = np.union1d(base, np.asarray(self._added_keys, dtype=np.int64)) if self._added_keys else base.copy()
            keys.flags.writeable = False
            self._keys = keys
        return self._keys

    def stream_keys_of_component(self, component: int) -> list[int]:
        keys = self.stream_keys()
        lo, hi = np.searchsorted(keys, (component * N_KINDS, (component + 1) * N_KINDS))
        found: list[int] = keys[lo:hi].tolist()
        return found

    def stream_keys_of_kind(self, kind: int) -> list[int]:
        kind = int(kind)
        found = self._keys_of_kind.get(kind)
        if found is None:
            keys = self.stream_keys()
            found = self._keys_of_kind[kind] = keys[keys % N_KINDS == kind].tolist()
        return list(found)

    def stream_key(self, component: int, kind: int) -> int:
        return component * N_KINDS + int(kind)

    def stream_rows(self, key: int) -> np.ndarray:
        """Rows of one stream in time order (empty if the stream is absent)."""
        stream = self._streams.get(key)
        if stream is not None:
            return stream.rows.view()
        i = self._index.at.get(key) if self._index is not None else None
        return self._index.rows_of(i) if i is not None and self._index is not None else np.empty(0, dtype=np.int32)

    def stream_ends(self, key: int) -> np.ndarray:
        """Sorted end times of a span stream (empty for instants/absent)."""
        stream = self._streams.get(key)
        if stream is not None:
            return stream.ends.view() if stream.ends is not None else np.empty(0, dtype=np.float64)
        i = self._index.at.get(key) if self._index is not None else None
        if i is None or self._index is None or not is_span_kind(key % N_KINDS):
            return np.empty(0, dtype=np.float64)
        return self._index.ends_of(i)

    def all_span_ends(self) -> np.ndarray:
        return self._ends.view()

    def nbytes(self) -> int:
        """Bytes held for events (columns and indices; not string tables)."""
        total = sum(v.nbytes() for v in self._cols.values()) + self._ends.nbytes()
        total += self._index.nbytes() if self._index is not None else 0
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
