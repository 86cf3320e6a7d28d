"""Run a list of transfers on a fresh :class:`Network`; shared by the sim tests."""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from kernbench.events.bus import Bus
from kernbench.sim.network import Network, TransferResult


@dataclass(frozen=True)
class Op:
    """One transfer: ``op`` in read/write/send, issued ``at_ns`` after time 0."""

    op: str
    a: str
    b: str
    size: int
    offset: int = 0
    stride: int | None = None
    at_ns: float = 0.0


def run(graph, mode: str, ops: list[Op], bus: Bus | None = None, defer: bool = True) -> list[TransferResult]:
    """``defer=False``: plan every train FIFO by FIFO (no closed-form deferral on idle routes)."""
    env = simpy.Environment()
    net = Network(env, graph, bus, mode=mode)
    net.defer = net.defer and defer

    def issue(op: Op):
        if op.at_ns:
            yield env.timeout(op.at_ns)
        if op.op == "send":
            ev = net.send(op.a, op.b, op.size)
        else:
            ev = getattr(net, op.op)(op.a, op.b, op.offset, op.size, stride_bytes=op.stride)
        return (yield ev)

    procs = [env.process(issue(op)) for op in ops]
    env.run()
    net.flush()
    return [p.value for p in procs]


def latency(graph, mode: str, op: Op) -> float:
    (r,) = run(graph, mode, [op])
    return r.latency_ns
