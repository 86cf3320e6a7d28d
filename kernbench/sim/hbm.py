"""HBM slices (and SRAM ports) as arrays of pseudo-channels, each a FIFO of bursts.

Contract. A :class:`ChannelArray` holds one memory's channels
(:class:`~kernbench.sim.fifo.Fifo`, one burst per ``burst_ns``) and says
which of a region's bursts each channel serves (:meth:`ChannelArray.bursts`:
burst ``b`` on channel ``b mod channels``); :func:`sub_train` is the part of
a write's arriving train a channel receives. The model (drain, reads queuing
every burst at once, writes burst by burst) is ``docs/timing.md``,
"Memory".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from kernbench.sim.fifo import Fifo
from kernbench.sim.region import Region
from kernbench.sim.train import Train
from kernbench.topology.ids import NodeId, cube_id

Flits = tuple[int, int, int] | NDArray[np.int64]  # flit indices: a run (first, step, count), or explicit


@dataclass(frozen=True, slots=True)
class Bursts:
    """How a region's bursts fall on a memory's channels.

    ``n`` bursts in address order (the transfer's flits); per channel, the
    flit indices it serves: an arithmetic run ``(first, step, count)`` when
    the pattern is regular, else an explicit array. ``kept``: the channel
    array keeps this object for as long as it lives (a contiguous layout), so
    its identity names the layout; any other is built per transfer, and its
    ``id`` may be reused once it is gone. ``used``: ``(channel, bursts)`` of
    each channel with bursts, in channel order (what a read queues).
    """

    n: int
    per_channel: tuple[Flits | None, ...]
    used: tuple[tuple[int, int], ...]
    kept: bool = False

    @classmethod
    def of(cls, n: int, per_channel: tuple[Flits | None, ...], kept: bool = False) -> Bursts:
        # (tuples of lists, here and in deferral.IdleRead: a generator is a Python call per item, ~18k a re-timing)
        used = tuple([(c, pc[2] if isinstance(pc, tuple) else len(pc)) for c, pc in enumerate(per_channel) if pc is not None])
        return cls(n, per_channel, used, kept)

    def last(self, ch: int) -> int:
        """The flit index of channel ``ch``'s last burst (it has at least one)."""
        pc = self.per_channel[ch]
        assert pc is not None
        return pc[0] + pc[1] * (pc[2] - 1) if isinstance(pc, tuple) else int(pc[-1])


#: contiguous layouts by (channels, first channel, bursts), shared by every network's arrays (a network is
#: made afresh for every run and re-timing: ~512 layouts a GQA network, three Python calls each). An array
#: keeps those it uses, so clearing this (at a size no ordinary run reaches) never frees one in use.
_LAYOUTS: dict[tuple[int, int, int], Bursts] = {}
_LAYOUTS_KEPT = 1 << 14


def _contiguous(c: int, b0: int, n: int) -> Bursts:
    """``n`` consecutive bursts from channel ``b0`` on ``c`` channels."""
    per: list[tuple[int, int, int] | None] = [None] * c
    for j in range(min(n, c)):
        per[(b0 + j) % c] = (j, c, (n - j + c - 1) // c)
    return Bursts.of(n, tuple(per), kept=True)


@lru_cache(maxsize=4096)  # (per memory, the same in every network made for its topology: ~256 a GQA network)
def _channel_names(node_id: str, pc_base: int, channels: int) -> tuple[str, ...]:
    n = NodeId.parse(node_id)
    if n.slice is not None and n.sip is not None and n.cube is not None:  # an HBM slice: its cube's pseudo-channels
        cube = cube_id(n.sip, n.cube)
        return tuple([f"{cube}.hbm.pc{pc_base + ch}" for ch in range(channels)])
    return tuple([f"{node_id}.ch{ch}" for ch in range(channels)])


class ChannelArray:
    """The channels behind one HBM slice or SRAM port."""

    __slots__ = ("_contiguous", "_names", "burst_bytes", "burst_ns", "channels", "fifos", "node_id", "pc_base")

    def __init__(self, node_id: str, pc_base: int, channels: int, burst_bytes: int, channel_bw_gbps: float, history: bool = False):
        self.node_id = node_id
        self.pc_base = pc_base
        self.channels = channels
        self.burst_bytes = burst_bytes
        self.burst_ns = burst_bytes / channel_bw_gbps
        self._names = _channel_names(node_id, pc_base, channels)
        self.fifos = [Fifo(self._names[ch], self.burst_ns, history) for ch in range(channels)]
        self._contiguous: dict[tuple[int, int], Bursts] = {}  # (first channel, bursts) -> layout (kept: see Bursts.kept)

    def channel_name(self, ch: int) -> str:
        return self._names[ch]

    def channel_of(self, address: int) -> int:
        return (address // self.burst_bytes) % self.channels

    def bursts(self, region: Region) -> Bursts:
        """The region's bursts, and which of them (by flit index) each channel serves."""
        c = self.channels
        if len(region.starts) == 1:  # (Region.bursts' range, worked out here: a contiguous layout is kept)
            bb = self.burst_bytes
            a = region.starts[0]
            first = a // bb
            n = (a + region.run_bytes - 1) // bb - first + 1
            key = (first % c, n)
            hit = self._contiguous.get(key)
            if hit is None:  # (the same layout as every array of c channels: made once, see _LAYOUTS)
                hit = _LAYOUTS.get((c, *key))
                if hit is None:
                    hit = _LAYOUTS[(c, *key)] = _contiguous(c, *key)
                    if len(_LAYOUTS) > _LAYOUTS_KEPT:
                        _LAYOUTS.clear()
                self._contiguous[key] = hit  # (kept as long as this array: its id names it, Bursts.kept)
            return hit
        ids = region.bursts(self.burst_bytes)
        assert not isinstance(ids, range)  # (several runs)
        ch = ids % c
        per2: list[Flits | None] = [None] * c
        for k in range(c):
            idx = np.flatnonzero(ch == k)
            if len(idx) == 0:
                continue
            if len(idx) == 1:
                per2[k] = (int(idx[0]), 1, 1)
                continue
            d = np.diff(idx)
            if (d == d[0]).all():
                per2[k] = (int(idx[0]), int(d[0]), len(idx))
            else:
                per2[k] = idx
        return Bursts.of(len(ids), tuple(per2))


def sub_train(train: Train, flits: Flits) -> Train:
    """The arrivals of the given flits of ``train``, renumbered 0, 1, …"""
    if isinstance(flits, tuple) and train.arr is None and all(sg[3] == 1 for sg in train.segs):
        first, step, count = flits
        segs = []
        tsegs = train.segs
        for i, (k0, a, _g, _p, r) in enumerate(tsegs):
            k1 = tsegs[i + 1][0] if i + 1 < len(tsegs) else train.n
            # sub-flits m with first + m·step in [k0, k1)
            m0 = max(0, -(-(k0 - first) // step))
            m1 = min(count, -(-(k1 - first) // step))
            if m0 < m1:
                segs.append((m0, a + (first + m0 * step - k0) * r, 0.0, 1, step * r))
        return Train(count, segs)
    if isinstance(flits, tuple):
        first, step, count = flits
        flits = first + step * np.arange(count, dtype=np.int64)
    return Train.from_times(train.times()[flits])
