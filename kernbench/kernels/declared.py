"""Where declared kernels are kept: by the module that declares them, then by name, in declaration order.

:func:`kernbench.kernels.registry.kernel` writes here; the registry reads the
shipped modules' entries, :mod:`kernbench.kernels.files` a kernel file's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernbench.kernels.registry import KernelSpec

DECLARED: dict[str, dict[str, KernelSpec]] = {}
