"""A tensor deployed without name= is named after the kernel parameter it is passed as (docs/output.md, "Tensor names")."""

from __future__ import annotations

import functools

import numpy as np

from kernbench import Runtime, tl


def copy_rows(xs, outs, scale, *, extra=None):
    me = tl.program_id()
    tl.store(outs[me], tl.load(xs[me]))


def test_a_tensor_takes_the_name_of_the_parameter_it_is_passed_as():
    rt = Runtime("cube1")
    xs = [rt.deploy(np.ones((2, 64)), pe=i) for i in range(2)]
    outs = [rt.empty((2, 64), pe=i) for i in range(2)]
    named = rt.deploy(np.ones((2, 64)), name="kept")
    table = {"q": rt.deploy(np.ones((2, 64)))}
    assert [t.name for t in xs] == ["t1", "t2"]  # until it is launched, its deploy-time name
    rt.launch(copy_rows, pes=[0, 1], args=(xs, outs, 1.0), extra={"w": named, "table": table})
    assert [t.name for t in xs] == ["xs[0]", "xs[1]"] and [t.name for t in outs] == ["outs[0]", "outs[1]"]
    assert named.name == "kept"  # a name given at deploy is kept
    assert table["q"].name == "extra['table']['q']"
    rt.run()


def test_the_first_launch_names_it_and_a_partial_binds_like_a_call():
    rt = Runtime("cube1")
    x, out = rt.deploy(np.ones((2, 64))), rt.empty((2, 64))
    rt.launch(functools.partial(copy_rows, [x]), pes=[0], args=([out], 2.0))
    assert x.name == "xs[0]" and out.name == "outs[0]"
    rt.launch(copy_rows, pes=[1], args=([out], [x], 2.0))  # passed as another parameter: still its first name
    assert x.name == "xs[0]" and out.name == "outs[0]"


def test_arguments_that_do_not_fit_the_signature_leave_the_names_alone():
    rt = Runtime("cube1")
    x = rt.deploy(np.ones((2, 64)))
    rt.launch(copy_rows, pes=[0], args=(x,))  # too few: the run says so, at the kernel
    assert x.name == "t1"


def test_the_name_reaches_what_the_tools_show():
    def double(src, dst):
        tl.store(dst, tl.add(tl.load(src), tl.load(src)))

    rt = Runtime("cube1")
    rt.launch(double, pes=[0], args=(rt.deploy(np.ones((4, 64))), rt.empty((4, 64))))
    labels = {e.label for e in rt.run(record=True).events if getattr(e, "label", None)}
    assert {"h0:load src[:]", "h1:load src[:]"} <= labels  # the loads, as the debugger and --explain show them
    assert not any("t1" in label for label in labels)
