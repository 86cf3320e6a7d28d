"""README's "Write your own kernel", run exactly as written: its file, its commands, their output, its script."""

from __future__ import annotations

import re
import runpy
import shlex
import sys
from pathlib import Path

import pytest

from kernbench import cli

ROOT = Path(__file__).resolve().parents[1]
SECTION = (ROOT / "README.md").read_text().split("\n## Write your own kernel\n", 1)[1].split("\n## ", 1)[0]
PYTHON = re.findall(r"```python\n(.*?)\n```", SECTION, re.S)
TEXT = re.findall(r"```text\n(.*?)\n```", SECTION, re.S)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """An empty folder with the section's kernel file in it, as a reader would have."""
    kernel_file, _script = PYTHON
    name = re.match(r'"""(\w+\.py):', kernel_file).group(1)
    (tmp_path / name).write_text(kernel_file + "\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the sweep's cache: this reader's own
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("vadd", None)


def _same(shown: list[str], out: list[str]) -> None:
    """Every shown line is printed, in order; a "…" ends what is shown (the rest is left out)."""
    if "…" in shown:
        shown = shown[: shown.index("…")]
        out = out[: len(shown)]
    assert out == shown


@pytest.mark.parametrize("block", [b for b in TEXT if b.startswith("$ kernbench ")], ids=lambda b: b.split("\n", 1)[0])
def test_each_command_prints_what_the_section_shows(folder, capsys, block):
    command, *shown = block.splitlines()
    assert cli.main(shlex.split(command[2:])[1:]) == 0
    out = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    while out and not out[-1]:
        out.pop()
    _same(shown, out)


def test_the_script_prints_what_the_section_shows_and_saves_what_it_says(folder, capsys):
    _kernel, script = PYTHON
    (folder / "script.py").write_text(script + "\n")
    runpy.run_path(str(folder / "script.py"), run_name="__main__")
    shown = next(b for b in TEXT if not b.startswith("$ "))
    assert capsys.readouterr().out.rstrip("\n").splitlines() == shown.splitlines()
    assert (folder / "vadd.kbtrace").stat().st_size > 0 and (folder / "vadd.json").stat().st_size > 0


def test_the_section_covers_every_command_a_kernel_file_goes_to():
    for needed in (
        "kernbench run vadd.py",
        "kernbench sweep vadd.py",
        "kernbench compare",
        "kernbench-tui run vadd.py",
        "--explain",
        "kernbench new kernel",
    ):
        assert needed in SECTION, needed
