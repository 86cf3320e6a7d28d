"""The questions a timeline viewer asks, answered over an :class:`EventStore`.

Plain Python and numpy — no textual import. Every point query is a binary
search on a stream's sorted rows (see ``kernbench.events.store``), so a query
costs O(log n + what it returns), never O(trace length).

Vocabulary:

* a **lane** is one PE engine, ``sipS.cubeC.peP.<engine>`` with ``<engine>``
  one of :data:`ENGINES`;
* a span is *active* at ``t`` when ``start <= t < end`` (zero-length spans
  are never active, but they are *in* a window that holds their start);
* a span is *in* a window ``[t0, t1)`` when it is active at ``t0`` or starts in
  ``[t0, t1)``;
* a **change** is an event's ``t_ns`` or a span's ``end_ns``;
* a **FIFO** is an edge id ``a->b`` carrying QUEUE_DEPTH instants; its depth
  at ``t`` is the value of its last QUEUE_DEPTH at or before ``t`` (0 before).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

import numpy as np

from kernbench.events.store import N_KINDS, EventStore, is_span_kind
from kernbench.events.types import ENGINES, Event, EventKind
from kernbench.topology.ids import local_slice
from kernbench.topology.ids import pe_of as _parse_pe_of

#: Span kinds that mean "the lane is stalled" rather than "busy".
STALL_KINDS = frozenset({EventKind.STALL, EventKind.LOAD_WAIT})

_KIND_PRIORITY = np.arange(N_KINDS) + 2
_KIND_PRIORITY[int(EventKind.STALL)] = 0
_KIND_PRIORITY[int(EventKind.LOAD_WAIT)] = 1

#: A component's PE, parsed once per name (a what-if's re-timing names the same 6,000 components as its run).
pe_of = functools.lru_cache(maxsize=1 << 16)(_parse_pe_of)
_SPAN_MASK = np.array([is_span_kind(k) for k in range(N_KINDS)], dtype=bool)
_NUM_RE = re.compile(r"(\d+)")
T = TypeVar("T")


def natural_key(name: str) -> tuple[int | str, ...]:
    """Sort ``pe10`` after ``pe9``."""
    return tuple(int(p) if p.isdigit() else p for p in _NUM_RE.split(name))


@dataclass(frozen=True, slots=True)
class LaneState:
    lane: str
    status: str  # "idle" | "busy" | "stalled"
    event: Event | None  # the span that decides the status


@dataclass(frozen=True, slots=True)
class LoadInfo:
    """One lazy load: issued, completed (or not yet), maybe waited on."""

    handle: str
    component: str
    size_bytes: float
    issued_ns: float
    complete_ns: float | None
    waited_at_ns: float | None
    corr_id: int

    def in_flight_at(self, t_ns: float) -> bool:
        return self.issued_ns <= t_ns and (self.complete_ns is None or t_ns < self.complete_ns)


@dataclass(frozen=True, slots=True)
class FifoDepth:
    edge: str
    depth: float


@dataclass(frozen=True, slots=True)
class LaneCells:
    """A lane sampled into ``n`` equal cells of ``[t0, t1)``.

    ``busy``: covered fraction per cell (0..1); ``count``: spans in the cell;
    ``starts``: spans starting in the cell; ``label``/``kind``: the label
    string id and kind of the span covering most of the cell (-1 if none).
    """

    t0: float
    t1: float
    busy: np.ndarray
    count: np.ndarray
    starts: np.ndarray
    label: np.ndarray
    kind: np.ndarray


@dataclass(frozen=True, slots=True)
class TimelineState:
    t_ns: float
    lanes: dict[str, LaneState]
    fifos: list[FifoDepth]
    loads: list[LoadInfo]
    stalls: list[Event]


class TimelineModel:
    """Answers "what is happening at t" and "what changes next" over a store."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._cache_version = -1
        self._cache: dict[Hashable, object] = {}  # key -> what that key's builder built

    def set_store(self, store: EventStore) -> None:
        """Answer over another store from now on (a trace opened in place)."""
        self.store = store
        self._cache_version = -1
        self._cache.clear()

    # ---------------------------------------------------------------- basics
    def _cached(self, key: Hashable, build: Callable[[], T]) -> T:
        if self._cache_version != self.store.version:
            self._cache.clear()
            self._cache_version = self.store.version
        if key not in self._cache:
            self._cache[key] = build()
        return cast(T, self._cache[key])  # each key has one builder, so its value is that builder's T

    @property
    def start_ns(self) -> float:
        return self.store.start_ns

    @property
    def end_ns(self) -> float:
        return self.store.end_ns

    def pes(self) -> list[str]:
        """Every PE that published anything, in natural order."""
        return self._cached("pes", lambda: sorted(self._pe_components(), key=natural_key))

    def _pe_components(self) -> dict[str, list[int]]:
        def build() -> dict[str, list[int]]:
            out: dict[str, list[int]] = {}
            for i, name in enumerate(self.store.components):
                pe = pe_of(name)
                if pe is not None:
                    out.setdefault(pe, []).append(i)
            return out

        return self._cached("pe_components", build)

    @staticmethod
    def lanes_of(pe: str) -> list[str]:
        return [f"{pe}.{engine}" for engine in ENGINES]

    def channels_of(self, pe: str) -> list[str]:
        """The pseudo-channels of ``pe``'s own HBM slice that served anything, in channel order.

        A channel's CHANNEL_BUSY spans carry its memory node as their label;
        a PE's own slice is ``sipS.cubeC.hbm.sliceP`` for ``sipS.cubeC.peP``.
        """

        def build() -> list[str]:
            store = self.store
            sid = store.string_id(local_slice(pe))
            if sid is None:
                return []
            labels = store.col("label")
            out = []
            for key in store.stream_keys_of_kind(EventKind.CHANNEL_BUSY):
                rows = store.stream_rows(key)
                if len(rows) and labels[rows[0]] == sid:
                    out.append(store.components[key // N_KINDS])
            return sorted(out, key=natural_key)

        return self._cached(("channels", pe), build)

    def fifos(self) -> list[str]:
        """Every edge that reported a queue depth, sorted."""
        keys = self.store.stream_keys_of_kind(EventKind.QUEUE_DEPTH)
        return sorted(self.store.components[k // N_KINDS] for k in keys)

    def _keys(self, *, pe: str | None = None, lane: str | None = None, kind: int | None = None) -> list[int]:
        store = self.store
        if lane is not None:
            cid = store.component_id(lane)
            keys = [] if cid is None else store.stream_keys_of_component(cid)
            if pe is not None and pe_of(lane) != pe:
                keys = []
        elif pe is not None:
            keys = [k for cid in self._pe_components().get(pe, ()) for k in store.stream_keys_of_component(cid)]
        elif kind is not None:
            return store.stream_keys_of_kind(kind)
        else:
            every: list[int] = store.stream_keys().tolist()
            return every
        if kind is not None:
            keys = [k for k in keys if k % N_KINDS == int(kind)]
        return keys

    def _span_keys(self, lane: str, kinds: Iterable[int] | None) -> list[int]:
        wanted = None if kinds is None else {int(k) for k in kinds}
        return [k for k in self._keys(lane=lane) if is_span_kind(k % N_KINDS) and (wanted is None or k % N_KINDS in wanted)]

    def _count_le(self, t: float) -> int:
        return int(np.searchsorted(self.store.col("t_ns"), t, side="right"))

    def _count_lt(self, t: float) -> int:
        return int(np.searchsorted(self.store.col("t_ns"), t, side="left"))

    # ------------------------------------------------------------ spans
    def _active_rows(self, key: int, t: float) -> list[int]:
        """Rows of stream ``key`` with ``start <= t < end``, in start order."""
        rows = self.store.stream_rows(key)
        ends = self.store.stream_ends(key)
        n_started = int(np.searchsorted(rows, self._count_le(t), side="left"))
        active = n_started - int(np.searchsorted(ends, t, side="right"))
        if active <= 0:
            return []
        end_col = self.store.col("end_ns")
        found: list[int] = []
        i = n_started - 1
        while i >= 0 and len(found) < active:
            r = int(rows[i])
            if end_col[r] > t:
                found.append(r)
            i -= 1
        found.reverse()
        return found

    def active_spans(self, lane: str, t_ns: float, kinds: Iterable[int] | None = None) -> list[Event]:
        """Spans of ``lane`` active at ``t_ns`` (ordered by start, then seq)."""
        rows = [r for k in self._span_keys(lane, kinds) for r in self._active_rows(k, t_ns)]
        return self.store.events(sorted(rows))

    def spans_in(self, lane: str, t0: float, t1: float, kinds: Iterable[int] | None = None) -> np.ndarray:
        """Rows of ``lane``'s spans in the window ``[t0, t1)``, sorted."""
        parts = []
        for key in self._span_keys(lane, kinds):
            parts.append(self._window_rows(key, t0, t1))
        if not parts:
            return np.empty(0, dtype=np.int64)
        rows = np.concatenate(parts).astype(np.int64)
        rows.sort()
        return rows

    def _window_rows(self, key: int, t0: float, t1: float) -> np.ndarray:
        rows = self.store.stream_rows(key)
        t_col = self.store.col("t_ns")
        lo = int(np.searchsorted(rows, self._count_lt(t0), side="left"))
        hi = int(np.searchsorted(rows, self._count_lt(t1), side="left")) if t1 > t0 else lo
        before = [r for r in self._active_rows(key, t0) if t_col[r] < t0]
        inside = rows[lo:hi]
        if before:
            return np.concatenate([np.array(before, dtype=np.int64), inside.astype(np.int64)])
        return inside.astype(np.int64)

    def lane_state(self, lane: str, t_ns: float) -> LaneState:
        active = self.active_spans(lane, t_ns)
        if not active:
            return LaneState(lane, "idle", None)
        stalls = [e for e in active if e.kind in STALL_KINDS]
        if stalls:
            stall = [e for e in stalls if e.kind == EventKind.STALL] or stalls
            return LaneState(lane, "stalled", stall[-1])
        return LaneState(lane, "busy", active[-1])

    def occupancy(self, lane: str, t0: float, t1: float, kinds: Iterable[int] | None = None) -> float:
        """Fraction of ``[t0, t1)`` covered by the union of ``lane``'s spans."""
        if t1 <= t0:
            return 0.0
        rows = self.spans_in(lane, t0, t1, kinds)
        if len(rows) == 0:
            return 0.0
        s = np.clip(self.store.col("t_ns")[rows], t0, t1)
        e = np.clip(self.store.col("end_ns")[rows], t0, t1)
        return _union_length(s, e) / (t1 - t0)

    def lane_cells(self, lane: str, t0: float, t1: float, n: int, kinds: Iterable[int] | None = None) -> LaneCells:
        """Sample ``lane`` into ``n`` cells for drawing (O(spans in window))."""
        busy = np.zeros(n, dtype=np.float64)
        count = np.zeros(n, dtype=np.int64)
        starts = np.zeros(n, dtype=np.int64)
        label = np.full(n, -1, dtype=np.int64)
        kind = np.full(n, -1, dtype=np.int64)
        rows = self.spans_in(lane, t0, t1, kinds) if n > 0 and t1 > t0 else np.empty(0, np.int64)
        if len(rows) == 0:
            return LaneCells(t0, t1, busy, count, starts, label, kind)
        scale = n / (t1 - t0)
        s_raw = self.store.col("t_ns")[rows]
        s = (np.maximum(s_raw, t0) - t0) * scale
        e = (np.minimum(self.store.col("end_ns")[rows], t1) - t0) * scale
        e = np.maximum(e, s)
        c0 = np.minimum(np.floor(s).astype(np.int64), n - 1)
        c1 = np.maximum(np.minimum(np.ceil(e).astype(np.int64) - 1, n - 1), c0)
        inside = s_raw >= t0
        np.add.at(starts, c0[inside], 1)
        reps = c1 - c0 + 1
        span_idx = np.repeat(np.arange(len(rows)), reps)
        offsets = np.arange(len(span_idx)) - np.repeat(np.cumsum(reps) - reps, reps)
        cell = c0[span_idx] + offsets
        cover = np.minimum(e[span_idx], cell + 1) - np.maximum(s[span_idx], cell)
        cover = np.maximum(cover, 0.0)
        np.add.at(count, cell, 1)
        np.add.at(busy, cell, cover)
        np.minimum(busy, 1.0, out=busy)
        lab = self.store.col("label")[rows].astype(np.int64)[span_idx]
        knd = self.store.col("kind")[rows].astype(np.int64)[span_idx]
        # Dominant (label, kind) per cell: most covered time, then most spans.
        combo = (cell * (int(lab.max()) + 1) + lab) * N_KINDS + knd
        uniq, inv = np.unique(combo, return_inverse=True)
        cov_sum = np.bincount(inv, weights=cover)
        cnt_sum = np.bincount(inv)
        u_cell = uniq // N_KINDS // (int(lab.max()) + 1)
        # Ties: a stall's reason beats the load wait it coincides with, then busy kinds.
        order = np.lexsort((_KIND_PRIORITY[uniq % N_KINDS], -cnt_sum, -cov_sum, u_cell))
        first = np.ones(len(order), dtype=bool)
        first[1:] = u_cell[order][1:] != u_cell[order][:-1]
        best = order[first]
        label[u_cell[best]] = (uniq[best] // N_KINDS) % (int(lab.max()) + 1)
        kind[u_cell[best]] = uniq[best] % N_KINDS
        return LaneCells(t0, t1, busy, count, starts, label, kind)

    def span_near(self, lane: str, t_ns: float, tolerance_ns: float) -> Event | None:
        """The span active at ``t_ns``, else the closest within the tolerance."""
        active = self.active_spans(lane, t_ns)
        if active:
            return active[-1]
        rows = self.spans_in(lane, t_ns - tolerance_ns, t_ns + tolerance_ns)
        if len(rows) == 0:
            return None
        s = self.store.col("t_ns")[rows]
        e = self.store.col("end_ns")[rows]
        dist = np.where(t_ns < s, s - t_ns, np.maximum(t_ns - e, 0.0))
        return self.store.event(int(rows[int(np.argmin(dist))]))

    # ------------------------------------------------------------ changes
    def next_change(
        self,
        t_ns: float,
        *,
        pe: str | None = None,
        lane: str | None = None,
        kind: int | None = None,
        starts_only: bool = False,
    ) -> float | None:
        """The first change strictly after ``t_ns`` in scope, or None."""
        return self._change(t_ns, +1, pe, lane, kind, starts_only)

    def prev_change(
        self,
        t_ns: float,
        *,
        pe: str | None = None,
        lane: str | None = None,
        kind: int | None = None,
        starts_only: bool = False,
    ) -> float | None:
        """The last change strictly before ``t_ns`` in scope, or None."""
        return self._change(t_ns, -1, pe, lane, kind, starts_only)

    def _change(self, t: float, direction: int, pe: str | None, lane: str | None, kind: int | None, starts_only: bool) -> float | None:
        store = self.store
        t_col = store.col("t_ns")
        best: float | None = None

        def consider(x: float) -> None:
            nonlocal best
            if best is None or (x < best if direction > 0 else x > best):
                best = x

        def search_ends(ends: np.ndarray) -> None:
            if direction > 0:
                i = int(np.searchsorted(ends, t, side="right"))
                if i < len(ends):
                    consider(float(ends[i]))
            else:
                i = int(np.searchsorted(ends, t, side="left")) - 1
                if i >= 0:
                    consider(float(ends[i]))

        if pe is None and lane is None and kind is None:
            g = self._count_le(t) if direction > 0 else self._count_lt(t) - 1
            if 0 <= g < len(t_col):
                consider(float(t_col[g]))
            if not starts_only:
                search_ends(store.all_span_ends())
            return best
        g_le, g_lt = self._count_le(t), self._count_lt(t)
        for key in self._keys(pe=pe, lane=lane, kind=kind):
            rows = store.stream_rows(key)
            if direction > 0:
                i = int(np.searchsorted(rows, g_le, side="left"))
                if i < len(rows):
                    consider(float(t_col[rows[i]]))
            else:
                i = int(np.searchsorted(rows, g_lt, side="left")) - 1
                if i >= 0:
                    consider(float(t_col[rows[i]]))
            if not starts_only:
                search_ends(store.stream_ends(key))
        return best

    # ------------------------------------------------------------ FIFOs
    def _fifo_key(self, edge: str) -> int | None:
        cid = self.store.component_id(edge)
        return None if cid is None else self.store.stream_key(cid, EventKind.QUEUE_DEPTH)

    def fifo_depth_at(self, edge: str, t_ns: float) -> float:
        key = self._fifo_key(edge)
        if key is None:
            return 0.0
        rows = self.store.stream_rows(key)
        i = int(np.searchsorted(rows, self._count_le(t_ns), side="left")) - 1
        return float(self.store.col("value")[rows[i]]) if i >= 0 else 0.0

    def fifo_depths_at(self, t_ns: float) -> dict[str, float]:
        return {edge: self.fifo_depth_at(edge, t_ns) for edge in self.fifos()}

    def deepest_fifos_at(self, t_ns: float, k: int = 10) -> list[FifoDepth]:
        """The ``k`` deepest non-empty FIFOs at ``t_ns`` (ties by edge id)."""
        depths = [FifoDepth(e, d) for e, d in self.fifo_depths_at(t_ns).items() if d > 0]
        depths.sort(key=lambda f: (-f.depth, f.edge))
        return depths[:k]

    def fifo_max_over(self, edge: str, t0: float, t1: float) -> float:
        """Deepest ``edge`` got in ``[t0, t1]`` (its depth at ``t0`` counts)."""
        key = self._fifo_key(edge)
        if key is None:
            return 0.0
        rows = self.store.stream_rows(key)
        lo = int(np.searchsorted(rows, self._count_le(t0), side="left"))
        hi = int(np.searchsorted(rows, self._count_le(t1), side="left"))
        start = self.fifo_depth_at(edge, t0)
        if hi <= lo:
            return start
        return max(start, float(self.store.col("value")[rows[lo:hi]].max()))

    def deepest_fifos_over(self, t0: float, t1: float, k: int = 10) -> list[FifoDepth]:
        """The ``k`` FIFOs with the greatest depth reached in ``[t0, t1]``."""

        def build() -> list[FifoDepth]:
            depths = [FifoDepth(e, self.fifo_max_over(e, t0, t1)) for e in self.fifos()]
            return sorted((f for f in depths if f.depth > 0), key=lambda f: (-f.depth, f.edge))

        return self._cached(("deepest_over", t0, t1), build)[:k]

    def fifo_series(self, edge: str, t0: float, t1: float, n: int) -> np.ndarray:
        """Max depth of ``edge`` in each of ``n`` equal buckets of ``[t0, t1)``."""
        out = np.zeros(n, dtype=np.float64)
        key = self._fifo_key(edge)
        if key is None or n <= 0 or t1 <= t0:
            return out
        rows = self.store.stream_rows(key)
        t_col, v_col = self.store.col("t_ns"), self.store.col("value")
        edges_t = t0 + (t1 - t0) * np.arange(n + 1) / n
        # Depth carried into each bucket: last sample at or before its start.
        gi = np.searchsorted(t_col, edges_t[:-1], side="right")
        idx = np.searchsorted(rows, gi, side="left") - 1
        carried = np.where(idx >= 0, v_col[rows[np.maximum(idx, 0)]], 0.0) if len(rows) else out.copy()
        out[:] = carried
        lo = int(np.searchsorted(rows, self._count_lt(t0), side="left"))
        hi = int(np.searchsorted(rows, self._count_lt(t1), side="left"))
        if hi > lo:
            sel = rows[lo:hi]
            bucket = np.minimum(((t_col[sel] - t0) * n / (t1 - t0)).astype(np.int64), n - 1)
            np.maximum.at(out, bucket, v_col[sel])
        return out

    def busiest_over(self, kind: int, t0: float, t1: float, k: int = 10) -> list[FifoDepth]:
        """Components whose ``kind`` spans cover most of ``[t0, t1)``.

        The result reuses :class:`FifoDepth` with ``depth`` = busy fraction
        (0..1). Used for link (EDGE_BUSY) and HBM channel (CHANNEL_BUSY)
        occupancy when a run publishes no queue depths.
        """

        def build() -> list[FifoDepth]:
            if t1 <= t0:
                return []
            out = []
            for key in self.store.stream_keys_of_kind(kind):
                rows = self._window_rows(key, t0, t1)
                if len(rows) == 0:
                    continue
                s = np.clip(self.store.col("t_ns")[rows], t0, t1)
                e = np.clip(self.store.col("end_ns")[rows], t0, t1)
                busy = _union_length(s, e) / (t1 - t0)
                if busy > 0:
                    out.append(FifoDepth(self.store.components[key // N_KINDS], busy))
            out.sort(key=lambda f: (-f.depth, f.edge))
            return out

        return self._cached(("busiest", int(kind), t0, t1), build)[:k]

    # ------------------------------------------------------------ loads & stalls
    def loads(self) -> list[LoadInfo]:
        """Every lazy load, by issue time (joined on ``corr_id``)."""
        table = self._load_table()
        return [self._load_info(table, i) for i in range(len(table["row"]))]

    def _load_table(self) -> dict[str, np.ndarray]:
        """Columns of every LOAD_ISSUE with its first completion and first wait."""

        def build() -> dict[str, np.ndarray]:
            store = self.store
            t_col, corr = store.col("t_ns"), store.col("corr_id")

            def rows_of(kind: EventKind) -> np.ndarray:
                parts = [store.stream_rows(k) for k in store.stream_keys_of_kind(kind)]
                return np.sort(np.concatenate(parts)).astype(np.int64) if parts else np.empty(0, np.int64)

            comp_col, label_col = store.col("component"), store.col("label")

            def first_time(kind: EventKind, issue: np.ndarray) -> np.ndarray:
                """First ``kind`` event joined by corr_id; a publisher that leaves
                corr_id at -1 is joined by (component, handle) at or after issue."""
                rows = rows_of(kind)
                wanted = corr[issue]
                out = np.full(len(issue), np.nan)
                if len(rows) == 0:
                    return out
                keys, first = np.unique(corr[rows], return_index=True)  # rows are in time order
                pos = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
                hit = (keys[pos] == wanted) & (wanted >= 0)
                out[hit] = t_col[rows[first[pos[hit]]]]
                loose = rows[corr[rows] < 0]
                if len(loose) and not hit.all():
                    by_name: dict[tuple[int, int], list[float]] = {}
                    for r in loose.tolist():
                        by_name.setdefault((int(comp_col[r]), int(label_col[r])), []).append(float(t_col[r]))
                    for i in np.flatnonzero(~hit).tolist():
                        r = int(issue[i])
                        times = by_name.get((int(comp_col[r]), int(label_col[r])))
                        if times:
                            j = bisect.bisect_left(times, float(t_col[r]))
                            if j < len(times):
                                out[i] = times[j]
                return out

            issue = rows_of(EventKind.LOAD_ISSUE)
            complete = first_time(EventKind.LOAD_COMPLETE, issue)
            return {
                "row": issue,
                "issued": t_col[issue],
                "complete": complete,
                "until": np.where(np.isnan(complete), np.inf, complete),
                "waited": first_time(EventKind.LOAD_WAIT, issue),
            }

        return self._cached("load_table", build)

    def _load_info(self, table: dict[str, np.ndarray], i: int) -> LoadInfo:
        store, row = self.store, int(table["row"][i])
        complete, waited = float(table["complete"][i]), float(table["waited"][i])
        return LoadInfo(
            handle=store.strings[int(store.col("label")[row])],
            component=store.components[int(store.col("component")[row])],
            size_bytes=float(store.col("value")[row]),
            issued_ns=float(table["issued"][i]),
            complete_ns=None if np.isnan(complete) else complete,
            waited_at_ns=None if np.isnan(waited) else waited,
            corr_id=int(store.col("corr_id")[row]),
        )

    def loads_in_flight(self, t_ns: float, pe: str | None = None) -> list[LoadInfo]:
        """Loads issued at or before ``t_ns`` and not complete at ``t_ns``."""
        table = self._load_table()
        idx = np.flatnonzero((table["issued"] <= t_ns) & (t_ns < table["until"]))
        out = [self._load_info(table, i) for i in idx.tolist()]
        if pe is not None:
            out = [ld for ld in out if pe_of(ld.component) == pe]
        return out

    def stalls_at(self, t_ns: float, pes: Sequence[str] | None = None) -> list[Event]:
        """STALL spans active at ``t_ns`` (all PEs, or only ``pes``)."""
        store = self.store
        keys = store.stream_keys_of_kind(EventKind.STALL)
        if pes is not None:
            wanted = set(pes)
            keys = [k for k in keys if pe_of(store.components[k // N_KINDS]) in wanted]
        rows = sorted(r for k in keys for r in self._active_rows(k, t_ns))
        return store.events(rows)

    def stall_at_or_after(self, t_ns: float, pe: str | None = None) -> Event | None:
        """The stall active at ``t_ns`` or, failing that, the next to start."""
        pes = None if pe is None else [pe]
        active = self.stalls_at(t_ns, pes)
        if active:
            return active[0]
        t = self.next_change(t_ns, pe=pe, kind=EventKind.STALL, starts_only=True)
        if t is None:
            return None
        started = self.stalls_at(t, pes)
        return started[0] if started else None

    def state_at(self, t_ns: float, pes: Sequence[str] | None = None, fifo_k: int = 10) -> TimelineState:
        """Everything the debugger shows at one instant."""
        pes = self.pes() if pes is None else list(pes)
        lanes = {lane: self.lane_state(lane, t_ns) for pe in pes for lane in self.lanes_of(pe)}
        loads = [ld for ld in self.loads_in_flight(t_ns) if pe_of(ld.component) in set(pes)]
        return TimelineState(
            t_ns=t_ns,
            lanes=lanes,
            fifos=self.deepest_fifos_at(t_ns, fifo_k),
            loads=loads,
            stalls=self.stalls_at(t_ns, pes),
        )

    def pe_utilization(self, pe: str) -> float:
        """Fraction of the run during which any non-CPU engine of ``pe`` is busy."""
        return self.pe_utilizations().get(pe, 0.0)

    def pe_utilizations(self) -> dict[str, float]:
        """:meth:`pe_utilization` of every PE, in one pass over the store's spans (the PE picker lists them all)."""

        def build() -> dict[str, float]:
            store, t0, t1 = self.store, self.start_ns, self.end_ns
            pes = self.pes()
            engine_pe = np.full(len(store.components), -1, dtype=np.int64)  # component -> its PE's index, non-CPU engines
            for i, pe in enumerate(pes):
                for lane in self.lanes_of(pe)[1:]:
                    cid = store.component_id(lane)
                    if cid is not None:
                        engine_pe[cid] = i
            out = dict.fromkeys(pes, 0.0)
            if t1 <= t0:
                return out
            # Every span of those lanes: the spans in [t0, t1) and, clipped, the zero-length ones at t1 (adding nothing).
            owner = engine_pe[store.col("component")]
            rows = np.flatnonzero((owner >= 0) & _SPAN_MASK[store.col("kind")])
            owner = owner[rows]
            by_pe = np.argsort(owner, kind="stable")
            rows, owner = rows[by_pe], owner[by_pe]
            s = np.clip(store.col("t_ns")[rows], t0, t1)
            e = np.clip(store.col("end_ns")[rows], t0, t1)
            cuts = np.flatnonzero(np.diff(owner)) + 1
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True):
                if b > a:
                    out[pes[int(owner[a])]] = _union_length(s[a:b], e[a:b]) / (t1 - t0)
            return out

        return self._cached("pe_util", build)

    def rows_with_corr(self, corr_id: int) -> np.ndarray:
        """Rows of every event a request caused (same ``corr_id``), in time order.

        A vectorized scan, O(n) numpy; cached per store version and id.
        """
        if corr_id < 0:
            return np.empty(0, dtype=np.int64)
        return self._cached(("corr", corr_id), lambda: np.flatnonzero(self.store.col("corr_id") == corr_id))

    # ------------------------------------------------------------ event log
    def events_around(
        self,
        t_ns: float,
        before: int,
        after: int,
        *,
        kinds: Iterable[int] | None = None,
        text: str | None = None,
        chunk: int = 4096,
    ) -> tuple[list[int], list[int]]:
        """Matching rows: up to ``before`` with ``t < t_ns`` (oldest first) and
        up to ``after`` with ``t >= t_ns``. ``text`` matches, case-insensitively,
        a substring of the component, the label or the detail."""
        store = self.store
        kind_ok = None
        if kinds is not None:
            kind_ok = np.zeros(N_KINDS, dtype=bool)
            kind_ok[[int(k) for k in kinds]] = True
        comp_ok = str_ok = None
        if text:
            needle = text.lower()
            comp_ok = np.array([needle in c.lower() for c in store.components], dtype=bool)
            str_ok = np.array([needle in s.lower() for s in store.strings], dtype=bool)

        def matches(lo: int, hi: int) -> np.ndarray:
            mask = np.ones(hi - lo, dtype=bool)
            if kind_ok is not None:
                mask &= kind_ok[store.col("kind")[lo:hi]]
            if comp_ok is not None and str_ok is not None:  # (set together)
                mask &= comp_ok[store.col("component")[lo:hi]] | str_ok[store.col("label")[lo:hi]] | str_ok[store.col("detail")[lo:hi]]
            return np.flatnonzero(mask) + lo

        g = self._count_lt(t_ns)
        n = len(store)
        after_rows: list[int] = []
        lo = g
        while len(after_rows) < after and lo < n:
            hi = min(n, lo + chunk)
            after_rows.extend(matches(lo, hi)[: after - len(after_rows)].tolist())
            lo = hi
        before_rows: list[int] = []
        hi = g
        while len(before_rows) < before and hi > 0:
            lo = max(0, hi - chunk)
            found = matches(lo, hi).tolist()
            before_rows = found[max(0, len(found) - (before - len(before_rows))) :] + before_rows
            hi = lo
        return before_rows, after_rows


def _union_length(s: np.ndarray, e: np.ndarray) -> float:
    """Total length of the union of intervals ``[s_i, e_i)``."""
    if len(s) == 0:
        return 0.0
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # A new run starts where s exceeds every earlier end.
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    starts = s[new]
    idx = np.flatnonzero(new)
    ends = run_end[np.concatenate([idx[1:] - 1, [len(s) - 1]])]
    return float(np.sum(ends - starts))
