"""Bench kernels written against ``tl``; see :mod:`kernbench.kernels.registry`."""
