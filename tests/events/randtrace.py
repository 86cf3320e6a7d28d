"""Seeded random traces for checking queries against brute force."""

from __future__ import annotations

import random

from kernbench.events.types import SPAN_KINDS, Event, EventKind

LANES = [f"sip0.cube0.pe{p}.{e}" for p in (0, 1) for e in ("cpu", "gemm", "dma.rd")]
EDGES = ["sip0.cube0.r0->sip0.cube0.r1", "sip0.cube0.r1->sip0.cube0.r0", "sip0.cube0.r1->sip0.cube0.hbm"]
LABELS = ["gemm", "load_a", "load_b", "store", ""]


def random_trace(seed: int, n: int = 200) -> list[Event]:
    """Events with duplicate times, overlapping and zero-length spans."""
    rng = random.Random(seed)
    events: list[Event] = []
    for seq in range(n):
        t = float(rng.randrange(0, 100))
        r = rng.random()
        if r < 0.2:
            kind, comp = EventKind.QUEUE_DEPTH, rng.choice(EDGES)
            ev = Event(t, kind, comp, value=float(rng.randrange(0, 9)), seq=seq)
        elif r < 0.35:
            kind = rng.choice([EventKind.LOAD_ISSUE, EventKind.LOAD_COMPLETE])
            comp = rng.choice([lane for lane in LANES if lane.endswith("cpu")])
            ev = Event(t, kind, comp, corr_id=rng.randrange(-1, 6), label=rng.choice(LABELS), value=64.0, seq=seq)
        else:
            comp = rng.choice(LANES)
            if comp.endswith("cpu"):
                kind = rng.choice([EventKind.DISPATCH, EventKind.STALL, EventKind.LOAD_WAIT, EventKind.CPU_WORK])
            else:
                kind = EventKind.ENGINE_BUSY
            dur = float(rng.choice([0, 1, 2, 5, 17, 40]))
            ev = Event(
                t,
                kind,
                comp,
                end_ns=t + dur,
                corr_id=rng.randrange(-1, 6),
                label=rng.choice(LABELS),
                detail=rng.choice(LABELS),
                value=float(seq),
                seq=seq,
            )
        events.append(ev)
    return events


def in_publish_batches(events: list[Event], seed: int) -> list[list[Event]]:
    """Split into batches in *publish* order: spans published at their end."""
    rng = random.Random(seed)

    def publish_t(e: Event) -> float:
        return e.end_ns if e.kind in SPAN_KINDS else e.t_ns

    ordered = sorted(events, key=lambda e: (publish_t(e), e.seq))
    batches, i = [], 0
    while i < len(ordered):
        k = rng.randrange(1, 30)
        batches.append(ordered[i : i + k])
        i += k
    return batches
