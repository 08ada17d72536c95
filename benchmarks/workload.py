"""The per-pod scenarios' common work: a generated cluster, the bench policy, and pods placed
one at a time with a timer around each.

The loop is ``simulate``'s — kube-scheduler's queue order, one cycle per pod with every node
evaluated, the choice assumed into the snapshot before the next pod — written out here so
each pod can be timed on its own and, for the sampled pods, the snapshot it was decided
against handed to the reference check. ``tests/test_benchmarks_smoke.py`` holds this loop
equal to ``simulate``. ``place_one`` is the one
place that runs a cycle.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from policyengine import synthetic
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import Program, compile_paths
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.schedlib import default_schema

POLICY = Path(__file__).parent / "policies" / "basic.sched"
SEED = 1  # the one cluster every run of every per-pod scenario measures
PRESETS = ("basic", "affinity", "mixed")
# The policy each preset is placed under: the bench policy, or the shipped policy directory as
# a user runs it (its profiles decide which policy governs each pod).
SHIPPED = Path(__file__).resolve().parent.parent / "policies"
POLICIES = {"basic": POLICY, "affinity": POLICY, "mixed": SHIPPED}


@dataclass(frozen=True)
class Workload:
    """A cluster preset of ``synthetic`` at a size, and the seed that makes it one cluster."""

    preset: str
    nodes: int
    pods: int
    seed: int = SEED

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; one of {PRESETS}")
        if self.nodes < 1 or self.pods < 1:
            raise ValueError("a workload needs at least one node and one pod")


@dataclass(frozen=True)
class Cluster:
    program: Program
    snapshot: ClusterSnapshot
    pending: tuple[Pod, ...]  # in queue order
    # The class cache the cluster's cycles share, as one ``simulate`` run owns one.
    classes: ClassCache = field(default_factory=ClassCache, compare=False)


def compile_policy(path: Path = POLICY) -> Program:
    result = compile_paths([path], default_schema())
    if result.program is None:
        raise RuntimeError(f"{path} does not compile: {result.diagnostics}")
    return result.program


def build(workload: Workload) -> Cluster:
    """The workload's cluster, parsed exactly as a ``kubectl get -o yaml`` snapshot would be."""
    spec = getattr(synthetic, workload.preset)(workload.nodes, workload.pods)
    loaded = parse_objects(synthetic.generate(spec, seed=workload.seed), "synthetic")
    snapshot, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, workloads=loaded.workloads
    )
    return Cluster(compile_policy(POLICIES[workload.preset]), snapshot, tuple(queue_order(pending)))


def place_one(
    cluster: Cluster, pod: Pod, snapshot: ClusterSnapshot, rng: random.Random
) -> Decision:
    """One scheduling cycle, as ``simulate`` runs it (its options, the cluster's cache)."""
    options = CycleOptions(all_filters=False, cache=cluster.classes)
    return schedule(cluster.program, pod, snapshot, rng, options)


# Called with (pod, decision, snapshot the pod was decided against, rng state before it).
Inspect = Callable[[Pod, Decision, ClusterSnapshot, object], None]


@dataclass
class Placement:
    """What one pass over the pending pods measured."""

    latencies: list[float] = field(default_factory=list)  # seconds per pod, cycle + assume
    # CPU seconds per pod: what the work costs, nearly independent of what else the shared
    # machine runs at the time (wall time is what a user waits, and noisier).
    cpu: list[float] = field(default_factory=list)
    # The chosen node per pod, not the decisions: a decision keeps its snapshot and cycle state
    # alive, and 10,000 of them held gigabytes a running scheduler never holds.
    nodes: list[str | None] = field(default_factory=list)

    @property
    def scheduled(self) -> int:
        return sum(1 for node in self.nodes if node is not None)


def place_all(
    cluster: Cluster,
    seed: int = 0,
    inspect: Inspect | None = None,
    sample: Sequence[int] = (),
    report: Callable[[int, int], None] | None = None,
) -> Placement:
    """Place every pending pod in queue order, timing each; ``inspect`` sees the pods whose
    queue positions are in ``sample``, outside the timed part."""
    rng = random.Random(seed)
    snapshot = cluster.snapshot
    wanted = set(sample)
    out = Placement()
    total = len(cluster.pending)
    for index, pod in enumerate(cluster.pending):
        state = rng.getstate() if index in wanted else None
        before = snapshot
        start, start_cpu = time.perf_counter(), time.process_time()
        decision = place_one(cluster, pod, snapshot, rng)
        if decision.node is not None:
            snapshot = snapshot.with_pod(pod, decision.node)
        out.latencies.append(time.perf_counter() - start)
        out.cpu.append(time.process_time() - start_cpu)
        out.nodes.append(decision.node)
        if inspect is not None and state is not None:
            inspect(pod, decision, before, state)
        if report is not None:
            report(index + 1, total)
    return out


def warm_up(cluster: Cluster) -> None:
    """One untimed cycle, so the first timed pod does not pay for lazy imports and caches.
    It uses its own rng and assumes nothing: the timed pass is unchanged by it."""
    if cluster.pending:
        place_one(cluster, cluster.pending[0], cluster.snapshot, random.Random(0))


def template_of(app: str, names: Sequence[str]) -> str:
    """The template an ``app`` label comes from (``web-3`` of ``web``): the longest of
    ``names`` it is or starts with, else the label itself."""
    return max((n for n in names if app == n or app.startswith(n + "-")), key=len, default=app)


def place_alone(
    cluster: Cluster, templates: Sequence[str], before: Callable[[], None] | None = None
) -> dict[str, Placement]:
    """Each template's pending pods placed with no other pod in the queue: from the cluster's
    snapshot, in queue order, with a class cache of their own (as a scheduler that sees only
    that workload would run them, its first cycle included). ``before`` runs ahead of each
    template's placement (the worker settles the heap there)."""
    groups: dict[str, list[Pod]] = {}
    for pod in cluster.pending:
        groups.setdefault(template_of(pod.labels.get("app", ""), templates), []).append(pod)
    placed = {}
    for name, pods in groups.items():
        if before is not None:
            before()
        placed[name] = place_all(Cluster(cluster.program, cluster.snapshot, tuple(pods)))
    return placed


def evenly(count: int, total: int) -> list[int]:
    """``count`` queue positions spread over ``total`` pods (first and last included)."""
    if count <= 0 or total <= 0:
        return []
    if count >= total:
        return list(range(total))
    if count == 1:
        return [0]
    return sorted({round(i * (total - 1) / (count - 1)) for i in range(count)})
