"""The ``tl`` reference (docs/tl.md) is complete, up to date and true: every public name has an
entry with every section, the file is what ``python -m kernbench.tl.reference`` writes, every
example runs as a kernel on cube1 and issues the command its Cost names, and every op kind in
the table runs as a one-op composite on the engine the table names."""

from __future__ import annotations

import linecache
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import kernbench.tl as tl
from kernbench.events.types import EventKind
from kernbench.pe.opkinds import OP_KINDS
from kernbench.runtime.api import Runtime
from kernbench.tl import reference

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(tl.__all__)


def test_every_public_name_has_an_entry_with_every_required_section():
    assert reference.problems() == []
    for name in NAMES:
        e = reference.entry(name)
        assert e.summary and e.example, name
        assert [t for t in reference.SECTIONS if t not in reference.OPTIONAL] == [t for t in e.sections if t not in reference.OPTIONAL]


def test_a_public_name_without_an_entry_or_a_section_is_reported(monkeypatch):
    def undocumented(x: int) -> int:
        return x

    def half_documented(x: int) -> int:
        """Something.

        Shapes:
            Any.
        Cost:
            - Command: none.
        Remarks:
            Not a section.
        """
        return x

    def misordered(x: int) -> int:
        """Something.

        Shapes:
            Any.
        Dtypes:
            Any.
        Example:
            tl.misordered(1)
        Cost:
            Free time.
        """
        return x

    monkeypatch.setattr(tl, "__all__", [*tl.__all__, "undocumented", "half_documented", "misordered"])
    for fn in (undocumented, half_documented, misordered):
        monkeypatch.setattr(tl, fn.__name__, fn, raising=False)
    found = reference.problems()
    assert "tl.undocumented: public (in tl.__all__) but in no group of kernbench.tl.reference.GROUPS" in found
    assert "tl.undocumented: no docstring" in found
    assert "tl.half_documented: no Dtypes section" in found
    assert "tl.half_documented: no Example section" in found
    assert any("tl.half_documented: unknown section 'Remarks'" in p for p in found)
    assert (
        "tl.misordered: sections out of order (Shapes, Dtypes, Example, Cost; the order is Shapes, Dtypes, Cost, Errors, Example)" in found
    )
    assert "tl.misordered: Cost does not start with '- Command: ``XxxCmd``…' or '- Command: none'" in found
    assert reference.main(["--check"], out=lambda s: None) == 2


def test_docs_tl_md_is_what_the_generator_writes():
    path = ROOT / "docs" / "tl.md"
    assert path.read_text(encoding="utf-8") == reference.render(), (
        f"docs/tl.md is out of date: run `{reference.REGENERATE}` from the repository root"
    )


def test_the_generator_writes_the_file_and_check_tells_when_it_differs(tmp_path):
    path = tmp_path / "tl.md"
    said: list[str] = []
    assert reference.main(["--output", str(path)], out=said.append) == 0
    assert path.read_text(encoding="utf-8") == reference.render()
    assert reference.main(["--check", "--output", str(path)], out=said.append) == 0
    path.write_text("stale", encoding="utf-8")
    assert reference.main(["--check", "--output", str(path)], out=said.append) == 1
    assert said[-1] == f"{path} is out of date: run `{reference.REGENERATE}` from the repository root"


def test_every_op_kind_and_every_public_name_appear_in_the_reference():
    text = reference.render()
    for name in NAMES:
        assert f"\n### tl.{name}\n" in text
    for kind in OP_KINDS:
        assert f"\n| `{kind}` |" in text


# --- the examples run ------------------------------------------------------------------


def run_example(name: str) -> Any:
    """Run ``tl.<name>``'s example in the harness the reference shows; its RunResult."""
    source = reference.harness(reference.entry(name).example)
    filename = f"<tl.{name} example>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)  # errors show its lines
    namespace: dict[str, Any] = {"__name__": f"tl_{name}_example"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["result"]


@pytest.mark.parametrize("name", NAMES)
def test_the_example_runs_and_issues_the_command_its_cost_names(name):
    e = reference.entry(name)
    result = run_example(name)
    log = [entry for pe in result.pes for entry in result.op_logs[pe]]
    claim = e.command()
    assert claim is not None
    if claim.group("cmd") is None:  # "Command: none": an example of it alone takes no time
        assert log or result.latency_ns == 0
        return
    issued = [x for x in log if x["cmd"] == claim.group("cmd")]
    assert issued, f"tl.{name}'s example issues no {claim.group('cmd')}: {[x['cmd'] for x in log]}"
    if claim.group("kind") and claim.group("cmd") == "MathCmd":
        issued = [x for x in issued if x["op"] == f"compute/math.{claim.group('kind')}"]
        assert issued, f"tl.{name}'s example issues no MathCmd of kind {claim.group('kind')}"
    sizes = {x["logical_bytes"] for x in issued}
    if claim.group("bytes"):
        assert int(claim.group("bytes")) in sizes
    # sizes an example's comments state ("# … 66 logical bytes") are the ones it issues
    for stated in re.findall(r"(\d+) logical bytes", e.example):
        assert int(stated) in sizes, f"tl.{name}'s example says {stated} logical bytes; it issues {sorted(sizes)}"


# --- the op kinds table is true --------------------------------------------------------

SHAPES = {"gemm": {"a": (64, 128), "b": (128, 32)}}


@pytest.mark.parametrize("kind", sorted(OP_KINDS))
def test_every_op_kind_runs_as_a_one_op_composite_with_the_operands_and_engine_the_table_names(cube1, kind):
    k = OP_KINDS[kind]
    rng = np.random.default_rng(1)
    shapes = SHAPES.get(kind, {a: (64, 128) if a != "b" else (64, 1) for a in k.arity})
    values = {a: rng.uniform(0.5, 1.5, s).astype(np.float16) for a, s in shapes.items()}
    expected = k.compute(list(values.values()), {}, (64, 128) if k.shaped else None)  # a shaped kind: out's shape
    rt = Runtime(cube1)
    tensors = [rt.deploy(v, name=a) for a, v in values.items()]
    got: dict[str, np.ndarray] = {}

    def kernel(*hbm):
        out = tl.zeros(expected.shape)
        tl.composite([tl.OpSpec(kind, {a: tl.ref(t) for a, t in zip(k.arity, hbm, strict=True)}, out)])
        got["out"] = out.numpy()

    rt.launch(kernel, pes=[0], args=tensors)
    result = rt.run(record=True)
    np.testing.assert_allclose(got["out"], expected, rtol=1e-6)
    assert result.op_logs["sip0.cube0.pe0"][-1]["ops"] == [kind]
    assert reference.ENGINE_WORK[k.engine][0] == f"PE_{k.engine.upper()}"  # the engine the table names: its lane
    busy = [e for e in result.events if e.kind is EventKind.ENGINE_BUSY and e.component == f"sip0.cube0.pe0.{k.engine}"]
    assert [e.label for e in busy] == [kind]  # one tile, on that engine
