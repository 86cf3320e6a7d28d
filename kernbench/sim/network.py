"""Moving bytes over the graph: DMA reads and writes, host transfers, messages.

One :class:`Network` per simulation owns a FIFO per directed edge and the
pseudo-channels of every memory, and offers the transfer primitives the PE
model and the probes use; each returns a SimPy event that succeeds with a
:class:`TransferResult`.

What a transfer costs — the model, the same in both timing modes:

* **Nodes** charge their ``overhead_ns`` once per flit passing (pipelined,
  not a serial resource); **edges** serialize each data flit for
  ``flit_bytes / bw_gbps`` in their FIFO, in arrival order, then add
  ``prop_ns``.
* **Control flits** — a read's request, a write's acknowledgement — carry no
  payload: they cost no serialization, but in every FIFO they cross they
  wait behind the flits already queued there.
* **Memory**: a transfer moves every burst its region touches (one flit per
  burst, each burst once, in address order); each burst is served by the
  pseudo-channel its address selects (:mod:`kernbench.sim.hbm`). A read's
  request queues all its bursts when it arrives; the data flits leave as
  their channels finish. A write's flits queue on their channels as they
  arrive; its acknowledgement leaves when the last burst is written.
* **Sends** (IPCQ) are data flits from one PE to another, done when the
  last one arrives.

Two ways to compute it:

``"oracle"``
    The definition: every flit (data and control) crosses every FIFO as its
    own step, in arrival order (ties: lower transfer number, then flit
    index). Its cost grows with the flit count.
``"fast"`` (default)
    Whole trains per FIFO (:mod:`kernbench.sim.fifo`): closed forms while a
    train is alone in a FIFO, the flit-level merge where trains meet — the
    oracle's answer either way. The data of a read or a send that finds its
    whole route idle is not even planned FIFO by FIFO: its last flit's times
    come from :func:`~kernbench.sim.train.tandem` and the FIFOs hold those
    numbers until someone needs more (:meth:`Fifo.defer`). The cost of a
    transfer grows with its hops, not its size.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypeVarTuple

import simpy

from kernbench.errors import RouteError
from kernbench.events.bus import Bus
from kernbench.events.types import EventKind
from kernbench.sim.clock import Action, call_at, priority
from kernbench.sim.fifo import Fifo, Passage, channels_idle, defer_route, pass_control_route, start_channels
from kernbench.sim.hbm import Bursts, ChannelArray, sub_train
from kernbench.sim.region import Region
from kernbench.sim.train import EPS, Train, fifo, first_difference, tandem, union
from kernbench.sim.transit import FifoLog, Journey, Part, Stop
from kernbench.topology.graph import Graph, Hop, Route

Mode = Literal["fast", "oracle"]
_GRID = 1e9  # the oracle's time grid: 1/EPS (times within EPS are one instant)
MODES: tuple[str, ...] = ("fast", "oracle")
MEMORY_KINDS = ("hbm_slice", "sram")
_TOKENS = itertools.count()  # a control flit's watches, told apart (see _FastTransfer.recheck)
Ts = TypeVarTuple("Ts")


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
    def __init__(self, env: simpy.Environment, graph: Graph, bus: Bus | None = None, mode: Mode = "fast", explain: bool | None = None):
        """``explain``: say where each transfer's time went (:attr:`TransferResult.parts`);
        by default when events are recorded."""
        if mode not in MODES:
            raise ValueError(f"mode must be 'fast' or 'oracle', got {mode!r}")
        self.env = env
        self.graph = graph
        self.bus = bus if bus is not None else Bus()
        self.mode = mode
        self.flit_bytes = graph.flit_bytes
        self._edges: list[Fifo | None] = [None] * len(graph.edges)
        self._memories: dict[str, ChannelArray] = {}
        self._depth_shown: dict[str, tuple[float, float]] = {}  # FIFO name -> (depth, drains at)
        self._next_corr = 1
        self._next_seq = 1
        self.transfers_done = 0
        self.oracle: OracleState | None = OracleState() if mode == "oracle" else None
        # recorded runs say where each transfer's time went (TransferResult.parts)
        self.explain = self.bus.active if explain is None else explain
        self._open: list[tuple[int, float]] = []  # (seq, start) of transfers, a heap; finished ones leave lazily
        self._closed: set[int] = set()
        # trains on idle routes are deferred (Fifo.defer) unless events are published or
        # explained: then every passage is planned (each FIFO's busy span, where the time went)
        self.defer = mode == "fast" and not self.explain
        self._paths: dict[int, Path] = {}  # id(route) -> its FIFOs and pace (routes are cached by the graph)
        self._idle_reads: dict[tuple[int, int], IdleRead] = {}  # (id(route), id(bursts)) -> an idle read's times
        self._idle_times: dict[tuple[object, ...], IdleTimes] = {}  # (bursts per channel, burst time, route's pace) -> those times

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
            if a["burst_bytes"] != self.flit_bytes:
                raise RouteError(
                    f"{node_id}: burst_bytes {a['burst_bytes']} must equal flit_bytes {self.flit_bytes} (one flit carries one burst)"
                )
            base = a.get("slice", 0) * a["channels"]
            mem = ChannelArray(node_id, base, a["channels"], a["burst_bytes"], a["channel_bw_gbps"], self.explain)
            self._memories[node_id] = mem
        return mem

    def edge_fifo(self, index: int) -> Fifo:
        f = self._edges[index]
        if f is None:
            e = self.graph.edges[index]
            f = self._edges[index] = Fifo(e.id, self.flit_bytes / e.bw_gbps, self.explain)
        return f

    @property
    def deferring(self) -> bool:
        """Whether a transfer starting now may defer its data train (nobody observing the bus)."""
        return self.defer and not self.bus.active

    def path(self, route: Route) -> Path:
        """``route``'s FIFOs and pace."""
        path = self._paths.get(id(route))
        if path is None:
            path = self._paths[id(route)] = Path([self.edge_fifo(hop.edge.index) for hop in route.hops], route)
        return path

    def idle_read(self, route: Route, mem: ChannelArray, bursts: Bursts) -> IdleRead:
        """The times of a read of ``bursts`` whose channels and data ``route`` are idle
        (routes and the layouts of contiguous regions are kept, so these are kept for
        them by identity; a strided layout's are worked out per read, from times
        kept per shape)."""
        key = (id(route), id(bursts))
        plan = self._idle_reads.get(key) if bursts.kept else None
        if plan is None:
            counts = [(c, bursts.count(c)) for c, flits in enumerate(bursts.per_channel) if flits is not None]
            path = self.path(route)
            service, delay = path.service, path.delay
            shape = (tuple(sorted(n for _c, n in counts)), mem.burst_ns, tuple(service), tuple(delay))
            times = self._idle_times.get(shape)
            if times is None:
                times = self._idle_times[shape] = IdleTimes.of(shape[0], mem.burst_ns, service, delay)
            plan = IdleRead(mem, counts, times)
            if bursts.kept:
                self._idle_reads[key] = plan
        return plan

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
        reg = self._region(memory, offset, size_bytes, region, stride_bytes)
        return self._start("read", kind, initiator, memory, reg, corr_id)

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
        reg = self._region(memory, offset, size_bytes, region, stride_bytes)
        return self._start("write", kind, initiator, memory, reg, corr_id)

    def send(self, src: str, dst: str, size_bytes: int, *, kind: str = "ipcq", corr_id: int | None = None) -> simpy.Event:
        """Move ``size_bytes`` from ``src`` to ``dst``; done when the last flit arrives."""
        if size_bytes <= 0:
            raise ValueError(f"transfer size must be positive, got {size_bytes}")
        return self._start("send", kind, src, dst, Region.contiguous(0, size_bytes), corr_id)

    def flush(self) -> None:
        """Publish the final queue-drain points (call once the run has ended)."""
        if not self.bus.active:
            return
        for name, (depth, drains) in sorted(self._depth_shown.items()):
            if depth > 0:
                self.bus.emit(drains, EventKind.QUEUE_DEPTH, name, value=0.0)
        self._depth_shown.clear()

    # --- set-up -------------------------------------------------------------

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

    def _start(self, op: str, kind: str, src: str, dst: str, region: Region, corr_id: int | None) -> simpy.Event:
        # both routes now: an impossible one fails at the call, not inside the simulation
        there = self.graph.route(src, dst)
        back = self.graph.route(dst, src) if op != "send" else there
        corr = corr_id if corr_id is not None else self.new_corr_id()
        seq = self._next_seq
        self._next_seq += 1
        done = self.env.event()
        now = self.env.now
        if self.bus.active:
            self.bus.emit(now, EventKind.TRANSFER_START, src, corr_id=corr, label=kind, value=region.nbytes, detail=f"{src}=>{dst}")
        if self.explain:
            heapq.heappush(self._open, (seq, now))
        cls = _FastTransfer if self.mode == "fast" else _OracleTransfer
        cls(self, op, kind, src, dst, region, corr, seq, done, there, back).start()
        return done

    def horizon(self) -> float:
        """When the oldest transfer still running started (nothing before it can matter to a running one)."""
        heap = self._open
        while heap and heap[0][0] in self._closed:
            self._closed.discard(heapq.heappop(heap)[0])
        return heap[0][1] if heap else self.env.now

    # --- shared by both engines ------------------------------------------

    def _finish(self, tr: _Transfer) -> None:
        self.transfers_done += 1
        now = self.env.now
        parts: tuple[Part, ...] = ()
        if self.explain:
            parts = tr.parts(now)
            self._closed.add(tr.seq)
        if self.bus.active:
            tr.publish()
            self.bus.emit(
                now, EventKind.TRANSFER_END, tr.src, corr_id=tr.corr, label=tr.kind, value=tr.region.nbytes, detail=f"{tr.src}=>{tr.dst}"
            )
        tr.done.succeed(TransferResult(tr.corr, tr.kind, tr.src, tr.dst, tr.region.nbytes, tr.t0, now, parts))


class _Transfer:
    """What both engines know of one transfer."""

    __slots__ = (
        "back",
        "bursts",
        "corr",
        "done",
        "dst",
        "env",
        "kind",
        "mem",
        "net",
        "op",
        "prio",
        "region",
        "seq",
        "src",
        "t0",
        "there",
    )

    def __init__(
        self,
        net: Network,
        op: str,
        kind: str,
        src: str,
        dst: str,
        region: Region,
        corr: int,
        seq: int,
        done: simpy.Event,
        there: Route,
        back: Route,
    ):
        self.net = net
        self.there = there  # src -> dst
        self.back = back  # dst -> src
        self.env = net.env
        self.op = op
        self.kind = kind
        self.src = src
        self.dst = dst
        self.region = region
        self.corr = corr
        self.seq = seq
        self.done = done
        self.t0 = net.env.now
        self.prio = priority(seq)
        if op == "send":
            self.mem = None
            self.bursts = None
        else:
            self.mem = net.memory(dst)
            self.bursts = self.mem.bursts(region)

    def _memory(self) -> tuple[ChannelArray, Bursts]:
        """The memory end and how the region's bursts fall on it (reads and writes; a send has none)."""
        mem, bursts = self.mem, self.bursts
        assert mem is not None and bursts is not None, "a send has no memory end"
        return mem, bursts

    @property
    def flits(self) -> int:
        if self.bursts is not None:
            return self.bursts.n
        return -(-self.region.nbytes // self.net.flit_bytes)

    def publish(self) -> None:  # pragma: no cover - both engines define it
        raise TypeError

    def parts(self, end: float) -> tuple[Part, ...]:
        """Where the critical flit spent ``[t0, end]`` (see :mod:`kernbench.sim.transit`)."""
        j = Journey(self.t0)
        if self.op == "read":
            r = self._request(j)
            self._channel(j, r)
            self._data(j, end)
        elif self.op == "send":
            self._data(j, end)
        else:
            m = self._data(j, None)
            self._channel(j, m)
            self._ack(j, end)
        j.to(end, self.src, "overhead")  # (nothing: every leg ends at its arrival)
        return tuple(j.parts)

    def _request(self, j: Journey) -> float:  # pragma: no cover - both engines define it
        raise TypeError

    def _channel(self, j: Journey, arrive: float) -> None:  # pragma: no cover
        raise TypeError

    def _data(self, j: Journey, end: float | None) -> float:  # pragma: no cover
        raise TypeError

    def _ack(self, j: Journey, end: float) -> None:  # pragma: no cover
        raise TypeError


# --- fast: trains through FIFOs ----------------------------------------------


class _FastTransfer(_Transfer):
    """A transfer as trains through FIFOs; see :mod:`kernbench.sim.fifo`.

    Everything is planned when the transfer starts: its data train FIFO by
    FIFO along the route (each :meth:`~kernbench.sim.fifo.Fifo.arrive`
    re-plans that FIFO), and its control flit (a read's request, a write's
    acknowledgement) hop by hop from each FIFO's :meth:`finish_before`. A
    FIFO that later re-plans tells the passages whose departures changed
    (the change reaches the next FIFO at the instant the first changed flit
    would arrive there) and re-checks the control flits due to cross it.
    A read's bursts queue on their channels when its request arrives (an
    action at that instant); the completion is an action at the last flit's
    arrival, moved whenever that changes.

    A read's or a send's data train that finds its whole route idle is
    deferred instead (:meth:`Fifo.defer`): an idle read takes its times from
    an :class:`IdleRead` worked out once per route and layout, anything else
    from :func:`tandem`; the FIFOs hold two numbers each, and whoever needs
    the flits calls :meth:`materialize`.
    """

    __slots__ = (
        "ack_route",
        "ch",
        "crit",
        "ctl",
        "data",
        "data_in",
        "deferred",
        "finish_at",
        "head_at",
        "hz",
        "idle",
        "mem_at",
        "mem_train",
        "route",
        "tied",
    )

    def start(self) -> None:
        now = self.env.now
        self.data: list[Passage] = []
        self.ch: dict[int, Passage | _Reserved] = {}  # per memory channel: its bursts
        self.finish_at: Action | None = None
        self.mem_at: Action | None = None
        self.head_at: Action | None = None
        self.ctl: _ControlPlan | None = None
        self.deferred: list[float] | None = None  # deferred: when the work queued on each FIFO of the data route was done
        self.idle: tuple[float, IdleRead] | None = None  # a read planned by _idle_read: when its request arrived, and how
        if self.op == "read":
            req = self.there
            self.route = self.back
            self._plan_control(req, now + req.src_overhead_ns, self._request_arrives)
            return
        self.route = self.there
        if self.op == "write":
            self.ack_route = self.back
        self.data_in = Train.burst(self.flits, now + self.route.src_overhead_ns)
        if not (self.op == "send" and self.net.deferring and self._defer_data()):
            self._plan_data()

    # --- control flits -----------------------------------------------------

    def _plan_control(self, route: Route, t: float, then: Callable[[float], None]) -> None:
        self.ctl = _ControlPlan(route, then, [], [])
        self._control_from(0, t)

    def _control_from(self, h: int, t: float) -> None:
        """(Re-)plan the control flit from hop ``h``, where it arrives at ``t``."""
        assert self.ctl is not None
        route, then, tokens, times = self.ctl
        del tokens[h:]
        del times[h:]
        token = next(_TOKENS)  # this plan's, from hop h on: never one a superseded watch holds
        tokens.extend([token] * (len(route.hops) - h))
        net = self.net
        path = net.path(route)
        fifos, delay = path.fifos, path.delay
        then(pass_control_route(fifos, delay, h, t, self.seq, self, token, self.env.now, times if net.explain else None))

    def recheck(self, h: int, t: float, d_old: float, token: int) -> None:
        ctl = self.ctl
        if ctl is None:
            return  # done
        tokens = ctl.tokens
        if h >= len(tokens) or tokens[h] != token:
            return  # superseded by a re-plan from an earlier hop
        hop = ctl.route.hops[h]
        if abs(self.net.edge_fifo(hop.edge.index).finish_before(t, self.seq) - d_old) > EPS:
            self._control_from(h, t)

    def _request_arrives(self, t: float) -> None:
        if self.mem_at is not None:
            if abs(self.mem_at.args[0] - t) <= EPS and self.mem_at.pending:
                return
            self.mem_at.cancel()
        self.mem_at = call_at(self.env, t, self.prio, self._mem_read, t)

    # --- data ----------------------------------------------------------------

    def _mem_read(self, _t: float) -> None:
        """The request is here: queue every burst on its channel; the data train leaves."""
        now = self.env.now
        mem, bursts = self._memory()
        if self.net.deferring and self._idle_read(mem, bursts, now):
            return
        b = mem.burst_ns
        progs = []
        self.crit = (-1, now, now)  # the channel whose last burst leaves last: (channel, request arrival, departure)
        for c, flits in enumerate(bursts.per_channel):
            if flits is None:
                continue
            cnt = bursts.count(c)
            f = mem.fifos[c]
            start = f.reserve(now, cnt, self.seq, self.corr)
            if start is None:  # the channel is still receiving: merge flit by flit
                p = Passage(self.seq, self.corr, Train.burst(cnt, now))
                f.arrive(p, now)
                self.ch[c] = p
                start = p.out.first() - b
            elif self.net.bus.active:
                self.ch[c] = _Reserved(f, start, cnt)
            progs.append((start, cnt))
            if start + cnt * b >= self.crit[2]:
                self.crit = (c, now, start + cnt * b)
        if self.net.explain:  # several channels send their last bursts at once: no one of them is critical
            self.tied = sum(1 for start, cnt in progs if self.crit[2] - (start + cnt * b) <= EPS) > 1
        self.data_in = union(progs, b)
        if not (self.net.deferring and self._defer_data()):
            self._plan_data()

    def _idle_read(self, mem: ChannelArray, bursts: Bursts, now: float) -> bool:
        """Channels and data route idle, nothing queued where the head will be: the
        channels start now and the data train is deferred with the times worked out
        for this route and layout (:class:`IdleRead`); else ``False``, nothing done."""
        net = self.net
        plan = net.idle_read(self.route, mem, bursts)
        fifos = net.path(self.route).fifos
        if not channels_idle(plan.channels, now):
            return False
        queued = defer_route(fifos, plan.heads, plan.lasts, self, bursts.n, now)
        if queued is None:
            return False
        start_channels(plan.channels, now)
        self.idle = (now, plan)  # the data train, should it materialize
        self.deferred = queued
        self._finish_at(now + plan.finish)
        return True

    def _defer_data(self) -> bool:
        """Plan the data train in closed form if its whole route is idle (see :meth:`Fifo.defer`)."""
        now = self.env.now
        route = self.route
        path = self.net.path(route)
        fifos = path.fifos
        for f in fifos:
            if not f.idle_at(now):
                return False
        queued = [f.v_end for f in fifos]
        service, delay = path.service, path.delay
        times = tandem(self.data_in, service, queued, delay)
        n = self.data_in.n
        for f, (t_last, v_end) in zip(fifos, times, strict=True):
            f.defer(self, n, t_last, v_end)
        self.deferred = queued
        self._finish_at(times[-1][1] + delay[-1])
        return True

    def materialize(self) -> None:
        """The deferred data train as passages, planned as :meth:`_plan_data` would have
        when the request arrived (a send: when it started) — nothing has changed its
        route since, or it would have asked first; FIFOs it has fully passed keep
        their folded numbers."""
        deferred = self.deferred
        if deferred is None:
            return
        self.deferred = None
        if self.idle is not None:  # the data train of an idle read: the channels' output from the request's arrival
            r, plan = self.idle
            self.data_in = union([(r, n) for _c, n in plan.counts], self._memory()[0].burst_ns)
        for h, (f, v) in enumerate(zip(self.net.path(self.route).fifos, deferred, strict=True)):
            p = Passage(self.seq, self.corr, self._input(h), self._changed)
            p.fifo = f
            head = p.inp.first()
            p.out = fifo(p.inp, f.s, v if v > head else head)
            self.data.append(p)
            if f.take_deferred(self):
                f.place_alone(p, v)
        if self.done.triggered:  # (a finished transfer's FIFOs only fold)
            for p in self.data:
                p.on_change = None
            return
        if self.finish_at is not None and self.finish_at.pending:  # (not when it publishes, finishing)
            last = self.route.hops[-1]
            self._finish_at(self.data[-1].out.last() + last.prop_ns + last.next_overhead_ns)

    def _input(self, h: int) -> Train:
        if h == 0:
            return self.data_in
        hop = self.route.hops[h - 1]
        return self.data[h - 1].out.shift(hop.prop_ns + hop.next_overhead_ns)

    def _plan_data(self, _t: float = 0.0) -> None:
        """Plan the data train FIFO by FIFO from the first not yet planned.

        Through idle FIFOs it is planned at once; at a FIFO that still has
        other trains coming, planning waits for the instant the head gets
        there (then only trains still arriving are re-planned, in arrival
        order, instead of every train planned ahead).
        """
        net = self.net
        now = self.env.now
        hops = self.route.hops
        self.head_at = None
        for h in range(len(self.data), len(hops)):
            inp = self._input(h)
            f = net.edge_fifo(hops[h].edge.index)
            head = inp.first()
            if head > now + EPS and f.busy_after(now):
                self.head_at = call_at(self.env, head, self.prio, self._plan_data, head)
                return
            p = Passage(self.seq, self.corr, inp, self._changed)
            self.data.append(p)
            f.arrive(p, now)
        last = hops[-1]
        arrival = self.data[-1].out.shift(last.prop_ns + last.next_overhead_ns)
        if self.op == "write":
            self._at_memory(arrival)
        else:
            self._finish_at(arrival.last())

    def _changed(self, p: Passage, k: int) -> None:
        """Passage ``p``'s departures changed from flit ``k`` on."""
        h = self.data.index(p)
        hop = self.route.hops[h]
        delay = hop.prop_ns + hop.next_overhead_ns
        if h + 1 < len(self.data):
            nxt = self.data[h + 1]
            nxt.fifo.amend(nxt, self._input(h + 1), min(p.out.at(k) + delay, nxt.inp.at(k)), self.env)
        elif h + 1 < len(self.route.hops):
            if k == 0 and self.head_at is not None:  # the head itself moved: so does its arrival
                self.head_at.cancel()
                t = p.out.first() + delay
                self.head_at = call_at(self.env, t, self.prio, self._plan_data, t)
        else:
            if self.op == "write":
                self._memory_changed(p.out.shift(delay))
            else:
                self._finish_at(p.out.last() + delay)

    def _finish_at(self, t: float) -> None:
        old = self.finish_at
        if old is not None:
            if old.pending and old.args[0] == t:
                return
            old.cancel()
        self.finish_at = call_at(self.env, t, self.prio + 2, self._finish, t)

    def _finish(self, _t: float) -> None:
        self.net._finish(self)
        # let go of everything a finished transfer held (FIFOs may still hold its passages)
        for p in self.data:
            p.on_change = None
        for q in self.ch.values():
            if isinstance(q, Passage):
                q.on_change = None
        self.ctl = None
        self.finish_at = self.mem_at = self.head_at = None

    # --- writes: the channels, then the acknowledgement ----------------------

    def _at_memory(self, train: Train) -> None:
        now = self.env.now
        mem, bursts = self._memory()
        self.mem_train = train
        for c, flits in enumerate(bursts.per_channel):
            if flits is None:
                continue
            p = Passage(self.seq, self.corr, sub_train(train, flits), self._ch_changed)
            self.ch[c] = p
            mem.fifos[c].arrive(p, now)
        self._plan_ack()

    def _plan_ack(self) -> None:
        done = max(p.out.last() for p in self.ch.values())
        self._plan_control(self.ack_route, done, self._finish_at)

    def _ch_changed(self, _p: Passage, _k: int) -> None:
        self._plan_ack()

    def _memory_changed(self, train: Train) -> None:
        self.mem_train = train
        for c, flits in enumerate(self._memory()[1].per_channel):
            if flits is None:
                continue
            p = self.ch[c]
            assert isinstance(p, Passage)  # a write's channels: passages, never reservations
            sub = sub_train(train, flits)
            k = first_difference(p.inp, sub, 0)
            if k < sub.n:
                p.fifo.amend(p, sub, min(p.inp.at(k), sub.at(k)), self.env)

    # --- where the time went (recorded runs) -----------------------------------

    def parts(self, end: float) -> tuple[Part, ...]:
        self.hz = self.net.horizon()
        return super().parts(end)

    def _stops(self, passages: list[Passage], k: int) -> list[Stop]:
        out = []
        for p in passages:
            f = p.fifo
            a, d = p.inp.at(k), p.out.at(k)
            out.append(Stop(a, d, f.s, f.shares(a, d - f.s, self.seq, self.hz)))
        return out

    def _control_stops(self) -> tuple[Route, list[Stop]]:
        assert self.ctl is not None
        route, _then, _tokens, times = self.ctl
        net = self.net
        return route, [
            Stop(t, d, 0.0, net.edge_fifo(hop.edge.index).shares(t, d, self.seq, self.hz))
            for (t, d), hop in zip(times, route.hops, strict=True)
        ]

    def _request(self, j: Journey) -> float:
        route, stops = self._control_stops()
        r = self.crit[1]
        j.leg(route, stops, r, data=False)
        return r

    def _write_crit(self) -> tuple[int, Passage | _Reserved]:
        """A write's last burst to be written: (channel, its passage)."""
        c = max(self.ch, key=lambda c: (self.ch[c].out.last(), c))
        return c, self.ch[c]

    def _channel(self, j: Journey, arrive: float) -> None:
        mem = self._memory()[0]
        b = mem.burst_ns
        if self.op == "read":
            c, _r, d = self.crit
            tied = self.tied
        else:
            c, p = self._write_crit()
            d = p.out.last()
            tied = sum(1 for q in self.ch.values() if d - q.out.last() <= EPS) > 1
        f = mem.fifos[c]
        j.fifo(f.name, Stop(arrive, d, b, f.shares(arrive, d - b, self.seq, self.hz)), "drain", mem.node_id if tied else f.name)

    def _data(self, j: Journey, end: float | None) -> float:
        k = self.flits - 1 if self.op != "write" else self._memory()[1].last(self._write_crit()[0])
        arrive = end if end is not None else self.mem_train.at(k)
        j.leg(self.route, self._stops(self.data, k), arrive, data=True)
        return arrive

    def _ack(self, j: Journey, end: float) -> None:
        route, stops = self._control_stops()
        j.leg(route, stops, end, data=False)

    def publish(self) -> None:
        bus = self.net.bus
        self.materialize()  # (a train deferred before anyone subscribed to the bus)
        for p in self.data:
            f = p.fifo
            head = p.inp.first()
            served = p.out.first() - f.s
            if served > head + EPS:  # others' flits were ahead of its head
                bus.emit(head, EventKind.QUEUE_DEPTH, f.name, corr_id=self.corr, value=round((served - head) / f.s, 6))
                bus.emit(served, EventKind.QUEUE_DEPTH, f.name, corr_id=self.corr, value=0.0)
            bus.emit(served, EventKind.EDGE_BUSY, f.name, end_ns=p.out.last(), corr_id=self.corr, value=p.n)
        mem = self.mem.node_id if self.mem is not None else ""
        for c in sorted(self.ch):
            q = self.ch[c]
            bus.emit(
                q.out.first() - q.fifo.s, EventKind.CHANNEL_BUSY, q.fifo.name, end_ns=q.out.last(), corr_id=self.corr, label=mem, value=q.n
            )


class Path:
    """A route as the engine walks it: per hop its FIFO, the FIFO's service per flit,
    and the delay from leaving it to the next FIFO (propagation, the next node)."""

    __slots__ = ("delay", "fifos", "service")

    def __init__(self, fifos: list[Fifo], route: Route) -> None:
        self.fifos = fifos
        self.service = [f.s for f in fifos]
        self.delay = [hop.prop_ns + hop.next_overhead_ns for hop in route.hops]


class IdleTimes(NamedTuple):
    """When an idle read's data passes each FIFO of its route, relative to the request's
    arrival (nothing queued anywhere): it depends only on how many bursts each
    channel serves and the route's pace, so routes and slices alike share it."""

    lasts: list[tuple[float, float]]  # per hop: the last flit's arrival, departure
    heads: list[float]  # per hop: the head's arrival
    finish: float  # the last flit's arrival at the far end

    @classmethod
    def of(cls, counts: tuple[int, ...], burst_ns: float, service: list[float], delay: list[float]) -> IdleTimes:
        data = union([(0.0, n) for n in counts], burst_ns)
        lasts = tandem(data, service, [float("-inf")] * len(service), delay)
        heads = [data.first()]
        for s, dl in zip(service[:-1], delay[:-1], strict=True):
            heads.append(heads[-1] + s + dl)
        return cls(lasts, heads, lasts[-1][1] + delay[-1])


class IdleRead:
    """A read's data on idle channels and an idle route: what :meth:`_FastTransfer._mem_read`
    and :func:`tandem` would compute when nothing is queued anywhere, worked out
    once per (route, layout)."""

    __slots__ = ("channels", "counts", "finish", "heads", "lasts")

    def __init__(self, mem: ChannelArray, counts: list[tuple[int, int]], times: IdleTimes) -> None:
        self.counts = counts  # (channel, bursts)
        self.channels = [(mem.fifos[c], n, n * mem.fifos[c].s) for c, n in counts]  # (FIFO, bursts, busy time)
        self.lasts, self.heads, self.finish = times


class _ControlPlan(NamedTuple):
    """A control flit's plan (a read's request, a write's acknowledgement): hop by hop,
    the token of its watch on that hop's FIFO and (recorded runs) its (arrival, departure) there."""

    route: Route
    then: Callable[[float], None]  # called with its arrival at the far end
    tokens: list[int]
    times: list[tuple[float, float]]


class _Reserved:
    """A read's bursts on an idle channel: no passage needed, only what to publish."""

    __slots__ = ("fifo", "n", "out")

    def __init__(self, fifo: Fifo, start: float, count: int) -> None:
        self.fifo = fifo
        self.n = count
        self.out = Train(count, [(0, start + fifo.s, 0.0, 1, fifo.s)])


# --- oracle: flit by flit ------------------------------------------------------


@dataclass(slots=True)
class _Run:
    """Consecutive flits of one transfer in an oracle FIFO: whose, and when the last leaves."""

    owner: int  # seq
    last: float


class OracleState:
    """The flit-level FIFOs, and what the tests need to judge the fast mode.

    Per FIFO and transfer it records when the transfer's first and last data
    flit arrived, and whose work its first flit (data or control) queued
    behind: :meth:`disturbed` names the transfers whose flits arrived among
    another's somewhere, or that queued behind such a transfer.
    """

    def __init__(self) -> None:
        self.free: dict[object, float] = {}
        self.queue: dict[object, list[_Run]] = {}  # FIFO -> runs of one owner's flits
        self.window: dict[object, dict[int, list[float]]] = {}
        self.behind: dict[int, set[int]] = {}
        self.corr_of: dict[int, int] = {}
        self.logs: dict[object, FifoLog] = {}  # per FIFO, who it served when (recorded runs)

    def shares(self, key: object, x: float, y: float, seq: int) -> tuple[tuple[int, float], ...]:
        log = self.logs.get(key)
        return log.shares(x, y, seq) if log is not None else ()

    def serve(self, key: object, t: float, s: float, seq: int, data: bool, log: bool = False) -> float:
        """A flit of ``seq`` arrives at FIFO ``key`` at ``t``; when it leaves."""
        free = self.free.get(key, 0.0)
        start = t if t > free else free
        runs = self.queue.get(key)
        if runs:
            while runs and runs[0].last <= t:
                runs.pop(0)
            for run in runs:  # whose flits are still ahead of this one
                if run.owner != seq:
                    self.behind.setdefault(seq, set()).add(run.owner)
        wins = self.window.get(key)
        if wins and not data:
            for owner, (first, last) in wins.items():  # whose flits are still arriving around it
                if first <= t <= last and owner != seq:
                    self.behind.setdefault(seq, set()).add(owner)
        if not data:
            return start
        w = self.window.setdefault(key, {}).get(seq)
        if w is None:
            self.window[key][seq] = [t, t]
        else:
            w[1] = t
        end = start + s
        self.free[key] = end
        if log:
            fl = self.logs.get(key)
            if fl is None:
                fl = self.logs[key] = FifoLog()
            fl.add(start, end, seq, self.corr_of.get(seq, -1))
        if runs is None:
            runs = self.queue[key] = []
        if runs and runs[-1].owner == seq:
            runs[-1].last = end
        else:
            runs.append(_Run(seq, end))
        return end

    def disturbed(self) -> set[int]:
        """Corr ids of transfers whose flits interleaved with another's, directly or behind one."""
        bad: set[int] = set()
        for wins in self.window.values():
            spans = sorted((w[0], seq, w[1]) for seq, w in wins.items())
            reach, reach_seq = float("-inf"), -1
            for start, seq, end in spans:
                if start < reach or (start == reach and seq < reach_seq):
                    bad.add(seq)
                    bad.add(reach_seq)
                if end > reach or (end == reach and seq > reach_seq):
                    reach, reach_seq = end, seq
            # an earlier window reaching past a later one's start marks both (above);
            # windows nested inside a long one also overlap the long one
        changed = True
        while changed:
            changed = False
            for seq, blockers in self.behind.items():
                if seq not in bad and blockers & bad:
                    bad.add(seq)
                    changed = True
        return {self.corr_of[s] for s in bad if s in self.corr_of}


class _OracleTransfer(_Transfer):
    """A transfer flit by flit: every flit's step through every FIFO is an action."""

    __slots__ = ("ack_route", "at", "crit", "ctl_at", "end", "left", "mem_done", "mem_r", "orc", "per_burst_ch", "route", "served")

    def start(self) -> None:
        net = self.net
        now = self.env.now
        orc = net.oracle
        assert orc is not None  # an oracle-mode network's
        self.orc = orc
        orc.corr_of[self.seq] = self.corr
        n = self.flits
        self.left = n
        self.end = 0.0
        self.mem_done = 0.0
        self.served: list[tuple[EventKind, str, float, float]] = []
        # recorded runs: each flit's (arrival, departure) per FIFO (hop index; -1: its channel),
        # the control flit's per hop, and the critical flit
        self.at: dict[tuple[int, int], tuple[float, float]] = {}
        self.ctl_at: list[tuple[float, float]] = []
        self.crit = n - 1
        self.mem_r = now
        if self.mem is not None:
            ids = self.region.bursts(self.mem.burst_bytes)
            self.per_burst_ch = [int(i) % self.mem.channels for i in ids]
        if self.op == "read":
            req = self.there
            self.route = self.back
            self._control(req, 0, now + req.src_overhead_ns, self._mem_read)
            return
        self.route = self.there
        if self.op == "write":
            self.ack_route = self.back
        t = now + self.route.src_overhead_ns
        for k in range(n):
            self._at(t, self._fprio(k), self._flit, k, 0)

    def _fprio(self, k: int) -> int:
        return 2 + (self.seq << 24) + k

    def _at(self, t: float, prio: int, fn: Callable[[*Ts], object], *args: *Ts) -> None:
        """Schedule a flit's next step. Times are kept on a 1e-9 ns grid, so that
        instants the model makes equal are equal here too and go in transfer
        order, not in the order floating-point rounding happened to leave them."""
        call_at(self.env, round(t * _GRID) / _GRID, prio, fn, *args)

    def _control(self, route: Route, h: int, t: float, then: Callable[[], None]) -> None:
        if h == 0:
            self.ctl_at = []
        if h == len(route.hops):
            self._at(t, self._fprio(0), then)
            return
        self._at(t, self._fprio(0), self._control_hop, route, h, then)

    def _control_hop(self, route: Route, h: int, then: Callable[[], None]) -> None:
        hop = route.hops[h]
        d = self.orc.serve(hop.edge.index, self.env.now, 0.0, self.seq, data=False)
        if self.net.explain:
            self.ctl_at.append((self.env.now, d))
        self._control(route, h + 1, d + hop.prop_ns + hop.next_overhead_ns, then)

    def _mem_read(self) -> None:
        now = self.env.now
        mem = self._memory()[0]
        orc = self.orc
        explain = self.net.explain
        self.mem_r = now
        for k, c in enumerate(self.per_burst_ch):
            key = (mem.node_id, c)
            d = orc.serve(key, now, mem.burst_ns, self.seq, data=True, log=explain)
            if explain:
                self.at[(k, -1)] = (now, d)
            if self.net.bus.active:
                self.served.append((EventKind.CHANNEL_BUSY, mem.channel_name(c), d - mem.burst_ns, d))
            self._at(d, self._fprio(k), self._flit, k, 0)

    def _flit(self, k: int, h: int) -> None:
        hop = self.route.hops[h]
        now = self.env.now
        explain = self.net.explain
        d = self.orc.serve(hop.edge.index, now, hop.flit_ns, self.seq, data=True, log=explain)
        if explain:
            self.at[(k, h)] = (now, d)
        if self.net.bus.active:
            self.served.append((EventKind.EDGE_BUSY, hop.edge.id, d - hop.flit_ns, d))
        t = d + hop.prop_ns + hop.next_overhead_ns
        if h + 1 < len(self.route.hops):
            self._at(t, self._fprio(k), self._flit, k, h + 1)
            return
        if self.op == "write":
            self._at(t, self._fprio(k), self._write_burst, k)
            return
        self._arrived(t, k)

    def _arrived(self, t: float, k: int) -> None:
        if t >= self.end:
            self.crit = k
        self.end = max(self.end, t)
        self.left -= 1
        if self.left == 0:
            call_at(self.env, self.end, self.prio + 2, self.net._finish, self)

    def _write_burst(self, k: int) -> None:
        mem = self._memory()[0]
        c = self.per_burst_ch[k]
        explain = self.net.explain
        d = self.orc.serve((mem.node_id, c), self.env.now, mem.burst_ns, self.seq, data=True, log=explain)
        if explain:
            self.at[(k, -1)] = (self.env.now, d)
            if d >= self.mem_done:
                self.crit = k
        if self.net.bus.active:
            self.served.append((EventKind.CHANNEL_BUSY, mem.channel_name(c), d - mem.burst_ns, d))
        self.mem_done = max(self.mem_done, d)
        self.left -= 1
        if self.left == 0:
            self._control(self.ack_route, 0, self.mem_done, lambda: self.net._finish(self))

    # --- where the time went (recorded runs) -----------------------------------

    def _leg_stops(
        self, route: Route, times: list[tuple[float, float]], s_of: Callable[[Hop], float], key_of: Callable[[Hop], object]
    ) -> list[Stop]:
        orc = self.orc
        out = []
        for h, (a, d) in enumerate(times):
            s = s_of(route.hops[h])
            out.append(Stop(a, d, s, orc.shares(key_of(route.hops[h]), a, d - s, self.seq)))
        return out

    def _request(self, j: Journey) -> float:
        route = self.there
        j.leg(route, self._leg_stops(route, self.ctl_at, lambda _hop: 0.0, lambda hop: hop.edge.index), self.mem_r, data=False)
        return self.mem_r

    def _channel(self, j: Journey, arrive: float) -> None:
        mem = self._memory()[0]
        c = self.per_burst_ch[self.crit]
        _a, d = self.at[(self.crit, -1)]
        b = mem.burst_ns
        shares = self.orc.shares((mem.node_id, c), arrive, d - b, self.seq)
        # several channels send their last bursts at once: no one of them is critical
        last = {ch: 0.0 for ch in self.per_burst_ch}
        for k, ch in enumerate(self.per_burst_ch):
            last[ch] = max(last[ch], self.at[(k, -1)][1])
        tied = sum(1 for t in last.values() if d - t <= EPS) > 1
        j.fifo(mem.channel_name(c), Stop(arrive, d, b, shares), "drain", mem.node_id if tied else mem.channel_name(c))

    def _data(self, j: Journey, end: float | None) -> float:
        k = self.crit
        route = self.route
        times = [self.at[(k, h)] for h in range(len(route.hops))]
        last = route.hops[-1]
        arrive = end if end is not None else times[-1][1] + last.prop_ns + last.next_overhead_ns
        j.leg(route, self._leg_stops(route, times, lambda hop: hop.flit_ns, lambda hop: hop.edge.index), arrive, data=True)
        return arrive

    def _ack(self, j: Journey, end: float) -> None:
        route = self.ack_route
        j.leg(route, self._leg_stops(route, self.ctl_at, lambda _hop: 0.0, lambda hop: hop.edge.index), end, data=False)

    def publish(self) -> None:
        bus = self.net.bus
        mem = self.mem.node_id if self.mem is not None else ""
        for kind, name, start, end in self.served:
            label = mem if kind == EventKind.CHANNEL_BUSY else ""
            bus.emit(start, kind, name, end_ns=end, corr_id=self.corr, label=label, value=1)
