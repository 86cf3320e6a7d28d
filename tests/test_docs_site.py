"""The documentation site (mkdocs.yml, docs/): it builds with --strict, and every code block on it runs as written.

Each fenced block of a page is one of:

- ```python: a kernel file when its first line opens a docstring ``NAME.py: …``: written into the page's folder (a fresh
  temporary one), where the page's commands and scripts then run; any other python block is run as a script
  (in the page's folder when the page has kernel files, else from the repository's root, as a reader who
  cloned it would), and a ```text block right after it is what it prints, exactly;
- ```text starting with ``$ kernbench …`` (or ``$ kernbench-tui probe``): one or more commands, each followed
  by what it prints; run in this process, their output compared line by line: exactly, or, where the page
  writes "…", the shown lines in order with lines left out at each "…". Output starting ``error:`` is the
  command's stderr, with exit status 2;
- ```yaml: a piece of a topology document, which must load;
- a block this test does not run is listed in NOT_RUN with the test that holds it instead.
"""

from __future__ import annotations

import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCK = re.compile(r"^```(\w*)\n(.*?)\n```$\n?(?=(\s*)(```)?)", re.S | re.M)
FILE = re.compile(r'^"""(\w+\.py):')

#: pages whose blocks other tests hold (their code is not ours to run here), and why
NOT_RUN_PAGES = {
    "tl.md": "generated from kernbench/tl docstrings; every Example runs in tests/tl/test_reference.py",
    "adr/ADR-0062-lazy-load.md": "a decision record quoting the earlier kernbench2's code, not ours",
    "adr/ADR-0064-dispatch-cost-model.md": "a decision record quoting the earlier kernbench2's code, not ours",
}
#: text blocks that are not commands, by their first line (or its start): the test that holds each to what the program prints
NOT_RUN = {
    " gqa-decode │ cube1 │ opt2 │ t=200ns / ": "tests/test_readme.py (the debugger's capture is the snapshot)",
    "2×3: mesh2x3 vs torus2x3, 6 PEs, 4KiB … 64MiB": "tests/studies/test_studies.py (all-reduce rows)",
    "mesh2x3 vs torus2x3, PE 0 of each CUBE (6 PEs), float16, 64 KiB messages": "tests/collectives/test_collective_models.py (the other collectives' table)",
    "4×4: paper vs paper_torus, 16 PEs, 4KiB … 16MiB": "tests/studies/test_studies.py (4×4 rows at 4 KiB)",
    "        composite, A K-step-major   composite, A row-major      primitive": "tests/studies/test_studies.py (GEMM rows)",
    "tiling                             tiles  sim %  model   gap  II bound    Δ lead-in   Δ gaps Δ lead-out  (ns, sim − model, busiest PE's GEMM lane)": (
        "tests/studies/test_studies.py (tilings, slow)"
    ),
    "LLM layer: one decoder layer's latency on the paper topology (bfloat16, --no-data, packed placement, ring all-reduce)": (
        "tests/studies/test_llm_layer.py (the table's columns, roofline and 'why' on the quick grid; the page pastes the default grid)"
    ),
}
#: commands worth a mark: they simulate the 256-PE paper machine, or many points
SLOW = ("kernbench run gqa-decode --explain", "kernbench compare", "kernbench sweep gqa-decode", "kernbench-tui probe")


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).as_posix() not in NOT_RUN_PAGES)


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(page.read_text())]


def follows(page: Path) -> list[bool]:
    """Per block: whether the next block follows it with nothing but blank lines between (a script and its output)."""
    return [m.group(4) is not None for m in BLOCK.finditer(page.read_text())]


def _commands(text: str) -> list[tuple[str, list[str]]]:
    """A text block of ``$ command`` lines, each with the lines it prints."""
    out: list[tuple[str, list[str]]] = []
    lines = text.replace("\\\n", " ").splitlines()
    for line in lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            out[-1][1].append(line)
    return out


def same(shown: list[str], printed: list[str]) -> None:
    """``printed`` is what ``shown`` says: the same lines, or, where "…" stands, some left out."""
    printed = [line.rstrip() for line in printed]
    while printed and not printed[-1]:
        printed.pop()
    shown = [line.rstrip() for line in shown]
    if "…" not in shown:
        assert printed == shown
        return
    i = 0
    if shown[0] != "…":  # the first lines are the first lines printed
        head = shown[: shown.index("…")]
        assert printed[: len(head)] == head
    for line in shown:
        if line == "…":
            continue
        while i < len(printed) and printed[i] != line:
            i += 1
        assert i < len(printed), f"not printed (or out of order): {line!r}"
        i += 1


def run_command(command: str, capsys) -> tuple[int, str, str]:
    argv = shlex.split(command)
    capsys.readouterr()
    if argv[0] == "kernbench":
        from kernbench import cli

        try:
            status = cli.main(argv[1:])
        except SystemExit as done:  # (--help)
            status = int(done.code or 0)
    else:
        assert argv[:2] == ["kernbench-tui", "probe"], f"not a command the tests can run: {command}"
        from kernbench_probes import dma

        status = dma.main(argv[2:])
    got = capsys.readouterr()
    return status, got.out, got.err


def cases() -> list:
    found = []
    for page in pages():
        name = page.relative_to(DOCS).as_posix()
        for i, (lang, text) in enumerate(blocks(page)):
            if lang == "text" and text.startswith("$ "):
                for command, shown in _commands(text):
                    marks = [pytest.mark.slow] if command.startswith(SLOW) else []
                    found.append(pytest.param(name, i, command, shown, id=f"{name}:{command[:60]}", marks=marks))
    return found


@pytest.fixture
def folder(request, tmp_path, monkeypatch):
    """The page's folder: its kernel files in a fresh temporary one (then the current folder and importable),
    else the repository's root; a sweep's cache of its own either way."""
    page = DOCS / request.param
    files = [text for lang, text in blocks(page) if lang == "python" and FILE.match(text)]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    if files:
        for text in files:
            (tmp_path / FILE.match(text).group(1)).write_text(text + "\n")
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
    else:
        monkeypatch.chdir(ROOT)
    yield page
    for text in files:
        sys.modules.pop(FILE.match(text).group(1)[:-3], None)


@pytest.mark.parametrize(("folder", "index", "command", "shown"), cases(), indirect=["folder"])
def test_each_command_prints_what_the_page_shows(folder, index, command, shown, capsys):
    status, out, err = run_command(command, capsys)
    if shown and shown[0].startswith("error:"):
        assert status == 2, (command, out)
        same(shown, err.splitlines())
    else:
        assert status == 0, (command, err)
        same(shown, out.splitlines())


def scripts() -> list:
    found = []
    for page in pages():
        name = page.relative_to(DOCS).as_posix()
        got, glued = blocks(page), follows(page)
        for i, (lang, text) in enumerate(got):
            if lang == "python" and not FILE.match(text):
                after = got[i + 1] if glued[i] else ("", "")
                shown = after[1] if after[0] == "text" and not after[1].startswith("$ ") else None
                found.append(pytest.param(name, text, shown, id=f"{name}:{i}"))
    return found


@pytest.mark.parametrize(("folder", "script", "shown"), scripts(), indirect=["folder"])
def test_each_script_runs_and_prints_what_the_page_shows(folder, script, shown, capsys, tmp_path):
    path = tmp_path / "block.py"
    path.write_text(script + "\n")
    capsys.readouterr()
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    if shown is not None:
        assert out.rstrip("\n").splitlines() == shown.splitlines()


def test_every_block_is_run_or_held_by_a_named_test():
    """Nothing on the site goes unchecked by accident: each block is one of the kinds above."""
    for page in pages():
        got, glued = blocks(page), follows(page)
        for i, (lang, text) in enumerate(got):
            first = text.splitlines()[0] if text else ""
            if lang == "yaml":
                yaml.safe_load(text)  # a piece of a topology document: it loads
            elif lang == "python" or (lang == "text" and text.startswith("$ ")):
                continue  # run above
            elif lang == "text" and i and got[i - 1][0] == "python" and glued[i - 1]:
                continue  # a script's output, compared above
            elif lang == "":
                assert "\n" in text, (page, first)  # a diagram (a folder tree, a formula), not code
            else:
                assert any(first.startswith(held) for held in NOT_RUN), (
                    f"{page.relative_to(DOCS)}: block {i} ({lang}) {first!r} is neither run nor held by a test"
                )


def test_the_site_builds_strictly(tmp_path):
    """mkdocs-material, every page in the nav, no broken link or anchor (mkdocs.yml: strict, validation)."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file() and (tmp_path / "site" / "kernels" / "index.html").is_file()
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    assert [next(iter(item)) for item in nav] == [
        "Getting started",
        "Writing kernels",
        "tl reference",
        "Timing model",
        "Debugger",
        "Studies & sweeps",
        "Output records",
        "Errors & limits",
    ]
