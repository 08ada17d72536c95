"""``policyengine replay``: a GPU trace in the openb format, replayed as the FGD paper does.

Where ``simulate --arrivals`` replays one arrival list once, this command answers the question
fragmentation papers ask, with their method (``engine.trace_replay``): how many GPUs stay
unallocated when the GPU demand that arrived reaches 100% of the cluster's GPUs, as a mean over
seeds, and the whole curve. It reads the trace's two CSV files as they are published
(``model.openb``), so no conversion step sits between the trace and the figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from policyengine.cli import common, render
from policyengine.cli.replay_plot import html_page
from policyengine.engine import heap
from policyengine.engine.trace_replay import (
    AT_PERCENT,
    SeedRun,
    arrival_order,
    mean_curve,
    replay_trace,
)
from policyengine.model.openb import load_trace
from policyengine.model.snapshot import ClusterSnapshot

FORMATS = ("table", "json")
MAX_SEEDS = 1000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay a GPU trace (openb CSV) as the FGD paper does: unallocated GPUs against "
        "arrived demand",
        description="Replay a GPU trace in Alibaba's openb format (a node list and a pod list, "
        "CSV) with a policy: per seed, the pods in a seeded random order topped up by random "
        "draws until the GPU demand reaches --demand times the cluster's GPUs, each pod placed "
        "at once or dropped, no departures. Reports the unallocated GPU % when the arrived "
        'demand reaches 100% (mean over seeds) and the curve. JSON: {"trace", "policy", '
        '"demand", "unallocated_at_100", "curve", "seeds"}. Exit status: 0 replayed, 2 bad '
        "input.",
    )
    common.add_policy_option(parser)
    parser.add_argument(
        "--trace",
        action="append",
        required=True,
        metavar="PATH",
        help="the trace: a directory holding the node list and the pod list (*.csv), or the "
        "two files (repeatable); told apart by their headers",
    )
    parser.add_argument(
        "--seeds",
        default="0-9",
        metavar="SPEC",
        help="seeds to replay: numbers and ranges, e.g. 0-9 or 1,4,7 (default 0-9, as the "
        "paper); each seed draws the order and breaks the policy's random ties",
    )
    parser.add_argument(
        "--demand",
        type=float,
        default=1.3,
        metavar="FACTOR",
        help="top the arrivals up until the GPU demand reaches FACTOR times the cluster's "
        "GPUs (default 1.3, as the paper)",
    )
    parser.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="the profile to schedule with (default: policyengine)",
    )
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="write the curve as a self-contained HTML page (inline SVG) to FILE",
    )
    common.add_format_option(parser, FORMATS)
    parser.set_defaults(run=run)


_PROGRESS_INTERVAL = 0.2  # seconds between redraws of the progress counter


def progress_reporter(seed: int) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A ``\\r`` counter on stderr when it is a terminal, and how to wipe it when done."""
    if not sys.stderr.isatty():
        return None, lambda: None
    last = [0.0]
    width = [0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < _PROGRESS_INTERVAL:
            return
        last[0] = now
        text = f"seed {seed}: pod {done}/{total}"
        width[0] = max(width[0], len(text))
        sys.stderr.write("\r" + text)
        sys.stderr.flush()

    def finish() -> None:
        if width[0]:
            sys.stderr.write("\r" + " " * width[0] + "\r")
            sys.stderr.flush()

    return report, finish


def parse_seeds(spec: str) -> list[int]:
    """``0-9`` or ``1,4,7`` or both mixed; raises ``InputError`` saying what is wrong."""
    seeds: list[int] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            first = int(low)
            last = int(high) if sep else first
        except ValueError:
            raise common.InputError(
                f"--seeds {spec!r}: {part!r} is not a number or a range like 0-9"
            ) from None
        if first < 0 or last < first:
            raise common.InputError(
                f"--seeds {spec!r}: {part!r}: expected LOW-HIGH, 0 <= LOW <= HIGH"
            )
        seeds.extend(range(first, last + 1))
    if not seeds:
        raise common.InputError(f"--seeds {spec!r}: no seed given")
    if len(seeds) > MAX_SEEDS:
        raise common.InputError(f"--seeds {spec!r}: at most {MAX_SEEDS} seeds")
    return list(dict.fromkeys(seeds))


def _summary(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "mean": round(statistics.fmean(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
        "stdev": round(statistics.pstdev(values), 4),
    }


def _seed_document(run: SeedRun) -> dict[str, Any]:
    return {
        "seed": run.seed,
        "arrived": run.arrived,
        "placed": run.placed,
        "dropped_gpu_pods": run.dropped_gpu_pods,
        "unallocated_at_100": None if run.unallocated_at is None else round(run.unallocated_at, 4),
        "seconds": round(run.seconds, 3),
        "curve": [[p.arrived, p.unallocated] for p in run.curve],
    }


def _run(args: argparse.Namespace) -> int:
    seeds = parse_seeds(args.seeds)
    if not 0 < args.demand <= 10:
        raise common.InputError(f"--demand {args.demand}: expected a factor above 0, at most 10")
    program = common.load_program(args.policy)
    common.check_profile(program, args.scheduler_name)
    trace = load_trace(args.trace)
    common.warn("replay", list(trace.warnings))
    snapshot = ClusterSnapshot.build(trace.nodes)
    pods = [p.pod for p in trace.pods]
    milli = [p.gpu_milli for p in trace.pods]
    total = trace.total_gpus
    if not total:
        raise common.InputError("the trace's nodes have no GPUs")
    runs: list[SeedRun] = []
    with heap.long_run():  # the program and the cluster live for the whole run
        for position, seed in enumerate(seeds):
            try:
                arrivals = arrival_order(pods, milli, total, seed, args.demand)
            except ValueError as exc:
                raise common.InputError(str(exc)) from None
            report, finish = progress_reporter(seed)

            run = replay_trace(
                program,
                snapshot,
                arrivals,
                seed,
                report,
                scheduler_name=args.scheduler_name,
            )
            finish()
            at = "—" if run.unallocated_at is None else f"{run.unallocated_at:.2f}%"
            print(
                f"policyengine replay: seed {seed} ({position + 1}/{len(seeds)}): {at} "
                f"unallocated at {AT_PERCENT}% arrived; {run.placed}/{run.arrived} pods placed, "
                f"{run.dropped_gpu_pods} GPU pods dropped, {run.seconds:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            runs.append(run)
    values = [r.unallocated_at for r in runs if r.unallocated_at is not None]
    summary = _summary(values)
    curve = mean_curve(runs)
    document = {
        "trace": {
            "nodes": len(trace.nodes),
            "gpus": total,
            "pods": len(trace.pods),
            "gpu_pods": sum(1 for m in milli if m),
        },
        "policy": {"version": program.version, "scheduler_name": args.scheduler_name},
        "demand": args.demand,
        "unallocated_at_100": summary,
        "curve": [[x, y] for x, y in curve],
        "seeds": [_seed_document(r) for r in runs],
    }
    if args.plot:
        title = f"unallocated GPUs against arrived demand — {len(runs)} seed(s)"
        page = html_page(
            title,
            [[(p.arrived, p.unallocated) for p in r.curve] for r in runs],
            curve,
            None if summary is None else summary["mean"],
        )
        try:
            Path(args.plot).write_text(page, encoding="utf-8")
        except OSError as exc:
            raise common.InputError(f"--plot {args.plot}: {exc.strerror or exc}") from None
    if args.format == "json":
        print(render.to_json(document))
    else:
        rows = [
            [
                str(r.seed),
                "—" if r.unallocated_at is None else f"{r.unallocated_at:.2f}",
                f"{r.placed}/{r.arrived}",
                str(r.dropped_gpu_pods),
                f"{r.seconds:.1f}",
            ]
            for r in runs
        ]
        print(render.table(["SEED", "UNALLOCATED % @100", "PLACED", "GPU DROPS", "SECONDS"], rows))
        if summary is not None:
            print(
                f"\nunallocated GPUs at {AT_PERCENT}% arrived: mean {summary['mean']:.2f}% "
                f"(min {summary['min']:.2f}, max {summary['max']:.2f}) over {len(values)} seed(s)"
            )
    return common.EXIT_OK


run = common.guarded("replay", _run)
