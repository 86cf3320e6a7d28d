"""The oracle timing mode: every flit, data and control, through every FIFO as its own step.

Contract. :class:`OracleEngine` is the definition of the model
(``docs/timing.md``): each flit crosses each FIFO in arrival order (same
instant: lower transfer ``seq``, then flit index — :mod:`kernbench.sim.clock`),
control flits cost no service but wait behind flits already queued, every
burst queues on the channel its address selects. Its cost grows with flits
× hops. In recorded runs it keeps who each FIFO served when
(:class:`~kernbench.sim.transit.FifoLog`), to say where a transfer's time went.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVarTuple

from kernbench.events.types import EventKind
from kernbench.sim.clock import FINISH, call_at, priority
from kernbench.sim.fidelity import BankedChannels, BankTiming, CreditLinks
from kernbench.sim.train import EPS
from kernbench.sim.transfer import Transfer, TransferEngine
from kernbench.sim.transit import FifoLog, Journey, Stop
from kernbench.topology.graph import Hop, Route

if TYPE_CHECKING:
    from kernbench.sim.network import Network

Ts = TypeVarTuple("Ts")
_GRID = 1e9  # the time grid: 1/EPS (times within EPS are one instant)


class OracleState:
    """The flit-level FIFOs of one network: when each is free, and (recorded runs) who it
    served when."""

    def __init__(self, links: CreditLinks | None = None, banked: bool = False) -> None:
        self.free: dict[object, float] = {}
        self.corr_of: dict[int, int] = {}
        self.logs: dict[object, FifoLog] = {}  # per FIFO, who it served when (recorded runs)
        # the fidelity ladder's components (kernbench.sim.fidelity): credit links, banked HBM
        self.links = links
        self.banked = banked
        self.banks: dict[str, BankedChannels | None] = {}

    def held(self, key: object, start: float, end: float, seq: int, log: bool) -> float:
        """A server (a banked HBM channel) that decided itself when a flit's service runs: ``[start, end]``."""
        self.free[key] = end
        if log:
            self.log(key, start, end, seq)
        return end

    def log(self, key: object, start: float, end: float, seq: int) -> None:
        fl = self.logs.get(key)
        if fl is None:
            fl = self.logs[key] = FifoLog()
        fl.add(start, end, seq, self.corr_of.get(seq, -1))

    def shares(self, key: object, x: float, y: float, seq: int) -> tuple[tuple[int, float], ...]:
        log = self.logs.get(key)
        return log.shares(x, y, seq) if log is not None else ()

    def serve(self, key: object, t: float, s: float, seq: int, data: bool, log: bool = False) -> float:
        """A flit of ``seq`` arrives at FIFO ``key`` at ``t``; when it leaves (a control flit,
        ``data`` false, costs no service but waits for the flits already queued)."""
        free = self.free.get(key, 0.0)
        start = t if t > free else free
        if not data:
            return start
        end = start + s
        self.free[key] = end
        if log:
            fl = self.logs.get(key)
            if fl is None:
                fl = self.logs[key] = FifoLog()
            fl.add(start, end, seq, self.corr_of.get(seq, -1))
        return end


class OracleEngine(TransferEngine):
    """The flit-level FIFOs of one network (:class:`OracleState`), flit by flit."""

    def __init__(self, net: Network) -> None:
        super().__init__(net)
        fidelity = net.fidelity
        links = CreditLinks(net.env, net.graph) if fidelity in ("credit", "full") else None
        self.state = OracleState(links, banked=fidelity == "full")


class OracleTransfer(Transfer):
    """A transfer flit by flit: every flit's step through every FIFO is an action."""

    __slots__ = (
        "ack_route",
        "at",
        "burst_ids",
        "crit",
        "ctl_at",
        "end",
        "left",
        "mem_done",
        "mem_r",
        "orc",
        "per_burst_ch",
        "route",
        "served",
    )

    def begin(self, engine: OracleEngine) -> None:
        orc = engine.state
        now = self.env.now
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
            self.burst_ids = [int(i) for i in ids] if orc.banked else []
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
        return priority(self.seq, k)

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
        now = self.env.now
        links = self.orc.links
        if links is not None:  # in the link's queues, its turn round-robin
            port = route.hops[h - 1].edge.index if h > 0 else -1
            links.enqueue(hop.edge.index, port, lambda d: self._control_sent(route, h, then, now, d), data=False)
            return
        self._control_sent(route, h, then, now, self.orc.serve(hop.edge.index, now, 0.0, self.seq, data=False))

    def _control_sent(self, route: Route, h: int, then: Callable[[], None], arrived: float, d: float) -> None:
        hop = route.hops[h]
        if self.net.explain:
            self.ctl_at.append((arrived, d))
        self._control(route, h + 1, d + hop.prop_ns + hop.next_overhead_ns, then)

    def _mem_read(self) -> None:
        now = self.env.now
        mem = self.memory_end()[0]
        explain = self.net.explain
        self.mem_r = now
        for k, c in enumerate(self.per_burst_ch):
            key = (mem.node_id, c)
            d = self._burst(key, k, c, now, explain)
            if explain:
                self.at[(k, -1)] = (now, d)
            if self.net.bus.active:
                self.served.append((EventKind.CHANNEL_BUSY, mem.channel_name(c), d - mem.burst_ns, d))
            self._at(d, self._fprio(k), self._flit, k, 0)

    def _burst(self, key: tuple[str, int], k: int, c: int, t: float, explain: bool) -> float:
        """Burst ``k`` of the transfer on channel ``c`` of its memory, from ``t``: when it is served."""
        orc = self.orc
        mem = self.memory_end()[0]
        if not orc.banked:
            return orc.serve(key, t, mem.burst_ns, self.seq, data=True, log=explain)
        if mem.node_id not in orc.banks:
            timing = BankTiming.of(self.net.graph.node(mem.node_id).attrs)
            orc.banks[mem.node_id] = BankedChannels(timing, mem.channels, mem.burst_bytes, mem.burst_ns) if timing else None
        banks = orc.banks[mem.node_id]
        if banks is None:  # SRAM: a FIFO, as at paper
            return orc.serve(key, t, mem.burst_ns, self.seq, data=True, log=explain)
        start, end = banks.serve(c, self.burst_ids[k], t)
        return orc.held(key, start, end, self.seq, explain)

    def _flit(self, k: int, h: int) -> None:
        hop = self.route.hops[h]
        now = self.env.now
        links = self.orc.links
        if links is not None:  # credit flow control: the link sends it when it may
            port = self.route.hops[h - 1].edge.index if h > 0 else -1
            links.enqueue(hop.edge.index, port, lambda d: self._sent(k, h, now, d))
            return
        d = self.orc.serve(hop.edge.index, now, hop.flit_ns, self.seq, data=True, log=self.net.explain)
        self._sent(k, h, now, d)

    def _sent(self, k: int, h: int, arrived: float, d: float) -> None:
        """Flit ``k``, at hop ``h`` since ``arrived``, is through the link at ``d``: on to the next hop."""
        hop = self.route.hops[h]
        if self.net.explain:
            self.at[(k, h)] = (arrived, d)
            if self.orc.links is not None:
                self.orc.log(hop.edge.index, d - hop.flit_ns, d, self.seq)
        if self.net.bus.active:
            self.served.append((EventKind.EDGE_BUSY, hop.edge.id, d - hop.flit_ns, d))
        t = d + hop.prop_ns + hop.next_overhead_ns
        if h + 1 < len(self.route.hops):
            self._at(t, self._fprio(k), self._flit, k, h + 1)
            return
        if self.op == "write":
            self._at(t, self._fprio(k), self._write_burst, k)
            return
        links = self.orc.links
        if links is not None:  # taken by its destination: the last link's credit is back
            links.credit_at(t, hop.edge.index)
        self._arrived(t, k)

    def _arrived(self, t: float, k: int) -> None:
        if t >= self.end:
            self.crit = k
        self.end = max(self.end, t)
        self.left -= 1
        if self.left == 0:
            call_at(self.env, self.end, self.prio + FINISH, self.net.finish, self)

    def _write_burst(self, k: int) -> None:
        mem = self.memory_end()[0]
        c = self.per_burst_ch[k]
        explain = self.net.explain
        d = self._burst((mem.node_id, c), k, c, self.env.now, explain)
        links = self.orc.links
        if links is not None:  # the burst is out of the memory's write buffer: the last link's credit is back
            links.credit_at(d, self.route.hops[-1].edge.index)
        if explain:
            self.at[(k, -1)] = (self.env.now, d)
            if d >= self.mem_done:
                self.crit = k
        if self.net.bus.active:
            self.served.append((EventKind.CHANNEL_BUSY, mem.channel_name(c), d - mem.burst_ns, d))
        self.mem_done = max(self.mem_done, d)
        self.left -= 1
        if self.left == 0:
            self._control(self.ack_route, 0, self.mem_done, self._acknowledged)

    def _acknowledged(self) -> None:
        """A write's acknowledgement is back: it ends, after the other steps at this instant."""
        call_at(self.env, self.env.now, self.prio + FINISH, self.net.finish, self)

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
        mem = self.memory_end()[0]
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


OracleEngine.transfer = OracleTransfer  # (the engine's transfers: Network._start makes and begins them)
