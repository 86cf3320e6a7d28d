"""ml_dtypes is imported when one of its types is first used, not with kernbench.

Its 0.7 extension takes ~0.65 s of CPU to import, which every process kernbench
starts paid (a run, a sweep worker, the debugger's child) though most runs use
no type of its own. Each check runs in a fresh interpreter: this one has
ml_dtypes imported already.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

KERNEL = """
from kernbench import Option, kernel, tl

def work(x, y):
    tl.store(y, tl.add(tl.load(x), tl.load(x)))

@kernel(options=[Option("n", int, 8, "n", low=1, high=64)], topology="cube1")
def setup(rt, n):
    import numpy as np
    x = rt.deploy(np.ones((n, n), np.float32), name="x")
    y = rt.deploy(np.zeros((n, n), np.float32), name="y")
    rt.launch(work, pes=[0], args=(x, y))
"""


def fresh(code: str, cwd=None) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_float32_run_through_the_command_line_never_imports_ml_dtypes(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    out = fresh(
        """
        import contextlib, io, sys
        from kernbench import cli
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            try:
                cli.main(["run", "k.py", "--json"])
            except SystemExit as end:
                assert not end.code, end.code
        assert '"latency_ns"' in printed.getvalue(), printed.getvalue()
        print("ml_dtypes" in sys.modules)
        """,
        cwd=tmp_path,
    )
    assert out.strip() == "False"


@pytest.mark.parametrize(
    "use, shown",
    [
        ("tl.bfloat16", "<class 'ml_dtypes.bfloat16'>"),
        ("kernbench.dtypes.float8_e4m3fn", "<class 'ml_dtypes.float8_e4m3fn'>"),
        ("kernbench.dtypes.as_dtype('float8_e5m2')", "dtype(float8_e5m2)"),
        ("kernbench.handles.dtype_name('bfloat16')", "'bfloat16'"),
        ("kernbench.dtypes.largest('float8_e4m3fn')", "448.0"),
        ("kernbench.dtypes.narrow(np.array([1.5, 2.0]), 'bfloat16', 'x').dtype", "dtype(bfloat16)"),
        ("kernbench.dtypes.is_float('bfloat16')", "True"),
    ],
)
def test_a_type_of_its_own_asked_for_by_name_or_attribute_works_before_ml_dtypes_is_imported(use, shown):
    out = fresh(
        f"""
        import sys
        import numpy as np
        import kernbench.dtypes, kernbench.handles
        from kernbench import tl
        assert "ml_dtypes" not in sys.modules
        print(repr({use}))
        """
    )
    assert out.strip() == shown


def test_a_bfloat16_deploy_and_cast_by_name_run_in_a_fresh_process_and_round_as_bfloat16():
    out = fresh(
        """
        import numpy as np
        from kernbench import tl
        from kernbench.runtime.api import Runtime
        rt = Runtime("cube1")
        x = rt.deploy(np.full((4, 8), 1.00390625, np.float32), dtype="bfloat16", name="x")
        y = rt.deploy(np.zeros((4, 8), np.float32), name="y")

        def work(x, y):
            tl.store(y, tl.cast(tl.add(tl.load(x), tl.full((4, 8), 1.0, "bfloat16")), "float32"))

        rt.launch(work, pes=[0], args=(x, y))
        rt.run()
        print(x.array.dtype.name, float(y.array[0, 0]))
        """
    )
    # 1.00390625 is not a bfloat16 (8 bits of mantissa): it is stored as 1.0, and 1.0 + 1.0 = 2.0
    assert out.split() == ["bfloat16", "2.0"]


def test_tl_still_names_the_three_types_and_no_others():
    from kernbench import tl

    assert tl.DTYPES == ("bfloat16", "float8_e4m3fn", "float8_e5m2")
    with pytest.raises(AttributeError):
        _ = tl.float4_e2m1fn
