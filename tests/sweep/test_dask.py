"""--scheduler: the points run on a Dask distributed cluster and give exactly the rows of a local run."""

from __future__ import annotations

import time

import distributed  # in the test extra: a missing install fails these tests, it does not skip them
import pytest
from sweep_harness import GEMM, sweep, sweep_json

GRID = [*GEMM, "--grid", "k=128,256", "--grid", "pes=1,4", "--no-cache"]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


def test_a_local_cluster_gives_the_rows_of_a_local_run(capsys, tmp_path, cluster):
    t0 = time.monotonic()
    status, on_cluster, err = sweep_json([*GRID, "--scheduler", cluster.scheduler_address], capsys, tmp_path, "cluster.json")
    seconds = time.monotonic() - t0
    assert status == 0, err
    _, local, _ = sweep_json([*GRID, "--jobs", "1"], capsys, tmp_path, "local.json")
    assert on_cluster == local and len(local) == 4
    assert (tmp_path / "cluster.json").read_bytes() == (tmp_path / "local.json").read_bytes()
    print(f"4 points on a 2-worker LocalCluster: {seconds:.2f} s")


def test_cluster_results_are_cached_like_local_ones(capsys, tmp_path, cluster, own_cache):
    grid = [g for g in GRID if g != "--no-cache"]
    sweep([*grid, "--scheduler", cluster.scheduler_address], capsys)
    assert len(list(own_cache.rglob("*.json"))) == 4


def test_an_unreachable_scheduler_is_one_line(capsys, monkeypatch):
    from kernbench.sweep import executors

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    status, out, err = sweep([*GRID, "--scheduler", "tcp://127.0.0.1:9"], capsys)
    assert status == 2 and out == ""
    assert err.startswith("error: --scheduler tcp://127.0.0.1:9: cannot connect") and err.count("\n") == 1
