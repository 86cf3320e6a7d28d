"""Where a layer runs: which PEs form its tensor-parallel group, and what each of them holds.

Tensor parallelism over ``tp`` PEs (Megatron-style): PE ``p`` holds query
heads ``[p·ql, (p+1)·ql)`` (``ql = heads / tp``), the matching rows of the
output projection, and FFN columns ``[p·fl, (p+1)·fl)`` of the gate and up
projections with the matching rows of the down projection (``fl = ffn /
tp``). After the output projection and after the down projection each PE
holds a partial sum of the layer's hidden state: an all-reduce over the
``tp`` PEs completes it.

KV heads: with ``tp ≤ kv_heads`` PE ``p`` holds ``kvl = kv_heads / tp`` KV
heads whole. With ``tp > kv_heads`` the ``P = tp / kv_heads`` PEs of a
group share one KV head; in decode they split its context (flash-decoding,
as :mod:`kernbench.kernels.gqa_decode`): member ``r`` holds the KV cache
tokens ``[seq·r/P, seq·(r+1)/P)`` and the last member also the new token's
K and V, which it projects. In prefill each member projects the group's K
and V itself (the ``P``-fold projection is the price of not exchanging
them).

Which PEs (``--placement``): ``packed`` (default) takes PEs in id order —
the 8 PEs of a CUBE, then the next CUBE, then the next SIP — so a group of
8 stays in one CUBE and the all-reduce's traffic stays on its NoC as long
as it can; ``spread`` takes one PE of every CUBE before a second one of any
(PE ``i`` is PE ``i // cubes`` of CUBE ``i % cubes``), spreading the layer
over more CUBEs' NoCs and routers at the price of an all-reduce that
crosses CUBEs from its first step. Each PE keeps its weights and KV cache
in its own HBM slice either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernbench.layers.presets import ModelShape
from kernbench.topology.ids import NodeId

PLACEMENTS = ("packed", "spread")
PHASES = ("decode", "prefill")


@dataclass(frozen=True, slots=True)
class Plan:
    """One layer's split over its PEs (the arithmetic of the module docstring)."""

    shape: ModelShape
    phase: str
    batch: int
    seq: int  # context (decode) or prompt length (prefill)
    tp: int

    @property
    def tokens(self) -> int:
        """Rows of the layer's input: one per sequence (decode) or per prompt token (prefill)."""
        return self.batch if self.phase == "decode" else self.batch * self.seq

    @property
    def ql(self) -> int:
        """Query heads per PE."""
        return self.shape.heads // self.tp

    @property
    def kvl(self) -> int:
        """KV heads each PE holds whole (1 when a group of PEs shares one)."""
        return max(1, self.shape.kv_heads // self.tp)

    @property
    def sharing(self) -> int:
        """PEs sharing one KV head (P; 1 when each PE holds whole KV heads)."""
        return max(1, self.tp // self.shape.kv_heads)

    @property
    def fl(self) -> int:
        """FFN columns per PE."""
        return self.shape.ffn // self.tp

    def kv_head(self, p: int, hh: int = 0) -> int:
        """The global index of PE ``p``'s ``hh``-th KV head."""
        return p // self.sharing if self.sharing > 1 else p * self.kvl + hh

    def context(self, p: int) -> tuple[int, int]:
        """The KV cache tokens PE ``p`` holds (decode): its share of its head's ``seq`` past tokens."""
        r, n = p % self.sharing, self.sharing
        return self.seq * r // n, self.seq * (r + 1) // n

    def holds_new_token(self, p: int) -> bool:
        """PE ``p`` projects the new token's K and V and attends to it (decode): the last member of its group."""
        return p % self.sharing == self.sharing - 1

    def problems(self) -> list[str]:
        """Why the model does not split over ``tp`` PEs this way (empty when it does)."""
        s, tp = self.shape, self.tp
        out = []
        if s.heads % tp:
            out.append(f"--tp {tp} must divide the {s.heads} query heads of {s.name}")
        if tp <= s.kv_heads and s.kv_heads % tp:
            out.append(f"--tp {tp} must divide the {s.kv_heads} KV heads of {s.name}")
        if tp > s.kv_heads and (tp % s.kv_heads or (tp // s.kv_heads) & (tp // s.kv_heads - 1)):
            out.append(f"--tp {tp}: PEs per KV head (tp / {s.kv_heads}) must be a power of two (their merge is a butterfly)")
        if s.ffn % tp:
            out.append(f"--tp {tp} must divide the FFN size {s.ffn} of {s.name}")
        if self.phase == "decode" and tp > s.kv_heads and self.seq < tp // s.kv_heads:
            out.append(f"--seq {self.seq}: each of the {tp // s.kv_heads} PEs sharing a KV head needs a token of context")
        return out


def choose_pes(pe_ids: list[str], count: int, placement: str) -> list[int]:
    """The indices (into ``pe_ids``, ordered by SIP, CUBE, PE) of the ``count`` PEs a layer runs on."""
    if placement == "packed":
        return list(range(count))
    cubes: dict[tuple[int | None, int | None], list[int]] = {}
    for i, pid in enumerate(pe_ids):
        node = NodeId.parse(pid)
        cubes.setdefault((node.sip, node.cube), []).append(i)
    order = [members[k] for k in range(max(len(m) for m in cubes.values())) for members in cubes.values() if k < len(members)]
    return order[:count]
