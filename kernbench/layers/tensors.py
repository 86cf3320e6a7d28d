"""The tensors of the layer kernels: their dtypes, tolerances, and how they are filled.

Every HBM tensor a layer kernel deploys goes through :class:`Filler`: with
data held it draws uniform values in ``[-scale, scale)`` (float32, then
narrowed to the tensor's dtype), with none held (``--no-data``) it hands
``Runtime.deploy`` a placeholder of the shape, so a large layer allocates
nothing. Weights are drawn with ``scale = sqrt(3 / fan_in)`` (unit variance
of a product), activations with ``scale = 1``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernbench.dtypes import bfloat16, float8_e4m3fn
from kernbench.handles import HbmTensor, Ptr
from kernbench.kernels.data import placeholder
from kernbench.runtime.api import Runtime

#: the ``--dtype`` of a layer kernel: what its weights and KV cache are stored as
DTYPES: dict[str, Any] = {"bfloat16": bfloat16, "float16": np.float16, "float8_e4m3fn": float8_e4m3fn}

#: the activations' dtype for each ``--dtype`` (fp8 holds weights and KV cache; activations stay bfloat16)
ACTIVATION = {"bfloat16": bfloat16, "float16": np.float16, "float8_e4m3fn": bfloat16}

#: Max |output − float32 numpy reference| a layer kernel's check accepts, per ``--dtype``. The reference
#: computes on the very values deployed (already rounded to the dtype), so what remains is the kernel's own
#: roundings of intermediates to the activation dtype (normed inputs, projections, attention outputs,
#: all-reduce partial sums: ~2^-8 relative each in bfloat16, 2^-11 in float16) on outputs of magnitude ≲ 4.
TOLERANCE = {"float16": 0.02, "bfloat16": 0.1, "float8_e4m3fn": 0.1}


class Filler:
    """Deploys a kernel's tensors on ``rt``: drawn values when it holds data, their shape alone when not."""

    def __init__(self, rt: Runtime, seed: int) -> None:
        self.rt = rt
        self.rng = np.random.default_rng(seed)

    def random(self, shape: tuple[int, ...], dtype: Any, scale: float, *, pe: int, name: str) -> HbmTensor:
        """Uniform values in ``[-scale, scale)`` stored as ``dtype`` in ``pe``'s HBM slice."""
        if not self.rt.holds_data:
            return self.rt.deploy(placeholder(shape, dtype), dtype=dtype, pe=pe, name=name)
        values = (self.rng.random(shape, dtype=np.float32) * np.float32(2 * scale) - np.float32(scale)).astype(np.float32)
        return self.rt.deploy(values, dtype=dtype, pe=pe, name=name, copy=False)

    def weight(self, shape: tuple[int, ...], dtype: Any, fan_in: int, *, pe: int, name: str) -> HbmTensor:
        return self.random(shape, dtype, math.sqrt(3.0 / fan_in), pe=pe, name=name)

    def given(self, values: np.ndarray, dtype: Any, *, pe: int, name: str) -> HbmTensor:
        """Values the host computed (a rotation matrix, angles): held, or only shaped without data."""
        if not self.rt.holds_data:
            return self.rt.deploy(placeholder(values.shape, dtype), dtype=dtype, pe=pe, name=name)
        return self.rt.deploy(values, dtype=dtype, pe=pe, name=name)


def f32(t: HbmTensor | Ptr) -> np.ndarray:
    """A deployed tensor's (or region's) values in float32 (for a reference)."""
    return np.asarray(t.values() if isinstance(t, Ptr) else t.array, dtype=np.float32)


def rotation(d: int) -> np.ndarray:
    """RoPE's rotate-half as a matrix: ``x @ R == concat(−x[d/2:], x[:d/2])`` (entries 0, ±1)."""
    h = d // 2
    r = np.zeros((d, d), np.float32)
    r[np.arange(h) + h, np.arange(h)] = -1.0
    r[np.arange(h), np.arange(h) + h] = 1.0
    return r


def inv_freq(d: int, theta: float) -> np.ndarray:
    """RoPE's frequencies, ``theta ** (−2i / d)`` for each of the d/2 pairs, repeated for the two halves: (1, d)."""
    f = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    return np.concatenate([f, f]).astype(np.float32)[None, :]
