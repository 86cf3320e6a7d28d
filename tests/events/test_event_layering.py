"""The simulator core never imports the terminal app's toolkit."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_event_store_timeline_and_exports_import_without_textual():
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r});"
        "import kernbench.events.store, kernbench.events.timeline, kernbench.events.tracefile, kernbench.events.perfetto;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'kernbench_tui', 'kernbench_probes', 'rich')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
