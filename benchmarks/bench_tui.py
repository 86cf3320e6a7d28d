"""How fast the debugger answers on a trace of about one million events.

Prints: time to build and open the trace file, memory per million events,
keypress-to-frame latency (median / p95) when stepping and zooming, and the
time from launching ``kernbench-tui open FILE`` to its first frame with the
trace drawn. Target: under 50 ms median keypress-to-frame.

``--what-if`` measures the debugger's what-if prompt instead (``r``, issue 26:
at most 1 s for the paper GQA case): on the paper GQA default (``gqa-decode``,
the default topology) run live in this process, the seconds from Enter to
the comparison drawn (its frames' text holds both runs' lanes, the difference
and the footer), first as ``kernbench-tui run`` does it (its child process
re-times and sends the events as it goes; where the time goes: the child's
re-timing and pickling the events, the debugger's columns made meanwhile,
its store once answered, and the view), then with the run in this process
against a full recorded run (set-up, run, store).

    python benchmarks/bench_tui.py [--events 1000000] [--size 160x50]
    python benchmarks/bench_tui.py --what-if [--change pe.attrs.tcm_bw_gbps=1024]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernbench.events.bus import Bus  # noqa: E402
from kernbench.events.store import EventStore  # noqa: E402
from kernbench.events.tracefile import open_trace, save_trace  # noqa: E402
from kernbench_tui.demo import DemoParams, run_demo  # noqa: E402

EVENTS_PER_TILE_PER_PE = 28.4  # measured on the demo kernel


def build_trace(n_events: int) -> tuple[EventStore, object]:
    n_pes = 32
    tiles = max(1, round(n_events / (n_pes * EVENTS_PER_TILE_PER_PE)))
    bus = Bus()
    events: list = []
    bus.subscribe(events.append)
    meta = run_demo(bus, DemoParams(n_pes=n_pes, tiles=tiles))
    return EventStore.from_events(events), meta


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


async def key_latencies(path: Path, size: tuple[int, int], pes: int) -> dict[str, list[float]]:
    """Key event in → next frame out, as the terminal would get it.

    The key goes straight to the driver's queue (as a real keypress does);
    the clock stops when the app hands the resulting screen update to the
    display and it has been turned into terminal output. This includes
    Textual's frame pacing (the screen refreshes on a 60 Hz timer).
    """
    from textual import events

    from kernbench_tui.app import KernbenchApp
    from kernbench_tui.messages import PEsChosen
    from kernbench_tui.sources import TraceFileSource

    app = KernbenchApp(TraceFileSource(path))
    out: dict[str, list[float]] = {"step": [], "zoom": [], "pan": [], "stall": []}
    frames: list[float] = []
    frame = asyncio.Event()
    display = app._display

    def timed_display(screen, renderable) -> None:
        display(screen, renderable)
        if renderable is not None:
            "".join(renderable.render_segments(app.console))
            frames.append(time.perf_counter())
            frame.set()

    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        if pes > 1:
            app.screen.post_message(PEsChosen(app.model.pes()[:pes]))
            await pilot.pause()
        app._display = timed_display
        chars = {"full_stop": ".", "comma": ",", "right_square_bracket": "]", "left_square_bracket": "["}

        async def timed(group: str, key: str) -> None:
            await pilot.pause()
            frame.clear()
            t0 = time.perf_counter()
            app._driver.send_message(events.Key(key, chars.get(key, key)))
            await asyncio.wait_for(frame.wait(), timeout=10)
            out[group].append((frames[-1] - t0) * 1000)

        # From the fitted view: zoom in step by step and back out, stepping between.
        for _ in range(10):
            await timed("zoom", "w")
            for key in ("full_stop", "full_stop", "right_square_bracket", "comma", "left_square_bracket"):
                await timed("step", key)
            await timed("pan", "d")
        for _ in range(10):
            await timed("zoom", "s")
            await timed("pan", "a")
        for _ in range(5):
            await timed("stall", "n")
        await timed("zoom", "f")
    return out


async def live_latencies(size: tuple[int, int], n_pes: int, tiles: int) -> tuple[int, float, list[float]]:
    """Keypress-to-frame while a live demo simulation floods the app with batches."""
    from textual import events

    from kernbench_tui.app import KernbenchApp
    from kernbench_tui.cli import _demo_source

    app = KernbenchApp(_demo_source(n_pes, tiles, 0.0))
    frames: list[float] = []
    frame = asyncio.Event()
    display = app._display

    def timed_display(screen, renderable) -> None:
        display(screen, renderable)
        if renderable is not None:
            frames.append(time.perf_counter())
            frame.set()

    lat: list[float] = []
    t_start = time.perf_counter()
    async with app.run_test(size=size):
        app._display = timed_display
        keys = ["comma", "full_stop", "w", "s", "right_square_bracket"]
        i = 0
        while app.running:
            await asyncio.sleep(0.05)
            frame.clear()
            t0 = time.perf_counter()
            app._driver.send_message(events.Key(keys[i % len(keys)], None))
            try:
                await asyncio.wait_for(frame.wait(), timeout=5)
                lat.append((frames[-1] - t0) * 1000)
            except TimeoutError:
                lat.append(5000.0)
            i += 1
        wall = time.perf_counter() - t_start
        n = len(app.store)
    return n, wall, lat


def first_frame_s(path: Path, size: tuple[int, int]) -> float:
    """Launch a fresh interpreter running the app on ``path``; time to first drawn trace frame."""
    code = f"""
import os, sys
os.environ['TEXTUAL_ANIMATIONS'] = 'none'
sys.path.insert(0, {str(ROOT)!r})
from kernbench_tui.app import KernbenchApp
from kernbench_tui.sources import TraceFileSource

class Probe(KernbenchApp):
    def on_trace_opened(self, message):
        super().on_trace_opened(message)
        self.call_after_refresh(lambda: self.exit('frame'))

async def main():
    app = Probe(TraceFileSource({str(path)!r}))
    async with app.run_test(size={size!r}) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        while app.is_running:
            await pilot.pause(0.005)
    print('first-frame')

import asyncio
asyncio.run(main())
"""
    t0 = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - t0
    assert "first-frame" in result.stdout, result.stderr
    return elapsed


#: what a drawn comparison shows (the frame's text, escape codes removed): the header's difference, both runs'
#: lanes, the footer's keys — the first frame, and the footer that Textual draws a frame later
DRAWN_MARKS = ("B−A", "▾ A ", "▾ B ", "esc back")
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class PromptFigures:
    cpu_s: float  # this process's CPU seconds, Enter -> the comparison drawn (every mark seen)
    wall_s: float
    first_frame_cpu_s: float  # ... -> the comparison screen's first frame
    latency_ns: float
    timings: object = None  # the child's RetimeTimings (kernbench_tui.sources), when a child re-timed
    drawn_at_cpu_s: float = 0.0  # this process's CPU clock when drawn


async def what_if_prompt(argv: list[str], change: str, size: tuple[int, int], child: bool = False) -> PromptFigures:
    """The ``r`` prompt on a live run of ``argv`` (in this process, or in a child as ``kernbench-tui run`` runs
    it: the child re-times): Enter → the comparison drawn, every mark of DRAWN_MARKS on screen."""
    from textual.widgets import Input

    from kernbench.cli import tui_simulation
    from kernbench_tui.app import KernbenchApp
    from kernbench_tui.child_run import ProcessSource
    from kernbench_tui.screens.compare import WhatIfScreen
    from kernbench_tui.sources import CallableSource

    if child:
        app = KernbenchApp(ProcessSource("kernbench.cli:tui_simulation", (argv,), description=" ".join(argv)))
    else:
        fn, meta = tui_simulation(argv)
        app = KernbenchApp(CallableSource(fn, meta, description=" ".join(argv)))
    drawn = asyncio.Event()
    seen: set[str] = set()
    first: list[float] = []
    display = app._display

    def timed_display(screen, renderable) -> None:
        display(screen, renderable)
        if renderable is not None and isinstance(screen, WhatIfScreen) and not drawn.is_set():
            c = time.process_time()
            text = _ESCAPES.sub("", "".join(renderable.render_segments(app.console)))
            seen.update(mark for mark in DRAWN_MARKS if mark in text)
            first.append(c)
            if len(seen) == len(DRAWN_MARKS):
                drawn.set()
                first.append(c)

    async with app.run_test(size=size) as pilot:
        while app.running:
            await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        await pilot.press("r")
        await pilot.pause(0.5)  # the prompt is up (and has read in what parses a change while one types)
        app.screen.query_one(Input).value = change
        await pilot.pause()
        app._display = timed_display
        c0, w0 = time.process_time(), time.perf_counter()
        await pilot.press("enter")
        await asyncio.wait_for(drawn.wait(), timeout=600)
        wall = time.perf_counter() - w0
        cpu = first[-1] - c0
        screen = app.screen
        assert isinstance(screen, WhatIfScreen), type(screen)
        latency = screen.runs.sides[1].latency_ns
        timings = getattr(getattr(app.source, "retimer", None), "timings", None)
    return PromptFigures(cpu, wall, first[0] - c0, float(latency or 0.0), timings, first[-1])


def what_if_main(change: str, size: tuple[int, int]) -> None:
    from kernbench.analysis.whatif import parse_what_ifs
    from kernbench.commands.run import prepare

    argv = ["gqa-decode"]
    # As kernbench-tui run does it, first (this process holds nothing else yet, as the debugger's does not).
    child = asyncio.run(what_if_prompt(argv, change, size, child=True))
    t = child.timings
    print(f"what-if prompt on {' '.join(argv)} (default topology), --what-if {change}")
    print(
        f"  as kernbench-tui run does it (the run's child process re-times and sends the events): "
        f"Enter -> comparison drawn {child.wall_s:.2f} s wall, target 1 s"
    )
    if t is not None:
        view = child.drawn_at_cpu_s - t.decoded_at_cpu_s
        print(
            f"    child: re-timing (replay, its events sent as published) {t.retime_s:.2f} s CPU, of which pickling the events "
            f"{t.encode_s:.3f} s ({t.nbytes / 1e6:.1f} MB)\n"
            f"    debugger: request -> answer {t.receive_s:.2f} s wall, the events into columns as they came {t.decode_s:.3f} s CPU "
            f"(meanwhile), the store once answered {t.store_s:.3f} s, the comparison view {view:.2f} s CPU "
            f"(store -> drawn); {child.cpu_s:.2f} s CPU since Enter in all (waiting included)"
        )
    cpu, wall, latency = (lambda f: (f.cpu_s, f.wall_s, f.latency_ns))(asyncio.run(what_if_prompt(argv, change, size)))
    c0 = time.process_time()
    _spec, _ns, rt, _prepared, _params = prepare(argv[0], argv[1:])
    c1 = time.process_time()
    result = rt.run(record=True)
    c2 = time.process_time()
    result.store()
    c3 = time.process_time()
    what = parse_what_ifs([change], result)
    c4 = time.process_time()
    new = rt.replay(result, overrides=list(what.overrides), record=True, scale=what.scale())
    c5 = time.process_time()
    new.store()
    c6 = time.process_time()
    assert new.latency_ns == latency == child.latency_ns, (new.latency_ns, latency, child.latency_ns)
    full = c3 - c0
    print(f"  in this process (CallableSource): {result.latency_ns:,.1f} -> {latency:,.1f} ns")
    print(f"  Enter -> comparison drawn: {cpu:.2f} s CPU ({wall:.2f} s wall)")
    print(f"  a full recorded run in this process: {full:.2f} s CPU (set-up {c1 - c0:.2f}, run {c2 - c1:.2f}, store {c3 - c2:.2f})")
    print(f"  ratio: the prompt takes {cpu / full:.2f}x a full recorded run ({full / cpu:.1f}x faster)")
    print(
        f"  where the re-timing's time goes (direct calls): parse {c4 - c3:.2f} s, replay with events recorded {c5 - c4:.2f} s, "
        f"their store {c6 - c5:.2f} s; the rest (the comparison view) {cpu - (c6 - c3):.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--size", default="160x50")
    parser.add_argument("--what-if", action="store_true", help="measure the debugger's what-if prompt instead")
    parser.add_argument("--change", default="pe.attrs.tcm_bw_gbps=1024", help="the what-if change the prompt is given")
    args = parser.parse_args()
    size = tuple(int(x) for x in args.size.split("x"))
    if args.what_if:
        what_if_main(args.change, size)
        return

    t0 = time.perf_counter()
    store, meta = build_trace(args.events)
    t_build = time.perf_counter() - t0
    n = len(store)
    print(f"trace: {n:,} events from the synthetic kernel (32 PEs), simulated+stored in {t_build:.1f} s")
    print(
        f"memory: {store.nbytes() / n:.1f} bytes/event = {store.nbytes() / n:.0f} MB per million events "
        f"(columns + indices, string tables excluded)"
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.kbtrace"
        t0 = time.perf_counter()
        save_trace(path, store, meta)
        t_save = time.perf_counter() - t0
        print(f"save: {t_save:.2f} s, file {path.stat().st_size / 1e6:.1f} MB ({path.stat().st_size / n:.1f} bytes/event)")
        opens = []
        for _ in range(3):
            t0 = time.perf_counter()
            opened = open_trace(path).store
            opens.append(time.perf_counter() - t0)
        assert len(opened) == n
        print(f"open: {min(opens) * 1000:.0f} ms (best of 3), per million events {min(opens) * 1e6 / n * 1000:.0f} ms")
        del opened

        for pes in (1, 8):
            lat = asyncio.run(key_latencies(path, size, pes))
            print(f"keypress-to-frame at {size[0]}x{size[1]}, {pes} PE(s) shown ({pes * 8} lanes):")
            for group, xs in lat.items():
                print(
                    f"  {group:<6} n={len(xs):3d}  median {statistics.median(xs):6.1f} ms"
                    f"   p95 {percentile(xs, 0.95):6.1f} ms   max {max(xs):6.1f} ms"
                )

        n_live, wall, lat = asyncio.run(live_latencies(size, 16, 800))
        print(
            f"live (simulation in a child process): {n_live:,} events simulated and ingested in {wall:.1f} s; "
            f"keypress-to-frame during the run median {statistics.median(lat):.1f} ms, "
            f"p95 {percentile(lat, 0.95):.1f} ms (n={len(lat)})"
        )

        t_first = first_frame_s(path, size)
        print(f"launch to first frame (fresh interpreter, imports + open + draw): {t_first:.2f} s")


if __name__ == "__main__":
    main()
