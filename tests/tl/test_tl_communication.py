"""``tl`` communication's holes (issue 25, item 4): a receive of a negative or fractional shape, a
destination that is not an int, a message landing in a receive of another shape, two kernels on
one PE, and one program using another's handle are each one clear error naming where."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import kernbench.tl as tl
from kernbench.cli import main
from kernbench.errors import KernelError
from kernbench.runtime.api import Runtime
from kernbench.tl import communication

HERE = __file__


@pytest.fixture
def rt(cube1):
    return Runtime(cube1)


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_the_package_face_hands_on_the_communication_room():
    assert (tl.send, tl.recv_async, tl.wait) == (communication.send, communication.recv_async, communication.wait)
    assert {"send", "recv_async", "wait"} <= set(tl.__all__)


@pytest.mark.parametrize(
    "shape, match",
    [
        ((-4, 4), r"TypeError|ValueError: tl\.recv_async: shape \(-4, 4\): every size must be at least 1, not -4"),
        ((0,), r"shape \(0,\): every size must be at least 1, not 0"),
        ((2.5, 4), r"TypeError: tl\.recv_async: shape \(2\.5, 4\): every size must be an int, not 2\.5"),
        ((True, 4), r"every size must be an int, not True"),
        (4, r"TypeError: tl\.recv_async: shape must be a non-empty tuple of positive ints, not 4"),
        ((), r"shape must be a non-empty tuple of positive ints, not \(\)"),
    ],
)
def test_a_receive_of_a_shape_with_no_bytes_is_refused_at_its_line(rt, shape, match):
    def k():
        if tl.program_id() == 1:
            tl.recv_async(0, shape, np.float16)

    rt.launch(k, pes=[0, 1])
    with pytest.raises(KernelError, match=match) as info:
        rt.run()
    assert "sip0.cube0.pe1 (program 1)" in str(info.value)
    assert f"{HERE}:{_line_of(k, 'tl.recv_async(0, shape')}" in str(info.value)


def test_a_refused_negative_receive_frees_no_scratch_it_never_held(rt):
    seen = {}

    def k():
        ctx = tl.context.current()
        try:
            tl.recv_async(0, (-1024, 1024), np.float32)
        except ValueError:
            pass
        seen["used"] = ctx.scratch_used

    rt.launch(k, pes=[0])
    rt.run()
    assert seen["used"] == 0


@pytest.mark.parametrize(
    "dst, match",
    [
        (1.5, r"TypeError: tl\.send: destination must be a program id \(an int in 0\.\.1\), not 1\.5"),
        ("1", r"TypeError: tl\.send: destination must be a program id .*not '1'"),
        (None, r"not None"),
        (True, r"not True"),
        (2, r"ValueError: tl\.send: destination 2 is not a program of this launch \(0\.\.1\)"),
        (-1, r"destination -1 is not a program"),
    ],
)
def test_a_destination_that_is_not_a_program_is_a_clear_error_at_the_send(rt, dst, match):
    x = rt.deploy(np.ones((4, 4), np.float16), pe=0)

    def k(x):
        if tl.program_id() == 0:
            tl.send(dst, tl.load(x))

    rt.launch(k, pes=[0, 1], args=(x,))
    with pytest.raises(KernelError, match=match) as info:
        rt.run()
    msg = str(info.value)
    assert "sip0.cube0.pe0 (program 0)" in msg and "KeyError" not in msg
    assert f"{HERE}:{_line_of(k, 'tl.send(dst')}" in msg


def test_a_source_that_is_not_an_int_is_a_type_error(rt):
    def k():
        tl.recv_async(0.0, (4,))

    rt.launch(k, pes=[0, 1])
    with pytest.raises(KernelError, match=r"TypeError: tl\.recv_async: source must be a program id .*not 0\.0"):
        rt.run()


def test_numpy_integers_are_program_ids(rt):
    x = rt.deploy(np.arange(16, dtype=np.float16).reshape(4, 4), pe=0)
    out = rt.empty((4, 4), np.float16, pe=1)

    def k(x, out):
        if tl.program_id() == 0:
            tl.send(np.int64(1), tl.load(x))
        else:
            tl.store(out, tl.wait(tl.recv_async(np.int32(0), (np.int64(4), 4), np.float16)))

    rt.launch(k, pes=[0, 1], args=(x, out))
    rt.run()
    np.testing.assert_array_equal(rt.read(out), np.arange(16).reshape(4, 4))


def test_a_message_in_a_receive_of_another_shape_names_both_pes_both_shapes_and_the_receive_line(rt):
    x = rt.deploy(np.ones((4, 4), np.float16), pe=0)

    def k(x):
        if tl.program_id() == 0:
            tl.send(1, tl.load(x))
        else:
            fut = tl.recv_async(0, (2, 8), np.float16)
            tl.cycles(10)
            tl.wait(fut)

    rt.launch(k, pes=[0, 1], args=(x,))
    with pytest.raises(KernelError) as info:
        rt.run()
    msg = str(info.value)
    assert msg.startswith(
        "sip0.cube0.pe1 (program 1): a message of float16 (4, 4) from sip0.cube0.pe0 (program 0) "
        "landed in h0:recv from 0, a receive of float16 (2, 8)"
    )
    assert f"{HERE}:{_line_of(k, 'fut = tl.recv_async')} in k" in msg and "fut = tl.recv_async(0, (2, 8), np.float16)" in msg


def test_a_message_that_arrives_before_its_mismatched_receive_is_posted_is_caught_too(rt):
    x = rt.deploy(np.ones((8,), np.float32), pe=0)

    def k(x):
        if tl.program_id() == 0:
            tl.send(1, tl.load(x))
        else:
            tl.cycles(5000)  # the message is waiting by now
            tl.wait(tl.recv_async(0, (4,)))

    rt.launch(k, pes=[0, 1], args=(x,))
    with pytest.raises(KernelError, match=r"a message of float16 \(8,\) from sip0\.cube0\.pe0 .* a receive of float32 \(4,\)"):
        rt.run()


def test_a_receive_of_another_dtype_but_the_same_shape_is_cast(rt):
    x = rt.deploy(np.full((4,), 1.5, np.float16), pe=0)
    out = rt.empty((4,), np.float32, pe=1)

    def k(x, out):
        if tl.program_id() == 0:
            tl.send(1, tl.load(x))
        else:
            tl.store(out, tl.wait(tl.recv_async(0, (4,), np.float32)))

    rt.launch(k, pes=[0, 1], args=(x, out))
    rt.run()
    np.testing.assert_array_equal(rt.read(out), np.full(4, 1.5, np.float32))


def _copy(x):
    tl.store(x, tl.load(x))


def test_launching_a_second_kernel_on_a_pe_is_refused_at_the_launch_naming_the_pe(rt):
    x = rt.deploy(np.ones((4, 4), np.float16), pe=0)
    rt.launch(_copy, pes=[0, 1], args=(x,))
    with pytest.raises(
        ValueError, match=r"launch: sip0\.cube0\.pe1 already runs _copy \(launch 0 of this run\); a PE runs one kernel per run"
    ):
        rt.launch(_copy, pes=[1, 2], args=(x,))
    rt.launch(_copy, pes=[2, 3], args=(x,))  # other PEs are free
    assert rt.launched == 2
    rt.run()


def test_a_pe_twice_in_one_launch_is_named(rt):
    with pytest.raises(ValueError, match=r"launch: sip0\.cube0\.pe2 appears twice in pes"):
        rt.launch(_copy, pes=[2, 0, "sip0.cube0.pe2"], args=(rt.deploy(np.ones(4)),))


def test_a_kernel_file_launching_twice_on_a_pe_is_one_error_line(tmp_path, capsys):
    path = tmp_path / "twice.py"
    path.write_text(
        "import numpy as np\n"
        "from kernbench import tl\n"
        "from kernbench import kernel\n\n"
        "def copy(x):\n"
        "    tl.store(x, tl.load(x))\n\n"
        "@kernel()\n"
        "def twice(rt):\n"
        "    x = rt.deploy(np.ones((4, 4)), pe=0)\n"
        "    rt.launch(copy, pes=[0], args=(x,))\n"
        "    rt.launch(copy, pes=[0], args=(x,))\n"
    )
    code = main(["run", str(path), "--topology", "cube1"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "sip0.cube0.pe0 already runs copy (launch 0 of this run)" in err and f"{path}:12" in err


def test_a_handle_of_one_program_used_by_another_names_both_programs_and_the_line(rt):
    x = rt.deploy(np.ones((4, 4), np.float16), pe=0)
    box = {}

    def k(x):
        if tl.program_id() == 0:
            box["h"] = tl.load(x)
            tl.cycles(1000)
        else:
            tl.cycles(100)
            tl.store(x, tl.add(box["h"], box["h"]))

    rt.launch(k, pes=[0, 1], args=(x,))
    with pytest.raises(KernelError) as info:
        rt.run()
    msg = str(info.value)
    assert msg.startswith("sip0.cube0.pe1 (program 1): ValueError: h0:load ")
    assert "is a TCM handle of program 0 (sip0.cube0.pe0), used by program 1 (sip0.cube0.pe1)" in msg
    assert f"{HERE}:{_line_of(k, 'tl.store(x, tl.add')}" in msg


@pytest.mark.parametrize("use", ["send", "wait", "store", "numpy"])
def test_every_way_of_using_another_programs_handle_is_caught(rt, use):
    x = rt.deploy(np.ones((4,), np.float32), pe=0)
    box = {}

    def k(x):
        if tl.program_id() == 0:
            box["h"] = tl.recv_async(1, (4,)) if use == "wait" else tl.load(x)
            tl.cycles(5000)
        else:
            tl.wait(tl.load(x))  # (program 0 has made its handle by the time this lands)
            if use == "send":
                tl.send(0, box["h"])
            elif use == "wait":
                tl.wait(box["h"])
            elif use == "numpy":
                box["h"].numpy()  # (the handle's own context would wait for it: in the wrong kernel)
            else:
                tl.store(x, box["h"])

    rt.launch(k, pes=[0, 1], args=(x,))
    with pytest.raises(KernelError, match=r"sip0\.cube0\.pe1 \(program 1\): ValueError: h0:.* is a TCM handle of program 0"):
        rt.run()


def test_a_handle_kept_from_an_earlier_run_is_refused(rt):
    x = rt.deploy(np.ones((4,), np.float32), pe=0)
    box = {}

    def keep(x):
        box["h"] = tl.load(x)

    def reuse(x):
        tl.store(x, box["h"])

    rt.launch(keep, pes=[0], args=(x,))
    rt.run()
    rt.launch(reuse, pes=[0], args=(x,))
    with pytest.raises(KernelError, match="is a TCM handle of an earlier run of this program"):
        rt.run()


def test_the_json_record_of_a_good_exchange_is_unchanged_by_the_checks(capsys):
    # the shipped all-reduce passes every check above on every message
    assert main(["run", "allreduce", "--payload", "8KiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["max_abs_err"] <= 0.02
