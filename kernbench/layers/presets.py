"""The published shapes of the models the layer kernels run.

Values are those of each model's ``config.json`` as published by its authors
on the Hugging Face Hub (the vocabulary is left out: a layer does not use it):

``llama3-8b`` — ``meta-llama/Meta-Llama-3-8B``: ``hidden_size`` 4096,
``num_attention_heads`` 32, ``num_key_value_heads`` 8 (head dim 4096 / 32 =
128), ``intermediate_size`` 14336, ``num_hidden_layers`` 32,
``rms_norm_eps`` 1e-5, ``rope_theta`` 500000.

``llama3-70b`` — ``meta-llama/Meta-Llama-3-70B``: ``hidden_size`` 8192,
``num_attention_heads`` 64, ``num_key_value_heads`` 8 (head dim 128),
``intermediate_size`` 28672, ``num_hidden_layers`` 80, ``rms_norm_eps``
1e-5, ``rope_theta`` 500000.

``mixtral-8x7b`` — ``mistralai/Mixtral-8x7B-v0.1``: ``hidden_size`` 4096,
``num_attention_heads`` 32, ``num_key_value_heads`` 8 (head dim 128),
``intermediate_size`` 14336 (per expert), ``num_local_experts`` 8,
``num_experts_per_tok`` 2, ``num_hidden_layers`` 32, ``rms_norm_eps`` 1e-5,
``rope_theta`` 1e6.

``tiny-dense`` and ``tiny-moe`` are not published models: toy shapes of the
same structure (GQA with two query heads per KV head, a SwiGLU MLP; the MoE
with four experts, two per token) small enough to step through in the
debugger in a second, and to check a property of the layer kernels quickly.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ModelShape:
    """One decoder layer's shape (and how many layers the model has)."""

    name: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int  # the MLP's inner size (per expert in a mixture of experts)
    layers: int
    experts: int = 1  # 1: a dense MLP
    top_k: int = 1  # experts per token
    rms_eps: float = 1e-5
    rope_theta: float = 500000.0

    @property
    def group(self) -> int:
        """Query heads per KV head."""
        return self.heads // self.kv_heads

    def weight_elements(self) -> int:
        """Elements of one layer's weights: Q, K, V, O projections, the MLP (every expert, the router), the two norms."""
        attn = self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim + self.heads * self.head_dim * self.hidden
        mlp = self.experts * 3 * self.hidden * self.ffn + (self.hidden * self.experts if self.experts > 1 else 0)
        return attn + mlp + 2 * self.hidden


PRESETS: dict[str, ModelShape] = {
    "llama3-8b": ModelShape("llama3-8b", hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=32),
    "llama3-70b": ModelShape("llama3-70b", hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn=28672, layers=80),
    "mixtral-8x7b": ModelShape(
        "mixtral-8x7b", hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, layers=32, experts=8, top_k=2, rope_theta=1e6
    ),
    "tiny-dense": ModelShape("tiny-dense", hidden=256, heads=8, kv_heads=4, head_dim=32, ffn=512, layers=2),
    "tiny-moe": ModelShape("tiny-moe", hidden=256, heads=8, kv_heads=4, head_dim=32, ffn=256, layers=2, experts=4, top_k=2, rope_theta=1e6),
}
MODELS = tuple(PRESETS)
