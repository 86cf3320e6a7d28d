"""The fidelity ladder: which components the flit-by-flit engine plugs in (``docs/fidelity.md``).

``paper``  the paper's model: every link a FIFO in arrival order with unbounded buffers,
           every HBM pseudo-channel a stateless FIFO of bursts. The default; the fast mode
           computes it in closed form, the oracle flit by flit.
``credit`` + credit-based flow control: each link's receiver has a buffer of
           ``credit_buffer_flits`` (at least the link's credit round trip, so an idle link
           runs at its full rate); a flit is sent only with a credit, which comes back when
           the flit leaves that buffer (sent on its next link, taken by its destination, or
           — a write — served by its HBM channel). A full buffer holds the flits behind it
           (backpressure). Each link serves its input ports round-robin (:class:`CreditLinks`).
``full``   + HBM banks: each pseudo-channel has ``banks_per_channel`` banks with a row
           buffer of ``row_bytes``; a burst to the open row goes at once, another row waits
           ``trp_ns`` (precharge, when a row is open) + ``trcd_ns`` (activate); every
           ``trefi_ns`` every channel refreshes for ``trfc_ns`` and closes its rows
           (:class:`BankedChannels`).

The levels share one engine (:class:`~kernbench.sim.oracle.OracleEngine`) and differ
only in the components it is given: ``credit`` and ``full`` always run flit by flit.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from kernbench.sim.clock import call_at

if TYPE_CHECKING:
    import simpy

    from kernbench.topology.graph import Graph

Fidelity = Literal["paper", "credit", "full"]
FIDELITIES: tuple[Fidelity, ...] = ("paper", "credit", "full")
_LATE = 1 << 62  # a link's arbitration: after every flit step of the instant (all that arrive then are queued)


def check_fidelity(fidelity: str) -> Fidelity:
    if fidelity not in FIDELITIES:
        raise ValueError(f"fidelity must be one of {', '.join(FIDELITIES)}, not {fidelity!r}")
    return fidelity


Depart = Callable[[float], None]  # a queued flit: called with its departure time when the link sends it


class CreditLinks:
    """Every link with a credit-limited receive buffer and round-robin arbitration over its
    input ports (the link a flit came in on; ``-1``: injected where the link starts)."""

    def __init__(self, env: simpy.Environment, graph: Graph) -> None:
        self.env = env
        min_flits = graph.spec.get("credit_buffer_flits", 16)
        self.credits: list[int] = []
        for e in graph.edges:
            flit_ns = graph.flit_bytes / e.bw_gbps
            over = graph.node(e.dst).overhead_ns
            round_trip = flit_ns + e.prop_ns + over  # a credit spent on sending is back once the flit moves on
            self.credits.append(max(min_flits, math.ceil(round_trip / flit_ns) + 1))
        self.flit_ns = [graph.flit_bytes / e.bw_gbps for e in graph.edges]
        self.busy_until = [0.0] * len(graph.edges)
        self.queues: list[dict[int, deque[tuple[Depart, bool]]]] = [{} for _ in graph.edges]
        self.turn = [-2] * len(graph.edges)  # the input port served last (round-robin)
        self.waiting = [False] * len(graph.edges)

    def enqueue(self, edge: int, port: int, depart: Depart, data: bool = True) -> None:
        """A flit that came in on ``port`` wants ``edge`` now. A control flit (``data`` false:
        a read's request, a write's acknowledgement) takes its turn in the same queues but no
        credit and no time on the wire, as at ``paper``."""
        self.queues[edge].setdefault(port, deque()).append((depart, data))
        self._arbitrate_later(edge)

    def credit(self, edge: int) -> None:
        """A flit left ``edge``'s receive buffer: its credit is back."""
        self.credits[edge] += 1
        self._arbitrate_later(edge)

    def credit_at(self, t: float, edge: int) -> None:
        call_at(self.env, t, _LATE - 1, self.credit, edge)

    def _arbitrate_later(self, edge: int) -> None:
        if not self.waiting[edge]:
            self.waiting[edge] = True
            t = max(self.env.now, self.busy_until[edge])
            call_at(self.env, t, _LATE, self._arbitrate, edge)

    def _arbitrate(self, edge: int) -> None:
        self.waiting[edge] = False
        now = self.env.now
        if self.busy_until[edge] > now:
            self._arbitrate_later(edge)
            return
        queues = self.queues[edge]
        while True:
            # the ports whose head may go: a control flit always, a data flit with a credit
            ports = sorted(p for p, q in queues.items() if q and (not q[0][1] or self.credits[edge] > 0))
            if not ports:
                return  # nothing, or data waiting for a credit: a returning credit arbitrates again
            last = self.turn[edge]
            port = next((p for p in ports if p > last), ports[0])
            self.turn[edge] = port
            depart, data = queues[port].popleft()
            if not data:  # no payload: through at once, the link stays free
                depart(now)
                continue
            self.credits[edge] -= 1
            d = now + self.flit_ns[edge]
            self.busy_until[edge] = d
            if port >= 0:
                self.credit(port)  # the flit left the buffer it waited in
            depart(d)
            if any(queues.values()):
                self._arbitrate_later(edge)
            return


@dataclass(frozen=True, slots=True)
class BankTiming:
    """One HBM slice's bank parameters (``cube.hbm`` keys, HBM3-class, assumed)."""

    banks: int
    row_bytes: int
    trcd_ns: float
    trp_ns: float
    trefi_ns: float
    trfc_ns: float

    @classmethod
    def of(cls, attrs: Mapping[str, Any]) -> BankTiming | None:
        if "banks_per_channel" not in attrs:
            return None  # SRAM: no banks
        return cls(attrs["banks_per_channel"], attrs["row_bytes"], attrs["trcd_ns"], attrs["trp_ns"], attrs["trefi_ns"], attrs["trfc_ns"])


class BankedChannels:
    """The pseudo-channels of one HBM slice with banks, row buffers and refresh.

    A channel serves its bursts in arrival order (no reordering, as the paper's). Burst
    ``b`` of the slice is on channel ``b mod channels``; on that channel it is local burst
    ``l = b // channels``, in bank ``(l // bursts_per_row) mod banks``, row
    ``l // (bursts_per_row · banks)``. It starts once the channel's previous burst is done
    and its bank has the row open: open-page, a bank keeps its row open; a burst to another
    row precharges (``trp_ns``) and activates (``trcd_ns``) from when it reaches the channel
    or the bank's last access ends, whichever is later (``trcd_ns`` alone on a closed
    bank); a burst that would start inside a
    refresh window ``[k·trefi_ns, … + trfc_ns)`` (``k >= 1``; all channels of a slice refresh
    together, as one controller's all-bank refresh) starts ``trcd_ns`` after it, all rows
    closed. (Staggered refresh would stall nearly every striped transfer: with 8 channels
    one is refreshing 8 · 350 / 3900 = 72 % of the time.)
    """

    def __init__(self, timing: BankTiming, channels: int, burst_bytes: int, burst_ns: float) -> None:
        self.t = timing
        self.channels = channels
        self.burst_ns = burst_ns
        self.per_row = max(1, timing.row_bytes // burst_bytes)
        self.bus_free = [0.0] * channels
        self.bank_free = [[0.0] * timing.banks for _ in range(channels)]
        self.open_row: list[list[int | None]] = [[None] * timing.banks for _ in range(channels)]
        self.epoch = [0] * channels
        self.hits = 0
        self.misses = 0

    def serve(self, channel: int, burst: int, t: float) -> tuple[float, float]:
        """Burst ``burst`` (the slice's numbering) reaches ``channel`` at ``t``: (start, end)."""
        tm = self.t
        c = channel
        local = burst // self.channels
        bank = (local // self.per_row) % tm.banks
        row = local // (self.per_row * tm.banks)
        start = max(t, self.bus_free[c])
        offset = 0.0  # all channels refresh together
        epoch = max(0, math.floor((start - offset) / tm.trefi_ns))
        if epoch > self.epoch[c]:  # a refresh since this channel's last burst closed its rows
            self.epoch[c] = epoch
            self.open_row[c] = [None] * tm.banks
        open_row = self.open_row[c][bank]
        if open_row == row:
            self.hits += 1
        else:
            self.misses += 1
            # open-page: the bank precharges and activates once the burst asks for the row
            bank_free = self.bank_free[c][bank]
            ready = (t if t > bank_free else bank_free) + (tm.trp_ns if open_row is not None else 0.0) + tm.trcd_ns
            start = max(start, ready)
            self.open_row[c][bank] = row
        w0 = epoch * tm.trefi_ns + offset if epoch >= 1 else None
        nxt = (epoch + 1) * tm.trefi_ns + offset
        if w0 is not None and w0 <= start < w0 + tm.trfc_ns:
            start = w0 + tm.trfc_ns + tm.trcd_ns
            self.open_row[c] = [None] * tm.banks
            self.open_row[c][bank] = row
        elif start + self.burst_ns > nxt:  # it would run into the next refresh: after it
            start = nxt + tm.trfc_ns + tm.trcd_ns
            self.epoch[c] = epoch + 1
            self.open_row[c] = [None] * tm.banks
            self.open_row[c][bank] = row
        end = start + self.burst_ns
        self.bus_free[c] = end
        self.bank_free[c][bank] = end
        return start, end
