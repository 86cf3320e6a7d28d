"""Bad kernels get clear errors: the PE and the kernel's own file:line for an
exception, who waits on what for a deadlock (never a hang), the line that
overflowed scratch, the shapes that do not fit, and ``tl`` outside a kernel."""

from __future__ import annotations

import numpy as np
import pytest

import kernbench.tl as tl
from kernbench.errors import DeadlockError, KernelError
from kernbench.runtime.api import Runtime

HERE = __file__


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def _line_of(fn, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_kernel_exception_is_a_kernel_error_naming_the_pe_and_the_kernel_line(rt):
    def k(a):
        x = tl.load(a)
        tl.add(x, x)
        raise RuntimeError("boom in the kernel")

    rt.launch(k, pes=[0, 1], args=(rt.deploy(np.ones((4, 4))),))
    with pytest.raises(KernelError) as info:
        rt.run()
    msg = str(info.value)
    assert "sip0.cube0.pe0" in msg and "RuntimeError: boom in the kernel" in msg
    assert f"{HERE}:{_line_of(k, 'raise RuntimeError')}" in msg
    assert 'raise RuntimeError("boom in the kernel")' in msg


def test_an_error_raised_inside_tl_points_at_the_kernel_line_that_called_it(rt):
    def k(a, b):
        x, y = tl.load(a), tl.load(b)
        tl.dot(x, y)

    rt.launch(k, pes=[1], args=(rt.deploy(np.ones((8, 16))), rt.deploy(np.ones((8, 16)))))
    with pytest.raises(KernelError) as info:
        rt.run()
    msg = str(info.value)
    assert "sip0.cube0.pe1" in msg and "inner dimensions differ" in msg and "(8, 16) @ (8, 16)" in msg
    assert f"{HERE}:{_line_of(k, 'tl.dot(x, y)')}" in msg


def test_an_error_in_a_helper_names_the_deepest_kernel_file_line(rt):
    def helper(x):
        return tl.store(x, x)  # wrong argument order

    def k(a):
        helper(tl.load(a))

    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((4, 4))),))
    with pytest.raises(KernelError, match=rf"{HERE}:{_line_of(helper, 'tl.store(x, x)')}"):
        rt.run()


@pytest.mark.parametrize(
    "body, match",
    [
        (lambda a, b: tl.store(b, tl.load(a)), r"value shape \(4, 4\) does not match .*\(8, 4\)"),
        (lambda a, b: tl.load(a, shape=(2, 2)), r"has shape \(4, 4\), not \(2, 2\)"),
        (lambda a, b: tl.load(a, dtype=np.float32), "has dtype float16, not float32"),
        (lambda a, b: tl.add(tl.load(a), tl.load(b)), "operands could not be broadcast|shape"),
        (lambda a, b: tl.exp(tl.ref(a)), "only tl.composite can stream it"),
        (lambda a, b: tl.exp(np.ones((4, 4))), "expected a TensorHandle"),
        (lambda a, b: tl.composite([tl.OpSpec("rowsum", {"x": tl.load(b)}, tl.zeros((4, 4)))]), r"result shape \(8, 1\) does not fit out"),
        (
            lambda a, b: tl.composite([tl.OpSpec("gemmm", {"a": tl.load(a)}, tl.zeros((4, 4)))]),
            "unknown op kind 'gemmm'.*did you mean 'gemm'",
        ),
        (lambda a, b: tl.composite([]), "at least one OpSpec"),
        # operands are taken by position: a misnamed, missing or extra one is an error, not a silent misreading
        (
            lambda a, b: tl.composite([tl.OpSpec("sub", {"b": tl.load(a), "a": tl.load(a)})]),
            "operands must be named a, b, in that order; got b, a",
        ),
        (lambda a, b: tl.composite([tl.OpSpec("add", {"a": tl.load(a)})]), r"operands must be named a, b, in that order; got a\s"),
        (
            lambda a, b: tl.composite([tl.OpSpec("gemm", {"a": tl.load(a), "b": tl.load(a), "c": tl.load(a)})]),
            "named a, b, in that order; got a, b, c",
        ),
        (lambda a, b: tl.composite([tl.OpSpec("exp", {})]), "operands must be named x, in that order; got none"),
        (lambda a, b: tl.send(5, tl.load(a)), "destination 5 is not a program"),
    ],
)
def test_wrong_shapes_and_arguments_are_kernel_errors_saying_what_does_not_fit(rt, body, match):
    def k(a, b):
        body(a, b)

    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((4, 4))), rt.deploy(np.ones((8, 4)))))
    with pytest.raises(KernelError, match=match):
        rt.run()


def test_recv_with_no_sender_is_a_deadlock_naming_the_blocked_pe_and_its_wait(rt):
    def k():
        if tl.program_id() == 0:
            tl.wait(tl.recv_async(1, (4, 4)))

    rt.launch(k, pes=[0, 1])
    with pytest.raises(DeadlockError) as info:
        rt.run()
    msg = str(info.value)
    assert "sip0.cube0.pe0 (program 0) waits on recv wait: h0:recv from 1" in msg
    assert "pe1 (program 1) waits" not in msg
    assert "sip0.cube0.pe0 (program 0) posted 1 receive(s) from sip0.cube0.pe1 (program 1) that no send matched" in msg


def test_a_cycle_of_waits_is_a_deadlock_listing_every_blocked_pe(rt):
    def k():
        me, n = tl.program_id(), tl.num_programs()
        got = tl.wait(tl.recv_async((me - 1) % n, (4, 4)))  # everyone waits first
        tl.send((me + 1) % n, got)

    rt.launch(k, pes=[0, 1, 2])
    with pytest.raises(DeadlockError) as info:
        rt.run()
    msg = str(info.value)
    line = k.__code__.co_firstlineno + 2  # the line each program waits at, in this file
    for me, src in [(0, 2), (1, 0), (2, 1)]:
        assert (
            f"sip0.cube0.pe{me} (program {me}) waits on recv wait: h0:recv from {src}\n"
            f"    at {__file__}:{line} in k\n"
            "      got = tl.wait(tl.recv_async((me - 1) % n, (4, 4)))  # everyone waits first\n"
        ) in msg


def test_a_deadlocked_pe_does_not_hide_the_others_finishing(rt):
    out = rt.empty((4, 4), np.float32)

    def k(out):
        if tl.program_id() == 0:
            tl.store(out, tl.full((4, 4), 1.0))
        else:
            tl.wait(tl.recv_async(0, (4, 4)))

    rt.launch(k, pes=[0, 1], args=(out,))
    with pytest.raises(DeadlockError) as info:
        rt.run()
    assert "pe1 (program 1)" in str(info.value) and "pe0 (program 0) waits" not in str(info.value)


def test_scratch_overflow_names_the_kernel_line_and_the_budget(rt):
    def k(a):
        tiles = []
        for _ in range(40):
            tiles.append(tl.load(a))  # 32 KiB each, all kept alive

    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((128, 128))),))
    with pytest.raises(KernelError) as info:
        rt.run()
    msg = str(info.value)
    assert "ScratchError" in msg and "TCM scratch exhausted" in msg and "1048576 B" in msg and "32768 B" in msg
    assert f"{HERE}:{_line_of(k, 'tiles.append')}" in msg


def test_the_scratch_budget_comes_from_the_topology():
    rt = Runtime("cube1", overrides=["pe.attrs.scratch_bytes=40000"])

    def k(a):
        x = tl.load(a)
        y = tl.load(a)
        return x, y

    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((128, 128))),))
    with pytest.raises(KernelError, match="of 40000 B"):
        rt.run()


@pytest.mark.parametrize(
    "call",
    [lambda: tl.program_id(), lambda: tl.zeros((2, 2)), lambda: tl.cycles(3), lambda: tl.num_programs()],
)
def test_tl_outside_a_kernel_is_a_clear_runtime_error(call):
    with pytest.raises(RuntimeError, match="only be called inside a kernel"):
        call()


def test_running_with_nothing_launched_or_a_pe_twice_is_a_clear_error(rt):
    with pytest.raises(ValueError, match="nothing launched"):
        rt.run()
    with pytest.raises(ValueError, match="appears twice"):
        rt.launch(lambda: None, pes=[0, 0])
    with pytest.raises(ValueError, match="out of range"):
        rt.launch(lambda: None, pes=[999])


def test_the_runtime_is_usable_after_a_failed_run(rt):
    def bad():
        raise ValueError("x")

    rt.launch(bad, pes=[0])
    with pytest.raises(KernelError):
        rt.run()
    rt.launch(lambda: tl.cycles(7), pes=[0])
    assert rt.run().latency_ns == 7
