"""``policyengine simulate``: place a snapshot's pending pods with a policy, no cluster needed.

The main job of the tool, offline: pods go through filter → score → select in kube-scheduler's
queue order, each placement seen by the next, and the result is every placement, every
unschedulable pod with its reason, and what the cluster looks like after. With no arguments it
runs the shipped policies on the demo cluster, so ``policyengine simulate`` right after
installing shows the whole thing work. Unschedulable pods are a result, not an error: exit 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from policyengine.cli import common, render
from policyengine.engine.simulate import Simulation, simulate

FORMATS = ("table", "json", "yaml")
_PROGRESS_INTERVAL = 0.1  # seconds between redraws of the progress counter


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="place a snapshot's pending pods with a policy and report the result",
        description="Place the pending pods of a cluster snapshot (default: the demo cluster) "
        "with a policy (default: the shipped policies), in queue order. JSON: "
        '{"placements": [{"pod", "node", "reason"}...], "summary": {...}}. '
        "Exit status: 0 simulated (even with unschedulable pods), 2 bad input.",
    )
    common.add_policy_option(parser)
    common.add_cluster_option(parser, required=False)
    common.add_engine_options(parser)
    common.add_format_option(parser, FORMATS)
    parser.set_defaults(run=run)


def progress_reporter() -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
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
        text = f"scheduling pod {done}/{total}"
        width[0] = max(width[0], len(text))
        sys.stderr.write("\r" + text)
        sys.stderr.flush()

    def finish() -> None:
        if width[0]:
            sys.stderr.write("\r" + " " * width[0] + "\r")
            sys.stderr.flush()

    return report, finish


def run_simulation(
    args: argparse.Namespace, progress: Callable[[int, int], None] | None = None
) -> Simulation:
    program = common.load_program(args.policy)
    common.check_profile(program, args.scheduler_name)
    if args.cluster:
        cluster = common.load_cluster(args.cluster)
    else:
        cluster = common.demo_cluster()
        print(
            "policyengine simulate: using the demo cluster (pass --cluster SNAP for yours)",
            file=sys.stderr,
        )
    common.warn("simulate", cluster.warnings)
    return simulate(
        program,
        cluster.snapshot,
        cluster.pending,
        args.seed,
        progress,
        topology=common.topology_from(args.topology),
        config=common.KUBE_VERSIONS[args.kube_version],
        scheduler_name=args.scheduler_name,
    )


def _run(args: argparse.Namespace) -> int:
    report, finish = progress_reporter()
    try:
        simulation = run_simulation(args, report)
    finally:
        finish()
    errors = dict.fromkeys(error for d in simulation.decisions for error in d.errors)
    common.warn("simulate", list(errors))
    if args.format == "json":
        print(render.to_json(render.simulation_document(simulation)))
    elif args.format == "yaml":
        print(render.to_yaml(render.simulation_document(simulation)))
    else:
        print(render.simulation_table(simulation))
    return common.EXIT_OK


run = common.guarded("simulate", _run)
