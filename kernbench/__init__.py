"""kernbench: a discrete-event simulator for LLM kernels on AHBM.

``from kernbench import Runtime, tl`` is all a kernel author needs to run a
kernel from Python; ``from kernbench import Option, kernel`` declares one in a
file so that every command takes it (``kernbench run file.py``; see
:mod:`kernbench.kernels.registry`).
"""

import os
import signal
import sys
from typing import TYPE_CHECKING

# Ctrl-C while the `kernbench` / `kernbench-tui` program is still importing (its first ~0.15 s) ends it with
# the line a later Ctrl-C prints, not a KeyboardInterrupt traceback from deep in an import; the commands put
# their own handler in place once they run (kernbench.interrupts). Only for those programs: a script or
# notebook that imports kernbench keeps its Ctrl-C.
_PROGRAMS = ("kernbench", "kernbench-tui")


def _interrupted_while_starting(signum: int, frame: object) -> None:
    os.write(2, f"interrupted ({signal.Signals(signum).name}); no output was written\n".encode())
    os._exit(128 + signum)


if os.path.basename(sys.argv[0] if sys.argv else "") in _PROGRAMS and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

if TYPE_CHECKING:  # what __getattr__ below loads on first use
    from kernbench import tl as tl
    from kernbench.kernels.registry import Option as Option
    from kernbench.kernels.registry import Prepared as Prepared
    from kernbench.kernels.registry import kernel as kernel
    from kernbench.runtime.api import RunResult as RunResult
    from kernbench.runtime.api import Runtime as Runtime

__all__ = ["Option", "Prepared", "RunResult", "Runtime", "kernel", "tl"]

__version__ = "0.1.0"

# A kernel's numerics are many small matrix products. One BLAS thread is
# faster for those (threads spin and fight for cores), and the rounding then
# does not depend on how many cores the machine has. Set before numpy loads
# its BLAS; whoever set these, or imported numpy first, keeps their choice.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
del _var


_LAZY = {
    "Runtime": "kernbench.runtime.api",
    "RunResult": "kernbench.runtime.api",
    "Option": "kernbench.kernels.registry",
    "Prepared": "kernbench.kernels.registry",
    "kernel": "kernbench.kernels.registry",
}


def __getattr__(name: str) -> object:
    # Lazy so that ``import kernbench`` stays cheap for the CLI and the TUI.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "tl":
        import importlib

        # not ``from kernbench import tl``: that asks this __getattr__ again (RecursionError)
        return importlib.import_module("kernbench.tl")
    raise AttributeError(f"module 'kernbench' has no attribute {name!r}")
