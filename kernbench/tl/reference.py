"""The ``tl`` reference, ``docs/tl.md``: generated from the docstrings of :mod:`kernbench.tl`,
the op-kind table (:data:`kernbench.pe.opkinds.OP_KINDS`) and the topology schema, so it
cannot drift from them.

Run ``python -m kernbench.tl.reference`` from the repository root to write it
(``--check`` only compares). ``tests/tl/test_reference.py`` fails when a public
name has no entry, an entry misses a section, the file differs from what this
module writes, or an example does not run.

Every public name's docstring has one shape (:data:`SECTIONS`)::

    Summary: one line.

    Free text, as long as it needs (optional).

    Shapes:
        What it takes and gives.
    Dtypes:
        Which dtypes, and what it computes in.
    Cost:
        - Command: ``XxxCmd`` of op kind ``k``, N logical bytes.   (or "- Command: none")
        - PE_CPU / Engines / Scratch: in the terms of the module docstring.
    Errors:
        What it raises (optional).
    Example:
        Lines run inside a kernel of the example harness (:func:`harness`).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernbench.tl as tl
from kernbench.pe.opkinds import OP_KINDS, OpKind
from kernbench.topology.schema import Field, Section
from kernbench.topology.spec import PE_ATTRS

SECTIONS = ("Shapes", "Dtypes", "Cost", "Errors", "Example")
OPTIONAL = frozenset({"Errors"})
OUTPUT = Path("docs/tl.md")
REGENERATE = "python -m kernbench.tl.reference"

# The first line of every Cost section: which command the name issues (checked against
# the op log of its example by the tests).
COMMAND = re.compile(
    r"- Command: (?:none\b|``(?P<cmd>\w+)``(?: (?:of op kind|\(op kind) ``(?P<kind>\w+)``\)?)?(?:, (?P<bytes>\d+) logical bytes)?)"
)


@dataclass(frozen=True, slots=True)
class Group:
    """A section of the reference: its title, one line about it, and its names in order."""

    title: str
    about: str
    names: tuple[str, ...]


GROUPS = (
    Group("Program and PE_CPU", "Who am I, and explicit CPU time.", ("program_id", "num_programs", "cycles")),
    Group("Memory", "Between HBM (or SRAM) and TCM, and within TCM.", ("load", "store", "ref", "copy")),
    Group("Scratch tensors", "TCM tensors made in place, for free.", ("full", "zeros")),
    Group("Matrix multiply", "One GEMM on PE_GEMM.", ("dot",)),
    Group("Elementwise", "One binary op on PE_MATH.", ("add", "sub", "mul", "div", "maximum", "minimum", "scale", "clamp")),
    Group(
        "Unary math",
        "One op on PE_MATH; the transcendental ones at their own rate (tmath).",
        ("exp", "log", "sqrt", "rsqrt", "reciprocal", "pow", "tanh", "sigmoid", "silu", "gelu", "sin", "cos", "neg", "abs"),
    ),
    Group(
        "Broadcasts",
        "A (rows, 1) column or a (1, cols) row applied to every row or column, one op on PE_MATH.",
        ("mul_bcast", "sub_bcast", "add_bcast", "add_bcast_row", "sub_bcast_row", "mul_bcast_row", "div_bcast_row"),
    ),
    Group("Selection and conversion", "A mask, a select and a dtype conversion, one op on PE_MATH.", ("causal_mask", "where", "cast")),
    Group("Reductions", "One op on PE_MATH.", ("max", "sum", "rowmax", "rowsum", "rowmean")),
    Group(
        "Views",
        "Another shape of the same tensor: free when it is address arithmetic, the copy it is otherwise.",
        ("view", "reshape", "transpose"),
    ),
    Group(
        "Indexing",
        "Pick by value: top-k and argmax on PE_MATH, rows gathered from or scattered to HBM one DMA per row.",
        ("topk", "argmax", "gather", "scatter"),
    ),
    Group("Composite", "Many ops and tiles, one command (ADR-0064 D7, D8).", ("composite", "OpSpec")),
    Group("Communication", "Between the programs of a launch, through PE_IPCQ.", ("send", "recv_async", "wait")),
)

# Per engine of an op kind: its name, what one op of it is worth (kernbench/pe/work.py) and the time
# the engine takes for that (in the terms of kernbench.tl's docstring).
ENGINE_WORK = {
    "gemm": (
        "PE_GEMM",
        "F = 2·m·k·n FLOPs",
        "gemm(F), (m, k) the last two axes of `a`, n the last axis of `b` (its second-to-last with `transpose_b`)",
    ),
    "math": ("PE_MATH", "E = the most elements of any operand or `out`", "math(E), or tmath(passes × E) for a transcendental kind"),
}


def _work(k: OpKind) -> str:
    """The work column of the op kinds table: its engine's, at its rate and passes."""
    if k.engine != "math":
        return ENGINE_WORK[k.engine][1]
    if k.rate == "transcendental":
        return "E elements: tmath(E)" if k.passes == 1 else f"E elements: tmath({k.passes}E)"
    return "E elements: math(E)"


@dataclass(frozen=True, slots=True)
class ExampleTensor:
    """An HBM tensor every example may use: its name, shape and how the harness fills it."""

    name: str
    shape: tuple[int, ...]
    fill: str  # numpy expression of the values, ``{shape}`` for the shape; "" for rt.empty (zeros)
    why: str

    def line(self) -> str:
        if not self.fill:
            return f'{self.name} = rt.empty({self.shape}, name="{self.name}")  # {self.why}'
        values = self.fill.format(shape=self.shape)
        return f'{self.name} = rt.deploy({values}, name="{self.name}")  # {self.why}'


EXAMPLE_TOPOLOGY = "cube1"
EXAMPLE_PES = (0, 1)
EXAMPLE_TENSORS = (
    ExampleTensor("x", (64, 128), "rng.standard_normal({shape})", "an input"),
    ExampleTensor("y", (64, 128), "rng.uniform(0.5, 1.5, {shape})", "positive, for tl.div"),
    ExampleTensor("w", (128, 64), "rng.standard_normal({shape})", "a weight, for tl.dot"),
    ExampleTensor("out", (64, 128), "", "to store into"),
)


def harness(example: str) -> str:
    """A runnable script: the example tensors, ``example`` as the body of a kernel, one launch, one run.

    The tests run exactly this for every example; the reference shows it.
    """
    names = ", ".join(t.name for t in EXAMPLE_TENSORS)
    tensors = "\n".join(t.line() for t in EXAMPLE_TENSORS)
    body = textwrap.indent(example.strip("\n"), "    ")
    return (
        "import numpy as np\n\nfrom kernbench import Runtime, tl\n\n"
        "rng = np.random.default_rng(0)\n"
        f'rt = Runtime("{EXAMPLE_TOPOLOGY}")\n'
        f"{tensors}\n\n\n"
        f"def example({names}):\n{body}\n\n\n"
        f"rt.launch(example, pes={list(EXAMPLE_PES)}, args=({names}))\n"
        "result = rt.run()\n"
    )


# --- entries ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    """One public name's docstring, split into its parts."""

    name: str
    signature: str
    summary: str
    text: str  # the free text between the summary and the first section
    sections: dict[str, str]  # in SECTIONS order, bodies dedented
    problems: tuple[str, ...]  # what its docstring lacks or has out of shape

    @property
    def example(self) -> str:
        return self.sections.get("Example", "")

    def command(self) -> re.Match[str] | None:
        """The Cost section's Command line, parsed (None when it has none)."""
        return COMMAND.match(self.sections.get("Cost", ""))


_HEADER = re.compile(r"^([A-Z][A-Za-z ]*):$")


def entry(name: str) -> Entry:
    """``tl.<name>``'s entry: its docstring split into summary, free text and sections, and what is amiss."""
    obj = getattr(tl, name)
    lines = inspect.cleandoc(obj.__doc__ or "").splitlines()
    summary = lines[0].strip() if lines else ""
    free, sections, problems = _split(name, lines[1:])
    bodies = {t: textwrap.dedent("\n".join(sections[t])).strip("\n") for t in SECTIONS if t in sections}
    problems += _shape_problems(name, list(sections), bodies) if summary else [f"tl.{name}: no docstring"]
    return Entry(name, signature(name, obj), summary, "\n".join(free).strip("\n"), bodies, tuple(problems))


def _split(name: str, lines: list[str]) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """The free text before the first section, each section's lines, and misplaced headers or lines."""
    free: list[str] = []
    sections: dict[str, list[str]] = {}
    problems: list[str] = []
    current = free
    for line in lines:
        m = _HEADER.match(line)
        if m:
            title = m.group(1)
            if title not in SECTIONS:
                problems.append(f"tl.{name}: unknown section {title!r} (sections: {', '.join(SECTIONS)})")
            elif title in sections:
                problems.append(f"tl.{name}: section {title!r} twice")
            current = sections.setdefault(title, [])
        elif current is not free and line.strip() and not line.startswith("    "):
            problems.append(f"tl.{name}: a line under {next(reversed(sections))!r} is not indented: {line.strip()!r}")
        else:
            current.append(line)
    return free, sections, problems


def _shape_problems(name: str, order: list[str], bodies: dict[str, str]) -> list[str]:
    """Required sections missing, sections out of order, a Cost without its Command line."""
    out = [f"tl.{name}: no {t} section" for t in SECTIONS if t not in OPTIONAL and not bodies.get(t)]
    known = [t for t in order if t in SECTIONS]
    if known != sorted(known, key=SECTIONS.index):
        out.append(f"tl.{name}: sections out of order ({', '.join(known)}; the order is {', '.join(SECTIONS)})")
    if bodies.get("Cost") and not COMMAND.match(bodies["Cost"]):
        out.append(f"tl.{name}: Cost does not start with '- Command: ``XxxCmd``…' or '- Command: none'")
    return out


def problems() -> list[str]:
    """Everything that keeps the reference from being complete: names without an entry, entries
    without a section, op kinds without a description or an engine the reference knows."""
    public = list(tl.__all__)
    grouped = [n for g in GROUPS for n in g.names]
    out = [f"tl.{n}: public (in tl.__all__) but in no group of kernbench.tl.reference.GROUPS" for n in public if n not in grouped]
    out += [f"tl.{n}: in GROUPS but not public (tl.__all__)" for n in grouped if n not in public]
    out += [f"tl.{n}: in GROUPS twice" for n in sorted({n for n in grouped if grouped.count(n) > 1})]
    for n in public:
        out += entry(n).problems
    for k in OP_KINDS.values():
        if not k.doc:
            out.append(f"op kind {k.name!r}: no doc in OP_KINDS (kernbench/pe/opkinds.py)")
        if k.engine not in ENGINE_WORK:
            out.append(f"op kind {k.name!r}: engine {k.engine!r} has no ENGINE_WORK entry in kernbench.tl.reference")
    return out


# --- signatures ------------------------------------------------------------------------


class _Text:
    """Shows as its text (an annotation or a default as the source writes it)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _default(value: Any) -> _Text:
    if isinstance(value, type):  # np.float32
        return _Text(f"np.{value.__name__}" if value.__module__ == "numpy" else value.__name__)
    return _Text(repr(value))


def signature(name: str, obj: object) -> str:
    """``tl.<name>(params) -> result`` with the annotations as the source writes them."""
    if not callable(obj):
        return f"tl.{name}"
    sig = inspect.signature(obj)
    factories: dict[str, Callable[[], Any]] = {}
    if dataclasses.is_dataclass(obj):
        factories = {f.name: f.default_factory for f in dataclasses.fields(obj) if f.default_factory is not dataclasses.MISSING}
    params = []
    for p in sig.parameters.values():
        ann = _Text(str(p.annotation)) if p.annotation is not p.empty else p.empty
        default: Any = p.default
        if repr(default) == "<factory>":  # a dataclass field's default_factory
            default = _Text(repr(factories[p.name]()))
        elif default is not p.empty:
            default = _default(default)
        params.append(p.replace(annotation=ann, default=default))
    ret = sig.return_annotation
    # a class shows its constructor's parameters (its __init__ returns None)
    returns = _Text(str(ret)) if ret is not sig.empty and not inspect.isclass(obj) else sig.empty
    return f"tl.{name}{sig.replace(parameters=params, return_annotation=returns)}"


# --- rendering -------------------------------------------------------------------------


def _md(text: str) -> str:
    """Docstring markup to Markdown: ``code`` to `code`, "op kinds table" to a link to it."""
    text = re.sub(r"``(.+?)``", r"`\1`", text, flags=re.S)
    return re.sub(r"op(\s+)kinds(\s+)table", r"[op\1kinds\2table](#composite-op-kinds)", text)


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def _heading(name: str) -> str:
    return f"tl.{name}"


def _section(title: str, body: str) -> str:
    if title == "Example":
        return f"**Example**\n\n```python\n{body}\n```"
    if body.startswith("- "):
        return f"**{title}**\n\n{_md(body)}"
    return f"**{title}.** {_md(' '.join(body.split()))}"


def _render_entry(e: Entry) -> str:
    parts = [f"### {_heading(e.name)}", f"```python\n{e.signature}\n```", _md(e.summary)]
    if e.text:
        parts.append(_md(e.text))
    parts += [_section(t, e.sections[t]) for t in SECTIONS if t in e.sections]
    return "\n\n".join(parts)


def _kind_users() -> dict[str, list[str]]:
    """Op kind -> the ``tl`` names whose Command line issues it as a single op."""
    users: dict[str, list[str]] = {}
    for g in GROUPS:
        for n in g.names:
            m = entry(n).command()
            if m is not None and m.group("kind"):
                users.setdefault(m.group("kind"), []).append(f"`tl.{n}`")
    return users


# How a composite cuts an op of a kind into steps (OpKind.steps; kernbench/pe/steps.py).
STEPS = {
    "k": "K: A's columns and B's rows; C whole after the last step",
    "elements": "elements",
    "rows": "rows; an operand or result without them whole",
}


def render_op_kinds() -> str:
    users = _kind_users()
    rows = [
        "| kind | engine | operands, in order | `extra` it reads | work of one op | a composite streams | computes | as a single op |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k in OP_KINDS.values():
        engine = ENGINE_WORK[k.engine][0]
        work = _work(k)
        params = ", ".join(f"`{p}`" for p in k.params) or "—"
        operands = ", ".join(f"`{a}`" for a in k.arity) or "none (the shape is `out`'s)"
        single = ", ".join(users.get(k.name, [])) or "—"
        rows.append(f"| `{k.name}` | {engine} | {operands} | {params} | {work} | {STEPS[k.steps]} | {k.doc} | {single} |")
    engines = "\n".join(f"- **{label}**: {work}; {time}." for label, work, time in ENGINE_WORK.values())
    return (
        "## Composite op kinds\n\n"
        "The kinds a `tl.OpSpec` names, generated from `OP_KINDS` (`kernbench/pe/opkinds.py`). Every kind also "
        "reads `accumulate` (add the result into `out`; numerics only) from `extra`; any other key is carried "
        "and counted in the logical bytes only. An op's work, and the time its engine takes for it "
        "(`kernbench/pe/work.py`; in a composite, each step takes the time of the work of its slice of the "
        "axis the kind streams along, `kernbench/pe/steps.py`):\n\n"
        f"{engines}\n\n" + "\n".join(rows)
    )


def _fields(section: Section, prefix: str) -> list[tuple[str, Field]]:
    out: list[tuple[str, Field]] = []
    for key, f in section.fields.items():
        if isinstance(f, Section):
            out += _fields(f, f"{prefix}{key}.")
        elif isinstance(f, Field):
            out.append((f"{prefix}{key}", f))
    return out


def render_parameters() -> str:
    rows = ["| parameter | default | meaning |", "|---|---|---|"]
    rows += [f"| `pe.attrs.{k}` | {f.default!r} | {f.help} |" for k, f in _fields(PE_ATTRS, "")]
    return (
        "## Parameters the costs name\n\n"
        "Every PE's attributes, from the topology schema (`kernbench/topology/spec.py`), with the defaults a "
        "topology file may override; `--set pe.attrs.KEY=VALUE` changes one for a run. The costs above "
        "name them without the `pe.attrs.` prefix.\n\n" + "\n".join(rows)
    )


def render_examples() -> str:
    tensors = "\n".join(f"| `{t.name}` | {t.shape} | `{t.fill.format(shape='…') or 'zeros'}` | {t.why} |" for t in EXAMPLE_TENSORS)
    return (
        "## How the examples run\n\n"
        f"Every example is the body of a kernel launched on PEs {', '.join(map(str, EXAMPLE_PES))} of the "
        f"`{EXAMPLE_TOPOLOGY}` topology (programs 0 and 1) with these float16 tensors in PE 0's HBM slice as "
        "its arguments:\n\n"
        "| name | shape | values | for |\n|---|---|---|---|\n"
        f"{tensors}\n\n"
        "The tests run every example exactly so (`tests/tl/test_reference.py`), with its asserts, and check "
        "that it issues the command its Cost names, with those logical bytes:\n\n"
        f"```python\n{harness('tl.store(out, tl.load(x))  # the example, here')}```"
    )


def render() -> str:
    """The whole reference, as ``docs/tl.md`` holds it."""
    mod = inspect.cleandoc(tl.__doc__ or "")
    intro = mod.split("\n", 1)[1].strip("\n") if "\n" in mod else ""
    contents = [f"- **{g.title}**: " + ", ".join(f"[`tl.{n}`](#{_anchor(_heading(n))})" for n in g.names) for g in GROUPS]
    contents += [f"- [{t}](#{_anchor(t)})" for t in ("Composite op kinds", "Parameters the costs name", "How the examples run")]
    parts = [
        "# The `tl` reference",
        f"<!-- Generated by `{REGENERATE}` from the docstrings of kernbench/tl, the op kinds of "
        "kernbench/pe/opkinds.py and the topology schema: edit those, then regenerate. -->",
        "Every public name of `kernbench.tl` (the tile-level kernel API): what it takes, what it gives and what "
        "it costs in the model, with an example that the tests run. The decisions it cites: "
        "[ADR-0064](adr/ADR-0064-dispatch-cost-model.md) (dispatch cost), "
        "[ADR-0062](adr/ADR-0062-lazy-load.md) (lazy load); the transfer model: [timing.md](timing.md).",
        _md(intro),
        "## Contents\n\n" + "\n".join(contents),
    ]
    for g in GROUPS:
        parts.append(f"## {g.title}\n\n{g.about}")
        parts += [_render_entry(entry(n)) for n in g.names]
    parts += [render_op_kinds(), render_parameters(), render_examples()]
    return "\n\n".join(parts) + "\n"


# --- command line ----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, out: Callable[[str], object] = print) -> int:
    """Write (or ``--check``) the reference; 0 when done or up to date, 1 when out of date, 2 when incomplete."""
    ap = argparse.ArgumentParser(prog=REGENERATE, description="Write docs/tl.md, the tl reference, from the docstrings.")
    ap.add_argument("--output", type=Path, default=OUTPUT, help=f"where to write it (default: {OUTPUT}, from the repository root)")
    ap.add_argument("--check", action="store_true", help="only compare: exit 1 if the file differs from what would be written")
    args = ap.parse_args(argv)
    found = problems()
    if found:
        out("the tl reference is incomplete:\n" + "\n".join(f"  - {p}" for p in found))
        return 2
    text = render()
    path: Path = args.output
    if args.check:
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out(f"{path} is out of date: run `{REGENERATE}` from the repository root")
            return 1
        out(f"{path} is up to date")
        return 0
    path.write_text(text, encoding="utf-8")
    out(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
