"""Kernel files: declared with @kernel, named as path.py[:NAME]; every mistake in one says where, in the user's file."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernbench import Option, Runtime, kernel, tl
from kernbench.cli import main
from kernbench.errors import NotRecordedError, OutputPathError
from kernbench.events.tracefile import open_trace
from kernbench.kernels import registry

HEADER = "import numpy as np\nfrom kernbench import Option, kernel, tl\n\n"

GOOD = HEADER + textwrap.dedent(
    '''
    def scale(x, out, factor):
        tl.store(out, tl.scale(tl.load(x), factor))


    @kernel(options=[Option("factor", float, 2.0, "the scale", low=-10, high=10)], topology="cube1")
    def scaled(rt, factor):
        """out = factor · x on one PE."""
        X = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
        x, out = rt.deploy(X), rt.empty((64, 64))
        rt.launch(scale, pes=[0], args=(x, out, factor))
        return lambda: np.abs(rt.read(out).astype(np.float32) - factor * X.astype(np.float16).astype(np.float32)).max()
    '''
)


def write(tmp_path: Path, text: str, name: str = "k.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def fails(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and "Traceback" not in err
    return err


def test_a_declared_kernel_runs_and_its_help_shows_ranges_defaults_and_topology(tmp_path, capsys):
    f = write(tmp_path, GOOD)
    assert main(["run", f, "--json", "--factor", "3"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["kernel"] == "scaled" and rec["params"] == {"factor": 3.0} and rec["max_abs_err"] < 1e-2
    with pytest.raises(SystemExit):
        main(["run", f, "--help"])
    out = capsys.readouterr().out
    assert "default topology: cube1" in out and "-10..10" in out and "default: 2.0" in out and f in out


@pytest.mark.parametrize(
    "text, line, cause",
    [
        (HEADER + "def k(:\n    pass\n", 4, "SyntaxError"),
        (HEADER + "x = 1\nundefined_name + 1\n", 5, "NameError: name 'undefined_name' is not defined"),
        (
            HEADER + "@kernel(options=[Option('n', int, 4, 'n')])\ndef s(rt, n):\n    return 1 / 0 if n else None\n",
            6,
            "ZeroDivisionError",
        ),
        (
            HEADER
            + "def k(x):\n    tl.load(x)\n    raise RuntimeError('boom in the kernel')\n\n"
            + "@kernel()\ndef s(rt):\n    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((4, 4))),))\n",
            6,
            "RuntimeError: boom in the kernel",
        ),
        (
            HEADER
            + "def k(x):\n    tl.load(x)\n\n"
            + "@kernel()\ndef s(rt):\n    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((4, 4))),))\n    return lambda: np.ones(3) - np.ones(4)\n",
            10,
            "its reference check raised ValueError: operands could not be broadcast",
        ),
        (
            HEADER
            + "def rules(options, pes):\n    return options['nn']\n\n"
            + "@kernel(options=[Option('n', int, 4, 'n')], check=rules)\ndef s(rt, n):\n    pass\n",
            5,
            "s: its option rules rules raised KeyError: 'nn'",
        ),
        (
            HEADER + "def k(x):\n    tl.load(x)\n\n" + "@kernel()\ndef s(rt):\n    rt.deploy(np.ones((4, 4)))\n",
            7,
            "launched no kernel: call rt.launch(KERNEL, pes=[...], args=(...)) in it",
        ),
        (
            HEADER
            + "def k(x):\n    tl.wait(tl.recv_async(1 - tl.program_id(), (4, 4)))\n\n"
            + "@kernel()\ndef s(rt):\n    rt.launch(k, pes=[0, 1], args=(rt.deploy(np.ones((4, 4))),))\n",
            5,
            "ran out of events with kernels still waiting",
        ),
    ],
    ids=["syntax", "import", "set-up", "kernel", "check", "option rules", "no launch", "deadlock"],
)
def test_an_error_in_the_users_file_points_at_its_line(tmp_path, capsys, text, line, cause):
    f = write(tmp_path, text)
    err = fails(capsys, "run", f)
    assert cause in err and f"{f}:{line}" in err, err


@pytest.mark.parametrize(
    "rules, says",
    [
        ("'n must be odd' if o['n'] % 2 == 0 else None", "error: s: n must be odd\n"),
        ("{'n': 'odd'}", "returned dict: return a list of problems"),
    ],
)
def test_option_rules_may_return_a_text_or_none_and_nothing_else(tmp_path, capsys, rules, says):
    text = HEADER + f"@kernel(options=[Option('n', int, 1, 'n')], check=lambda o, pes: {rules})\ndef s(rt, n):\n    pass\n"
    f = write(tmp_path, text)
    assert says in fails(capsys, "run", f, "--n", "2")


@pytest.mark.parametrize(
    "figures, says",
    [
        ("{'latency_ns': 1.0}", "'latency_ns' has the name of a run-record field"),
        ("{'tiles': [1, 2]}", "'tiles' is list, not a finite number or text"),
        ("{'ratio': float('nan')}", "'ratio' is float, not a finite number or text"),
        ("[1]", "returned list, not a dict of figures by name"),
    ],
)
def test_a_summary_whose_figures_do_not_fit_the_run_record_is_one_error(tmp_path, capsys, figures, says):
    text = HEADER + (
        "from kernbench import Prepared\n\ndef k(x):\n    tl.load(x)\n\n@kernel()\ndef s(rt):\n"
        f"    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((4, 4))),))\n    return Prepared(summary=lambda result: {figures})\n"
    )
    f = write(tmp_path, text)
    assert fails(capsys, "run", f) == f"error: s: its summary's figures do not fit the run record: {says}\n"


@pytest.mark.parametrize(
    "returns, says",
    [
        ("float('nan')", "its reference check gave max |error| = nan: the output (or the reference) holds a NaN or an infinity"),
        ("np.inf", "its reference check gave max |error| = inf"),
        ("Prepared(lambda: [0.0])", "its reference check returned list: return the max |error| (a number) or None"),
    ],
)
def test_a_reference_check_that_gives_no_finite_error_is_one_error(tmp_path, capsys, monkeypatch, returns, says):
    from kernbench.sweep import executors

    monkeypatch.setattr(executors, "usable_cpus", lambda: 1)  # compare's sides here (the processes are tested elsewhere)
    body = f"    return {returns}\n" if returns.startswith("Prepared") else f"    return lambda: {returns}\n"
    text = HEADER + (
        "from kernbench import Prepared\n\ndef k(x):\n    tl.load(x)\n\n@kernel()\ndef s(rt):\n"
        "    rt.launch(k, pes=[0], args=(rt.deploy(np.ones((4, 4))),))\n" + body
    )
    f = write(tmp_path, text)
    for command in (["run", f, "--json"], ["compare", f, f]):
        err = fails(capsys, *command)
        assert f"s: {says}" in err and err.count("\n") == 1, err


def test_no_output_overwrites_the_kernel_file_or_what_it_imports_beside_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text(
        "from kernbench import tl\n\ndef scale(x, out, factor):\n    tl.store(out, tl.scale(tl.load(x), factor))\n"
    )
    f = write(
        tmp_path,
        GOOD.replace("def scale(x, out, factor):\n    tl.store(out, tl.scale(tl.load(x), factor))\n", "from helper import scale\n"),
    )
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for argv in (
        ["run", "k.py", "--trace", "k.py"],
        ["run", "k.py", "--perfetto", "./helper.py"],
        ["compare", "k.py --trace k.py", "k.py"],
    ):
        assert "that is an input of this run; writing it would destroy it" in fails(capsys, *argv)
    rt = Runtime("cube1")
    registry.get(f).setup(rt, factor=2.0)
    with pytest.raises(OutputPathError, match="that is an input of this run"):
        rt.run(record=True).save_trace(tmp_path / "helper.py")  # the launched kernel's own file
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name in before} == before
    sys.modules.pop("helper", None)  # (a module of this test's folder: not for the next test to find)


def test_a_file_with_a_plain_tl_function_is_told_what_to_add(tmp_path, capsys):
    f = write(
        tmp_path,
        "from kernbench import tl\n\n\ndef add_rows(x, out):\n    tl.store(out, tl.add(tl.load(x), tl.load(x)))\n\nprint('side effect')\n",
    )
    err = fails(capsys, "run", f)
    assert "declares no kernel" in err and "add_rows (line 4)" in err and "@kernel(" in err and "rt.launch(add_rows" in err
    assert "kernbench new kernel" in err
    assert "side effect" not in capsys.readouterr().out  # a file without a declaration is not executed


def test_names_in_a_file_of_several_kernels(tmp_path, capsys, monkeypatch):
    two = (
        GOOD
        + "\n\n@kernel(name='other')\ndef second(rt):\n    rt.launch(scale, pes=[0], args=(rt.deploy(np.ones((4, 4))), rt.empty((4, 4)), 1.0))\n"
    )
    f = write(tmp_path, two)
    assert "declares 2 kernels (scaled, other): name one, e.g." in fails(capsys, "run", f)
    assert "declares no kernel 'third'; it declares scaled, other" in fails(capsys, "run", f"{f}:third")
    assert main(["run", f"{f}:other", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernel"] == "other"
    monkeypatch.chdir(tmp_path)
    listed = _out(capsys, ["run", "--list", "k.py"]).splitlines()
    assert [line.split("\t")[0] for line in listed] == ["k.py:scaled", "k.py:other"]  # each as it is named again from here


@pytest.mark.parametrize(
    "arg, cause",
    [
        ("missing.py", "no such kernel file"),
        ("scaled", "unknown kernel 'scaled'"),
        ("k.py:", "after the colon name one of the kernels the file declares (k.py:NAME), or leave the colon out"),
        ("kernels", "kernels is a folder: name a kernel file in it (a.py, b.py)"),
        ("kernels/", "kernels/ is a folder: name a kernel file in it (a.py, b.py)"),
    ],
)
def test_a_kernel_that_is_not_there_is_named(tmp_path, capsys, monkeypatch, arg, cause):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GOOD)
    (tmp_path / "kernels").mkdir()
    for name in ("b.py", "a.py"):
        write(tmp_path / "kernels", GOOD, name)
    assert cause in fails(capsys, "run", arg)


def test_a_file_named_without_py_is_pointed_at_its_py(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, GOOD, "mine.py")
    assert "name it with its .py: mine.py" in fails(capsys, "run", "mine")


def test_an_unknown_option_names_the_kernels_options(tmp_path, capsys):
    f = write(tmp_path, GOOD)
    err = fails(capsys, "run", f, "--factr", "2")
    assert "--factr is not an option of scaled (did you mean --factor?)" in err and "usage" not in err
    assert "--factor 11.0: must be in -10..10" in fails(capsys, "run", f, "--factor", "11")


@pytest.mark.parametrize(
    "declare, cause",
    [
        (
            lambda: kernel(options=[Option("n", int, 1, "n")], name="k")(lambda rt: None),
            "must take the runtime, then one keyword per option",
        ),
        (lambda: Option("n", int, 0, "n", low=1, high=4), "its default fails its own range"),
        (lambda: Option("topology", str, "", "clashes"), "one of kernbench run's own options"),
        (lambda: Option("n", list, [], "n"), "type must be int, float or str"),
        (
            lambda: kernel(options=[Option("n", int, 1, "n", only_with=(("form", "a"),))], name="k")(lambda rt, n: None),
            "option 'n' is only_with 'form', which is not another option of this kernel",
        ),
        (
            lambda: kernel(
                options=[Option("form", str, "a", "f", ("a", "b")), Option("n", int, 1, "n", only_with=(("form", "c"),))], name="k"
            )(lambda rt, form, n: None),
            "only_with a value 'form' cannot take: --form 'c': choose one of a, b",
        ),
    ],
)
def test_a_wrong_declaration_fails_where_it_is_written(declare, cause):
    with pytest.raises(TypeError, match=cause):
        declare()


IDLE = HEADER + textwrap.dedent(
    """
    def k(x, out):
        tl.store(out, tl.load(x))


    @kernel(
        options=[
            Option("layout", str, "tiled", "how x is stored", ("tiled", "naive")),
            Option("tile", int, 64, "tile of a tiled x", low=1, high=2**32 - 1, only_with=(("layout", "tiled"),)),
        ]
    )
    def idle(rt, layout, tile):
        x, out = rt.deploy(np.ones((1, 64))), rt.empty((1, 64))
        rt.launch(k, pes=[0], args=(x, out))
    """
)


def test_a_files_option_that_does_nothing_with_the_others_is_refused_and_its_help_says_when_it_counts(tmp_path, capsys):
    f = write(tmp_path, IDLE)
    err = fails(capsys, "run", f, "--layout", "naive", "--tile", "64")
    assert err == "error: idle: --tile does nothing with --layout naive (it is used only with --layout tiled): leave it out\n"
    capsys.readouterr()
    assert main(["sweep", f, "--grid", "tile=32,64", "--layout", "naive", "--no-cache"]) == 2  # a sweep's points fail, each in its row
    assert capsys.readouterr().err.count("--tile does nothing with --layout naive") == 2
    assert json.loads(_out(capsys, ["run", f, "--layout", "naive", "--json"]))["params"] == {"layout": "naive", "tile": 64}
    with pytest.raises(SystemExit):
        main(["run", f, "--help"])
    assert "(default: 64; 1..4,294,967,295; only with --layout tiled)" in " ".join(capsys.readouterr().out.split())


def test_the_template_runs_and_is_never_written_over(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["new", "kernel", "mine"]) == 0
    assert "kernbench run mine.py" in capsys.readouterr().out
    rec = json.loads(_out(capsys, ["run", "mine.py", "--json"]))
    assert rec["kernel"] == "mine" and 0 < rec["max_abs_err"] < 0.05 and rec["commands"] > 0
    before = (tmp_path / "mine.py").read_text()
    assert "exists; not overwritten" in fails(capsys, "new", "kernel", "mine")
    assert (tmp_path / "mine.py").read_text() == before
    assert "a name is letters" in fails(capsys, "new", "kernel", "2bad")


@pytest.mark.parametrize("name", ["class", "None", "np", "tl", "numpy", "os", "my-kernel"])
def test_a_template_name_that_would_break_it_or_shadow_a_module_is_refused(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    assert fails(capsys, "new", "kernel", name).startswith(f"error: new kernel {name!r}: ")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["kernel", "Option", "max_error", "print"])
def test_a_template_named_like_a_name_it_uses_only_before_it_runs_still_runs(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert main(["new", "kernel", name, "--out", "sub"]) == 0  # a folder: NAME.py in it
    assert f"wrote sub/{name}.py" in capsys.readouterr().out
    rec = json.loads(_out(capsys, ["run", f"sub/{name}.py", "--json"]))
    assert rec["kernel"] == name.replace("_", "-") and 0 < rec["max_abs_err"] < 0.05


def _out(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().out


def _small_run(record: bool):
    rt = Runtime("cube1")
    x = rt.deploy(np.ones((64, 128)), pe=0)
    out = rt.empty((64, 128), pe=0)
    rt.launch(lambda x, out: tl.store(out, tl.exp(tl.load(x))), pes=[0], args=(x, out))
    return rt.run(record=record)


def test_a_result_saves_its_trace_and_perfetto_and_explains_itself(tmp_path, capsys):
    result = _small_run(record=True)
    result.save_trace(tmp_path / "r.kbtrace")
    result.save_perfetto(tmp_path / "r.json")
    trace = open_trace(tmp_path / "r.kbtrace")
    assert len(trace.store) == len(result.events) and trace.metadata.end_ns == result.latency_ns and trace.metadata.topology == "cube1"
    assert json.loads((tmp_path / "r.json").read_text())["traceEvents"]
    a = result.explain()
    assert sum(a.by_cause.values()) == pytest.approx(result.latency_ns, abs=1e-6)
    assert result.explain_text().startswith(f"why {result.latency_ns:,.3f} ns")
    assert main(["compare", str(tmp_path / "r.kbtrace"), str(tmp_path / "r.kbtrace")]) == 0


def test_a_result_without_events_says_how_to_record_them(tmp_path):
    result = _small_run(record=False)
    for call in (lambda: result.save_trace(tmp_path / "r.kbtrace"), result.explain, lambda: result.save_perfetto(tmp_path / "r.json")):
        with pytest.raises(NotRecordedError, match=r"record=True"):
            call()
    assert not list(tmp_path.iterdir())


def test_the_shipped_kernels_are_declared_the_same_way():
    for name, spec in registry.kernels().items():
        assert spec.setup is not None and spec.name == name and not spec.source
        assert spec.setup.__module__.startswith(tuple(f"{p}." for p in registry.SHIPPED_PACKAGES))


def test_a_saved_trace_named_as_a_kernel_is_said_to_be_one_with_what_opens_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = fails(capsys, "run", "run.kbtrace")
    assert "unknown kernel 'run.kbtrace'; run.kbtrace is a saved trace, not a kernel: `kernbench-tui open run.kbtrace` shows it" in said
    assert ".kbtrace.py" not in said
