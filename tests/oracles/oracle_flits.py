"""A flit-by-flit reference for ONE transfer on an idle machine, written from
docs/timing.md alone — it shares no code with ``kernbench.sim``.

It reads the topology's own parameters from the compiled graph (each node's
``overhead_ns``, each edge's ``bw_gbps`` / ``prop_ns``, the memory's
channels and burst size) and takes only the node path from
``Graph.route`` (routing has its own brute-force test). The model, per
docs/timing.md:

* a data flit crossing edge ``a→b`` is serialized ``flit_bytes / bw`` in
  that edge's FIFO (Lindley: ``D_k = max(D_{k-1}, A_k) + s``), propagates
  ``prop_ns`` and pays node ``b``'s overhead; the initiator pays its own
  overhead once when the transfer starts;
* control flits (a read's request, a write's acknowledgement) cost
  overheads and propagation only on an idle machine; the acknowledgement
  leaves the memory the instant the last burst is written (the memory's
  overhead was paid when the data arrived);
* a transfer moves every burst its bytes touch, burst ``i`` (address //
  burst) on channel ``i mod channels``; a channel serves one burst per
  ``burst_bytes / channel_bw`` in arrival order; a read's bursts all queue
  when its request arrives, and its data flits leave in the order their
  bursts finish.
"""

from __future__ import annotations

import itertools

import numpy as np


def lindley(arrivals: list[float], s: float) -> list[float]:
    out, d = [], float("-inf")
    for a in arrivals:
        d = max(d, a) + s
        out.append(d)
    return out


def _path(graph, src: str, dst: str) -> list[str]:
    return list(graph.route(src, dst).nodes)


def _cross(graph, path: list[str], times: list[float]) -> list[float]:
    """Data flits (sorted arrival times at ``path[0]``'s output) to their arrivals at ``path[-1]``."""
    for a, b in itertools.pairwise(path):
        e = graph.edge(a, b)
        dep = lindley(times, graph.flit_bytes / e.bw_gbps)
        times = [d + e.prop_ns + graph.nodes[b].overhead_ns for d in dep]
    return times


def _control(graph, path: list[str], t: float) -> float:
    for a, b in itertools.pairwise(path):
        t += graph.edge(a, b).prop_ns + graph.nodes[b].overhead_ns
    return t


def burst_ids(starts: list[int], run_bytes: int, burst: int) -> list[int]:
    """Every burst a set of runs touches, ascending, each once (brute force over bytes)."""
    touched = set()
    for a in starts:
        touched.update(range(a // burst, (a + run_bytes - 1) // burst + 1))
    return sorted(touched)


def _memory(graph, memory: str) -> tuple[int, int, float]:
    m = graph.nodes[memory].attrs
    return m["channels"], m["burst_bytes"], m["burst_bytes"] / m["channel_bw_gbps"]


def read_ns(graph, initiator: str, memory: str, starts: list[int], run_bytes: int) -> float:
    channels, burst, burst_ns = _memory(graph, memory)
    req = _path(graph, initiator, memory)
    t_req = _control(graph, req, graph.nodes[initiator].overhead_ns)
    served = {}
    finish = []
    for i, b in enumerate(burst_ids(starts, run_bytes, burst)):
        c = b % channels
        served[c] = served.get(c, 0) + 1
        finish.append((t_req + served[c] * burst_ns, i))
    times = [t for t, _ in sorted(finish)]
    return max(_cross(graph, _path(graph, memory, initiator), times))


def write_ns(graph, initiator: str, memory: str, starts: list[int], run_bytes: int) -> float:
    channels, burst, burst_ns = _memory(graph, memory)
    ids = burst_ids(starts, run_bytes, burst)
    t0 = graph.nodes[initiator].overhead_ns
    arrive = _cross(graph, _path(graph, initiator, memory), [t0] * len(ids))
    done = 0.0
    for c in range(channels):
        mine = sorted(a for a, b in zip(arrive, ids, strict=False) if b % channels == c)
        if mine:
            done = max(done, lindley(mine, burst_ns)[-1])
    return _control(graph, _path(graph, memory, initiator), done)


def send_ns(graph, src: str, dst: str, size_bytes: int) -> float:
    n = -(-size_bytes // graph.flit_bytes)
    t0 = graph.nodes[src].overhead_ns
    return max(_cross(graph, _path(graph, src, dst), [t0] * n))


def contiguous(offset: int, size: int) -> tuple[list[int], int]:
    return [offset], size


def strided(offset: int, run: int, stride: int, runs: int) -> tuple[list[int], int]:
    return [offset + i * stride for i in range(runs)], run


def as_array(xs) -> np.ndarray:
    return np.asarray(xs, dtype=np.float64)
