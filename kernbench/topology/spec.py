"""The topology file format: its schema, loading, overrides and cross-checks.

A topology describes the hierarchy once with counts and templates::

    system  — how many SIPs, the ring between them, the host link
    sip     — the W×H CUBE mesh (or torus), UCIe links, the IO chiplet
    cube    — routers (the intra-CUBE mesh), their links, where PEs, HBM
              slices, SRAM, M_CPU and the UCIe PHYs attach
    pe      — PE attributes (clock, engines, TCM, dispatch cost model)

Every number carries its unit in its key. Loading validates the whole file
and raises one :class:`~kernbench.errors.TopologyError` listing every
problem with its key path.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kernbench.errors import TopologyError
from kernbench.topology.schema import (
    Field,
    ListOf,
    MapOf,
    Section,
    non_negative,
    positive,
    positive_int,
    validate,
)
from kernbench.topology.shape import wrap_problems

DEFAULT_TOPOLOGY = "paper"


def _link(bw: float | None = None, prop: float | None = None) -> dict[str, Field]:
    return {
        "bw_gbps": Field(float, check=positive) if bw is None else Field(float, bw, positive),
        "prop_ns": Field(float, check=non_negative)
        if prop is None
        else Field(float, prop, non_negative),
    }


PE_COST_MODEL = Section(
    {
        "fixed_per_cmd_cycles": Field(float, 40.0, non_negative, "FIXED for CompositeCmd (D1, D3)"),
        "fixed_per_single_op_cmd_cycles": Field(
            float, 8.0, non_negative, "FIXED for single-op commands (D8)"
        ),
        "byte_cycles_recip": Field(float, 0.0625, non_negative, "R, cycles per logical byte"),
        "max_composite_logical_bytes": Field(int, 1024, positive_int, "D7 descriptor cap"),
    }
)

PE_ATTRS = Section(
    {
        "clock_freq_ghz": Field(float, 1.0, positive, "PE clock; converts cycles to ns"),
        "gemm_tflops": Field(float, 8.0, positive, "PE_GEMM peak, f16"),
        "math_elems_per_cycle": Field(float, 64.0, positive, "PE_MATH vector lanes"),
        "math_pipeline_cycles": Field(float, 4.0, non_negative, "PE_MATH fixed latency per op"),
        "gemm_pipeline_cycles": Field(float, 8.0, non_negative, "PE_GEMM fixed latency per op"),
        "tcm_bytes": Field(int, 16 * 2**20, positive_int, "TCM capacity"),
        "tcm_bw_gbps": Field(float, 512.0, positive, "TCM read/write bandwidth (FETCH/STORE)"),
        "scratch_bytes": Field(int, 2**20, positive_int, "kernel scratch in TCM"),
        "cpu_overhead_ns": Field(float, 2.0, non_negative, "PE_CPU per-command node overhead"),
        "sched_overhead_ns": Field(float, 1.0, non_negative, "PE_SCHEDULER per-command overhead"),
        "sched_queue_depth": Field(int, 16, positive_int, "commands PE_CPU may have in flight"),
        "ipcq_overhead_ns": Field(float, 2.0, non_negative, "PE_IPCQ per-message overhead"),
        "composite_tile_bytes": Field(
            int, 32768, positive_int, "bytes of a streamed tl.ref operand per composite tile"
        ),
        "pe_cost_model": PE_COST_MODEL,
    }
)

NODE = {"overhead_ns": Field(float, 0.0, non_negative)}

TOPOLOGY_SCHEMA = Section(
    {
        "name": Field(str),
        "description": Field(str, ""),
        "flit_bytes": Field(int, 256, positive_int, "NoC flit size"),
        "system": {
            "sips": Field(int, 1, positive_int),
            "sip_ring": Section(
                {**_link(), "overhead_ns": Field(float, 0.0, non_negative)}, optional=True
            ),
            "host": Section(
                {
                    "attach_sip": Field(int, 0, non_negative),
                    "overhead_ns": Field(float, 0.0, non_negative),
                    "link": _link(),
                },
                optional=True,
            ),
        },
        "sip": {
            "mesh": {
                "width": Field(int, 1, positive_int),
                "height": Field(int, 1, positive_int),
                "wrap": {  # a torus: wrap-around UCIe links (kernbench.topology.shape)
                    "x": Field(bool, False, help="join the last CUBE column to the first"),
                    "y": Field(bool, False, help="join the last CUBE row to the first"),
                },
            },
            "ucie": Section({**_link(), "phy_overhead_ns": Field(float, 0.0, non_negative)}),
            "io_chiplet": Section(
                {
                    "attach_cube": Field(int, 0, non_negative),
                    "attach": Field(str, "hub"),
                    "overhead_ns": Field(float, 0.0, non_negative),
                    "link": _link(),
                },
                optional=True,
            ),
        },
        "cube": {
            "routers": MapOf(
                {"overhead_ns": Field(float, 0.0, non_negative), "half": Field(int, -1)},
                min_len=1,
            ),
            "links": ListOf(
                {"a": Field(str), "b": Field(str), **_link()},
            ),
            "pes": {
                "count": Field(int, 8, positive_int),
                "attach": ListOf(Field(str), min_len=1),
                "link": _link(),
                "dma_overhead_ns": Field(float, 0.0, non_negative),
            },
            "hbm": {
                "attach": ListOf(Field(str), min_len=1),
                "link": _link(),
                "overhead_ns": Field(float, 0.0, non_negative),
                "slice_capacity_bytes": Field(int, 6 * 2**30, positive_int),
                "channels_per_slice": Field(int, 8, positive_int),
                "channel_bw_gbps": Field(float, 32.0, positive),
                "burst_bytes": Field(int, 256, positive_int),
            },
            "sram": Section(
                {
                    "attach": Field(str),
                    "link": _link(),
                    "overhead_ns": Field(float, 0.0, non_negative),
                    "capacity_bytes": Field(int, 32 * 2**20, positive_int),
                    "bw_gbps": Field(float, check=positive),
                },
                optional=True,
            ),
            "m_cpu": Section(
                {"attach": Field(str), "link": _link(), "overhead_ns": Field(float, 0.0, non_negative)},
                optional=True,
            ),
            "ucie_attach": Field(str, "hub", help="router the four UCIe PHYs hang off"),
            "ucie_link": Section(_link(), optional=True),
        },
        "pe": {"attrs": PE_ATTRS},
    }
)


def topology_dir() -> Path:
    """Where the shipped named topologies live (works from a wheel, too)."""
    return Path(str(resources.files("topologies")))


def named_topologies() -> list[str]:
    return sorted(p.stem for p in topology_dir().glob("*.yaml"))


def resolve(name_or_path: str | Path | None) -> Path:
    """A named topology (``paper``) or a path to a YAML file."""
    if name_or_path is None:
        name_or_path = DEFAULT_TOPOLOGY
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise TopologyError([f"file not found: {p}"], str(p))
        return p
    candidate = topology_dir() / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    known = ", ".join(named_topologies())
    raise TopologyError([f"unknown topology {str(name_or_path)!r}; named topologies: {known}"])


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` → (["a", "b", "c"], value parsed as a YAML scalar)."""
    if "=" not in text:
        raise TopologyError([f"--set {text!r}: expected KEY.PATH=VALUE"], "--set")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise TopologyError([f"--set {text!r}: empty key path"], "--set")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise TopologyError([f"--set {key}: value {raw!r} is not valid YAML ({exc})"], "--set")
    return parts, value


def apply_overrides(doc: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides to a raw document (validated later).

    A list item is addressed by its index (``cube.links.4.prop_ns=1``). A
    path through something that is not a section, or past the end of a
    list, is reported as a :class:`TopologyError` naming the path.
    """
    doc = copy.deepcopy(doc)
    for text in overrides:
        parts, value = parse_override(text)
        node: Any = doc
        for i, part in enumerate(parts):
            where = ".".join(parts[: i + 1])
            last = i == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise TopologyError(
                        [f"--set {text}: {where}: a list of {len(node)} item(s) is indexed 0..{len(node) - 1}"],
                        "--set",
                    )
                if last:
                    node[int(part)] = value
                else:
                    node = node[int(part)]
                continue
            if not isinstance(node, dict):
                raise TopologyError([f"--set {text}: {'.'.join(parts[:i])} is a value, not a section"], "--set")
            if last:
                node[part] = value
            else:
                nxt = node.get(part)
                if nxt is None:
                    nxt = node[part] = {}
                node = nxt
    return doc


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise TopologyError([f"cannot read: {exc}"], str(path)) from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise TopologyError([f"invalid YAML: {where}{problem}"], str(path)) from None
    if not isinstance(doc, dict):
        raise TopologyError([f"expected a mapping at the top level, got {type(doc).__name__}"], str(path))
    return doc


def load_spec(
    name_or_path: str | Path | None = None, overrides: list[str] | None = None
) -> dict[str, Any]:
    """Read, override, validate and cross-check a topology document."""
    path = resolve(name_or_path)
    doc = read_yaml(path)
    if overrides:
        doc = apply_overrides(doc, overrides)
    return validate_spec(doc, str(path))


def validate_spec(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """Schema, then cross-checks; every problem in one TopologyError."""
    spec, problems = validate(doc, TOPOLOGY_SCHEMA)
    if not problems:
        problems = cross_check(spec)
    if problems:
        raise TopologyError(problems, source)
    return spec


def cross_check(spec: dict[str, Any]) -> list[str]:
    """References between sections, counts that must agree, reachability."""
    problems: list[str] = []
    cube = spec["cube"]
    routers = cube["routers"]

    def ref(path: str, name: str) -> None:
        if name not in routers:
            guess = _guess(name, routers)
            problems.append(f"{path}: {name!r} is not a router of cube.routers{guess}")

    for i, link in enumerate(cube["links"]):
        ref(f"cube.links[{i}].a", link["a"])
        ref(f"cube.links[{i}].b", link["b"])
        if link["a"] == link["b"]:
            problems.append(f"cube.links[{i}]: a link from {link['a']!r} to itself")
    n_pes = cube["pes"]["count"]
    for key in ("pes", "hbm"):
        attach = cube[key]["attach"]
        if len(attach) != n_pes:
            problems.append(
                f"cube.{key}.attach: lists {len(attach)} router(s) but cube.pes.count is {n_pes}"
            )
        for i, name in enumerate(attach):
            ref(f"cube.{key}.attach[{i}]", name)
    for key in ("sram", "m_cpu"):
        if cube[key] is not None:
            ref(f"cube.{key}.attach", cube[key]["attach"])
    ref("cube.ucie_attach", cube["ucie_attach"])
    sip = spec["sip"]
    n_cubes = sip["mesh"]["width"] * sip["mesh"]["height"]
    problems.extend(wrap_problems(spec))
    io = sip["io_chiplet"]
    if io is not None:
        if io["attach_cube"] >= n_cubes:
            problems.append(
                f"sip.io_chiplet.attach_cube: {io['attach_cube']} but the mesh has {n_cubes} CUBE(s)"
            )
        ref("sip.io_chiplet.attach", io["attach"])
    system = spec["system"]
    if system["sips"] > 1 and system["sip_ring"] is None:
        problems.append("system.sip_ring: required when system.sips > 1")
    if system["sips"] > 1 and io is None:
        problems.append("sip.io_chiplet: required when system.sips > 1 (the ring joins IO chiplets)")
    host = system["host"]
    if host is not None:
        if io is None:
            problems.append("system.host: needs sip.io_chiplet (the host attaches through it)")
        if host["attach_sip"] >= system["sips"]:
            problems.append(
                f"system.host.attach_sip: {host['attach_sip']} but there are {system['sips']} SIP(s)"
            )
    if n_cubes > 1 and cube["ucie_link"] is None:
        problems.append("cube.ucie_link: required when the mesh has more than one CUBE")
    hbm = cube["hbm"]
    if spec["flit_bytes"] != hbm["burst_bytes"]:
        problems.append(
            f"cube.hbm.burst_bytes: {hbm['burst_bytes']} must equal flit_bytes "
            f"({spec['flit_bytes']}); one flit carries one burst"
        )
    attrs = spec["pe"]["attrs"]
    if attrs["scratch_bytes"] > attrs["tcm_bytes"]:
        problems.append(
            f"pe.attrs.scratch_bytes: {attrs['scratch_bytes']} exceeds pe.attrs.tcm_bytes "
            f"({attrs['tcm_bytes']})"
        )
    if not problems:
        problems.extend(_unreachable_pairs(cube))
    return problems


def _guess(name: str, known: dict[str, Any]) -> str:
    import difflib

    g = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    return f" (did you mean {g[0]!r}?)" if g else ""


def _unreachable_pairs(cube: dict[str, Any]) -> list[str]:
    """Every attachment point of the CUBE template must reach every other."""
    adj: dict[str, set[str]] = {r: set() for r in cube["routers"]}
    for link in cube["links"]:
        adj[link["a"]].add(link["b"])
        adj[link["b"]].add(link["a"])
    used: dict[str, str] = {}
    for i, r in enumerate(cube["pes"]["attach"]):
        used.setdefault(r, f"pe{i}")
    for i, r in enumerate(cube["hbm"]["attach"]):
        used.setdefault(r, f"hbm.slice{i}")
    for key in ("sram", "m_cpu"):
        if cube[key] is not None:
            used.setdefault(cube[key]["attach"], key)
    used.setdefault(cube["ucie_attach"], "ucie")
    names = sorted(used)
    start = names[0]
    seen = {start}
    stack = [start]
    while stack:
        for nxt in sorted(adj[stack.pop()]):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return [
        f"cube: no route between {used[start]} (at router {start!r}) and {used[r]} (at router {r!r})"
        for r in names
        if r not in seen
    ]
