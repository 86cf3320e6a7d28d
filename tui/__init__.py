"""kernbench-tui: a terminal debugger that steps through a kernel's simulated time."""
