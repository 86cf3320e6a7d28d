"""Static checks are part of the test command: ruff (lint, format) and mypy, as configured in pyproject.toml.

A type error or a lint finding fails the suite like a failing test (as tests/test_layering.py
does for the import contracts).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The folders install under other names (pyproject.toml, [tool.setuptools.package-dir]);
# mypy finds them under those names through links, so that ``-p kernbench_probes`` checks
# probes/ as the package its imports name.
PACKAGE_DIRS = {
    "kernbench": "kernbench",
    "kernbench_probes": "probes",
    "kernbench_tui": "tui",
    "kernbench_topologies": "topologies",
}
MYPY_PACKAGES = ("kernbench", "kernbench_probes")  # the debugger is checked on its own (below); all strict


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path(sys.executable).with_name(name))


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, env=env, check=False)


def test_ruff_lint_is_clean() -> None:
    done = _run([_tool("ruff"), "check", "--no-cache", "."])
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_clean() -> None:
    done = _run([_tool("ruff"), "format", "--check", "--no-cache", "."])
    assert done.returncode == 0, done.stdout + done.stderr


def _package_links() -> Path:
    """A folder of links named as the packages install (kernbench_probes -> probes/, ...), for mypy's path."""
    links = ROOT / ".mypy_cache" / "packages"
    links.mkdir(parents=True, exist_ok=True)
    for name, folder in PACKAGE_DIRS.items():
        link = links / name
        if not link.is_symlink() or os.readlink(link) != str(ROOT / folder):
            link.unlink(missing_ok=True)
            link.symlink_to(ROOT / folder, target_is_directory=True)
    return links


def mypy_argv(packages: tuple[str, ...] = MYPY_PACKAGES) -> tuple[list[str], dict[str, str]]:
    """The mypy command line and environment the test runs (also the way to run it by hand)."""
    env = dict(os.environ, MYPYPATH=str(_package_links()))
    return [sys.executable, "-m", "mypy", *(a for p in packages for a in ("-p", p))], env


def _as_folders(report: str) -> str:
    """mypy's report with the links' paths written as the repository's folders."""
    for name, folder in PACKAGE_DIRS.items():
        report = report.replace(f".mypy_cache/packages/{name}/", f"{folder}/")
    return report


def test_mypy_is_clean() -> None:
    argv, env = mypy_argv()
    done = _run(argv, env)
    assert done.returncode == 0, _as_folders(done.stdout + done.stderr)
    assert "Success: no issues found" in done.stdout


def test_mypy_is_clean_on_the_debugger() -> None:
    """kernbench_tui, strict like the rest (pyproject.toml has no override for it)."""
    argv, env = mypy_argv(("kernbench_tui",))
    done = _run(argv, env)
    assert done.returncode == 0, _as_folders(done.stdout + done.stderr)
    assert "Success: no issues found" in done.stdout
