"""The fast timing mode: whole trains through FIFOs, the oracle's answer at a cost that grows with hops.

Contract. :class:`FastEngine` plans each transfer when it starts: its data
train FIFO by FIFO along the route (:meth:`Fifo.arrive` re-plans that FIFO),
its control flit (a read's request, a write's acknowledgement) hop by hop
from each FIFO's :meth:`~Fifo.pass_control`. A FIFO that later re-plans
tells the passages whose departures changed (the change reaches the next
FIFO at the instant the first changed flit would arrive there) and re-checks
the control flits due to cross it. A read's bursts queue on their channels
when its request arrives (an action at that instant); the completion is an
action at the last flit's arrival, moved whenever that changes. A data train
that finds its whole route idle takes the deferred path
(:mod:`kernbench.sim.deferral`). Every transfer ends when the oracle's does
(:mod:`kernbench.sim.oracle`; ``tests/sim/test_contention.py`` holds every
transfer of random contended mixes to 1e-6 ns, and whole kernels to 1e-9
relative, ``tests/runtime/test_timing_modes.py``).

The model is ``docs/timing.md``; the words are in ``docs/glossary.md``.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING

from kernbench.sim import deferral, fifo
from kernbench.sim.clock import FINISH, Action, call_at
from kernbench.sim.fast_record import FastRecord, control_plan, fifo_stop
from kernbench.sim.fifo import Fifo, Passage, idle_route
from kernbench.sim.hbm import sub_train
from kernbench.sim.serve import union
from kernbench.sim.train import EPS, Train, first_difference
from kernbench.sim.transfer import TransferEngine, Way
from kernbench.topology.graph import Route

if TYPE_CHECKING:
    from kernbench.sim.network import Network

_SERVICE = attrgetter("s")  # a FIFO's service per flit
_TOKENS = itertools.count()  # a control flit's watches, told apart (see FastTransfer.recheck)


class Path:
    """A route as the engine walks it: per hop its FIFO, the FIFO's service per flit,
    and the delay from leaving it to the next FIFO (propagation, the next node)."""

    __slots__ = ("delay", "fifos", "reads", "service")

    def __init__(self, fifos: list[Fifo], route: Route) -> None:
        self.fifos = fifos
        self.service = list(map(_SERVICE, fifos))  # (no comprehension's frame: a call less a path, ~760 a GQA network)
        self.delay = [hop.prop_ns + hop.next_overhead_ns for hop in route.hops]
        self.reads: dict[int, deferral.IdleRead] = {}  # a read's data path: its idle plans by kept layout (deferral.IdleReads)


class FastEngine(TransferEngine):
    """A FIFO per directed edge (made on first use), routes as paths, idle-read plans."""

    def __init__(self, net: Network) -> None:
        super().__init__(net)
        self._edges: list[Fifo | None] = [None] * len(net.graph.edges)
        self._paths: dict[int, Path] = {}  # id(route) -> its path (routes are cached by the graph)
        self.idle_reads = deferral.IdleReads()

    def close(self) -> None:
        fifo.close(self._edges)
        self._paths.clear()
        super().close()

    def edge_fifo(self, index: int, name: str | None = None) -> Fifo:
        """Edge ``index``'s FIFO (``name``: its id, if the caller has it: a route's ``Hop.edge_id``)."""
        f = self._edges[index]
        if f is None:
            e = self.net.graph.edges[index]
            f = self._edges[index] = Fifo(
                name or sys.intern(e.id), self.net.flit_bytes / e.bw_gbps, self.net.explain
            )  # (the routes' name for it: Hop.edge_id)
        return f

    def path(self, route: Route) -> Path:
        path = self._paths.get(id(route))
        if path is None:
            path = self._paths[id(route)] = Path([self.edge_fifo(hop.edge.index, hop.edge_id) for hop in route.hops], route)
        return path

    def plan(self, op: str, way: Way) -> tuple[Path, Path | None]:
        """A way's paths, made on its first transfer: the data's, and the control flit's
        (a read's request, a write's acknowledgement; a send has none)."""
        plan: tuple[Path, Path | None] | None = way.plan
        if plan is None:
            there, back = self.path(way.there), self.path(way.back)
            plan = way.plan = (back, there) if op == "read" else (there, back if op == "write" else None)
        return plan


class FastTransfer(FastRecord):
    """A transfer as trains through FIFOs; see the module docstring."""

    __slots__ = ("ack_route", "ctl_path", "data_in", "deferred", "finish_at", "head_at", "idle", "mem_at", "path")

    def begin(self, engine: FastEngine) -> None:
        now = self.env.now
        self.engine = engine
        plan: tuple[Path, Path | None] = self.way.plan or engine.plan(self.op, self.way)
        self.path, ctl_path = plan
        self.data = []
        self.ch = {}
        self.finish_at: Action | None = None
        self.mem_at: Action | None = None
        self.head_at: Action | None = None
        self.ctl = None
        self.deferred: list[float] | None = None  # deferred: when the work queued on each FIFO of the data route was done
        self.idle: tuple[float, deferral.IdleRead] | None = None  # a read deferred on idle channels: its request's arrival, the plan
        if self.op == "read":
            req = self.there
            self.route = self.back
            assert ctl_path is not None
            self.ctl_path = ctl_path
            self.ctl = control_plan((req, self._request_arrives, [], []))  # (_plan_control, inlined: a call less a read)
            t = self._control_from(0, now + req.src_overhead_ns)  # the request's arrival: _request_arrives, inlined
            self.mem_at = call_at(self.env, t, self.prio, self._mem_read, t)  # (nothing was due: a call less a read)
            return
        self.route = self.there
        if self.op == "write":
            assert ctl_path is not None
            self.ctl_path = ctl_path
            self.ack_route = self.back
        self.data_in = Train.burst(self.flits, now + self.route.src_overhead_ns)
        if not (self.op == "send" and self.net.deferring and self._defer_data()):
            self._plan_data()

    def _plan_control(self, route: Route, t: float, then: Callable[[float], None]) -> None:
        self.ctl = control_plan((route, then, [], []))
        then(self._control_from(0, t))

    def _control_from(self, h: int, t: float) -> float:
        """(Re-)plan the control flit from hop ``h``, where it arrives at ``t``: each FIFO's
        :meth:`~Fifo.pass_control` in turn. Its arrival at the far end, for the caller to give ``then``."""
        assert self.ctl is not None
        route, _then, tokens, times = self.ctl
        del tokens[h:]
        del times[h:]
        token = next(_TOKENS)  # this plan's, from hop h on: never one a superseded watch holds
        tokens.extend([token] * (len(route.hops) - h))
        path = self.ctl_path
        fifos, delay = path.fifos, path.delay
        seq, now = self.seq, self.env.now
        log = self.net.explain
        for i in range(h, len(fifos)):
            f = fifos[i]
            d = f.pass_control(t, seq, self, i, token, now)
            if log:  # (its stop here, for parts: no service of its own)
                times.append(fifo_stop((t, d, 0.0, f, self)))
            t = d + delay[i]
        return t

    def recheck(self, h: int, t: float, d_old: float, token: int) -> None:
        ctl = self.ctl
        if ctl is None:
            return  # done
        tokens = ctl.tokens
        if h >= len(tokens) or tokens[h] != token:
            return  # superseded by a re-plan from an earlier hop
        if abs(self.ctl_path.fifos[h].finish_before(t, self.seq) - d_old) > EPS:
            ctl.then(self._control_from(h, t))

    def _request_arrives(self, t: float) -> None:
        if self.mem_at is not None:
            if abs(self.mem_at.args[0] - t) <= EPS and self.mem_at.pending:
                return
            self.mem_at.cancel()
        self.mem_at = call_at(self.env, t, self.prio, self._mem_read, t)

    def _mem_read(self, _t: float) -> None:
        """The request is here: queue every burst on its channel; the data train leaves."""
        now = self.env.now
        mem, bursts = self.mem, self.bursts  # (memory_end, inlined)
        assert mem is not None and bursts is not None
        net = self.net
        if net.defer and not net.bus.active:  # (Network.deferring)
            plan = self.path.reads.get(id(bursts)) if bursts.kept else None  # (IdleReads.plan's kept plans, looked up first)
            if plan is None:
                plan = self.engine.idle_reads.plan(self.path, mem, bursts)
            # its channels and data route idle, no queued work outlasting the head: its bursts start now and
            # its data train is deferred with the plan's times (one call: the checks and the deferral)
            queued = idle_route(self.path.fifos, now, plan, self)
            if queued is not None:
                self.idle = (now, plan)  # the data train, should it materialize
                self.deferred = queued
                t = now + plan.finish  # (end_at, inlined: no end was due, the data train leaves only now)
                self.finish_at = call_at(self.env, t, self.prio + FINISH, net.finish, self, t)
                return
        b = mem.burst_ns
        progs: list[tuple[float, int]] = []
        add = progs.append
        crit_c, last = -1, now  # the channel whose last burst leaves last, and that departure
        seq, corr, fifos, active, ch = self.seq, self.corr, mem.fifos, net.bus.active, self.ch
        for c, cnt in bursts.used:
            f = fifos[c]
            start = f.reserve(now, cnt, seq, corr)
            if start is None:  # the channel is still receiving: merge flit by flit
                p = Passage(seq, corr, Train.burst(cnt, now))
                f.arrive(p, now)
                ch[c] = p
                start = p.out.first() - b
                add((start, cnt))
            else:
                prog = (start, cnt)
                add(prog)
                if active:  # (reserved bursts: publish works out the channel's busy span from them)
                    ch[c] = prog
            end = start + cnt * b
            if end >= last:
                crit_c, last = c, end
        self.crit = (crit_c, now, last)  # (channel, request arrival, departure)
        if net.explain:  # several channels send their last bursts at once: no one of them is critical
            ties = 0
            for start, cnt in progs:  # (a loop, not sum() over a generator: a Python call a channel)
                if last - (start + cnt * b) <= EPS:
                    ties += 1
            self.tied = ties > 1
        self.data_in = union(progs, b)
        if not (net.defer and not active and self._defer_data()):  # (Network.deferring)
            self._plan_data()

    def _defer_data(self) -> bool:
        """Defer the data train if its whole route is idle (:func:`deferral.defer_train`)."""
        got = deferral.defer_train(self, self.path)
        if got is None:
            return False
        self.deferred, end = got
        self.end_at(end)
        return True

    def materialize(self) -> None:
        """The deferred data train as passages (:func:`deferral.materialize`)."""
        queued = self.deferred
        if queued is None:
            return
        self.deferred = None
        deferral.materialize(self, self.path, queued)
        if self.done.triggered:  # (a finished transfer's FIFOs only fold)
            for p in self.data:
                p.detach()
            return
        if self.finish_at is not None and self.finish_at.pending:  # (not when it publishes, finishing)
            last = self.route.hops[-1]
            self.end_at(self.data[-1].out.last() + last.prop_ns + last.next_overhead_ns)

    def input_at(self, h: int) -> Train:
        """The data train's arrivals at hop ``h``'s FIFO (the passages before it planned)."""
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
        now = self.env.now
        path, data = self.path, self.data
        fifos, delay = path.fifos, path.delay  # (per hop: prop_ns + next_overhead_ns, as input_at adds them)
        self.head_at = None
        seq, corr, changed = self.seq, self.corr, self.passage_changed
        for h in range(len(data), len(fifos)):
            inp = data[h - 1].out.shift(delay[h - 1]) if h else self.data_in  # (input_at, inlined)
            f = fifos[h]
            head = inp.first()
            if head > now + EPS and f.busy_after(now):
                self.head_at = call_at(self.env, head, self.prio, self._plan_data, head)
                return
            p = Passage(seq, corr, inp, changed)
            data.append(p)
            f.arrive(p, now)
        arrival = data[-1].out.shift(delay[-1])
        if self.op == "write":
            self._at_memory(arrival)
        elif self.finish_at is None:  # (end_at, inlined: no end was due yet, as when the whole route planned at once)
            t = arrival.last()
            self.finish_at = call_at(self.env, t, self.prio + FINISH, self.net.finish, self, t)
        else:
            self.end_at(arrival.last())

    def passage_changed(self, p: Passage, k: int) -> None:
        """Passage ``p``'s departures changed from flit ``k`` on."""
        h = self.data.index(p)
        hop = self.route.hops[h]
        delay = hop.prop_ns + hop.next_overhead_ns
        if h + 1 < len(self.data):
            nxt = self.data[h + 1]
            nxt.fifo.amend(nxt, self.input_at(h + 1), min(p.out.at(k) + delay, nxt.inp.at(k)), self.env)
        elif h + 1 < len(self.route.hops):
            if k == 0 and self.head_at is not None:  # the head itself moved: so does its arrival
                self.head_at.cancel()
                t = p.out.first() + delay
                self.head_at = call_at(self.env, t, self.prio, self._plan_data, t)
        elif self.op == "write":
            self._memory_changed(p.out.shift(delay))
        else:
            self.end_at(p.out.last() + delay)

    def end_at(self, t: float) -> None:
        """The transfer ends at ``t`` (moved if it was due at another time)."""
        old = self.finish_at
        if old is not None:
            if old.pending and old.args[1] == t:
                return
            old.cancel()
        self.finish_at = call_at(self.env, t, self.prio + FINISH, self.net.finish, self, t)  # (t: what it is due at)

    def release(self) -> None:
        """Let go of everything a finished transfer held (FIFOs may still hold its passages)."""
        for p in self.data:
            p.detach()
        for q in self.ch.values():
            if type(q) is Passage:  # (not a read's reserved bursts)
                q.detach()
        self.ctl = None
        self.finish_at = self.mem_at = self.head_at = None

    def _at_memory(self, train: Train) -> None:
        """A write's data reaches the memory: each channel its bursts; then the acknowledgement."""
        now = self.env.now
        mem, bursts = self.memory_end()
        self.mem_train = train
        for c, flits in enumerate(bursts.per_channel):
            if flits is None:
                continue
            p = Passage(self.seq, self.corr, sub_train(train, flits), self._ch_changed)
            self.ch[c] = p
            mem.fifos[c].arrive(p, now)
        self._plan_ack()

    def _plan_ack(self) -> None:
        done = max(p.out.last() for p in self.ch.values() if isinstance(p, Passage))  # (a write's: all passages)
        self._plan_control(self.ack_route, done, self.end_at)

    def _ch_changed(self, _p: Passage, _k: int) -> None:
        self._plan_ack()

    def _memory_changed(self, train: Train) -> None:
        self.mem_train = train
        for c, flits in enumerate(self.memory_end()[1].per_channel):
            if flits is None:
                continue
            p = self.ch[c]
            assert isinstance(p, Passage)  # a write's channels: passages, never reservations
            sub = sub_train(train, flits)
            k = first_difference(p.inp, sub, 0)
            if k < sub.n:
                p.fifo.amend(p, sub, min(p.inp.at(k), sub.at(k)), self.env)


FastEngine.transfer = FastTransfer  # (the engine's transfers: Network._start makes and begins them)
