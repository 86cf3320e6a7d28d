"""README's Sweeps section shows real output: its command, run now, prints exactly the block under it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sweep_harness import sweep

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_readme_sweep_and_its_plot_are_what_the_command_prints(capsys):
    section = README.split("\n## Sweeps\n", 1)[1].split("\n## ", 1)[0]
    command, shown = re.search(r"```text\n\$ (kernbench sweep .+?)\n(gqa-decode · .*?)\n```", section.replace("\\\n", " "), re.S).groups()
    status, out, err = sweep(shlex.split(command)[1:], capsys)
    assert status == 0, err
    assert [line.rstrip() for line in out.rstrip("\n").splitlines()] == shown.splitlines()
    assert "latency_ns by context" in shown and "• variant=primitive" in shown
