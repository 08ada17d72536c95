"""``python -m benchmarks [SCENARIO ...] [--runs N] [--scale F] [--json FILE]``: run scenarios
and print one table (stdout); progress goes to stderr.

Each scenario has its own defaults for ``--runs`` and ``--scale``, chosen so the whole suite
takes a few minutes on the current evaluation path; passing either applies it to every
scenario chosen. ``--scale`` is the fraction of a scenario's pod count that is placed (the
node count never shrinks: the cost of a pod depends on it); the table names the counts.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import os
import platform
import sys
from pathlib import Path

from benchmarks.harness import Measurement, notes, render, to_json

SCENARIOS = {
    "compile": "benchmarks.compile",
    "basic": "benchmarks.basic",
    "steady": "benchmarks.steady",
    "affinity": "benchmarks.affinity",
    "mixed": "benchmarks.mixed",
    "shapes": "benchmarks.shapes",
    "gangs": "benchmarks.gangs",
    "gpushare": "benchmarks.gpushare",
    "preemption": "benchmarks.preemption",
    "e2e": "benchmarks.e2e",
    "e2e_mixed": "benchmarks.e2e_mixed",
    "e2e_slow": "benchmarks.e2e_slow",
    "scaling": "benchmarks.scaling",
    "reload": "benchmarks.reload",
    "memory": "benchmarks.memory",
    "bigsnapshot": "benchmarks.bigsnapshot",
    "storage": "benchmarks.storage",
}


def run_scenario(name: str, **given: object) -> list[Measurement]:
    """Run one scenario with the options it takes that were given (its defaults otherwise)."""
    run = importlib.import_module(SCENARIOS[name]).run
    accepted = inspect.signature(run).parameters
    return run(**{k: v for k, v in given.items() if v is not None and k in accepted})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument(
        "scenarios",
        nargs="*",
        choices=[*SCENARIOS, []],
        metavar="SCENARIO",
        help=f"which to run (default: all): {', '.join(SCENARIOS)}",
    )
    parser.add_argument(
        "--runs",
        type=int,
        help="repetitions per measurement, median reported (default: per scenario)",
    )
    parser.add_argument(
        "--scale",
        type=float,
        help="fraction of each scenario's pods to place (default: per scenario)",
    )
    parser.add_argument(
        "--check",
        type=int,
        help="pods per workload whose decision is compared with the reference evaluator",
    )
    parser.add_argument("--json", metavar="FILE", help="also write every measurement as JSON")
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.scale is not None and not 0 < args.scale <= 1:
        parser.error("--scale must be in (0, 1]")
    names = args.scenarios or list(SCENARIOS)
    rows: list[Measurement] = []
    for name in names:
        rows.extend(run_scenario(name, runs=args.runs, scale=args.scale, check=args.check))
    print(file=sys.stderr)
    print(render(rows))
    if args.json:
        document = to_json(
            rows,
            date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            machine={
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
            },
            arguments={k: v for k, v in vars(args).items() if k != "json"},
            scenarios=names,
            notes=notes(),
        )
        Path(args.json).write_text(document + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
