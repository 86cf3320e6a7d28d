"""A mixture-of-experts decoder layer (Mixtral-style), expert-parallel: the ``moe-layer`` kernel.

``out = h + Σ_{e ∈ chosen(t)} gate(t, e) · MLP_e(RMSNorm(h))``, ``h = x +
Attention(RMSNorm(x))``. The attention half is the decoder layer's, tensor-
parallel over the ``tp`` PEs with its all-reduce
(:mod:`~kernbench.layers.decoder`), which leaves every PE with every
token's ``h``.

**Expert parallelism.** ``tp`` is a multiple of the experts ``E``: expert
``e`` lives on the ``F = tp / E`` PEs ``e·F … e·F + F − 1``, each holding
FFN columns ``[f·fl, (f+1)·fl)`` of it (``fl = ffn / F``; with ``tp = E``
each PE holds one whole expert). Each PE picks its expert's tokens out of
``h`` (one strided DMA: see routing), normalizes them, computes their gate
and its share of the expert's MLP, weighted by the gate; then the
**all-to-all** of the combine: every row goes to its token's home PE
(token ``t``'s is PE ``t mod tp``) as an IPCQ message (the home's own rows
through its HBM), and each home sums its tokens' ``top_k · F`` rows onto
``h`` and writes them to ``out``. The dispatch half of the usual all-to-all
is a local pick: the attention's all-reduce has put every token on every PE
already.

**Routing** (``--routing balanced``, the only one: timing must not depend
on values, so that ``--no-data`` gives the same latency): the host chooses,
for token ``t``, experts ``(t·k + j) mod E`` for ``j < k`` (``k`` = top-k,
``E`` a multiple of ``k``): every expert gets ``T·k/E`` tokens (±1), and
expert ``e``'s tokens are ``e // k, e // k + E/k, …`` — an arithmetic
progression, one strided region of ``h``. Its gate is the softmax, over
the chosen block's ``k`` router logits, of its own (computed on the PE:
the router's columns of the block, a small GEMM). The router's learned
top-k choice is what this replaces; its values would decide addresses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import kernbench.tl as tl
from kernbench.collectives import all_reduce
from kernbench.collectives.group import Group
from kernbench.handles import HbmTensor
from kernbench.kernels.registry import Option, Params, Prepared, kernel
from kernbench.layers import attention, decoder, mlp, norm
from kernbench.layers.decoder import PeTensors, Run, figures, tile_of
from kernbench.layers.norm import rmsnorm
from kernbench.layers.placement import Plan, choose_pes
from kernbench.layers.presets import MODELS, PRESETS
from kernbench.layers.tensors import ACTIVATION, DTYPES, Filler, f32
from kernbench.runtime.api import Runtime

ROUTINGS = ("balanced",)
FFN_CHUNK_BYTES = 128 * 1024  # an expert's gate or up tile (rows × FFN chunk) at most


def chosen(t: int, experts: int, k: int) -> list[int]:
    """The experts of token ``t`` under balanced routing."""
    return [(t * k + j) % experts for j in range(k)]


def expert_tokens(e: int, tokens: int, experts: int, k: int) -> range:
    """The tokens expert ``e`` serves under balanced routing (an arithmetic progression)."""
    return range(e // k, tokens, experts // k)


@dataclass
class Experts:
    """One PE's expert share and the buffers of its combine."""

    wr: HbmTensor  # the router (H × E), every PE its copy
    w: tuple[HbmTensor, HbmTensor, HbmTensor]  # its expert's FFN columns: Wg, Wu (H × fl), Wd (fl × H)
    h: HbmTensor  # every token's h (tokens × H)
    own: HbmTensor  # rows it computed for tokens it is home of (tokens × H, float32)


@dataclass(frozen=True)
class MoeRun:
    run: Run
    experts: int
    top_k: int
    per_expert: int  # PEs per expert (F)


def _expert(m: MoeRun, t: PeTensors, ex: Experts, me: int) -> None:
    """This PE's share of its expert over its tokens, each row sent to its token's home (or kept in ``ex.own``)."""
    run, s = m.run, m.run.plan.shape
    E, k, tp = m.experts, m.top_k, run.plan.tp
    e = me // m.per_expert
    toks = expert_tokens(e, run.plan.tokens, E, k)
    block = (e // k) * k
    wn2 = tl.load(t.norms[1])
    fl, H = ex.w[0].shape[1], s.hidden
    for i0 in range(0, len(toks), run.tile):
        rows = toks[i0 : i0 + run.tile]
        n = len(rows)
        h2 = rmsnorm(tl.load(ex.h[rows.start : rows[-1] + 1 : rows.step]), wn2, s.rms_eps, run.act)
        logits = tl.zeros((n, k))
        tl.composite([tl.OpSpec("gemm", {"a": h2, "b": tl.ref(ex.wr[:, block : block + k])}, logits)])
        p = tl.exp(tl.sub_bcast(logits, tl.rowmax(logits)))
        gate = tl.div(p[:, e - block : e - block + 1], tl.rowsum(p))
        y = tl.zeros((n, H))
        chunk = max(1, FFN_CHUNK_BYTES // (n * np.dtype(run.act).itemsize))
        for c0 in range(0, fl, chunk):
            c1 = min(fl, c0 + chunk)
            mlp.swiglu(h2, ex.w[0][:, c0:c1], ex.w[1][:, c0:c1], ex.w[2][c0:c1, :], y, run.act, accumulate=True)
        yw = tl.mul_bcast(y, gate)
        del h2, logits, p, gate, y
        for r, tok in enumerate(rows):
            home = tok % tp
            if home == me:
                tl.store(ex.own[tok : tok + 1, :], yw[r : r + 1])
            else:
                tl.send(home, yw[r : r + 1])
        del yw


def _combine(m: MoeRun, ex: Experts, me: int) -> None:
    """The tokens this PE is home of: ``h`` plus every row their experts sent, written to ``out``."""
    run = m.run
    H = run.plan.shape.hidden
    for tok in range(me, run.plan.tokens, run.plan.tp):
        acc = tl.load(ex.h[tok : tok + 1, :])
        for e in sorted(chosen(tok, m.experts, m.top_k)):
            for f in range(m.per_expert):
                src = e * m.per_expert + f
                part = tl.load(ex.own[tok : tok + 1, :]) if src == me else tl.wait(tl.recv_async(src, (1, H)))
                acc = tl.add(acc, part)
        tl.store(run.out[tok : tok + 1, :], acc)


def moe_layer(m: MoeRun, pes: list[PeTensors], experts: list[Experts]) -> None:
    run, me = m.run, tl.program_id()
    t, ex = pes[me], experts[me]
    if run.plan.phase == "decode":
        x = decoder.decode_attention(run, t, me)
        del x
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(t.attn), "b": tl.ref(t.wo)}, tl.ref(t.partial[0]))])
        all_reduce(t.partial[0], Group(tuple(range(run.plan.tp))), algo=run.algo)
    else:
        decoder.prefill_attention(run, t)
    for r0, r1 in attention.tile_ranges(run.plan.tokens, run.tile):
        tl.store(ex.h[r0:r1, :], tl.add(tl.load(t.x[r0:r1, :]), tl.load(t.partial[0][r0:r1, :])))
    _expert(m, t, ex, me)
    _combine(m, ex, me)


# --- set-up and reference -------------------------------------------------------------


def moe_reference(m: MoeRun, pes: list[PeTensors], experts: list[Experts]) -> np.ndarray:
    plan, s = m.run.plan, m.run.plan.shape
    x = f32(pes[0].x)
    h = decoder.attention_reference(plan, pes, x, f32(pes[0].norms[0]))
    h = h.astype(np.dtype(m.run.act)).astype(np.float32)  # (the kernel keeps h in the activation dtype)
    h2 = norm.reference(h, f32(pes[0].norms[1]), s.rms_eps)
    wr = f32(experts[0].wr)
    out = h.copy()
    for e in range(m.experts):
        toks = list(expert_tokens(e, plan.tokens, m.experts, m.top_k))
        if not toks:
            continue
        block = (e // m.top_k) * m.top_k
        logits = h2[toks] @ wr[:, block : block + m.top_k]
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        gate = p[:, e - block : e - block + 1] / p.sum(axis=1, keepdims=True)
        shares = [experts[e * m.per_expert + f].w for f in range(m.per_expert)]
        y = sum(mlp.reference(h2[toks], *(f32(w) for w in share)) for share in shares)
        out[toks] += gate * y
    return out


def check_options(p: Params, pes: int) -> list[str]:
    shape = PRESETS[p["model"]]
    plan = Plan(shape, p["phase"], p["batch"], p["seq"], p["tp"])
    problems = [x for x in plan.problems() if "FFN" not in x]
    if p["tp"] > pes:
        problems.append(f"--tp {p['tp']}: the topology has {pes} PEs")
    if shape.experts < 2:
        problems.append(f"--model {p['model']} is dense (no experts): run decoder-layer")
    elif p["tp"] % shape.experts:
        problems.append(
            f"--tp {p['tp']} must be a multiple of the {shape.experts} experts of {p['model']} (each PE holds one expert's share)"
        )
    elif shape.ffn % (p["tp"] // shape.experts):
        problems.append(f"--tp {p['tp']}: the expert FFN size {shape.ffn} must divide by PEs per expert {p['tp'] // shape.experts}")
    if p["phase"] == "prefill" and p["seq"] % tile_of(p):
        problems.append(f"--seq {p['seq']} must divide by --tile {tile_of(p)} in prefill")
    return problems


@kernel(
    options=[
        Option(
            "model",
            str,
            "mixtral-8x7b",
            "the model whose layer runs (published shapes: docs/layers.md)",
            tuple(m for m in MODELS if PRESETS[m].experts > 1),
        ),
        *(o for o in decoder.OPTIONS if o.name not in ("model",)),
        Option("routing", str, "balanced", "expert choice: balanced (host-side, data-independent; docs/layers.md)", ROUTINGS),
    ],
    name="moe-layer",
    topology="paper",
    check=check_options,
)
def moe_setup(rt: Runtime, **p: Any) -> Prepared:
    """A Mixtral MoE decoder layer: TP attention with all-reduce, expert-parallel MLPs, an all-to-all combine."""
    shape = PRESETS[p["model"]]
    plan = Plan(shape, p["phase"], p["batch"], p["seq"], p["tp"])
    tile = tile_of(p)
    where = choose_pes(rt.pe_ids(), plan.tp, p["placement"])
    pes = decoder.deploy(rt, plan, p["dtype"], tile, where, p["seed"], mlp_weights=False)
    fill = Filler(rt, p["seed"] + 1)
    wdt, adt = DTYPES[p["dtype"]], ACTIVATION[p["dtype"]]
    F = plan.tp // shape.experts
    fl, H = shape.ffn // F, shape.hidden
    wr = fill.rng.random((H, shape.experts), dtype=np.float32) * np.float32(2.0 / np.sqrt(H)) - np.float32(1.0 / np.sqrt(H))
    experts = [
        Experts(
            wr=fill.given(wr, wdt, pe=pe, name=f"Wr{i}"),
            w=(
                fill.weight((H, fl), wdt, H, pe=pe, name=f"Wg{i}"),
                fill.weight((H, fl), wdt, H, pe=pe, name=f"Wu{i}"),
                fill.weight((fl, H), wdt, shape.ffn, pe=pe, name=f"Wd{i}"),
            ),
            h=rt.empty((plan.tokens, H), adt, pe=pe, name=f"h{i}"),
            own=rt.empty((plan.tokens, H), np.float32, pe=pe, name=f"own{i}"),
        )
        for i, pe in enumerate(where)
    ]
    out = rt.empty((plan.tokens, H), adt, pe=where[0], name="out")
    run = MoeRun(Run(plan, adt, tile, p["allreduce"], out), shape.experts, shape.top_k, F)
    rt.launch(moe_layer, pes=where, args=(run, pes, experts))

    def check() -> float:
        return float(np.abs(f32(out) - moe_reference(run, pes, experts)).max())

    return Prepared(check, lambda result: figures(plan, result, p["dtype"]))
