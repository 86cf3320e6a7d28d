"""The distribution installs only kernbench-owned top-level names, and every package folder is in it."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
TOP_LEVEL = {"kernbench", "kernbench_tui", "kernbench_probes", "kernbench_topologies"}


def _folder_of(package: str) -> Path:
    head, *rest = package.split(".")
    return ROOT.joinpath(SETUPTOOLS["package-dir"].get(head, head), *rest)


def test_the_package_list_names_every_package_folder():
    listed = set(SETUPTOOLS["packages"])
    on_disk = set()
    for package in {p.split(".")[0] for p in listed}:
        base = _folder_of(package)
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            on_disk.add(".".join((package, *rel)))
    assert listed == on_disk
    assert {p.split(".")[0] for p in listed} == TOP_LEVEL


def test_console_scripts_and_entry_points_name_installed_modules():
    targets = [*PYPROJECT["project"]["scripts"].values(), *PYPROJECT["project"]["entry-points"]["kernbench.benches"].values()]
    for target in targets:
        module = target.split(":")[0]
        assert module.split(".")[0] in TOP_LEVEL, target
        assert module.rsplit(".", 1)[0] in SETUPTOOLS["packages"] or module in SETUPTOOLS["packages"], target


@pytest.mark.slow
def test_the_wheel_installs_no_generic_top_level_names(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("kernbench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == TOP_LEVEL
    for data in (
        "kernbench_topologies/paper.yaml",
        "kernbench_tui/app.tcss",
        "kernbench/commands/goldens.json",
        "kernbench/runtime/api.py",
    ):
        assert data in names
