"""kernbench: a discrete-event simulator for LLM kernels on AHBM.

``from kernbench import Runtime, tl`` is all a kernel author needs.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    # Lazy so that ``import kernbench`` stays cheap for the CLI and the TUI.
    if name == "Runtime":
        from kernbench.runtime.api import Runtime

        return Runtime
    if name == "tl":
        import importlib

        # not ``from kernbench import tl``: that asks this __getattr__ again (RecursionError)
        return importlib.import_module("kernbench.tl")
    raise AttributeError(f"module 'kernbench' has no attribute {name!r}")
