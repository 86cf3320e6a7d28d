"""Reading recorded runs: the critical path and the latency attribution (critical)."""
