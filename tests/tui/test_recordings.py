"""The recordings the snapshots render are what the simulator records today (README's capture is one of them)."""

import pytest
from real_traces import RETIMED, RUNS, load, simulate


@pytest.mark.parametrize("name", sorted([*RUNS, *RETIMED]))
def test_a_recording_is_what_the_simulator_records_now(name):
    stored, meta = load(name)
    fresh, fresh_meta = simulate(name)
    hint = f"the simulator records another {name} now: re-record with `python tests/tui/real_traces.py {name}` and review the snapshots"
    assert (meta.kernel, meta.topology, meta.variant, meta.end_ns) == (
        fresh_meta.kernel,
        fresh_meta.topology,
        fresh_meta.variant,
        fresh_meta.end_ns,
    ), hint
    assert len(stored) == len(fresh), hint
    assert stored == fresh, hint
