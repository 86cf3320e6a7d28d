"""Round 3, the smaller holes (issue 25, item 6): each its failing case, now one clear error or the right result.

A ``%`` in ``Option(help=…)`` crashed ``--help``; ``--explain`` on a kernel
that only calls ``tl.cycles`` gave a traceback; a float Option passed NaN
(and the sweep died in the JSON encoder); ``@kernel(topology=5)`` gave a
traceback; a deeply nested expression made ``ast.parse`` raise uncaught
errors; ``kernbench new kernel $'x\\n'`` wrote ``x\\n.py``; ``kernbench run ""``
listed the kernels and exited 0; a trace whose header says ``end_ns`` 1e300
was accepted; ``rt.launch(print)`` "ran"; Ctrl-C in the first 0.15 s gave a
traceback; ``tl.full((60000, 60000))`` built a 14 GB array before the 1 MiB
scratch refused it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hardening_harness import child_env, invoke, spawn

from kernbench import cli
from kernbench.errors import TraceFormatError

HEAD = "import numpy as np\nfrom kernbench import Option, kernel, tl\n\n"
CYCLES_ONLY = HEAD + (
    "def work(f):\n    tl.cycles(10)\n\n\n"
    '@kernel(options=[Option("f", float, 0.5, "a share, in % (100% is all)", low=0, high=1), '
    'Option("c", str, "a%b", "a choice with a % in it", choices=("a%b", "c"))], topology="cube1")\n'
    "def setup(rt, f, c):\n    rt.launch(work, pes=[0], args=(f,))\n"
)


def write(tmp_path: Path, text: str, name: str = "k.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def one_error(got, *needles: str) -> None:
    text = got.err + got.out
    assert got.status == 2, (got.status, text[-2000:])
    assert "Traceback" not in text, text[-3000:]
    assert got.err.startswith("error: ") and sum(row.startswith("error:") for row in got.err.splitlines()) == 1, got.err
    for needle in needles:
        assert needle in got.err, (needle, got.err)


def test_a_percent_sign_in_an_options_help_is_shown_as_written(tmp_path, capsys):
    f = write(tmp_path, CYCLES_ONLY)
    for command in (["run", f, "--help"], ["sweep", f, "--help"]):
        with pytest.raises(SystemExit) as ended:
            cli.main(command)
        assert ended.value.code == 0
        out = capsys.readouterr().out
        assert "a share, in % (100% is all)" in out and "a%b" in out


def test_explain_on_a_kernel_that_only_calls_tl_cycles_attributes_its_time_to_cpu_work(tmp_path, capsys):
    got = invoke(cli.main, ["run", write(tmp_path, CYCLES_ONLY), "--explain", "--json"], capsys, trace_memory=False)
    assert got.status == 0, got.err
    import json

    record = json.loads(got.out)
    assert record["latency_ns"] == 10.0  # 10 cycles at the cube's 1 GHz
    assert record["attribution"]["by_cause"] == {"cpu work": 10.0}


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
def test_a_float_option_refuses_a_value_that_is_not_a_finite_number(tmp_path, capsys, value):
    f = write(tmp_path, CYCLES_ONLY.replace("low=0, high=1", "low=None, high=None"))
    one_error(invoke(cli.main, ["run", f, f"--f={value}"], capsys, trace_memory=False), "--f", "finite number")
    one_error(invoke(cli.main, ["sweep", f, "--grid", f"f={value},0.5", "--no-cache"], capsys, trace_memory=False), "finite number")


@pytest.mark.parametrize(
    "declaration, needle",
    [
        ("@kernel(topology=5)", "topology=5"),
        ('@kernel(topology="")', "topology=''"),
        ("@kernel(name=7)", "name=7"),
        ("@kernel(check=3)", "check=3"),
    ],
)
def test_a_kernel_declaration_of_the_wrong_type_is_an_error_at_its_line(tmp_path, capsys, declaration, needle):
    f = write(tmp_path, HEAD + f"{declaration}\ndef setup(rt):\n    pass\n")
    one_error(invoke(cli.main, ["run", f], capsys, trace_memory=False), needle, "k.py:4")


@pytest.mark.parametrize(
    "expression",
    [
        "-" * 100_000 + "1",  # RecursionError/MemoryError in the parser
        "1" + "+1" * 200_000,  # a left-deep tree too deep to compile
        "(" * 300 + "1" + ")" * 300,  # SyntaxError: too many nested parentheses
        "[" * 5000 + "]" * 5000,
    ],
)
def test_a_deeply_nested_expression_is_one_error(tmp_path, capsys, expression):
    f = write(tmp_path, HEAD + f"x = {expression}\n")
    got = invoke(cli.main, ["run", f], capsys, trace_memory=False)
    one_error(got, "k.py")
    assert len(got.err) < 1000  # (the line is not quoted whole)


@pytest.mark.parametrize("name", ["x\n", "x\r", "ok\nimport os", "\nx"])
def test_a_new_kernels_name_with_a_line_break_is_refused(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    one_error(invoke(cli.main, ["new", "kernel", name], capsys, trace_memory=False), "a name is letters")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_kernel_name_is_an_error_not_a_listing(capsys):
    one_error(invoke(cli.main, ["run", ""], capsys, trace_memory=False), "empty")


@pytest.mark.parametrize("end_ns", [1e300, 1e12])
def test_a_trace_whose_run_ends_long_after_its_last_event_is_refused(tmp_path, end_ns):
    from kernbench import tl
    from kernbench.events.tracefile import TraceMetadata, open_trace, save_trace
    from kernbench.runtime.api import Runtime

    def work():
        tl.cycles(10)

    rt = Runtime("cube1")
    rt.launch(work, pes=[0])
    result = rt.run(record=True)
    good, bad = tmp_path / "good.kbtrace", tmp_path / "bad.kbtrace"
    save_trace(good, result.store(), TraceMetadata(kernel="w", end_ns=result.latency_ns))
    save_trace(bad, result.store(), TraceMetadata(kernel="w", end_ns=end_ns))
    assert open_trace(good).metadata.end_ns == 10.0
    with pytest.raises(TraceFormatError, match="long after its last event"):
        open_trace(bad)


@pytest.mark.parametrize("target", ["print", "len", "np.add", "object()"])
def test_launching_something_that_is_not_a_python_function_is_refused(tmp_path, capsys, target):
    f = write(tmp_path, HEAD + f'@kernel(topology="cube1")\ndef setup(rt):\n    rt.launch({target}, pes=[0])\n')
    one_error(invoke(cli.main, ["run", f], capsys, trace_memory=False), "k.py:6", "function")


def test_ctrl_c_while_the_program_is_still_importing_is_one_line_not_a_traceback(tmp_path):
    """The moment made exact: the signal arrives right after ``import kernbench`` in a process named
    ``kernbench`` (as the console script is), before any command runs."""
    code = "import sys; sys.argv[0] = 'kernbench'; import kernbench, os, signal; os.kill(os.getpid(), signal.SIGINT); import time; time.sleep(60)"
    done = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "interrupted (SIGINT); no output was written\n"
    other = subprocess.run(
        [sys.executable, "-c", "import kernbench, signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.stdout.strip() == "True"  # a script importing kernbench keeps Python's own Ctrl-C


def test_tl_full_of_a_shape_scratch_refuses_fails_before_building_it(tmp_path):
    f = write(
        tmp_path,
        HEAD
        + 'def work():\n    tl.full((60000, 60000), 1.0)\n\n\n@kernel(topology="cube1")\ndef setup(rt):\n    rt.launch(work, pes=[0])\n',
    )
    got = spawn("kernbench.cli", ["run", f], cwd=tmp_path, env=child_env(), timeout_s=300, memory_mib=8192)
    one_error(got, "ScratchError", "k.py:5")
    assert got.peak_mib < 1024, got.peak_mib  # (the array would be 14.4 GB)


def test_tl_zeros_that_fits_is_still_built(tmp_path):
    from kernbench import tl
    from kernbench.runtime.api import Runtime

    seen = []

    def work():
        seen.append(tl.zeros((4, 8)).nbytes)
        seen.append(tl.full((2, 2), 3.0, np.float16).nbytes)

    rt = Runtime("cube1")
    rt.launch(work, pes=[0])
    rt.run()
    assert seen == [128, 8]
    assert os.environ.get("PYTHONSAFEPATH") is None  # (no process start left it set)
    assert signal.getsignal(signal.SIGINT) is not None
