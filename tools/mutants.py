"""The mutants of issue 12 §5: small, meaningful changes to the simulator core.

Each is ``(id, file, find, replace, why)``: ``find`` is an exact snippet that
must occur exactly once in ``file`` (``tools/mutate.py`` reports the mutant
*not applicable* when a refactor moved it), ``replace`` what it becomes.
``tests`` narrows the first pass when the file's default selection
(``AREA_TESTS`` in ``mutate.py``) would miss the tests that matter.

Ids are ``area.module.what``. Keep each change to one idea a reviewer would
call a plausible bug: an off-by-one in a flit count, ``max``/``min``, a
dropped overhead, a channel selection, a tie-break, a boundary ``<``/``<=``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str
    find: str
    replace: str
    why: str
    tests: tuple[str, ...] = ()
    #: why no observable result can change, when that was shown (it still runs and is reported)
    equivalent: str = ""


M = Mutant
TRAIN = "kernbench/sim/train.py"
FIFO = "kernbench/sim/fifo.py"
NET = "kernbench/sim/network.py"
SERVE = "kernbench/sim/serve.py"
FAST = "kernbench/sim/fast.py"
RECORD = "kernbench/sim/fast_record.py"
DEFERRAL = "kernbench/sim/deferral.py"
ORACLE = "kernbench/sim/oracle.py"
TRANSFER = "kernbench/sim/transfer.py"
HBM = "kernbench/sim/hbm.py"
REGION = "kernbench/sim/region.py"
CPU = "kernbench/pe/cpu.py"
SCHED = "kernbench/pe/scheduler.py"
COMP = "kernbench/pe/composite.py"
STEPS = "kernbench/pe/steps.py"
LANE = "kernbench/pe/lane.py"
INTERRUPTS = "kernbench/interrupts.py"
EXITS = "kernbench/exit_codes.py"
OUTPUTS = "kernbench/outputs.py"
CMDS = "kernbench/pe/commands.py"
WORK = "kernbench/pe/work.py"
PE = "kernbench/pe/processing_element.py"
COST = "kernbench/pe/cost.py"
COMPILE = "kernbench/topology/compile.py"
CUBE_PATHS = "kernbench/topology/cube_paths.py"
GRAPH = "kernbench/topology/graph.py"
SCHEMA = "kernbench/topology/schema.py"
TIMELINE = "kernbench/events/timeline.py"
STORE = "kernbench/events/store.py"
PERFETTO = "kernbench/events/perfetto.py"
TRACEFILE = "kernbench/events/tracefile.py"
PROBE = "probes/dma.py"
CASES = "probes/cases.py"

MUTANTS: list[Mutant] = [
    # --- sim/train.py: trains in closed form --------------------------------
    M(
        "sim.train.at-off-by-one",
        TRAIN,
        "            return a + (k - k0) * T\n        m, i = divmod(k - k0, p)\n        return a + m * T + i * g",
        "            return a + (k - k0 + 1) * T\n        m, i = divmod(k - k0, p)\n        return a + m * T + i * g",
        "a flit's time one period late",
    ),
    M(
        "sim.train.switch-point-late",
        SERVE,
        "kc = k0 + ceil((d - a) / (r - s) - EPS)",
        "kc = k0 + 1 + ceil((d - a) / (r - s) - EPS)",
        "the backlog-to-own-pacing switch one flit late",
    ),
    M(
        "sim.train.lindley-min-peak",
        SERVE,
        "peak = np.maximum.accumulate(arrivals - (idx - s))",
        "peak = np.minimum.accumulate(arrivals - (idx - s))",
        "Lindley's running max as a min",
    ),
    M(
        "sim.train.lindley-min-dprev",
        SERVE,
        "return idx + np.maximum(peak, d_prev)",
        "return idx + np.minimum(peak, d_prev)",
        "departures ignore the work ahead (max -> min)",
    ),
    M(
        "sim.train.server-outruns-train",
        SERVE,
        "        else:\n            out.append((k0, (a if a > d else d) + s, 0.0, 1, s))",
        "        else:\n            out.append((k0, a + s, 0.0, 1, s))",
        "a train faster than the server starts at its head, not after the backlog",
    ),
    M(
        "sim.train.union-rounds",
        SERVE,
        "q = counts[-1]  # rounds in which every channel has a burst",
        "q = counts[0]  # rounds in which every channel has a burst",
        "full rounds counted from the busiest channel, not the idlest",
    ),
    M(
        "sim.train.union-first-burst",
        SERVE,
        "segs: list[Segment] = [(0, st0 + b, 0.0, p, b)] if p > 1",
        "segs: list[Segment] = [(0, st0, 0.0, p, b)] if p > 1",
        "channels' first bursts leave without being served",
    ),
    M(
        "sim.train.count-bound-swapped",
        TRAIN,
        "bound = t + EPS if inclusive else t - EPS",
        "bound = t - EPS if inclusive else t + EPS",
        "inclusive and exclusive counting bounds swapped",
    ),
    M(
        "sim.train.first-difference-late",
        TRAIN,
        "        if abs(old.at(b) - new.at(b)) > tol:\n            return b\n",
        "        if abs(old.at(b) - new.at(b)) > tol:\n            return b + 1\n",
        "a changed train reports its first changed flit one late",
    ),
    # --- sim/fifo.py: FIFO servers ----------------------------------------------
    M(
        "sim.fifo.tie-seq-le",
        FIFO,
        "k = p.inp.count_before(t, inclusive=p.seq < seq)",
        "k = p.inp.count_before(t, inclusive=p.seq <= seq)",
        "a control flit waits behind its own transfer's flits arriving with it",
    ),
    M(
        "sim.fifo.leave-before-arrival",
        FIFO,
        "                if d > v:\n                    v = d\n        return v if v > t else t",
        "                if d > v:\n                    v = d\n        return v",
        "a control flit may leave a FIFO before it arrived",
    ),
    M(
        "sim.fifo.merge-seq-reversed",
        FIFO,
        "members.sort(key=lambda m: m[0].seq)",
        "members.sort(key=lambda m: -m[0].seq)",
        "same-instant flits served in reverse transfer order",
    ),
    M(
        "sim.fifo.alone-ignores-backlog",
        FIFO,
        "        p.out = fifo(p.inp, self.s, v if v > head else head)",
        "        p.out = fifo(p.inp, self.s, head)",
        "a train alone at a FIFO ignores the work still queued",
    ),
    M(
        "sim.fifo.reserve-off-by-one",
        FIFO,
        "self.free = self.v_end = start + count * self.s",
        "self.free = self.v_end = start + (count - 1) * self.s",
        "a read's bursts on an idle channel occupy it one burst too short",
    ),
    M(
        "sim.fifo.retire-keeps-old-free",
        FIFO,
        "                        if q.out.last() > self.free:\n                            self.free = q.out.last()",
        "                        if q.out.last() < self.free:\n                            self.free = q.out.last()",
        "a retired passage's work is forgotten",
    ),
    # --- sim/network.py: transfers ------------------------------------------------
    M(
        "sim.network.ack-pays-source-overhead",
        FAST,
        "self._plan_control(self.ack_route, done, self.end_at)",
        "self._plan_control(self.ack_route, done + self.ack_route.src_overhead_ns, self.end_at)",
        "the write acknowledgement pays the memory's overhead a second time (issue 12 survivor)",
    ),
    M(
        "sim.network.data-drops-src-overhead",
        FAST,
        "self.data_in = Train.burst(self.flits, now + self.route.src_overhead_ns)",
        "self.data_in = Train.burst(self.flits, now)",
        "a write's data leaves without the initiator's overhead",
    ),
    M(
        "sim.network.request-drops-src-overhead",
        FAST,
        "self._plan_control(req, now + req.src_overhead_ns, self._request_arrives)",
        "self._plan_control(req, now, self._request_arrives)",
        "a read's request leaves without the initiator's overhead",
    ),
    M(
        "sim.network.data-drops-router-overhead",
        FAST,
        "return self.data[h - 1].out.shift(hop.prop_ns + hop.next_overhead_ns)",
        "return self.data[h - 1].out.shift(hop.prop_ns)",
        "data flits skip the overhead of the nodes they pass",
    ),
    M(
        "sim.network.control-drops-overhead",
        FAST,  # (the control flit's hop loop is FastTransfer._control_from's; the id stays for the records)
        "            t = d + delay[i]\n        then(t)",
        "            t = d\n        then(t)",
        "control flits skip the propagation and node overheads between hops",
    ),
    M(
        "sim.network.send-flits-floor",
        TRANSFER,
        "return -(-self.region.nbytes // self.net.flit_bytes)",
        "return self.region.nbytes // self.net.flit_bytes + 1",
        "a send of a whole number of flits gets one flit too many",
    ),
    M(
        "sim.network.channel-start-off",
        FAST,
        "start = p.out.first() - b",
        "start = p.out.first()",
        "a merged channel's bursts start one burst late",
    ),
    M(
        "sim.network.depth-in-ns",
        RECORD,
        "value=round((served - head) / f.s, 6)",
        "value=round(served - head, 6)",
        "queue depth published in ns instead of flits (issue 12 survivor)",
    ),
    M(
        "sim.network.pc-names-per-slice",
        NET,
        'base = a.get("slice", 0) * a["channels"]',
        'base = a.get("slice", 0)',
        "pseudo-channel names not offset by the slice",
    ),
    M(
        "sim.network.strided-bursts-floor",
        NET,
        "n = -(-size_bytes // mem.burst_bytes)\n",
        "n = size_bytes // mem.burst_bytes\n",
        "a strided transfer drops its partial last burst",
    ),
    M(
        "sim.network.oracle-control-no-wait",
        ORACLE,
        "        if not data:\n            return start",
        "        if not data:\n            return t",
        "oracle: control flits overtake queued data flits",
    ),
    M(
        "sim.network.oracle-flit-order",
        ORACLE,
        "        return priority(self.seq, k)",
        "        return priority(self.seq, -k)",
        "oracle: same-instant flits of one transfer go in reverse index order",
    ),
    # --- sim/hbm.py and region.py: channels and bursts ------------------------------
    M(
        "sim.hbm.contiguous-channel-shift",
        HBM,
        "per[(b0 + j) % c] = (j, c, (n - j + c - 1) // c)",
        "per[(b0 + j + 1) % c] = (j, c, (n - j + c - 1) // c)",
        "contiguous bursts land one channel over",
    ),
    M(
        "sim.hbm.contiguous-count-floor",
        HBM,
        "per[(b0 + j) % c] = (j, c, (n - j + c - 1) // c)",
        "per[(b0 + j) % c] = (j, c, (n - j) // c)",
        "a channel's burst count rounded down",
    ),
    M(
        "sim.hbm.sub-train-start",
        HBM,
        "m0 = max(0, -(-(k0 - first) // step))",
        "m0 = max(0, (k0 - first) // step)",
        "a channel's sub-train starts one flit early in a later segment",
    ),
    M(
        "sim.region.contiguous-extra-burst",
        REGION,
        "return range(a // burst_bytes, (a + self.run_bytes - 1) // burst_bytes + 1)",
        "return range(a // burst_bytes, (a + self.run_bytes) // burst_bytes + 1)",
        "an aligned contiguous region touches one burst too many",
    ),
    M(
        "sim.region.strided-extra-burst",
        REGION,
        "last = (starts + self.run_bytes - 1) // burst_bytes",
        "last = (starts + self.run_bytes) // burst_bytes",
        "each aligned run touches one burst too many",
    ),
    M(
        "sim.region.chunk-last-byte",
        REGION,
        "r1, o1 = divmod(hi - 1, rb)",
        "r1, o1 = divmod(hi, rb)",
        "a tile's chunk reaches one byte past its end",
    ),
    # --- topology -------------------------------------------------------------------
    # the CUBE route search moved from compile.py to cube_paths.py (83270d6); the ids keep "compile"
    M(
        "topology.compile.hop-tiebreak-reversed",
        CUBE_PATHS,
        "heapq.heappush(heap, (round(cost + w, 9), hops + 1, _Trail(trail, nxt)))",
        "heapq.heappush(heap, (round(cost + w, 9), hops - 1, _Trail(trail, nxt)))",
        "equal-latency CUBE paths prefer more hops (issue 12 survivor)",
    ),
    M(
        "topology.compile.route-cost-drops-overhead",
        CUBE_PATHS,
        "adj[u].append((v, prop + 1.0 / bw + overhead[v]))",
        "adj[u].append((v, prop + 1.0 / bw))",
        "router overheads dropped from the CUBE route cost (issue 12 survivor)",
    ),
    M(
        "topology.compile.ring-ties-go-down",
        COMPILE,
        "step = 1 if up <= self.sips - up else -1",
        "step = 1 if up < self.sips - up else -1",
        "SIP ring ties go down instead of up",
    ),
    M(
        "topology.compile.dma-overhead-dropped",
        COMPILE,
        '"dma": pes["dma_overhead_ns"],',
        '"dma": 0.0,',
        "the PE DMA node's overhead is never charged",
    ),
    M(
        "topology.compile.graph-size-edges",
        COMPILE,
        "pes * 12 + slices * 2 * (1 + channels)",
        "pes * 10 + slices * 2 * (1 + channels)",
        "the size check under-counts PE edges",
    ),
    M(
        "topology.graph.hop-overhead-of-source",
        GRAPH,
        "hops.append(Hop(e, self.flit_bytes / e.bw_gbps, e.prop_ns, self.nodes[b].overhead_ns))",
        "hops.append(Hop(e, self.flit_bytes / e.bw_gbps, e.prop_ns, self.nodes[a].overhead_ns))",
        "a hop charges the overhead of the node it leaves, not the one it reaches",
    ),
    M(
        "topology.schema.between-open-low",
        SCHEMA,
        "        if lo <= v <= hi:\n            return None",
        "        if lo < v <= hi:\n            return None",
        "a value equal to its lower bound (0 ns, 1 PE) is rejected",
    ),
    M(
        "topology.schema.between-open-high",
        SCHEMA,
        "        if lo <= v <= hi:\n            return None",
        "        if lo <= v < hi:\n            return None",
        "a value equal to its upper bound is rejected",
    ),
    # --- pe ---------------------------------------------------------------------------
    M(
        "pe.cpu.no-cpu-overhead",
        CPU,
        "dur = cost.cycles_to_ns(cycles) + pe.cpu_overhead_ns",
        "dur = cost.cycles_to_ns(cycles)",
        "PE_CPU's node overhead not charged per command",
    ),
    M(
        "pe.cpu.queue-depth-plus-one",
        CPU,
        "return len(q) >= self.pe.queue_depth",
        "return len(q) > self.pe.queue_depth",
        "the scheduler queue holds one command more than its depth",
    ),
    M(
        "pe.cpu.retire-boundary",
        CPU,
        "is not None and t_done <= self.t:",
        "is not None and t_done < self.t:",
        "a command done exactly now still holds its queue slot",
        equivalent=(
            "a full queue whose oldest command is done exactly now goes to _queue_space, which sees it ready at self.t, "
            "pops it and stalls max(self.t, t_done) - self.t = 0 ns (no STALL span, cpu_stall_ns += 0); "
            "one not full keeps it until the next check retires it: no time, span or count changes"
        ),
    ),
    M(
        "pe.cpu.queue-full-no-stall",
        CPU,
        "        else:\n            self.t = max(self.t, t)\n        self.waiting_on = None",
        "        else:\n            self.t = self.t\n        self.waiting_on = None",
        "a full queue whose oldest command's end is known does not stall",
    ),
    M(
        "pe.cpu.cycles-not-converted",
        CPU,
        "dur = pe.cost.cycles_to_ns(cmd.cycles)",
        "dur = cmd.cycles",
        "tl.cycles counted as ns whatever the clock",
    ),
    M(
        "pe.cost.cycles-times-clock",
        COST,
        "return cycles / self.clock_freq_ghz",
        "return cycles * self.clock_freq_ghz",
        "cycles -> ns multiplies by the clock",
    ),
    M(
        "pe.scheduler.gemm-flops-halved",
        SCHED,
        "service = pe.gemm_ns(2.0 * cmd.m * cmd.k * cmd.n)",
        "service = pe.gemm_ns(cmd.m * cmd.k * cmd.n)",
        "a GEMM is m·k·n FLOPs, not 2·m·k·n",
    ),
    M(
        "pe.scheduler.fetch-skips-b",
        SCHED,
        "in_bytes = cmd.a.nbytes + cmd.b.nbytes",
        "in_bytes = cmd.a.nbytes",
        "FETCH of a GEMM reads only A",
    ),
    M(
        "pe.scheduler.no-sched-overhead",
        SCHED,
        "_, arrive = pe.sched.reserve(t_ns, pe.sched_overhead_ns, cmd.name, corr_id, pred=dispatch)",
        "_, arrive = pe.sched.reserve(t_ns, 0.0, cmd.name, corr_id, pred=dispatch)",
        "PE_SCHEDULER's overhead not charged",
    ),
    M(
        "pe.scheduler.channel-unlimited",
        SCHED,
        "            if prev is not None and not prev.processed:\n                yield prev\n",
        "",
        "DMA channels of unlimited capacity (transfers overlap)",
    ),
    M(
        "pe.scheduler.write-ignores-source",
        SCHED,
        "            pe.wr,\n            (cmd.src,),",
        "            pe.wr,\n            (),",
        "a DMA write does not wait for the data it writes",
    ),
    M(
        "pe.composite.three-tile-buffers",
        COMP,
        "TILE_BUFFERS = 2",
        "TILE_BUFFERS = 3",
        "three tile buffers instead of two (issue 12 survivor)",
    ),
    M(
        "pe.composite.tiles-floor",
        STEPS,
        "return max(1, min(-(-big // tile_bytes), longest))",
        "return max(1, min(big // tile_bytes, longest))",
        "a partial last step is not a step",
    ),
    M(
        "pe.composite.fetch-not-per-tile",
        COMP,
        "fetch += p.nbytes",
        "fetch += r.nbytes",
        "each step FETCHes every operand whole",
    ),
    M(
        "pe.composite.buffer-freed-at-fetch-start",
        COMP,
        "            fetch_end = t\n",
        "            fetch_end = env.now\n",
        "a tile buffer is free when FETCH starts, not when it ends",
    ),
    M(
        "pe.composite.gemm-work-not-split",
        STEPS,
        "tuple(2.0 * d.m * d.n * (k1 - k0) for k0, k1 in cuts)",
        "tuple(2.0 * d.m * d.n * d.k for k0, k1 in cuts)",
        "every K-step does the whole GEMM",
    ),
    M(
        "pe.lane.no-in-order",
        LANE,
        "start = earliest_ns if earliest_ns > free else free",
        "start = earliest_ns",
        "an engine lane runs commands in parallel",
    ),
    M(
        "pe.pe.fetch-store-one-lane",
        PE,
        'self.store = Lane(f"{pe_id}.fs", bus)',
        "self.store = self.fetch",
        "FETCH and STORE share one in-order lane",
    ),
    M(
        "pe.pe.math-floor",
        PE,
        "math.ceil(elems / lanes)",
        "math.floor(elems / lanes)",
        "PE_MATH's partial last vector is free",
    ),
    M(
        "pe.pe.transcendental-at-plain-rate",
        PE,
        'lanes = self._math_transcendental_lanes if rate == "transcendental" else self._math_lanes',
        "lanes = self._math_lanes",
        "exp, log, rsqrt, silu … as cheap as an add",
        ("tests/tl/test_tl_ops.py", "tests/oracles/test_engine_timing.py"),
    ),
    M(
        "pe.opkinds.passes-ignored",
        "kernbench/pe/scheduler.py",
        "service = pe.math_ns(work * k.passes, k.rate)",
        "service = pe.math_ns(work, k.rate)",
        "pow, sigmoid and silu charged one special-function pass, not two",
        ("tests/tl/test_tl_ops.py",),
    ),
    M(
        "dtypes.narrow-silent-overflow",
        "kernbench/dtypes.py",
        "    if bad.any():\n        _raise(src, bad, d, what, hint)\n    return out",
        "    return out",
        "a finite value too large for float16/fp8 stored as inf or NaN without a word",
        ("tests/tl/test_tl_dtypes.py",),
    ),
    M(
        "pe.pe.gemm-no-pipeline",
        PE,
        "return self._gemm_fixed_ns + flops / self._gemm_flops_per_ns",
        "return flops / self._gemm_flops_per_ns",
        "PE_GEMM's pipeline fill not charged",
    ),
    M(
        "pe.commands.ipcq-send-field-less",
        CMDS,
        '    """Send handle ``src`` to PE ``dst_pe`` over the NoC."""\n\n    dst_pe: int\n    src: HandleRef\n    size_bytes: int\n'
        "    payload: np.ndarray | None = field(default=None, repr=False)  # the value sent (numerics only)\n\n"
        "    @cached_property\n    def logical_bytes(self) -> int:\n        return FRAMING + SCALAR + HANDLE + SCALAR",
        '    """Send handle ``src`` to PE ``dst_pe`` over the NoC."""\n\n    dst_pe: int\n    src: HandleRef\n    size_bytes: int\n'
        "    payload: np.ndarray | None = field(default=None, repr=False)  # the value sent (numerics only)\n\n"
        "    @cached_property\n    def logical_bytes(self) -> int:\n        return FRAMING + SCALAR + HANDLE",
        "IpcqSendCmd.logical_bytes one field short (issue 12 survivor)",
    ),
    M(
        "pe.commands.math-one-input-less",
        CMDS,
        "+ HANDLE * len(self.inputs)",
        "+ HANDLE * (len(self.inputs) - 1)",
        "MathCmd counts one input handle too few",
    ),
    M("pe.commands.extra-tuple-no-length", CMDS, "return 1 + 4 * len(v)", "return 4 * len(v)", "a tuple extra without its length marker"),
    M("pe.commands.bool-as-scalar", CMDS, "    if isinstance(v, bool):\n        return 1\n", "", "a bool extra counted as a 4-byte scalar"),
    M(
        "pe.commands.rw-handles-free",
        CMDS,
        "+ TUPLE_LEN + HANDLE * len(self.rw_handles)",
        "+ TUPLE_LEN",
        "a composite's rw_handles cost no descriptor bytes",
    ),
    M(
        "pe.work.transpose-swapped",
        WORK,
        "n = b[0] if t else b[1]",
        "n = b[1] if t else b[0]",
        "GEMM's n read from the wrong axis of B",
    ),
    # --- events -----------------------------------------------------------------------
    M(
        "events.timeline.active-count-at-end",
        TIMELINE,
        'active = n_started - int(np.searchsorted(ends, t, side="right"))',
        'active = n_started - int(np.searchsorted(ends, t, side="left"))',
        "spans ending at t counted as active",
        equivalent=(
            "the count only bounds the backward scan that follows, and the scan keeps a row only if end > t: "
            "overcounting makes it scan further, never find a different set (slower, same answer)"
        ),
    ),
    M(
        "events.timeline.active-at-end",
        TIMELINE,
        'active = n_started - int(np.searchsorted(ends, t, side="right"))\n'
        "        if active <= 0:\n            return []\n"
        '        end_col = self.store.col("end_ns")\n'
        "        found: list[int] = []\n        i = n_started - 1\n        while i >= 0 and len(found) < active:\n"
        "            r = int(rows[i])\n            if end_col[r] > t:",
        'active = n_started - int(np.searchsorted(ends, t, side="left"))\n'
        "        if active <= 0:\n            return []\n"
        '        end_col = self.store.col("end_ns")\n'
        "        found: list[int] = []\n        i = n_started - 1\n        while i >= 0 and len(found) < active:\n"
        "            r = int(rows[i])\n            if end_col[r] >= t:",
        "a span is active at its end instant (count and scan both)",
    ),
    M(
        "events.timeline.depth-strictly-before",
        TIMELINE,
        'i = int(np.searchsorted(rows, self._count_le(t_ns), side="left")) - 1\n        return float(self.store.col("value")',
        'i = int(np.searchsorted(rows, self._count_lt(t_ns), side="left")) - 1\n        return float(self.store.col("value")',
        "a FIFO's depth at t ignores the sample at t",
    ),
    M(
        "events.timeline.next-change-not-strict",
        TIMELINE,
        "g = self._count_le(t) if direction > 0 else self._count_lt(t) - 1",
        "g = self._count_lt(t) if direction > 0 else self._count_lt(t) - 1",
        "the next change may be t itself",
    ),
    M(
        "events.timeline.load-until-inclusive",
        TIMELINE,
        '(table["issued"] <= t_ns) & (t_ns < table["until"])',
        '(table["issued"] <= t_ns) & (t_ns <= table["until"])',
        "a load is still in flight at its completion instant",
    ),
    M(
        "events.timeline.union-no-running-max",
        TIMELINE,
        "run_end = np.maximum.accumulate(e)",
        "run_end = e",
        "busy union forgets a long span once a short one nested in it ends",
    ),
    M(
        "events.timeline.max-over-open-end",
        TIMELINE,
        'hi = int(np.searchsorted(rows, self._count_le(t1), side="left"))\n        start = self.fifo_depth_at(edge, t0)',
        'hi = int(np.searchsorted(rows, self._count_lt(t1), side="left"))\n        start = self.fifo_depth_at(edge, t0)',
        "fifo_max_over ignores a sample at t1 ([t0, t1] is closed)",
    ),
    M(
        "events.store.sort-seq-first",
        STORE,
        'order = np.lexsort((cols["seq"], cols["t_ns"]))',
        'order = np.lexsort((cols["t_ns"], cols["seq"]))',
        "a batch sorted by seq before time",
    ),
    M(
        "events.store.same-time-seq-unsorted",
        STORE,
        "if n and (t0 < t[-1] or (t0 == t[-1] and s0 < seq[-1])):",
        "if n and t0 < t[-1]:",
        "an appended batch at the last instant with lower seqs is not re-sorted",
    ),
    M(
        "events.store.end-ignores-spans",
        STORE,
        'self._end_ns = max(self._end_ns if old_n else 0.0, float(self._cols["t_ns"].data[n - 1]), tail_end)',
        'self._end_ns = max(self._end_ns if old_n else 0.0, float(self._cols["t_ns"].data[n - 1]))',
        "the store's end ignores span ends",
    ),
    M(
        "events.perfetto.instant-ts-in-ns",
        PERFETTO,
        '"ts": _us(start[row]), "pid": pid, "tid": tid, "args": args}',
        '"ts": start[row], "pid": pid, "tid": tid, "args": args}',
        "Perfetto instant timestamps in ns, not us (issue 12 survivor)",
    ),
    M(
        "events.perfetto.counter-ts-in-ns",
        PERFETTO,
        '"cat": "fifo",\n                "ts": _us(start[row]),',
        '"cat": "fifo",\n                "ts": start[row],',
        "Perfetto counter timestamps in ns, not us (issue 12 survivor)",
    ),
    M(
        "events.perfetto.touching-spans-split",
        PERFETTO,
        "            if last <= start:",
        "            if last < start:",
        "spans that touch go to separate tracks",
    ),
    M(
        "events.perfetto.flow-ends-swapped",
        PERFETTO,
        'ph = "s" if i == 0 else ("f" if i == len(chain) - 1 else "t")',
        'ph = "f" if i == 0 else ("s" if i == len(chain) - 1 else "t")',
        "a transfer's flow starts at its last hop",
    ),
    M(
        "events.tracefile.trailing-bytes-ok",
        TRACEFILE,
        "if size > expected or f.read(1):",
        "if size > expected + 1 or f.read(1):",
        "a trace file with one trailing byte is accepted",
    ),
    M(
        "events.tracefile.fortran-columns-ok",
        TRACEFILE,
        "if got != dtype or shape != (n_events,) or fortran:",
        "if got != dtype or shape != (n_events,):",
        "a Fortran-ordered column header is accepted",
    ),
    # --- probes -----------------------------------------------------------------------
    M(
        "probes.dma.best-worst-le",
        PROBE,
        "round(best, 9) < round(worst, 9)",
        "round(best, 9) <= round(worst, 9)",
        "the probe's best < worst check weakened to <= (issue 12 survivor)",
    ),
    M("probes.dma.d2h-strict", PROBE, "round(d, 9) >= round(h, 9)", "round(d, 9) > round(h, 9)", "D2H >= H2D tightened to >"),
    M(
        "probes.dma.monotonic-strict",
        PROBE,
        "step_ok = round(lat[a], 9) <= round(lat[b], 9)",
        "step_ok = round(lat[a], 9) < round(lat[b], 9)",
        "hop-distance monotonicity tightened to strict",
    ),
    M(
        "probes.cases.worst-tie-last",
        CASES,
        "pick = max(scored, key=lambda s: (s[0], -s[1])) if worst else min(scored)",
        "pick = max(scored) if worst else min(scored)",
        "the worst remote slice's ties go to the last candidate",
    ),
    M(
        "probes.cases.util-uses-request-route",
        PROBE,
        'data = graph.route(case.memory, case.initiator) if case.op == "read" else graph.route(case.initiator, case.memory)',
        'data = graph.route(case.initiator, case.memory) if case.op == "read" else graph.route(case.memory, case.initiator)',
        "Util% from the request route's bottleneck",
        # Every shipped link has one bandwidth both ways, so both directions have the same
        # bottleneck everywhere (checked for every PE DMA x HBM slice pair of the shipped
        # topologies); tests/oracles/test_probe_util_direction.py slows one direction of one link.
    ),
    # --- deferred trains (issue 8: closed form on idle routes) ---
    M(
        "sim.train.tandem-ignores-queued",
        SERVE,
        "        if v > head:\n            queued.append((v + s, s))",
        "        if False:\n            queued.append((v + s, s))",
        "a deferred train ignores work still queued where it passes",
    ),
    M(
        "sim.train.tandem-fastest-pace",
        SERVE,
        "        if s > M:\n            M = s",
        "        if s < M or M < 0:\n            M = s",
        "the train's pace taken from the fastest FIFO, not the slowest",
    ),
    M(
        "sim.train.max-minus-drops-partial-group",
        TRAIN,
        "                if rest:\n",
        "                if False:\n",
        "the lead of a last partial group of channel bursts is ignored",
    ),
    M(
        "sim.fifo.defer-ignores-queued-head",
        FIFO,
        "or f._watch_until >= now - EPS or (heads is not None and v > now + heads[h]):",
        "or f._watch_until >= now - EPS:",
        "an idle read is planned from the idle times though work queued on its route outlasts its head",
    ),
    M(
        "sim.fifo.defer-ignores-watchers",
        FIFO,
        "        if f._replan_at is not None or f._watch_until >= now - EPS or (heads is not None and v > now + heads[h]):",
        "        if f._replan_at is not None or (heads is not None and v > now + heads[h]):",
        "a train is deferred where a control flit is due, which then never sees it",
    ),
    M(
        "sim.fifo.finish-before-deferred-boundary",
        FIFO,
        "            if t > self.deferred_t_last + EPS:  # after the deferred train's last flit: the numbers answer",
        "            if t > self.deferred_t_last - 100.0:  # after the deferred train's last flit: the numbers answer",
        "a control flit due among a deferred train's flits is answered from its numbers",
    ),
    M(
        "sim.fifo.settle-folds-too-early",
        FIFO,
        "        if now > self.deferred_t_last + EPS:\n            self._fold()\n        else:\n            owner.materialize()",
        "        if True:\n            self._fold()\n        else:\n            owner.materialize()",
        "a train arriving among a deferred train's flits sees it as already passed",
    ),
    M(
        "sim.network.materialize-skips-queued",
        DEFERRAL,
        "        f.adopt(tr, p, v)",
        '        f.adopt(tr, p, float("-inf"))',
        "a materialized train forgets the work that was queued ahead of it",
    ),
    M(
        "sim.fifo.notify-skips-due-watchers",
        FIFO,
        "        if self._watch_until < t_from - EPS:  # none is",
        "        if self._watch_until < t_from + 50.0:  # none is",
        "a re-plan tells no control flit due within 50 ns of it to look again",
    ),
    M(
        "sim.train.times-ignores-first-flit",
        TRAIN,
        "        if k0:\n            return times[max(k - k0, 0)",
        "        if False:\n            return times[max(k - k0, 0)",
        "the times of a train planned from flit k on are read as if it started at flit 0",
    ),
    M(
        "interrupts.pe-step-ignores-pending",
        CPU,
        "        raise_pending(self.t)  # an interrupt Python dropped",
        "        pass  # an interrupt Python dropped",
        "a run goes on to its end after an interrupt Python dropped",
        ("tests/hardening/test_dropped_interrupts.py",),
    ),
    M(
        "interrupts.outputs-ignore-pending",
        OUTPUTS,
        "        raise_pending()  # (an interrupt Python dropped while they were made",
        "        pass  # (an interrupt Python dropped while they were made",
        "outputs are renamed into place after an interrupt Python dropped",
        ("tests/hardening/test_dropped_interrupts.py",),
    ),
    M(
        "interrupts.command-end-ignores-pending",
        EXITS,
        "            raise_pending()  # (one whose first raise was dropped",
        "            pass  # (one whose first raise was dropped",
        "a command whose interrupt Python dropped ends with status 0",
        ("tests/hardening/test_dropped_interrupts.py",),
    ),
    M(
        "interrupts.sigint-not-remembered",
        INTERRUPTS,
        "        PENDING.append(signum)\n",
        "",
        "the handler raises but does not remember the signal",
        ("tests/hardening/test_dropped_interrupts.py",),
    ),
]
