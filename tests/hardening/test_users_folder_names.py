"""Round 3, root cause 5: a module of the user's named like a standard one does not replace it for kernbench.

``compare`` and ``sweep --jobs N`` run from a folder holding a ``logging.py``,
``queue.py`` or ``json.py`` crashed with a traceback and the misleading "a
compare process died (killed, or out of memory?)": the kernel file's folder
was put first on ``sys.path``, and spawned workers (whose ``sys.path`` is
their parent's) imported the user's ``logging.py`` before the standard one.
Now the folder is last on ``sys.path`` and first only for imports the user's
own code makes (its helpers still import, from the set-up or the kernel).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hardening_harness import child_env

HANG_BOUND_S = 120
SHADOWS = ("logging", "queue", "json", "pickle", "selectors", "signal", "threading", "tempfile")

KERNEL = """\
from kernbench import Option, kernel, tl


def work(n):
    from helpers_of_mine import CYCLES
    tl.cycles(CYCLES * n)


@kernel(options=[Option("n", int, 1, "repeat", low=1, high=9)], topology="cube1")
def setup(rt, n):
    from helpers_of_mine import CYCLES  # a helper beside the file, imported by the user's code: found
    rt.launch(work, pes=[0], args=(n,))
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name in SHADOWS:
        (tmp_path / f"{name}.py").write_text(f"raise RuntimeError('the folder\\'s own {name}.py was imported')\n")
    (tmp_path / "helpers_of_mine.py").write_text("CYCLES = 5\n")
    (tmp_path / "k.py").write_text(KERNEL)
    return tmp_path


def kernbench(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The console script, run in ``folder`` as a user types it there (the folder is not on its sys.path;
    a spawned worker's ``python -c`` would put it first)."""
    script = Path(sys.executable).with_name("kernbench")
    assert script.exists(), script
    return subprocess.run([str(script), *argv], cwd=folder, env=child_env(), capture_output=True, text=True, timeout=HANG_BOUND_S)


@pytest.mark.parametrize(
    "argv, latencies",
    [
        (["compare", "k.py --n 1", "k.py --n 2", "--json"], None),
        (["sweep", "k.py", "--grid", "n=1,2", "--jobs", "2", "--no-cache", "--json"], [5.0, 10.0]),
        (["sweep", "k.py", "--grid", "n=1,2", "--jobs", "1", "--no-cache", "--json"], [5.0, 10.0]),
        (["run", "k.py", "--json", "--n", "3"], [15.0]),
    ],
)
def test_a_folder_with_standard_module_names_runs_every_command(folder, argv, latencies):
    got = kernbench(folder, *argv)
    err, out = got.stderr, got.stdout
    assert got.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "was imported" not in err, err[-3000:]
    doc = json.loads(out)
    if argv[0] == "compare":
        assert (doc["a"]["latency_ns"], doc["b"]["latency_ns"]) == (5.0, 10.0)
    elif argv[0] == "sweep":
        assert [row["latency_ns"] for row in doc] == latencies
    else:
        assert doc["latency_ns"] == latencies[0]


def test_the_folder_is_last_on_sys_path_but_first_for_the_users_own_imports(folder, monkeypatch):
    from kernbench import usercode
    from kernbench.kernels import files

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(usercode, "FOLDERS", usercode.FOLDERS.copy())
    spec = files.get(str(folder / "k.py"))
    assert sys.path[-1] == str(folder)  # after the standard library and site-packages
    import importlib

    assert importlib.import_module("logging").__file__ != str(folder / "logging.py")  # kernbench's import: the standard one
    assert spec.name == "setup"
