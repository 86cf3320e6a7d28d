"""kernbench: a discrete-event simulator for LLM kernels on AHBM.

``from kernbench import Runtime, tl`` is all a kernel author needs.
"""

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ below loads on first use
    from kernbench import tl as tl
    from kernbench.runtime.api import Runtime as Runtime

__version__ = "0.1.0"

# A kernel's numerics are many small matrix products. One BLAS thread is
# faster for those (threads spin and fight for cores), and the rounding then
# does not depend on how many cores the machine has. Set before numpy loads
# its BLAS; whoever set these, or imported numpy first, keeps their choice.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
del _var


def __getattr__(name: str) -> object:
    # Lazy so that ``import kernbench`` stays cheap for the CLI and the TUI.
    if name == "Runtime":
        from kernbench.runtime.api import Runtime

        return Runtime
    if name == "tl":
        import importlib

        # not ``from kernbench import tl``: that asks this __getattr__ again (RecursionError)
        return importlib.import_module("kernbench.tl")
    raise AttributeError(f"module 'kernbench' has no attribute {name!r}")
