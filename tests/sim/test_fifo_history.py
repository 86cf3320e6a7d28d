"""What a recorded run keeps of a FIFO's service, and asks only when needed (issue 26: a cheaper
recorded re-timing). A reservation's numbers are worked out without a train, by the train's own
arithmetic, so every published time is the same to the last bit; a FIFO asked whose flits a
transfer waited behind answers from its history, and nothing when only its own flits were ahead."""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from kernbench.events.bus import Bus, Recorder
from kernbench.events.types import EventKind
from kernbench.sim.fifo import Fifo, Passage
from kernbench.sim.network import Network
from kernbench.sim.train import Train
from kernbench.sim.transit import Reserved

times = st.floats(min_value=0.0, max_value=1e7, allow_nan=False, allow_infinity=False)
services = st.floats(min_value=1e-3, max_value=100.0, allow_nan=False, allow_infinity=False)
counts = st.integers(min_value=1, max_value=4096)


@settings(max_examples=300, deadline=None)
@given(times, counts, services)
def test_a_reservations_last_departure_is_its_trains_to_the_bit(start, count, s):
    f = Fifo("sip0.cube0.hbm.pc0", s, history=True)
    assert f.reserve(start, count, seq=7, corr=3) == start
    assert f.history is not None
    r = f.history[-1]
    assert type(r) is Reserved and (r.seq, r.corr, r.start, r.n, r.s) == (7, 3, start, count, s)
    train = Train(count, [(0, start + s, 0.0, 1, s)])  # what the history held before: one train a reservation
    assert r.last == train.last() == r.out.last()
    assert r.out.first() == train.first()


def test_a_recorded_reads_reserved_bursts_publish_the_busy_spans_their_departures_give(paper, monkeypatch):
    """Its bursts are reserved (no passage planned) and each channel's busy span is worked out from the
    reservation by its departures' own arithmetic: the first departure less a burst, the last, to the bit."""
    reserved = []
    reserve = Fifo.reserve

    def spy(f, now, count, seq, corr=-1):
        start = reserve(f, now, count, seq, corr)
        if start is not None:
            reserved.append((f.name, start, count, f.s))
        return start

    monkeypatch.setattr(Fifo, "reserve", spy)
    env = simpy.Environment()
    bus = Bus()
    rec = Recorder(bus)
    net = Network(env, paper, bus)

    def read(at):
        yield env.timeout(at)
        yield net.read("sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice0", 0, 32768 + 3 * 256)

    for at in (0.0, 3.7, 41.3):  # the later ones find the channels still busy with the earlier ones' bursts
        env.process(read(at))
    env.run()
    spans = [(e.component, e.t_ns, e.end_ns, e.value) for e in rec.events() if e.kind == EventKind.CHANNEL_BUSY]
    want = []
    for name, start, count, s in reserved:
        dep = Train(count, [(0, start + s, 0.0, 1, s)])
        want.append((name, dep.first() - s, dep.last(), count))
    assert len(reserved) == 3 * 8 and sorted(spans) == sorted(want)


def test_a_read_whose_channels_were_idle_drains_alone_and_one_behind_it_queues_behind_it(paper):
    """Reserved from the request's arrival on, the critical channel served only the read's own bursts (no
    history asked); a read whose bursts were reserved behind another's waited behind that one's."""
    env = simpy.Environment()
    bus = Bus()
    Recorder(bus)  # (a recorded run: its reserved bursts kept for publish)
    net = Network(env, paper, bus)
    done = {}

    def read(at):
        yield env.timeout(at)
        done[at] = yield net.read("sip0.cube5.pe0.dma", "sip0.cube5.hbm.slice0", 0, 32768 + 3 * 256)

    for at in (0.0, 3.7):
        env.process(read(at))
    env.run()
    first, second = done[0.0], done[3.7]
    assert [p.cause for p in first.parts if p.cause in ("drain", "queueing")] == ["drain"]
    waits = [p for p in second.parts if p.cause == "queueing"]
    assert waits and {p.behind for p in waits} == {first.corr_id} and waits[0].component.startswith("sip0.cube5.hbm.pc")
    assert second.parts[-1].end == second.end_ns and sum(p.ns for p in second.parts) == pytest.approx(second.latency_ns)


def test_a_transfer_behind_only_its_own_flits_waited_behind_no_one():
    f = Fifo("a->b", 1.0, history=True)
    f.reserve(0.0, 4, seq=5, corr=50)  # its own 4 flits, served 0..4
    assert f.shares(0.0, 3.0, own_seq=5, horizon=0.0) == ()


def test_a_transfer_behind_anothers_flits_is_told_whose_and_for_how_long():
    f = Fifo("a->b", 1.0, history=True)
    f.reserve(0.0, 3, seq=1, corr=10)  # another's 3 flits: served 0..3
    f.reserve(0.0, 2, seq=2, corr=20)  # then its own: 3..5
    assert f.shares(0.0, 4.0, own_seq=2, horizon=0.0) == ((10, 3.0),)
    # a passage's flits count too, in the order served
    p = Passage(3, 30, Train.burst(2, 5.0))
    f.arrive(p, 5.0)  # served 5..7
    assert f.shares(0.0, 7.0, own_seq=2, horizon=0.0) == ((10, 3.0), (30, 2.0))


def test_what_ended_before_the_horizon_leaves_the_history_and_changes_no_answer():
    f = Fifo("a->b", 1.0, history=True)
    f.reserve(0.0, 3, seq=1, corr=10)  # ends at 3
    f.reserve(10.0, 2, seq=2, corr=20)  # 10..12
    f.reserve(10.0, 2, seq=3, corr=30)  # 12..14
    assert f.shares(10.0, 13.0, own_seq=3, horizon=0.0) == ((20, 2.0),)
    assert f.history is not None and len(f.history) == 3
    assert f.shares(10.0, 13.0, own_seq=3, horizon=10.0) == ((20, 2.0),)
    assert [h.seq for h in f.history] == [2, 3]  # the first ended at 3, before any transfer still running began
