"""Cost of publishing on the event bus (issue 2, section 4). Prints; asserts nothing.

    PYTHONPATH=. python benchmarks/bench_bus.py

Components guard every publish with ``if bus.active:`` so that with no
subscriber no Event is built. This measures, in one run:

* per event: an empty loop, the guarded publish with no subscriber, and a
  publish into a Recorder;
* end to end: the same fast-mode scenario with no subscriber and with a Recorder.
"""

from __future__ import annotations

import statistics
import time

import simpy

from kernbench.events.bus import Bus, Recorder
from kernbench.events.types import EventKind
from kernbench.sim.network import Network
from kernbench.topology.compile import load_topology

N = 200_000
KIND = EventKind.EDGE_BUSY


def per_event_ns(bus: Bus | None) -> float:
    def loop() -> float:
        t0 = time.perf_counter()
        if bus is None:
            for _ in range(N):
                pass
        else:
            b = bus
            for i in range(N):
                if b.active:
                    b.emit(1.0, KIND, "a->b", end_ns=2.0, corr_id=i, value=1)
        return time.perf_counter() - t0

    return min(loop() for _ in range(5)) / N * 1e9


def scenario_wall_ms(graph, subscribe: bool) -> tuple[float, int]:
    def once() -> tuple[float, int]:
        env = simpy.Environment()
        bus = Bus()
        rec = Recorder(bus) if subscribe else None
        net = Network(env, graph, bus)
        t0 = time.perf_counter()
        for p in range(8):
            for c in range(16):
                net.read(f"sip0.cube{c}.pe{p}.dma", f"sip0.cube{(c + 5) % 16}.hbm.slice{p}", 0, 32768)
        env.run()
        net.flush()
        return (time.perf_counter() - t0) * 1e3, len(rec) if rec else 0

    runs = [once() for _ in range(7)]
    return statistics.median(r[0] for r in runs), runs[0][1]


def main() -> None:
    empty = per_event_ns(None)
    idle = per_event_ns(Bus())
    bus = Bus()
    Recorder(bus)
    recorded = per_event_ns(bus)
    print(f"per event, empty loop                     : {empty:7.1f} ns")
    print(f"per event, guarded publish, no subscriber : {idle:7.1f} ns  (+{idle - empty:.1f} ns over the empty loop)")
    print(f"per event, publish into a Recorder        : {recorded:7.1f} ns")
    print(
        f"ratio recorder / no subscriber            : {recorded / idle:7.1f}x  (net of the loop: {(recorded - empty) / max(idle - empty, 1e-9):.0f}x)"
    )

    paper = load_topology("paper")
    scenario_wall_ms(paper, False)  # warm the route cache
    off, _ = scenario_wall_ms(paper, False)
    on, events = scenario_wall_ms(paper, True)
    print(f"128 concurrent 32 KiB reads (fast mode), no subscriber : {off:7.2f} ms wall")
    print(f"128 concurrent 32 KiB reads (fast mode), Recorder      : {on:7.2f} ms wall  ({events} events; ratio {on / off:.2f}x)")


if __name__ == "__main__":
    main()
