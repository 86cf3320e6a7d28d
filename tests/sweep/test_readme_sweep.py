"""docs/sweeps.md's example (README's Sweeps section, moved there) shows real output: its command, run now,
prints exactly the block under it (tests/test_docs_site.py runs it as well; this one also holds the plot's legend)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sweep_harness import sweep

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "sweeps.md").read_text()


def test_the_readme_sweep_and_its_plot_are_what_the_command_prints(capsys):
    section = PAGE.split("\n## An example\n", 1)[1].split("\n## ", 1)[0]
    command, shown = re.search(r"```text\n\$ (kernbench sweep .+?)\n(gqa-decode · .*?)\n```", section.replace("\\\n", " "), re.S).groups()
    status, out, err = sweep(shlex.split(command)[1:], capsys)
    assert status == 0, err
    assert [line.rstrip() for line in out.rstrip("\n").splitlines()] == shown.splitlines()
    assert "latency_ns by context" in shown and "• variant=primitive" in shown
