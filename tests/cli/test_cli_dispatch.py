"""The dispatcher loads only the command it runs, and parses alike either way."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from kernbench import cli


@pytest.mark.parametrize("module", cli.COMMANDS)
def test_each_command_module_adds_the_subcommand_named_after_it(module, capsys):
    name = cli.command_name(module)
    with pytest.raises(SystemExit) as exc:
        cli.main([name, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: kernbench {name} ")


def test_running_one_command_loads_no_other_commands_module():
    code = (
        "import sys; from kernbench.cli import main; main(['run', '--list']);"
        "print(sorted(m for m in sys.modules if m.startswith('kernbench.commands.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "['kernbench.commands.run']"


def program(argv: list[str]) -> tuple[str, str]:
    """What ``kernbench ARGV`` does to the cycle collector: (youngest threshold before → after, anything frozen)."""
    code = (
        f"import gc, sys; from kernbench.cli import main; sys.argv = ['kernbench', *{argv!r}]; t = gc.get_threshold()[0];"
        "main(); print(f'{t} -> {gc.get_threshold()[0]}', gc.get_freeze_count() > 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    threshold, frozen = out.rsplit(" ", 1)
    return threshold, frozen


def test_only_the_program_collects_rarely_in_a_single_run_and_leaves_its_objects_to_the_os():
    # main() without argv is the program: a single-run command collects cycles rarely, and what any
    # command built is frozen out of the exit's collection; called with argv (in-process) neither happens
    threshold, frozen = program(["run", "--list"])
    assert threshold.endswith(f" -> {cli.PROGRAM_COLLECTS_EVERY}") and frozen == "True"
    threshold, frozen = program(["topo", "list"])  # not a single run: Python's default stays
    before, after = threshold.split(" -> ")
    assert before == after and frozen == "True"
    before = gc.get_threshold(), gc.get_freeze_count()
    assert cli.main(["run", "--list"]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


#: a mistake on every command, and what its one line must name (the word given, the valid choices where there are some)
MISTAKES = [
    (["--bogus"], "--bogus is not an option of kernbench; name a command first: topo, run, bench, compare, sweep, new"),
    (["nosuch"], "invalid choice: 'nosuch' (choose from 'topo', 'run', 'bench', 'compare', 'sweep', 'new')"),
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "gemm-composite", "--bogus", "1"], "--bogus is not an option of gemm-composite; its options: --m, --n, --k, --tile-k"),
    (["run", "gemm-composite", "--layout", "wide"], "gemm-composite: --layout 'wide': choose one of tiled, naive"),
    (["run", "gemm-composite", "--timing", "slow"], "argument --timing: invalid choice: 'slow' (choose from 'fast', 'oracle')"),
    (["run", "gemm-composite", "--m", "x"], "argument --m: invalid int value: 'x'"),
    (["run", "gemm-composite", "--m", "0"], "--m 0: must be in 1..8192"),
    (["run", "gemm-composite", "--layout", "naive", "--tile-k", "64"], "--tile-k does nothing with --layout naive"),
    (["run", "gemm-composite", "--topology", "nosuch"], "unknown topology 'nosuch'; named topologies: cube1,"),
    (["compare", "gemm-composite"], "the following arguments are required: B"),
    (["compare", "gemm-composite --m 0", "gemm-composite"], "compare A: gemm-composite: --m 0: must be in 1..8192"),
    (["compare", "gemm-composite", "gemm-composite --json"], "compare B: gemm-composite --json: --json is not taken inside a side"),
    (["sweep", "gemm-composite", "--grid", "mm=1"], "--grid mm=1: unknown key 'mm' (did you mean 'm'?)"),
    (["sweep", "gemm-composite", "--grid", "m=64", "--jobs", "0"], "argument --jobs: expected at least 1 worker process, got 0"),
    (["topo", "bogus"], "invalid choice: 'bogus' (choose from 'show', 'list')"),
    (
        ["topo", "show", "cube1", "--set", "sip.mesh.widht=2"],
        "sip.mesh.widht: unknown key (did you mean 'width'?); known keys: height, width, wrap",
    ),
    (["bench", "--study", "nosuch"], "invalid choice: 'nosuch' (choose from 'allreduce', 'gemm', 'llm-layer', 'all')"),
    (["new", "thing", "x"], "invalid choice: 'thing' (choose from 'kernel')"),
]


@pytest.mark.parametrize("argv, says", MISTAKES, ids=[" ".join(a) for a, _s in MISTAKES])
def test_a_mistake_on_any_command_is_one_error_line_naming_it_never_a_usage_block(capsys, argv, says):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and err.count("\n") == 1 and says in err, err
    assert "usage:" not in err and "Traceback" not in err
