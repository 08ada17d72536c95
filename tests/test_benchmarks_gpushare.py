"""The gpushare benchmark scenario runs at a tiny size and reports its rows (no timing checks)."""

from __future__ import annotations

import math

from benchmarks import gpushare
from benchmarks.__main__ import SCENARIOS


def test_gpushare_reports_speed_and_placement_rows() -> None:
    assert SCENARIOS["gpushare"] == "benchmarks.gpushare"
    rows = gpushare.run(runs=1, scale=0.0005, nodes=20)
    metrics = [r.metric for r in rows]
    prefix = "20 GPU nodes, 5 arrivals: "
    assert metrics == [
        prefix + "throughput",
        prefix + "per-arrival latency p50",
        prefix + "per-arrival latency p99",
        prefix + "arrived GPU demand placed",
        prefix + "no GPU pod dropped (the cluster never filled)",
        prefix + "free GPU compute fragmented at the end",
    ]
    assert all(r.median > 0 for r in rows[:3])
    assert rows[3].median == 100
    assert math.isnan(rows[4].median)
