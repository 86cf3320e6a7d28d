"""Sharing one FIFO edge between trains, for the fast timing mode.

An edge remembers the trains it has committed as *loads*
``(start_ns, end_ns, share)``: over that window the train used ``share`` of
the edge's flit slots (1.0 for a back-to-back train, 0.25 for a train paced
by a link four times slower upstream). A new train arriving while loads are
still running is served, as a fluid, by the capacity they leave free:

    capacity(t) = (1 − Σ share of the loads covering t) / flit_ns   flits/ns

so a train that fits in another's gaps passes undelayed (as the flit-level
oracle interleaves it), and one that finds the edge saturated waits for the
capacity to come back. Departures are never earlier than arrival plus one
flit time, which keeps the result identical to the closed form when
nothing else is on the edge.
"""

from __future__ import annotations

Load = tuple[float, float, float, int]  # (start_ns, end_ns, share of the edge's slots, corr id)


def share_of(n: int, flit_ns: float, first_start_ns: float, tail_ns: float) -> float:
    """Fraction of the edge's slots a train of ``n`` flits used between its first start and tail."""
    span = tail_ns - first_start_ns
    return 1.0 if span <= 0 else min(1.0, n * flit_ns / span)


def departures(head_ns: float, tail_in_ns: float, n: int, flit_ns: float, loads: list[Load]) -> tuple[float, float]:
    """(first, last) departure times of a train given the loads already on the edge.

    Arrivals are taken as evenly spaced from ``head_ns`` to ``tail_in_ns``.
    """
    rate_in = (n - 1) / (tail_in_ns - head_ns) if n > 1 and tail_in_ns > head_ns else 0.0
    arrived_all_at_head = n > 1 and tail_in_ns <= head_ns
    marks = sorted({t for ld in loads for t in (ld[0], ld[1]) if t > head_ns} | ({tail_in_ns} if tail_in_ns > head_ns else set()))
    t = head_ns
    backlog = float(n) if arrived_all_at_head or n == 1 else 1.0
    served = 0.0
    reached: list[float] = []  # times the 1st and the n-th flit are served
    targets = [1.0, float(n)]
    for t_next in marks + [float("inf")]:
        arriving = rate_in if t < tail_in_ns else 0.0
        used = sum(ld[2] for ld in loads if ld[0] <= t < ld[1])
        cap = max(0.0, 1.0 - used) / flit_ns
        # Within [t, t_next): served grows at cap while backlogged, then at the arrival rate.
        while targets and t < t_next:
            if backlog > 1e-12:
                net = arriving - cap
                if cap <= 0.0:
                    if t_next == float("inf"):
                        raise RuntimeError("edge saturated forever: loads never end")
                    backlog += arriving * (t_next - t)
                    t = t_next
                    break
                empty_at = t + backlog / (cap - arriving) if net < 0 else float("inf")
                seg_end = min(t_next, empty_at)
                need = targets[0] - served
                reach = t + need / cap
                if reach <= seg_end:
                    backlog += net * (reach - t)
                    served = targets.pop(0)
                    t = reach
                    reached.append(t)
                    continue
                served += cap * (seg_end - t)
                backlog += net * (seg_end - t)
                if seg_end == empty_at:
                    backlog = 0.0
                t = seg_end
            else:
                if arriving <= 0.0:
                    t = t_next
                    break
                flow = min(arriving, cap)
                need = targets[0] - served
                reach = t + need / flow if flow > 0 else float("inf")
                if reach <= t_next:
                    served = targets.pop(0)
                    t = reach
                    reached.append(t)
                    continue
                served += flow * (t_next - t)
                backlog += (arriving - flow) * (t_next - t)
                t = t_next
        if not targets:
            break
    first = max(reached[0], head_ns + flit_ns)
    last = max(reached[-1], tail_in_ns + flit_ns, first + (n - 1) * flit_ns)
    return first, last
