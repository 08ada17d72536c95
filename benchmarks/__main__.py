"""``python -m benchmarks [SCENARIO ...] [--runs N]``: run scenarios and print one table."""

from __future__ import annotations

import argparse
import importlib
import sys

from benchmarks.harness import table

SCENARIOS = {"compile": "benchmarks.compile"}


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
        "--runs", type=int, default=7, help="repetitions per measurement (median reported)"
    )
    args = parser.parse_args(argv)
    rows = []
    for name in args.scenarios or list(SCENARIOS):
        rows.extend(importlib.import_module(SCENARIOS[name]).run(runs=args.runs))
    print(file=sys.stderr)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
