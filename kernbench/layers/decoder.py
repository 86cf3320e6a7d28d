"""A whole Llama-style decoder layer, tensor-parallel: the ``decoder-layer`` kernel.

``out = h + MLP(RMSNorm(h))``, ``h = x + Attention(RMSNorm(x))``, for
``--model`` (:mod:`~kernbench.layers.presets`), in ``--phase decode`` (one
new token for each of ``--batch`` sequences with ``--seq`` tokens of KV
cache) or ``--phase prefill`` (``--batch`` prompts of ``--seq`` tokens,
causal), on ``--tp`` PEs split as :mod:`~kernbench.layers.placement` says.

Each PE, with its own weights and KV cache in its HBM slice:

1. RMSNorm of its copy of ``x`` (every PE holds the layer input, as the
   previous layer's all-reduce leaves it);
2. its query heads' (and, if it holds them, its KV heads') projections as
   composites streaming the weights; RoPE (:mod:`~kernbench.layers.rope`),
   with ``1/sqrt(d)`` folded into the queries' cos/sin;
3. attention (:mod:`~kernbench.layers.attention`): decode per sequence and
   KV head over its share of the cache (its group's PEs exchange their query
   heads first, stacked by selection GEMMs, and merge their softmax states
   after), prefill per query tile and head, causal;
4. its heads' output rows into an HBM buffer, the output projection (its
   rows of ``Wo``) into its partial-sum buffer, an all-reduce over the
   ``tp`` PEs, the residual;
5. RMSNorm, its FFN columns of the SwiGLU MLP (:mod:`~kernbench.layers.mlp`),
   an all-reduce; PE 0 adds the residual and writes ``out``.

A buffer written by a store (or a collective) and read back by the same PE
is not ordered in *time* after the write (the model tracks no hazards
through HBM; the values are in program order): the attention outputs
before the output projection and the all-reduced sums before the residual.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import kernbench.tl as tl
from kernbench.collectives import ALGORITHMS, all_reduce
from kernbench.collectives.group import Group
from kernbench.handles import HbmTensor, TensorHandle
from kernbench.kernels.registry import Option, Params, Prepared, Summary, kernel
from kernbench.layers import attention, mlp, norm, rope
from kernbench.layers.norm import rmsnorm
from kernbench.layers.placement import PHASES, PLACEMENTS, Plan, choose_pes
from kernbench.layers.presets import MODELS, PRESETS
from kernbench.layers.rope import rope_rows
from kernbench.layers.tensors import ACTIVATION, DTYPES, TOLERANCE, Filler, f32, inv_freq, rotation
from kernbench.runtime.api import RunResult, Runtime

F32 = np.float32


@dataclass
class PeTensors:
    """What one PE of the layer holds in its HBM slice."""

    x: HbmTensor  # the layer input (tokens × H)
    norms: tuple[HbmTensor, HbmTensor]  # the two RMSNorm weights (1 × H)
    wq: HbmTensor  # decode: H × (ql·d); prefill: ql × H × d
    wo: HbmTensor  # (ql·d) × H
    mlp: tuple[HbmTensor, HbmTensor, HbmTensor]  # Wg, Wu (H × fl), Wd (fl × H)
    rot: HbmTensor  # RoPE's rotate-half (d × d)
    rope: HbmTensor  # decode: the new token's angles (1 × d); prefill: the frequencies (1 × d)
    attn: HbmTensor  # this PE's heads' attention output (tokens × ql·d)
    partial: tuple[HbmTensor, HbmTensor]  # the partial sums after Wo and after Wd (tokens × H): all-reduced
    wk: HbmTensor | None = None  # decode: H × (kvl·d), held by the PEs projecting K/V; prefill: kvl × H × d
    wv: HbmTensor | None = None
    kt: list[HbmTensor] = field(default_factory=list)  # per local KV head: Kᵀ tiles (batch, n, d, T)
    v: list[HbmTensor] = field(default_factory=list)  # per local KV head: V tiles (batch, n, T, d)
    positions: HbmTensor | None = None  # prefill: the prompt positions (seq × 1)
    eye: HbmTensor | None = None  # decode with PEs sharing a KV head: the identity (G × G) its stacking GEMMs select from


@dataclass(frozen=True)
class Run:
    """What every program of a launch shares."""

    plan: Plan
    act: Any  # the activations' dtype
    tile: int  # KV tokens per tile (decode); prompt tokens per query and KV tile (prefill)
    algo: str  # the all-reduce's algorithm
    out: HbmTensor


# --- the kernel ------------------------------------------------------------------


def stack_rows(pieces: list[TensorHandle], eye: HbmTensor) -> TensorHandle:
    """The pieces (each r_i × d) one under the other, as (Σ r_i) × d float32: ``Σ E_i · piece_i`` with ``E_i`` the
    identity's columns of the piece's rows, streamed as ``tl.ref`` (the tile API has no concatenation)."""
    rows, d = eye.shape[0], pieces[0].shape[1]
    out = tl.zeros((rows, d))
    ops, r0 = [], 0
    for p in pieces:
        r = p.shape[0]
        ops.append(tl.OpSpec("gemm", {"a": tl.ref(eye[:, r0 : r0 + r]), "b": p}, out, extra={"accumulate": True}))
        r0 += r
    for i in range(0, len(ops), 8):  # (eight to a composite: under the logical-bytes cap)
        tl.composite(ops[i : i + 8], rw_handles=(out,))
    return out


def _group_queries(run: Run, q: TensorHandle, me: int, members: list[int]) -> list[TensorHandle]:
    """Decode with P PEs per KV head: every member's scaled query heads (B·ql × d), in member order."""
    theirs = {m: tl.recv_async(m, q.shape) for m in members if m != me}
    for m in members:
        if m != me:
            tl.send(m, q)
    return [q if m == me else tl.wait(theirs[m]) for m in members]


def decode_layer(run: Run, pes: list[PeTensors]) -> None:
    me = tl.program_id()
    x = decode_attention(run, pes[me], me)
    _finish(run, pes[me], x, me)


def decode_attention(run: Run, t: PeTensors, me: int) -> TensorHandle:
    """Decode's first half, up to this PE's heads' attention outputs in ``t.attn``; returns the input tile ``x``."""
    plan, s = run.plan, run.plan.shape
    B, d, G, ql, kvl, P = plan.batch, s.head_dim, s.group, plan.ql, plan.kvl, plan.sharing
    x = tl.load(t.x)
    h1 = rmsnorm(x, tl.load(t.norms[0]), s.rms_eps, run.act)
    q = tl.zeros((B, ql * d))
    ops = [tl.OpSpec("gemm", {"a": h1, "b": tl.ref(t.wq)}, q)]
    holds_new = plan.holds_new_token(me)
    if holds_new:
        assert t.wk is not None and t.wv is not None
        k, v = tl.zeros((B, kvl * d)), tl.zeros((B, kvl * d), run.act)
        ops += [tl.OpSpec("gemm", {"a": h1, "b": tl.ref(t.wk)}, k), tl.OpSpec("gemm", {"a": h1, "b": tl.ref(t.wv)}, v)]
    tl.composite(ops)
    del h1
    angle, rot = tl.load(t.rope), tl.load(t.rot)
    cos, sin = tl.cos(angle), tl.sin(angle)
    scale = 1.0 / math.sqrt(d)
    qs = rope_rows(q.reshape(B * ql, d), tl.scale(cos, scale), tl.scale(sin, scale), rot)
    kr = rope_rows(k.reshape(B * kvl, d), cos, sin, rot) if holds_new else None
    del q
    members = [me // P * P + r for r in range(P)]
    pieces = _group_queries(run, qs, me, members) if P > 1 else []
    n = plan.context(me)[1] - plan.context(me)[0]
    for b in range(B):
        for hh in range(kvl):
            if P == 1:
                q_b = qs[b * ql + hh * G : b * ql + (hh + 1) * G]
            else:
                assert t.eye is not None
                q_b = stack_rows([p[b * ql : (b + 1) * ql] for p in pieces], t.eye)
            new = None
            if holds_new:
                assert kr is not None
                new = (kr[b * kvl + hh : b * kvl + hh + 1].reshape(d, 1), v[b : b + 1, hh * d : (hh + 1) * d])
            state = attention.decode_partial(q_b, t.kt[hh][b], t.v[hh][b], n, new)
            if P > 1:
                state = attention.merge_butterfly(state, members, me)
            o = tl.div(state[2], state[1])
            mine = o if P == 1 else o[(me % P) * ql : (me % P + 1) * ql]
            c0 = hh * G * d if P == 1 else 0
            tl.store(t.attn[b : b + 1, c0 : c0 + mine.shape[0] * d], mine.reshape(1, mine.shape[0] * d))
            del state, o, mine, q_b
    return x


def _finish(run: Run, t: PeTensors, x: TensorHandle, me: int) -> None:
    """Decode's tail: the output projection, its all-reduce, the residual, the MLP, its all-reduce, the residual."""
    s = run.plan.shape
    everyone = Group(tuple(range(run.plan.tp)))
    tl.composite([tl.OpSpec("gemm", {"a": tl.ref(t.attn), "b": tl.ref(t.wo)}, tl.ref(t.partial[0]))])
    all_reduce(t.partial[0], everyone, algo=run.algo)
    h = tl.add(x, tl.load(t.partial[0]))
    del x
    h2 = rmsnorm(h, tl.load(t.norms[1]), s.rms_eps, run.act)
    mlp.swiglu(h2, *t.mlp, t.partial[1], run.act)
    del h2
    all_reduce(t.partial[1], everyone, algo=run.algo)
    if me == 0:
        tl.store(run.out, tl.add(h, tl.load(t.partial[1])))


def prefill_layer(run: Run, pes: list[PeTensors]) -> None:
    me = tl.program_id()
    t, s, plan, T = pes[me], run.plan.shape, run.plan, run.tile
    prefill_attention(run, t)
    everyone = Group(tuple(range(plan.tp)))
    wn2 = tl.load(t.norms[1])
    for r0, r1 in attention.tile_ranges(plan.tokens, T):
        h = tl.add(tl.load(t.x[r0:r1, :]), tl.load(t.partial[0][r0:r1, :]))
        h2 = rmsnorm(h, wn2, s.rms_eps, run.act)
        del h  # (recomputed for the last residual: a tile of it is as big as the scratch can spare)
        mlp.swiglu(h2, *t.mlp, t.partial[1][r0:r1, :], run.act)
        del h2
    all_reduce(t.partial[1], everyone, algo=run.algo)
    if me == 0:
        for r0, r1 in attention.tile_ranges(plan.tokens, T):
            h = tl.add(tl.load(t.x[r0:r1, :]), tl.load(t.partial[0][r0:r1, :]))
            tl.store(run.out[r0:r1, :], tl.add(h, tl.load(t.partial[1][r0:r1, :])))
            del h


def prefill_attention(run: Run, t: PeTensors) -> None:
    """Prefill's first half: attention of every prompt tile, the output projection and its all-reduce (``t.partial[0]``)."""
    plan, s = run.plan, run.plan.shape
    S, T, d, G, ql, kvl = plan.seq, run.tile, s.head_dim, s.group, plan.ql, plan.kvl
    assert t.wk is not None and t.wv is not None and t.positions is not None
    rot, freq, wn = tl.load(t.rot), tl.load(t.rope), tl.load(t.norms[0])
    mask, ninf = tl.causal_mask(0, 0, (T, T)), tl.full((1, 1), -np.inf)  # (every diagonal tile's)
    scale = 1.0 / math.sqrt(d)
    for b in range(plan.batch):
        for i, (p0, p1) in enumerate(attention.tile_ranges(S, T)):
            r0, r1 = b * S + p0, b * S + p1
            h1 = rmsnorm(tl.load(t.x[r0:r1, :]), wn, s.rms_eps, run.act)
            cos, sin = rope.angles_of(tl.load(t.positions[p0:p1, :]), freq)
            diag = []
            for hh in range(kvl):
                k, v = tl.zeros((T, d)), tl.zeros((T, d), run.act)
                tl.composite(
                    [tl.OpSpec("gemm", {"a": h1, "b": tl.ref(t.wk[hh])}, k), tl.OpSpec("gemm", {"a": h1, "b": tl.ref(t.wv[hh])}, v)]
                )
                kt = tl.transpose(rope_rows(k, cos, sin, rot, run.act))
                tl.store(t.kt[hh][b, i], kt)
                tl.store(t.v[hh][b, i], v)
                diag.append((kt, v))
                del k
            cos_q, sin_q = tl.scale(cos, scale), tl.scale(sin, scale)
            for j in range(ql):
                hh = j // G if plan.sharing == 1 else 0
                q = tl.zeros((T, d))
                tl.composite([tl.OpSpec("gemm", {"a": h1, "b": tl.ref(t.wq[j])}, q)])
                qr = rope_rows(q, cos_q, sin_q, rot, run.act)
                m, l, o = attention.prefill_partial(qr, t.kt[hh][b], t.v[hh][b], i, diag[hh], mask, ninf)
                tl.store(t.attn[r0:r1, j * d : (j + 1) * d], tl.div(o, l))
                del q, qr, m, l, o
            del h1, diag, cos, sin, cos_q, sin_q
    for r0, r1 in attention.tile_ranges(plan.tokens, T):
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(t.attn[r0:r1, :]), "b": tl.ref(t.wo)}, tl.ref(t.partial[0][r0:r1, :]))])
    all_reduce(t.partial[0], Group(tuple(range(plan.tp))), algo=run.algo)


# --- set-up ----------------------------------------------------------------------


def deploy(rt: Runtime, plan: Plan, dtype: str, tile: int, where: list[int], seed: int, *, mlp_weights: bool = True) -> list[PeTensors]:
    """Every PE's tensors, drawn (or, with no data, shaped) in its own HBM slice; ``where[p]``: PE index of program p."""
    fill = Filler(rt, seed)
    s, wdt, adt = plan.shape, DTYPES[dtype], ACTIVATION[dtype]
    H, d, ql, kvl, fl, n_tok = s.hidden, s.head_dim, plan.ql, plan.kvl, plan.fl, plan.tokens
    decode = plan.phase == "decode"
    x = fill.random((n_tok, H), adt, 1.0, pe=where[0], name="x0")
    norms = (fill.rng.random((1, H), dtype=F32) + F32(0.5), fill.rng.random((1, H), dtype=F32) + F32(0.5))
    angle = np.float32(plan.seq) * inv_freq(d, s.rope_theta)  # the new token's position is seq
    out: list[PeTensors] = []
    for p, pe in enumerate(where):
        t = PeTensors(
            x=x if p == 0 else rt.deploy(x.layout, dtype=adt, pe=pe, name=f"x{p}"),
            norms=(fill.given(norms[0], adt, pe=pe, name=f"norm1.{p}"), fill.given(norms[1], adt, pe=pe, name=f"norm2.{p}")),
            wq=fill.weight((H, ql * d) if decode else (ql, H, d), wdt, H, pe=pe, name=f"Wq{p}"),
            wo=fill.weight((ql * d, H), wdt, s.heads * d, pe=pe, name=f"Wo{p}"),
            mlp=(
                fill.weight((H, fl), wdt, H, pe=pe, name=f"Wg{p}"),
                fill.weight((H, fl), wdt, H, pe=pe, name=f"Wu{p}"),
                fill.weight((fl, H), wdt, s.ffn, pe=pe, name=f"Wd{p}"),
            )
            if mlp_weights
            else (x, x, x),
            rot=fill.given(rotation(d), adt, pe=pe, name=f"R{p}"),
            rope=fill.given(angle if decode else inv_freq(d, s.rope_theta), F32, pe=pe, name=f"rope{p}"),
            attn=rt.empty((n_tok, ql * d), adt, pe=pe, name=f"attn{p}"),
            partial=(rt.empty((n_tok, H), adt, pe=pe, name=f"part1.{p}"), rt.empty((n_tok, H), adt, pe=pe, name=f"part2.{p}")),
        )
        if not decode and p % plan.sharing:  # prefill: a copy of its group's K and V weights (the group's first member's)
            lead = out[p - p % plan.sharing]
            assert lead.wk is not None and lead.wv is not None
            t.wk = rt.deploy(lead.wk.layout, dtype=wdt, pe=pe, name=f"Wk{p}")
            t.wv = rt.deploy(lead.wv.layout, dtype=wdt, pe=pe, name=f"Wv{p}")
        elif not decode or plan.holds_new_token(p):
            shape = (H, kvl * d) if decode else (kvl, H, d)
            t.wk = fill.weight(shape, wdt, H, pe=pe, name=f"Wk{p}")
            t.wv = fill.weight(shape, wdt, H, pe=pe, name=f"Wv{p}")
        if decode:
            a, b = plan.context(p)
            slots = b - a + (1 if plan.holds_new_token(p) else 0)
            nt = -(-slots // tile)
            t.kt = [fill.random((plan.batch, nt, d, tile), wdt, 1.0, pe=pe, name=f"Kt{p}.{hh}") for hh in range(kvl)]
            t.v = [fill.random((plan.batch, nt, tile, d), wdt, 1.0, pe=pe, name=f"V{p}.{hh}") for hh in range(kvl)]
            if plan.sharing > 1:
                t.eye = fill.given(np.eye(s.group, dtype=F32), adt, pe=pe, name=f"eye{p}")
        else:
            nt = plan.seq // tile
            t.kt = [rt.empty((plan.batch, nt, d, tile), wdt, pe=pe, name=f"Kt{p}.{hh}") for hh in range(kvl)]
            t.v = [rt.empty((plan.batch, nt, tile, d), wdt, pe=pe, name=f"V{p}.{hh}") for hh in range(kvl)]
            t.positions = fill.given(np.arange(plan.seq, dtype=F32).reshape(-1, 1), F32, pe=pe, name=f"pos{p}")
        out.append(t)
    return out


# --- the float32 reference -------------------------------------------------------


def _heads(plan: Plan, pes: list[PeTensors]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The whole layer's Wq (H × heads·d), Wk and Wv (H × kv·d), from the PEs' shares."""
    s, d = plan.shape, plan.shape.head_dim
    decode = plan.phase == "decode"

    def cols(w: HbmTensor) -> np.ndarray:  # a PE's share as H × (heads·d) columns, in either layout
        a = f32(w)
        return a if decode else a.transpose(1, 0, 2).reshape(s.hidden, -1)

    wq = np.concatenate([cols(t.wq) for t in pes], axis=1)
    holders = [t for p, t in enumerate(pes) if (plan.holds_new_token(p) if decode else p % plan.sharing == 0)]
    wk = np.concatenate([cols(t.wk) for t in holders if t.wk is not None], axis=1)
    wv = np.concatenate([cols(t.wv) for t in holders if t.wv is not None], axis=1)
    assert wk.shape[1] == s.kv_heads * d
    return wq, wk, wv


def _past_kv(plan: Plan, pes: list[PeTensors], b: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Decode: KV head ``h``'s cached ``seq`` tokens of sequence ``b`` (K and V, seq × d), from the PEs holding them."""
    P, d = plan.sharing, plan.shape.head_dim
    ks, vs = [], []
    owners = [(h * P + r, 0) for r in range(P)] if P > 1 else [(h // plan.kvl, h % plan.kvl)]
    for p, hh in owners:
        a, e = plan.context(p)
        kt, v = f32(pes[p].kt[hh][b]), f32(pes[p].v[hh][b])
        ks.append(kt.transpose(0, 2, 1).reshape(-1, d)[: e - a])
        vs.append(v.reshape(-1, d)[: e - a])
    return np.concatenate(ks), np.concatenate(vs)


def attention_reference(plan: Plan, pes: list[PeTensors], x: np.ndarray, norm1: np.ndarray) -> np.ndarray:
    """float32 ``x + Attention(RMSNorm(x))`` (tokens × H)."""
    s, d = plan.shape, plan.shape.head_dim
    wq, wk, wv = _heads(plan, pes)
    wo = np.concatenate([f32(t.wo) for t in pes], axis=0)
    h1 = norm.reference(x, norm1, s.rms_eps)
    q, k, v = h1 @ wq, h1 @ wk, h1 @ wv
    out = np.empty((plan.tokens, s.heads * d), F32)
    if plan.phase == "decode":
        pos = np.full(1, plan.seq)
        for b in range(plan.batch):
            for j in range(s.heads):
                h = j // s.group
                kp, vp = _past_kv(plan, pes, b, h)
                qj = rope.reference(q[b : b + 1, j * d : (j + 1) * d], pos, s.rope_theta)
                kn = rope.reference(k[b : b + 1, h * d : (h + 1) * d], pos, s.rope_theta)
                kk, vv = np.concatenate([kp, kn]), np.concatenate([vp, v[b : b + 1, h * d : (h + 1) * d]])
                out[b, j * d : (j + 1) * d] = attention.reference(qj, kk, vv, causal=False)[0]
    else:
        S, pos = plan.seq, np.arange(plan.seq)
        for b in range(plan.batch):
            rows = slice(b * S, (b + 1) * S)
            for j in range(s.heads):
                h = j // s.group
                qj = rope.reference(q[rows, j * d : (j + 1) * d], pos, s.rope_theta)
                kj = rope.reference(k[rows, h * d : (h + 1) * d], pos, s.rope_theta)
                out[rows, j * d : (j + 1) * d] = attention.reference(qj, kj, v[rows, h * d : (h + 1) * d], causal=True)
    residual: np.ndarray = x + out @ wo
    return residual


def layer_reference(plan: Plan, pes: list[PeTensors]) -> np.ndarray:
    """float32 decoder layer of the deployed input and weights."""
    x = f32(pes[0].x)
    h = attention_reference(plan, pes, x, f32(pes[0].norms[0]))
    h2 = norm.reference(h, f32(pes[0].norms[1]), plan.shape.rms_eps)
    return h + sum(mlp.reference(h2, *(f32(w) for w in t.mlp)) for t in pes)


# --- the declaration -------------------------------------------------------------


def check_options(p: Params, pes: int) -> list[str]:
    plan = Plan(PRESETS[p["model"]], p["phase"], p["batch"], p["seq"], p["tp"])
    problems = plan.problems()
    if p["tp"] > pes:
        problems.append(f"--tp {p['tp']}: the topology has {pes} PEs")
    if p["phase"] == "prefill" and p["seq"] % p["tile"]:
        problems.append(f"--seq {p['seq']} must divide by --tile {p['tile']} in prefill (query and KV tiles of a prompt)")
    return problems


OPTIONS = (
    Option("model", str, "llama3-8b", "the model whose layer runs (published shapes: docs/layers.md)", MODELS),
    Option("phase", str, "decode", "decode: one new token per sequence; prefill: whole prompts, causal", PHASES),
    Option("batch", int, 4, "sequences", low=1, high=4096),
    Option("seq", int, 1024, "tokens of KV cache per sequence (decode) or of each prompt (prefill)", low=1, high=2**20),
    Option("tp", int, 8, "tensor-parallel PEs (heads and FFN columns split over them)", low=1, high=4096),
    Option("dtype", str, "bfloat16", "weights and KV cache (fp8: activations bfloat16)", tuple(DTYPES)),
    Option(
        "tile", int, 0, "KV tokens per tile (decode; 0: 512) or prompt tokens per tile (prefill; 0: up to 32, see docs)", low=0, high=65536
    ),
    Option("placement", str, "packed", "which PEs: packed (a CUBE's 8, then the next) or spread (one per CUBE first)", PLACEMENTS),
    Option("allreduce", str, "ring", "the all-reduces' algorithm", ALGORITHMS),
    Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
)
DECODE_TILE = 512
PREFILL_TILE_BYTES = 256 * 1024  # a prefill tile of the layer input (T × H activations) at most: three live ones fit the scratch


def tile_of(p: Params) -> int:
    """``--tile``, or its default: 512 KV tokens in decode; in prefill the most prompt tokens, a power of two up to
    32, whose T × H activation tile fits 256 KiB (the RMSNorm of a tile holds three: 32 for H = 4096, 16 for 8192)."""
    if p["tile"]:
        return int(p["tile"])
    if p["phase"] == "decode":
        return DECODE_TILE
    row_bytes = PRESETS[p["model"]].hidden * np.dtype(ACTIVATION[p["dtype"]]).itemsize
    t = 32
    while t > 1 and t * row_bytes > PREFILL_TILE_BYTES:
        t //= 2
    return t


def _checked(p: Params, pes: int) -> list[str]:
    return check_options(dict(p, tile=tile_of(p)), pes)


@kernel(options=OPTIONS, name="decoder-layer", topology="paper", check=_checked)
def decoder_setup(rt: Runtime, **p: Any) -> Prepared:
    """A Llama decoder layer (RMSNorm, GQA attention with RoPE, SwiGLU MLP), tensor-parallel with all-reduces."""
    plan = Plan(PRESETS[p["model"]], p["phase"], p["batch"], p["seq"], p["tp"])
    tile = tile_of(p)
    where = choose_pes(rt.pe_ids(), plan.tp, p["placement"])
    pes = deploy(rt, plan, p["dtype"], tile, where, p["seed"])
    out = rt.empty((plan.tokens, plan.shape.hidden), ACTIVATION[p["dtype"]], pe=where[0], name="out")
    run = Run(plan, ACTIVATION[p["dtype"]], tile, p["allreduce"], out)
    rt.launch(decode_layer if plan.phase == "decode" else prefill_layer, pes=where, args=(run, pes))

    def check() -> float:
        return float(np.abs(f32(out) - layer_reference(plan, pes)).max())

    return Prepared(check, lambda result: figures(plan, result, p["dtype"]))


def figures(plan: Plan, result: RunResult, dtype: str) -> Summary:
    """The layer's own figures: its tolerance, and the model's tokens/s were every layer this fast (an estimate)."""
    layer_s = result.latency_ns * 1e-9
    tokens = plan.batch if plan.phase == "decode" else plan.tokens
    return {
        "tolerance": TOLERANCE[dtype],
        "model_tokens_per_s_estimate": round(tokens / (layer_s * plan.shape.layers), 3) if layer_s > 0 else 0.0,
    }
