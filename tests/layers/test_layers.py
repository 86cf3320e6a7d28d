"""The shipped layer kernels: their reference checks, --no-data's identical latency, the presets, the placement."""

from __future__ import annotations

import numpy as np
import pytest

from kernbench.errors import KernbenchError
from kernbench.kernels import registry
from kernbench.layers import moe
from kernbench.layers.placement import Plan, choose_pes
from kernbench.layers.presets import PRESETS
from kernbench.layers.tensors import TOLERANCE, rotation
from kernbench.runtime.api import Runtime


def run(name: str, data: bool = True, topology: str | None = None, overrides: list[str] | None = None, **options):
    """(latency, max |err| or None, the run) of a shipped kernel with ``options`` (``overrides``: --set texts)."""
    spec = registry.get(name)
    rt = Runtime(topology or spec.default_topology, overrides=overrides, data=data)
    params = dict(spec.defaults(), **options)
    spec.validate(params, len(rt.pe_ids()), options)
    prepared = spec.prepare(rt, params)
    result = rt.run()
    return result.latency_ns, prepared.check() if data else None, result


def assert_checked_and_timed_without_data(name: str, topology: str | None = None, **options):
    latency, err, held = run(name, topology=topology, **options)
    assert err is not None and err <= TOLERANCE[options.get("dtype", "bfloat16")], err
    latency_none, _, none = run(name, data=False, topology=topology, **options)
    assert latency_none == latency
    assert none.commands == held.commands and none.dispatch_cycles == held.dispatch_cycles


@pytest.mark.parametrize(
    "name, options",
    [
        ("rmsnorm", {}),
        ("rmsnorm", {"dtype": "float16", "rows": 24, "tile": 5}),
        ("rope", {"tokens": 64}),
        ("swiglu-mlp", {"tokens": 8, "allreduce": "tree"}),
        ("swiglu-mlp", {"tokens": 8, "dtype": "float8_e4m3fn"}),
        ("attention-prefill", {"seq": 128, "tile": 32}),
    ],
)
def test_a_block_kernel_passes_its_check_and_times_the_same_without_data(name, options):
    assert_checked_and_timed_without_data(name, **options)


@pytest.mark.slow
def test_decoder_layer_llama3_8b_decode_batch_4_seq_1024_tp_8_passes_its_check_and_equals_its_no_data_latency():
    assert_checked_and_timed_without_data("decoder-layer", model="llama3-8b", phase="decode", batch=4, seq=1024, tp=8)


def test_decoder_layer_with_pes_sharing_a_kv_head_passes_its_check():
    # tp 8 > 4 KV heads: two PEs per KV head split its context (flash-decoding), stack their queries, merge;
    # 300 tokens in tiles of 128: the last tile is partial (the toy preset: the structure, in a second)
    assert_checked_and_timed_without_data("decoder-layer", model="tiny-dense", batch=2, seq=300, tp=8, tile=128)


@pytest.mark.slow
def test_decoder_layer_prefill_seq_512_passes_its_check():
    _latency, err, _ = run("decoder-layer", model="llama3-8b", phase="prefill", batch=1, seq=512, tp=8)
    assert err is not None and err <= TOLERANCE["bfloat16"], err


def test_decoder_layer_prefill_passes_its_check_on_a_short_prompt():
    # two query tiles: the second folds in a whole earlier KV tile and a masked diagonal one
    assert_checked_and_timed_without_data("decoder-layer", topology="cube1", model="tiny-dense", phase="prefill", batch=1, seq=64, tp=4)


def test_decoder_layer_prefill_with_pes_sharing_a_kv_head_passes_its_check():
    # tp 8 > 4 KV heads: each pair of PEs projects its group's K and V with the same weights (a copy each)
    _latency, err, _ = run("decoder-layer", model="tiny-dense", phase="prefill", batch=1, seq=32, tp=8)
    assert err is not None and err <= TOLERANCE["bfloat16"], err


@pytest.mark.slow
def test_moe_layer_mixtral_decode_batch_4_tp_8_passes_its_check_and_equals_its_no_data_latency():
    assert_checked_and_timed_without_data("moe-layer", model="mixtral-8x7b", phase="decode", batch=4, tp=8)


def test_a_moe_layer_takes_at_least_one_expert_streamed_from_one_slice():
    # with tp = 8 experts each PE streams its whole expert: 3 · 4096 · 14336 · 2 B over its slice's
    # 8 pseudo-channels × 32 GB/s = 256 B/ns, 1,376,256 ns, whatever else overlaps it
    latency, _, _ = run("moe-layer", data=False, batch=4, seq=256, tp=8)
    assert latency >= 3 * 4096 * 14336 * 2 / 256


def test_fp8_weights_and_kv_cache_halve_the_bytes_and_a_memory_bound_decode_layer_runs_in_about_half_the_time():
    # the weights and KV cache are most of the bytes: at one byte an element instead of two, the DMA reads halve
    small = dict(topology="cube1", model="llama3-8b", batch=2, seq=128, tp=8)
    bf16, _, rb = run("decoder-layer", data=False, dtype="bfloat16", **small)
    fp8, _, rf = run("decoder-layer", data=False, dtype="float8_e4m3fn", **small)
    reads = [sum(b["dma.rd"] for b in r.engine_busy_ns.values()) for r in (rb, rf)]
    assert 0.45 * reads[0] < reads[1] < 0.6 * reads[0]
    # on the default 64-row GEMM array two tokens fill 2 of 64 rows: the step is bound by PE_GEMM (bf16
    # activations against fp8 weights run at the bf16 rate), so fp8 gains little ...
    assert 0.9 * bf16 < fp8 <= bf16
    # ... and on an array as short as the batch the same step is bound by HBM, where fp8 halves it
    short = ["pe.attrs.gemm_array_rows=2", "pe.attrs.gemm_array_cols=2048"]
    bf16_short, _, _ = run("decoder-layer", data=False, dtype="bfloat16", overrides=short, **small)
    fp8_short, _, _ = run("decoder-layer", data=False, dtype="float8_e4m3fn", overrides=short, **small)
    assert 0.45 * bf16_short < fp8_short < 0.6 * bf16_short


# --- rules, presets, placement, routing ------------------------------------------


@pytest.mark.parametrize(
    "name, options, cause",
    [
        ("decoder-layer", {"tp": 12}, "--tp 12 must divide the 32 query heads"),
        ("decoder-layer", {"tp": 24, "model": "llama3-70b"}, "power of two"),
        ("decoder-layer", {"tp": 512}, "the topology has 256 PEs"),
        ("decoder-layer", {"phase": "prefill", "seq": 100, "tile": 32}, "--seq 100 must divide by --tile 32"),
        ("moe-layer", {"tp": 4}, "must be a multiple of the 8 experts"),
    ],
)
def test_a_layer_refuses_a_split_it_cannot_make_naming_the_option(name, options, cause):
    spec = registry.get(name)
    with pytest.raises(KernbenchError, match=cause):
        spec.validate(dict(spec.defaults(), **options), 256, options)


def test_the_presets_are_the_published_shapes():
    l8, l70, mx = PRESETS["llama3-8b"], PRESETS["llama3-70b"], PRESETS["mixtral-8x7b"]
    assert (l8.hidden, l8.heads, l8.kv_heads, l8.head_dim, l8.ffn, l8.layers) == (4096, 32, 8, 128, 14336, 32)
    assert (l70.hidden, l70.heads, l70.kv_heads, l70.head_dim, l70.ffn, l70.layers) == (8192, 64, 8, 128, 28672, 80)
    assert (mx.hidden, mx.heads, mx.kv_heads, mx.ffn, mx.experts, mx.top_k, mx.layers) == (4096, 32, 8, 14336, 8, 2, 32)
    # Llama 3 8B: 4096·(32+16)·128 + 4096·4096 (attention) + 3·4096·14336 (MLP) + 2·4096 (norms) = 218,112,000
    assert l8.weight_elements() == 218_112_000


def test_the_tp_plan_splits_heads_kv_heads_and_ffn():
    p = Plan(PRESETS["llama3-70b"], "decode", 8, 8192, 32)
    assert (p.ql, p.kvl, p.sharing, p.fl) == (2, 1, 4, 896)
    assert [p.context(r) for r in range(4)] == [(0, 2048), (2048, 4096), (4096, 6144), (6144, 8192)]
    assert [p.holds_new_token(r) for r in range(8)] == [False, False, False, True] * 2
    assert p.kv_head(5) == 1
    q = Plan(PRESETS["llama3-8b"], "decode", 4, 1024, 4)
    assert (q.ql, q.kvl, q.sharing, q.kv_head(3, 1)) == (8, 2, 1, 7)


def test_spread_placement_takes_one_pe_of_every_cube_first():
    ids = Runtime("paper").pe_ids()
    assert choose_pes(ids, 4, "packed") == [0, 1, 2, 3]
    spread = choose_pes(ids, 33, "spread")
    assert [ids[i] for i in spread[:2]] == ["sip0.cube0.pe0", "sip0.cube1.pe0"]
    assert ids[spread[32]] == "sip0.cube0.pe1" and len(set(spread)) == 33


def test_balanced_routing_gives_every_expert_its_share_as_an_arithmetic_progression():
    tokens, experts, k = 64, 8, 2
    counts = [len(moe.expert_tokens(e, tokens, experts, k)) for e in range(experts)]
    assert counts == [tokens * k // experts] * experts
    for t in range(tokens):
        assert all(t in moe.expert_tokens(e, tokens, experts, k) for e in moe.chosen(t, experts, k))


def test_the_rotation_matrix_is_rotate_half():
    x = np.arange(8, dtype=np.float32)[None, :]
    assert (x @ rotation(8)).tolist() == [[-4, -5, -6, -7, 0, 1, 2, 3]]
