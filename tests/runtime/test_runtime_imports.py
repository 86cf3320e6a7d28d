"""``from kernbench import Runtime, tl`` works in a fresh interpreter (the
package attributes are lazy so ``import kernbench`` stays cheap)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "stmt", ["from kernbench import tl, Runtime", "from kernbench import Runtime, tl", "import kernbench; kernbench.tl.load"]
)
def test_the_kernel_author_imports_work_in_a_fresh_interpreter(stmt):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", f"{stmt}; print('ok')"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "ok"


def test_importing_kernbench_does_not_import_the_runtime():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    code = "import sys, kernbench; print('kernbench.runtime.api' in sys.modules, 'greenlet' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["False", "False"]
