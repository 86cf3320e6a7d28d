"""Run the mutation pass of issue 12 §5: does the suite notice a wrong model?

Each mutant in ``tools/mutants.py`` is one small, meaningful change to the
simulator core, named by an exact source snippet (not a line number, so it
survives refactors). For each mutant this script

1. copies the tree once per job to a scratch directory (the real checkout
   is never touched; the copy is what gets imported: ``PYTHONPATH`` points
   at it and it carries ``kernbench_probes`` / ``kernbench_tui`` /
   ``kernbench_topologies`` links ahead of the editable install's finder);
2. writes the mutated file into the copy — or reports the mutant *not
   applicable* when its snippet no longer occurs exactly once;
3. runs the mutant's own test selection (``-x``), and, if that passes, the
   whole suite (less ``FULL_SKIP`` unless ``--everything``); both without the self-generated comparisons (the goldens,
   the README tables and the text snapshots, whose expected values the code
   itself produced) and without the known timing-flaky signal tests;
4. restores the file in the copy and records killed / survived / timeout.

Usage::

    .venv/bin/python tools/mutate.py                 # every mutant, 1 job
    .venv/bin/python tools/mutate.py --jobs 2 --only 'sim.*'
    .venv/bin/python tools/mutate.py --only fifo --tests tests/sim
    .venv/bin/python tools/mutate.py --check         # which snippets still match
    .venv/bin/python tools/mutate.py --no-full       # first pass only

Prints a table and a summary line (ran, killed, survived, survival rate);
``--json PATH`` also writes the records. A survivor whose mutant carries an
``equivalent`` reason is reported as ``equivalent``.
``tools/mutation_report.py`` merges records into the before/after table of
``tools/mutation-results.md``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from mutants import MUTANTS, Mutant  # noqa: E402

#: Tests whose expected values the code itself generated: a mutant they alone
#: catch is not caught by an independent check. Prefixes of pytest node ids.
SELF_GENERATED = (
    "tests/cli/test_bench.py::test_shipped_goldens_match_exactly",
    "tests/studies/test_studies.py::test_page_all_reduce_rows_up_to_256KiB_are_the_simulators",
    "tests/studies/test_studies.py::test_page_gemm_rows_up_to_16_tiles_are_the_simulators",
    "tests/kernels/test_gqa_decode.py::test_the_gqa_tables_are_what_the_program_prints",
    "tests/probes/test_probe_dma.py::test_rendered_table_snapshot",
    "tests/tui/test_tui_snapshots.py",
    "tests/tui/test_tui_real_kernels.py",
    "tests/tui/test_tui_allreduce.py",
)

#: Tests that fail now and then on a loaded machine (they race real signals
#: against a child process); a mutant must not count as killed by them.
FLAKY = (
    "tests/hardening/test_signals.py",
    "tests/hardening/test_outputs.py::test_a_signal_at_any_moment_leaves_either_the_old_file_or_a_complete_new_one",
)

#: Left out of the second (whole-suite) pass unless --everything: the
#: debugger's rendering and keys, and hostile input, signals and run limits
#: with wall-clock bounds. None of them checks a latency, and they are the
#: slowest part of the suite.
FULL_SKIP = ("tests/tui", "tests/hardening")

#: The first-pass selection per source folder (longest prefix wins); the
#: oracles are always included.
AREA_TESTS = {
    "kernbench/sim/": ("tests/sim", "tests/probes"),
    "kernbench/pe/": ("tests/pe", "tests/tl", "tests/kernels", "tests/runtime"),
    "kernbench/topology/": ("tests/topology", "tests/probes", "tests/sim"),
    "kernbench/events/": ("tests/events",),
    "probes/": ("tests/probes",),
}
ALWAYS = ("tests/oracles",)

COPY_IGNORE = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", "*.pyc")
PACKAGE_LINKS = {"kernbench_probes": "probes", "kernbench_tui": "tui", "kernbench_topologies": "topologies"}


@dataclass
class Record:
    id: str
    file: str
    status: str  # killed | survived | equivalent (survived, shown equivalent) | timeout | n/a | error
    stage: str  # "subset" | "full" | ""
    killer: str  # the first failing test, or why not applicable
    seconds: float


def first_pass_tests(m: Mutant) -> list[str]:
    if m.tests:
        return list(m.tests) + list(ALWAYS)
    best = max((p for p in AREA_TESTS if m.file.startswith(p)), key=len, default=None)
    return list(AREA_TESTS[best] if best else ("tests",)) + list(ALWAYS)


def applicability(m: Mutant, root: Path = ROOT) -> str | None:
    """None when the snippet occurs exactly once in the pristine file, else why not."""
    path = root / m.file
    if not path.is_file():
        return f"{m.file} no longer exists"
    n = path.read_text().count(m.find)
    if n == 1:
        return None
    return "snippet not found" if n == 0 else f"snippet occurs {n} times"


def make_scratch(base: Path, tests_from: str | None = None) -> Path:
    dst = base / "tree"
    shutil.copytree(ROOT, dst, ignore=COPY_IGNORE, symlinks=True)
    if tests_from:  # the suite as it was at a commit (e.g. main: the survival rate before)
        shutil.rmtree(dst / "tests")
        archive = subprocess.run(["git", "archive", tests_from, "tests"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x"], cwd=dst, input=archive, check=True)
    for name, target in PACKAGE_LINKS.items():
        (dst / name).symlink_to(target, target_is_directory=True)
    check = subprocess.run(
        [sys.executable, "-c", "import kernbench, kernbench_probes; print(kernbench.__file__); print(kernbench_probes.__file__)"],
        cwd=dst,
        env=child_env(dst),
        capture_output=True,
        text=True,
    )
    paths = check.stdout.split()
    if check.returncode or len(paths) != 2 or not all(Path(p).resolve().is_relative_to(dst.resolve()) for p in paths):
        raise SystemExit(f"the scratch copy {dst} is not what gets imported: {check.stdout} {check.stderr}")
    return dst


def child_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a stale .pyc must never outlive its mutant
    env["PYTHONHASHSEED"] = "0"
    return env


def pytest_cmd(tests: list[str], tree: Path, skip: tuple[str, ...] = ()) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-rf", "--tb=no"]
    for prefix in SELF_GENERATED + FLAKY + skip:
        cmd += ["--deselect", prefix]
    return cmd + [t for t in tests if (tree / t.split("::")[0]).exists()]


def run_tests(tests: list[str], tree: Path, timeout: float, skip: tuple[str, ...] = ()) -> tuple[str, str]:
    """(status, first failing test) of one pytest run in ``tree``."""
    try:
        proc = subprocess.run(pytest_cmd(tests, tree, skip), cwd=tree, env=child_env(tree), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return "survived", ""
    if proc.returncode == 5:
        return "error", "no tests collected"
    m = re.search(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", out, re.M)
    if m:
        return "killed", m.group(1)
    m = re.search(r"^E\s+(.*)$", out, re.M) or re.search(r"(\w+Error: .*)$", out, re.M)
    return "killed", f"(error: {m.group(1)[:80]})" if m else f"(exit {proc.returncode})"


def confirmed(status: str, killer: str, tree: Path, target: Path, original: str, mutated: str, timeout: float) -> bool:
    """Whether a kill is the mutant's doing: the killing test passes on the pristine tree.

    Tests with wall-clock bounds can fail on a loaded machine whatever the code.
    """
    if status != "killed" or "::" not in killer:
        return True
    target.write_text(original)
    try:
        again, _ = run_tests([killer], tree, timeout)
    finally:
        target.write_text(mutated)
    return again == "survived"


def run_stage(
    tests: list[str], tree: Path, timeout: float, target: Path, original: str, mutated: str, skip: tuple[str, ...]
) -> tuple[str, str, tuple[str, ...]]:
    """One stage, re-run without any test that also fails on the pristine tree (at most 3 times)."""
    for _ in range(3):
        status, killer = run_tests(tests, tree, timeout, skip)
        if confirmed(status, killer, tree, target, original, mutated, timeout):
            return status, killer, skip
        skip = (*skip, killer)
    return "error", f"flaky: {', '.join(skip)}", skip


def run_mutant(
    m: Mutant,
    tree: Path,
    timeout: float,
    full: bool,
    override: list[str] | None,
    skip: tuple[str, ...] = (),
    full_skip: tuple[str, ...] = FULL_SKIP,
) -> Record:
    t0 = time.monotonic()
    why = applicability(m)
    if why is not None:
        return Record(m.id, m.file, "n/a", "", why, 0.0)
    target = tree / m.file
    original = (ROOT / m.file).read_text()
    mutated = original.replace(m.find, m.replace, 1)
    target.write_text(mutated)
    try:
        first = override or [t for t in first_pass_tests(m) if not t.startswith(skip)]
        status, killer, skip = run_stage(first, tree, timeout, target, original, mutated, skip)
        stage = "subset"
        if status == "survived" and full and not override:
            # the rest of the suite: what the first pass ran has passed already
            rest = skip + full_skip + tuple(first)
            status, killer, skip = run_stage(["tests"], tree, timeout * 4, target, original, mutated, rest)
            stage = "full"
    finally:
        target.write_text(original)
    if status == "survived" and m.equivalent:
        status, killer = "equivalent", m.equivalent
    return Record(m.id, m.file, status, stage, killer, round(time.monotonic() - t0, 1))


def select(pattern: str | None) -> list[Mutant]:
    if not pattern:
        return list(MUTANTS)
    pats = pattern.split(",")
    return [m for m in MUTANTS if any(fnmatch.fnmatch(m.id, p) or p in m.id for p in pats)]


def table(records: list[Record]) -> str:
    w = max([len(r.id) for r in records] + [6])
    lines = [f"{'mutant':<{w}}  {'status':<9} {'stage':<7} {'s':>6}  killed by / note", "-" * (w + 60)]
    for r in records:
        lines.append(f"{r.id:<{w}}  {r.status:<9} {r.stage:<7} {r.seconds:>6.1f}  {r.killer}")
    return "\n".join(lines)


def summary(records: list[Record]) -> str:
    ran = [r for r in records if r.status != "n/a"]
    count = {s: sum(r.status == s for r in ran) for s in ("killed", "survived", "equivalent", "timeout", "error")}
    na = len(records) - len(ran)
    lived = count["survived"] + count["equivalent"]
    rate = 100.0 * lived / len(ran) if ran else 0.0
    real = len(ran) - count["equivalent"]
    rate_real = 100.0 * count["survived"] / real if real else 0.0
    return (
        f"ran {len(ran)}, killed {count['killed']}, survived {lived} ({count['equivalent']} shown equivalent), "
        f"timeout {count['timeout']}, error {count['error']}, not applicable {na}; "
        f"survival rate {rate:.1f} % ({rate_real:.1f} % of the non-equivalent)"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", metavar="PATTERN", help="mutant ids matching a glob or substring (comma-separated)")
    ap.add_argument("--tests", nargs="+", metavar="PATH", help="run these tests instead of each mutant's selection (no full-suite pass)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run in parallel (one scratch copy each)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per first-pass run (the full suite gets 4x)")
    ap.add_argument("--no-full", action="store_true", help="do not run the whole suite on first-pass survivors")
    ap.add_argument("--everything", action="store_true", help="the whole-suite pass includes tests/tui and tests/hardening too")
    ap.add_argument("--check", action="store_true", help="only report which mutants still apply")
    ap.add_argument("--json", metavar="PATH", help="also write the records as JSON")
    ap.add_argument("--tests-from", metavar="REF", help="run the tests/ folder of this git commit (e.g. main, for the rate before)")
    ap.add_argument(
        "--without",
        nargs="+",
        default=[],
        metavar="PATH",
        help="leave these tests out (e.g. --without tests/oracles: the suite before the oracles were added)",
    )
    args = ap.parse_args(argv)
    chosen = select(args.only)
    if not chosen:
        print(f"no mutant matches {args.only!r}", file=sys.stderr)
        return 2
    if args.check:
        for m in chosen:
            why = applicability(m)
            print(f"{m.id:<44} {'ok' if why is None else 'n/a: ' + why}")
        return 0
    jobs = max(1, args.jobs)
    with tempfile.TemporaryDirectory(prefix="kernbench-mut-") as tmp:
        trees = [make_scratch(Path(tmp) / f"job{i}", args.tests_from) for i in range(jobs)]
        free = list(trees)
        records: dict[str, Record] = {}

        def work(m: Mutant) -> Record:
            tree = free.pop()
            try:
                return run_mutant(
                    m, tree, args.timeout, not args.no_full, args.tests, tuple(args.without), () if args.everything else FULL_SKIP
                )
            finally:
                free.append(tree)

        with cf.ThreadPoolExecutor(jobs) as pool:
            for rec in pool.map(work, chosen):
                records[rec.id] = rec
                print(f"  {rec.status:<9} {rec.id}  {rec.killer}", flush=True)
    out = [records[m.id] for m in chosen]
    print()
    print(table(out))
    print()
    print(summary(out))
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in out], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
