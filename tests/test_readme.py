"""README's promises: its two set-up commands, its CI hook, its length; and what moved from it to the docs
site holds there (the quickstart example, the limits in the code). The site's commands and their output:
tests/test_docs_site.py."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def test_readme_is_at_most_300_lines_and_links_the_site():
    assert len(README.splitlines()) <= 300
    for page in ("getting-started", "kernels", "tl", "timing", "debugger", "sweeps", "studies", "output", "errors"):
        assert f"](docs/{page}.md)" in README, page


def test_the_quickstart_on_the_site_is_the_file_the_tests_run_and_it_runs(capsys):
    example = (ROOT / "examples" / "quickstart.py").read_text().rstrip()
    assert example in (DOCS / "getting-started.md").read_text()
    runpy.run_path(str(ROOT / "examples" / "quickstart.py"), run_name="__main__")
    out = capsys.readouterr().out
    latency = float(re.match(r"([\d.]+) ns", out).group(1))
    assert latency > 0 and "(64, 128)" in out


def test_ci_runs_the_readme_test_command():
    commands = re.findall(r"```sh\n(.+?)\n```", README)
    assert len(commands) == 2, "README must carry exactly two set-up commands"
    test_command = commands[1]
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text()


def test_the_debugger_capture_is_the_snapshot_and_says_how_to_get_there():
    snapshot = (ROOT / "snapshots" / "tui" / "gqa_small_200ns.txt").read_text().rstrip("\n")
    assert f"```text\n{snapshot}\n```" in README
    intro = README[: README.index(snapshot)].rsplit("## The debugger", 1)[1]
    assert "`g 200`" in intro and "`2` (the Stalls panel)" in intro
    page = (DOCS / "debugger.md").read_text()
    assert f"```text\n{snapshot}\n```" in page and "`g 200`" in page.split(snapshot, 1)[0]


def test_the_source_view_capture_is_lines_of_its_snapshot_in_order():
    snapshot = [line[24:] for line in (ROOT / "snapshots" / "tui" / "source_view.txt").read_text().splitlines()]
    _, _, rest = README.partition("- **Source** (`7`)")
    assert rest, "README's debugger section shows the Source view"
    capture = rest.split("```text\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert len(capture) >= 8 and "critical path" in capture[0]
    at = 0
    for line in capture:  # each captured line is the snapshot's (its gutter left out), in the snapshot's order
        at = snapshot.index(line, at) + 1


def test_every_relative_link_resolves_and_there_is_a_license():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    local = [link for link in links if "://" not in link]
    assert local, "README links its docs"
    for link in local:
        assert (ROOT / link).exists(), link
    assert (ROOT / "LICENSE").is_file()
    for doc in (ROOT / "docs").rglob("*.md"):
        for link in re.findall(r"\]\(([^)#]+)\)", doc.read_text()):
            if "://" not in link:
                assert (doc.parent / link).exists(), (doc, link)


def test_errors_and_limits_states_the_exit_codes_and_the_limits_in_the_code():
    from kernbench import exit_codes, limits, tl
    from kernbench.events import tracefile
    from kernbench.kernels import allreduce, gemm, gqa_decode
    from kernbench.sweep import cache, grid
    from kernbench.topology import compile, cube_paths, graph, yamldoc
    from kernbench_probes import dma

    section = (DOCS / "errors.md").read_text()
    for status in (exit_codes.OK, exit_codes.CHECK_FAILED, exit_codes.BAD_INPUT, exit_codes.INTERRUPTED):
        assert f"| {status} |" in section
    for number in (
        f"{compile.MAX_GRAPH_NODES:,}",
        f"{compile.MAX_GRAPH_EDGES:,}",
        f"{limits.DEFAULT_MAX_COMMANDS_PER_PE:,}",
        f"{yamldoc.MAX_NODES:,}",
        f"nesting {yamldoc.MAX_DEPTH} deep",
        f"{limits.DEFAULT_MAX_WALL_S:g} s",
        f"{yamldoc.MAX_BYTES // 2**20} MiB",
        f"| sweep cache entry | {cache.MAX_ENTRY_BYTES // 2**10} KiB,",
        f"integers below 2^{cache.MAX_INT.bit_length() - 1}",
        f"at most {cache.MAX_TEXT_CHARS:,} characters",
        f"mappings of those at most {cache.MAX_DEPTH} deep",
        # the limits round 2 added (issue 20): route hops, the all-reduce payload, the study's bound
        f"| route | {graph.MAX_ROUTE_HOPS:,} hops",
        f"the route trees of the {cube_paths.SOURCES_KEPT} most recently used sources are kept",
        f"{allreduce.MAX_PAYLOAD_BYTES // 2**20} MiB of payload × PEs",
        f"at most {gemm.MAX_INPUT_BYTES // 2**20} MiB (GEMM), 2^{gqa_decode.MAX_KV_ELEMENTS.bit_length() - 1} KV elements",
        "| `bench --study` | one point in memory at a time; per study: the all-reduce study under 1 GB",
        f"| run: simulated time | {limits.DEFAULT_MAX_SIM_NS:.0e}".replace("e+0", "e"),
        f"0 ≤ n ≤ {tl.MAX_CYCLES:.0e}".replace("e+", "e"),
        f"| trace files | {tracefile.MAX_TRACE_BYTES // 2**30} GiB, {tracefile.MAX_TRACE_EVENTS // 10**6} M events",
        f"| probe sizes | 1 B .. {dma.MAX_SIZE_BYTES // 2**30} GiB",
        f"| sweep points | {grid.MAX_POINTS:,} per sweep",
    ):
        assert number in section, number


def test_the_pages_that_took_the_readmes_command_blocks_still_show_them():
    """The explain/compare and topo blocks moved to docs/explain.md and docs/topologies.md, where
    tests/test_docs_site.py runs each and holds it to what it prints ("…" where lines were left out)."""
    explain = (DOCS / "explain.md").read_text()
    blocks = re.findall(r"```text\n\$ (kernbench .+?)\n(.*?)\n```", explain, re.S)
    assert [c.split()[1] for c, _ in blocks] == ["run", "compare"] and all(
        sum(line != "…" for line in b.splitlines()) > 40 for _, b in blocks
    )
    topo = re.findall(r"```text\n\$ (kernbench topo .+?)\n", (DOCS / "topologies.md").read_text())
    assert [c.split()[2] for c in topo] == ["list", "show", "show", "show"]
    assert any("--params" in c for c in topo) and any("--yaml" in c for c in topo)
