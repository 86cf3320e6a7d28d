"""README's promises: its two set-up commands, its example, its CI hook."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_example_is_the_file_the_tests_run_and_it_runs(capsys):
    example = (ROOT / "examples" / "quickstart.py").read_text().rstrip()
    assert example in README
    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    latency = float(re.match(r"([\d.]+) ns", out).group(1))
    assert latency > 0 and "(64, 128)" in out


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```sh\n(.+?)\n```", README)
    assert len(commands) == 2, "README must carry exactly two set-up commands"
    test_command = commands[1]
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text()
