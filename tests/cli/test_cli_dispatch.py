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


def test_only_the_program_collects_rarely_and_leaves_its_objects_to_the_os():
    # main() without argv is the program: it collects cycles rarely, and what it built is frozen
    # out of the exit's collection; called with argv (in-process, as here) neither happens
    code = (
        "import gc, sys; from kernbench.cli import main; sys.argv = ['kernbench', 'run', '--list']; main();"
        "print(gc.get_threshold()[0], gc.get_freeze_count() > 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == f"{cli.PROGRAM_COLLECTS_EVERY} True"
    before = gc.get_threshold(), gc.get_freeze_count()
    assert cli.main(["run", "--list"]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
