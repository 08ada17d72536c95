"""``policyengine run``: the scheduler itself, in a cluster.

The process connects (``--kubeconfig``, else ``KUBECONFIG``, else the pod's service account),
serves ``/metrics``, ``/healthz`` and ``/readyz``, and schedules — alone, or, with
``--leader-elect`` (the default), only while it holds the Lease. An API server that is
unreachable or refuses a call is reported with what to do and retried with backoff; it is never
a traceback or an exit.

A policy source that fails validation at start is reported as a rejected reload is (every
diagnostic in the log, ``/readyz``, the metrics), and the process stays up: it schedules with
the version the leader recorded in the cluster (``policyengine.controller.policy_record``), or,
with none, waits not ready until a valid version appears. A replica restarted while someone's
bad edit sits in the ConfigMap must not crash-loop. The leader records each version it accepts.

SIGTERM or SIGINT: stop taking pods, finish the binds in flight, release the lease (so a
standby takes over at once), exit 0. A second signal exits at once (status 1).

The policy is reloaded while running (``policyengine.controller.reload``): ``--policy`` paths
are polled (SIGHUP re-reads them at once), or the policy lives in ConfigMaps
(``--policy-configmap``, ``--policy-configmap-selector``) watched through the API. A new
version replaces the active one only once it compiles and passes its own tests.

The Kubernetes client is reached only through ``policyengine.controller`` modules, and only
once the command runs: building the CLI's parser must not import it.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from policyengine import __version__
from policyengine.cli import common

DEFAULT_SCHEDULER_NAME = "policyengine"
DEFAULT_METRICS_ADDR = "0.0.0.0:10251"  # policyengine.controller.health.DEFAULT_ADDRESS
DEFAULT_CONNECTIONS = 64  # policyengine.controller.outbox.DEFAULT_CONNECTIONS
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_POLL = 0.2  # how often the main thread looks at the worker
_RECORD_RETRY = 10.0  # seconds between looks for a recorded version while none is usable


def duration(text: str) -> float:
    """Seconds, from ``15``, ``15s``, ``500ms``, ``1m`` (the Go durations kube-scheduler takes)."""
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive duration (e.g. 15s, 500ms)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the scheduler against a Kubernetes cluster",
        description="Schedule the cluster's pending pods whose spec.schedulerName is "
        "--scheduler-name with the policy. Connects with --kubeconfig, else $KUBECONFIG, else "
        "the in-cluster service account. SIGTERM stops it cleanly (binds in flight finish, the "
        "lease is released). Exit status: 0 stopped, 1 failed while running, 2 bad input "
        "(a policy that does not compile, a bad flag, no connection settings).",
    )
    conn = parser.add_argument_group("connection")
    conn.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)",
    )
    conn.add_argument(
        "--kube-api-qps",
        type=float,
        default=50.0,
        metavar="QPS",
        help="client-side limit on requests per second to the API server; 0 disables it "
        "(default 50)",
    )
    conn.add_argument(
        "--kube-api-burst",
        type=int,
        default=100,
        metavar="N",
        help="requests allowed at once above --kube-api-qps (default 100)",
    )
    conn.add_argument(
        "--kube-api-connections",
        type=int,
        default=DEFAULT_CONNECTIONS,
        metavar="N",
        help="connections the loop's bindings, Events and status patches may keep open to "
        f"the API server, each one request at a time (default {DEFAULT_CONNECTIONS})",
    )
    sched = parser.add_argument_group("scheduling")
    sched.add_argument(
        "--policy",
        action="append",
        metavar="P",
        help="a .sched file or a directory of them (repeatable); re-read when it changes "
        "(polled, and at once on SIGHUP). Either this or --policy-configmap/-selector",
    )
    sched.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedule the pods whose spec.schedulerName is NAME, with the profile of that "
        "name; repeat for several (default: every profile of the policy, which is "
        f"{DEFAULT_SCHEDULER_NAME} when it declares none)",
    )
    sched.add_argument(
        "--seed", type=int, default=None, metavar="N", help="seed for breaking score ties"
    )
    sched.add_argument(
        "--load-poll-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how often node load is read from metrics.k8s.io and annotations (default 30)",
    )
    sched.add_argument(
        "--load-max-age",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="a load reading older than this counts as missing, never as idle (default 300)",
    )
    sched.add_argument(
        "--volume-bind-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="how long a pod's waiting claims may take to be bound before the pod is tried "
        "again (default 600, kube-scheduler's)",
    )
    common.add_topology_option(sched)
    reload = parser.add_argument_group("policy reload")
    reload.add_argument(
        "--policy-configmap",
        action="append",
        default=[],
        metavar="NAMESPACE/NAME",
        help="take the policy from the .sched keys of this ConfigMap, watched through the API "
        "(repeatable; NAME alone is in --policy-namespace)",
    )
    reload.add_argument(
        "--policy-configmap-selector",
        metavar="SELECTOR",
        help="also take the .sched keys of every ConfigMap in --policy-namespace that this "
        "label selector matches (e.g. policyengine.io/policy=true)",
    )
    reload.add_argument(
        "--policy-namespace",
        metavar="NS",
        help="namespace for --policy-configmap-selector and unqualified --policy-configmap "
        "names (default: the pod's own namespace, else default)",
    )
    reload.add_argument(
        "--policy-poll-interval",
        type=duration,
        default=2.0,
        metavar="D",
        help="how often --policy paths are re-read for changes (default 2s)",
    )
    reload.add_argument(
        "--policy-record",
        metavar="NAME",
        help="the ConfigMap (in --lease-namespace) where the leader records each policy version "
        "it accepts, and which a replica starts with when its source fails validation "
        "(default: LEASE-policy-record, LEASE being --lease-name, else the single "
        "--scheduler-name, else policyengine)",
    )
    reload.add_argument(
        "--policy-debounce",
        type=duration,
        default=0.5,
        metavar="D",
        help="wait this long after the last change before validating, so a burst of updates "
        "is validated once (default 500ms)",
    )
    ha = parser.add_argument_group("leader election")
    ha.add_argument(
        "--leader-elect",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="schedule only while holding the Lease, so replicas can stand by (default: on)",
    )
    ha.add_argument(
        "--lease-namespace",
        default="kube-system",
        metavar="NS",
        help="namespace of the Lease (default kube-system)",
    )
    ha.add_argument(
        "--lease-name", metavar="NAME", help="name of the Lease (default: the scheduler name)"
    )
    ha.add_argument(
        "--lease-duration",
        type=duration,
        default=15.0,
        metavar="D",
        help="how long standbys wait after the last renewal before taking over (default 15s)",
    )
    ha.add_argument(
        "--renew-deadline",
        type=duration,
        default=10.0,
        metavar="D",
        help="how long the leader keeps trying to renew before it stops scheduling "
        "(default 10s; less than --lease-duration)",
    )
    ha.add_argument(
        "--retry-period",
        type=duration,
        default=2.0,
        metavar="D",
        help="how often to renew or try to acquire the Lease (default 2s)",
    )
    ops = parser.add_argument_group("operations")
    ops.add_argument(
        "--metrics-addr",
        default=DEFAULT_METRICS_ADDR,
        metavar="HOST:PORT",
        help=f"where to serve /metrics, /healthz and /readyz (default {DEFAULT_METRICS_ADDR}; "
        "port 0 picks a free port)",
    )
    ops.add_argument(
        "--log-format",
        choices=("json", "console"),
        default="json",
        help="JSON lines (default) or a console layout",
    )
    ops.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="least severe level logged (default info)",
    )
    parser.set_defaults(run=run)


@dataclass
class _State:
    """What the health checks read while the worker thread schedules."""

    stop: threading.Event = field(default_factory=threading.Event)
    connected: threading.Event = field(default_factory=threading.Event)
    scheduler: Any = None
    holder: Any = None  # policy_source.PolicyHolder
    reloader: Any = None  # reload.Reloader, once started
    record: Any = None  # policy_record.PolicyRecord, once connected
    elector: Any = None
    failure: BaseException | None = None
    signals: int = 0

    def role(self) -> str:
        if self.elector is None:
            return "scheduler"
        return "leader" if self.elector.is_leader() else "standby"


def _run(args: argparse.Namespace) -> int:
    # The controller (and with it the kubernetes client) loads only now; see the docstring.
    from policyengine.controller import logs

    logs.configure(args.log_level, args.log_format)
    log = logs.get_logger("policyengine.run")
    if args.kube_api_burst < 1 and args.kube_api_qps > 0:
        raise common.InputError("--kube-api-burst must be at least 1")
    if args.kube_api_connections < 1:
        raise common.InputError("--kube-api-connections must be at least 1")
    from policyengine.controller.policy_source import PolicyHolder

    state = _State(holder=PolicyHolder())
    configmaps = _configmap_names(args)
    if args.policy and configmaps is not None:
        raise common.InputError(
            "--policy and --policy-configmap/--policy-configmap-selector are exclusive: "
            "the policy comes from files or from ConfigMaps"
        )
    source = None
    if configmaps is None:
        if not args.policy:
            raise common.InputError(
                "no policy: pass --policy P, or --policy-configmap / --policy-configmap-selector"
            )
        source = _directory_source(args, log)
    # Until a version is active, only the names given on the command line are known; the
    # ConfigMaps are read once the API answers.
    args.scheduler_names = tuple(args.scheduler_name or ())
    args.policy_record = args.policy_record or _default_record_name(args)
    election = _election_config(args) if args.leader_elect else None
    args.topology_config = common.topology_from(args.topology)

    from policyengine.controller import connection
    from policyengine.controller.health import Health, HealthServer
    from policyengine.controller.metrics import Metrics

    try:
        conn = connection.connect(args.kubeconfig, qps=args.kube_api_qps, burst=args.kube_api_burst)
    except connection.ConnectionConfigError as error:
        raise common.InputError(str(error)) from None

    metrics = Metrics()
    holder = state.holder
    metrics.track_policy(holder.stale_seconds, lambda: holder.since)
    if source is not None:
        # Files are read before the cluster is touched: a valid version is active at once,
        # a broken one is reported (as a rejected reload) before anything else is logged.
        _start_reloader(state, source, metrics, args, events=None, first_check=True)
        if holder.active is not None:
            _serve_profiles(state, args)
            if election is not None and not args.lease_name and not args.scheduler_name:
                election = _election_config(args)  # named after the profiles just loaded
    metrics.set_leader(False)
    health = _health(Health(), state, args)
    try:
        server = HealthServer(args.metrics_addr, health, metrics.render)
    except (OSError, ValueError) as error:
        conn.close()
        reason = getattr(error, "strerror", None) or str(error)
        raise common.InputError(f"--metrics-addr {args.metrics_addr}: {reason}") from None
    log.info(
        "policyengine run starting",
        version=__version__,
        scheduler_names=list(args.scheduler_names),
        policy_version=holder.version,
        policy_origin=source.origin if source is not None else _configmap_origin(args, configmaps),
        api_server=conn.host,
        connection=conn.source,
        leader_elect=args.leader_elect,
        metrics_url=server.url,
    )
    previous = _install_signals(state, log)
    worker = threading.Thread(
        target=_work,
        args=(state, conn, configmaps, metrics, election, args, log),
        name="policyengine-run",
        daemon=True,
    )
    worker.start()
    try:
        while worker.is_alive():
            worker.join(_POLL)
            if state.stop.is_set() and not state.connected.is_set():
                # Still waiting for the API server (maybe one that never answers): nothing is
                # in flight, so there is nothing to finish; the waiting thread dies with us.
                break
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if state.reloader is not None:
            state.reloader.stop()
        server.close()
        conn.close()
    if state.failure is not None:
        log.error(
            "policyengine run failed",
            error=f"{type(state.failure).__name__}: {state.failure}",
        )
        return 1
    log.info("policyengine run stopped")
    return common.EXIT_OK


# --- where the policy comes from ----------------------------------------------------------------

_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _own_namespace() -> str:
    try:
        with open(_SERVICE_ACCOUNT_NAMESPACE, encoding="utf-8") as file:
            return file.read().strip() or "default"
    except OSError:
        return "default"


def _configmap_names(args: argparse.Namespace) -> list[tuple[str, str]] | None:
    """The ``--policy-configmap`` names; None when the policy does not come from ConfigMaps."""
    if not args.policy_configmap and not args.policy_configmap_selector:
        return None
    from policyengine.controller.policy_source import parse_configmap_name

    args.policy_namespace = args.policy_namespace or _own_namespace()
    names = []
    for text in args.policy_configmap:
        try:
            names.append(parse_configmap_name(text, args.policy_namespace))
        except ValueError as error:
            raise common.InputError(f"--policy-configmap: {error}") from None
    return names


def _configmap_origin(args: argparse.Namespace, names: list[tuple[str, str]] | None) -> str:
    shown = [f"{ns}/{name}" for ns, name in names or ()]
    if args.policy_configmap_selector:
        shown.append(f"{args.policy_namespace}/[{args.policy_configmap_selector}]")
    return "configmap " + ", ".join(shown)


def _directory_source(args: argparse.Namespace, log: Any) -> Any:
    from policyengine.controller.policy_source import DirectorySource, subpath_warnings

    for warning in subpath_warnings(args.policy):
        log.warning(warning)
    return DirectorySource(args.policy, poll_interval=args.policy_poll_interval)


def _serve_profiles(state: _State, args: argparse.Namespace) -> None:
    """Once a first version is active: the profiles this process serves (those given, else
    all of the version's), which every later version must keep."""
    program = state.holder.current()
    if not args.scheduler_names:
        args.scheduler_names = tuple(program.profiles)
    reloader = state.reloader
    if reloader is not None:
        reloader.scheduler_names = args.scheduler_names
        reloader.controller = args.scheduler_names[0]


def _start_reloader(
    state: _State,
    source: Any,
    metrics: Any,
    args: argparse.Namespace,
    events: Any,
    *,
    first_check: bool = False,
) -> Any:
    from policyengine.controller.reload import Reloader, ReloadHooks, ReloadOptions

    def accepted(active: Any, _previous: Any) -> None:
        metrics.observe_reload("accepted")
        program = active.program
        metrics.set_policy((p.name for p in program.policies), program.version)
        scheduler = state.scheduler
        if scheduler is not None:
            scheduler.policy_changed()
        _record(state, args)

    def rejected(_problem: Any) -> None:
        metrics.observe_reload("rejected")

    reloader = Reloader(
        state.holder,
        source,
        scheduler_names=args.scheduler_names,
        hooks=ReloadHooks(on_accepted=accepted, on_rejected=rejected),
        events=events,
        controller=args.scheduler_names[0] if args.scheduler_names else DEFAULT_SCHEDULER_NAME,
        options=ReloadOptions(
            debounce=args.policy_debounce, max_delay=max(5.0, 4 * args.policy_debounce)
        ),
    )
    state.reloader = reloader
    if first_check:
        reloader.check("start")
    reloader.start()
    return reloader


# --- the recorded version ------------------------------------------------------------------------


def _default_record_name(args: argparse.Namespace) -> str:
    from policyengine.controller.policy_record import record_name

    names: list[str] = list(args.scheduler_name or ())
    return record_name(args.lease_name or (names[0] if len(names) == 1 else DEFAULT_SCHEDULER_NAME))


def _leading(state: _State, args: argparse.Namespace) -> bool:
    if not args.leader_elect:
        return True
    return state.elector is not None and state.elector.is_leader()


def _record(state: _State, args: argparse.Namespace) -> None:
    """The leader records the active version (one the source gave: a restored one is
    recorded already), so that a replica starting on a broken source has one."""
    record, active = state.record, state.holder.active
    if record is None or active is None or not active.fingerprint or not _leading(state, args):
        return
    record.write(active.program, active.origin)


def _restore(state: _State, metrics: Any, args: argparse.Namespace, log: Any) -> bool:
    """Schedule with the recorded version while the source's own cannot be used."""
    recorded = state.record.read()
    if recorded is None:
        return False
    from policyengine.schedlib import default_schema

    result = recorded.compile(default_schema())
    program = result.program
    if program is None:
        log.warning(
            "the recorded policy version does not compile with this release; waiting for a "
            "valid version from the source",
            record=recorded.where,
            version=recorded.version,
            errors=[d.message for d in result.diagnostics if d.is_error][:5],
        )
        return False
    missing = [name for name in args.scheduler_names if name not in program.profiles]
    if missing:
        log.warning(
            "the recorded policy version lacks profiles this scheduler serves; waiting for a "
            "valid version from the source",
            record=recorded.where,
            version=program.version,
            missing=missing,
        )
        return False
    problem = state.holder.problem
    state.holder.restore(
        program, f"recorded version ({recorded.where}, from {recorded.origin or 'unknown'})"
    )
    metrics.set_policy((p.name for p in program.policies), program.version)
    log.warning(
        "scheduling with the recorded policy version: the source's own cannot be used",
        version=program.version,
        record=recorded.where,
        recorded_at=recorded.recorded_at,
        recorded_from=recorded.origin,
        source_error=problem.message if problem is not None else None,
    )
    return True


def _first_version(state: _State, metrics: Any, args: argparse.Namespace, log: Any) -> bool:
    """Wait until a version is active: the source's own, else — while the source cannot be
    used — the recorded one (looked for again every ``_RECORD_RETRY``). False if stopped."""
    waited, next_record = 0.0, 0.0
    while not state.holder.wait_ready(_POLL):
        if state.stop.is_set():
            return False
        now = time.monotonic()
        problem = state.holder.problem
        if problem is not None and now >= next_record:
            next_record = now + _RECORD_RETRY
            if _restore(state, metrics, args, log):
                break
        waited += _POLL
        if waited >= 30.0:
            waited = 0.0
            log.warning(
                "still waiting for a valid policy",
                origin=state.reloader.source.origin if state.reloader else None,
                error=problem.message if problem else "no version seen yet",
                record=state.record.where if state.record else None,
            )
    _serve_profiles(state, args)
    return True


def _default_lease_name(args: argparse.Namespace) -> str:
    """The scheduler name when there is one; replicas serving several profiles share one."""
    names = args.scheduler_names
    return names[0] if len(names) == 1 else DEFAULT_SCHEDULER_NAME


def _election_config(args: argparse.Namespace) -> Any:
    from policyengine.controller.leader import LeaderElectionConfig

    try:
        return LeaderElectionConfig(
            namespace=args.lease_namespace,
            name=args.lease_name or _default_lease_name(args),
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
        )
    except ValueError as error:
        raise common.InputError(f"leader election: {error}") from None


def _health(health: Any, state: _State, args: argparse.Namespace) -> Any:
    def loop() -> str | None:
        if state.failure is not None:
            return f"the scheduler loop failed: {type(state.failure).__name__}"
        return None

    def lease() -> str | None:
        return state.elector.check() if state.elector is not None else None

    def reached() -> str | None:
        return None if state.connected.is_set() else "the API server has not answered yet"

    def role() -> str | None:
        if state.stop.is_set():
            return "shutting down"
        elector = state.elector
        if elector is not None and not elector.is_leader():
            # A standby is ready once it has read the lease: see policyengine.controller.health.
            return None if elector.observed.is_set() else "the lease has not been read yet"
        scheduler = state.scheduler
        if scheduler is None:
            return policy() or "the scheduler has not started"
        return None if scheduler.has_synced() else "the caches have not synced yet"

    def policy() -> str | None:
        # Once a version is active a bad update never fails readiness: the active version
        # keeps scheduling, and the ``policy`` detail shows what went wrong.
        if state.holder.active is not None:
            return None
        problem = state.holder.problem
        return "no valid policy yet" + (f": {problem.message}" if problem else "")

    def queues() -> dict[str, int] | None:
        scheduler = state.scheduler
        return scheduler.stats() if scheduler is not None else None

    health.add_liveness("loop", loop)
    health.add_liveness("lease", lease)
    health.add_readiness("api", reached)
    health.add_readiness("scheduler", role)
    health.add_detail("role", state.role)
    health.add_detail("scheduler_names", lambda: list(args.scheduler_names))
    health.add_detail("policy_version", lambda: state.holder.version)
    health.add_detail("policy", state.holder.status)
    health.add_detail("version", lambda: __version__)
    health.add_detail("queues", queues)
    return health


def _install_signals(state: _State, log: Any) -> dict[int, Any]:
    def handle(signum: int, _frame: FrameType | None) -> None:
        state.signals += 1
        name = signal.Signals(signum).name
        if state.signals > 1:
            log.warning(f"{name} again: exiting now, binds in flight abandoned")
            os._exit(1)
        log.info(f"{name}: stopping — finishing binds in flight, then releasing the lease")
        state.stop.set()

    def reread(_signum: int, _frame: FrameType | None) -> None:
        reloader = state.reloader
        if reloader is None:
            log.info("SIGHUP: no policy source to re-read yet")
            return
        log.info("SIGHUP: re-reading the policy")
        reloader.request("SIGHUP", force=True)

    previous: dict[int, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handle)
    previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, reread)
    return previous


def _watch_configmaps(
    state: _State,
    conn: Any,
    names: list[tuple[str, str]],
    metrics: Any,
    args: argparse.Namespace,
) -> None:
    """Watch the policy ConfigMaps; their first valid version is awaited by ``_first_version``."""
    from policyengine.controller.events import EventRecorder
    from policyengine.controller.policy_source import ConfigMapSource

    events = EventRecorder(conn.client)
    events.start()
    source = ConfigMapSource(
        conn.client,
        names=names,
        selector=args.policy_configmap_selector,
        namespace=args.policy_namespace,
    )
    _start_reloader(state, source, metrics, args, events)


def _work(
    state: _State,
    conn: Any,
    configmaps: list[tuple[str, str]] | None,
    metrics: Any,
    election: Any,
    args: argparse.Namespace,
    log: Any,
) -> None:
    """Connect, then schedule (alone or as the leader) until told to stop."""
    from policyengine.controller import connection
    from policyengine.controller.leader import LeaderElector
    from policyengine.controller.scheduler import Scheduler, SchedulerOptions

    def schedule(stop: threading.Event) -> None:
        scheduler = Scheduler(
            conn.client,
            state.holder.current,
            scheduler_names=args.scheduler_names,
            seed=args.seed,
            hooks=metrics.hooks(),
            bind_connections=args.kube_api_connections,
            options=SchedulerOptions(
                topology=args.topology_config,
                load_poll_interval=args.load_poll_interval,
                load_max_age=args.load_max_age,
                volume_bind_timeout=args.volume_bind_timeout,
                freeze_heap=True,
            ),
        )
        state.scheduler = scheduler
        try:
            scheduler.run(stop)
        finally:
            state.scheduler = None

    try:
        server_version = connection.wait_for_api(conn, stop=state.stop, log=log)
        state.connected.set()
        log.info("connected to the API server", api_server=conn.host, version=server_version)
        from policyengine.controller.policy_record import PolicyRecord

        state.record = PolicyRecord(conn.client, args.lease_namespace, args.policy_record)
        if configmaps is not None:
            _watch_configmaps(state, conn, configmaps, metrics, args)
        named = bool(args.scheduler_names)
        if not _first_version(state, metrics, args, log):
            return
        program = state.holder.current()
        log.info(
            "policy loaded",
            origin=state.holder.active.origin,
            policy_version=program.version,
            policies=[p.name for p in program.policies],
            scheduler_names=list(args.scheduler_names),
        )
        if election is not None and not named and not args.lease_name:
            election = _election_config(args)  # named after the profiles just loaded
        if election is None:
            metrics.set_leader(True)
            _record(state, args)
            schedule(state.stop)
            if not state.stop.is_set():
                state.failure = RuntimeError("the scheduler stopped on its own")
            return

        def started(stop_leading: threading.Event) -> None:
            metrics.set_leader(True)
            _record(state, args)
            schedule(stop_leading)

        def stopped() -> None:
            metrics.set_leader(False)

        elector = LeaderElector(
            conn.client,
            election,
            on_started_leading=started,
            on_stopped_leading=stopped,
        )
        state.elector = elector
        elector.run(state.stop)
        if elector.failed is not None:
            state.failure = elector.failed
        elif not state.stop.is_set():
            state.failure = RuntimeError("the scheduler stopped on its own")
    except connection.Stopped:
        log.info("stopped before the API server answered")
    except Exception as error:  # reported by _run: logged with its traceback, exit 1
        log.exception("the scheduler loop failed")
        state.failure = error


run = common.guarded("run", _run)
