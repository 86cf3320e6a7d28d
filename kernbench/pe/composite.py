"""A CompositeCmd streaming through the PE's engines, step by step.

PE_SCHEDULER runs a composite in ``n`` steps (:mod:`kernbench.pe.steps`:
which part of each tensor a step reads and writes; a GEMM streams K) without
redispatch:

* **DMA_READ** (:meth:`CompositeRun._read_tile`) reads the piece of every
  ``tl.ref`` operand the step consumes — the region it reads, at its real
  addresses — on the PE's read channel. It needs only HBM, so it starts
  when the command arrives, while the stages that read TCM inputs wait for
  them; it runs at most ``composite_buffers`` steps (2: double buffering)
  ahead of FETCH (a step's buffer is free once FETCH has read it).
* **FETCH → engines → STORE** (:meth:`CompositeRun._feed_tile`) once the
  command's TCM inputs are ready and the step's data is in: one in-order
  reservation per lane, each op with work in the step on its engine (GEMM or
  MATH); STORE of the results final after the step.
* **DMA_WRITE** of the HBM results final after the step, once STORE is done:
  a GEMM's C, which every step accumulates into, is stored and written once,
  after the last step. (ADR-0064 D8 names these per-tile stages without
  saying what a tile's write holds; ``docs/timing.md`` says why this reading.)

The command is done when the last STORE and the last write are. Its TCM
outputs and ``rw_handles`` are not ready before that: composites sharing a
handle run in program order.

Each stage continues from the SimPy event it waits for (a callback), in the
same order the generator processes it replaces resumed: a stage starts as an
urgent action, as a process starts; a pause is a normal-priority action, as
a timeout is (:mod:`kernbench.sim.clock`).

In recorded runs each stage names its cause (``pred``): a step's read waits
for the channel, the previous read or its free buffer (the FETCH of the
step two before); a FETCH for its step's last read, the lane, or the
command's inputs; a write for its STORE or the write channel.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING

import simpy
from simpy.events import ProcessGenerator

from kernbench.handles import HandleRef
from kernbench.pe.commands import CompositeCmd
from kernbench.pe.composite_plan import Planned, StepPlan, planned
from kernbench.pe.lane import all_fired
from kernbench.pe.steps import Piece
from kernbench.sim.clock import NORMAL, URGENT, call_at, fire
from kernbench.sim.transit import Part

if TYPE_CHECKING:
    from kernbench.pe.processing_element import ProcessingElement
    from kernbench.pe.scheduler import Scheduler
    from kernbench.sim.network import TransferResult


def _on_engines(pe: ProcessingElement, step: StepPlan, t: float, corr: int, pred: int) -> tuple[float, int]:
    """A step's ops one after the other from ``t``, each held on its engine's lane from the end
    of the one before: :meth:`Lane.reserve` for each when an event is recorded or work scaled;
    else the same arithmetic in line, a run of ops on one engine at a time (after the run's
    first op the lane is free when the next one starts: each one's end is the last one's plus
    its service, added in order, as ``reserve`` adds them); (the last one's end, its span)."""
    if pe.bus.active or pe.gemm.scale is not None or pe.math.scale is not None:
        for st in step.stages:
            lane = pe.gemm if st.engine == "gemm" else pe.math
            _, t = lane.reserve(t, st.service_ns, st.kind, corr, 0.0, pred)
            pred = lane.last
        return t, pred
    for engine, services in step.runs:
        lane = pe.gemm if engine == "gemm" else pe.math
        free = lane.free_ns
        if free > t:
            t = free
        busy = lane.busy_ns
        for service in services:
            t += service
            busy += service
        lane.free_ns = t
        lane.busy_ns = busy
        lane.count += len(services)
        pred = lane.last
    return t, pred


class CompositeRun:
    """One composite in flight; ``done`` succeeds when its last step is stored and written."""

    __slots__ = (
        "arrive",
        "buffers",
        "cause",
        "corr",
        "done",
        "env",
        "feed_pred",
        "fetch_label",
        "fetch_seq",
        "fetched",
        "last",
        "last_seq",
        "n_tiles",
        "outs_claimed",
        "pe",
        "pending",
        "rd_pred",
        "reads",
        "steps",
        "store_label",
        "t_in",
        "tile_read",
        "tile_seq",
        "traced",
        "used",
        "waits",
        "write_ends",
        "writes",
        "writes_at",
    )

    def __init__(self, sched: Scheduler, cmd: CompositeCmd, arrive: float, corr: int) -> None:
        pe = sched.pe
        env = sched.env
        self.pe = pe
        self.env = env
        self.corr = corr
        self.arrive = arrive
        # everything in TCM it touches, each once; its TCM outputs and rw_handles: ready when it is done
        claimed = cmd.tcm_handles[1]
        kept: Planned | None = cmd.__dict__.get("_planned")  # (planned(pe, cmd)'s common case, in line)
        if kept is None or kept[0] is not pe.timing:
            kept = planned(pe, cmd)
        _, plan, self.reads, self.writes_at = kept
        n = self.n_tiles = plan.n_tiles
        self.steps = plan.steps
        self.fetch_label, self.store_label = plan.fetch_label, plan.store_label
        # Readiness of everything it touches *before* it claims its outputs:
        # this is how composites sharing a handle (rw_handles) stay in order.
        tcm_ids, claimed_ids = cmd.tcm_ids
        ready = pe.ready
        t_in = 0.0
        pending: list[simpy.Event] = []
        # recorded runs: sched.cause and sched.waits of its TCM handles in the same pass (tcm_ids: theirs)
        traced = self.traced = pe.bus.active
        cause_t, cause_seq = arrive, pe.sched.last
        waits: list[tuple[simpy.Event, int]] = []
        for rid in tcm_ids:  # (sched.ready_of(tcm_ids), in line: ~4k composites a GQA re-timing)
            v = ready.get(rid, 0.0)
            if isinstance(v, simpy.Event):
                if v.callbacks is not None:  # (not fired yet: once each, as ready_of keeps it)
                    if v not in pending:
                        pending.append(v)
                    if traced:
                        waits.append((v, rid))
                    continue
                v = v._value
            if v > t_in:
                t_in = v
            if traced and v > cause_t:
                cause_t, cause_seq = v, pe.ready_seq.get(rid, -1)
        self.t_in, self.pending = t_in, pending
        self.cause = (cause_t, cause_seq) if traced else (0.0, -1)
        self.waits = waits
        self.rd_pred = pe.sched.last  # what the next step's read waits for (recorded runs)
        self.tile_seq = [-1] * n  # the read span that completed each step
        self.fetch_seq = [-1] * n
        self.feed_pred = -1
        self.last_seq = -1  # the span ending at ``last``
        self.write_ends: list[tuple[float, int]] = []
        done = self.done = env.event()
        self.outs_claimed = claimed
        for h in claimed_ids:  # (a loop: cheaper than update(fromkeys) for the one or two a composite claims)
            ready[h] = done
        pe.async_stages += 1
        reading = plan.hbm_in
        # (env.event() n times, without a comprehension's frame; one step, the common case, without map's)
        self.tile_read = ([simpy.Event(env)] if n == 1 else [*map(simpy.Event, repeat(env, n))]) if reading else []
        # A step's FETCH frees its buffer for the read `buffers` steps later
        # (_read_tile): only those reads wait on it, so the last `buffers`
        # steps, and a composite that streams nothing, need no event.
        self.buffers = pe.composite_buffers
        self.fetched = [env.event() for _ in range(n - self.buffers)] if reading and n > self.buffers else []
        # when each step's ops are done with its fetched operands, and the span that ends then:
        # a FETCH waits for the engines to free the buffer `buffers` steps back
        self.used: list[tuple[float, int]] = []
        self.writes: list[simpy.Process] = []
        self.last = 0.0
        call_at(env, env.now, URGENT, self._start)

    def _start(self) -> None:
        """DMA_READ's start, then FETCH's: one action for the two stages (scheduled
        together, they ran back to back, before anything either of them scheduled)."""
        env = self.env
        if self.tile_read:
            if self.buffers <= 0:
                if self.arrive > env.now:
                    call_at(env, self.arrive, NORMAL, self._read_tile, 0)
                else:
                    self._read_tile(0)
            elif self.arrive > env.now:  # (_read_tile(0) is _read_operand(0, 0): its first step needs no free buffer)
                call_at(env, self.arrive, NORMAL, self._read_operand, 0, 0)
            else:
                self._read_operand(0, 0)
        # FETCH's start (once the command's TCM inputs are ready)
        t0 = self.arrive if self.arrive > self.t_in else self.t_in
        if self.pending:
            all_fired(env, self.pending).callbacks.append(partial(self._inputs_ready, t0))
            return
        self.feed_pred = self.cause[1]
        now = env.now  # (FETCH's first step from t0, as _inputs_ready starts it)
        self.last = t0 if t0 > now else now
        self.last_seq = self.feed_pred
        if t0 > now:
            call_at(env, t0, NORMAL, self._feed_tile, 0)
        else:
            self._feed_tile(0)

    def _read_tile(self, i: int) -> None:
        if i == self.n_tiles:
            return
        if i >= self.buffers:
            free = self.fetched[i - self.buffers]  # the buffer this step reuses
            if free.callbacks is not None:
                free.callbacks.append(lambda _e: self._buffer_free(i))
                return
        self._read_operand(i, 0)

    def _buffer_free(self, i: int) -> None:
        self.rd_pred = self.fetch_seq[i - self.buffers]
        self._read_operand(i, 0)

    # A read's stages continue from the events they wait for as bound methods with their
    # arguments (partial), not closures: no cells and one Python frame fewer per wait
    # (~4k reads a GQA re-timing; the same callbacks in the same places).
    def _read_operand(self, i: int, j: int) -> None:
        if j == len(self.reads[i]):
            self.tile_seq[i] = self.rd_pred
            fire(self.env, self.tile_read[i], self.env.now)
            if i + 1 < self.n_tiles:  # (_read_tile's own first check, in line: most composites are one step)
                self._read_tile(i + 1)
            return
        rd = self.pe.rd
        prev = rd.tail  # (rd.claim(), in line)
        mine = rd.tail = simpy.Event(self.env)
        if prev is not None and prev.callbacks is not None:
            prev.callbacks.append(partial(self._issue_read, i, j, mine))
            return
        self._issue_read(i, j, mine)

    def _issue_read(self, i: int, j: int, mine: simpy.Event, waited: simpy.Event | None = None) -> None:
        """Operand ``j`` of step ``i`` onto the read channel (``waited``: the claim it waited for)."""
        pe = self.pe
        if waited is not None:
            self.rd_pred = pe.rd.last
        r, piece = self.reads[i][j]
        start = self.env.now
        assert r.region is not None  # a streamed (HBM) operand's
        ev = pe.network.read(pe.dma_node, r.memory, region=piece.region(r.region), corr_id=self.corr)
        ev.callbacks.append(partial(self._landed, i, j, mine, start))

    def _landed(self, i: int, j: int, mine: simpy.Event, start: float, e: simpy.Event) -> None:
        pe = self.pe
        r, piece = self.reads[i][j]
        now = self.env.now
        port = pe.tcm_write
        # the tile's turn on TCM's port: port.landing(start, now, nbytes, now), its fit's common case in line
        nbytes = piece.nbytes
        service = nbytes / port.bw_gbps
        t = now - service
        begin = t if t > start else start
        ends = port._ends
        if ends and (begin < ends[-1] or len(ends) > 32):
            begin, _ = port.fit(begin, service, now)
        elif service > port.longest_ns:  # (what fit notes first)
            port.longest_ns = service
        end = begin + service
        # recorded now, ending when its last byte is in TCM: what a later access the port holds up waits for
        rd = pe.rd
        if pe.bus.active:
            result: TransferResult = e._value  # (the transfer's result: it has completed)
            parts = result.parts
            if end > now and self.traced:
                parts += (Part(now, end, pe.tcm_node, "tcm port"),)
            seq = rd.record(start, end, f"tile {i} {r.name}", self.corr, nbytes, self.rd_pred, parts)
        else:  # (rd.record's arithmetic, in line: no span)
            rd.busy_ns += end - start
            rd.count += 1
            seq = -1
        self.rd_pred = seq
        if end > begin:  # (port.hold(begin, end, seq), in line: its spans kept in order of start)
            starts = port._starts
            port.busy_ns += end - begin
            if not starts or begin >= starts[-1]:
                starts.append(begin)
                ends.append(end)
                port._seqs.append(seq)
            else:
                k = bisect_left(starts, begin)
                starts.insert(k, begin)
                ends.insert(k, end)
                port._seqs.insert(k, seq)
        if end > now:
            call_at(self.env, end, NORMAL, self._read_done, i, j, mine)
        else:  # (_read_done, in line; after a step's last read, _read_operand's end too)
            env = self.env
            fire(env, mine, now)
            if j + 1 < len(self.reads[i]):
                self._read_operand(i, j + 1)
                return
            self.tile_seq[i] = seq
            fire(env, self.tile_read[i], now)
            if i + 1 < self.n_tiles:
                self._read_tile(i + 1)

    def _read_done(self, i: int, j: int, mine: simpy.Event) -> None:
        fire(self.env, mine, self.env.now)
        self._read_operand(i, j + 1)

    def _inputs_ready(self, t0: float, _e: simpy.Event) -> None:
        if self.traced:
            self.feed_pred = self.pe.scheduler.after_waits(self.cause, self.waits)[1]
        t = t0  # (max(t0, *the times they fired with), in line: the first of equal maxima kept, as max keeps it)
        for ev in self.pending:
            fired: float = ev._value  # (fired_at(ev), in line)
            if fired > t:
                t = fired
        # FETCH's first step from t (as _start does when nothing was pending)
        env = self.env
        now = env.now
        self.last = t if t > now else now
        self.last_seq = self.feed_pred
        if t > now:  # (``last`` is t already, the clock's time then)
            call_at(env, t, NORMAL, self._feed_tile, 0)
        else:
            self._feed_tile(0)

    def _feed_tile(self, i: int, landed: simpy.Event | None = None) -> None:
        """FETCH step ``i`` and each later one whose data is in (``landed``: step ``i``'s read, when
        it waited for it; in recorded runs that read's span is then what the FETCH waited for)."""
        if landed is not None:
            self.feed_pred = self.tile_seq[i]
        pe = self.pe
        env = self.env
        now = env.now  # (the steps it feeds are reserved at once: no time passes in here)
        while i < self.n_tiles:
            if self.tile_read and self.tile_read[i].callbacks is not None:
                self.tile_read[i].callbacks.append(partial(self._feed_tile, i))
                return
            corr = self.corr
            step = self.steps[i]
            earliest, pred = now, self.feed_pred
            if i >= self.buffers:  # the engines still hold the operands of the step `buffers` back
                used, by = self.used[i - self.buffers]
                if used > earliest:
                    earliest, pred = used, by
            t = pe.tcm_read.with_lane(pe.fetch, earliest, step.fetch_bytes, self.fetch_label, corr, pred, now)
            fetch_end = t
            self.fetch_seq[i] = lane_seq = pe.fetch.last
            t, lane_seq = _on_engines(pe, step, t, corr, lane_seq)
            self.used.append((t, lane_seq))
            if step.stores:
                t = pe.tcm_write.with_lane(pe.store, t, step.store_bytes, self.store_label, corr, lane_seq, now)
                lane_seq = pe.store.last
            for r, piece in self.writes_at[i]:
                self.writes.append(env.process(self._write_tile(r, piece, i, t, lane_seq)))
            if t > self.last:
                self.last = t
                self.last_seq = lane_seq
            if i < len(self.fetched):
                ev = self.fetched[i]
                if fetch_end > now:
                    call_at(env, fetch_end, NORMAL, ev.succeed)
                else:
                    fire(env, ev)
            i += 1
        self.pe.async_stages -= 1
        if self.last > now:
            call_at(env, self.last, NORMAL, self._await_writes, 0)
        else:
            self._await_writes(0)

    def _await_writes(self, w: int) -> None:
        writes = self.writes
        while w < len(writes):
            if writes[w].callbacks is not None:

                def next_write(_e: simpy.Event, w: int = w) -> None:
                    self._await_writes(w + 1)

                writes[w].callbacks.append(next_write)
                return
            w += 1
        pe = self.pe
        if self.traced and pe.bus.active:
            end, seq = self.last, self.last_seq
            for t, s in self.write_ends:
                if t >= end:
                    end, seq = t, s
            ready_seq = pe.ready_seq  # (the scheduler's _produced and _done, in line)
            for o in self.outs_claimed:
                ready_seq[o.id] = seq
            pe.done_seq[self.corr] = seq
        fire(self.env, self.done, self.env.now)

    def _write_tile(self, r: HandleRef, piece: Piece, i: int, t_ready: float, stored: int) -> ProcessGenerator:
        pe = self.pe
        env = self.env
        if t_ready > env.now:
            yield env.timeout(t_ready - env.now)
        prev, mine = pe.wr.claim()
        pred = stored
        if prev is not None and prev.callbacks is not None:
            yield prev
            if env.now > t_ready:
                pred = pe.wr.last
        start = env.now
        assert r.region is not None  # an HBM output's
        go = pe.tcm_leaving(start, piece.nbytes, pred, self.corr)  # the result leaves TCM through its port
        front: tuple[Part, ...] = ()
        if go > start:
            yield env.timeout(go - start)
            front = (Part(start, go, pe.tcm_node, "tcm port"),)
        result: TransferResult = yield pe.network.write(pe.dma_node, r.memory, region=piece.region(r.region), corr_id=self.corr)
        label = f"tile {i} {r.name}" if pe.bus.active else ""  # (as a read's)
        seq = pe.wr.record(start, env.now, label, self.corr, piece.nbytes, pred, front + result.parts if self.traced else ())
        self.write_ends.append((env.now, seq))
        fire(env, mine, env.now)
