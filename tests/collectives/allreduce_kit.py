"""Run a collective on chosen PEs with chosen inputs; the collectives tests share it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kernbench import collectives, tl
from kernbench.collectives import Group
from kernbench.runtime.api import RunResult, Runtime


def integer_inputs(p: int, n: int, seed: int = 0, dtype=np.float16) -> list[np.ndarray]:
    """Whole numbers in [-8, 8]: every partial sum is exact in float16, in any order."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-8, 9, n).astype(dtype) for _ in range(p)]


def random_inputs(p: int, n: int, seed: int = 0, dtype=np.float16) -> list[np.ndarray]:
    """Random magnitudes in [0.5, 2) of random sign, like the shipped kernel's."""
    from kernbench.kernels.data import random_f16

    rng = np.random.default_rng(seed)
    return [random_f16(rng, (n,)).astype(dtype) for _ in range(p)]


def _allreduce(bufs, group, algo, chunk_bytes):
    collectives.all_reduce(bufs[tl.program_id()], group, algo=algo, chunk_bytes=chunk_bytes)


def run_collective(
    topology,
    pes: Sequence[str | int],
    inputs: list[np.ndarray],
    kernel: Callable = _allreduce,
    *args,
    rows: int = 1,
) -> tuple[list[np.ndarray], RunResult]:
    """Deploy ``inputs[i]`` beside PE ``pes[i]``, launch ``kernel(bufs, group, *args)``, run."""
    rt = Runtime(topology)
    bufs = [rt.deploy(x, pe=pe, dtype=x.dtype) for x, pe in zip(inputs, pes, strict=True)]
    group = Group(tuple(range(len(pes))), rows)
    rt.launch(kernel, pes=list(pes), args=(bufs, group, *args))
    result = rt.run()
    return [rt.read(b) for b in bufs], result


def allreduce(topology, pes, inputs, algo: str, chunk_bytes: int, rows: int = 1):
    return run_collective(topology, pes, inputs, _allreduce, algo, chunk_bytes, rows=rows)


def exact_sum(inputs: list[np.ndarray]) -> np.ndarray:
    acc = inputs[0].astype(np.float32)
    for x in inputs[1:]:
        acc = acc + x.astype(np.float32)
    return acc.astype(inputs[0].dtype)
