"""A few study points pinned as goldens for ``kernbench bench --check`` (each well under a second).

Each takes the timing mode (``mode=``) like every other bench."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernbench.sim.network import Mode


def _allreduce(topology: str, algo: str, payload: str, pes: str = "") -> Callable[..., dict[str, float]]:
    def run(mode: Mode = "fast") -> dict[str, float]:
        from kernbench.kernels import registry
        from kernbench.runtime.api import Runtime

        spec = registry.get("allreduce")
        rt = Runtime(topology, mode=mode)
        spec.prepare(rt, dict(spec.defaults(), algo=algo, payload=payload, pes=pes, chunk="256KiB"))
        return {f"allreduce/{topology}/{algo}/{payload}": rt.run().latency_ns}

    return run


def _gemm(label: str, **params: Any) -> Callable[..., dict[str, float]]:
    def run(mode: Mode = "fast") -> dict[str, float]:
        from kernbench.kernels import registry
        from kernbench.runtime.api import Runtime

        spec = registry.get("gemm-tiled")
        rt = Runtime("cube1", mode=mode)
        spec.prepare(rt, dict(spec.defaults(), **params))
        return {f"gemm-tiled/{label}": rt.run().latency_ns}

    return run


STUDY_BENCHES: tuple[Callable[..., dict[str, float]], ...] = (
    *(_allreduce("torus2x3", algo, "1MiB") for algo in ("ring", "2d", "tree")),
    _allreduce("mesh2x3", "ring", "1MiB"),
    _allreduce("paper_torus", "2d", "64KiB", "sip0"),
    _gemm("composite-16tiles", form="composite", m=128, n=128, k=2048, pes=1),
    _gemm("primitive-16tiles", form="primitive", m=128, n=128, k=2048, pes=1),
    _gemm("composite-splitk4-8pe", form="composite", m=512, n=512, k=1024, pes=8, ksplit=4),
)
