"""Moving bytes over the graph: DMA reads and writes, host transfers, messages.

One :class:`Network` per simulation holds the state of every directed
edge's FIFO (the time its last reserved flit leaves) and of every memory's
channels. It offers the transfer primitives the PE model and the probes use;
each returns a SimPy event that succeeds with a :class:`TransferResult`.

Latency is paid only on the graph: each node's ``overhead_ns`` once per flit
passing it (pipelined, not a serial resource), each edge's serialization
``flit_bytes / bw_gbps`` per flit in its FIFO, each edge's ``prop_ns``, and
each memory channel's burst time. Reads and acknowledgements send a
zero-payload control header (overheads and propagation only) on the request
side; the data moves as a train of flits.

Two timing modes behind this one interface:

``"fast"`` (default)
    A transfer's whole flit train crosses each edge in one step, when its
    head reaches that edge. Alone on an edge it follows the exact closed
    form (:mod:`kernbench.sim.train`); sharing an edge with trains still
    crossing it, it is served as a fluid by the slots they leave free
    (:mod:`kernbench.sim.share`): a train paced by a slower upstream link
    fits in another's gaps, and on a saturated edge it waits for capacity.
    Exact for isolated transfers; under contention it agrees with the
    oracle within the tolerances tests/sim/test_contention.py states (an
    early train is not slowed by one arriving after it, so a saturated
    link's total is exact but its split favours the first comer).
``"oracle"``
    Every flit crosses every edge as its own event, FIFO in arrival order.
    The reference the fast mode is tested against; cost grows with flits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import simpy

from kernbench.errors import RouteError
from kernbench.events.bus import Bus
from kernbench.events.types import EventKind
from kernbench.sim import share
from kernbench.sim import train as tr
from kernbench.sim.hbm import ChannelArray, ChannelSpan
from kernbench.topology.graph import Graph, Route

Mode = Literal["fast", "oracle"]
MEMORY_KINDS = ("hbm_slice", "sram")
FAST_CHUNKS = 4  # fast mode moves a transfer as at most this many trains (see _move_chunks)
MIN_CHUNK_FLITS = 16  # … each of at least this many flits


@dataclass(frozen=True, slots=True)
class TransferResult:
    corr_id: int
    kind: str
    src: str
    dst: str
    size_bytes: int
    start_ns: float
    end_ns: float

    @property
    def latency_ns(self) -> float:
        return self.end_ns - self.start_ns


class Network:
    def __init__(self, env: simpy.Environment, graph: Graph, bus: Bus | None = None, mode: Mode = "fast", chunks: int = FAST_CHUNKS):
        if mode not in ("fast", "oracle"):
            raise ValueError(f"mode must be 'fast' or 'oracle', got {mode!r}")
        self.env = env
        self.graph = graph
        self.bus = bus if bus is not None else Bus()
        self.mode = mode
        if chunks < 1:
            raise ValueError(f"chunks must be >= 1, got {chunks}")
        self.chunks = chunks
        self.flit_bytes = graph.flit_bytes
        self.edge_free = [0.0] * len(graph.edges)
        self._loads: list[list[share.Load]] = [[] for _ in graph.edges]
        self._depth_shown = [0.0] * len(graph.edges)
        self._memories: dict[str, ChannelArray] = {}
        self._next_corr = 1
        self.transfers_done = 0

    # --- public primitives ------------------------------------------------

    def new_corr_id(self) -> int:
        c = self._next_corr
        self._next_corr += 1
        return c

    def memory(self, node_id: str) -> ChannelArray:
        mem = self._memories.get(node_id)
        if mem is None:
            node = self.graph.node(node_id)
            if node.kind not in MEMORY_KINDS:
                raise RouteError(f"{node_id} is a {node.kind}, not a memory (HBM slice or SRAM)")
            a = node.attrs
            base = a.get("slice", 0) * a["channels"]
            mem = ChannelArray(node_id, base, a["channels"], a["burst_bytes"], a["channel_bw_gbps"])
            self._memories[node_id] = mem
        return mem

    def read(
        self,
        initiator: str,
        memory: str,
        offset: int,
        size_bytes: int,
        *,
        stride_bytes: int | None = None,
        kind: str = "dma_read",
        corr_id: int | None = None,
    ) -> simpy.Event:
        """Read ``size_bytes`` at ``offset`` of ``memory`` into ``initiator``."""
        self._check(initiator, memory, size_bytes, stride_bytes)
        return self._start(self._read(initiator, memory, offset, size_bytes, stride_bytes, kind, corr_id))

    def write(
        self,
        initiator: str,
        memory: str,
        offset: int,
        size_bytes: int,
        *,
        stride_bytes: int | None = None,
        kind: str = "dma_write",
        corr_id: int | None = None,
    ) -> simpy.Event:
        """Write ``size_bytes`` from ``initiator`` to ``offset`` of ``memory``; done on ack."""
        self._check(initiator, memory, size_bytes, stride_bytes)
        return self._start(self._write(initiator, memory, offset, size_bytes, stride_bytes, kind, corr_id))

    def send(self, src: str, dst: str, size_bytes: int, *, kind: str = "ipcq", corr_id: int | None = None) -> simpy.Event:
        """Move ``size_bytes`` from ``src`` to ``dst``; done when the last flit arrives."""
        self._flits(size_bytes)
        self.graph.route(src, dst)
        return self._start(self._send(src, dst, size_bytes, kind, corr_id))

    def _check(self, initiator: str, memory: str, size_bytes: int, stride_bytes: int | None) -> None:
        """Fail at the call, not later inside the simulation: route, size, stride."""
        mem = self.memory(memory)
        self._flits(size_bytes)
        mem.layout(0, 1, stride_bytes or mem.burst_bytes)
        self.graph.route(initiator, memory)
        self.graph.route(memory, initiator)

    def flush(self) -> None:
        """Publish the final queue-drain points (call once the run has ended)."""
        if not self.bus.active:
            return
        for e in self.graph.edges:
            if self._depth_shown[e.index] > 0:
                self.bus.emit(self.edge_free[e.index], EventKind.QUEUE_DEPTH, e.id, value=0.0)
                self._depth_shown[e.index] = 0.0

    # --- transfer processes -----------------------------------------------

    def _start(self, gen) -> simpy.Event:
        return self.env.process(gen)

    def _flits(self, size_bytes: int) -> int:
        if size_bytes <= 0:
            raise ValueError(f"transfer size must be positive, got {size_bytes}")
        return -(-size_bytes // self.flit_bytes)

    def _begin(self, kind, src, dst, size_bytes, corr_id):
        corr = corr_id if corr_id is not None else self.new_corr_id()
        if self.bus.active:
            self.bus.emit(self.env.now, EventKind.TRANSFER_START, f"{src}", corr_id=corr, label=kind, value=size_bytes, detail=f"{src}=>{dst}")
        return corr

    def _finish(self, kind, src, dst, size_bytes, corr, t0) -> TransferResult:
        self.transfers_done += 1
        if self.bus.active:
            self.bus.emit(self.env.now, EventKind.TRANSFER_END, f"{src}", corr_id=corr, label=kind, value=size_bytes, detail=f"{src}=>{dst}")
        return TransferResult(corr, kind, src, dst, size_bytes, t0, self.env.now)

    def _read(self, initiator, memory, offset, size_bytes, stride_bytes, kind, corr_id):
        env = self.env
        mem = self.memory(memory)
        n = self._flits(size_bytes)
        stride = stride_bytes or mem.burst_bytes
        req = self.graph.route(initiator, memory)
        resp = self.graph.route(memory, initiator)
        t0 = env.now
        corr = self._begin(kind, initiator, memory, size_bytes, corr_id)
        if req.header_ns > 0:
            yield env.timeout(req.header_ns)
        if self.mode == "fast":
            pieces, spans = mem.read_train(env.now, offset, n, stride)
            self._publish_channels(mem, spans, corr)
            ends = yield from self._move_chunks(pieces, resp, n, corr)
            end = max(ends)
        else:
            ready = []
            for k in range(n):
                ch = mem.channel_of(offset, k, stride)
                done = mem.serve_burst(ch, env.now)
                ready.append(done)
                self._publish_channels(mem, [ChannelSpan(ch, done - mem.burst_ns, done, 1)], corr)
            arrivals = yield from self._move_flits(ready, resp, corr)
            end = max(arrivals)
        if end > env.now:
            yield env.timeout(end - env.now)
        return self._finish(kind, initiator, memory, size_bytes, corr, t0)

    def _write(self, initiator, memory, offset, size_bytes, stride_bytes, kind, corr_id):
        env = self.env
        mem = self.memory(memory)
        n = self._flits(size_bytes)
        stride = stride_bytes or mem.burst_bytes
        fwd = self.graph.route(initiator, memory)
        ack = self.graph.route(memory, initiator)
        t0 = env.now
        corr = self._begin(kind, initiator, memory, size_bytes, corr_id)
        start = t0 + fwd.src_overhead_ns
        if self.mode == "fast":

            def commit(c0: int, count: int, pieces) -> float:
                done_c, spans = mem.write_done(pieces, offset + c0 * stride, count, stride)
                self._publish_channels(mem, spans, corr)
                return done_c

            done = max((yield from self._move_chunks([(start, 0.0, 0)], fwd, n, corr, at_dst=commit)))
        else:

            def commit(k: int, t: float) -> float:
                ch = mem.channel_of(offset, k, stride)
                end_b = mem.serve_burst(ch, t)
                self._publish_channels(mem, [ChannelSpan(ch, end_b - mem.burst_ns, end_b, 1)], corr)
                return end_b

            done = max((yield from self._move_flits([start] * n, fwd, corr, on_arrive=commit)))
        end = done + ack.header_ns - ack.src_overhead_ns
        if end > env.now:
            yield env.timeout(end - env.now)
        return self._finish(kind, initiator, memory, size_bytes, corr, t0)

    def _send(self, src, dst, size_bytes, kind, corr_id):
        env = self.env
        n = self._flits(size_bytes)
        route = self.graph.route(src, dst)
        t0 = env.now
        corr = self._begin(kind, src, dst, size_bytes, corr_id)
        start = t0 + route.src_overhead_ns
        if self.mode == "fast":
            end = max((yield from self._move_chunks([(start, 0.0, 0)], route, n, corr)))
        else:
            arrivals = yield from self._move_flits([start] * n, route, corr)
            end = max(arrivals)
        if end > env.now:
            yield env.timeout(end - env.now)
        return self._finish(kind, src, dst, size_bytes, corr, t0)

    # --- fast mode: trains ------------------------------------------------

    def _move_chunks(self, pieces, route: Route, n: int, corr: int, at_dst=None):
        """Move a train as up to ``self.chunks`` consecutive trains; each one's end time.

        Chunks keep a late transfer from queueing behind the whole of an
        early one (it can slip in between chunks, as flits interleave in the
        oracle) at a cost that does not grow with the flit count. Chunks of
        one transfer follow each other exactly (the closed form splits at any
        flit). ``at_dst(first_flit, count, pieces)`` handles each chunk's
        arrival at the destination, at that time, and returns its end.
        """
        env = self.env
        k = max(1, min(self.chunks, n // MIN_CHUNK_FLITS))
        if k == 1:  # one train: no sub-process
            return [(yield from self._chunk(pieces, route, n, corr, 0, at_dst))]
        bounds = [n * i // k for i in range(k + 1)]
        procs = []
        for c0, c1 in zip(bounds, bounds[1:]):
            procs.append(env.process(self._chunk(tr.restrict(pieces, c0, c1), route, c1 - c0, corr, c0, at_dst)))
        yield simpy.AllOf(env, procs)
        return [p.value for p in procs]

    def _chunk(self, pieces, route: Route, count: int, corr: int, c0: int, at_dst):
        out = yield from self._move_train(pieces, route, count, corr)
        if at_dst is None:
            return tr.at(out, count - 1)
        head = tr.at(out, 0)
        if head > self.env.now:
            yield self.env.timeout(head - self.env.now)
        return at_dst(c0, count, out)

    def _move_train(self, pieces, route: Route, n: int, corr: int):
        env = self.env
        free = self.edge_free
        loads = self._loads
        bus = self.bus
        for hop in route.hops:
            head = tr.at(pieces, 0)
            if head > env.now:
                yield env.timeout(head - env.now)
            e = hop.edge.index
            s = hop.flit_ns
            f = free[e]
            running = [ld for ld in loads[e] if ld[1] > head]
            if all(ld[3] == corr for ld in running):
                # Alone on the edge: the exact closed form.
                out = tr.through_edge(pieces, s, f)
                first, tail = tr.at(out, 0), tr.at(out, n - 1)
            else:
                first, tail = share.departures(head, tr.at(pieces, n - 1), n, s, running)
                out = [(first, (tail - first) / (n - 1) if n > 1 else s, 0)]
            running.append((first - s, tail, share.share_of(n, s, first - s, tail), corr))
            loads[e] = running
            free[e] = max(f, tail)
            if bus.active:
                bus.emit(first - s, EventKind.EDGE_BUSY, hop.edge.id, end_ns=tail, corr_id=corr, value=n)
                self._publish_depth(e, hop.edge.id, head, f, [ld for ld in running[:-1] if ld[3] != corr], s)
            pieces = tr.shift(out, hop.prop_ns + hop.next_overhead_ns)
        return pieces

    def _publish_depth(self, e: int, edge_id: str, head: float, prev_free: float, ahead: list, s: float) -> None:
        """Flits of other transfers still to cross the edge when this train's head arrives.

        A transfer's own later chunks are not queueing (they are one stream).
        """
        backlog = sum(ld[2] * (ld[1] - max(ld[0], head)) / s for ld in ahead)
        shown = self._depth_shown[e]
        if shown > 0 and head >= prev_free:
            self.bus.emit(prev_free, EventKind.QUEUE_DEPTH, edge_id, value=0.0)
            shown = 0.0
        if backlog > 0 or shown > 0:
            self.bus.emit(head, EventKind.QUEUE_DEPTH, edge_id, value=round(backlog, 6))
        self._depth_shown[e] = backlog

    def _publish_channels(self, mem: ChannelArray, spans: list[ChannelSpan], corr: int) -> None:
        if not self.bus.active:
            return
        for sp in spans:
            self.bus.emit(sp.start_ns, EventKind.CHANNEL_BUSY, mem.channel_name(sp.channel), end_ns=sp.end_ns, corr_id=corr, value=sp.bursts)

    # --- oracle mode: flit by flit ----------------------------------------

    def _move_flits(self, ready: list[float], route: Route, corr: int, on_arrive=None):
        """Send flit ``k`` (ready at ``ready[k]``) hop by hop; its arrival times.

        Every flit's arrival at every edge is its own SimPy event, so flits of
        concurrent transfers enter each FIFO in true arrival order. With
        ``on_arrive(k, t)``, each arrival is handed on at its own time (e.g. to
        an HBM channel) and the time it returns is recorded instead.
        """
        env = self.env
        n = len(ready)
        arrivals: list[float] = [0.0] * n
        finished = env.event()
        state = {"left": n}
        hops = route.hops
        free = self.edge_free
        bus = self.bus

        def arrive(k: int, h: int, t: float) -> None:
            if h == len(hops):
                arrivals[k] = t if on_arrive is None else on_arrive(k, t)
                state["left"] -= 1
                if state["left"] == 0:
                    finished.succeed()
                return
            hop = hops[h]
            e = hop.edge.index
            start = max(t, free[e])
            free[e] = start + hop.flit_ns
            if bus.active:
                bus.emit(start, EventKind.EDGE_BUSY, hop.edge.id, end_ns=start + hop.flit_ns, corr_id=corr, value=1)
            at_next = start + hop.flit_ns + hop.prop_ns + hop.next_overhead_ns
            schedule(k, h + 1, at_next)

        def schedule(k: int, h: int, t: float) -> None:
            ev = env.timeout(t - env.now)
            ev.callbacks.append(lambda _ev, k=k, h=h, t=t: arrive(k, h, t))

        for k, t in enumerate(ready):
            schedule(k, 0, t)
        yield finished
        return arrivals
