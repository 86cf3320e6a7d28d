"""A kernel file written outside the package goes everywhere a shipped kernel goes, with the same numbers.

One file in a temporary folder declares two kernels (a tiled vector add and a
small GEMM). Launched by hand from Python it gives latencies; `kernbench run
--json --explain`, `kernbench-tui run` (driven by a pilot), `compare`,
`sweep --jobs 2` and a saved-and-reopened trace must all give the same ones.
"""

from __future__ import annotations

import json
import runpy
import textwrap

import pytest
from tui_harness import settle, sync

from kernbench.cli import main
from kernbench.events.tracefile import open_trace
from kernbench.record import problems
from kernbench.runtime.api import Runtime
from kernbench_tui import cli as tui_cli
from kernbench_tui.app import KernbenchApp

KERNEL_FILE = textwrap.dedent(
    '''
    """Two kernels of a user's: a tiled vector add and a small GEMM."""
    import numpy as np

    from kernbench import Option, kernel, tl


    def vadd(xs, ys, outs, tile):
        me = tl.program_id()
        x, y, out = xs[me], ys[me], outs[me]
        for j in range(0, x.shape[1], tile):
            a = tl.load(x[:, j : j + tile])
            b = tl.load(y[:, j : j + tile])
            tl.store(out[:, j : j + tile], tl.add(a, b))


    def gemm_k(a, b, c, tile_k):
        acc = None
        for k0 in range(0, a.shape[1], tile_k):
            part = tl.dot(tl.load(a[:, k0 : k0 + tile_k]), tl.load(b[k0 : k0 + tile_k, :]))
            acc = part if acc is None else tl.add(acc, part)
        tl.store(c, acc)


    @kernel(
        options=[
            Option("n", int, 2048, "elements per row", low=1, high=1 << 20),
            Option("tile", int, 256, "elements per load", low=1, high=1 << 20),
        ],
    )
    def vector_add(rt, n, tile):
        """out = x + y, one row per PE."""
        rng = np.random.default_rng(1)
        X, Y = rng.random((4, n)), rng.random((4, n))
        xs = [rt.deploy(X[i : i + 1], pe=i) for i in range(4)]
        ys = [rt.deploy(Y[i : i + 1], pe=i) for i in range(4)]
        outs = [rt.empty((1, n), pe=i) for i in range(4)]
        rt.launch(vadd, pes=range(4), args=(xs, ys, outs, tile))
        ref = X.astype(np.float16).astype(np.float32) + Y.astype(np.float16).astype(np.float32)
        return lambda: np.abs(np.concatenate([rt.read(o) for o in outs]).astype(np.float32) - ref).max()


    @kernel(options=[Option("k", int, 256, "inner dimension", low=16, high=4096), Option("tile_k", int, 64, "K per load", low=16, high=4096)])
    def small_gemm(rt, k, tile_k):
        """C = A @ B on one PE, K in chunks."""
        rng = np.random.default_rng(2)
        A, B = rng.standard_normal((32, k)), rng.standard_normal((k, 64))
        a, b, c = rt.deploy(A), rt.deploy(B), rt.empty((32, 64))
        rt.launch(gemm_k, pes=[0], args=(a, b, c, tile_k))
        ref = A.astype(np.float16).astype(np.float32) @ B.astype(np.float16).astype(np.float32)
        return lambda: np.abs(rt.read(c).astype(np.float32) - ref).max()
    '''
)


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("user") / "mine.py"
    path.write_text(KERNEL_FILE)
    return path


def by_hand(path, name, **options):
    """The latency of the kernel launched from Python, no kernbench command involved."""
    setup = runpy.run_path(str(path))[name]
    rt = Runtime("cube1")
    check = setup(rt, **options)
    result = rt.run()
    return round(result.latency_ns, 6), float(check())


def explained_by_hand(path, name, **options):
    """``RunResult.explain()`` of the kernel launched from Python, as JSON."""
    rt = Runtime("cube1")
    runpy.run_path(str(path))[name](rt, **options)
    return rt.run(record=True).explain().as_json()


def cli_json(capsys, *argv):
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    assert status == 0, err
    return json.loads(out)


def test_a_kernel_file_runs_explains_compares_sweeps_and_saves_with_the_python_latencies(kernel_file, capsys, tmp_path):
    f = str(kernel_file)
    add256, add_err = by_hand(kernel_file, "vector_add", n=2048, tile=256)
    add1024, _ = by_hand(kernel_file, "vector_add", n=2048, tile=1024)
    gemm, _ = by_hand(kernel_file, "small_gemm", k=256, tile_k=64)
    assert len({add256, add1024, gemm}) == 3

    # run --json --explain: a run record, the latency by hand, the attribution adding up to it
    trace = tmp_path / "add.kbtrace"
    rec = cli_json(capsys, "run", f"{f}:vector-add", "--json", "--explain", "--trace", str(trace))
    assert not problems(rec)
    assert rec["latency_ns"] == add256 and rec["max_abs_err"] == add_err and rec["kernel_file"] == f
    assert sum(rec["attribution"]["by_cause"].values()) == pytest.approx(add256, abs=1e-6)
    assert rec["attribution"] == explained_by_hand(kernel_file, "vector_add", n=2048, tile=256)  # result.explain() is --explain
    assert cli_json(capsys, "run", f"{f}:small_gemm", "--json")["latency_ns"] == gemm

    # the saved trace reopens as the same run
    saved = open_trace(trace)
    assert saved.metadata.kernel == "vector-add" and round(saved.metadata.end_ns, 6) == add256
    assert saved.metadata.extra["kernel_file"] == f

    # compare: a run side, and the trace against a run of the same kernel (nothing moves)
    doc = cli_json(capsys, "compare", f"{f}:vector-add --tile 1024", str(trace), "--json")
    assert (doc["a"]["latency_ns"], doc["b"]["latency_ns"]) == (add1024, add256) and not problems(doc["a"])
    same = cli_json(capsys, "compare", str(trace), f"{f}:vector-add", "--json")["delta"]
    assert same["latency_ns"] == 0.0 and same["commands"] == 0

    # sweep in two worker processes: every point's latency is the one by hand
    rows = cli_json(capsys, "sweep", f"{f}:vector-add", "--grid", "tile=256,1024", "--jobs", "2", "--no-cache", "--json")
    assert [r["latency_ns"] for r in rows] == [add256, add1024]


@sync
async def test_the_debugger_runs_a_kernel_file_live_and_saves_its_trace(kernel_file, tmp_path):
    launched = []
    trace = tmp_path / "live.kbtrace"
    argv = ["run", f"{kernel_file}:small-gemm", "--tile-k", "64", "--trace", str(trace), "--explain"]
    assert tui_cli.main(argv, launch=lambda what: launched.append(what) or 0) == 0
    (what,) = launched
    app = KernbenchApp(what.source, outputs=what.outputs)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await app.workers.wait_for_complete()  # the critical path is walked in a worker of its own
        await settle(app, pilot)
        assert app.error is None and not app.running
        assert (
            app.metadata.kernel == "small-gemm" and round(app.metadata.end_ns, 6) == by_hand(kernel_file, "small_gemm", k=256, tile_k=64)[0]
        )
        assert app.nav.why is not None and app.nav.overlay  # --explain: the critical path is drawn
    assert round(open_trace(trace).metadata.end_ns, 6) == round(app.metadata.end_ns, 6)
