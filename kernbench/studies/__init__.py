"""The paper's two analytic cross-checks: all-reduce against α–β, GEMM against an ideal pipeline.

:mod:`~kernbench.models.alphabeta` and :mod:`~kernbench.models.pipeline`
are the analytic models (formulas from topology parameters only);
:mod:`~kernbench.studies.allreduce` and :mod:`~kernbench.studies.gemm` run
the sweeps and print simulator and model side by side
(``kernbench bench --study allreduce|gemm``). The formulas are written out
in ``docs/studies.md``.
"""
