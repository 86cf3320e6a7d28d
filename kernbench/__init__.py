"""kernbench: a discrete-event simulator for LLM kernels on AHBM."""

__version__ = "0.1.0"
