"""A synthetic, deterministic GEMM-like run that publishes realistic events.

It stands in for a real kernel until the simulator is wired in (and gives
tests and benchmarks a trace of any size). A small SimPy model: each PE's
CPU loops over tiles — dispatch a lazy load, maybe do explicit work,
dispatch the dot (auto-waiting on the load: a STALL plus a LOAD_WAIT),
hand a composite to the scheduler (stalling when its queue is full) — while
the scheduler runs FETCH → GEMM → MATH → STORE on the engines and DMA
write-back. Reads cross a per-cube HBM link shared by the cube's PEs, so its
FIFO backs up; every hop publishes EDGE_BUSY with the transfer's corr_id.

Spans are published when they end (as a real simulator does), so the stream
arrives out of time order.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

import simpy
from simpy.events import ProcessGenerator

from kernbench.events.bus import Bus
from kernbench.events.tracefile import TraceMetadata
from kernbench.events.types import ENGINES, Event, EventKind, StallReason

FLIT_BYTES = 256
SCHED_QUEUE_SLOTS = 2


@dataclass(frozen=True)
class DemoParams:
    n_pes: int = 4
    tiles: int = 12
    tile_bytes: int = 8192
    ser_ns_per_flit: float = 0.5
    prop_ns: float = 2.0
    seed: int = 0
    pace_s_per_us: float = 0.0  # wall-clock seconds slept per simulated µs (live demos)


class _Demo:
    def __init__(self, bus: Bus, p: DemoParams) -> None:
        self.bus, self.p = bus, p
        self.env = simpy.Environment()
        self.rng = random.Random(p.seed)
        self.corr = 0
        self.links: dict[str, simpy.Resource] = {}
        self.queued_flits: dict[str, int] = {}

    # -- publishing helpers
    def span(self, kind: EventKind, comp: str, t0: float, label: str = "", value: float = 0.0, detail: str = "", corr: int = -1) -> None:
        self.bus.emit(t0, kind, comp, self.env.now, corr, label, value, detail)

    def instant(self, kind: EventKind, comp: str, label: str = "", value: float = 0.0, detail: str = "", corr: int = -1) -> None:
        self.bus.emit(self.env.now, kind, comp, -1.0, corr, label, value, detail)

    def link(self, edge: str) -> simpy.Resource:
        if edge not in self.links:
            self.links[edge] = simpy.Resource(self.env, capacity=1)
            self.queued_flits[edge] = 0
        return self.links[edge]

    # -- processes
    def new_corr(self) -> int:
        self.corr += 1
        return self.corr

    def transfer(
        self, pe: str, cube: str, channel: str, size: int, write: bool, corr: int, done: simpy.Event | None = None, handle: str = ""
    ) -> ProcessGenerator:
        env, p = self.env, self.p
        router = f"{cube}.r{1 + int(pe.rsplit('pe', 1)[1]) % 3}"
        hbm = f"{cube}.hbm.pc{channel}"
        path = [f"{hbm}->{cube}.r0", f"{cube}.r0->{router}", f"{router}->{pe}"]
        if write:
            path = [f"{b}->{a}" for a, b in (e.split("->") for e in reversed(path))]
        lane = f"{pe}.dma.{'wr' if write else 'rd'}"
        kind = "dma_write" if write else "dma_read"
        route = f"{pe}=>{hbm}" if write else f"{hbm}=>{pe}"
        flits = max(1, size // FLIT_BYTES)
        engine = self.engines[lane]
        with engine.request() as req:
            yield req
            t_dma = env.now
            self.instant(EventKind.TRANSFER_START, lane, kind, size, route, corr)
            for edge in path:
                shared = edge.startswith(f"{cube}.hbm") or edge.endswith(".hbm.pc" + channel)
                if shared:
                    res = self.link(edge)
                    self.queued_flits[edge] += flits
                    self.instant(EventKind.QUEUE_DEPTH, edge, value=self.queued_flits[edge])
                    with res.request() as hop:
                        yield hop
                        self.queued_flits[edge] -= flits
                        self.instant(EventKind.QUEUE_DEPTH, edge, value=self.queued_flits[edge])
                        t0 = env.now
                        yield env.timeout(flits * p.ser_ns_per_flit)
                        self.span(EventKind.EDGE_BUSY, edge, t0, kind, flits, corr=corr)
                        self.span(EventKind.CHANNEL_BUSY, hbm, t0, kind, flits, corr=corr)
                else:
                    t0 = env.now
                    yield env.timeout(p.prop_ns + flits * p.ser_ns_per_flit / 4)
                    self.span(EventKind.EDGE_BUSY, edge, t0, kind, flits, corr=corr)
            self.instant(EventKind.TRANSFER_END, lane, kind, size, route, corr)
            self.span(EventKind.ENGINE_BUSY, lane, t_dma, kind, size, route, corr)
        if done is not None:
            cpu = f"{pe}.cpu"
            self.instant(EventKind.LOAD_COMPLETE, cpu, handle, size, corr=corr)
            done.succeed()

    def engine_op(self, lane: str, name: str, ns: float, value: float) -> ProcessGenerator:
        with self.engines[lane].request() as req:
            yield req
            t0 = self.env.now
            yield self.env.timeout(ns)
            self.span(EventKind.ENGINE_BUSY, lane, t0, name, value)

    def composite(self, pe: str, cube: str, k: int, slot: simpy.Resource, slot_req: simpy.resources.resource.Request) -> ProcessGenerator:
        env, rng = self.env, self.rng
        t0 = env.now
        yield env.timeout(4.0)
        self.span(EventKind.ENGINE_BUSY, f"{pe}.sched", t0, "composite", self.p.tile_bytes)
        yield from self.engine_op(f"{pe}.fetch", "fetch", 6.0 + rng.random() * 4, self.p.tile_bytes)
        yield from self.engine_op(f"{pe}.gemm", "dot", 40.0 + rng.random() * 30, 2 * self.p.tile_bytes)
        if k % 3 == 2:
            yield from self.engine_op(f"{pe}.math", "softmax", 15.0 + rng.random() * 10, self.p.tile_bytes)
        yield from self.engine_op(f"{pe}.store", "store", 5.0, self.p.tile_bytes)
        slot.release(slot_req)
        yield from self.transfer(pe, cube, str(k % 2), self.p.tile_bytes // 2, True, self.new_corr())

    def cpu(self, pe: str, cube: str) -> ProcessGenerator:
        env, rng, p = self.env, self.rng, self.p
        cpu = f"{pe}.cpu"
        slot = simpy.Resource(env, capacity=SCHED_QUEUE_SLOTS)
        for k in range(p.tiles):
            handle = f"a{k}"
            t0 = env.now
            yield env.timeout(12.0)
            self.span(EventKind.DISPATCH, cpu, t0, "tl.load", 24, str(p.tile_bytes))
            done = env.event()
            corr = self.new_corr()
            self.instant(EventKind.LOAD_ISSUE, cpu, handle, p.tile_bytes, corr=corr)
            env.process(self.transfer(pe, cube, str(k % 2), p.tile_bytes, False, corr, done, handle))
            if k % 4 == 1:
                t0 = env.now
                yield env.timeout(20.0 + 10 * rng.random())
                self.span(EventKind.CPU_WORK, cpu, t0, "tl.cycles", 40)
            t0 = env.now
            yield env.timeout(18.0)
            self.span(EventKind.DISPATCH, cpu, t0, "tl.dot", 36, str(2 * p.tile_bytes))
            if not done.triggered:
                t0 = env.now
                yield done
                self.span(EventKind.STALL, cpu, t0, StallReason.LAZY_LOAD.value, 0, handle)
                self.span(EventKind.LOAD_WAIT, cpu, t0, handle, p.tile_bytes, corr=corr)
            t0 = env.now
            req = slot.request()
            if not req.triggered:
                yield req
                self.span(EventKind.STALL, cpu, t0, StallReason.QUEUE_FULL.value, 0, f"{pe}.sched")
            env.process(self.composite(pe, cube, k, slot, req))
            if k % 6 == 5:
                t0 = env.now
                yield env.timeout(10.0)
                self.span(EventKind.DISPATCH, cpu, t0, "tl.send", 20, "64")
                env.process(self.engine_op(f"{pe}.ipcq", "send", 25.0, 64))

    def run(self) -> TraceMetadata:
        pes = [f"sip0.cube{i // 8}.pe{i % 8}" for i in range(self.p.n_pes)]
        self.engines = {f"{pe}.{e}": simpy.Resource(self.env, capacity=1) for pe in pes for e in ENGINES if e not in ("cpu", "sched")}
        for pe in pes:
            self.env.process(self.cpu(pe, pe.rsplit(".", 1)[0]))
        if self.p.pace_s_per_us > 0:
            next_pause = 1000.0
            while self.env.peek() != float("inf"):
                if self.env.peek() >= next_pause:
                    time.sleep(self.p.pace_s_per_us)
                    next_pause += 1000.0
                self.env.step()
        else:
            self.env.run()
        return TraceMetadata(
            kernel="demo_gemm",
            topology=f"synthetic-{self.p.n_pes}pe",
            variant="demo",
            end_ns=float(self.env.now),
            extra={"tiles": self.p.tiles, "seed": self.p.seed},
        )


def run_demo(bus: Bus, params: DemoParams | None = None) -> TraceMetadata:
    """Run the synthetic kernel, publishing on ``bus``; returns its metadata."""
    return _Demo(bus, params or DemoParams()).run()


def demo_simulation(params: DemoParams | None = None) -> tuple[Callable[[Bus], TraceMetadata], TraceMetadata]:
    """``(fn, metadata)`` like ``kernbench.cli.tui_simulation``, for a child process."""
    params = params or DemoParams()
    return (lambda bus: run_demo(bus, params)), TraceMetadata(kernel="demo_gemm", variant="demo")


def demo_events(params: DemoParams | None = None) -> tuple[list[Event], TraceMetadata]:
    """The demo's events in time order, plus its metadata."""
    from kernbench.events.bus import Recorder

    bus = Bus()
    rec = Recorder(bus)
    meta = run_demo(bus, params)
    return rec.events(), meta
