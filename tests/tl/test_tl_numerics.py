"""``tl`` numerics are real: every op equals its numpy reference (float32
arithmetic, float32 accumulation for dot, results in the operands' dtype),
stores cast to the destination dtype, composites compute what their OpSpecs
say, IPCQ carries values between PEs, program ids are the launch order."""

from __future__ import annotations

import numpy as np
import pytest
from kernelkit import f32, rng_array, run1

import kernbench.tl as tl
from kernbench.runtime.api import Runtime


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def _positive(shape, seed):
    return (np.abs(rng_array(shape, seed)) + 0.5).astype(np.float16)


BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_elementwise_op_equals_numpy_in_float32_cast_to_the_operand_dtype(rt, op):
    A, B = rng_array((32, 64), 1), _positive((32, 64), 2)
    out = rt.empty((32, 64), np.float16)

    def k(a, b, out):
        tl.store(out, getattr(tl, op)(tl.load(a), tl.load(b)))

    run1(rt, k, rt.deploy(A), rt.deploy(B), out, record=False)
    ref = BINARY[op](f32(A), f32(B)).astype(np.float16)
    np.testing.assert_array_equal(rt.read(out), ref)


UNARY = {
    "exp": (lambda x: tl.exp(x), lambda x: np.exp(f32(x)), (32, 64)),
    "copy": (lambda x: tl.copy(x), lambda x: f32(x), (32, 64)),
    "scale": (lambda x: tl.scale(x, 0.37), lambda x: f32(x) * np.float32(0.37), (32, 64)),
    "rowmax": (lambda x: tl.rowmax(x), lambda x: f32(x).max(axis=-1, keepdims=True), (32, 1)),
    "rowsum": (lambda x: tl.rowsum(x), lambda x: f32(x).sum(axis=-1, keepdims=True), (32, 1)),
    "max_all": (lambda x: tl.max(x), lambda x: f32(x).max(), ()),
    "sum_all": (lambda x: tl.sum(x), lambda x: f32(x).sum(), ()),
    "max_axis0": (lambda x: tl.max(x, axis=0), lambda x: f32(x).max(axis=0, keepdims=True), (1, 64)),
    "sum_axis1": (lambda x: tl.sum(x, axis=1), lambda x: f32(x).sum(axis=1, keepdims=True), (32, 1)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_and_reduction_op_equals_numpy(rt, name):
    op, ref_fn, out_shape = UNARY[name]
    A = rng_array((32, 64), 3)
    got = {}

    def k(a):
        got["v"] = op(tl.load(a)).numpy()

    run1(rt, k, rt.deploy(A), record=False)
    ref = np.asarray(ref_fn(A)).astype(np.float16)
    assert got["v"].dtype == np.float16
    assert got["v"].shape == np.asarray(ref_fn(A)).shape
    if out_shape:
        assert got["v"].shape == out_shape
    np.testing.assert_array_equal(got["v"], ref)


@pytest.mark.parametrize("op, ref_fn", [("mul_bcast", np.multiply), ("sub_bcast", np.subtract)])
def test_broadcast_ops_apply_a_column_along_each_row(rt, op, ref_fn):
    X, C = rng_array((32, 64), 4), rng_array((32, 1), 5)
    out = rt.empty((32, 64), np.float16)

    def k(x, c, out):
        tl.store(out, getattr(tl, op)(tl.load(x), tl.load(c)))

    run1(rt, k, rt.deploy(X), rt.deploy(C), out, record=False)
    np.testing.assert_array_equal(rt.read(out), ref_fn(f32(X), f32(C)).astype(np.float16))


def test_dot_accumulates_in_float32_and_returns_float32(rt):
    A, B = rng_array((64, 256), 6), rng_array((256, 32), 7)
    out = rt.empty((64, 32), np.float32)
    seen = {}

    def k(a, b, out):
        c = tl.dot(tl.load(a), tl.load(b))
        seen["dtype"] = c.dtype
        tl.store(out, c)

    run1(rt, k, rt.deploy(A), rt.deploy(B), out, record=False)
    assert seen["dtype"] == np.float32
    np.testing.assert_allclose(rt.read(out), f32(A) @ f32(B), rtol=1e-5, atol=1e-4)
    # a float16 accumulation would differ visibly on a 256-long inner dimension
    assert not np.allclose(rt.read(out), (A @ B).astype(np.float32), rtol=0, atol=1e-6)


def test_store_casts_to_the_destination_dtype(rt):
    A, B = rng_array((16, 64), 8), rng_array((64, 16), 9)
    o16, o32 = rt.empty((16, 16), np.float16), rt.empty((16, 16), np.float32)
    x32 = rt.empty((16, 64), np.float32)

    def k(a, b, o16, o32, x32):
        c = tl.dot(tl.load(a), tl.load(b))  # float32
        tl.store(o16, c)
        tl.store(o32, c)
        tl.store(x32, tl.load(a))  # float16 into float32

    run1(rt, k, rt.deploy(A), rt.deploy(B), o16, o32, x32, record=False)
    ref = f32(A) @ f32(B)
    assert rt.read(o16).dtype == np.float16
    np.testing.assert_array_equal(rt.read(o16), rt.read(o32).astype(np.float16))
    np.testing.assert_allclose(rt.read(o32), ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(rt.read(x32), f32(A))


def test_store_into_a_region_writes_only_that_region(rt):
    A = rng_array((8, 16), 10)
    out = rt.empty((16, 16), np.float16)

    def k(a, out):
        tl.store(out[8:16, :], tl.load(a))

    run1(rt, k, rt.deploy(A), out, record=False)
    got = rt.read(out)
    np.testing.assert_array_equal(got[8:], A)
    assert not got[:8].any()


def test_load_of_a_region_reads_exactly_that_region(rt):
    A = rng_array((64, 64), 11)
    got = {}

    def k(a):
        got["v"] = tl.load(a[16:32, 8:40]).numpy()

    run1(rt, k, rt.deploy(A), record=False)
    np.testing.assert_array_equal(got["v"], A[16:32, 8:40])


def test_full_and_zeros_make_tcm_tensors_without_a_command(rt):
    got = {}

    def k():
        got["z"] = tl.zeros((4, 8)).numpy()
        got["f"] = tl.full((2, 2), 3.5, np.float16).numpy()

    r = run1(rt, k, record=False)
    assert r.total_commands == 0
    np.testing.assert_array_equal(got["z"], np.zeros((4, 8), np.float32))
    assert got["f"].dtype == np.float16 and (got["f"] == 3.5).all()


# --- composites --------------------------------------------------------------


def test_gemm_composite_with_a_streamed_tl_ref_operand_equals_numpy(rt):
    A, B = rng_array((64, 256), 12), rng_array((256, 512), 13)  # B: 256 KiB, several tiles
    out = rt.empty((64, 512), np.float32)

    def k(a, b, out):
        x = tl.load(a)
        o = tl.zeros((64, 512))
        tl.composite([tl.OpSpec("gemm", {"a": x, "b": tl.ref(b)}, o)], rw_handles=[o])
        tl.store(out, o)

    run1(rt, k, rt.deploy(A), rt.deploy(B), out, record=False)
    np.testing.assert_allclose(rt.read(out), f32(A) @ f32(B), rtol=1e-5, atol=1e-3)


def test_gemm_composite_transpose_b_and_accumulate(rt):
    Q, K, V = rng_array((32, 64), 14), rng_array((48, 64), 15), rng_array((48, 64), 16)
    out = rt.empty((32, 48), np.float32)

    def k(q, kk, v, out):
        s = tl.full((32, 48), 1.0)
        tl.composite(
            [tl.OpSpec("gemm", {"a": tl.load(q), "b": tl.ref(kk)}, s, extra={"transpose_b": True, "accumulate": True})], rw_handles=[s]
        )
        tl.composite(
            [tl.OpSpec("gemm", {"a": tl.load(q), "b": tl.ref(v)}, s, extra={"transpose_b": True, "accumulate": True})], rw_handles=[s]
        )
        tl.store(out, s)

    run1(rt, k, rt.deploy(Q), rt.deploy(K), rt.deploy(V), out, record=False)
    ref = 1.0 + f32(Q) @ f32(K).T + f32(Q) @ f32(V).T
    np.testing.assert_allclose(rt.read(out), ref, rtol=1e-5, atol=1e-3)


def test_softmax_recipe_composite_equals_numpy(rt):
    X = rng_array((32, 64), 17)
    out = rt.empty((32, 64), np.float32)

    def k(x, out):
        t, m, s = tl.zeros((32, 64)), tl.zeros((32, 1)), tl.zeros((32, 1))
        tl.composite(
            [
                tl.OpSpec("scale", {"x": tl.ref(x)}, t, extra={"factor": 0.5}),
                tl.OpSpec("rowmax", {"x": t}, m),
                tl.OpSpec("sub_bcast", {"a": t, "b": m}, t),
                tl.OpSpec("exp", {"x": t}, t),
                tl.OpSpec("rowsum", {"x": t}, s),
                tl.OpSpec("div_bcast", {"a": t, "b": s}, t),
            ],
            rw_handles=[t],
        )
        tl.store(out, t)

    run1(rt, k, rt.deploy(X), out, record=False)
    z = f32(X) * 0.5
    e = np.exp(z - z.max(axis=1, keepdims=True))
    np.testing.assert_allclose(rt.read(out), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_a_gemm_composite_writes_its_hbm_out_once_it_is_final(rt):
    A, B = rng_array((64, 128), 18), rng_array((128, 512), 23)  # B 128 KiB f16 -> 4 K-steps
    out = rt.empty((64, 512), np.float16)

    def k(a, b, out):
        tl.composite([tl.OpSpec("gemm", {"a": tl.load(a), "b": tl.ref(b)}, tl.ref(out))])

    rt.launch(k, pes=[0], args=(rt.deploy(A), rt.deploy(B), out))
    r = rt.run(record=True)
    np.testing.assert_array_equal(rt.read(out), (f32(A) @ f32(B)).astype(np.float16))
    busy = [e for e in r.events if e.kind.name == "ENGINE_BUSY"]
    (write,) = [e for e in busy if e.component.endswith("dma.wr")]  # every K-step adds into all of C
    assert write.value == out.nbytes
    assert write.t_ns >= max(e.end_ns for e in busy if e.component.endswith(".gemm"))


def test_an_elementwise_composite_writes_its_hbm_out_back_step_by_step(rt):
    X = rng_array((128, 512), 24)  # 128 KiB f16 -> 4 steps of 32 rows, each final once computed
    out = rt.empty((128, 512), np.float16)

    def k(x, out):
        tl.composite([tl.OpSpec("exp", {"x": tl.ref(x)}, tl.ref(out))])

    rt.launch(k, pes=[0], args=(rt.deploy(X), out))
    r = rt.run(record=True)
    np.testing.assert_allclose(rt.read(out), np.exp(f32(X)).astype(np.float16), rtol=1e-3)
    writes = [e for e in r.events if e.kind.name == "ENGINE_BUSY" and e.component.endswith("dma.wr")]
    assert len(writes) == 4 and all(e.label.startswith(f"tile {i} ") for i, e in enumerate(writes))
    assert [e.value for e in writes] == [out.nbytes // 4] * 4


def test_composite_result_is_cast_to_the_out_handle_dtype(rt):
    A = rng_array((16, 16), 19)
    got = {}

    def k(a):
        o = tl.zeros((16, 16), np.float16)
        tl.composite([tl.OpSpec("exp", {"x": tl.load(a)}, o)], rw_handles=[o])
        got["v"] = o.numpy()

    run1(rt, k, rt.deploy(A), record=False)
    assert got["v"].dtype == np.float16
    np.testing.assert_array_equal(got["v"], np.exp(f32(A)).astype(np.float16))


# --- IPCQ and program ids ------------------------------------------------------


def test_program_id_and_num_programs_follow_the_launch_order(rt):
    out = rt.empty((4, 2), np.float32)

    def k(out):
        row = tl.full((1, 2), 0.0)
        row = tl.add(row, tl.full((1, 2), float(tl.program_id())))
        row = tl.add(row, tl.full((1, 2), 0.0))
        v = tl.full((1, 2), float(tl.num_programs()))
        tl.store(out[tl.program_id() : tl.program_id() + 1, :], tl.maximum(row, tl.sub(row, v)))
        tl.store(out[tl.program_id() : tl.program_id() + 1, 1:2], tl.full((1, 1), float(tl.num_programs())))

    rt.launch(k, pes=[3, 0, 2, 1], args=(out,))
    rt.run()
    np.testing.assert_array_equal(rt.read(out), np.array([[0, 4], [1, 4], [2, 4], [3, 4]], np.float32))


def test_send_and_recv_carry_a_tensor_between_two_pes(rt):
    A = rng_array((64, 128), 20)
    out = rt.empty((64, 128), np.float16)

    def pingpong(a, out):
        x = tl.load(a)
        if tl.program_id() == 0:
            tl.send(1, x)
            y = tl.wait(tl.recv_async(1, (64, 128), np.float16))
            tl.store(out, y)
        else:
            y = tl.wait(tl.recv_async(0, (64, 128), np.float16))
            tl.send(0, tl.add(y, x))

    rt.launch(pingpong, pes=[0, 1], args=(rt.deploy(A), out))
    r = rt.run(record=True)
    np.testing.assert_array_equal(rt.read(out), (f32(A) + f32(A)).astype(np.float16))
    assert r.engine_busy_ns["sip0.cube0.pe0"]["ipcq"] > 0 and r.engine_busy_ns["sip0.cube0.pe1"]["ipcq"] > 0


def test_a_ring_of_four_pes_passes_each_value_to_its_neighbour(rt):
    out = rt.empty((4, 8), np.float32)

    def ring(out):
        me, n = tl.program_id(), tl.num_programs()
        tl.send((me + 1) % n, tl.full((1, 8), float(me)))
        got = tl.wait(tl.recv_async((me - 1) % n, (1, 8), np.float32))
        tl.store(out[me : me + 1, :], got)

    rt.launch(ring, pes=[0, 1, 2, 3], args=(out,))
    rt.run()
    np.testing.assert_array_equal(rt.read(out)[:, 0], [3, 0, 1, 2])


def test_messages_between_the_same_pair_arrive_in_send_order(rt):
    out = rt.empty((3, 4), np.float32)

    def k(out):
        if tl.program_id() == 0:
            for v in (1.0, 2.0, 3.0):
                tl.send(1, tl.full((1, 4), v))
        else:
            fs = [tl.recv_async(0, (1, 4)) for _ in range(3)]
            for i, f in enumerate(fs):
                tl.store(out[i : i + 1, :], tl.wait(f))

    rt.launch(k, pes=[0, 1], args=(out,))
    rt.run()
    np.testing.assert_array_equal(rt.read(out)[:, 0], [1, 2, 3])


def test_numerics_do_not_depend_on_timing(cube1):
    A, B = rng_array((64, 64), 21), rng_array((64, 64), 22)
    results = []
    for over in ([], ["pe.attrs.gemm_tflops=0.5", "pe.attrs.pe_cost_model.byte_cycles_recip=4"]):
        rt = Runtime("cube1", overrides=over) if over else Runtime(cube1)
        out = rt.empty((64, 64), np.float32)

        def k(a, b, out):
            tl.store(out, tl.exp(tl.scale(tl.dot(tl.load(a), tl.load(b)), 0.01)))

        r = run1(rt, k, rt.deploy(A), rt.deploy(B), out, record=False)
        results.append((r.latency_ns, rt.read(out)))
    assert results[0][0] != results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])
