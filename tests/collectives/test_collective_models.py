"""The simulated time of all-gather, reduce-scatter and all-to-all against their α–β models
(kernbench/models/alphabeta.py), as the all-reduce study holds the ring: once every step has several
messages the model's startups and flits are the run, and the residual is what the model leaves out
(docs/studies.md, "The other collectives")."""

from __future__ import annotations

import pytest

from kernbench.kernels import registry
from kernbench.runtime.api import Runtime


def point(kernel: str, topology: str, payload: str) -> tuple[float, float, float]:
    """(simulated ns, model ns, max |err|) of one run of a shipped collective kernel."""
    spec = registry.get(kernel)
    rt = Runtime(topology)
    prepared = spec.prepare(rt, dict(spec.defaults(), payload=payload))
    result = rt.run()
    return result.latency_ns, prepared.summary(result)["model_ns"], prepared.checked_error()


# 6 MiB per PE in 64 KiB messages: 16 messages per ring step, 8 per all-to-all part. The bound
# above 1 is each run's residual: the all-gather's and all-to-all's first read and last write of
# HBM; the reduce-scatter's adds, which keep PE_MATH as busy as the wire (64 float16 elements per
# cycle is 128 GB/s, the hub port's rate), so the last step's adds trail its last message.
@pytest.mark.parametrize(
    "kernel, most",
    [("allgather", 1.1), ("alltoall", 1.1), ("reducescatter", 1.2)],
)
@pytest.mark.parametrize("topology", ["torus2x3", "mesh2x3"])
def test_large_payloads_run_within_a_stated_factor_of_the_model_and_never_below_it(kernel, most, topology):
    sim, model, err = point(kernel, topology, "6MiB")
    assert 1.0 < sim / model < most
    assert err <= 36 * 2**-10  # p² · eps(float16); all-gather and all-to-all are exact


def test_the_torus_saves_startups_the_mesh_pays():
    for kernel in ("allgather", "alltoall"):
        mesh, torus = point(kernel, "mesh2x3", "12KiB"), point(kernel, "torus2x3", "12KiB")
        assert torus[0] < mesh[0] and torus[1] < mesh[1]


# --- the table docs/studies.md shows ------------------------------------------------

PAGE = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "studies.md"
TABLE_PAYLOADS = ("12KiB", "96KiB", "768KiB", "6MiB")


def render_table() -> str:
    """docs/studies.md's table of the other collectives, simulated and modelled now."""
    head = f"{'kernel':<14} {'payload':>7}  {'mesh µs':>9} {'α–β µs':>8} {'ratio':>6}  {'torus µs':>9} {'α–β µs':>8} {'ratio':>6}"
    lines = ["mesh2x3 vs torus2x3, PE 0 of each CUBE (6 PEs), float16, 64 KiB messages", head, "─" * len(head)]
    for kernel in ("allgather", "reducescatter", "alltoall"):
        for i, payload in enumerate(TABLE_PAYLOADS):
            cols = []
            for topology in ("mesh2x3", "torus2x3"):
                sim, model, _err = point(kernel, topology, payload)
                cols.append(f"{sim / 1000:>9,.2f} {model / 1000:>8,.2f} {sim / model:>6.2f}")
            lines.append(f"{kernel if i == 0 else '':<14} {payload:>7}  " + "  ".join(cols))
    return "\n".join(lines)


def test_the_studies_page_shows_what_the_simulator_and_the_model_give_now():
    table = render_table()
    assert f"```text\n{table}\n```" in PAGE.read_text(), f"docs/studies.md's table of the other collectives is stale; it is now:\n{table}"
