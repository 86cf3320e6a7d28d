"""Round 3, root cause 1: every module a kernel file loads from its folder tree is an input of the run.

A helper imported inside the set-up or the kernel, or from a package beside
the file (``from helpers import h``), was neither protected from the outputs
nor part of the sweep cache's key: ``--perfetto helpers/__init__.py``
overwrote it, and after an edit to it that moved the true latency from
247.19 ns to 5,158.69 ns the cache still returned 247.19 ns. Each command
below runs in a fresh process, as a user's would (a helper edited between
two commands is read again).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from hardening_harness import child_env, spawn

from kernbench.errors import OutputPathError

HANG_BOUND_S = 120  # a bound on a hang, not a speed check

KERNEL = textwrap.dedent(
    """
    from kernbench import Option, kernel, tl
    {top}

    def work(n):
        {in_kernel}
        tl.cycles(CYCLES * n)


    @kernel(options=[Option("n", int, 1, "repeat", low=1, high=100)], topology="cube1")
    def setup(rt, n):
        {in_setup}
        rt.launch(work, pes=[0], args=(n,))
    """
)

#: where the helper is imported: at the top of the file, in the set-up, in the kernel — as a module or a package beside it
PLACES = {
    "package beside, at import": dict(top="from helpers import CYCLES", in_setup="pass", in_kernel="pass"),
    "package beside, in the set-up": dict(top="", in_setup="global CYCLES\n    from helpers import CYCLES", in_kernel="pass"),
    "module beside, in the set-up": dict(top="", in_setup="global CYCLES\n    from helper import CYCLES", in_kernel="pass"),
    "package beside, in the kernel": dict(top="", in_setup="pass", in_kernel="from helpers.deep import CYCLES"),
}


def make(tmp_path: Path, place: str, cycles: int) -> tuple[Path, Path]:
    """A kernel file and the helper it imports (returned), the helper's CYCLES set to ``cycles``."""
    folder = tmp_path / "work"
    (folder / "helpers").mkdir(parents=True, exist_ok=True)
    (folder / "k.py").write_text(KERNEL.format(**PLACES[place]))
    helper = {
        "package beside, at import": folder / "helpers" / "__init__.py",
        "package beside, in the set-up": folder / "helpers" / "__init__.py",
        "module beside, in the set-up": folder / "helper.py",
        "package beside, in the kernel": folder / "helpers" / "deep.py",
    }[place]
    (folder / "helpers" / "__init__.py").touch()
    helper.write_text(f"CYCLES = {cycles}\n")
    return folder, helper


def latencies(folder: Path, *extra: str) -> list[float]:
    got = spawn(
        "kernbench.cli",
        ["sweep", "k.py", "--grid", "n=1,3", "--cache-dir", str(folder.parent / "cache"), "--json", *extra],
        cwd=folder,
        env=child_env(),
        timeout_s=HANG_BOUND_S,
    )
    assert got.status == 0, got.err[-2000:]
    return [row["latency_ns"] for row in json.loads(got.out)]


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("place", list(PLACES))
def test_an_edited_helper_is_simulated_again_not_read_from_the_cache(tmp_path, place, jobs):
    folder, helper = make(tmp_path, place, cycles=100)
    first = latencies(folder, "--jobs", jobs)
    assert first == [100.0, 300.0]  # tl.cycles at the cube's 1 GHz: 1 ns a cycle
    helper.write_text("CYCLES = 2000\n")  # the true latency changes 20-fold
    assert latencies(folder, "--jobs", jobs) == [2000.0, 6000.0]
    assert latencies(folder, "--jobs", jobs) == [2000.0, 6000.0]  # (and is cached again under the new content)


@pytest.mark.parametrize("flag", ["--perfetto", "--trace"])
@pytest.mark.parametrize("place", list(PLACES))
def test_no_output_overwrites_a_helper_the_kernel_file_loaded(tmp_path, place, flag):
    folder, helper = make(tmp_path, place, cycles=100)
    before = helper.read_bytes()
    target = helper.relative_to(folder)
    got = spawn("kernbench.cli", ["run", "k.py", flag, str(target)], cwd=folder, env=child_env(), timeout_s=HANG_BOUND_S)
    assert got.status == 2, got.err[-2000:]
    assert got.err.startswith("error: ") and "an input of this run" in got.err and "Traceback" not in got.err, got.err
    assert helper.read_bytes() == before
    assert not [p for p in folder.rglob("*") if p.name.endswith(".part")]


def test_a_module_only_a_worker_loaded_is_protected_in_the_parent_too(tmp_path):
    """A sweep's parent writes ``--out``; a helper its workers' set-ups imported is reported back with each
    point (``Outcome.dependencies``) and refused as a target like the parent's own."""
    from kernbench import usercode
    from kernbench.outputs import write_text_atomic

    helper = tmp_path / "helper.py"
    helper.write_text("CYCLES = 1\n")
    usercode.note_user_modules([str(helper)])
    try:
        with pytest.raises(OutputPathError, match="your kernel file loaded"):
            write_text_atomic(helper, "overwritten")
    finally:
        usercode._SEEN.pop(helper, None)
    assert helper.read_text() == "CYCLES = 1\n"


def test_a_module_loaded_before_its_tree_is_watched_is_the_users_once_it_is(tmp_path, monkeypatch):
    """The record is of the whole process: a module imported before any kernel file of its folder was
    loaded (a script's own import, an earlier test) becomes the user's when that folder's kernel file is."""
    import importlib
    import sys

    from kernbench import usercode

    monkeypatch.setattr(usercode, "_TREES", set(usercode._TREES))
    monkeypatch.setattr(usercode, "_SEEN", dict(usercode._SEEN))
    monkeypatch.setattr(usercode, "_CHECKED", {})
    folder = (tmp_path / "later").resolve()
    folder.mkdir()
    (folder / "early_helper_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(folder))
    importlib.import_module("early_helper_mod")
    try:
        assert folder / "early_helper_mod.py" not in usercode.user_modules()
        usercode.watch(folder)
        assert usercode.user_modules()[folder / "early_helper_mod.py"] == "early_helper_mod"
    finally:
        sys.modules.pop("early_helper_mod", None)


def test_looking_at_the_users_modules_again_resolves_nothing_again(tmp_path, monkeypatch):
    """Outputs and the sweep cache ask for the user's modules on every run; a test session has loaded
    hundreds of kernel files' trees and a thousand modules. Each module is judged once, and a tree is
    found among its ancestors by a set look-up: asking again resolves no file (it cost seconds per
    call in a long test session, when every module was compared with every tree on every call)."""
    from kernbench import usercode

    monkeypatch.setattr(usercode, "_TREES", set(usercode._TREES))
    monkeypatch.setattr(usercode, "_CHECKED", {})
    for i in range(200):
        usercode.watch((tmp_path / f"tree{i}").resolve())
    usercode.user_modules()
    judged = []
    real = usercode._module_file
    monkeypatch.setattr(usercode, "_module_file", lambda m: judged.append(m) or real(m))
    usercode.user_modules()
    assert judged == []
