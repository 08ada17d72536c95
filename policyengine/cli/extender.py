"""``policyengine extender``: the policy as a kube-scheduler extender.

For clusters that keep kube-scheduler and add policy rules on top of it: kube-scheduler posts
each pod's candidate nodes to ``…/filter`` and ``…/prioritize`` here
(``policyengine.controller.extender`` says what is answered and how scores map to 0–10).

The policy is compiled first: a broken one prints every diagnostic and exits 2 before
anything listens. Without ``--node-cache`` the process needs no cluster access at all
(kube-scheduler sends whole nodes); with it, it keeps nodes and pods from its own informers, so
kube-scheduler can send node names (``nodeCacheCapable: true``) and resource rules see the pods
on each node. SIGTERM or SIGINT stops it (exit 0).
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from policyengine import __version__
from policyengine.cli import common

DEFAULT_LISTEN = "0.0.0.0:8888"
_POLL = 0.2


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "extender",
        help="serve the policy as a kube-scheduler extender (filter, prioritize, preempt, bind)",
        description="Serve the kube-scheduler extender protocol: POST …/filter answers an "
        "ExtenderFilterResult, POST …/prioritize a HostPriorityList (the policy's total mapped "
        "to 0–10), POST …/preempt an ExtenderPreemptionResult (kube-scheduler's candidate "
        "victims reviewed by the policy's preempt rules), POST …/bind binds the pod with its "
        "GPU devices (an ExtenderBindingResult); GET /healthz, /readyz and /metrics. "
        "Exit status: 0 stopped by a signal, "
        "1 failed while running, 2 bad input (a policy that does not compile, a bad flag).",
    )
    parser.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="P",
        help="a .sched file or a directory of them (repeatable)",
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to serve (default {DEFAULT_LISTEN}; port 0 picks a free port)",
    )
    parser.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="decide with this profile (default: the pod's schedulerName when a profile has "
        "that name, else policyengine)",
    )
    parser.add_argument(
        "--node-cache",
        action="store_true",
        help="keep nodes and pods from the cluster (list+watch), for nodeCacheCapable: true "
        "and so that rules see the pods on each node",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig for --node-cache (default: $KUBECONFIG, else the in-cluster service "
        "account)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, metavar="N", help="seed for breaking score ties"
    )
    common.add_topology_option(parser)
    parser.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="JSON lines (default) or a console layout",
    )
    parser.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="least severe level logged (default info)",
    )
    parser.set_defaults(run=run)


def _run(args: argparse.Namespace) -> int:
    # The controller (and with it the kubernetes client) loads only now, as in ``run``.
    from policyengine.controller import logs

    logs.configure(args.log_level, args.log_format)
    log = logs.get_logger("policyengine.extender")
    program = common.load_program(args.policy)
    common.check_profile(program, args.scheduler_name)
    topology = common.topology_from(args.topology)

    from policyengine.controller import connection
    from policyengine.controller.extender import (
        Extender,
        ExtenderServer,
        NodeCache,
        policy_metrics,
    )

    conn: Any = None
    node_cache = None
    if args.node_cache:
        try:
            conn = connection.connect(args.kubeconfig)
        except connection.ConnectionConfigError as error:
            raise common.InputError(f"--node-cache: {error}") from None
        node_cache = NodeCache(conn.client)
    elif args.kubeconfig:
        raise common.InputError("--kubeconfig is only used with --node-cache")
    extender = Extender(
        lambda: program,
        node_cache=node_cache,
        scheduler_name=args.scheduler_name,
        topology=topology,
        seed=args.seed,
    )
    policy_metrics(extender.metrics, program)
    try:
        server = ExtenderServer(args.listen, extender)
    except (OSError, ValueError) as error:
        if conn is not None:
            conn.close()
        reason = getattr(error, "strerror", None) or str(error)
        raise common.InputError(f"--listen {args.listen}: {reason}") from None
    stop = threading.Event()
    previous = _install_signals(stop, log)
    log.info(
        "policyengine extender serving",
        version=__version__,
        url=server.url,
        policy_version=program.version,
        policies=[p.name for p in program.policies],
        node_cache=bool(node_cache),
        api_server=conn.host if conn is not None else None,
    )
    try:
        if node_cache is not None:
            node_cache.start()
        while not stop.wait(_POLL):
            pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        server.close()
        if node_cache is not None:
            node_cache.stop()
        if conn is not None:
            conn.close()
    log.info("policyengine extender stopped")
    return common.EXIT_OK


def _install_signals(stop: threading.Event, log: Any) -> dict[int, Any]:
    def handle(signum: int, _frame: FrameType | None) -> None:
        log.info(f"{signal.Signals(signum).name}: stopping")
        stop.set()

    previous: dict[int, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handle)
    return previous


run = common.guarded("extender", _run)
