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
