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
    """One op of a ``tl.composite``: its kind, its operands by name, its ``out``, its scope and its extra parameters.

    A plain record: nothing is checked or issued until ``tl.composite``. The
    operands are named as the op kind names them, in that order (``{"a": ...,
    "b": ...}`` for a binary kind, ``{"x": ...}`` for a unary one: the op kinds
    table).

    Shapes:
        Operands: TCM handles or ``tl.ref`` regions, of the shapes the kind takes; ``out``:
        a handle the result broadcasts to, or None (the result is computed and dropped).
    Dtypes:
        Operands any; ``out`` keeps its dtype.
    Cost:
        - Command: none by itself. In a ``CompositeCmd`` it counts
          ``3 + 8 × len(operands) + (8 if out) + 1 + Σ extra bytes`` logical bytes
          (ADR-0064 D2): opcode 1, ``scope`` 1 (carried, not read by the model), the
          operands' tuple length 1, a handle 8 per operand and for ``out``, the extras'
          tuple length 1, and per ``extra`` value: bool 1, int or float 4, tuple or list
          1 + 4 per item, str 1, anything else 4.
        - ``extra`` keys the numerics read: the kind's (op kinds table) and
          ``accumulate`` (any kind: add into ``out``; the timing is the same, ``out`` is not
          fetched). Other keys, such as a GEMM's ``m``, ``k``, ``n``, are only carried,
          and counted.
    Example:
        t = tl.load(x)
        m = tl.zeros((64, 1))
        spec = tl.OpSpec("rowmax", {"x": t}, m)
        assert spec.scope == "tile" and spec.extra == {}
        tl.composite([spec])  # 4 + 1 + 20 + 1 = 26 logical bytes
        assert m.numpy().shape == (64, 1)
    """

    kind: str
    operands: dict[str, TensorHandle]
    out: TensorHandle | None = None
    scope: str = "tile"
    extra: dict[str, Any] = field(default_factory=dict)
