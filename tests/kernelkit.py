"""Helpers the PE / tl / runtime tests share: run a kernel, pick events."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kernbench.events.types import Event, EventKind
from kernbench.runtime.api import RunResult, Runtime

PE0 = "sip0.cube0.pe0"


def rng_array(shape: Sequence[int], seed: int = 0, dtype: Any = np.float16) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(dtype)


def run1(rt: Runtime, kernel: Callable[..., Any], *args: Any, pes: Sequence[int] = (0,), record: bool = True) -> RunResult:
    rt.launch(kernel, pes=list(pes), args=args)
    return rt.run(record=record)


def events(result: RunResult, kind: EventKind, component: str | None = None, label: str | None = None) -> list[Event]:
    return [
        e
        for e in result.events
        if e.kind is kind and (component is None or e.component == component) and (label is None or e.label == label)
    ]


def dispatches(result: RunResult, pe: str = PE0) -> list[Event]:
    return events(result, EventKind.DISPATCH, f"{pe}.cpu")


def busy(result: RunResult, engine: str, pe: str = PE0) -> list[Event]:
    return events(result, EventKind.ENGINE_BUSY, f"{pe}.{engine}")


def fetch_store(result: RunResult, pe: str = PE0) -> list[Event]:
    """The spans of a PE's FETCH and STORE lanes together, in time order."""
    return sorted(busy(result, "fetch", pe) + busy(result, "store", pe), key=lambda e: (e.t_ns, e.seq))


def f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)
