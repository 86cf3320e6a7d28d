"""Attention of a layer: decode (flash-decoding, as ``gqa-decode``) and causal prefill (flash-style); the ``attention-prefill`` kernel.

Both keep the online-softmax state ``(m, l, O)`` of a block of query rows and
fold in one KV tile at a time with the two composites of ``gqa-decode``'s
``opt2`` form: ``S = Q·Kᵀ_t`` (the Kᵀ tile streamed as a ``tl.ref``), then
the softmax-merge recipe plus the accumulating ``P·V_t`` GEMM
(:func:`kernbench.kernels.gqa_decode.opt2_recipe`). Q is pre-scaled by
``1/sqrt(d)``. The KV cache is kept as in ``gqa-decode``'s ``tiled`` layout:
per sequence and KV head, Kᵀ tile after tile (each d × T block contiguous)
and V tile after tile (T × d).

**Decode** (one new token per sequence): the query rows are the G query
heads of one KV head; a PE folds in its own share of the cached tokens,
then (the last PE of the group) the new token from TCM, storing its K and V
into the cache's next slot. The PEs sharing a KV head merge their states
with a butterfly (:func:`merge_butterfly`), so each ends with the whole.

**Prefill** (causal): the query rows are a tile of T prompt tokens of one
head. Key tiles after the query tile are skipped (causality); the diagonal
tile is masked with ``tl.causal_mask`` (made on PE_MATH from the tile's two
offsets: no HBM traffic) and ``tl.where``; the tiles before it need no mask.
"""

from __future__ import annotations

import math

import numpy as np

import kernbench.tl as tl
from kernbench.handles import HbmTensor, Ptr, TensorHandle
from kernbench.kernels.gqa_decode import opt2_recipe
from kernbench.kernels.registry import Option, Params, Prepared, kernel
from kernbench.layers.tensors import ACTIVATION, DTYPES, TOLERANCE, Filler, f32
from kernbench.runtime.api import Runtime

State = tuple[TensorHandle, TensorHandle, TensorHandle]  # (m, l, O) of a block of query rows


class Softmax:
    """The online-softmax state of ``g`` query rows of width ``d``, folded in tile by tile."""

    def __init__(self, g: int, d: int) -> None:
        self.g, self.d = g, d
        self.m = tl.full((g, 1), -np.inf)
        self.m_other = tl.zeros((g, 1))  # (the two m buffers alternate tile to tile, as in gqa-decode)
        self.l = tl.zeros((g, 1))
        self.o = tl.zeros((g, d))
        self.corr, self.mt = tl.zeros((g, 1)), tl.zeros((g, 1))

    def fold(self, s: TensorHandle, v: TensorHandle) -> None:
        """Fold in the scores ``s`` (g × T) of a tile whose values are ``v`` (T × d: a tl.ref or a TCM tile)."""
        t = s.shape[1]
        tl.composite(
            opt2_recipe(s, self.m, self.m_other, self.l, self.o, self.corr, self.mt, v, self.g, t, self.d),
            rw_handles=(self.m_other, self.l, self.o),
        )
        self.m, self.m_other = self.m_other, self.m

    def scores(self, q: TensorHandle, kt: HbmTensor | Ptr) -> TensorHandle:
        """``q · Kᵀ_t`` of a Kᵀ tile (d × T) in HBM, as one composite streaming it."""
        s = tl.zeros((self.g, kt.shape[1]))
        tl.composite([tl.OpSpec("gemm", {"a": q, "b": tl.ref(kt)}, s, extra={"m": self.g, "k": self.d, "n": kt.shape[1]})])
        return s

    @property
    def state(self) -> State:
        return self.m, self.l, self.o


def tile_ranges(n: int, tile: int) -> list[tuple[int, int]]:
    return [(t0, min(n, t0 + tile)) for t0 in range(0, n, tile)]


def kv_tile(kt: HbmTensor | Ptr, v: HbmTensor | Ptr, i: int, width: int) -> tuple[HbmTensor | Ptr, HbmTensor | Ptr]:
    """Tile ``i`` of a cache (Kᵀ tiles (n, d, T), V tiles (n, T, d)), its first ``width`` tokens."""
    full = width == kt.shape[2]
    return (kt[i] if full else kt[i, :, :width]), (v[i] if full else v[i, :width, :])


def decode_partial(
    q: TensorHandle, kt: HbmTensor | Ptr, v: HbmTensor | Ptr, n: int, new: tuple[TensorHandle, TensorHandle] | None
) -> State:
    """The state of ``q`` (G × d, scaled) over ``n`` cached tokens of one sequence's KV head (Kᵀ tiles ``kt``,
    V tiles ``v``) and, with ``new = (k (d × 1), v (1 × d))``, the new token, whose K and V go into slot ``n``."""
    g, d = q.shape
    tile = kt.shape[2]
    sm = Softmax(g, d)
    for i, (t0, t1) in enumerate(tile_ranges(n, tile)):
        k_t, v_t = kv_tile(kt, v, i, t1 - t0)
        sm.fold(sm.scores(q, k_t), tl.ref(v_t))
    if new is not None:
        k_new, v_new = new
        sm.fold(tl.dot(q, k_new), v_new)
        i, c = divmod(n, tile)
        tl.store(kt[i, :, c : c + 1], k_new)
        tl.store(v[i, c : c + 1, :], v_new)
    return sm.state


def merge(a: State, b: State) -> State:
    """Two states of the same query rows over disjoint keys, as one."""
    (m, l, o), (m2, l2, o2) = a, b
    m_new = tl.maximum(m, m2)
    c1 = tl.exp(tl.sub(m, m_new))
    c2 = tl.exp(tl.sub(m2, m_new))
    return m_new, tl.add(tl.mul(l, c1), tl.mul(l2, c2)), tl.add(tl.mul_bcast(o, c1), tl.mul_bcast(o2, c2))


def merge_butterfly(state: State, members: list[int], me: int) -> State:
    """Every member of ``members`` (program ids, a power of two of them) ends with the merge of all their states:
    at step ``s`` each exchanges its state with the member ``s`` places away (r XOR s) and merges."""
    r = members.index(me)
    step = 1
    g, d = state[2].shape
    while step < len(members):
        partner = members[r ^ step]
        futs = (tl.recv_async(partner, (g, 1)), tl.recv_async(partner, (g, 1)), tl.recv_async(partner, (g, d)))
        for x in state:
            tl.send(partner, x)
        got = tuple(tl.wait(f) for f in futs)
        # the same order of operands on both sides: the lower member's state first (bit-identical results)
        state = merge(state, got) if r < r ^ step else merge(got, state)  # type: ignore[arg-type]
        step *= 2
    return state


def prefill_partial(
    q: TensorHandle,
    kt: HbmTensor | Ptr,
    v: HbmTensor | Ptr,
    i: int,
    diag: tuple[TensorHandle, TensorHandle] | None,
    mask: TensorHandle,
    ninf: TensorHandle,
) -> State:
    """The state of query tile ``i`` (``q``: T × d, scaled) over key tiles ``0 … i`` of a causal prompt: the
    diagonal (masked) from TCM (``diag = (Kᵀ tile, V tile)``) or, without it, from the cache like the others."""
    g, d = q.shape
    sm = Softmax(g, d)
    if diag is not None:
        s, v_d = tl.dot(q, diag[0]), diag[1]
    else:
        k_t, v_t = kv_tile(kt, v, i, kt.shape[2])
        s, v_d = sm.scores(q, k_t), tl.ref(v_t)
    sm.fold(tl.where(mask, s, ninf), v_d)
    for t in range(i):
        k_t, v_t = kv_tile(kt, v, t, kt.shape[2])
        sm.fold(sm.scores(q, k_t), tl.ref(v_t))
    return sm.state


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """float32 attention of ``q`` (n, d) over ``k``, ``v`` (m, d); causal: query i sees keys ≤ i + (m − n)."""
    s = (q.astype(np.float32) @ k.astype(np.float32).T) / np.float32(math.sqrt(q.shape[1]))
    if causal:
        n, m = s.shape
        s = np.where(np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    out: np.ndarray = (p @ v.astype(np.float32)) / p.sum(axis=1, keepdims=True)
    return out


# --- the attention-prefill kernel --------------------------------------------------


def _prefill_kernel(
    qs: list[list[HbmTensor]], kts: list[list[HbmTensor]], vs: list[list[HbmTensor]], outs: list[list[HbmTensor]], group: int
) -> None:
    me = tl.program_id()
    tile = kts[me][0].shape[2]
    mask = tl.causal_mask(0, 0, (tile, tile))  # every diagonal tile's: queries and keys at the same offsets
    ninf = tl.full((1, 1), -np.inf)
    for j, (q_h, out) in enumerate(zip(qs[me], outs[me], strict=True)):
        kt, v = kts[me][j // group], vs[me][j // group]
        d = q_h.shape[1]
        for i, (r0, r1) in enumerate(tile_ranges(q_h.shape[0], tile)):
            q = tl.scale(tl.load(q_h[r0:r1, :]), 1.0 / math.sqrt(d))
            _m, l, o = prefill_partial(q, kt, v, i, None, mask, ninf)
            tl.store(out[r0:r1, :], tl.div(o, l))


def _check(p: Params, pes: int) -> list[str]:
    problems = []
    if p["pes"] > pes:
        problems.append(f"--pes {p['pes']}: the topology has {pes}")
    if p["heads"] % p["kv_heads"]:
        problems.append(f"--heads {p['heads']} must be a multiple of --kv-heads {p['kv_heads']}")
    if p["kv_heads"] % p["pes"]:
        problems.append(f"--pes {p['pes']} must divide --kv-heads {p['kv_heads']} (each PE its KV heads whole)")
    if p["seq"] % p["tile"]:
        problems.append(f"--seq {p['seq']} must divide by --tile {p['tile']}")
    return problems


@kernel(
    options=[
        Option("seq", int, 512, "prompt length (tokens)", low=1, high=2**20),
        Option("heads", int, 8, "query heads", low=1, high=4096),
        Option("kv_heads", int, 4, "KV heads", low=1, high=4096),
        Option("head_dim", int, 128, "head dimension d", low=1, high=4096),
        Option("tile", int, 64, "tokens per query and per KV tile", low=1, high=65536),
        Option("pes", int, 4, "PEs, each its KV heads and their query heads", low=1, high=4096),
        Option("dtype", str, "bfloat16", "dtype of Q, K, V and the output", tuple(DTYPES)),
        Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
    ],
    check=_check,
    name="attention-prefill",
)
def prefill_setup(rt: Runtime, seq: int, heads: int, kv_heads: int, head_dim: int, tile: int, pes: int, dtype: str, seed: int) -> Prepared:
    """Causal prefill attention, flash-style over KV tiles; the diagonal tile masked by tl.causal_mask."""
    fill = Filler(rt, seed)
    dt, d, group = DTYPES[dtype], head_dim, heads // kv_heads
    kvl = kv_heads // pes
    nt = seq // tile
    qs, kts, vs, outs = [], [], [], []
    for p in range(pes):
        kts.append([fill.random((nt, d, tile), dt, 1.0, pe=p, name=f"Kt{p}.{h}") for h in range(kvl)])
        vs.append([fill.random((nt, tile, d), dt, 1.0, pe=p, name=f"V{p}.{h}") for h in range(kvl)])
        qs.append([fill.random((seq, d), ACTIVATION[dtype], 1.0, pe=p, name=f"Q{p}.{j}") for j in range(kvl * group)])
        outs.append([rt.empty((seq, d), ACTIVATION[dtype], pe=p, name=f"O{p}.{j}") for j in range(kvl * group)])
    rt.launch(_prefill_kernel, pes=range(pes), args=(qs, kts, vs, outs, group))

    def check() -> float:
        err = 0.0
        for p in range(pes):
            for j in range(kvl * group):
                k = f32(kts[p][j // group]).transpose(0, 2, 1).reshape(seq, d)
                ref = reference(f32(qs[p][j]), k, f32(vs[p][j // group]).reshape(seq, d), causal=True)
                err = max(err, float(np.abs(f32(outs[p][j]) - ref).max()))
        return err

    return Prepared(check, lambda result: {"tolerance": TOLERANCE[dtype]})
