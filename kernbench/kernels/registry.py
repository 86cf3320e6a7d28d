"""The kernels that ship: a name, a description, parameters, and how to set one up.

``prepare(runtime, params)`` deploys tensors and launches the kernel on the
runtime; it returns a :class:`Prepared` whose ``check()`` compares the
kernel's output with a numpy reference after the run and whose
``summary(result)`` gives kernel-specific figures (per-tile counts, …).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernbench.runtime.api import Runtime, RunResult


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    help: str
    choices: tuple | None = None


@dataclass
class Prepared:
    check: Callable[[], float]
    summary: Callable[[RunResult], dict] = field(default=lambda result: {})
    variant: str = ""


@dataclass(frozen=True)
class KernelSpec:
    name: str
    description: str
    params: tuple[Param, ...]
    prepare: Callable[[Runtime, dict], Prepared]
    default_topology: str = "cube1"

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}


KERNELS: dict[str, KernelSpec] = {}


def register(spec: KernelSpec) -> KernelSpec:
    if spec.name in KERNELS:
        raise ValueError(f"kernel {spec.name!r} registered twice")
    KERNELS[spec.name] = spec
    return spec


KERNEL_MODULES = ("kernbench.kernels.gemm", "kernbench.kernels.gqa_decode", "kernbench.kernels.allreduce", "kernbench.kernels.gemm_tiled")


_loaded = False


def _load_all() -> None:
    global _loaded
    import importlib

    for name in KERNEL_MODULES:
        importlib.import_module(name)
    _loaded = True


def kernels() -> dict[str, KernelSpec]:
    # Not "if not KERNELS": importing one kernel module directly registers it
    # and would hide the others.
    if not _loaded:
        _load_all()
    return dict(sorted(KERNELS.items()))


def get(name: str) -> KernelSpec:
    from kernbench.errors import KernbenchError

    table = kernels()
    key = name.replace("_", "-")
    if key not in table:
        import difflib

        g = difflib.get_close_matches(key, list(table), n=1)
        hint = f" (did you mean {g[0]!r}?)" if g else ""
        raise KernbenchError(f"unknown kernel {name!r}{hint}; `kernbench run --list` shows them")
    return table[key]
