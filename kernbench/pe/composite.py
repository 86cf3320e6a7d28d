"""A CompositeCmd streaming through the PE's engines, tile by tile.

PE_SCHEDULER expands a composite into per-tile stages without redispatch:

* **DMA_READ** (:meth:`CompositeRun._read_tile`) reads every ``tl.ref``
  operand's share of the tile on the PE's read channel. It needs only HBM,
  so it starts when the command arrives, while the stages that read TCM
  inputs wait for them; it runs at most :data:`TILE_BUFFERS` tiles ahead of
  FETCH (a tile's buffer is free once FETCH has read it).
* **FETCH → engines → STORE** (:meth:`CompositeRun._feed_tile`) once the
  command's TCM inputs are ready and the tile's data is in: one in-order
  reservation per lane, each op on its engine (GEMM or MATH).
* **DMA_WRITE** of HBM outputs, per tile, once STORE is done.

The command is done when the last STORE and the last write are. Its TCM
outputs and ``rw_handles`` are not ready before that: composites sharing a
handle run in program order.

Each stage continues from the SimPy event it waits for (a callback), in the
same order the generator processes it replaces resumed: a stage starts as an
urgent action, as a process starts; a pause is a normal-priority action, as
a timeout is.

In recorded runs each stage names its cause (``pred``): a tile's read waits
for the channel, the previous read or its free buffer (the FETCH of the
tile two before); a FETCH for its tile's last read, the lane, or the
command's inputs; a write for its STORE or the write channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import simpy
from simpy.events import ProcessGenerator

from kernbench.handles import HandleRef
from kernbench.pe.commands import CompositeCmd, OpSpec
from kernbench.pe.lane import fired_at
from kernbench.pe.opkinds import op_kind
from kernbench.pe.work import op_work
from kernbench.sim.clock import NORMAL, URGENT, call_at

if TYPE_CHECKING:
    from kernbench.pe.processing_element import ProcessingElement
    from kernbench.pe.scheduler import Scheduler
    from kernbench.sim.network import TransferResult

TILE_BUFFERS = 2  # tiles DMA_READ may run ahead of FETCH


@dataclass(frozen=True, slots=True)
class Stage:
    """One op of the composite on its engine: the lane and its time per tile."""

    engine: str  # "gemm" or "math"
    service_ns: float
    kind: str


@dataclass(frozen=True, slots=True)
class Plan:
    """What a composite of one shape does per tile (the same for every composite of that shape)."""

    n_tiles: int
    stages: tuple[Stage, ...]
    fetch_ns: float  # FETCH of every operand's share of a tile
    store_ns: float  # STORE of every output's share
    label: str


def _plan(pe: ProcessingElement, ops: tuple[OpSpec, ...]) -> Plan:
    """The plan for ``ops`` on ``pe``, computed once per shape of composite."""
    # list comprehensions, not generators: this runs for every composite issued. The
    # key may tell apart composites with equal plans (extras given in another order):
    # then each is planned once, to the same plan.
    key = tuple(
        [
            (
                op.kind,
                tuple([r.geometry for r in op.operands.values()]),
                None if op.out is None else op.out.geometry,
                tuple(op.extra.items()) if op.extra else (),
            )
            for op in ops
        ]
    )
    cache = pe.composite_plans
    try:
        hit = cache.get(key)
    except TypeError:  # an unhashable extra value: plan it every time
        return _make_plan(pe, ops)
    if hit is None:
        hit = cache[key] = _make_plan(pe, ops)
    return hit


def _make_plan(pe: ProcessingElement, ops: tuple[OpSpec, ...]) -> Plan:
    streamed = {r.id: r for op in ops for r in op.operands.values() if r.space == "hbm"}
    outs = [op.out for op in ops if op.out is not None and op.out.space == "hbm"]
    big = max([r.nbytes for r in [*streamed.values(), *outs]], default=0)
    n = max(1, -(-big // pe.composite_tile_bytes))
    stages = []
    for op in ops:
        engine = op_kind(op.kind).engine
        work = op_work(op.kind, [r.shape for r in op.operands.values()], op.out.shape if op.out else None, op.extra)
        stages.append(Stage(engine, pe.gemm_ns(work / n) if engine == "gemm" else pe.math_ns(work / n), op.kind))
    fetch = sum(r.nbytes for op in ops for r in op.operands.values()) / n / pe.tcm_bw_gbps
    store = sum(op.out.nbytes for op in ops if op.out is not None) / n / pe.tcm_bw_gbps
    label = "+".join(op.kind for op in ops) if len(ops) <= 3 else f"{ops[0].kind}+{len(ops) - 1} ops"
    return Plan(n, tuple(stages), fetch, store, label)


class CompositeRun:
    """One composite in flight; ``done`` succeeds when its last tile is stored and written."""

    __slots__ = (
        "arrive",
        "cause",
        "corr",
        "done",
        "env",
        "feed_pred",
        "fetch_ns",
        "fetch_seq",
        "fetched",
        "hbm_outs",
        "label",
        "last",
        "last_seq",
        "n_tiles",
        "outs_claimed",
        "pe",
        "pending",
        "rd_pred",
        "sched",
        "stages",
        "store_ns",
        "streamed",
        "t_in",
        "tile_read",
        "tile_seq",
        "traced",
        "waits",
        "write_ends",
        "writes",
    )

    def __init__(self, sched: Scheduler, cmd: CompositeCmd, arrive: float, corr: int) -> None:
        pe = sched.pe
        env = sched.env
        self.sched = sched
        self.pe = pe
        self.env = env
        self.corr = corr
        self.arrive = arrive
        refs: dict[int, HandleRef] = {}  # everything it touches, each once
        streamed: dict[int, HandleRef] = {}  # its tl.ref operands
        hbm_outs: list[HandleRef] = []  # outputs written back per tile
        claimed: list[HandleRef] = []  # TCM outputs and rw_handles: ready when it is done
        for op in cmd.ops:
            for r in op.operands.values():
                refs.setdefault(r.id, r)
                if r.space == "hbm":
                    streamed.setdefault(r.id, r)
            out = op.out
            if out is not None:
                refs.setdefault(out.id, out)
                (hbm_outs if out.space == "hbm" else claimed).append(out)
        for r in cmd.rw_handles:
            refs.setdefault(r.id, r)
            if r.space == "tcm":
                claimed.append(r)
        self.streamed = list(streamed.values())
        self.hbm_outs = hbm_outs
        ops = cmd.ops
        plan = _plan(pe, ops)
        n = self.n_tiles = plan.n_tiles
        self.stages = plan.stages
        self.fetch_ns = plan.fetch_ns
        self.store_ns = plan.store_ns
        self.label = plan.label
        # Readiness of everything it touches *before* it claims its outputs:
        # this is how composites sharing a handle (rw_handles) stay in order.
        tcm = [r for r in refs.values() if r.space == "tcm"]
        self.t_in, self.pending = sched.inputs(tcm)
        self.traced = pe.bus.active
        self.cause = sched.cause(tcm, arrive) if self.traced else (0.0, -1)
        self.waits = sched.waits(tcm) if self.traced else []
        self.rd_pred = pe.sched.last  # what the next tile read waits for (recorded runs)
        self.tile_seq = [-1] * n  # the read span that completed each tile
        self.fetch_seq = [-1] * n
        self.feed_pred = -1
        self.last_seq = -1  # the span ending at ``last``
        self.write_ends: list[tuple[float, int]] = []
        done = self.done = env.event()
        ready = pe.ready
        self.outs_claimed = claimed
        for r in claimed:
            ready[r.id] = done
        pe.async_stages += 1
        self.tile_read = [env.event() for _ in range(n)] if self.streamed else []
        # A tile's FETCH frees its buffer for the read TILE_BUFFERS tiles later
        # (_read_tile): only those reads wait on it, so the last TILE_BUFFERS
        # tiles, and a composite that streams nothing, need no event.
        self.fetched = [env.event() for _ in range(n - TILE_BUFFERS)] if self.streamed else []
        self.writes: list[simpy.Process] = []
        self.last = 0.0
        call_at(env, env.now, URGENT, self._start)

    def _start(self) -> None:
        """DMA_READ's start, then FETCH's: one action for the two stages (scheduled
        together, they ran back to back, before anything either of them scheduled)."""
        if self.streamed:
            self._start_reading()
        self._start_feeding()

    # --- DMA_READ ---------------------------------------------------------------

    def _start_reading(self) -> None:
        env = self.env
        if self.arrive > env.now:
            call_at(env, self.arrive, NORMAL, self._read_tile, 0)
        else:
            self._read_tile(0)

    def _read_tile(self, i: int) -> None:
        if i == self.n_tiles:
            return
        if i >= TILE_BUFFERS:
            free = self.fetched[i - TILE_BUFFERS]  # the buffer this tile reuses
            if not free.processed:
                free.callbacks.append(lambda _e: self._buffer_free(i))
                return
        self._read_operand(i, 0)

    def _buffer_free(self, i: int) -> None:
        self.rd_pred = self.fetch_seq[i - TILE_BUFFERS]
        self._read_operand(i, 0)

    def _read_operand(self, i: int, j: int) -> None:
        if j == len(self.streamed):
            self.tile_seq[i] = self.rd_pred
            self.tile_read[i].succeed(self.env.now)
            self._read_tile(i + 1)
            return
        prev, mine = self.pe.rd.claim()
        if prev is not None and not prev.processed:
            prev.callbacks.append(lambda _e: self._channel_free(i, j, mine))
            return
        self._issue_read(i, j, mine)

    def _channel_free(self, i: int, j: int, mine: simpy.Event) -> None:
        self.rd_pred = self.pe.rd.last
        self._issue_read(i, j, mine)

    def _issue_read(self, i: int, j: int, mine: simpy.Event) -> None:
        pe = self.pe
        r = self.streamed[j]
        lo, size = chunk(r.nbytes, i, self.n_tiles)
        start = self.env.now
        assert r.region is not None  # a streamed (HBM) operand's
        ev = pe.network.read(pe.dma_node, r.memory, region=r.region.chunk(lo, lo + size), corr_id=self.corr)

        def landed(e: simpy.Event) -> None:
            result = cast("TransferResult", e.value)  # (SimPy types event values as Optional[Any])
            self.rd_pred = pe.rd.record(start, self.env.now, f"tile {i} {r.name}", self.corr, size, self.rd_pred, result.parts)
            mine.succeed(self.env.now)
            self._read_operand(i, j + 1)

        ev.callbacks.append(landed)

    # --- FETCH → engines → STORE ---------------------------------------------------

    def _start_feeding(self) -> None:
        env = self.env
        t0 = self.arrive if self.arrive > self.t_in else self.t_in
        if self.pending:
            cond = simpy.AllOf(env, self.pending)

            def inputs_ready(_e: simpy.Event) -> None:
                if self.traced:
                    self.feed_pred = self.pe.scheduler.after_waits(self.cause, self.waits)[1]
                self._feed_from(max(t0, *(fired_at(ev) for ev in self.pending)))

            cond.callbacks.append(inputs_ready)
            return
        self.feed_pred = self.cause[1]
        self._feed_from(t0)

    def _feed_from(self, t0: float) -> None:
        env = self.env
        self.last = t0 if t0 > env.now else env.now
        self.last_seq = self.feed_pred
        if t0 > env.now:
            call_at(env, t0, NORMAL, self._set_last_and_feed)
        else:
            self._feed_tile(0)

    def _set_last_and_feed(self) -> None:
        self.last = self.env.now
        self._feed_tile(0)

    def _tile_in(self, i: int) -> None:
        """Tile ``i``'s data landed: FETCH it."""
        self.feed_pred = self.tile_seq[i]
        self._feed_tile(i)

    def _feed_tile(self, i: int) -> None:
        pe = self.pe
        env = self.env
        while i < self.n_tiles:
            if self.streamed and not self.tile_read[i].processed:

                def resume(_e: simpy.Event, i: int = i) -> None:
                    self._tile_in(i)

                self.tile_read[i].callbacks.append(resume)
                return
            corr = self.corr
            _, t = pe.fetch.reserve(env.now, self.fetch_ns, f"fetch {self.label}", corr, pred=self.feed_pred)
            fetch_end = t
            self.fetch_seq[i] = lane_seq = pe.fetch.last
            lanes = {"gemm": pe.gemm, "math": pe.math}
            for st in self.stages:
                lane = lanes[st.engine]
                _, t = lane.reserve(t, st.service_ns, st.kind, corr, pred=lane_seq)
                lane_seq = lane.last
            _, t = pe.store.reserve(t, self.store_ns, f"store {self.label}", corr, pred=lane_seq)
            for r in self.hbm_outs:
                self.writes.append(env.process(self._write_tile(r, i, t, pe.store.last)))
            if t > self.last:
                self.last = t
                self.last_seq = pe.store.last
            if i < len(self.fetched):
                ev = self.fetched[i]
                if fetch_end > env.now:
                    call_at(env, fetch_end, NORMAL, ev.succeed)
                else:
                    ev.succeed()
            i += 1
        self.pe.async_stages -= 1
        if self.last > env.now:
            call_at(env, self.last, NORMAL, self._await_writes, 0)
        else:
            self._await_writes(0)

    def _await_writes(self, w: int) -> None:
        writes = self.writes
        while w < len(writes):
            if not writes[w].processed:

                def next_write(_e: simpy.Event, w: int = w) -> None:
                    self._await_writes(w + 1)

                writes[w].callbacks.append(next_write)
                return
            w += 1
        if self.traced:
            end, seq = self.last, self.last_seq
            for t, s in self.write_ends:
                if t >= end:
                    end, seq = t, s
            self.pe.scheduler._produced(self.outs_claimed, seq)
            self.pe.scheduler._done(self.corr, seq)
        self.done.succeed(self.env.now)

    # --- DMA_WRITE -----------------------------------------------------------------

    def _write_tile(self, r: HandleRef, i: int, t_ready: float, stored: int) -> ProcessGenerator:
        pe = self.pe
        env = self.env
        lo, size = chunk(r.nbytes, i, self.n_tiles)
        if t_ready > env.now:
            yield env.timeout(t_ready - env.now)
        prev, mine = pe.wr.claim()
        pred = stored
        if prev is not None and not prev.processed:
            yield prev
            if env.now > t_ready:
                pred = pe.wr.last
        start = env.now
        assert r.region is not None  # an HBM output's
        result: TransferResult = yield pe.network.write(pe.dma_node, r.memory, region=r.region.chunk(lo, lo + size), corr_id=self.corr)
        seq = pe.wr.record(start, env.now, f"tile {i} {r.name}", self.corr, size, pred, result.parts)
        self.write_ends.append((env.now, seq))
        mine.succeed(env.now)


def chunk(nbytes: int, i: int, n_tiles: int) -> tuple[int, int]:
    """Tile ``i``'s share of an operand of ``nbytes``: bytes ``[lo, lo + size)`` (at least one)."""
    size = -(-nbytes // n_tiles)
    lo = min(i * size, nbytes - 1)
    return lo, max(1, min(size, nbytes - lo))
