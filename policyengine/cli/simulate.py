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
from collections.abc import Callable

from policyengine.cli import common, gpu_render, render
from policyengine.cli.progress import terminal_progress
from policyengine.engine import heap
from policyengine.engine.arrivals import ArrivalReport, replay
from policyengine.engine.gpu_report import Shapes, declared_shapes, parse_shapes
from policyengine.engine.simulate import Simulation, simulate
from policyengine.lang.compiler import Program
from policyengine.model.errors import ModelError
from policyengine.model.gpu_share import gpu_warnings
from policyengine.model.objects import Pod
from policyengine.model.snapshot_io import load_pods

FORMATS = ("table", "json", "yaml")


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
    parser.add_argument(
        "--arrivals",
        metavar="FILE",
        help="replay an arrival list instead of the pending pods: the pods of FILE (YAML or "
        "JSON, as for --cluster), in file order, each placed at once or dropped",
    )
    parser.add_argument(
        "--gpu-shapes",
        metavar="SPEC",
        help="pod shapes for GPU fragmentation, e.g. 'cores=25,memory=10Gi,weight=3;gpus=1' "
        "(default: the policy's `let gpu_shapes`/`let shapes`, else the simulated pods' demands)",
    )
    parser.set_defaults(run=run)


def progress_reporter() -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """A ``\\r`` counter on stderr when it is a terminal, and how to wipe it when done."""
    return terminal_progress(lambda done, total: f"scheduling pod {done}/{total}")


def _gpu_shapes(args: argparse.Namespace, program: Program) -> Shapes | None:
    spec = getattr(args, "gpu_shapes", None)
    if spec is None:
        return declared_shapes(program)
    shapes = parse_shapes(spec)
    if isinstance(shapes, str):
        raise common.InputError(f"--gpu-shapes: {shapes}")
    return shapes


def _arrivals(path: str) -> list[Pod]:
    try:
        pods, warnings = load_pods(path)
    except ModelError as exc:
        raise common.InputError(f"--arrivals: {exc}") from None
    common.warn("simulate", [*warnings, *gpu_warnings((), pods)])
    return list(pods)


def run_simulation(
    args: argparse.Namespace, progress: Callable[[int, int], None] | None = None
) -> Simulation:
    return run_with_arrivals(args, progress)[0]


def run_with_arrivals(
    args: argparse.Namespace, progress: Callable[[int, int], None] | None = None
) -> tuple[Simulation, ArrivalReport | None]:
    """The simulation, and the arrival replay's report when ``--arrivals`` was given."""
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
    common.warn_cluster("simulate", cluster, args)
    # The program and the snapshot live for the whole run (``engine.heap``).
    with heap.long_run():
        return _placed(args, program, cluster, progress)


def _placed(
    args: argparse.Namespace,
    program: Program,
    cluster: common.Cluster,
    progress: Callable[[int, int], None] | None,
) -> tuple[Simulation, ArrivalReport | None]:
    shapes = _gpu_shapes(args, program)
    arrivals_path = getattr(args, "arrivals", None)
    if arrivals_path:
        arrivals = _arrivals(arrivals_path)
        if cluster.pending:
            print(
                f"policyengine simulate: replaying {arrivals_path}; the snapshot's "
                f"{len(cluster.pending)} pending pod(s) are not placed",
                file=sys.stderr,
            )
        return replay(
            program,
            cluster.snapshot,
            arrivals,
            args.seed,
            progress,
            topology=common.topology_from(args.topology),
            config=common.KUBE_VERSIONS[args.kube_version],
            scheduler_name=args.scheduler_name,
            gpu_shapes=shapes,
            settle=True,
        )
    simulation = simulate(
        program,
        cluster.snapshot,
        cluster.pending,
        args.seed,
        progress,
        topology=common.topology_from(args.topology),
        config=common.KUBE_VERSIONS[args.kube_version],
        scheduler_name=args.scheduler_name,
        gpu_shapes=shapes,
        settle=True,
    )
    return simulation, None


def _run(args: argparse.Namespace) -> int:
    report, finish = progress_reporter()
    try:
        simulation, arrivals = run_with_arrivals(args, report)
    finally:
        finish()
    errors = dict.fromkeys(error for d in simulation.decisions for error in d.errors)
    common.warn("simulate", list(errors))
    if args.format in ("json", "yaml"):
        document = render.simulation_document(simulation)
        if simulation.gpu is not None:
            document["summary"]["gpu"] = gpu_render.gpu_summary(simulation.gpu)
        if arrivals is not None:
            document["summary"]["arrivals"] = gpu_render.arrivals_summary(arrivals)
        to_text = render.to_json if args.format == "json" else render.to_yaml
        print(to_text(document))
    else:
        table = render.simulation_table(simulation)
        extra = gpu_render.gpu_lines(simulation.gpu, arrivals)
        print(table + ("\n" + extra if extra else ""))
    return common.EXIT_OK


run = common.guarded("simulate", _run)
