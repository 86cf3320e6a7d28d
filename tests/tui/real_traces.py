"""Recorded event streams of real kernels, pinned for the UI's snapshots.

The debugger's snapshots must change when *its* rendering changes, not when
the simulator's timing does; so they render these recordings. A test
(``test_recordings.py``) re-simulates each one and fails when the simulator
records something else now, so the snapshots — and README's capture — never
show a run the program no longer produces. Re-record after an intended model
change with::

    python tests/tui/real_traces.py

(``RETIMED``: a run's commands re-timed under what-if changes, for the ``r`` prompt's comparison.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parents[2]

RUNS = {
    "gemm_primitive": ["gemm-primitive"],
    "gqa_small": ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"],
    # the same decode step as opt3, for `kernbench-tui compare` (opt3 against opt2)
    "gqa_small_opt3": ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2", "--variant", "opt3"],
    # A's K-chunks as column blocks of row-major A: every row 1 KiB apart, on 2 of a slice's 8 channels
    "gemm_naive": ["gemm-primitive", "--layout", "naive"],
    "allreduce_tree": ["allreduce", "--algo", "tree", "--payload", "32KiB", "--chunk", "8KiB"],
    # gqa_small recorded with causes (pred, TRANSIT): its critical path crosses PEs 7, 6 and 4
    "gqa_small_why": ["gqa-decode", "--topology", "cube1", "--context", "512", "--heads", "16", "--kv-heads", "2"],
    # a kernel file of helper functions, for the Source view (its lines are this folder's lines_kernel.py)
    "lines_small": [str(DATA / "lines_kernel.py"), "--topology", "cube1"],
}
#: a run re-timed under what-if changes (the debugger's ``r`` prompt): (the run of RUNS, the changes)
RETIMED = {
    "gqa_small_whatif": ("gqa_small", ("pe.attrs.math_elems_per_cycle=16",)),
}


#: a source site's files under the repository are stored relative to it, as ``<root>/kernbench/…``:
#: a recording reads back with this checkout's paths, wherever it is
ROOT_MARK = "<root>/"


def load(name: str):
    """(events, metadata) of a recording."""
    from kernbench.events.tracefile import TraceMetadata
    from kernbench.events.types import Event, EventKind

    lines = (DATA / f"{name}.jsonl").read_text().splitlines()
    meta = TraceMetadata(**json.loads(lines[0].replace(ROOT_MARK, f"{ROOT}/")))
    events = []
    root = f"{ROOT}/"
    for line in lines[1:]:
        # recordings before pred have 9 fields, before src 10
        t, kind, comp, end, corr, label, value, detail, seq, *rest = json.loads(line)
        if len(rest) > 1:
            rest[1] = rest[1].replace(ROOT_MARK, root)
        events.append(Event(t, EventKind[kind], comp, end, corr, label, value, detail, seq, *rest))
    return events, meta


def simulate(name: str):
    """(events, metadata) of the run as the simulator records it now (``kernbench-tui run``'s path)."""
    from kernbench.cli import tui_simulation
    from kernbench.events.bus import Bus, Recorder

    if name in RETIMED:  # the run's commands re-timed, as the debugger's what-if prompt does
        run, changes = RETIMED[name]
        fn, _ = tui_simulation(RUNS[run])
        trace = fn(Bus()).retime(changes)
        return trace.store.events(), trace.metadata
    fn, meta = tui_simulation(RUNS[name])
    bus = Bus()
    rec = Recorder(bus)
    meta = fn(bus).metadata
    return rec.events(), meta


def record(name: str) -> None:
    from dataclasses import asdict

    events, meta = simulate(name)
    with open(DATA / f"{name}.jsonl", "w") as f:
        f.write(json.dumps(asdict(meta), sort_keys=True).replace(f"{ROOT}/", ROOT_MARK) + "\n")
        for e in events:
            src = e.src.replace(f"{ROOT}/", ROOT_MARK)
            f.write(
                json.dumps([e.t_ns, e.kind.name, e.component, e.end_ns, e.corr_id, e.label, e.value, e.detail, e.seq, e.pred, src]) + "\n"
            )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    for run in sys.argv[1:] or [*RUNS, *RETIMED]:  # name some to re-record only those
        record(run)
        print(f"recorded {run}")
