"""The per-pod scenarios' driver: several runs of a workload, each in its own process, folded
into the rows of the table.

Per run it derives throughput (pods over the summed per-pod times, wall and CPU), per-pod
latency p50/p99 and peak RSS; the table shows the median run of each. The reference check runs
on the first run only: every run places the same pods on the same cluster with the same seed,
so they all decide alike (the worker results are compared to make sure of it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.harness import Measurement, child_env, flag, note, percentile, summarise
from benchmarks.workload import Workload

ROOT = Path(__file__).resolve().parent.parent


def run_worker(
    workload: Workload, check: int, label: str, alone: list[str] | None = None
) -> dict[str, Any]:
    """One run in a fresh interpreter (``benchmarks.worker``); its progress goes to stderr.
    ``alone``: the templates whose pods the run also places on their own."""
    request = json.dumps(
        {"workload": asdict(workload), "check": check, "label": label, "alone": alone}
    )
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.worker", request],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{label}: the worker failed (exit status {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def scaled_pods(full: int, scale: float) -> int:
    return max(1, round(full * scale))


def measure_workload(
    scenario: str,
    workload: Workload,
    runs: int,
    check: int,
    *,
    rate_target: str = "",
    p99_target: str = "",
    more: Callable[[list[dict[str, Any]]], list[Measurement]] | None = None,
    alone: list[str] | None = None,
) -> list[Measurement]:
    """Rows for one workload: throughput, latency, peak RSS, and the reference check (and
    ``more`` rows read from the runs' results; ``alone``: as ``run_worker``)."""
    label = f"{scenario} ({workload.nodes:,} nodes)"
    results = [
        run_worker(workload, check if i == 0 else 0, f"{label}: run {i + 1}/{runs}", alone)
        for i in range(runs)
    ]
    first = results[0]
    head = f"{first['nodes']:,} nodes, {first['pods']:,} pods"
    wall = [r["pods"] / sum(r["latencies"]) for r in results]
    cpu = [r["pods"] / max(sum(r["cpu"]), 1e-9) for r in results]
    p50 = [percentile(r["latencies"], 0.50) for r in results]
    p99 = [percentile(r["latencies"], 0.99) for r in results]
    rss = [r["peak_rss_kb"] / 1024 for r in results]
    scheduled = sorted({r["scheduled"] for r in results})
    note(
        scenario,
        **{
            head: {
                "nodes": first["nodes"],
                "pods": first["pods"],
                "scheduled": scheduled,  # one value when every run decided alike
                "build_seconds": [round(r["build_seconds"], 3) for r in results],
                "peak_rss_reset_after_build": first["peak_rss_reset"],
                "reference_checked": first["checked"],
                "reference_agreed": first["agreed"],
                "reference_differences": first["differences"],
            }
        },
    )
    rows = [
        summarise(scenario, f"{head}: throughput (wall)", wall, "pods/s", target=rate_target),
        summarise(scenario, f"{head}: throughput (CPU time)", cpu, "pods/s"),
        summarise(scenario, f"{head}: per-pod latency p50", p50, "ms", 1000),
        summarise(scenario, f"{head}: per-pod latency p99", p99, "ms", 1000, p99_target),
        summarise(scenario, f"{head}: peak RSS", rss, "MB"),
    ]
    if first["checked"]:
        checked = first["checked"]
        rows.append(
            Measurement(
                scenario,
                f"{head}: pods deciding as the reference evaluator",
                float(first["agreed"]),
                f"of {checked}",
                1,
                float(first["agreed"]),
                float(first["agreed"]),
                f"= {checked}",
            )
        )
    if len(scheduled) > 1:
        rows.append(flag(scenario, f"{head}: runs disagree on the pods scheduled: {scheduled}"))
    if more is not None:
        rows.extend(more(results))
    return rows
