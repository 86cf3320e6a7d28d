"""A user profiling kernbench with cProfile gets the run and the profile, not a hang.

``python -m cProfile -m kernbench.cli run FILE`` spun for ever after the run
(the 300 s wall-time limit's last resort then killed it, calling it C code
holding the interpreter): on CPython 3.11 clearing a thread's pending
asynchronous exception with NULL, which the watchdog did at every block's
end even when it had sent nothing, left that thread spinning at its next
call under cProfile while a kernel's greenlet was suspended.
"""

from __future__ import annotations

import pstats

from hardening_harness import child_env, spawn

KERNEL = """\
from kernbench import kernel, tl


def work():
    tl.cycles(3)


@kernel(topology="cube1")
def setup(rt):
    rt.launch(work, pes=[0])
"""


def test_a_run_under_cprofile_ends_and_writes_its_profile(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    got = spawn("cProfile", ["-o", "run.prof", "-m", "kernbench.cli", "run", "k.py"], cwd=tmp_path, env=child_env())
    assert got.status == 0, got.err[-2000:]
    assert "latency" in got.out and "wall-time limit" not in got.err, got.err[-2000:]
    stats = pstats.Stats(str(tmp_path / "run.prof"))
    assert any(name == "run" and file.endswith("api.py") for file, _, name in stats.stats)  # type: ignore[attr-defined]
