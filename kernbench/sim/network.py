"""Moving bytes over the graph: DMA reads and writes, host transfers, messages.

Contract. One :class:`Network` per simulation offers the transfer
primitives the PE model and the probes use — :meth:`~Network.read`,
:meth:`~Network.write` (done when the acknowledgement is back) and
:meth:`~Network.send` (done when the last flit arrives) — each returning a
SimPy event that succeeds with a :class:`TransferResult`. It owns the
memories' pseudo-channels (:meth:`~Network.memory`), numbers transfers in
the order they start, and hands each to the timing mode chosen by ``mode``:
``"oracle"``, flit by flit, which defines the model
(:mod:`kernbench.sim.oracle`), or ``"fast"`` (default), whole trains at a
cost that grows with hops, with the oracle's answer
(:mod:`kernbench.sim.fast`).

What a transfer costs is ``docs/timing.md``; the words are in
``docs/glossary.md``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import simpy

from kernbench.errors import RouteError
from kernbench.events.bus import Bus
from kernbench.events.types import EventKind
from kernbench.frozen import quick_init
from kernbench.sim import fifo
from kernbench.sim.fast import FastEngine
from kernbench.sim.fidelity import check_fidelity
from kernbench.sim.hbm import ChannelArray
from kernbench.sim.oracle import OracleEngine
from kernbench.sim.region import Region
from kernbench.sim.transfer import Transfer, TransferEngine, Way
from kernbench.sim.transit import Part
from kernbench.topology.graph import Graph

Mode = Literal["fast", "oracle"]
MODES: tuple[str, ...] = ("fast", "oracle")
MEMORY_KINDS = ("hbm_slice", "sram")
_new = object.__new__  # (a transfer's event made without its __init__: Network._start)
_TRANSFER_START, _TRANSFER_END = EventKind.TRANSFER_START, EventKind.TRANSFER_END
#: the timing modes' engines (the PE's engines are ``events.types.ENGINES``)
TIMING_ENGINES: dict[str, type[FastEngine] | type[OracleEngine]] = {"fast": FastEngine, "oracle": OracleEngine}


@quick_init
@dataclass(frozen=True, slots=True)
class TransferResult:
    corr_id: int
    kind: str
    src: str
    dst: str
    size_bytes: int
    start_ns: float
    end_ns: float
    parts: tuple[Part, ...] = field(default=(), compare=False)  # where the critical flit spent [start, end] (recorded runs)

    @property
    def latency_ns(self) -> float:
        return self.end_ns - self.start_ns


class Network:
    """The transfer primitives of one simulation's graph (see the module docstring)."""

    def __init__(
        self,
        env: simpy.Environment,
        graph: Graph,
        bus: Bus | None = None,
        mode: Mode = "fast",
        explain: bool | None = None,
        fidelity: str = "paper",
    ):
        """``explain``: say where each transfer's time went (:attr:`TransferResult.parts`);
        by default when events are recorded. ``fidelity`` (:mod:`kernbench.sim.fidelity`):
        above ``paper`` the flit-by-flit engine runs with that level's components."""
        if mode not in MODES:
            raise ValueError(f"mode must be 'fast' or 'oracle', got {mode!r}")
        self.fidelity = check_fidelity(fidelity)
        if self.fidelity != "paper":
            mode = "oracle"
        self.env = env
        self.graph = graph
        self.bus = bus if bus is not None else Bus()
        self.mode = mode
        self.flit_bytes = graph.flit_bytes
        self._memories: dict[str, ChannelArray] = {}
        self._ways: dict[tuple[str, str, str], Way] = {}  # (op, src, dst) -> its routes and memory end
        # new_corr_id(): the next correlation id, from 1 (a C call: the PE takes one a command, ~8.8k a GQA re-timing)
        self.new_corr_id: Callable[[], int] = itertools.count(1).__next__
        self._next_seq = 1
        self.transfers_done = 0
        # recorded runs say where each transfer's time went (TransferResult.parts)
        self.explain = self.bus.active if explain is None else explain
        self._open: deque[tuple[int, float]] = deque()  # (seq, start) of transfers in start order; finished ones leave lazily
        self._closed: set[int] = set()
        # trains on idle routes are deferred unless events are published or explained:
        # then every passage is planned (each FIFO's busy span, where the time went)
        self.defer = mode == "fast" and not self.explain
        self.engine: TransferEngine = TIMING_ENGINES[mode](self)

    def memory(self, node_id: str) -> ChannelArray:
        mem = self._memories.get(node_id)
        if mem is None:
            node = self.graph.node(node_id)
            if node.kind not in MEMORY_KINDS:
                raise RouteError(f"{node_id} is a {node.kind}, not a memory (HBM slice or SRAM)")
            a = node.attrs
            if a["burst_bytes"] != self.flit_bytes:
                raise RouteError(
                    f"{node_id}: burst_bytes {a['burst_bytes']} must equal flit_bytes {self.flit_bytes} (one flit carries one burst)"
                )
            base = a.get("slice", 0) * a["channels"]
            mem = ChannelArray(node_id, base, a["channels"], a["burst_bytes"], a["channel_bw_gbps"], self.explain)
            self._memories[node_id] = mem
        return mem

    @property
    def deferring(self) -> bool:
        """Whether a transfer starting now may defer its data train (nobody observing the bus)."""
        return self.defer and not self.bus.active

    def read(
        self,
        initiator: str,
        memory: str,
        offset: int = 0,
        size_bytes: int | None = None,
        *,
        region: Region | None = None,
        stride_bytes: int | None = None,
        kind: str = "dma_read",
        corr_id: int | None = None,
    ) -> simpy.Event:
        """Read a region of ``memory`` into ``initiator``.

        The region is ``region``, or ``size_bytes`` from ``offset``; with
        ``stride_bytes`` (a multiple of the burst) one burst every
        ``stride_bytes``, ``ceil(size / burst)`` of them.
        """
        way = self._ways.get(("read", initiator, memory))
        if way is None or region is None:
            region = self._region(memory, offset, size_bytes, region, stride_bytes)
            way = way or self._way("read", initiator, memory)
        return self._start("read", kind, initiator, memory, region, corr_id, way)

    def write(
        self,
        initiator: str,
        memory: str,
        offset: int = 0,
        size_bytes: int | None = None,
        *,
        region: Region | None = None,
        stride_bytes: int | None = None,
        kind: str = "dma_write",
        corr_id: int | None = None,
    ) -> simpy.Event:
        """Write a region of ``memory`` from ``initiator``; done when the acknowledgement is back."""
        way = self._ways.get(("write", initiator, memory))
        if way is None or region is None:
            region = self._region(memory, offset, size_bytes, region, stride_bytes)
            way = way or self._way("write", initiator, memory)
        return self._start("write", kind, initiator, memory, region, corr_id, way)

    def send(self, src: str, dst: str, size_bytes: int, *, kind: str = "ipcq", corr_id: int | None = None) -> simpy.Event:
        """Move ``size_bytes`` from ``src`` to ``dst``; done when the last flit arrives."""
        if size_bytes <= 0:
            raise ValueError(f"transfer size must be positive, got {size_bytes}")
        way = self._ways.get(("send", src, dst)) or self._way("send", src, dst)
        return self._start("send", kind, src, dst, Region.contiguous(0, size_bytes), corr_id, way)

    def flush(self) -> None:
        """The end of a run: nothing is left to publish (every transfer publishes its busy
        spans and queue depths when it ends, in both modes)."""

    def close(self) -> None:
        """The run is over (its result taken): break the references between the engine, the FIFOs
        and the transfers they served, so that reference counting frees them at once."""
        self.engine.close()
        for mem in self._memories.values():
            fifo.close(mem.fifos)
        self._memories.clear()
        self._ways.clear()
        self._open.clear()
        self._closed.clear()

    def _region(self, memory: str, offset: int, size_bytes: int | None, region: Region | None, stride_bytes: int | None) -> Region:
        mem = self.memory(memory)
        if region is not None:
            return region
        if size_bytes is None or size_bytes <= 0:
            raise ValueError(f"transfer size must be positive, got {size_bytes}")
        if stride_bytes is None:
            return Region.contiguous(offset, size_bytes)
        if stride_bytes <= 0 or stride_bytes % mem.burst_bytes:
            raise ValueError(
                f"stride_bytes={stride_bytes} must be a positive multiple of the {mem.burst_bytes} B burst (one flit carries one burst)"
            )
        n = -(-size_bytes // mem.burst_bytes)
        return Region.strided(offset - offset % mem.burst_bytes, mem.burst_bytes, stride_bytes, n)

    def _way(self, op: str, src: str, dst: str) -> Way:
        """The routes and memory end of ``op`` from ``src`` to ``dst``, worked out on its first
        transfer: an impossible route fails at the call, not inside the simulation."""
        mem = self.memory(dst) if op != "send" else None
        there = self.graph.route(src, dst)
        way = self._ways[(op, src, dst)] = Way(src, dst, there, self.graph.route(dst, src) if op != "send" else there, mem)
        return way

    def _start(self, op: str, kind: str, src: str, dst: str, region: Region, corr_id: int | None, way: Way) -> simpy.Event:
        corr = corr_id if corr_id is not None else self.new_corr_id()
        seq = self._next_seq
        self._next_seq = seq + 1
        env = self.env
        done = _new(simpy.Event)  # (simpy.Event(env) without its __init__ call, as clock.Environment.timeout makes one)
        done.env = env
        done.callbacks = []
        if self.bus.active:
            nbytes = len(region.starts) * region.run_bytes  # (Region.nbytes, inlined)
            # (Bus.emit's fields by position: end_ns, corr_id, label, value, detail; no keywords to match, ~5.1k a GQA re-timing)
            self.bus.emit(env.now, _TRANSFER_START, src, -1.0, corr, kind, nbytes, way.detail)
        if self.explain:
            self._open.append((seq, env.now))  # (seqs are numbered in start order: the oldest is first)
        engine = self.engine
        engine.transfer(self, op, kind, src, dst, region, corr, seq, done, way).begin(engine)
        return done

    def horizon(self) -> float:
        """When the oldest transfer still running started (nothing before it can matter to a running one)."""
        running, closed = self._open, self._closed
        while running and running[0][0] in closed:
            closed.discard(running.popleft()[0])
        return running[0][1] if running else self.env.now

    def finish(self, tr: Transfer, _at: float = 0.0) -> None:
        """``tr`` ends now (its engine's step at the transfer's ``FINISH`` priority says when): publish
        it, let it go (:meth:`Transfer.release`) and succeed its event, processed here and now.
        (``_at``: the time the fast engine's step keeps in its arguments, :meth:`FastTransfer.end_at`.)

        Processed, not scheduled: scheduled, the event would be the next entry SimPy's heap
        gives (due now, at ``NORMAL`` priority, below any transfer's step, and nothing due now
        at that priority is left, or it would have come before this step), so its callbacks
        would run next either way, in the same order; one heap entry less per transfer."""
        self.transfers_done += 1
        now = self.env.now
        parts: tuple[Part, ...] = ()
        if self.explain:
            parts = tr.parts(now)
            self._closed.add(tr.seq)
        region = tr.region
        nbytes = len(region.starts) * region.run_bytes  # (Region.nbytes, inlined)
        if self.bus.active:
            tr.publish()
            self.bus.emit(now, _TRANSFER_END, tr.src, -1.0, tr.corr, tr.kind, nbytes, tr.way.detail)  # (by position, as at the start)
        result = TransferResult(tr.corr, tr.kind, tr.src, tr.dst, nbytes, tr.t0, now, parts)
        tr.release()
        done = tr.done  # (what Environment.step does to a succeeded event)
        done._ok = True
        done._value = result
        callbacks, done.callbacks = done.callbacks, None  # type: ignore[assignment]  # (SimPy's mark of a processed event)
        for callback in callbacks:
            callback(done)
