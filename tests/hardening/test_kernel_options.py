"""§4: kernel options are checked at the boundary, naming the flag; unknown kernels get a useful
did-you-mean; the Python API refuses what it cannot run and runs functools.partial kernels."""

from __future__ import annotations

import functools
import itertools
import math
import re

import numpy as np
import pytest
from hardening_harness import assert_failed_cleanly, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import Option, Runtime, cli, tl
from kernbench.errors import KernbenchError, KernelError, LostMessageError
from kernbench.kernels import registry
from kernbench.runtime import api

SPECS = registry.kernels()
INT_PARAMS = [(name, p) for name, spec in SPECS.items() for p in spec.params if p.type is int]


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simulated although an option was out of range")

    monkeypatch.setattr(api, "simulate", refuse)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(INT_PARAMS), data=st.data())
def test_an_option_out_of_its_range_names_the_flag_and_runs_nothing(capsys, no_simulation, case, data):
    kernel, param = case
    value = data.draw(st.one_of(st.integers(-(10**12), int(param.low) - 1), st.integers(int(param.high) + 1, 10**12)))
    got = invoke(cli.main, ["run", kernel, param.flag, str(value)], capsys, trace_memory=False)
    assert_failed_cleanly(got, 2, rf"{kernel}: .*{re.escape(param.flag)} {value}: must be in", max_seconds=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(INT_PARAMS), text=st.sampled_from(["abc", "1.5", "1e3", "", "0x10", "--", "nan"]))
def test_an_option_that_is_not_a_number_is_one_line_naming_the_flag(capsys, no_simulation, case, text):
    kernel, param = case
    got = invoke(cli.main, ["run", kernel, param.flag, text], capsys, trace_memory=False)
    assert_failed_cleanly(got, 2, rf"kernbench run {kernel}: (argument {re.escape(param.flag)}|.*expected one argument)", max_seconds=5)
    assert "usage:" not in got.err


GEMM_RULES = [
    (["--m", "256", "--pes", "3"], r"--m 256 must divide by --pes 3"),
    (["--k", "512", "--tile-k", "100"], r"--k 512 must divide by --tile-k 100"),
    (["--m", "8192", "--k", "8192", "--n", "8192"], r"the inputs take .* MiB .* at most 256 MiB"),
    (["--pes", "64", "--m", "64"], r"--pes 64: the topology has 8 PEs"),
]
GQA_RULES = [
    (["--heads", "10", "--kv-heads", "3"], r"--heads 10 must be a multiple of --kv-heads 3"),
    (["--kv-heads", "16", "--heads", "16", "--topology", "cube1"], r"--kv-heads × --pes-per-head = 16 PEs, but the topology has 8"),
    (["--context", "1048576", "--kv-heads", "8"], r"at most 67,108,864"),
    (["--variant", "opt9"], r"--variant 'opt9': choose one of primitive, opt3, opt2"),
]


@pytest.mark.parametrize(
    "kernel, argv, cause", [("gemm-primitive", a, c) for a, c in GEMM_RULES] + [("gqa-decode", a, c) for a, c in GQA_RULES]
)
def test_rules_between_options_are_named_before_any_tensor_is_made(capsys, kernel, argv, cause):
    got = invoke(cli.main, ["run", kernel, *argv], capsys)
    assert_failed_cleanly(got, 2, cause, max_seconds=8, max_mib=50)


IDLE = [
    (
        "gemm-composite",
        ["--layout", "naive", "--tile-k", "64"],
        r"--tile-k does nothing with --layout naive \(it is used only with --layout tiled\)",
    ),
    (
        "gemm-tiled",
        ["--layout", "naive", "--tile-k", "128"],
        r"--tile-k does nothing with --form composite --layout naive \(it is used only with --form primitive or --layout tiled\)",
    ),
    ("allreduce", ["--algo", "tree", "--grid", "3x2"], r"--grid does nothing with --algo tree \(it is used only with --algo 2d\)"),
]


@pytest.mark.parametrize("kernel, argv, cause", IDLE, ids=[k for k, _a, _c in IDLE])
def test_an_option_that_does_nothing_with_the_others_is_refused_by_name(capsys, no_simulation, kernel, argv, cause):
    got = invoke(cli.main, ["run", kernel, *argv], capsys, trace_memory=False)
    assert_failed_cleanly(got, 2, rf"^error: {kernel}: {cause}: leave it out\n$", max_seconds=5)


#: every shipped option that does something only with some settings of others, with each combination of those
IDLE_CASES = [
    (name, p, dict(zip(names, values, strict=True)))
    for name, spec in SPECS.items()
    for p in spec.params
    if p.only_with
    for names in [sorted({other for other, _v in p.only_with})]
    for values in itertools.product(*(next(o for o in spec.params if o.name == n).choices for n in names))
]


@pytest.mark.parametrize("kernel, option, settings_", IDLE_CASES, ids=[f"{k}-{o.name}-{s}" for k, o, s in IDLE_CASES])
def test_an_option_is_refused_exactly_where_it_does_nothing(kernel, option, settings_):
    from kernbench.commands.run import check_run

    argv = [a for n, v in settings_.items() for a in (f"--{n.replace('_', '-')}", str(v))] + [option.flag, str(option.default)]
    used = any(settings_.get(n) == v for n, v in option.only_with)
    if used:
        check_run(kernel, argv)  # given with a setting it is used with: accepted
    else:
        with pytest.raises(KernbenchError, match=rf"{re.escape(option.flag)} does nothing with"):
            check_run(kernel, argv)
    check_run(kernel, argv[:-2])  # and the same settings without it are a run as ever


def test_a_rule_of_an_option_that_does_nothing_is_not_applied():
    from kernbench.commands.run import check_run

    check_run("gemm-composite", ["--layout", "naive", "--k", "200"])  # no K-chunks, so K need not divide by --tile-k
    check_run("gemm-tiled", ["--layout", "naive", "--k", "1000"])
    with pytest.raises(KernbenchError, match="--k 200 must divide by --tile-k 128"):
        check_run("gemm-primitive", ["--layout", "naive", "--k", "200"])


def test_integer_ranges_read_as_integers_in_help_and_errors(capsys):
    from kernbench.commands.run import option_help

    seed = Option("seed", int, 0, "random seed", low=0, high=2**32 - 1)
    assert seed.range_text() == "0..4,294,967,295" and Option("n", int, 8, "n", low=1, high=4096).range_text() == "1..4096"
    assert seed.problem(2**32) == "--seed 4294967296: must be in 0..4,294,967,295"
    assert Option("x", float, 0.5, "x", low=-10, high=1e6).range_text() == "-10..1e+06"
    for name, spec in SPECS.items():
        with pytest.raises(SystemExit):
            cli.main(["run", name, "--help"])
        shown = " ".join(capsys.readouterr().out.split())  # (argparse wraps the help lines)
        for p in (p for p in spec.params if p.type is int):
            tail = option_help(p)[len(p.help) + 1 :]
            assert re.fullmatch(r"\(default: [\d,]+; [\d,]+\.\.[\d,]+(; only with .*)?\)", tail), (name, p.name, tail)
            assert " ".join(option_help(p).split()) in shown, (name, p.name)


NAMES = sorted(SPECS)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(NAMES), how=st.sampled_from(["upper", "prefix", "part", "typo", "underscore"]), cut=st.integers(1, 8))
def test_an_unknown_kernel_gets_the_names_it_may_have_meant(capsys, no_simulation, name, how, cut):
    if how == "upper":
        wrong = name.upper()
    elif how == "prefix":
        wrong = name[: max(2, len(name) - cut)]
    elif how == "part":
        wrong = name.split("-")[-1] if "-" in name else name[1:]
    elif how == "typo":
        wrong = name[:-1] + ("x" if name[-1] != "x" else "y")
    else:
        wrong = name.replace("-", "_").upper()
    got = invoke(cli.main, ["run", wrong], capsys, trace_memory=False)
    assert_failed_cleanly(got, 2, rf"unknown kernel '{re.escape(wrong)}' \(did you mean [^)]*'{name}'", max_seconds=3)


# --- the Python API ----------------------------------------------------------


def gen_kernel():
    yield tl.program_id()


async def async_kernel():
    tl.program_id()


def returns_a_generator():
    return (tl.cycles(1) for _ in range(3))


@pytest.mark.parametrize("kernel", [gen_kernel, async_kernel, functools.partial(gen_kernel), 42])
def test_a_kernel_that_cannot_run_is_refused_at_launch(kernel):
    rt = Runtime("cube1")
    with pytest.raises(TypeError, match=r"generator or async|must be a function"):
        rt.launch(kernel, pes=[0])


def test_a_kernel_returning_a_generator_is_an_error_naming_it():
    rt = Runtime("cube1")
    rt.launch(returns_a_generator, pes=[0])
    with pytest.raises(KernelError, match="returned a generator"):
        rt.run()


@pytest.mark.parametrize("pes", [[], (), range(0)])
def test_an_empty_launch_is_refused(pes):
    with pytest.raises(ValueError, match="launch on no PE"):
        Runtime("cube1").launch(lambda: None, pes=pes)


def scale_into(x, out, factor):
    tl.store(out, tl.scale(tl.load(x), factor))


@settings(max_examples=10, deadline=None)
@given(factor=st.floats(-4, 4, allow_nan=False))
def test_a_functools_partial_kernel_runs_and_its_errors_name_the_kernel_line(factor):
    rt = Runtime("cube1")
    x = rt.deploy(np.ones((8, 8), np.float16), pe=0)
    out = rt.empty((8, 8), pe=0)
    rt.launch(functools.partial(scale_into, factor=factor), pes=[0], args=(x, out))
    assert rt.run().latency_ns > 0
    assert rt.read(out)[0, 0] == np.float16(factor)
    rt.launch(functools.partial(scale_into, factor="x"), pes=[0], args=(x, out))
    with pytest.raises(KernelError, match=r"test_kernel_options\.py:\d+ in scale_into"):
        rt.run()


BAD_CYCLES = [-1000, -1e-9, math.nan, math.inf, -math.inf, 1e13, "3", None, True, [1]]


@pytest.mark.parametrize("n", BAD_CYCLES, ids=repr)
def test_tl_cycles_takes_a_number_of_cycles_and_nothing_else(n):
    def kernel():
        tl.cycles(n)

    rt = Runtime("cube1")
    rt.launch(kernel, pes=[0])
    with pytest.raises(KernelError, match=r"(?s)tl\.cycles: n must be a number of cycles in 0\.\.1e\+12.*in kernel"):
        rt.run()


@settings(max_examples=30, deadline=None)
@given(n=st.floats(0, 1e6) | st.integers(0, 10**6))
def test_tl_cycles_accepts_any_count_in_range(n):
    def kernel():
        tl.cycles(n)

    rt = Runtime("cube1")
    rt.launch(kernel, pes=[0])
    assert rt.run().latency_ns == pytest.approx(float(n), rel=1e-9, abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(sends=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)).filter(lambda p: p[0] != p[1]), min_size=1, max_size=4, unique=True))
def test_a_message_never_received_is_reported_naming_sender_receiver_and_message(sends):
    def kernel():
        me = tl.program_id()
        for src, dst in sends:
            if me == src:
                tl.send(dst, tl.full((2, 3), 1.0))

    rt = Runtime("cube1")
    rt.launch(kernel, pes=range(4))
    with pytest.raises(LostMessageError) as info:
        rt.run()
    msg = str(info.value)
    for src, dst in sends:
        assert f"sip0.cube0.pe{src} (program {src}) sent 1 message(s) to sip0.cube0.pe{dst} (program {dst})" in msg
    assert "float32 (2, 3)" in msg
