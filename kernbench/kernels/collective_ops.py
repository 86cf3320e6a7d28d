"""All-gather, reduce-scatter and all-to-all over a set of PEs (``kernbench run allgather|reducescatter|alltoall``).

The siblings of ``kernbench run allreduce`` (:mod:`kernbench.kernels.allreduce`), with the
same options for the PEs, payload, message size, dtype and seed. Each PE holds ``payload``
bytes of its own (random values of magnitude in [0.5, 2), float16 or float32) in its HBM
slice, and runs one collective of :mod:`kernbench.collectives` on it:

``allgather``      ring all-gather in the group's snake order: PE ``i`` contributes
                   segment ``i`` of its buffer; afterwards every buffer holds every
                   owner's segment. Checked exactly.
``reducescatter``  ring reduce-scatter: afterwards PE ``i``'s segment ``i`` holds the
                   element-wise sum of everyone's; checked against the numpy float32 sum
                   at the all-reduce's tolerance (``p² · eps``).
``alltoall``       pairwise all-to-all on a ``(p, payload / p)`` buffer (rank 2: row ``j``
                   is the part for PE ``j``, the expert-parallel layout); afterwards row
                   ``j`` holds PE ``j``'s row ``i``. In place, or into a second buffer with
                   ``--output separate``. Checked exactly.

The summary sets the simulated latency beside the α–β model of the same schedule
(:mod:`kernbench.models.alphabeta`). The references are rebuilt from the seed after the
run, so the inputs are not held twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernbench import collectives, tl
from kernbench.collectives import Group, Ring, ring
from kernbench.collectives.alltoall import BUFFERS as ALL_TO_ALL_BUFFERS
from kernbench.handles import HbmTensor
from kernbench.kernels.allreduce import DTYPES, check_payload, make_group, max_abs_error, reference, select_pes, tolerance
from kernbench.kernels.data import random_f16
from kernbench.kernels.registry import Option, Prepared, Summary, kernel
from kernbench.models.alphabeta import Problem, predict
from kernbench.runtime.api import RunResult, Runtime
from kernbench.sizes import parse_size, size_label

__all__ = ["allgather", "alltoall", "reducescatter", "tolerance"]


def all_gather_kernel(bufs: list[HbmTensor], group: Group, chunk_bytes: int) -> None:
    collectives.all_gather(bufs[tl.program_id()], group, chunk_bytes=chunk_bytes)


def reduce_scatter_kernel(bufs: list[HbmTensor], group: Group, chunk_bytes: int) -> None:
    collectives.reduce_scatter(bufs[tl.program_id()], group, chunk_bytes=chunk_bytes)


def all_to_all_kernel(bufs: list[HbmTensor], outs: list[HbmTensor] | None, group: Group, chunk_bytes: int) -> None:
    me = tl.program_id()
    collectives.all_to_all(bufs[me], group, out=None if outs is None else outs[me], chunk_bytes=chunk_bytes)


def _options(op: str) -> tuple[Option, ...]:
    return (
        # (all-to-all: 768 KiB cuts into 2, 3, 4, 6, 8, 16 or 32 equal parts of whole elements)
        Option("payload", str, "768KiB", "bytes per PE (B, KiB, MiB, GiB); a multiple of PEs × element size")
        if op == "all-to-all"
        else Option("payload", str, "1MiB", "bytes per PE (B, KiB, MiB, GiB)"),
        Option("pes", str, "", "PEs: empty = PE 0 of every CUBE; sipN = of SIP N's CUBEs; or ids/indices, e.g. 0-7,64"),
        Option("chunk", str, "64KiB", "bytes per IPCQ message (payloads are split so transfers pipeline)"),
        Option("dtype", str, "float16", "element type", DTYPES),
        Option("seed", int, 0, "random seed of the inputs", low=0, high=2**32 - 1),
    )


OUTPUTS = ("inplace", "separate")

#: Chunk buffers each collective holds in TCM at once: chunk × this ≤ kernel scratch.
HELD = {"all-gather": ring.GATHER_BUFFERS, "reduce-scatter": ring.BUFFERS, "all-to-all": ALL_TO_ALL_BUFFERS}


@dataclass(frozen=True, slots=True)
class Setting:
    """One run's choices, checked: its PEs in program order, their group, the payload and its chunking."""

    pe_ids: list[str]
    group: Group
    dtype: np.dtype
    payload: int
    chunk_bytes: int
    elements: int  # per PE

    def inputs(self, seed: int) -> list[np.ndarray]:
        """Each PE's input, drawn from ``seed`` (the same arrays every time: the check draws them again)."""
        rng = np.random.default_rng(seed)
        return [random_f16(rng, (self.elements,)).astype(self.dtype, copy=False) for _ in self.pe_ids]

    def problem(self, rt: Runtime) -> Problem:
        return Problem(
            rt.graph, self.group, tuple(self.pe_ids), self.elements, self.dtype.itemsize, self.chunk_bytes // self.dtype.itemsize
        )

    def segment(self, program: int) -> tuple[int, int]:
        """The ring segment ``program`` owns (all-gather) or reduces (reduce-scatter)."""
        snake = self.group.snake
        return Ring.of(snake, program, 0, self.elements, 1).segment(snake.index(program))


def _setting(rt: Runtime, p: dict[str, Any], op: str, algo: str) -> Setting:
    """The options of one run, checked as ``allreduce`` checks them; one clear error each."""
    if p["dtype"] not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {p['dtype']!r}")
    dtype = np.dtype(p["dtype"])
    payload = parse_size(p["payload"], "--payload")
    chunk_bytes = parse_size(p["chunk"], "--chunk")
    if payload % dtype.itemsize:
        raise ValueError(f"payload {p['payload']} is not a whole number of {dtype.name} elements ({dtype.itemsize} B)")
    collectives.chunk_elements(chunk_bytes, dtype)
    pe_ids, rows = select_pes(rt, p["pes"])
    if len(pe_ids) < 2:
        raise ValueError(f"an {op} needs at least 2 PEs; --pes {p['pes']!r} gives {len(pe_ids)}")
    n = payload // dtype.itemsize
    if op == "all-to-all" and n % len(pe_ids):
        unit = len(pe_ids) * dtype.itemsize
        hint = f", e.g. --payload {size_label(payload - payload % unit)}" if payload > unit else ""
        raise ValueError(
            f"--payload {p['payload']}: {n:,} {dtype.name} elements do not cut into {len(pe_ids)} equal parts, one per PE; "
            f"use a multiple of {unit} B{hint}"
        )
    scratch = rt.graph.node(f"{pe_ids[0]}.cpu").attrs["scratch_bytes"]
    held = HELD[op]
    if held * min(chunk_bytes, payload) > scratch:
        raise ValueError(
            f"chunk {size_label(chunk_bytes)}: the {algo} {op} holds {held} chunk{'s' if held > 1 else ''} in TCM at once, "
            f"{held} × {size_label(chunk_bytes)} > {size_label(scratch)} of kernel scratch; "
            f"use --chunk {size_label(scratch // held // dtype.itemsize * dtype.itemsize)} or less"
        )
    check_payload(payload * (2 if p.get("output") == "separate" else 1), len(pe_ids), p["payload"])
    return Setting(pe_ids, make_group(len(pe_ids), rows, ""), dtype, payload, chunk_bytes, n)


def _summary(rt: Runtime, s: Setting, op: str, algo: str) -> Callable[[RunResult], Summary]:
    problem = s.problem(rt)

    def summary(result: RunResult) -> Summary:
        model = predict(algo, problem, op)
        return {
            "payload": size_label(s.payload),
            "chunk": size_label(s.chunk_bytes),
            "grid": f"{s.group.rows}x{s.group.cols}",
            "model_ns": round(model.ns, 3),
            "alpha_term_ns": round(model.alpha_term_ns, 3),
            "beta_term_ns": round(model.beta_term_ns, 3),
            "sim_over_model": round(result.latency_ns / model.ns, 4) if model.ns else None,
            "model": model.formula,
        }

    return summary


def _deploy(rt: Runtime, s: Setting, inputs: list[np.ndarray], shape: tuple[int, ...]) -> list[HbmTensor]:
    # the buffers are the inputs themselves (copy=False): each payload is held once
    return [
        rt.deploy(x.reshape(shape), pe=pe, name=f"buf{i}", dtype=s.dtype, copy=False)
        for i, (x, pe) in enumerate(zip(inputs, s.pe_ids, strict=True))
    ]


@kernel(
    options=_options("all-gather"),
    name="allgather",
    description="ring all-gather over PEs with IPCQ send/recv: every PE gets every PE's segment",
    topology="torus2x3",
)
def allgather(rt: Runtime, **p: Any) -> Prepared:
    s = _setting(rt, p, "all-gather", "ring")
    bufs = _deploy(rt, s, s.inputs(p["seed"]), (s.elements,))
    rt.launch(all_gather_kernel, pes=s.pe_ids, args=(bufs, s.group, s.chunk_bytes))

    def check() -> float:
        inputs = s.inputs(p["seed"])
        want = np.empty(s.elements, np.float32)
        for prog, x in enumerate(inputs):
            a, b = s.segment(prog)
            want[a:b] = x[a:b]
        return max(max_abs_error(buf.array, want) for buf in bufs)

    return Prepared(check, _summary(rt, s, "all-gather", "ring"), "ring")


@kernel(
    options=_options("reduce-scatter"),
    name="reducescatter",
    description="ring reduce-scatter over PEs with IPCQ send/recv: each PE's segment becomes the sum",
    topology="torus2x3",
)
def reducescatter(rt: Runtime, **p: Any) -> Prepared:
    s = _setting(rt, p, "reduce-scatter", "ring")
    inputs = s.inputs(p["seed"])
    expected = reference(inputs, s.dtype)  # before the run reduces the buffers in place
    bufs = _deploy(rt, s, inputs, (s.elements,))
    del inputs
    rt.launch(reduce_scatter_kernel, pes=s.pe_ids, args=(bufs, s.group, s.chunk_bytes))

    def check() -> float:
        err = 0.0
        for prog, buf in enumerate(bufs):
            a, b = s.segment(prog)
            if b > a:  # (fewer elements than PEs: some own none)
                err = max(err, max_abs_error(buf.array[a:b], expected[a:b]))
        return err

    return Prepared(check, _summary(rt, s, "reduce-scatter", "ring"), "ring")


@kernel(
    options=(
        *_options("all-to-all"),
        Option("output", str, "inplace", "inplace: into the buffer it sends from; separate: into a second buffer", OUTPUTS),
    ),
    name="alltoall",
    description="pairwise all-to-all over PEs with IPCQ send/recv: part j of every PE goes to PE j (expert parallelism)",
    topology="torus2x3",
)
def alltoall(rt: Runtime, **p: Any) -> Prepared:
    if p["output"] not in OUTPUTS:
        raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, not {p['output']!r}")
    s = _setting(rt, p, "all-to-all", "pairwise")
    q = len(s.pe_ids)
    shape = (q, s.elements // q)
    bufs = _deploy(rt, s, s.inputs(p["seed"]), shape)
    outs = [rt.empty(shape, s.dtype, pe=pe, name=f"out{i}") for i, pe in enumerate(s.pe_ids)] if p["output"] == "separate" else None
    rt.launch(all_to_all_kernel, pes=s.pe_ids, args=(bufs, outs, s.group, s.chunk_bytes))

    def check() -> float:
        parts = [x.reshape(shape) for x in s.inputs(p["seed"])]
        got = outs if outs is not None else bufs
        err = max(max_abs_error(got[i].array[j], parts[j][i].astype(np.float32)) for i in range(q) for j in range(q))
        if outs is not None:  # the input is left as it was
            err = max([err] + [max_abs_error(bufs[i].array.reshape(-1), parts[i].reshape(-1).astype(np.float32)) for i in range(q)])
        return err

    variant = "pairwise" if outs is None else "pairwise, separate output"
    return Prepared(check, _summary(rt, s, "all-to-all", "pairwise"), variant)
