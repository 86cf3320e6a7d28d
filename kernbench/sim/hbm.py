"""HBM slices (and SRAM) as arrays of pseudo-channel availability times.

Burst ``k`` of a transfer at byte ``offset`` with ``stride_bytes`` between
bursts lives at ``offset + k·stride`` and goes to channel
``(address // burst_bytes) mod channels``: contiguous data spreads over all
channels, a stride of ``channels × burst_bytes`` lands every burst on one.
Each channel serves one burst per ``burst_ns`` in request order; this per-
channel occupancy is the model's *drain*.

Both timing modes share the channel bookkeeping: :meth:`read_train` /
:meth:`write_done` answer for a whole train in O(channels × pieces), and
:meth:`read_burst` / :meth:`write_burst` serve one burst at a time for the
flit-by-flit oracle.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from kernbench.sim.train import Piece, prune


@dataclass(frozen=True, slots=True)
class ChannelSpan:
    channel: int
    start_ns: float
    end_ns: float
    bursts: int


class ChannelArray:
    """The channels behind one HBM slice or SRAM port."""

    __slots__ = ("node_id", "pc_base", "channels", "burst_bytes", "burst_ns", "free_ns")

    def __init__(self, node_id: str, pc_base: int, channels: int, burst_bytes: int, channel_bw_gbps: float):
        self.node_id = node_id
        self.pc_base = pc_base
        self.channels = channels
        self.burst_bytes = burst_bytes
        self.burst_ns = burst_bytes / channel_bw_gbps
        self.free_ns = [0.0] * channels

    def channel_name(self, ch: int) -> str:
        prefix = self.node_id.rsplit(".", 1)[0]
        if self.node_id.split(".")[-1].startswith("slice"):
            return f"{prefix}.pc{self.pc_base + ch}"
        return f"{self.node_id}.ch{ch}"

    # --- address → channel ------------------------------------------------

    def layout(self, offset: int, n: int, stride_bytes: int) -> tuple[int, int, list[int]]:
        """(period, step, first channel of each residue class) for ``n`` bursts."""
        if stride_bytes <= 0 or stride_bytes % self.burst_bytes:
            raise ValueError(
                f"stride_bytes={stride_bytes} must be a positive multiple of the "
                f"{self.burst_bytes} B burst (one flit carries one burst)"
            )
        q = stride_bytes // self.burst_bytes
        step = q % self.channels
        period = self.channels // gcd(self.channels, step) if step else 1
        c0 = (offset // self.burst_bytes) % self.channels
        firsts = [(c0 + j * step) % self.channels for j in range(min(n, period))]
        return period, step, firsts

    def channel_of(self, offset: int, k: int, stride_bytes: int) -> int:
        return ((offset + k * stride_bytes) // self.burst_bytes) % self.channels

    # --- whole trains (fast mode) -----------------------------------------

    def read_train(
        self, t_ns: float, offset: int, n: int, stride_bytes: int
    ) -> tuple[list[Piece], list[ChannelSpan]]:
        """Reserve the channels for a read requested at ``t_ns``; the burst train.

        Channel ``ch`` serves its bursts ``j, j + period, …`` back to back, so
        they are ready in a staircase. Downstream, FIFO edges only ever ask
        ``max_k ready(k) + (N − 1 − k)·s``, which over one channel's bursts is
        linear in the burst's rank: its first or its last burst decides. The
        train is therefore those two bursts per channel, as pieces of rate 0
        (a FIFO edge raises the rate to its own flit time): exact head and
        tail through any path, whatever the edges' speeds.
        """
        period, _, firsts = self.layout(offset, n, stride_bytes)
        b = self.burst_ns
        pieces: list[Piece] = []
        spans = []
        for j, ch in enumerate(firsts):
            count = (n - j + period - 1) // period
            start = max(t_ns, self.free_ns[ch])
            self.free_ns[ch] = start + count * b
            pieces.append((start + b, 0.0, j))
            if count > 1:
                pieces.append((start + count * b, 0.0, j + period * (count - 1)))
            spans.append(ChannelSpan(ch, start, start + count * b, count))
        return prune(pieces), spans

    def write_done(
        self, arrivals: list[Piece], offset: int, n: int, stride_bytes: int
    ) -> tuple[float, list[ChannelSpan]]:
        """Commit a train arriving as ``arrivals``; the time the last burst is written."""
        period, _, firsts = self.layout(offset, n, stride_bytes)
        b = self.burst_ns
        done = 0.0
        spans = []
        for j, ch in enumerate(firsts):
            count = (n - j + period - 1) // period
            last = self.free_ns[ch] + count * b
            first_start = self.free_ns[ch]
            for a, r, k0 in arrivals:
                m_min = max(0, -(-(k0 - j) // period))
                if m_min >= count:
                    continue
                # arrival of burst j + m·period from this piece, plus the bursts after it
                slope = period * r - b
                m = count - 1 if slope > 0 else m_min
                last = max(last, a + (j + m * period - k0) * r + (count - m) * b)
                if m_min == 0:
                    first_start = max(first_start, a + (j - k0) * r)
            self.free_ns[ch] = last
            done = max(done, last)
            spans.append(ChannelSpan(ch, first_start, last, count))
        return done, spans

    # --- one burst at a time (oracle) --------------------------------------

    def serve_burst(self, ch: int, t_ns: float) -> float:
        """Serve one burst on channel ``ch`` arriving at ``t_ns``; its finish time."""
        start = max(t_ns, self.free_ns[ch])
        self.free_ns[ch] = start + self.burst_ns
        return start + self.burst_ns
