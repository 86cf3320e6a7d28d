"""Every shipped kernel at a size that keeps the tests that run them all quick.

The properties those tests hold (fast equals oracle, a what-if equals a run
with ``--set``, a replay keeps the accounting, every path segment names its
line) hold for any configuration, so a layer kernel runs a toy model of the
same structure there (``tiny-dense``, ``tiny-moe``: kernbench/layers/presets.py)
rather than its default Llama or Mixtral layer, which takes minutes. The
published shapes keep their own tests (tests/layers, tests/studies).
"""

from __future__ import annotations

from typing import Any

from kernbench.kernels import registry

#: options over a kernel's defaults (kernels not named: their defaults)
SMALL: dict[str, dict[str, Any]] = {
    "gqa-decode": dict(heads=8, kv_heads=2, context=4096, pes_per_head=8),  # 16 PEs, four per KV head
    "decoder-layer": dict(model="tiny-dense", batch=2, seq=64),
    "moe-layer": dict(model="tiny-moe", batch=2, seq=64),
}


def names() -> list[str]:
    return sorted(registry.kernels())


def params(name: str) -> dict[str, Any]:
    """The kernel's options: its defaults, with :data:`SMALL`'s over them."""
    return dict(registry.get(name).defaults(), **SMALL.get(name, {}))


def argv(name: str) -> list[str]:
    """:data:`SMALL`'s options as command-line flags (``--model tiny-dense …``)."""
    return [a for k, v in SMALL.get(name, {}).items() for a in (f"--{k.replace('_', '-')}", str(v))]
