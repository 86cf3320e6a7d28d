"""TCM is a port (``kernbench/pe/tcm.py``, ``docs/timing.md`` "TCM"): every DMA into or out
of TCM, and every FETCH/STORE, takes its turn on it. Expected here by hand from the
topology's numbers, never from a number the simulator printed:

* a DMA of ``B`` bytes into TCM ends ``max(last flit in, start + B / tcm_bw)`` on an idle
  port: at 512 GB/s a 32 KiB read is the network's 141 ns, at 64 GB/s it is 512 ns;
* a DMA out of TCM starts its network transfer ``max(0, B / tcm_bw − B / dma_link_bw)``
  after the port starts reading: 32 KiB at 64 GB/s against the 256 GB/s PE port is
  512 − 128 = 384 ns later;
* with one shared port a FETCH and a landing DMA take turns; with a port each way they do not.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import oracle_flits as ref
import pytest
from kernelkit import PE0, busy, rng_array, run1

import kernbench.tl as tl
from kernbench.analysis.critical import attribute
from kernbench.cli import main
from kernbench.runtime.api import Runtime

SLICE0 = "sip0.cube0.hbm.slice0"
TILE = (128, 128)  # float16: 32 KiB


def one_load(sets: list[str]):
    rt = Runtime("cube1", sets)
    x = rt.deploy(rng_array(TILE), memory=SLICE0)

    def kernel(x):
        tl.wait(tl.load(x))

    return rt, run1(rt, kernel, x)


def one_store(sets: list[str]):
    rt = Runtime("cube1", sets)
    out = rt.empty(TILE, dtype=np.float16, memory=SLICE0)

    def kernel(out):
        tl.store(out, tl.full(TILE, 1.0, np.float16))

    return rt, run1(rt, kernel, out)


def test_a_load_at_the_papers_512_gbps_costs_nothing_more_than_its_flits():
    rt, r = one_load([])
    (span,) = busy(r, "dma.rd")
    assert span.end_ns - span.t_ns == pytest.approx(ref.read_ns(rt.graph, f"{PE0}.dma", SLICE0, [0], 32768))
    assert span.end_ns - span.t_ns == pytest.approx(141.0, abs=0.05)  # the probe's row


def test_a_load_into_a_64_gbps_tcm_takes_its_bytes_over_the_port():
    _rt, r = one_load(["pe.attrs.tcm_bw_gbps=64"])
    (span,) = busy(r, "dma.rd")
    assert span.end_ns - span.t_ns == pytest.approx(32768 / 64)  # 512 ns, from the DMA's start
    a = attribute(r.events, r.latency_ns)
    assert a.by_cause["tcm port"] == pytest.approx(32768 / 64 - 141.0, abs=0.05)  # past the last flit's landing
    assert sum(a.by_cause.values()) == pytest.approx(r.latency_ns, abs=1e-6)


def test_a_store_out_of_a_slow_tcm_leaves_when_the_port_has_read_it():
    _, fast = one_store([])
    _, slow = one_store(["pe.attrs.tcm_bw_gbps=64"])
    ((f,), (s,)) = busy(fast, "dma.wr"), busy(slow, "dma.wr")
    assert (s.end_ns - s.t_ns) - (f.end_ns - f.t_ns) == pytest.approx(32768 / 64 - 32768 / 256)  # 384 ns


def fetch_beside_a_load(shared: bool):
    rt = Runtime("cube1", ["pe.attrs.tcm_bw_gbps=64", f"pe.attrs.tcm_port_shared={str(shared).lower()}"])
    x = rt.deploy(rng_array(TILE), memory=SLICE0)

    def kernel(x):
        h = tl.load(x)
        a = tl.full(TILE, 1.0, np.float16)
        tl.add(a, a)  # FETCHes 64 KiB of TCM while the load is in flight
        tl.wait(h)

    return run1(rt, kernel, x)


def test_on_a_shared_port_a_landing_dma_waits_for_the_fetch_that_asked_first():
    r = fetch_beside_a_load(shared=True)
    (load,) = busy(r, "dma.rd")
    (fetch,) = busy(r, "fetch")
    (math,) = busy(r, "math")
    (store,) = busy(r, "store")
    assert fetch.t_ns < load.t_ns + 141.0  # asked for the port before the load's last flit landed
    assert fetch.end_ns - fetch.t_ns == pytest.approx(2 * 32768 / 64)  # 1,024 ns
    assert math.end_ns - math.t_ns == pytest.approx(4 + 128 * 128 / 64)  # 260 ns: too short a gap for the load's 512
    assert store.t_ns == pytest.approx(math.end_ns) and store.end_ns - store.t_ns == pytest.approx(32768 / 64)
    assert load.end_ns == pytest.approx(store.end_ns + 32768 / 64)  # its bytes go in after the STORE


def test_with_a_port_each_way_fetch_and_landing_do_not_meet():
    r = fetch_beside_a_load(shared=False)
    (load,) = busy(r, "dma.rd")
    assert load.end_ns - load.t_ns == pytest.approx(32768 / 64)


def test_a_dma_only_kernel_file_slows_by_at_least_one_and_a_half_when_tcm_drops_to_64_gbps(tmp_path, capsys):
    """The issue's done-when: 8 tiles of 32 KiB loaded into TCM and stored back, no engine."""
    f = tmp_path / "dma_only.py"
    f.write_text(
        textwrap.dedent(
            """
            import numpy as np
            from kernbench import kernel, tl


            def copy_through_tcm(x, out):
                for i in range(8):
                    tl.store(out[i], tl.load(x[i]))


            @kernel(topology="cube1")
            def dma_only(rt):
                X = (np.arange(8 * 128 * 128) % 1024).astype(np.float16).reshape(8, 128, 128)
                x, out = rt.deploy(X), rt.empty((8, 128, 128), dtype=np.float16)
                rt.launch(copy_through_tcm, pes=[0], args=(x, out))
                return lambda: float(np.abs(rt.read(out).astype(np.float32) - X.astype(np.float32)).max())
            """
        )
    )
    latency = {}
    for bw in (512, 64):
        assert main(["run", str(f), "--json", "--set", f"pe.attrs.tcm_bw_gbps={bw}"]) == 0
        rec = json.loads(capsys.readouterr().out)
        assert rec["max_abs_err"] == 0.0 and rec["engine_busy_ns"]["fetch"] == rec["engine_busy_ns"]["store"] == 0.0
        latency[bw] = rec["latency_ns"]
    assert latency[64] >= 1.5 * latency[512]
    # 8 loads one after another on the read channel, each 512 ns over the port, at the least
    assert latency[64] >= 8 * 32768 / 64
