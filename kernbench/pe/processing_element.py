"""One PE: its engines, their parameters, and per-handle readiness."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Any, Protocol

import simpy

from kernbench.errors import KernelError
from kernbench.events.bus import Bus
from kernbench.events.types import EventKind
from kernbench.handles import HandleRef
from kernbench.pe.composite_plan import Plan
from kernbench.pe.cost import DispatchCostModel
from kernbench.pe.lane import Channel, Lane
from kernbench.pe.scale import LANE_ENGINES, NO_SCALE, WorkScale
from kernbench.pe.scheduler import Ready, Scheduler
from kernbench.pe.tcm import TcmPort
from kernbench.pe.work import GemmArray
from kernbench.sim.network import Network
from kernbench.topology.graph import Graph


class KernelHooks(Protocol):
    """What the PE tells the live kernel (kernbench.tl's KernelContext): data it can now read."""

    def load_landed(self, hid: int) -> None: ...

    def deliver(self, hid: int, data: Any) -> None: ...  # (an IPCQ payload, see IpcqFabric)

    def recv_site(self, hid: int) -> str: ...  # the kernel line that posted a receive ("" if unknown)


_TIMINGS: dict[tuple[object, ...], tuple[object, ...]] = {}  # every engine timing met, once (ProcessingElement.timing)

# the node attributes a PE's engines are made of (besides pe_cost_model): see _engines
_ENGINE_ATTRS = (
    "clock_freq_ghz",
    "composite_tile_bytes",
    "tcm_bw_gbps",
    "gemm_array_rows",
    "gemm_array_cols",
    "gemm_pipeline_cycles",
    "gemm_tflops",
    "gemm_fp8_peak_ratio",
    "gemm_f32_peak_ratio",
    "math_pipeline_cycles",
    "math_elems_per_cycle",
    "math_transcendental_elems_per_cycle",
)
_ENGINES: dict[tuple[object, ...], tuple[DispatchCostModel, GemmArray, tuple[object, ...]]] = {}


def _engines(attrs: Mapping[str, Any]) -> tuple[DispatchCostModel, GemmArray, tuple[object, ...]]:
    """What a PE's node attributes make of its engines: its dispatch cost model, its GEMM array and its
    engine timing (:attr:`ProcessingElement.timing`). All three are immutable and follow from those
    attributes' values alone: made once per set of values, and shared by every PE that has them (the
    256 PEs of a GQA run, and of each re-timing, build one set: ~6 µs a PE)."""
    knobs = attrs.get("pe_cost_model")
    key = (tuple(knobs.items()) if knobs else (), *map(attrs.get, _ENGINE_ATTRS))
    made = _ENGINES.get(key)
    if made is None:
        cost = DispatchCostModel.from_attrs(attrs)
        gemm = GemmArray.from_attrs(attrs)
        timing = (
            attrs["composite_tile_bytes"],
            attrs["tcm_bw_gbps"],
            gemm,
            attrs["math_pipeline_cycles"],
            attrs["math_elems_per_cycle"],
            attrs["math_transcendental_elems_per_cycle"],
            attrs["clock_freq_ghz"],
        )
        # one timing object per set of engine parameters, in every PE and run: what a command's service time is kept against
        made = _ENGINES[key] = (cost, gemm, _TIMINGS.setdefault(timing, timing))
    return made


#: Composite plans by the engine timing they were made for, then by composite shape.
PlanCaches = dict[tuple[object, ...], dict[int, Plan]]  # (inner key: CompositeCmd.plan_id)


class ProcessingElement:
    def __init__(
        self,
        env: simpy.Environment,
        graph: Graph,
        network: Network,
        bus: Bus,
        fabric: IpcqFabric,
        pe_id: str,
        program_id: int,
        launch_id: int = 0,
        plan_caches: PlanCaches | None = None,
    ) -> None:
        """``plan_caches``: composite plans shared by the PEs of a run (see :attr:`composite_plans`)."""
        self.env = env
        self.bus = bus
        self.network = network
        self.fabric = fabric
        self.pe_id = pe_id
        self.program_id = program_id
        self.launch_id = launch_id
        node = graph.node(f"{pe_id}.cpu")
        attrs = node.attrs
        self.attrs = attrs
        self.cost, self.gemm_array, self.timing = _engines(attrs)
        # the node's attributes are as the topology file gave them; these are numbers
        self.clock_ghz: float = attrs["clock_freq_ghz"]
        self.cpu_overhead_ns = attrs["cpu_overhead_ns"]
        self.sched_overhead_ns = attrs["sched_overhead_ns"]
        self.queue_depth: int = attrs["sched_queue_depth"]
        self.tcm_bw_gbps = attrs["tcm_bw_gbps"]
        # TCM's ports (pe/tcm.py): FETCH and DMA writes read it, STORE and DMA reads write it
        self.tcm_read = TcmPort(self.tcm_bw_gbps)
        self.tcm_write = self.tcm_read if attrs.get("tcm_port_shared", False) else TcmPort(self.tcm_bw_gbps)
        self.tcm_node = f"{pe_id}.tcm"
        self.scratch_bytes = attrs["scratch_bytes"]
        self.composite_tile_bytes = attrs["composite_tile_bytes"]
        self.composite_buffers: int = attrs.get("composite_buffers", 2)
        self._math_lanes: float = attrs["math_elems_per_cycle"]
        self._math_transcendental_lanes: float = attrs["math_transcendental_elems_per_cycle"]
        self._math_fixed_cycles: float = attrs["math_pipeline_cycles"]
        self.dma_node = f"{pe_id}.dma"
        # the DMA's own port onto the NoC: the rate a write's flits leave at
        self.dma_link_gbps = min(e.bw_gbps for e in graph.edges_from(self.dma_node) if e.kind == "pe_port")
        self.ipcq_node = f"{pe_id}.ipcq"
        self.sched = Lane(f"{pe_id}.sched", bus)
        self.fetch = Lane(f"{pe_id}.fetch", bus)
        self.store = Lane(f"{pe_id}.store", bus)
        self.gemm = Lane(f"{pe_id}.gemm", bus)
        self.math = Lane(f"{pe_id}.math", bus)
        self.rd = Channel(f"{pe_id}.dma.rd", env, bus)
        self.wr = Channel(f"{pe_id}.dma.wr", env, bus)
        self.ipcq = Channel(f"{pe_id}.ipcq", env, bus)
        self.ready: dict[int, Ready] = {}
        self.ready_seq: dict[int, int] = {}  # handle id -> the span that made it ready (recorded runs)
        self.done_seq: dict[int, int] = {}  # command corr id -> the span it completes with (recorded runs)
        self.load_corr: dict[int, int] = {}  # lazy load handle id -> its DMA's corr id
        self.async_stages = 0  # scheduler stages still to reserve lanes from SimPy processes
        self.scheduler = Scheduler(self)
        # composite shape -> its per-tile plan (pe/composite.py), shared with every PE whose engines time one alike
        self.composite_plans: dict[int, Plan] = (plan_caches if plan_caches is not None else {}).setdefault(self.timing, {})
        self.ctx: KernelHooks | None = None  # the live KernelContext (None when replaying)
        self.cpu_busy_ns = 0.0
        self.cpu_stall_ns: dict[str, float] = {}  # PE_CPU's stalls by reason (a StallReason's value), as the STALL events say
        self.done_ns: float | None = None
        self.scale = NO_SCALE

    def scale_work(self, scale: WorkScale) -> None:
        """What-if re-timing: the PE's dispatch charges and lane service times scaled by ``scale``."""
        self.scale = scale
        if not scale.active:
            return
        for lane in [v for v in vars(self).values() if isinstance(v, Lane)]:  # every lane, whatever the PE has
            lane.scale = scale
            lane.engine = LANE_ENGINES.get(lane.component[len(self.pe_id) + 1 :], "")

    def close(self) -> None:
        """The run is over (its accounting read): drop the scheduler, which refers back to the PE,
        so that reference counting frees the finished machine (see ``collector_paused``)."""
        del self.scheduler

    # --- service times (the engines' own parameters) ----------------------

    def gemm_ns(self, m: int, n: int, k: float, a_itemsize: int = 2, b_itemsize: int = 2) -> float:
        """PE_GEMM's time for ``m × k`` by ``k × n`` (:class:`~kernbench.pe.work.GemmArray`)."""
        g = self.gemm_array
        return g.ns(m, n, k, g.peak_ratio(a_itemsize, b_itemsize))

    def math_ns(self, elems: float, rate: str = "plain") -> float:
        """PE_MATH's time for ``elems`` elements of an op kind of ``rate`` (``OpKind.rate``)."""
        lanes = self._math_transcendental_lanes if rate == "transcendental" else self._math_lanes
        return (self._math_fixed_cycles + math.ceil(elems / lanes)) / self.clock_ghz

    def tcm_leaving(self, start: float, nbytes: int, pred: int, corr: int) -> float:
        """A DMA out of TCM whose channel is free at ``start`` reads its bytes on the read port
        (a span of the port's own, ``…peP.tcm``, in recorded runs); when its first flit may leave."""
        port = self.tcm_read
        begin, read, go = port.leaving(start, nbytes, self.dma_link_gbps)
        seq = -1
        if self.bus.active and read > begin:
            _, blocker = port.fit(start, read - begin, start) if begin > start else (begin, pred)
            seq = self.bus.emit(
                begin, EventKind.ENGINE_BUSY, self.tcm_node, end_ns=read, corr_id=corr, label="dma out", value=nbytes, pred=blocker
            )
        port.hold(begin, read, seq)
        return go

    # --- hooks the scheduler calls ----------------------------------------

    def load_landed(self, ref: HandleRef, corr: int, size_bytes: int, seq: int = -1) -> None:
        """A lazy load's data is in TCM (``seq``: its DMA span)."""
        if self.ctx is not None:
            self.ctx.load_landed(ref.id)
        if self.bus.active:
            self.ready_seq[ref.id] = seq
            self.bus.emit(self.env.now, EventKind.LOAD_COMPLETE, f"{self.pe_id}.cpu", corr_id=corr, label=ref.name, value=size_bytes)

    def receive(self, ref: HandleRef, data: Any) -> None:
        if self.ctx is not None and data is not None:
            self.ctx.deliver(ref.id, data)

    def engine_busy_ns(self) -> dict[str, float]:
        return {
            "cpu": self.cpu_busy_ns,
            "sched": self.sched.busy_ns,
            "dma.rd": self.rd.busy_ns,
            "dma.wr": self.wr.busy_ns,
            "fetch": self.fetch.busy_ns,
            "store": self.store.busy_ns,
            "gemm": self.gemm.busy_ns,
            "math": self.math.busy_ns,
            "ipcq": self.ipcq.busy_ns,
        }


class IpcqFabric:
    """Matches sends to posted receives, per (source, destination) in order."""

    def __init__(self) -> None:
        self.pes: dict[tuple[int, int], ProcessingElement] = {}  # (launch, program) -> PE
        # per (launch, source program, destination program): messages no receive took yet,
        # and receives no message reached yet (their landing event and handle)
        self._arrived: dict[tuple[int, int, int], deque[Any]] = {}  # the payloads (numerics: arrays, else None)
        self._posted: dict[tuple[int, int, int], deque[tuple[simpy.Event, HandleRef]]] = {}

    def close(self) -> None:
        """The run is over: let go of the PEs (each refers back to the fabric)."""
        self.pes.clear()
        self._arrived.clear()
        self._posted.clear()

    def pe_of_program(self, launch: int, program: int) -> ProcessingElement:
        return self.pes[(launch, program)]

    def deliver(self, launch: int, src: int, dst: int, data: Any, seq: int = -1) -> None:
        """A message arrived (``seq``: the sender's IPCQ span); it lands in the first receive posted for it."""
        posted = self._posted.get((launch, src, dst))
        if posted:
            landed, ref = posted.popleft()
            self._land(launch, src, dst, landed, ref, data, seq)
        else:
            self._arrived.setdefault((launch, src, dst), deque()).append(data)

    def post(self, launch: int, src: int, dst: int, landed: simpy.Event, ref: HandleRef, seq: int = -1) -> None:
        """A receive is posted (``seq``: its DISPATCH span); a message already here lands at once."""
        arrived = self._arrived.get((launch, src, dst))
        if arrived:
            self._land(launch, src, dst, landed, ref, arrived.popleft(), seq)
        else:
            self._posted.setdefault((launch, src, dst), deque()).append((landed, ref))

    def _land(self, launch: int, src: int, dst: int, landed: simpy.Event, ref: HandleRef, data: Any, seq: int) -> None:
        pe = self.pes[(launch, dst)]
        shape = getattr(data, "shape", None)  # (None when replaying: the live run checked it)
        if shape is not None and tuple(shape) != ref.shape:
            site = pe.ctx.recv_site(ref.id) if pe.ctx is not None else ""
            raise KernelError(
                f"{self._who(launch, dst)}: a message of {_describe(data)} from {self._who(launch, src)} landed in "
                f"{ref.name}, a receive of {ref.dtype} {ref.shape}: a message lands whole, so the receive's shape "
                f"must be the sent value's{site}"
            )
        pe.receive(ref, data)
        if pe.bus.active:
            pe.ready_seq[ref.id] = seq
        landed.succeed(pe.env.now)

    def unmatched(self) -> list[str]:
        out = []
        for (launch, s, d), q in sorted(self._posted.items()):
            if q:
                out.append(f"{self._who(launch, d)} posted {len(q)} receive(s) from {self._who(launch, s)} that no send matched")
        return out + self.lost_messages()

    def lost_messages(self) -> list[str]:
        """One line per (sender, receiver) whose messages no receive took, naming each message."""
        out = []
        for (launch, s, d), q in sorted(self._arrived.items()):
            if q:
                what = ", ".join(_describe(data) for data in q)
                out.append(f"{self._who(launch, s)} sent {len(q)} message(s) to {self._who(launch, d)} that no receive took ({what})")
        return out

    def _who(self, launch: int, program: int) -> str:
        pe = self.pes.get((launch, program))
        return f"{pe.pe_id} (program {program})" if pe is not None else f"program {program}"


def _describe(data: Any) -> str:
    shape = getattr(data, "shape", None)
    return f"{getattr(data, 'dtype', type(data).__name__)} {tuple(shape)}" if shape is not None else type(data).__name__
