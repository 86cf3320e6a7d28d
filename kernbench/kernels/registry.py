"""The kernels that ship: a name, a description, parameters, and how to set one up.

``prepare(runtime, params)`` deploys tensors and launches the kernel on the
runtime; it returns a :class:`Prepared` whose ``check()`` compares the
kernel's output with a numpy reference after the run and whose
``summary(result)`` gives kernel-specific figures (per-tile counts, …).

Options are validated at this boundary, before a topology is compiled or a
tensor deployed: each :class:`Param` carries its range, and a kernel's
``check(params, pes)`` the rules between options and against the topology's
PE count; every problem names the option's flag (``--heads``), never a line
inside the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernbench.runtime.api import RunResult, Runtime

Params = dict[str, Any]  # option name -> value, of the type its Param declares
Summary = dict[str, Any]  # kernel-specific figures of a run, as JSON writes them
OpLogEntry = dict[str, Any]  # one command of a PE's op log (RunResult.op_logs)


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    low: float | None = None  # inclusive bounds of a number
    high: float | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not acceptable for this option, or None."""
        if self.choices is not None and value not in self.choices:
            return f"{self.flag} {value!r}: choose one of {', '.join(map(str, self.choices))}"
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return f"{self.flag} {value!r}: must be in {self.low:g}..{self.high:g}"
        return None


@dataclass
class Prepared:
    check: Callable[[], float]
    summary: Callable[[RunResult], Summary] = field(default=lambda result: {})
    variant: str = ""


@dataclass(frozen=True)
class KernelSpec:
    name: str
    description: str
    params: tuple[Param, ...]
    prepare: Callable[[Runtime, Params], Prepared]
    default_topology: str = "cube1"
    check: Callable[[Params, int], list[str]] = field(default=lambda params, pes: [])

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def validate(self, params: dict[str, Any], pes: int) -> None:
        """Every option's range, then the rules between options on a topology of ``pes`` PEs; all problems in one error."""
        from kernbench.errors import KernbenchError

        problems = [msg for p in self.params if (msg := p.problem(params.get(p.name, p.default)))]
        if not problems:
            problems = self.check(dict(self.defaults(), **params), pes)
        if problems:
            raise KernbenchError(f"{self.name}: " + "; ".join(problems))


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


def _load_namesake(key: str) -> None:
    """Import the one shipped module named like the kernel (``gqa-decode``: ``kernbench.kernels.gqa_decode``), if any."""
    import importlib

    module = "kernbench.kernels." + key.replace("-", "_")
    if module in KERNEL_MODULES:
        importlib.import_module(module)


def kernels() -> dict[str, KernelSpec]:
    # Not "if not KERNELS": importing one kernel module directly registers it
    # and would hide the others.
    if not _loaded:
        _load_all()
    return dict(sorted(KERNELS.items()))


def get(name: str) -> KernelSpec:
    from kernbench.errors import KernbenchError

    key = name.replace("_", "-")
    if key not in KERNELS:
        _load_namesake(key)
    if key in KERNELS:
        return KERNELS[key]
    table = kernels()
    if key not in table:
        guesses = suggest(key, list(table))
        hint = f" (did you mean {' or '.join(repr(g) for g in guesses)}?)" if guesses else ""
        raise KernbenchError(f"unknown kernel {name!r}{hint}; `kernbench run --list` shows them")
    return table[key]


def suggest(name: str, known: list[str]) -> list[str]:
    """Names ``name`` may have meant: same but for case, a prefix of one, a part of one, or a close typo."""
    import difflib

    key = name.lower()
    matchers: tuple[Callable[[str], bool], ...] = (
        lambda k: k.lower() == key,
        lambda k: k.lower().startswith(key) or key.startswith(k.lower()),
        lambda k: key in k.lower(),
    )
    for match in matchers:
        hits = sorted(k for k in known if match(k))
        if key and hits:
            return hits
    return difflib.get_close_matches(key, known, n=2, cutoff=0.6)
