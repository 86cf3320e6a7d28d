"""One transfer as both timing modes see it, and the interface a timing mode implements.

Contract. :class:`~kernbench.sim.network.Network` checks a transfer's
routes and region, numbers it (``seq``, the order transfers start in) and
hands it to its :class:`TransferEngine`, which computes when it ends —
:mod:`kernbench.sim.fast` or :mod:`kernbench.sim.oracle`, the same answer —
and calls :meth:`Network.finish` then. A :class:`Transfer` is what both know
of it; each engine's subclass adds how it computes, and for recorded runs
says where the time went (:meth:`Transfer.parts`, :mod:`kernbench.sim.transit`)
and what to publish (:meth:`Transfer.publish`).

The model is ``docs/timing.md``.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import simpy

from kernbench.sim.clock import SEQ_SHIFT, STEP_BASE
from kernbench.sim.hbm import Bursts, ChannelArray
from kernbench.sim.region import Region
from kernbench.sim.transit import Journey, Part
from kernbench.topology.graph import Route

if TYPE_CHECKING:
    from kernbench.sim.network import Network


class Way:
    """What a transfer's ``(op, src, dst)`` fixes, worked out once per network and shared by every
    transfer that goes that way: the route there (``src`` to ``dst``) and back, the memory end (a read's
    or a write's; a send has none), what its events name it (``detail``, ``src=>dst``: one string for
    all of them) and what the timing mode makes of them (``plan``: the fast engine's paths,
    :meth:`kernbench.sim.fast.FastEngine.plan`)."""

    __slots__ = ("back", "detail", "mem", "plan", "there")

    def __init__(self, src: str, dst: str, there: Route, back: Route, mem: ChannelArray | None) -> None:
        self.there = there
        self.back = back
        self.mem = mem
        self.detail = sys.intern(f"{src}=>{dst}")
        self.plan: Any = None  # (the timing mode's own: only it reads what it put there)


class TransferEngine:
    """One way to compute a network's transfers (a timing mode): its transfers are ``transfer``'s,
    each started by :meth:`Transfer.begin` with the engine (``Network._start`` makes one and begins
    it: an engine's ``start`` between them was a Python call a transfer)."""

    transfer: type[Transfer]

    def __init__(self, net: Network) -> None:
        self.net = net

    def close(self) -> None:
        """The run is over: drop the FIFOs and the network (they refer back to the engine)."""
        del self.net


class Transfer:
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
        "way",
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
        way: Way,
    ):
        self.net = net
        self.way = way
        self.there = way.there  # src -> dst
        self.back = way.back  # dst -> src
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
        self.prio = STEP_BASE + (seq << SEQ_SHIFT)  # (priority(seq), inlined)
        mem = self.mem = way.mem
        self.bursts = mem.bursts(region) if mem is not None else None

    def memory_end(self) -> tuple[ChannelArray, Bursts]:
        """The memory end and how the region's bursts fall on it (reads and writes; a send has none)."""
        mem, bursts = self.mem, self.bursts
        assert mem is not None and bursts is not None, "a send has no memory end"
        return mem, bursts

    @property
    def flits(self) -> int:
        if self.bursts is not None:
            return self.bursts.n
        return -(-self.region.nbytes // self.net.flit_bytes)

    def begin(self, engine: Any) -> None:  # pragma: no cover - both engines define it
        """Start now, computed by ``engine`` (its own: only its transfers take it, typed as theirs);
        ``done`` succeeds (through :meth:`Network.finish`) when it ends."""
        raise TypeError

    def release(self) -> None:
        """It has ended (its result taken): drop what it no longer needs, before anyone is told."""

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
        if end > j.t:  # (never: every leg ends at its arrival; no to() call a transfer to say so)
            j.to(end, self.src, "overhead")
        return tuple(j.parts)

    def _request(self, j: Journey) -> float:  # pragma: no cover - both engines define it
        raise TypeError

    def _channel(self, j: Journey, arrive: float) -> None:  # pragma: no cover
        raise TypeError

    def _data(self, j: Journey, end: float | None) -> float:  # pragma: no cover
        raise TypeError

    def _ack(self, j: Journey, end: float) -> None:  # pragma: no cover
        raise TypeError
