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
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kernbench.errors import InputPathError, TopologyError
from kernbench.inputs import exists
from kernbench.topology import yamldoc
from kernbench.topology.schema import (
    Field,
    ListOf,
    MapOf,
    Section,
    between,
    join_path,
    validate,
)
from kernbench.topology.shape import wrap_problems

DEFAULT_TOPOLOGY = "paper"

# Every number has a range (units in the names). Beyond these a value is a
# typo or an attack, not hardware: 1e30 ns or 1e-30 GB/s would stall the
# engine's arithmetic, a 1-byte tile would make millions of tiles.
MAX_NS = 1e6  # any latency parameter: 1 ms
BW_GBPS = (1e-3, 1e6)  # 1 MB/s .. 1 PB/s
MAX_CYCLES = 1e6
MAX_COUNT = 256  # SIPs, mesh width/height, PEs per CUBE (the compiled graph has its own limit)
MAX_BYTES = 2**50

_ns = between(0, MAX_NS)
_gbps = between(*BW_GBPS)
_cycles = between(0, MAX_CYCLES)
_count = between(1, MAX_COUNT)
_bytes = between(1, MAX_BYTES)


def _link(bw: float | None = None, prop: float | None = None) -> dict[str, Field]:
    return {
        "bw_gbps": Field(float, check=_gbps) if bw is None else Field(float, bw, _gbps),
        "prop_ns": Field(float, check=_ns) if prop is None else Field(float, prop, _ns),
    }


PE_COST_MODEL = Section(
    {
        "fixed_per_cmd_cycles": Field(float, 40.0, _cycles, "FIXED for CompositeCmd (D1, D3)"),
        "fixed_per_single_op_cmd_cycles": Field(float, 8.0, _cycles, "FIXED for single-op commands (D8)"),
        "byte_cycles_recip": Field(float, 0.0625, between(0, 1e3), "R, cycles per logical byte"),
        "max_composite_logical_bytes": Field(int, 1024, between(1, 2**20), "D7 descriptor cap"),
    }
)

PE_ATTRS = Section(
    {
        "clock_freq_ghz": Field(float, 1.0, between(1e-3, 1e3), "PE clock; converts cycles to ns"),
        "gemm_tflops": Field(float, 8.0, between(1e-3, 1e6), "PE_GEMM peak, f16"),
        "math_elems_per_cycle": Field(float, 64.0, between(1e-3, 1e6), "PE_MATH vector lanes"),
        "math_transcendental_elems_per_cycle": Field(float, 16.0, between(1e-3, 1e6), "PE_MATH exp/log/tanh/… rate; assumed"),
        "math_pipeline_cycles": Field(float, 4.0, _cycles, "PE_MATH fixed latency per op"),
        "gemm_pipeline_cycles": Field(float, 8.0, _cycles, "PE_GEMM fixed latency per op"),
        "tcm_bytes": Field(int, 16 * 2**20, between(1, 2**40), "TCM capacity"),
        "tcm_bw_gbps": Field(float, 512.0, _gbps, "TCM read/write bandwidth (FETCH/STORE)"),
        "scratch_bytes": Field(int, 2**20, between(1, 2**40), "kernel scratch in TCM"),
        "cpu_overhead_ns": Field(float, 2.0, _ns, "PE_CPU per-command node overhead"),
        "sched_overhead_ns": Field(float, 1.0, _ns, "PE_SCHEDULER per-command overhead"),
        "sched_queue_depth": Field(int, 16, between(1, 2**16), "commands PE_CPU may have in flight"),
        "ipcq_overhead_ns": Field(float, 2.0, _ns, "PE_IPCQ per-message overhead"),
        "composite_tile_bytes": Field(
            int, 32768, between(1, 2**30), "bytes of a streamed tl.ref operand per composite tile (>= flit_bytes)"
        ),
        "pe_cost_model": PE_COST_MODEL,
    }
)

NODE = {"overhead_ns": Field(float, 0.0, _ns)}

TOPOLOGY_SCHEMA = Section(
    {
        "name": Field(str),
        "description": Field(str, ""),
        "flit_bytes": Field(int, 256, between(1, 2**20), "NoC flit size"),
        "system": {
            "sips": Field(int, 1, _count),
            "sip_ring": Section({**_link(), "overhead_ns": Field(float, 0.0, _ns)}, optional=True),
            "host": Section(
                {
                    "attach_sip": Field(int, 0, between(0, MAX_COUNT)),
                    "overhead_ns": Field(float, 0.0, _ns),
                    "link": _link(),
                },
                optional=True,
            ),
        },
        "sip": {
            "mesh": {
                "width": Field(int, 1, _count),
                "height": Field(int, 1, _count),
                "wrap": {  # a torus: wrap-around UCIe links (kernbench.topology.shape)
                    "x": Field(bool, False, help="join the last CUBE column to the first"),
                    "y": Field(bool, False, help="join the last CUBE row to the first"),
                },
            },
            "ucie": Section({**_link(), "phy_overhead_ns": Field(float, 0.0, _ns)}),
            "io_chiplet": Section(
                {
                    "attach_cube": Field(int, 0, between(0, MAX_COUNT * MAX_COUNT)),
                    "attach": Field(str, "hub"),
                    "overhead_ns": Field(float, 0.0, _ns),
                    "link": _link(),
                },
                optional=True,
            ),
        },
        "cube": {
            "routers": MapOf(
                {"overhead_ns": Field(float, 0.0, _ns), "half": Field(int, -1, between(-1, MAX_COUNT))},
                min_len=1,
            ),
            "links": ListOf(
                {"a": Field(str), "b": Field(str), **_link()},
            ),
            "pes": {
                "count": Field(int, 8, _count),
                "attach": ListOf(Field(str), min_len=1),
                "link": _link(),
                "dma_overhead_ns": Field(float, 0.0, _ns),
            },
            "hbm": {
                "attach": ListOf(Field(str), min_len=1),
                "link": _link(),
                "overhead_ns": Field(float, 0.0, _ns),
                "slice_capacity_bytes": Field(int, 6 * 2**30, _bytes),
                "channels_per_slice": Field(int, 8, between(1, 1024)),
                "channel_bw_gbps": Field(float, 32.0, _gbps),
                "burst_bytes": Field(int, 256, between(1, 2**20)),
            },
            "sram": Section(
                {
                    "attach": Field(str),
                    "link": _link(),
                    "overhead_ns": Field(float, 0.0, _ns),
                    "capacity_bytes": Field(int, 32 * 2**20, _bytes),
                    "bw_gbps": Field(float, check=_gbps),
                },
                optional=True,
            ),
            "m_cpu": Section(
                {"attach": Field(str), "link": _link(), "overhead_ns": Field(float, 0.0, _ns)},
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
    return Path(str(resources.files("kernbench_topologies")))


def named_topologies() -> list[str]:
    return sorted(p.stem for p in topology_dir().glob("*.yaml"))


def resolve(name_or_path: str | Path | None) -> Path:
    """A named topology (``paper``) or a path to a YAML file."""
    if name_or_path is None:
        name_or_path = DEFAULT_TOPOLOGY
    p = Path(name_or_path)
    try:
        there = exists(p)
    except InputPathError as exc:
        raise TopologyError([exc.problem], str(p)) from None
    if p.suffix in (".yaml", ".yml") or there:
        if not there:
            raise TopologyError([f"file not found: {p}"], str(p))
        return p
    candidate = topology_dir() / f"{name_or_path}.yaml"
    if "/" not in str(name_or_path) and os.sep not in str(name_or_path) and candidate.is_file():
        return candidate
    known = ", ".join(named_topologies())
    raise TopologyError([f"unknown topology {str(name_or_path)!r}; named topologies: {known} (or a YAML file's path)"])


_INDEXED = re.compile(r"^(?P<name>[^\[\]]*)(?P<indices>(?:\[\d+\])+)$")


def key_parts(key: str) -> list[str]:
    """A key path's steps: ``cube.links[4].prop_ns`` (as errors and ``topo show --params`` print it)
    and ``cube.links.4.prop_ns`` are both ``["cube", "links", "4", "prop_ns"]``."""
    parts: list[str] = []
    for part in key.strip().split("."):
        m = _INDEXED.match(part)
        if m is None:
            parts += [part] if part else []
            continue
        parts += [m["name"]] if m["name"] else []
        parts += re.findall(r"\d+", m["indices"])
    return parts


def source_file(name_or_path: str | Path | None) -> Path | None:
    """The file a topology is read from (a named one's YAML, a path as given); None if there is none
    (the loader reports that). For callers that must not overwrite a run's inputs."""
    try:
        return resolve(name_or_path)
    except TopologyError:
        return None


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` → (["a", "b", "c"], value read as YAML, with the file's limits).

    A list item is ``links.4`` or ``links[4]``."""
    if "=" not in text:
        raise TopologyError([f"--set {text!r}: expected KEY.PATH=VALUE"], "--set")
    key, raw = text.split("=", 1)
    parts = key_parts(key)
    if not parts:
        raise TopologyError([f"--set {text!r}: empty key path"], "--set")
    try:
        value, _ = yamldoc.load(raw, "--set") if raw.strip() else ("", {})
    except TopologyError as exc:
        raise TopologyError([f"--set {key}: value {raw[:60]!r} is not valid: {p}" for p in exc.problems], "--set") from None
    return parts, value


def apply_overrides(doc: dict[str, Any], overrides: list[str], applied: dict[str, str] | None = None) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides to a raw document (validated later).

    A list item is addressed by its index (``cube.links.4.prop_ns=1`` or ``cube.links[4].prop_ns=1``). A
    path through something that is not a section, or past the end of a
    list, is reported as a :class:`TopologyError` naming the path.
    ``applied`` (if given) collects ``{schema key path: override text}``.
    """
    doc = copy.deepcopy(doc)
    for text in overrides:
        parts, value = parse_override(text)
        node: Any = doc
        where = ""
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise TopologyError(
                        [f"--set {text}: {'.'.join(parts[: i + 1])}: a list of {len(node)} item(s) is indexed 0..{len(node) - 1}"],
                        "--set",
                    )
                where = join_path(where, int(part))
                if last:
                    node[int(part)] = value
                else:
                    node = node[int(part)]
                continue
            if not isinstance(node, dict):
                raise TopologyError([f"--set {text}: {'.'.join(parts[:i])} is a value, not a section"], "--set")
            where = join_path(where, part)
            if last:
                node[part] = value
            else:
                nxt = node.get(part)
                if nxt is None:
                    nxt = node[part] = {}
                node = nxt
        if applied is not None:
            applied[where] = text
    return doc


def _mapping(doc: Any, positions: yamldoc.Positions, source: str) -> tuple[dict[str, Any], yamldoc.Positions]:
    if not isinstance(doc, dict):
        raise TopologyError([f"expected a mapping at the top level, got {type(doc).__name__}"], source)
    return doc, positions


def load_spec(name_or_path: str | Path | None = None, overrides: list[str] | None = None) -> dict[str, Any]:
    """Read, override, validate and cross-check a topology document."""
    return load_resolved(name_or_path, overrides).spec


@dataclass(frozen=True)
class Resolved:
    """A topology as loaded, with what it was made from: the file's text and document, where each
    key is in it, the ``--set`` overrides applied, and the validated result (defaults filled in)."""

    path: Path
    text: str
    doc: dict[str, Any]  # as the file gives it, before --set
    positions: yamldoc.Positions  # of doc's keys in text
    overrides: tuple[str, ...]
    applied: dict[str, str]  # {schema key path: the --set text that gave it}
    spec: dict[str, Any]

    def overridden(self, path: str) -> str | None:
        """The ``--set`` that gave the value at ``path`` (or a section above it), if one did."""
        return next((text for where, text in self.applied.items() if _under(path, where)), None)


def load_resolved(name_or_path: str | Path | None = None, overrides: list[str] | None = None) -> Resolved:
    """:func:`load_spec`, keeping what the result was made from (for ``topo show --params`` and ``--yaml``)."""
    path = resolve(name_or_path)
    text = yamldoc.read_file(path)
    doc, positions = _mapping(*yamldoc.load(text, str(path)), str(path))
    changed, kept = doc, positions
    applied: dict[str, str] = {}
    if overrides:
        changed = apply_overrides(doc, overrides, applied)
        kept = {p: at for p, at in positions.items() if not any(_under(p, a) for a in applied)}
    spec = validate_spec(changed, str(path), kept, applied)
    return Resolved(path, text, doc, positions, tuple(overrides or ()), applied, spec)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


def validate_spec(
    doc: dict[str, Any], source: str, positions: yamldoc.Positions | None = None, applied: dict[str, str] | None = None
) -> dict[str, Any]:
    """Schema, then cross-checks; every problem in one TopologyError, each with where it came from."""
    spec: dict[str, Any]
    spec, problems = validate(doc, TOPOLOGY_SCHEMA)
    if not problems:
        problems = cross_check(spec)
    if problems:
        raise TopologyError([_locate(p, positions or {}, applied or {}) for p in problems], source)
    return spec


_PATH_STEP = re.compile(r"(\.[^.\[]+|\[\d+\])$")


def _locate(problem: str, positions: yamldoc.Positions, applied: dict[str, str]) -> str:
    """Add to a ``path: message`` problem the file line or the ``--set`` its value comes from."""
    path = problem.split(": ", 1)[0]
    while path:
        if path in applied:
            return f"{problem} (from --set {applied[path]})"
        if path in positions:
            line, column = positions[path]
            return f"{problem} (line {line}, column {column})"
        shorter = _PATH_STEP.sub("", path)
        path = "" if shorter == path else shorter
    return problem


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
            problems.append(f"cube.{key}.attach: lists {len(attach)} router(s) but cube.pes.count is {n_pes}")
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
            problems.append(f"sip.io_chiplet.attach_cube: {io['attach_cube']} but the mesh has {n_cubes} CUBE(s)")
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
            problems.append(f"system.host.attach_sip: {host['attach_sip']} but there are {system['sips']} SIP(s)")
    if n_cubes > 1 and cube["ucie_link"] is None:
        problems.append("cube.ucie_link: required when the mesh has more than one CUBE")
    hbm = cube["hbm"]
    if spec["flit_bytes"] != hbm["burst_bytes"]:
        problems.append(
            f"cube.hbm.burst_bytes: {hbm['burst_bytes']} must equal flit_bytes ({spec['flit_bytes']}); one flit carries one burst"
        )
    attrs = spec["pe"]["attrs"]
    if attrs["composite_tile_bytes"] < spec["flit_bytes"]:
        problems.append(
            f"pe.attrs.composite_tile_bytes: {attrs['composite_tile_bytes']} is less than one flit "
            f"(flit_bytes {spec['flit_bytes']}); a tile is at least a flit"
        )
    if attrs["scratch_bytes"] > attrs["tcm_bytes"]:
        problems.append(f"pe.attrs.scratch_bytes: {attrs['scratch_bytes']} exceeds pe.attrs.tcm_bytes ({attrs['tcm_bytes']})")
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
    return [f"cube: no route between {used[start]} (at router {start!r}) and {used[r]} (at router {r!r})" for r in names if r not in seen]
