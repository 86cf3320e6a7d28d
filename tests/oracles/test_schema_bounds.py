"""A topology value may sit exactly on either end of its declared range:
``between(lo, hi)`` is ``lo <= v <= hi`` (topology/schema.py)."""

from __future__ import annotations

import pytest

from kernbench.errors import TopologyError
from kernbench.topology.spec import MAX_NS, load_spec


@pytest.mark.parametrize("key", ["cube.hbm.overhead_ns", "sip.ucie.prop_ns"])
def test_a_latency_at_either_end_of_its_range_is_accepted_and_past_it_rejected(key):
    for ok in (0, MAX_NS):
        load_spec("cube1", [f"{key}={ok}"])
    for bad in (-1e-9, MAX_NS * (1 + 1e-9)):
        with pytest.raises(TopologyError, match=r"the range is 0\.\.1e\+06"):
            load_spec("cube1", [f"{key}={bad!r}"])
