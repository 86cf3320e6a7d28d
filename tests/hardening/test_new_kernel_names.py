"""Beyond round 2's list, found by its replay (tools/hardening_replay.py, class 9): ``kernbench new kernel
NAME`` writes a file that runs, or refuses NAME in one line and writes nothing.

``new kernel class`` wrote ``def class(...)``, a file that does not parse; ``new kernel np`` (or ``tl``,
``float``) one whose own name replaced what its code calls; a name over 255 bytes was an OSError
traceback (the file was looked for before its path was checked)."""

from __future__ import annotations

import json
import keyword

import pytest
from hardening_harness import assert_failed_cleanly, invoke, snapshot_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.commands.new import _names_the_template_uses

#: names that must be refused: Python's keywords, what the template's functions use when they run, malformed ones, too long
REFUSED = sorted({*keyword.kwlist, "np", "tl", "float", "range", "2bad", "a-b", "a.b", "../x", "", "n" * 300})
NAMES = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_]{0,12}\Z") | st.sampled_from(REFUSED)


def test_the_refused_names_are_what_the_template_relies_on_when_it_runs():
    """Names only its decorators read (kernel, Option) are read before the kernel's def binds its own."""
    assert _names_the_template_uses() == {"np", "tl", "float", "range"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES)
def test_a_new_kernel_file_runs_or_its_name_is_refused_in_one_line(tmp_path_factory, capsys, name):
    folder = tmp_path_factory.mktemp("new")
    (folder / "keep.py").write_text("mine")
    before = (folder, snapshot_files(folder))
    got = invoke(cli.main, ["new", "kernel", name, "--out", str(folder / f"{name}.py")], capsys, trace_memory=False)
    if got.status != 0:
        cause = rf"new kernel '{name[:40]}|--out .*too long|.py: not a file name"
        assert_failed_cleanly(got, 2, cause, before=before, max_seconds=5)
        assert got.err.count("\n") == 1 and snapshot_files(folder) == before[1]
        return
    assert name not in REFUSED, f"{name!r} was accepted"
    path = folder / f"{name}.py"
    ran = invoke(cli.main, ["run", str(path), "--n", "256", "--tile", "128", "--pes", "2", "--json"], capsys, trace_memory=False)
    assert ran.status == 0, ran.err
    record = json.loads(ran.out)
    assert record["kernel"] == name.replace("_", "-") and record["max_abs_err"] < 0.05  # (as @kernel names it)


@pytest.mark.parametrize("name", ["class", "np", "n" * 300])
def test_the_replayed_names_are_refused(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    got = invoke(cli.main, ["new", "kernel", name], capsys)
    assert_failed_cleanly(got, 2, r"is a Python keyword|the file.s own code uses|too long", before=(tmp_path, {}), max_seconds=5)
    assert list(tmp_path.iterdir()) == []
