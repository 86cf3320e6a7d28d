"""``kernbench run KERNEL``: simulate a shipped kernel and say where the time went.

Prints the latency, commands and dispatch cycles, the numerics error
against the kernel's numpy reference, and each engine's busy share; with
``--json`` the same as one JSON object. ``--trace`` saves the event stream
for ``kernbench-tui open``; ``--perfetto`` exports Chrome/Perfetto JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from kernbench.errors import KernbenchError
from kernbench.events.bus import Bus
from kernbench.kernels import registry
from kernbench.pe.processing_element import ENGINES
from kernbench.runtime.api import Runtime, RunResult

ENGINE_NAMES = {
    "cpu": "PE_CPU",
    "sched": "PE_SCHED",
    "dma.rd": "DMA read",
    "dma.wr": "DMA write",
    "fs": "FETCH/STORE",
    "gemm": "GEMM",
    "math": "MATH",
    "ipcq": "IPCQ",
}


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "run",
        help="simulate a shipped kernel",
        description=__doc__.split("\n")[0],
        epilog="Kernel options (e.g. --variant, --context) are listed by `kernbench run KERNEL --help`.",
    )
    p.add_argument("kernel", nargs="?", help="kernel name (see --list)")
    p.add_argument("--list", action="store_true", help="list the shipped kernels and exit")
    add_common_options(p)
    p.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def add_common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topology", default=None, metavar="NAME|PATH", help="topology (default: the kernel's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a topology value (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--trace", metavar="FILE", help="save the event stream as a .kbtrace file")
    p.add_argument("--perfetto", metavar="FILE", help="export Chrome/Perfetto trace JSON")


def kernel_parser(spec: registry.KernelSpec) -> argparse.ArgumentParser:
    kp = argparse.ArgumentParser(prog=f"kernbench run {spec.name}", description=spec.description)
    add_common_options(kp)
    for prm in spec.params:
        kp.add_argument(
            "--" + prm.name.replace("_", "-"),
            dest=prm.name,
            type=prm.type,
            default=prm.default,
            choices=prm.choices,
            help=f"{prm.help} (default: {prm.default})",
        )
    return kp


def parse_kernel_args(spec: registry.KernelSpec, argv: list[str]) -> argparse.Namespace:
    return kernel_parser(spec).parse_args(argv)


def prepare(kernel: str, argv: list[str]) -> tuple[registry.KernelSpec, argparse.Namespace, Runtime, registry.Prepared, dict]:
    """Parse a kernel's options, build its runtime and launch it (not run yet)."""
    spec = registry.get(kernel)
    ns = parse_kernel_args(spec, argv)
    params = {prm.name: getattr(ns, prm.name) for prm in spec.params}
    rt = Runtime(ns.topology or spec.default_topology, ns.overrides)
    try:
        prepared = spec.prepare(rt, params)
    except ValueError as exc:
        raise KernbenchError(f"{spec.name}: {exc}") from None
    return spec, ns, rt, prepared, params


def report(spec: registry.KernelSpec, rt: Runtime, prepared: registry.Prepared, result: RunResult, params: dict) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kernel": spec.name,
        "topology": rt.graph.name,
        "variant": prepared.variant,
        "params": params,
        "latency_ns": round(result.latency_ns, 6),
        "engine_util_pct": {e: round(v, 3) for e, v in result.engine_util_pct().items()},
        "dispatch_cycles": round(result.total_dispatch_cycles, 6),
        "commands": result.total_commands,
        "pes": len(result.pes),
        "max_abs_err": prepared.check(),
    }
    out.update(prepared.summary(result))
    return out


def run(args: argparse.Namespace) -> int:
    if args.list or not args.kernel:
        for name, spec in registry.kernels().items():
            print(f"{name}\t{spec.description}")
        return 0
    argv = list(args.options)
    for flag, value in (("--topology", args.topology), ("--trace", args.trace), ("--perfetto", args.perfetto)):
        if value:
            argv += [flag, value]
    argv += [x for o in args.overrides for x in ("--set", o)]
    if args.json:
        argv.append("--json")
    spec, ns, rt, prepared, params = prepare(args.kernel, argv)
    need_events = bool(ns.trace or ns.perfetto)
    result = rt.run(record=need_events)
    data = report(spec, rt, prepared, result, params)
    if need_events:
        _save(ns, result, data)
    if ns.json:
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        print_report(data, result)
    return 0


def _save(ns: argparse.Namespace, result: RunResult, data: dict) -> None:
    from kernbench.events.perfetto import save_perfetto
    from kernbench.events.store import EventStore
    from kernbench.events.tracefile import TraceMetadata, save_trace

    store = EventStore.from_events(result.events or [])
    meta = TraceMetadata(kernel=data["kernel"], topology=data["topology"], variant=data["variant"], end_ns=result.latency_ns, extra={"params": data["params"]})
    if ns.trace:
        save_trace(ns.trace, store, meta)
    if ns.perfetto:
        save_perfetto(ns.perfetto, store, meta)


def print_report(data: dict, result: RunResult) -> None:
    console = Console(width=100, highlight=False, color_system=None if not sys.stdout.isatty() else "auto")
    head = f"{data['kernel']}" + (f" ({data['variant']})" if data["variant"] else "")
    console.print(f"{head} on {data['topology']} · {data['pes']} PE(s)")
    console.print(f"latency            {data['latency_ns']:,.1f} ns")
    console.print(f"commands           {data['commands']:,}   dispatch {data['dispatch_cycles']:,.1f} cycles")
    console.print(f"max |err| vs numpy {data['max_abs_err']:.3g}")
    extra = {k: v for k, v in data.items() if k not in {"kernel", "topology", "variant", "params", "latency_ns", "engine_util_pct", "dispatch_cycles", "commands", "pes", "max_abs_err"}}
    for k, v in extra.items():
        console.print(f"{k:<18} {v}")
    t = Table(box=box.SIMPLE_HEAD, title="engines (all PEs)", title_justify="left")
    t.add_column("engine")
    t.add_column("busy ns", justify="right")
    t.add_column("busy %", justify="right")
    t.add_column("idle %", justify="right")
    for e in ENGINES:
        busy = sum(b[e] for b in result.engine_busy_ns.values())
        pct = data["engine_util_pct"][e]
        t.add_row(ENGINE_NAMES[e], f"{busy:,.1f}", f"{pct:.1f}", f"{max(0.0, 100 - pct):.1f}")
    console.print(t)
    stall = sum(result.stall_ns.values())
    console.print(f"PE_CPU stalled {stall:,.1f} ns in all (lazy-load waits, full queue, receives)")


def tui_simulation(argv: list[str]) -> tuple[Callable[[Bus], Any], Any]:
    """For ``kernbench-tui run``: ``(fn(bus), metadata)`` running a kernel on ``bus``."""
    from kernbench.events.tracefile import TraceMetadata

    if not argv:
        raise KernbenchError("kernbench-tui run: name a kernel (see `kernbench run --list`)")
    spec, ns, rt, prepared, params = prepare(argv[0], list(argv[1:]))
    meta = TraceMetadata(kernel=spec.name, topology=rt.graph.name, variant=prepared.variant, extra={"params": params})

    def fn(bus: Bus) -> TraceMetadata:
        result = rt.run(bus=bus)
        return TraceMetadata(kernel=spec.name, topology=rt.graph.name, variant=prepared.variant, end_ns=result.latency_ns, extra={"params": params, "latency_ns": result.latency_ns})

    return fn, meta
