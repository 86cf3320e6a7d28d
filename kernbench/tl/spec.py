"""``tl.OpSpec``: one op of a ``tl.composite`` as a kernel writes it.

A kernel names the handles it holds (:class:`~kernbench.handles.TensorHandle`);
``tl.composite`` turns each spec into the command's
:class:`kernbench.pe.commands.OpSpec`, which names them by their frozen
:class:`~kernbench.handles.HandleRef` (commands never hold a handle).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernbench.handles import TensorHandle


@dataclass(frozen=True, eq=False, slots=True)
class OpSpec:
    """One op inside a composite: kind, named operand handles, out, scope, extra."""

    kind: str
    operands: dict[str, TensorHandle]
    out: TensorHandle | None = None
    scope: str = "tile"
    extra: dict[str, Any] = field(default_factory=dict)
