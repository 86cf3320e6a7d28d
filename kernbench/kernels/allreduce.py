"""All-reduce of a payload over a set of PEs (``kernbench run allreduce``).

Each PE holds ``payload`` bytes of its own (random float16 values of
magnitude in [0.5, 2), or float32) in its HBM slice; after the run every
PE's buffer holds the element-wise sum, reduced in place by
:func:`kernbench.collectives.all_reduce` with the chosen algorithm and
message size. The check compares every PE's buffer with the numpy sum of
the inputs (float32 accumulation, rounded to the dtype); the summary sets
the simulated latency beside the α–β model of the same schedule
(:mod:`kernbench.models.alphabeta`).

PEs (``--pes``): by default PE 0 of every CUBE (of every SIP), the group a
grid with the CUBE mesh's shape (SIPs stacked); ``sipN`` is PE 0 of every
CUBE of SIP N; otherwise a comma list of PE ids (``sip0.cube3.pe0``) or
indices into the runtime's PE list (``0,8,16`` or ranges ``0-7``). The
2d algorithm's grid is ``--grid RxC`` (rows × columns, programs row-major),
by default the CUBE grid for the CUBE sets and the most square one else.

Its siblings ``allgather``, ``reducescatter`` and ``alltoall``
(:mod:`kernbench.kernels.collective_ops`) take the same PE, payload, chunk,
dtype and seed options and use this module's PE selection and checks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from kernbench import collectives, tl
from kernbench.collectives import Group
from kernbench.handles import HbmTensor
from kernbench.kernels.data import random_f16
from kernbench.kernels.registry import Option, Prepared, Summary, kernel
from kernbench.models.alphabeta import Problem, predict
from kernbench.runtime.api import RunResult, Runtime
from kernbench.sizes import parse_size, size_label
from kernbench.topology.ids import pe_id

DTYPES = ("float16", "float32")


def allreduce(bufs: list[HbmTensor], group: Group, algo: str, chunk_bytes: int) -> None:
    collectives.all_reduce(bufs[tl.program_id()], group, algo=algo, chunk_bytes=chunk_bytes)


# --- which PEs, in what grid --------------------------------------------------


def cube_pes(rt: Runtime, sip: int | None = None) -> tuple[list[str], int]:
    """PE 0 of every CUBE (of one SIP or all), in CUBE order; and the grid's rows."""
    mesh = rt.graph.spec["sip"]["mesh"]
    sips = range(rt.graph.spec["system"]["sips"]) if sip is None else [sip]
    pes = [pe_id(s, c, 0) for s in sips for c in range(mesh["width"] * mesh["height"])]
    return pes, len(sips) * mesh["height"]


def select_pes(rt: Runtime, text: str) -> tuple[list[str], int | None]:
    """``--pes`` → PE ids in program order, and the grid rows it implies (None: choose)."""
    text = text.strip()
    if not text:
        return cube_pes(rt)
    n_sips = rt.graph.spec["system"]["sips"]
    if text.startswith("sip") and text[3:].isdigit():
        s = int(text[3:])
        if s >= n_sips:
            raise ValueError(f"--pes {text}: {rt.graph.name} has SIPs sip0 … sip{n_sips - 1}")
        return cube_pes(rt, s)
    pes: list[str] = []
    for token in (t.strip() for t in text.split(",")):
        if not token:
            continue
        try:
            if token.replace("-", "").isdigit() and token.count("-") <= 1:
                lo, _, hi = token.partition("-")
                pes += [rt.pe_id(i) for i in range(int(lo), int(hi or lo) + 1)]
            else:
                pes.append(rt.pe_id(token))
        except ValueError as exc:  # (named with the token it came from: '0-99999' says no more than 'PE index 48')
            raise ValueError(f"--pes {token}: {exc}") from None
    dup = sorted({p for p in pes if pes.count(p) > 1})
    if dup:
        raise ValueError(f"--pes lists {', '.join(dup)} more than once")
    return pes, None


def make_group(n: int, rows: int | None, grid: str) -> Group:
    if grid.strip():
        r, _, c = grid.lower().partition("x")
        if not (r.strip().isdigit() and c.strip().isdigit()):
            raise ValueError(f"--grid {grid!r}: write ROWSxCOLS, e.g. 3x2")
        if int(r) * int(c) != n:
            raise ValueError(f"--grid {grid}: {int(r)} × {int(c)} = {int(r) * int(c)} places for {n} PEs")
        return Group(tuple(range(n)), int(r))
    return Group(tuple(range(n)), rows) if rows else Group.square(range(n))


# --- set-up ------------------------------------------------------------------


#: payload × PEs at most. A run holds each PE's buffer once, the messages in flight and a
#: float32 reference of one payload: about twice payload × PEs at its peak (16 MiB on 6 PEs:
#: 225 MB RSS), so ~1.1 GB at this limit; the study's largest point (64 MiB on 6 PEs) is 384 MiB.
MAX_PAYLOAD_BYTES = 512 * 2**20


def check_payload(payload: int, pes: int, text: str) -> None:
    """Refuse a payload whose buffers (one per PE) would pass :data:`MAX_PAYLOAD_BYTES`."""
    total = payload * pes
    if total > MAX_PAYLOAD_BYTES:
        most = MAX_PAYLOAD_BYTES // pes // 2**20 * 2**20
        hint = f"use --payload {size_label(most)} or less on {pes} PEs, or fewer --pes" if most else "use fewer --pes"
        raise ValueError(
            f"--payload {text.strip()} on {pes} PEs holds {_mib(total)} of buffers (about {_mib(2 * total)} at the run's peak); "
            f"at most {_mib(MAX_PAYLOAD_BYTES)} (payload × PEs) is allowed: {hint}"
        )


def _mib(size_bytes: int) -> str:
    return f"{size_bytes / 2**20:,.0f} MiB"


PARAMS = (
    Option("algo", str, "ring", "all-reduce algorithm", collectives.ALGORITHMS),
    Option("payload", str, "1MiB", "bytes per PE (B, KiB, MiB, GiB)"),
    Option("pes", str, "", "PEs: empty = PE 0 of every CUBE; sipN = of SIP N's CUBEs; or ids/indices, e.g. 0-7,64"),
    Option(
        "grid",
        str,
        "",
        "2d grid ROWSxCOLS of the PEs in order (default: the CUBE grid, or the most square)",
        only_with=(("algo", "2d"),),
    ),
    Option("chunk", str, "64KiB", "bytes per IPCQ message (payloads are split so transfers pipeline)"),
    Option("dtype", str, "float16", "element type", DTYPES),
    Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
)


@kernel(
    options=PARAMS,
    name="allreduce",
    description="all-reduce over PEs with IPCQ send/recv: ring, 2d (dimension by dimension) or tree",
    topology="torus2x3",
)
def setup(rt: Runtime, **p: Any) -> Prepared:
    algo = p["algo"]
    if algo not in collectives.ALGORITHMS:
        raise ValueError(f"algo must be one of {', '.join(collectives.ALGORITHMS)}, not {algo!r}")
    if p["dtype"] not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {p['dtype']!r}")
    dtype = np.dtype(p["dtype"])
    payload = parse_size(p["payload"], "--payload")
    chunk_bytes = parse_size(p["chunk"], "--chunk")
    if payload % dtype.itemsize:
        raise ValueError(f"payload {p['payload']} is not a whole number of {dtype.name} elements ({dtype.itemsize} B)")
    chunk = collectives.chunk_elements(chunk_bytes, dtype)
    pe_ids, rows = select_pes(rt, p["pes"])
    if len(pe_ids) < 2:
        raise ValueError(f"an all-reduce needs at least 2 PEs; --pes {p['pes']!r} gives {len(pe_ids)}")
    scratch = rt.graph.node(f"{pe_ids[0]}.cpu").attrs["scratch_bytes"]
    held = collectives.BUFFERS[algo]
    if held * min(chunk_bytes, payload) > scratch:
        raise ValueError(
            f"chunk {size_label(chunk_bytes)}: the {algo} all-reduce holds {held} chunks in TCM at once, "
            f"{held} × {size_label(chunk_bytes)} > {size_label(scratch)} of kernel scratch; "
            f"use --chunk {size_label(scratch // held // dtype.itemsize * dtype.itemsize)} or less"
        )
    check_payload(payload, len(pe_ids), p["payload"])
    group = make_group(len(pe_ids), rows, p["grid"])
    n = payload // dtype.itemsize
    rng = np.random.default_rng(p["seed"])
    inputs = [random_f16(rng, (n,)).astype(dtype, copy=False) for _ in pe_ids]
    expected = reference(inputs, dtype)  # before the run reduces the buffers in place
    # The buffers are the inputs themselves (copy=False): the payload is held once per PE, not twice.
    bufs = [rt.deploy(x, pe=pe, name=f"buf{i}", dtype=dtype, copy=False) for i, (x, pe) in enumerate(zip(inputs, pe_ids, strict=True))]
    del inputs
    rt.launch(allreduce, pes=pe_ids, args=(bufs, group, algo, chunk_bytes))
    problem = Problem(rt.graph, group, tuple(pe_ids), n, dtype.itemsize, chunk)

    def check() -> float:
        return max(max_abs_error(b.array, expected) for b in bufs)

    def summary(result: RunResult) -> Summary:
        model = predict(algo, problem)
        return {
            "payload": size_label(payload),
            "chunk": size_label(chunk_bytes),
            "grid": f"{group.rows}x{group.cols}",
            "model_ns": round(model.ns, 3),
            "alpha_term_ns": round(model.alpha_term_ns, 3),
            "beta_term_ns": round(model.beta_term_ns, 3),
            "sim_over_model": round(result.latency_ns / model.ns, 4) if model.ns else None,
            "model": model.formula,
        }

    return Prepared(check, summary, algo)


def reference(inputs: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    """The sum of the inputs in float32, rounded to the dtype (and back to float32 to compare)."""
    acc = inputs[0].astype(np.float32)
    for x in inputs[1:]:
        acc += x
    return acc.astype(dtype).astype(np.float32)


CHECK_ELEMENTS = 2**20  # compared a slice at a time: float32 temporaries of 4 MiB, not of the payload


def max_abs_error(got: np.ndarray, expected: np.ndarray) -> float:
    """max |got − expected| in float32."""
    return max(
        float(np.abs(got[i : i + CHECK_ELEMENTS].astype(np.float32) - expected[i : i + CHECK_ELEMENTS]).max())
        for i in range(0, len(expected), CHECK_ELEMENTS)
    )


def tolerance(p: int, dtype: DTypeLike) -> float:
    """The largest |err| the roundings allow with inputs of magnitude < 2.

    A result passes through at most p − 1 additions, each rounding a partial
    sum of magnitude < 2p to the dtype (error ≤ eps/2 · 2p); the reference
    rounds once more: p · eps/2 · 2p = p² · eps.
    """
    return p * p * float(np.finfo(np.dtype(dtype)).eps)
