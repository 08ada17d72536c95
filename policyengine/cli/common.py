"""What the offline commands share: their options, loading policy and snapshot, and bad input.

``filter``, ``score``, ``explain`` and ``simulate`` all compile a policy, read a cluster
snapshot and (but ``simulate``) pick one pod. Every way that can go wrong is the user's input,
not a bug, so each ends here as an ``InputError`` (or the model's ``ModelError``) that
``guarded`` prints as one clear message with exit status 2 — never a traceback. Policy problems
print every diagnostic with its caret, as ``lint`` would.
"""

from __future__ import annotations

import argparse
import difflib
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from policyengine.cli.progress import reading, terminal_progress
from policyengine.cli.render import to_json
from policyengine.diagnostics import Diagnostic, render
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.engine.profiles import profile_for
from policyengine.lang.compiler import CompiledPolicy, Program
from policyengine.lang.loader import expand_paths, shipped_policies_dir
from policyengine.model.errors import ModelError
from policyengine.model.gpu_share import gpu_warnings
from policyengine.model.objects import Pod
from policyengine.model.plugins.config import DEFAULT_CONFIG, KUBE_1_28, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import (
    SNAPSHOT_SUFFIXES,
    LoadedObjects,
    load_snapshot,
    parse_objects,
    parse_snapshot_text,
)
from policyengine.model.topology import DEFAULT_TOPOLOGY, LEVELS, TopologyConfig

KUBE_VERSIONS: dict[str, SchedulerConfig] = {"current": DEFAULT_CONFIG, "1.28": KUBE_1_28}
DEFAULT_NAMESPACE = "default"
DEMO_SEED = 0
EXIT_OK = 0
EXIT_INPUT = 2
_CLOSE_NAMES = 3


class InputError(Exception):
    """Bad input the user can fix; ``str(error)`` is the whole message."""


class PolicyError(Exception):
    """The policy did not compile: every diagnostic, with the sources to render carets from."""

    def __init__(self, diagnostics: Sequence[Diagnostic], sources: dict[str, str]):
        self.diagnostics = tuple(diagnostics)
        self.sources = sources
        errors = sum(1 for d in diagnostics if d.is_error)
        super().__init__(f"the policy has {errors} error{'s' if errors != 1 else ''}")


# --- options -------------------------------------------------------------------------------


def add_policy_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policy",
        action="append",
        metavar="P",
        help="a .sched file or a directory of them (repeatable; default: the shipped policies)",
    )


def add_cluster_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--cluster",
        action="append",
        required=required,
        metavar="SNAP",
        help="a cluster snapshot: kubectl List, multi-document YAML, JSON, or a directory "
        "of such files (repeatable)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also list what a warning about the snapshot only counts (each finished pod)",
    )


def warn_cluster(command: str, cluster: Cluster, args: argparse.Namespace) -> None:
    """The snapshot's warnings on stderr; with ``--verbose``, the finished pods one by one."""
    warn(command, cluster.warnings)
    if getattr(args, "verbose", False):
        warn(command, [f"finished pod ignored: {pod}" for pod in cluster.finished])


def add_pod_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pod",
        required=True,
        metavar="POD",
        help="NAMESPACE/NAME or NAME (namespace default) of a pod in the snapshot, "
        "or a pod YAML/JSON file",
    )


def add_one_pod_options(parser: argparse.ArgumentParser) -> None:
    """What ``filter``, ``score`` and ``explain`` share: a policy, a snapshot, one pod."""
    add_policy_option(parser)
    add_cluster_option(parser)
    add_pod_option(parser)
    add_engine_options(parser)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="the profile to schedule with (default: the pod's schedulerName when a profile "
        "has that name, else policyengine)",
    )
    parser.add_argument(
        "--kube-version",
        choices=tuple(KUBE_VERSIONS),
        default="current",
        help="reproduce this kube-scheduler release where behaviour changed (default: current)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed for breaking score ties (default 0)"
    )
    add_topology_option(parser)


def add_topology_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--topology",
        action="append",
        default=[],
        metavar="LEVEL=LABEL",
        help="read a topology level from this node label instead of the defaults (levels: "
        + ", ".join(LEVELS)
        + "); repeat a level to give fallbacks in order, e.g. --topology rack=example.com/rack",
    )


def topology_from(specs: Sequence[str]) -> TopologyConfig:
    """``--topology rack=example.com/rack …`` over the default keys; bad input says why."""
    chosen: dict[str, list[str]] = {}
    for spec in specs:
        level, sep, label = spec.partition("=")
        level = level.strip().replace("-", "_")
        if not sep or not label.strip():
            raise InputError(
                f"--topology {spec!r}: expected LEVEL=LABEL, e.g. rack=example.com/rack"
            )
        if level not in LEVELS:
            raise InputError(
                f"--topology {spec!r}: unknown level {level!r}; levels are {', '.join(LEVELS)}"
            )
        chosen.setdefault(level, []).append(label.strip())
    return replace(
        DEFAULT_TOPOLOGY, **{f"{level}_keys": tuple(keys) for level, keys in chosen.items()}
    )


def add_format_option(parser: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    parser.add_argument(
        "--format", choices=tuple(formats), default=formats[0], help="output format"
    )


# --- running a command ---------------------------------------------------------------------


def guarded(command: str, body: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """``body`` with bad input turned into a message on stderr and exit status 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return body(args)
        except PolicyError as error:
            for diagnostic in error.diagnostics:
                print(render(diagnostic, error.sources.get(diagnostic.span.file)), file=sys.stderr)
                print(file=sys.stderr)
            print(f"policyengine {command}: {error}; nothing was evaluated", file=sys.stderr)
        except (InputError, ModelError) as error:
            print(f"policyengine {command}: {error}", file=sys.stderr)
        return EXIT_INPUT

    return run


def rules_only_decision(command: str, setup: Setup) -> Decision:
    """``setup.decide(rules_only=True)``, warning on stderr when the pod's resource claims
    keep ``run`` and ``simulate`` from placing it whatever the rules say."""
    message = setup.target.pod.dra_message
    if message:
        warn(command, [f"{message}; the policy's rules would say:"])
    return setup.decide(rules_only=True)


def run_rules_command(
    command: str,
    args: argparse.Namespace,
    document: Callable[[Decision], dict[str, Any]],
    table: Callable[[Decision, Setup], str],
) -> int:
    """``filter`` and ``score``: one pod's rules on every node, as JSON (``document``) or a
    table for people; a pod no policy governs is said on stderr, the JSON still printed."""
    chosen = setup(command, args)
    decision = rules_only_decision(command, chosen)
    warn(command, decision.errors)
    if args.format == "json":
        if decision.policy is None:
            print(f"policyengine {command}: {decision.message}", file=sys.stderr)
        print(to_json(document(decision)))
    else:
        print(table(decision, chosen))
    return EXIT_OK


def warn(command: str, messages: Sequence[str]) -> None:
    for message in messages:
        print(f"policyengine {command}: warning: {message}", file=sys.stderr)


# --- the policy ----------------------------------------------------------------------------


def policy_paths(given: Sequence[str] | None) -> list[str]:
    return list(given) if given else [str(shipped_policies_dir())]


def load_program(given: Sequence[str] | None) -> Program:
    """The compiled policy; raises ``PolicyError`` or ``InputError``."""
    # Imported here: building the CLI's parser should not load the Kubernetes declarations.
    from policyengine.lang.cache import shared_cache
    from policyengine.schedlib import default_schema

    paths = policy_paths(given)
    files, problems = expand_paths(paths)
    if not files and not problems:
        raise InputError(f"no .sched files found in {', '.join(paths)}")
    result = shared_cache.compile_paths(paths, default_schema())
    if result.program is None:
        sources = dict(result.unit.sources) if result.unit is not None else {}
        raise PolicyError([d for d in result.diagnostics if d.is_error], sources)
    return result.program


def check_profile(program: Program, scheduler_name: str | None) -> None:
    if scheduler_name is not None and scheduler_name not in program.profiles:
        known = ", ".join(program.profiles) or "none"
        raise InputError(f"no profile named {scheduler_name!r} in the policy (profiles: {known})")


def policy_named(program: Program, name: str | None) -> CompiledPolicy | None:
    return program.policy(name) if name is not None else None


# --- the cluster ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Cluster:
    """A snapshot of the running pods, the pending pods, and every pod by key."""

    snapshot: ClusterSnapshot
    pending: tuple[Pod, ...]
    pods: dict[str, Pod] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    finished: tuple[str, ...] = ()  # the finished pods a warning counts (``--verbose`` lists)


def cluster_from(loaded: LoadedObjects) -> Cluster:
    snapshot, pending, warnings = snapshot_from_objects(
        loaded.nodes,
        loaded.pods,
        loaded.namespaces,
        loaded.pod_groups,
        loaded.node_metrics,
        pdbs=loaded.pdbs,
        storage=loaded.storage,
        workloads=loaded.workloads,
    )
    pods = {pod.key: pod for pod in loaded.pods}
    gpu = gpu_warnings(loaded.nodes, loaded.pods)
    return Cluster(snapshot, pending, pods, (*loaded.warnings, *warnings, *gpu), loaded.finished)


def load_cluster(paths: Sequence[str]) -> Cluster:
    """The snapshot at ``paths``, with a progress line while each file is read when stderr
    is a terminal; raises ``ModelError`` naming the object and field."""
    finishes: list[Callable[[], None]] = []

    def reporter(name: str) -> Callable[[int, int], None] | None:
        report, finish = terminal_progress(reading(name))
        finishes.append(finish)
        return report

    try:
        return cluster_from(load_snapshot(*paths, progress=reporter))
    finally:
        for finish in finishes:
            finish()


def demo_cluster() -> Cluster:
    """The demo cluster ``policyengine simulate`` shows a newcomer."""
    try:
        from policyengine import synthetic
    except ImportError:
        raise InputError(
            "the demo cluster is not available in this build; pass --cluster SNAP"
        ) from None
    preset = synthetic.demo()
    # ``demo()`` describes the cluster; ``generate`` makes its objects (always the same ones).
    objects = preset if isinstance(preset, list) else synthetic.generate(preset, seed=DEMO_SEED)
    return cluster_from(parse_objects(objects, "demo"))


# --- the pod -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The pod to decide for, and the snapshot it is decided against."""

    pod: Pod
    snapshot: ClusterSnapshot


def _pod_from_file(path: Path) -> Pod:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot read: {error}") from None
    loaded = parse_snapshot_text(text, str(path))
    if len(loaded.pods) != 1:
        raise InputError(f"{path}: expected one Pod, found {len(loaded.pods)}")
    return loaded.pods[0]


def _not_found(key: str, cluster: Cluster) -> InputError:
    keys = sorted(cluster.pods)
    if not keys:
        return InputError(f"pod {key} not found: the snapshot holds no pods")
    name = key.split("/", 1)[1]
    by_name: dict[str, list[str]] = {}
    for k in keys:
        by_name.setdefault(k.split("/", 1)[1], []).append(k)
    # The same name in another namespace first, then names that are spelt alike.
    close = list(by_name.get(name, ()))
    for similar in difflib.get_close_matches(name, list(by_name), _CLOSE_NAMES, 0.6):
        close.extend(k for k in by_name[similar] if k not in close)
    if close:
        hint = f"close names: {', '.join(close[:_CLOSE_NAMES])}"
    else:
        hint = f"pods in the snapshot include: {', '.join(keys[:_CLOSE_NAMES])}"
    return InputError(f"pod {key} not found in the snapshot; {hint}")


def resolve_pod(spec: str, cluster: Cluster) -> Target:
    """The pod ``--pod`` names, to be scheduled as if it were pending now.

    A running pod is taken off its node first and unbound: kube-scheduler never sees a pod with
    ``spec.nodeName``, and the pod must not compete with itself for its node's resources.
    """
    path = Path(spec)
    if path.is_file():
        pod = _pod_from_file(path)
    elif path.suffix.lower() in SNAPSHOT_SUFFIXES:
        raise InputError(f"{spec}: no such pod file")
    else:
        key = spec if "/" in spec else f"{DEFAULT_NAMESPACE}/{spec}"
        found = cluster.pods.get(key)
        if found is None:
            raise _not_found(key, cluster)
        pod = found
    snapshot = cluster.snapshot
    if pod.key in snapshot.pod_nodes:
        snapshot = snapshot.without_pod(pod.key)
    if pod.node_name:
        pod = replace(pod, node_name="")
    return Target(pod, snapshot)


def check_node(name: str, snapshot: ClusterSnapshot) -> None:
    if name in snapshot:
        return
    close = difflib.get_close_matches(name, list(snapshot.node_names), _CLOSE_NAMES, 0.5)
    shown = close or list(snapshot.node_names)[:_CLOSE_NAMES]
    label = "close names" if close else "nodes in the snapshot include"
    hint = f"; {label}: {', '.join(shown)}" if shown else ""
    raise InputError(f"node {name} not found in the snapshot{hint}")


# --- one decision --------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """Everything a one-pod command needs, loaded and checked."""

    program: Program
    target: Target
    config: SchedulerConfig
    topology: TopologyConfig
    scheduler_name: str | None
    seed: int
    pending: tuple[Pod, ...] = ()  # the snapshot's pending pods (a gang member's peers)

    @property
    def profile(self) -> str:
        return profile_for(self.program, self.target.pod, self.scheduler_name)

    def decide(self, rules_only: bool = False) -> Decision:
        """The target pod's cycle. ``rules_only``: what the policy's rules say of every node
        even for a pod ``run`` and ``simulate`` would not place for its resource claims
        (``filter`` and ``score`` show the rules; a warning says the rest)."""
        options = CycleOptions(
            all_filters=True,
            scheduler_name=self.scheduler_name,
            claims_allocated_elsewhere=rules_only,
        )
        return schedule(
            self.program,
            self.target.pod,
            self.target.snapshot,
            random.Random(self.seed),
            options,
            self.topology,
            self.config,
        )


def setup(command: str, args: argparse.Namespace) -> Setup:
    """Load and check ``--policy``, ``--cluster`` and ``--pod``; print the loader's warnings."""
    program = load_program(args.policy)
    check_profile(program, args.scheduler_name)
    cluster = load_cluster(args.cluster)
    warn_cluster(command, cluster, args)
    target = resolve_pod(args.pod, cluster)
    return Setup(
        program=program,
        target=target,
        config=KUBE_VERSIONS[args.kube_version],
        topology=topology_from(args.topology),
        scheduler_name=args.scheduler_name,
        seed=args.seed,
        pending=cluster.pending,
    )
