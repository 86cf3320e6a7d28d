"""Transformer layers as kernels: the model presets, the blocks of a decoder layer, the shipped layer kernels.

``presets`` holds the published shapes (Llama 3 8B and 70B, Mixtral 8×7B);
``placement`` maps a layer onto PEs (tensor and expert parallelism); each
other module is one block (``norm``, ``rope``, ``mlp``, ``attention``) or one
whole layer (``decoder``, ``moe``), each declaring its ``@kernel``. Not to be
confused with :mod:`kernbench.models`, the analytic models of the simulator.
"""
