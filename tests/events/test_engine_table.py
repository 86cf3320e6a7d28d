"""The PE's engines are listed once (events/types.py ENGINE_TABLE); every view keyed by engine covers them all."""

from kernbench.analysis.critical import LANE_CAUSE, LANE_KIND
from kernbench.commands.run import ENGINE_NAMES
from kernbench.events.types import ENGINE_TABLE, ENGINES
from kernbench_tui.widgets.lanes import ENGINE_COLORS


def test_fetch_and_store_are_two_engines_of_one_block():
    assert ENGINES.index("fetch") + 1 == ENGINES.index("store")
    assert {e.block for e in ENGINE_TABLE if e.lane in ("fetch", "store")} == {"PE_FETCH_STORE"}
    assert "fs" not in ENGINES


def test_every_view_keyed_by_engine_covers_every_engine():
    for table in (LANE_CAUSE, LANE_KIND, ENGINE_NAMES, ENGINE_COLORS):
        assert set(ENGINES) <= set(table)
