"""A GEMM composite streams, step by step, exactly the bytes each K-step consumes, and
writes C once, when it is final.

For several shapes and both layouts of A (row-major; K-step-major, stored as
``(k / tk, m, tk)``) a composite ``C = A @ B`` runs alone on one PE, and every
DMA it issues is caught. Expected here, independently of the scheduler:

* the steps: ``n = ceil(max(|A|, |B|) / composite_tile_bytes)``, step ``s``
  covering K ``[k·s/n, k·(s+1)/n)``; with a K-step-major A whole blocks only:
  ``per = max(1, tile // (max(|A|, |B|) / blocks))`` blocks a step,
  ``n = ceil(blocks / per)``, step ``s`` the blocks ``[blocks·s/n, blocks·(s+1)/n)``;
* each step's A read is the region numpy says that slice of A occupies (a
  column block of the row-major matrix; the blocks of the K-step-major one),
  its B read the rows of B, at their real addresses (``region_of_view``);
* each read takes what the flit-by-flit reference gives for those bytes on an
  idle machine (``oracle_flits``), and by hand for the paper's case: a column
  block of 128 rows 4 KiB apart has every burst on one pseudo-channel,
  128 × 8 ns + 6 ns = 1,030 ns, where the K-step-major block takes 141 ns;
* C is written once, as a whole, after the last GEMM.
"""

from __future__ import annotations

from math import ceil

import numpy as np
import oracle_flits as ref
import pytest
from kernelkit import PE0, busy, rng_array, run1

import kernbench.tl as tl
from kernbench.runtime.api import Runtime
from kernbench.sim.network import Network
from kernbench.sim.region import Region, region_of_view

SLICE = "sip0.cube0.hbm.slice0"


def intervals(region: Region) -> list[tuple[int, int]]:
    """The bytes a region covers as merged [start, end) intervals, in logical order."""
    out: list[list[int]] = []
    for a in region.starts:
        if out and out[-1][1] == a:
            out[-1][1] = a + region.run_bytes
        else:
            out.append([a, a + region.run_bytes])
    return [(a, b) for a, b in out]


def run_gemm(monkeypatch, m: int, k: int, n: int, tk: int, kstep_major: bool):
    rt = Runtime("cube1")
    A = rng_array((m, k), 1)
    B = rng_array((k, n), 2)
    stored = A.reshape(m, k // tk, tk).transpose(1, 0, 2) if kstep_major else A
    a, b = rt.deploy(stored, memory=SLICE), rt.deploy(B, memory=SLICE)
    c = rt.empty((m, n), memory=SLICE)
    moves: list[tuple[str, Region, object]] = []
    read, write = Network.read, Network.write

    def caught(kind, real):
        def move(self, *args, **kw):
            ev = real(self, *args, **kw)
            moves.append((kind, kw["region"], ev))
            return ev

        return move

    monkeypatch.setattr(Network, "read", caught("read", read))
    monkeypatch.setattr(Network, "write", caught("write", write))

    def kernel(a, b, c):
        extra = {"m": m, "k": k, "n": n, **({"a_kstep_major": True} if kstep_major else {})}
        tl.composite([tl.OpSpec("gemm", {"a": tl.ref(a), "b": tl.ref(b)}, tl.ref(c), extra=extra)])

    result = run1(rt, kernel, a, b, c)
    np.testing.assert_allclose(rt.read(c).astype(np.float32), A.astype(np.float32) @ B.astype(np.float32), rtol=2e-2, atol=0.1)
    return rt, a, b, c, moves, result


SHAPES = [(128, 2048, 128, 128), (64, 512, 128, 128), (128, 1024, 64, 256), (128, 384, 128, 64)]  # m, k, n, tk


@pytest.mark.parametrize("kstep_major", [False, True], ids=["A row-major", "A K-step-major"])
@pytest.mark.parametrize("m, k, n, tk", SHAPES)
def test_each_step_reads_the_slice_it_consumes_at_its_strided_cost_and_c_is_written_once(monkeypatch, m, k, n, tk, kstep_major):
    rt, a, b, c, moves, result = run_gemm(monkeypatch, m, k, n, tk, kstep_major)
    tile = rt.graph.node(f"{PE0}.cpu").attrs["composite_tile_bytes"]
    big = max(2 * m * k, 2 * k * n)
    blocks = k // tk
    steps = ceil(blocks / max(1, tile // ceil(big / blocks))) if kstep_major else ceil(big / tile)
    reads = [(r, ev) for kind, r, ev in moves if kind == "read"]
    writes = [(r, ev) for kind, r, ev in moves if kind == "write"]
    assert len(reads) == 2 * steps
    for s in range(steps):
        k0, k1 = k * s // steps, k * (s + 1) // steps
        if kstep_major:  # whole blocks, never part of one
            b0, b1 = blocks * s // steps, blocks * (s + 1) // steps
            k0, k1 = b0 * tk, b1 * tk
            view = a.array[b0:b1]
        else:
            view = a.array[:, k0:k1]
        want_a = region_of_view(a.array, view, a.offset)
        want_b = region_of_view(b.array, b.array[k0:k1], b.offset)
        (got_a, ev_a), (got_b, ev_b) = reads[2 * s], reads[2 * s + 1]
        assert intervals(got_a) == intervals(want_a), s
        assert intervals(got_b) == intervals(want_b), s
        for region, ev in ((got_a, ev_a), (got_b, ev_b)):
            assert ev.value.latency_ns == pytest.approx(ref.read_ns(rt.graph, f"{PE0}.dma", SLICE, list(region.starts), region.run_bytes))
    (c_region, c_write) = writes[0]
    assert len(writes) == 1 and intervals(c_region) == [(c.offset, c.offset + c.nbytes)]
    last_gemm = max(e.end_ns for e in busy(result, "gemm"))
    assert c_write.value.start_ns >= last_gemm


def test_the_papers_case_by_hand(monkeypatch):
    """128 × 2048 × 128: 16 steps; a row-major A's column block is 128 rows 4 KiB apart, so
    its 128 bursts land on one of the slice's 8 pseudo-channels: 128 × 256 B / 32 GB/s
    plus the request (2 ns) and the data's way back (2 ns headers, 2 flits of 1 ns) = 1,030 ns.
    K-step-major, the same bytes are one contiguous 32 KiB block: 141 ns, the probe's row."""
    for kstep_major, a_ns in ((False, 1030.0), (True, 141.0)):
        _rt, _a, _b, _c, moves, _result = run_gemm(monkeypatch, 128, 2048, 128, 128, kstep_major)
        reads = [ev.value.latency_ns for kind, _r, ev in moves if kind == "read"]
        assert reads == pytest.approx([a_ns, 141.0] * 16)
        monkeypatch.undo()
