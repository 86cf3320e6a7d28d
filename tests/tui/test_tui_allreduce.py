"""The debugger on a collective: a tree all-reduce step on the 2x3 torus.

Renders the recording ``data/allreduce_tree.jsonl`` (``real_traces.py``):
the sends on the IPCQ lane, the parents' inbound links queueing in the FIFO
panel while two children's partial sums arrive at once, and a send's hop path.
"""

import pytest
from real_traces import load
from tui_harness import SNAPSHOT_DIR, press, screen_text, settle, sync

from kernbench.events.store import EventStore
from kernbench.events.types import EventKind
from kernbench_tui.app import KernbenchApp
from kernbench_tui.messages import SpanSelected
from kernbench_tui.sources import StoreSource

SIZE = (120, 36)
ROOT_PE = "sip0.cube0.pe0"


@pytest.fixture
def snap(snapshot):
    snapshot.snapshot_dir = SNAPSHOT_DIR
    return snapshot


def _app():
    events, meta = load("allreduce_tree")
    return KernbenchApp(StoreSource(EventStore.from_events(events), meta)), events


def _queued_at(events, t_ns):
    """Edges with flits queued at ``t_ns`` (from the recording itself)."""
    depth = {}
    for e in sorted((e for e in events if e.kind is EventKind.QUEUE_DEPTH), key=lambda e: (e.t_ns, e.seq)):
        if e.t_ns <= t_ns:
            depth[e.component] = e.value
    return {c for c, v in depth.items() if v > 0}


@sync
async def test_an_all_reduce_step_shows_sends_on_ipcq_and_the_loaded_link(snap):
    app, events = _app()
    t = 595
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await press(app, pilot, ("goto", t))
        await press(app, pilot, "1")
        await settle(app, pilot)
        text = screen_text(app)
    ipcq_row = next(line for line in text.splitlines() if "▕ ipcq" in line)
    assert "send" in ipcq_row
    assert _queued_at(events, t) == {"sip0.cube0.hub->sip0.cube0.r0"}  # the root's inbound port
    assert "sip0.cube0 hub->r0" in text and "recv wait" in text
    snap.assert_match(text, "allreduce_tree_fifo_595ns.txt")


@sync
async def test_a_send_span_shows_its_hop_path(snap):
    app, _ = _app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        rows = app.model.spans_in(f"{ROOT_PE}.ipcq", 0, app.model.end_ns)
        # the first send's busy span (the lane also holds its transfer's TRANSIT parts, recorded with causes)
        span = next(e for e in map(app.model.store.event, map(int, rows)) if e.kind == EventKind.ENGINE_BUSY)
        app.screen.post_message(SpanSelected(span, (span.t_ns + span.end_ns) / 2))
        await settle(app, pilot)
        text = screen_text(app)
    assert span.label.startswith("send to")
    assert "path:" in text and f"corr_id {span.corr_id}" in text and "phy" in text
    snap.assert_match(text, "allreduce_tree_send_details.txt")
