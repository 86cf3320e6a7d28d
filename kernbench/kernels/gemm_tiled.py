"""GEMM ``C = A @ B`` with its tiling as options (``kernbench run gemm-tiled``).

C (``m × n``) is cut into ``tile_m × tile_n`` output tiles, K into
``tile_k`` steps. ``ksplit`` splits K over that many PEs (split-K): each
computes a partial tile over its share of K, and the partials are summed by
IPCQ at the first of them, which stores the tile. Output tiles go round
robin to the ``pes / ksplit`` workers; PE ``w · ksplit + j`` is worker
``w``'s K-part ``j``. Every PE finds its operands in its own HBM slice: B's
K-rows of a ``tile_n``-wide column block contiguous, as a weight would be
placed, and A's row block in one of two layouts (``layout``): ``tiled``
(default) K-step-major, each ``tile_m × tile_k`` block contiguous, block
after block; ``naive`` row-major, so a K-step's column block is ``tile_m``
rows a row pitch apart (and with a pitch of a multiple of 2 KiB, on one of
the slice's pseudo-channels).

``form=primitive``
    single-op commands: per K-step a lazy ``tl.load`` of the A and B blocks
    (the next step's loads are issued before this step's math, across tile
    boundaries too), ``tl.dot`` (float32) and a running ``tl.add``.
``form=composite``
    one ``tl.composite`` GEMM per output tile with the A row block and the
    B column block as ``tl.ref`` operands; PE_SCHEDULER streams K in steps of
    about ``composite_tile_bytes`` (one per ``tile_k`` when a ``tile_m ×
    tile_k`` block is that size), reading each step the slice of A and of B
    it consumes, and writes C's tile once it is final.

The summary gives the MAC efficiency (achieved FLOP/s over the peak of the
PEs used) beside the ideal-pipeline model of the same tiling
(:mod:`kernbench.models.pipeline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernbench import tl
from kernbench.handles import HbmTensor, Ptr, TensorHandle
from kernbench.kernels.data import random_f16
from kernbench.kernels.gemm import MAX_DIM
from kernbench.kernels.registry import Option, Params, Prepared, Summary, kernel
from kernbench.runtime.api import RunResult, Runtime

FORMS = ("primitive", "composite")
LAYOUTS = ("tiled", "naive")  # A K-step-major, or row-major


@dataclass(frozen=True)
class Unit:
    """One output tile's share of K on one PE."""

    tile: tuple[int, int]  # (row, column) of the output tile
    a: HbmTensor  # layout tiled: (steps, tile_m, tile_k) blocks; naive: tile_m × K-part
    b: HbmTensor  # K-part × tile_n
    c: HbmTensor | None  # the output tile (on the K-part 0 PE), else None
    peers: tuple[int, ...]  # programs holding the other K-parts (to the K-part 0 PE: who sends)
    leader: int  # the K-part 0 program


# --- the kernels -------------------------------------------------------------


def _finish(u: Unit, acc: TensorHandle) -> None:
    """Sum the split-K partials at the K-part 0 PE and store the tile; others send theirs."""
    me = tl.program_id()
    if me != u.leader:
        tl.send(u.leader, acc)
        return
    futs = [tl.recv_async(p, acc.shape, acc.dtype) for p in u.peers]
    while futs:
        acc = tl.add(acc, tl.wait(futs.pop(0)))
    assert u.c is not None, "the K-part 0 program holds the output tile"
    tl.store(u.c, acc)


def _a_step(u: Unit, s: int, tile_k: int) -> HbmTensor | Ptr:
    """A's K-step ``s`` (``tile_k`` columns) in its layout."""
    if len(u.a.shape) == 3:  # K-step-major: block s
        return u.a[s]
    return u.a[:, s * tile_k : (s + 1) * tile_k]  # row-major: a column block


def gemm_primitive(work: list[list[Unit]], steps: int) -> None:
    """Software-pipelined, one step and one tile deep.

    Step i's GEMM is issued before step i − 1's accumulate: PE_FETCH_STORE
    serves commands in order, and an accumulate waits for its GEMM's result,
    so issuing it first would hold the next GEMM's operand fetch behind it.
    A finished tile's split-K exchange and store are issued after the next
    tile's work, so waiting for partials never idles the engines.
    """
    units = work[tl.program_id()]
    plan = [(u, s) for u in units for s in range(steps)]
    if not plan:
        return
    tile_k = units[0].b.shape[0] // steps
    done: list[tuple[Unit, TensorHandle]] = []  # the finished tile waiting for its exchange and store

    def load(i: int) -> tuple[TensorHandle, TensorHandle]:
        u, s = plan[i]
        return tl.load(_a_step(u, s, tile_k)), tl.load(u.b[s * tile_k : (s + 1) * tile_k, :])

    def accumulate(acc: TensorHandle | None, u: Unit, s: int, part: TensorHandle) -> TensorHandle | None:
        if s == 0:
            acc = part
        else:
            assert acc is not None, "step s > 0 adds to the running sum of step s - 1"
            acc = tl.add(acc, part)
        if s < steps - 1:
            return acc
        if done:
            _finish(*done.pop())
        done.append((u, acc))
        return None

    nxt = load(0)
    acc: TensorHandle | None = None
    prev: tuple[Unit, int, TensorHandle] | None = None
    for i in range(len(plan)):
        a_t, b_t = nxt
        if i + 1 < len(plan):
            nxt = load(i + 1)
        part = tl.dot(a_t, b_t)
        del a_t, b_t
        if prev is not None:
            acc = accumulate(acc, *prev)
        prev = (*plan[i], part)
        del part
    assert prev is not None  # plan is not empty
    accumulate(acc, *prev)
    _finish(*done.pop())


def gemm_composite(work: list[list[Unit]], steps: int) -> None:
    """One composite per output tile (A K-step-major when it is stored so).

    With split-K, a tile's partial is exchanged once the next tile is issued,
    and the composites share a one-element ``order`` handle (``rw_handles``)
    so PE_SCHEDULER runs them in program order: independent composites would
    share the engines tile by tile and every partial would be ready only at
    the end, while the tile's leader waits for it.
    """
    done: list[tuple[Unit, TensorHandle]] = []
    order = tl.zeros((1, 1))
    for u in work[tl.program_id()]:
        kp, tn = u.b.shape
        tm = u.a.shape[-2]
        extra: dict[str, int | bool] = {"m": tm, "k": kp, "n": tn}
        if len(u.a.shape) == 3:
            extra["a_kstep_major"] = True
        if not u.peers and u.c is not None:
            tl.composite([tl.OpSpec("gemm", {"a": tl.ref(u.a), "b": tl.ref(u.b)}, tl.ref(u.c), extra=extra)])
            continue
        acc = tl.zeros((tm, tn))
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(u.a), "b": tl.ref(u.b)}, acc, extra=extra)], rw_handles=(order,))
        if done:
            _finish(*done.pop())
        done.append((u, acc))
        del acc
    if done:
        _finish(*done.pop())


KERNELS = {"primitive": gemm_primitive, "composite": gemm_composite}


# --- set-up ----------------------------------------------------------------


@dataclass(frozen=True)
class Tiling:
    """The options, checked: shapes, tile counts, who computes what."""

    m: int
    n: int
    k: int
    tile_m: int
    tile_n: int
    tile_k: int
    ksplit: int
    pes: int
    form: str
    layout: str = "tiled"

    @property
    def tiles(self) -> int:
        return (self.m // self.tile_m) * (self.n // self.tile_n)

    @property
    def uses_tile_k(self) -> bool:
        """Whether ``tile_k`` shapes the run: the primitive form's loads, or a tiled A's blocks
        (a composite over a row-major A streams K in steps of its own)."""
        return self.form == "primitive" or self.layout == "tiled"

    @property
    def steps(self) -> int:
        """K-steps of one output tile on one PE."""
        return self.k // (self.tile_k * self.ksplit)

    @property
    def workers(self) -> int:
        return self.pes // self.ksplit

    def tiles_of(self, worker: int) -> list[int]:
        return list(range(worker, self.tiles, self.workers))

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @classmethod
    def of(cls, p: Params, available_pes: int, scratch_bytes: int) -> Tiling:
        t = cls(p["m"], p["n"], p["k"], p["tile_m"], p["tile_n"], p["tile_k"], p["ksplit"], p["pes"], p["form"], p["layout"])
        t.check(available_pes, scratch_bytes)
        return t

    def check(self, available_pes: int, scratch_bytes: int) -> None:
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, not {self.form!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {self.layout!r}")
        for name in ("m", "n", "k", "tile_m", "tile_n", "tile_k", "ksplit", "pes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)}")
        for dim, tile in (("m", "tile_m"), ("n", "tile_n")):
            if getattr(self, dim) % getattr(self, tile):
                raise ValueError(f"{dim} ({getattr(self, dim)}) must be a multiple of {tile} ({getattr(self, tile)})")
        if self.uses_tile_k and self.k % (self.tile_k * self.ksplit):
            raise ValueError(f"k ({self.k}) must be a multiple of tile_k × ksplit ({self.tile_k} × {self.ksplit})")
        if self.k % self.ksplit:
            raise ValueError(f"k ({self.k}) must be a multiple of ksplit ({self.ksplit})")
        if self.pes > available_pes:
            raise ValueError(f"pes {self.pes}: the topology has {available_pes} PEs")
        if self.pes % self.ksplit:
            raise ValueError(f"pes ({self.pes}) must be a multiple of ksplit ({self.ksplit}): each K-part needs its own PE")
        need = self.scratch_needed()
        if need > scratch_bytes:
            raise ValueError(
                f"tiles {self.tile_m}×{self.tile_n}×{self.tile_k} need {need} B of TCM scratch at once "
                f"({self.form} form), more than the {scratch_bytes} B a kernel has; use smaller tiles"
            )

    def scratch_needed(self) -> int:
        """Bytes of TCM the kernel holds at its peak (f16 operands, f32 partials)."""
        a, b, c32 = 2 * self.tile_m * self.tile_k, 2 * self.tile_k * self.tile_n, 4 * self.tile_m * self.tile_n
        split = 2 * c32 if self.ksplit > 1 else 0  # a received partial and the new sum
        if self.form == "primitive":
            # this and the next step's blocks; two parts, acc, new acc, the finished tile's acc
            return 2 * (a + b) + 5 * c32 + split
        return 2 * c32 + split  # this tile's acc and the finished one's


def deploy(rt: Runtime, t: Tiling, A: np.ndarray, B: np.ndarray) -> tuple[list[list[Unit]], list[tuple[tuple[int, int], HbmTensor]]]:
    pe_ids = rt.pe_ids()[: t.pes]
    work: list[list[Unit]] = [[] for _ in range(t.pes)]
    outs = []
    kp = t.k // t.ksplit
    cols = t.n // t.tile_n
    for w in range(t.workers):
        for tile in t.tiles_of(w):
            i, j = divmod(tile, cols)
            rows = slice(i * t.tile_m, (i + 1) * t.tile_m)
            cs = slice(j * t.tile_n, (j + 1) * t.tile_n)
            progs = [w * t.ksplit + part for part in range(t.ksplit)]
            leader = progs[0]
            c = rt.empty((t.tile_m, t.tile_n), np.float16, pe=pe_ids[leader], name=f"C{i}.{j}")
            outs.append(((i, j), c))
            for part, prog in enumerate(progs):
                ks = slice(part * kp, (part + 1) * kp)
                a_blk = A[rows, ks]
                if t.layout == "tiled":  # K-step-major, (steps, tile_m, tile_k): each block contiguous
                    a_blk = a_blk.reshape(t.tile_m, t.steps, t.tile_k).transpose(1, 0, 2)
                pe = pe_ids[prog]
                a = rt.deploy(a_blk, pe=pe, name=f"A{i}.{part}@{prog}")
                b = rt.deploy(B[ks, cs], pe=pe, name=f"B{j}.{part}@{prog}")
                peers = tuple(progs[1:]) if prog == leader else ()
                work[prog].append(Unit((i, j), a, b, c if prog == leader else None, peers, leader))
    return work, outs


PARAMS = (
    Option("form", str, "composite", "command form", FORMS),
    Option("layout", str, "tiled", "A in HBM: tiled (K-step-major, each tile_m × tile_k block contiguous) or naive (row-major)", LAYOUTS),
    Option("m", int, 256, "rows of A and C", low=1, high=MAX_DIM),
    Option("n", int, 256, "columns of B and C", low=1, high=MAX_DIM),
    Option("k", int, 1024, "inner dimension", low=1, high=MAX_DIM),
    Option("tile_m", int, 128, "output tile rows", low=1, high=MAX_DIM),
    Option("tile_n", int, 128, "output tile columns", low=1, high=MAX_DIM),
    Option(
        "tile_k",
        int,
        128,
        "K per step: per load (primitive form), the width of a tiled A's blocks",
        low=1,
        high=MAX_DIM,
        only_with=(("form", "primitive"), ("layout", "tiled")),
    ),
    Option("ksplit", int, 1, "PEs sharing one output tile's K (split-K, partials summed over IPCQ)", low=1, high=4096),
    Option("pes", int, 4, "PEs used (the first ones of the topology)", low=1, high=4096),
    Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
)


@kernel(
    options=PARAMS,
    name="gemm-tiled",
    description="GEMM with the tiling as options (tile sizes, split-K, PEs; primitive or composite)",
)
def setup(rt: Runtime, **p: Any) -> Prepared:
    scratch = rt.graph.node(f"{rt.pe_ids()[0]}.cpu").attrs["scratch_bytes"]
    t = Tiling.of(p, len(rt.pe_ids()), scratch)
    rng = np.random.default_rng(p["seed"])
    A = random_f16(rng, (t.m, t.k))
    B = random_f16(rng, (t.k, t.n))
    work, outs = deploy(rt, t, A, B)
    rt.launch(KERNELS[t.form], pes=range(t.pes), args=(work, t.steps))

    def check() -> float:
        ref = A.astype(np.float32) @ B.astype(np.float32)
        err = 0.0
        for (i, j), c in outs:
            want = ref[i * t.tile_m : (i + 1) * t.tile_m, j * t.tile_n : (j + 1) * t.tile_n]
            err = max(err, float(np.abs(rt.read(c).astype(np.float32) - want).max()))
        return err

    def summary(result: RunResult) -> Summary:
        from kernbench.models.pipeline import predict

        model = predict(rt.graph, t)
        peak = _peak_flops_per_ns(rt) * t.pes
        return {
            "tiles_per_pe": model.tiles,
            "mac_eff_pct": round(100.0 * t.flops / (peak * result.latency_ns), 3),
            "model_ns": round(model.ns, 3),
            "model_mac_eff_pct": round(100.0 * t.flops / (peak * model.ns), 3),
            "model": model.formula,
        }

    return Prepared(check, summary, t.form)


def _peak_flops_per_ns(rt: Runtime) -> float:
    tflops: float = rt.graph.node(f"{rt.pe_ids()[0]}.cpu").attrs["gemm_tflops"]
    return tflops * 1e3
