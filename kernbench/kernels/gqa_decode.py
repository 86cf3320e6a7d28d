"""GQA fused-attention decode (one new token), flash-decoding over the PEs.

Shapes: ``heads`` query heads share ``kv_heads`` KV heads (G = heads /
kv_heads query heads per KV head), ``head_dim`` d, ``context`` tokens of KV
cache, batch 1, float16 inputs, float32 accumulation, KV tile ``tile`` tokens.

Placement (split-K / flash-decoding): each KV head is served by
``pes_per_head`` PEs (P). Program ``h * P + r`` owns the contiguous KV range
``[context * r // P, context * (r + 1) // P)`` of KV head ``h`` and finds it
in its *own* HBM slice, with a copy of the group's Q block (G × d). K is kept
transposed (``Kᵀ``, so that ``S = Q·Kᵀ`` is a plain GEMM for every variant);
V is n × d, row-major, so a tile of V is a contiguous block.

Kᵀ layout (``layout``): HBM moves bursts at their real addresses, and a
pseudo-channel is chosen by address. ``tiled`` (default) stores each KV
tile's Kᵀ block (d × T) contiguously, tile after tile — a kernel writer's
layout: a tile read spreads over all eight channels. ``naive`` stores Kᵀ as
one row-major d × n matrix: a tile is a column block whose d rows (T × 2 B
each) sit ``n × 2`` bytes apart — with n = 1024 that is 2048 B, eight bursts,
so every row lands on the same pseudo-channel and a tile read drains one
channel instead of eight.

Per tile (T tokens, the last one may be shorter) every program runs the
online-softmax update on its running ``(m, l, O)``::

    S = Q·Kᵀ_t            (G × T, Q pre-scaled by 1/sqrt(d))
    m' = max(m, rowmax(S));  corr = exp(m − m');  P = exp(S − m')
    l = l·corr + rowsum(P);  O = O·corr + P·V_t

Then the P programs of a KV head merge their partials pairwise with IPCQ
send/recv in a binary tree over ``r`` (steps 1, 2, 4, … — with 8 PEs per
CUBE the first steps stay inside a CUBE, later ones cross CUBEs) and program
``r = 0`` writes ``O / l`` (float16) to its HBM slice.

Variants (same math, different command streams):

``primitive``
    single-op ``tl`` calls: lazy ``tl.load`` of the Kᵀ and V tiles (next
    tile's loads issued before this tile's math), ``tl.dot``, math ops —
    15 commands per tile.
``opt3``
    the ADR-0060 hybrid: both GEMMs as ``tl.composite`` with the K / V tiles
    as ``tl.ref`` operands, the softmax merge as single-OpSpec composites —
    11 composite commands per tile.
``opt2``
    ADR-0065 "Option Y": composite #1 = Q·Kᵀ, composite #2 = the 9-step
    softmax-merge recipe plus the accumulating P·V GEMM as one 10-op
    composite with the running ``m``, ``l``, ``O`` as ``rw_handles`` —
    2 commands per tile.

The tile loop is bracketed by two zero-cycle ``tl.cycles(0)`` markers (no
dispatch, no time) so per-tile figures can be read off the command log.
The prologue (Q load + scale) and the merge epilogue are the same single-op
code in all three variants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import kernbench.tl as tl
from kernbench.float16 import to_float32
from kernbench.handles import HbmTensor, Ptr, TensorHandle
from kernbench.kernels.data import placeholder, random_f16
from kernbench.kernels.registry import OpLogEntry, Option, Params, Prepared, Summary, kernel
from kernbench.runtime.api import RunResult, Runtime

VARIANTS = ("primitive", "opt3", "opt2")
LAYOUTS = ("tiled", "naive")

#: Stated tolerance vs the float32 numpy reference (f16 inputs, f16 scaled Q,
#: f32 accumulation, f16 output): max |err| on outputs of magnitude ≲ 1.
TOLERANCE = 4e-3

Handle = TensorHandle  # what a kernel holds: a TCM tile or a tl.ref
Partial = tuple[TensorHandle, TensorHandle, TensorHandle]  # a program's running (m, l, O)


def _ranges(context: int, pes: int) -> list[tuple[int, int]]:
    return [(context * r // pes, context * (r + 1) // pes) for r in range(pes)]


def _tiles(n: int, tile: int) -> list[tuple[int, int]]:
    return [(t0, min(n, t0 + tile)) for t0 in range(0, n, tile)]


class KTiles:
    """One program's Kᵀ, tile by tile: ``block(t0, t1)`` is the region of tokens ``[t0, t1)``."""

    def __init__(self, naive: HbmTensor | None = None, tiles: dict[int, HbmTensor] | None = None) -> None:
        self._naive = naive  # one d × n tensor
        self._tiles = tiles or {}  # t0 -> a d × T tensor

    def block(self, t0: int, t1: int) -> Ptr | HbmTensor:
        if self._naive is not None:
            return self._naive[:, t0:t1]
        return self._tiles[t0]


# --- the per-tile bodies ----------------------------------------------------


def _loop_primitive(q: Handle, kt: KTiles, v: HbmTensor, n: int, tile: int, m: Handle, l: Handle, o: Handle) -> Partial:
    tiles = _tiles(n, tile)
    nxt = (tl.load(kt.block(*tiles[0])), tl.load(v[tiles[0][0] : tiles[0][1], :]))
    for i, _ in enumerate(tiles):
        k_t, v_t = nxt
        if i + 1 < len(tiles):
            a, b = tiles[i + 1]
            nxt = (tl.load(kt.block(a, b)), tl.load(v[a:b, :]))
        s = tl.dot(q, k_t)
        m_new = tl.maximum(m, tl.rowmax(s))
        corr = tl.exp(tl.sub(m, m_new))
        p = tl.exp(tl.sub_bcast(s, m_new))
        l = tl.add(tl.mul(l, corr), tl.rowsum(p))
        o = tl.add(tl.mul_bcast(o, corr), tl.dot(p, v_t))
        m = m_new
        del k_t, v_t, s, corr, p
    return m, l, o


def _loop_opt3(q: Handle, kt: KTiles, v: HbmTensor, n: int, tile: int, m: Handle, l: Handle, o: Handle) -> Partial:
    g, d = q.shape
    C = tl.composite
    for t0, t1 in _tiles(n, tile):
        T = t1 - t0
        s = tl.zeros((g, T))
        C([tl.OpSpec("gemm", {"a": q, "b": tl.ref(kt.block(t0, t1))}, s, extra={"m": g, "k": d, "n": T})])
        mt, m_new, corr = tl.zeros((g, 1)), tl.zeros((g, 1)), tl.zeros((g, 1))
        C([tl.OpSpec("rowmax", {"x": s}, mt)])
        C([tl.OpSpec("maximum", {"a": m, "b": mt}, m_new)])
        C([tl.OpSpec("sub", {"a": m, "b": m_new}, corr)])
        C([tl.OpSpec("exp", {"x": corr}, corr)], rw_handles=(corr,))
        C([tl.OpSpec("sub_bcast", {"a": s, "b": m_new}, s)], rw_handles=(s,))
        C([tl.OpSpec("exp", {"x": s}, s)], rw_handles=(s,))
        C([tl.OpSpec("mul", {"a": l, "b": corr}, l)], rw_handles=(l,))
        C([tl.OpSpec("rowsum", {"x": s}, l, extra={"accumulate": True})], rw_handles=(l,))
        C([tl.OpSpec("mul_bcast", {"a": o, "b": corr}, o)], rw_handles=(o,))
        C([tl.OpSpec("gemm", {"a": s, "b": tl.ref(v[t0:t1, :])}, o, extra={"m": g, "k": T, "n": d, "accumulate": True})], rw_handles=(o,))
        m = m_new
        del s, mt, corr
    return m, l, o


def opt2_recipe(
    q_s: Handle, m: Handle, m_new: Handle, l: Handle, o: Handle, corr: Handle, mt: Handle, v_ref: Handle, g: int, T: int, d: int
) -> list[tl.OpSpec]:
    """Composite #2 of opt2: softmax_merge (9 ops) + accumulating P·V GEMM."""
    S = tl.OpSpec
    return [
        S("rowmax", {"x": q_s}, mt),
        S("maximum", {"a": m, "b": mt}, m_new),
        S("sub", {"a": m, "b": m_new}, corr),
        S("exp", {"x": corr}, corr),
        S("sub_bcast", {"a": q_s, "b": m_new}, q_s),
        S("exp", {"x": q_s}, q_s),
        S("mul", {"a": l, "b": corr}, l),
        S("rowsum", {"x": q_s}, l, extra={"accumulate": True}),
        S("mul_bcast", {"a": o, "b": corr}, o),
        S("gemm", {"a": q_s, "b": v_ref}, o, extra={"m": g, "k": T, "n": d, "accumulate": True}),
    ]


def _loop_opt2(q: Handle, kt: KTiles, v: HbmTensor, n: int, tile: int, m: Handle, l: Handle, o: Handle, extra_ops: int = 0) -> Partial:
    g, d = q.shape
    m_other = tl.zeros((g, 1))
    corr, mt = tl.zeros((g, 1)), tl.zeros((g, 1))
    for t0, t1 in _tiles(n, tile):
        T = t1 - t0
        s = tl.zeros((g, T))
        tl.composite([tl.OpSpec("gemm", {"a": q, "b": tl.ref(kt.block(t0, t1))}, s, extra={"m": g, "k": d, "n": T})])
        ops = opt2_recipe(s, m, m_other, l, o, corr, mt, tl.ref(v[t0:t1, :]), g, T, d)
        # extra_ops > 0 pads the recipe with no-op copies (tests of the D7 cap).
        ops += [tl.OpSpec("copy", {"x": o}, o) for _ in range(extra_ops)]
        tl.composite(ops, rw_handles=(m_other, l, o))
        m, m_other = m_other, m  # the two m buffers alternate tile to tile
        del s
    return m, l, o


LOOPS: dict[str, Callable[[Handle, KTiles, HbmTensor, int, int, Handle, Handle, Handle], Partial]] = {
    "primitive": _loop_primitive,
    "opt3": _loop_opt3,
    "opt2": _loop_opt2,
}


def _merge(m: Handle, l: Handle, o: Handle, m2: Handle, l2: Handle, o2: Handle) -> Partial:
    m_new = tl.maximum(m, m2)
    c1 = tl.exp(tl.sub(m, m_new))
    c2 = tl.exp(tl.sub(m2, m_new))
    l = tl.add(tl.mul(l, c1), tl.mul(l2, c2))
    o = tl.add(tl.mul_bcast(o, c1), tl.mul_bcast(o2, c2))
    return m_new, l, o


def gqa_decode(
    variant: str,
    qs: list[HbmTensor],
    kts: list[KTiles],
    vs: list[HbmTensor],
    outs: list[HbmTensor],
    pes_per_head: int,
    tile: int,
    extra_ops: int = 0,
) -> None:
    me = tl.program_id()
    h, r = divmod(me, pes_per_head)
    g, d = qs[me].shape
    n = vs[me].shape[0]
    q = tl.scale(tl.load(qs[me]), 1.0 / math.sqrt(d))
    m = tl.full((g, 1), -np.inf)
    l = tl.zeros((g, 1))
    o = tl.zeros((g, d))
    tl.cycles(0)  # marker: tile loop starts
    if variant == "opt2":
        m, l, o = _loop_opt2(q, kts[me], vs[me], n, tile, m, l, o, extra_ops)
    else:
        m, l, o = LOOPS[variant](q, kts[me], vs[me], n, tile, m, l, o)
    tl.cycles(0)  # marker: tile loop ends
    step = 1
    while step < pes_per_head:
        if r % (2 * step) == step:
            for x in (m, l, o):
                tl.send(me - step, x)
            return
        if r + step < pes_per_head:
            src = me + step
            futs = (tl.recv_async(src, (g, 1)), tl.recv_async(src, (g, 1)), tl.recv_async(src, (g, d)))
            m2, l2, o2 = (tl.wait(f) for f in futs)
            m, l, o = _merge(m, l, o, m2, l2, o2)
            del m2, l2, o2, futs
        step *= 2
    tl.store(outs[h], tl.div(o, l))


# --- reference, setup, registration -----------------------------------------


def reference(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> np.ndarray:
    """float32 attention of one query token: Q (H, d), K/V (kv_heads, ctx, d) → (H, d)."""
    return reference_blocks(Q, [[K[h].T] for h in range(K.shape[0])], [[V[h]] for h in range(V.shape[0])])


def reference_blocks(Q: np.ndarray, kt_blocks: list[list[np.ndarray]], v_blocks: list[list[np.ndarray]]) -> np.ndarray:
    """The same from the KV cache as stored: per KV head, Kᵀ blocks (d × n_i) and
    V blocks (n_i × d) in context order — no copy of the whole cache is made."""
    H, d = Q.shape
    kvh = len(kt_blocks)
    G = H // kvh
    out = np.empty((H, d), np.float32)
    for h in range(kvh):
        q = Q[h * G : (h + 1) * G].astype(np.float32)
        s = np.concatenate([q @ to_float32(kt) for kt in kt_blocks[h]], axis=1) / np.float32(math.sqrt(d))
        p = np.exp(s - s.max(axis=1, keepdims=True))
        pv = np.zeros((G, d), np.float32)
        n0 = 0
        for v in v_blocks[h]:
            pv += p[:, n0 : n0 + len(v)] @ to_float32(v)
            n0 += len(v)
        out[h * G : (h + 1) * G] = pv / p.sum(axis=1, keepdims=True)
    return out


def pes_per_head_for(pes_available: int, p: Params) -> int:
    pph: int = p.get("pes_per_head", 0) or pes_available // p["kv_heads"]
    context: int = p["context"]
    return max(1, min(pph, context))


MAX_KV_ELEMENTS = 2**26  # kv_heads × context × head_dim: K and V (float16) take at most 256 MiB


def check_options(p: Params, pes_available: int, data: bool = True) -> list[str]:
    """Rules between the options and against the topology (each option's range is checked before).

    The KV size limit holds only for a run holding data (``data``): a ``--no-data`` run deploys no
    values, so it is checked by the set-up, which knows the runtime, before anything is deployed."""
    H, kvh, d, ctx = p["heads"], p["kv_heads"], p["head_dim"], p["context"]
    problems = []
    if p["variant"] not in VARIANTS:
        problems.append(f"--variant must be one of {', '.join(VARIANTS)}, not {p['variant']!r}")
    if min(H, kvh, d, ctx, p["tile"]) < 1 or p.get("pes_per_head", 0) < 0:
        problems.append("--heads, --kv-heads, --head-dim, --context and --tile must be >= 1, --pes-per-head >= 0")
    elif H % kvh:
        problems.append(f"--heads {H} must be a multiple of --kv-heads {kvh}")
    elif data and kvh * ctx * d > MAX_KV_ELEMENTS:
        problems.append(f"--kv-heads × --context × --head-dim = {kvh * ctx * d:,} KV elements; at most {MAX_KV_ELEMENTS:,}")
    elif kvh * (P := pes_per_head_for(pes_available, p)) > pes_available:
        problems.append(f"--kv-heads × --pes-per-head = {kvh * P} PEs, but the topology has {pes_available}")
    return problems


PARAMS = (
    Option("variant", str, "opt2", "kernel form", VARIANTS),
    Option("heads", int, 64, "query heads", low=1, high=4096),
    Option("kv_heads", int, 8, "KV heads (query heads per KV head = heads / kv_heads)", low=1, high=4096),
    Option("head_dim", int, 128, "head dimension d", low=1, high=4096),
    Option("context", int, 32768, "KV context length (tokens)", low=1, high=2**20),
    Option("tile", int, 128, "KV tile (tokens per tile)", low=1, high=2**20),
    Option("pes_per_head", int, 0, "PEs serving one KV head (0: all PEs / kv_heads)", low=0, high=4096),
    Option("layout", str, "tiled", "Kᵀ in HBM: tiled (each tile's block contiguous) or naive (one row-major d × n)", LAYOUTS),
    Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
)


@kernel(
    options=PARAMS,
    name="gqa-decode",
    description="GQA fused-attention decode, flash-decoding split over PEs (variants primitive, opt3, opt2)",
    topology="paper",
    check=lambda p, pes: check_options(p, pes, data=False),
)
def setup(rt: Runtime, extra_ops: int = 0, **p: Any) -> Prepared:
    variant = p["variant"]
    problems = check_options(dict(p, pes_per_head=p.get("pes_per_head", 0)), len(rt.pe_ids()), rt.holds_data)
    if problems:
        raise ValueError("; ".join(problems))
    H, kvh, d, ctx, T = p["heads"], p["kv_heads"], p["head_dim"], p["context"], p["tile"]
    P = pes_per_head_for(len(rt.pe_ids()), p)
    G = H // kvh
    layout = p.get("layout", "tiled")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    rng = np.random.default_rng(p.get("seed", 0))
    data = rt.holds_data

    def values(shape: tuple[int, ...]) -> np.ndarray:  # (no data: the shape alone, drawn nothing)
        return random_f16(rng, shape) if data else placeholder(shape)

    Q = values((H, d))
    qs: list[HbmTensor] = []
    kts: list[KTiles] = []
    vs: list[HbmTensor] = []
    outs: list[HbmTensor] = []
    k_parts: list[list[list[np.ndarray]]] = []  # per KV head: each program's Kᵀ blocks, as deployed (for the reference)
    v_parts: list[list[np.ndarray]] = []
    ranges = _ranges(ctx, P)
    for h in range(kvh):
        k_parts.append([])
        v_parts.append([])
        for r, (a, b) in enumerate(ranges):
            pe = h * P + r
            qs.append(rt.deploy(Q[h * G : (h + 1) * G], pe=pe, name=f"Q{h}.{r}"))
            # drawn per program straight into the layout it is stored in: held once
            if layout == "naive":
                kt = rt.deploy(values((d, b - a)), pe=pe, name=f"Kt{h}.{r}", copy=False)
                kts.append(KTiles(naive=kt))
                k_parts[h].append([kt.layout])
            else:
                tiles = {t0: rt.deploy(values((d, t1 - t0)), pe=pe, name=f"Kt{h}.{r}.{t0}", copy=False) for t0, t1 in _tiles(b - a, T)}
                kts.append(KTiles(tiles=tiles))
                k_parts[h].append([t.layout for t in tiles.values()])
            v = rt.deploy(values((b - a, d)), pe=pe, name=f"V{h}.{r}", copy=False)
            vs.append(v)
            v_parts[h].append(v.layout)
        outs.append(rt.empty((G, d), np.float16, pe=h * P, name=f"O{h}"))
    rt.launch(gqa_decode, pes=range(kvh * P), args=(variant, qs, kts, vs, outs, P, T, extra_ops))
    ref: list[np.ndarray] = []  # computed on the first check(), not at setup
    tiles_total = kvh * sum(len(_tiles(b - a, T)) for a, b in ranges)

    def check() -> float:
        if not ref:
            ref.append(reference_blocks(Q, [[blk for part in k_parts[h] for blk in part] for h in range(kvh)], v_parts))
        got = np.concatenate([rt.read(o) for o in outs]).astype(np.float32)
        return float(np.abs(got - ref[0]).max())

    def summary(result: RunResult) -> Summary:
        s = per_tile(result, tiles_total)
        s.update(tiles=tiles_total, pes_per_head=P, group=G)
        return s

    return Prepared(check, summary, variant)


def loop_entries(op_log: list[OpLogEntry]) -> list[OpLogEntry]:
    """The commands a PE issued inside its tile loop (between the two markers)."""
    marks = [i for i, e in enumerate(op_log) if e["op"] == "cpu/cycles"]
    if len(marks) < 2:
        return []
    return [e for e in op_log[marks[0] + 1 : marks[1]]]


def per_tile(result: RunResult, tiles_total: int) -> Summary:
    entries = [e for log in result.op_logs.values() for e in loop_entries(log)]
    t = max(1, tiles_total)
    return {
        "cmds_per_tile": round(len(entries) / t, 3),
        "bytes_per_tile": round(sum(e["logical_bytes"] for e in entries) / t, 3),
        "dispatch_cycles_per_tile": round(sum(e["dispatch_cycles"] for e in entries) / t, 3),
    }
