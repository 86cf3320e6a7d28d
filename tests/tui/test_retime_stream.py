"""A child's re-timing as the debugger receives it: the events sent in batches while the child re-times,
then the answer; the store made of them is the store of all the events (kernbench_tui.sources)."""

import multiprocessing
import threading

import pytest

from kernbench.errors import KernbenchError, RetimeError
from kernbench.events.store import EventStore
from kernbench.events.tracefile import Trace, TraceMetadata
from kernbench.events.types import Event, EventKind
from kernbench_tui.child_run import ChildRetimer, _serve_retimings

#: a stream with spans published as they end (later rows before earlier ones), strings shared and not
EVENTS = [
    Event(0.0, EventKind.DISPATCH, "sip0.cube0.pe0.cpu", 4.0, 1, "dot", 3.0, "64", seq=0, src="k.py:3"),
    Event(5.0, EventKind.TRANSFER_START, "sip0.cube0.pe0.dma", -1.0, 2, "dma_read", 512.0, "a=>b", seq=1),
    Event(1.0, EventKind.ENGINE_BUSY, "sip0.cube0.pe0.gemm", 6.0, 1, "dot", 64.0, seq=2, pred=0),
    Event(2.0, EventKind.TRANSIT, "a->b", 3.0, 2, "queueing", 7.0, seq=3, pred=1),
    Event(9.0, EventKind.QUEUE_DEPTH, "a->b", -1.0, 2, "", 1.5, seq=4),
]


class Publishing:
    """Publishes EVENTS on the bus it is given, in publish order (slowly: several batches go out), as
    RecordedRun.retime_published does; a change it does not know is refused before any event."""

    def retime_published(self, changes, bus):
        if changes != ["x=1"]:
            raise RetimeError(f"no such change {changes}")
        for e in EVENTS:
            bus.emit(e.t_ns, e.kind, e.component, e.end_ns, e.corr_id, e.label, e.value, e.detail, e.pred, e.src)
            threading.Event().wait(0.03)  # (longer than the sender's cadence: the events go out in batches)
        return TraceMetadata(kernel="k", end_ns=9.0, extra={"what_if": changes})


class WholeOnly:
    """A retimer that makes only whole traces."""

    def retime(self, changes):
        return Trace(EventStore.from_events(EVENTS), TraceMetadata(kernel="k", end_ns=9.0))


class Alive:
    def is_alive(self):
        return True


@pytest.fixture
def retimer_of():
    """A ChildRetimer talking to ``_serve_retimings(run, …)`` on a thread (the child's side of the pipe)."""
    ends = []

    def make(run):
        here, there = multiprocessing.Pipe()
        server = threading.Thread(target=_serve_retimings, args=(run, there), daemon=True)
        server.start()
        ends.append((here, server))
        return ChildRetimer(Alive(), here, 0.01)

    yield make
    for here, server in ends:
        here.close()
        server.join(5)


def same(a, b):
    assert (a.components, a.strings) == (b.components, b.strings)
    assert all(a.col(name).tolist() == b.col(name).tolist() for name in a.columns())


@pytest.mark.parametrize("run", [Publishing(), WholeOnly()], ids=["published-as-it-goes", "whole-trace"])
def test_the_events_a_child_sends_make_the_store_of_all_the_events(retimer_of, run):
    retimer = retimer_of(run)
    trace = retimer.retime(["x=1"])
    same(trace.store, EventStore.from_events(sorted(EVENTS, key=Event.sort_key)))
    assert trace.metadata.end_ns == 9.0
    assert retimer.timings is not None and retimer.timings.nbytes > 0


def test_a_refusal_comes_back_as_its_line_and_the_next_re_timing_is_in_step(retimer_of):
    retimer = retimer_of(Publishing())
    with pytest.raises(KernbenchError, match="no such change"):
        retimer.retime(["y=2"])
    first = retimer.retime(["x=1"]).store
    second = retimer.retime(["x=1"]).store  # (nothing of the first answer is left in the pipe)
    same(first, second)
    assert len(second) == len(EVENTS)
