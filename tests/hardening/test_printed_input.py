"""Round 2, §8: what kernbench prints from its input reaches the reader as text.

An escape sequence in a topology's name is refused when the topology loads; rich markup
(``[/bold]``) or an emoji code in it prints as written; an error quoting a path prints its control
characters as escapes; a sweep's CSV cell never starts a spreadsheet formula; a route from a node
to itself is printable JSON.
"""

from __future__ import annotations

import csv
import io
import json
import shlex
import shutil
import unicodedata
from pathlib import Path

import pytest
from hardening_harness import ROOT, assert_failed_cleanly, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernbench import cli
from kernbench.sweep import table as sweep_table
from kernbench.topology.compile import load_topology

CUBE1 = (ROOT / "topologies" / "cube1.yaml").read_text()
#: characters a terminal acts on (ESC, BEL, CSI, the bidi override, a zero-width space) and ones rich would (markup, emoji codes)
ACTIVE = "\x1b\x07\x9b\x08\r\u202e\u200b"
NAME_CHARS = st.sampled_from([*ACTIVE, "[", "]", "/", ":", "b", "o", "l", "d", "é", "·", " ", "x"])


def hidden(text: str, keep: str = "\n") -> list[str]:
    """The characters of ``text`` a terminal would act on instead of showing."""
    return [ch for ch in text if ch not in keep and unicodedata.category(ch) in ("Cc", "Cf")]


def topology_named(folder: Path, name: str, file: str = "named.yaml") -> Path:
    path = folder / file
    path.write_text("\n".join(f"name: {json.dumps(name)}" if line.startswith("name:") else line for line in CUBE1.splitlines()))
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(NAME_CHARS, min_size=1, max_size=16).map(lambda s: "n" + s))
def test_a_topology_name_is_refused_if_it_holds_a_control_character_and_printed_as_written_if_not(tmp_path, capsys, name):
    path = topology_named(tmp_path, name)
    got = invoke(cli.main, ["topo", "show", str(path)], capsys, trace_memory=False)
    assert not hidden(got.out) and not hidden(got.err), (got.out[:200], got.err)
    if hidden(name):
        assert_failed_cleanly(got, 2, r"name: holds a control character: .*; write plain text", max_seconds=10)
    else:
        assert got.status == 0, got.err
        assert f"topology {name} " in got.out or got.out.startswith(f"topology {name}\n")


MARKUP = "x[/bold] [red]:smile:[/]"
MARKUP_FILE = "[bold]:smile:[red].yaml"  # (a file name cannot hold the closing tag's /)
COMMANDS = {
    "run": lambda p: ["run", "gemm-composite", "--topology", str(p)],
    "run --explain": lambda p: ["run", "gemm-composite", "--topology", str(p), "--explain"],
    "topo show": lambda p: ["topo", "show", str(p)],
    "compare": lambda p: ["compare", f"gemm-composite --topology '{p}'", "gemm-primitive --topology cube1"],
    "sweep": lambda p: ["sweep", "gemm-composite", "--jobs", "1", "--no-cache", "--grid", f"topology={p},cube1"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_markup_in_a_name_prints_as_written(tmp_path, capsys, monkeypatch, command):
    """``[/bold]`` was a rich MarkupError traceback; ``:smile:`` became an emoji."""
    topology_named(tmp_path, MARKUP, file=MARKUP_FILE)
    monkeypatch.chdir(tmp_path)  # (the file's name, short enough that no table wraps it)
    got = invoke(cli.main, COMMANDS[command](Path(MARKUP_FILE)), capsys, trace_memory=False)
    assert got.status == 0, got.err[-2000:]
    assert MARKUP in got.out or MARKUP_FILE in got.out, got.out[-2000:]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_escape_sequence_in_a_name_never_reaches_the_terminal(tmp_path, capsys, command):
    got = invoke(cli.main, COMMANDS[command](topology_named(tmp_path, "a\x1b]0;pwned\x07\x1b[31mred")), capsys, trace_memory=False)
    assert not hidden(got.out) and not hidden(got.err), (got.out[-300:], got.err)
    assert_failed_cleanly(got, 2, r"control character: 'a\\x1b\]0;pwned\\x07\\x1b\[31mred'", max_seconds=20)


@pytest.mark.parametrize("flag", ["--topology", "--trace"])
@given(junk=st.text(st.sampled_from([*ACTIVE, "a", "/"]), min_size=1, max_size=8))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_error_quoting_a_path_prints_its_control_characters_as_escapes(tmp_path, capsys, flag, junk):
    argv = ["run", "gemm-composite", flag, f"{tmp_path}/missing{junk}/x.{'yaml' if flag == '--topology' else 'kbtrace'}"]
    got = invoke(cli.main, argv, capsys, trace_memory=False)
    assert got.status == 2 and got.err.startswith("error: "), got.err
    assert not hidden(got.err, keep="\n"), got.err
    assert "missing" in got.err


# --- what the user typed, or a file's name, printed back --------------------------------------------
# A topology file's name is no topology value: it is not checked on load, and compare printed a side
# ("KERNEL --topology PATH", or a trace's path) as typed — kernbench's table and the debugger's header alike.

NASTY_STEM = "t" + ACTIVE + " é"  # every character a terminal acts on, and a space


@pytest.fixture(scope="module")
def recorded_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("rec") / "plain.kbtrace"
    assert cli.main(["run", "gemm-composite", "--trace", str(path)]) == 0
    return path


@pytest.mark.parametrize("kind", ["a trace file", "a run on a topology file"])
def test_a_compare_side_is_printed_as_text_whatever_its_file_is_called(tmp_path, capsys, recorded_trace, kind):
    if kind == "a trace file":
        side = str(tmp_path / f"{NASTY_STEM}.kbtrace")  # (one argument, unquoted: the whole of it names the file)
        shutil.copyfile(recorded_trace, side)
    else:
        (tmp_path / f"{NASTY_STEM}.yaml").write_text(CUBE1)
        side = f"gemm-composite --topology {shlex.quote(str(tmp_path / f'{NASTY_STEM}.yaml'))}"
    got = invoke(cli.main, ["compare", side, str(recorded_trace)], capsys, trace_memory=False)
    assert got.status == 0, got.err
    assert not hidden(got.out) and not hidden(got.err), got.out[:300]
    first = got.out.split("\nB  ", 1)[0].replace("\n", "")  # (a long side wraps)
    assert first.startswith("A  ") and "t\\x1b\\x07" in first and " é" in first, first


def test_the_debuggers_labels_are_text_whatever_the_user_typed(tmp_path):
    from kernbench_tui import cli as tui_cli
    from kernbench_tui.compare_app import SideRun
    from kernbench_tui.sources import TraceFileSource

    typed = "gemm-composite --topology 'a\x1b]0;pwned\x07\x1b[31m.yaml'"
    side = SideRun("A", typed, TraceFileSource(tmp_path / "x\x1b[2J.kbtrace"))
    shown = [side.text, side.metadata.kernel, side.source.description, tui_cli._simulation_source(["gemm-composite", typed]).description]
    for text in shown:
        assert not hidden(text) and "\\x1b" in text, text


# --- a sweep's CSV --------------------------------------------------------------------------------

TEXT = st.text(st.sampled_from(["=", "+", "-", "@", "\t", "\r", "a", "1", "(", ")", '"', ",", " "]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(TEXT, st.floats(allow_nan=False), st.integers()), min_size=1, max_size=4))
def test_no_csv_cell_starts_a_formula_and_numbers_stay_numbers(values):
    table = [{f"k{i}": v for i, v in enumerate(values)}]
    header, cells = csv.reader(io.StringIO(sweep_table.to_csv(table), newline=""))
    assert header == list(table[0])  # one row, whatever its text holds (a lone \r was a row break)
    for value, cell in zip(values, cells, strict=True):
        if isinstance(value, str):
            assert not cell.startswith(sweep_table.FORMULA_STARTS), cell
            assert cell in (value, "'" + value)  # the text itself, after a ' only when it would be a formula
        else:
            assert cell == str(value)  # a negative number is a number, not a formula to neutralise


def test_a_swept_name_that_looks_like_a_formula_is_written_as_text(tmp_path, capsys):
    out = tmp_path / "t.csv"
    argv = ["sweep", "gemm-composite", "--jobs", "1", "--no-cache", "--grid", 'name==HYPERLINK("http://x"),"+1",plain', "--out", str(out)]
    got = invoke(cli.main, argv, capsys, trace_memory=False)
    assert got.status == 0, got.err
    first = [row[0] for row in csv.reader(io.StringIO(out.read_text()))]
    assert first == ["name", '\'=HYPERLINK("http://x")', "'+1", "plain"]


# --- a route from a node to itself ------------------------------------------------------------------

GRAPH = load_topology("cube1")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(node=st.sampled_from(sorted(GRAPH.nodes)), as_json=st.booleans())
def test_a_route_from_a_node_to_itself_prints(capsys, node, as_json):
    got = invoke(cli.main, ["topo", "show", "cube1", "--route", node, node, *(["--json"] if as_json else [])], capsys, trace_memory=False)
    if got.status == 2:  # a node no route starts or ends at: one line saying so
        assert_failed_cleanly(got, 2, rf"no route from {node} to {node}|is not a NoC endpoint", max_seconds=10)
        return
    assert got.status == 0, got.err
    if as_json:
        route = json.loads(got.out)["example_route"]
        assert route["bottleneck_gbps"] is None or route["bottleneck_gbps"] > 0
        assert (route["bottleneck_gbps"] is None) == (route["hops"] == [])
    else:
        assert "inf" not in got.out


def test_a_router_to_itself_has_no_bottleneck(capsys):
    """The fuzzed case: zero hops, so no link limits it (was ValueError: inf is not JSON)."""
    got = invoke(cli.main, ["topo", "show", "cube1", "--route", "sip0.cube0.r0", "sip0.cube0.r0", "--json"], capsys, trace_memory=False)
    assert got.status == 0, got.err
    assert json.loads(got.out)["example_route"] == {
        "src": "sip0.cube0.r0",
        "dst": "sip0.cube0.r0",
        "hops": [],
        "header_ns": 2.0,
        "bottleneck_gbps": None,
    }
