"""The shapes scenario: the mixed cluster's pods reshaped into constraints the mix does not hold.

A fast path tuned to the ``mixed`` templates can leave another mix on a slow one. Here each of
the mix's CPU apps takes one scheduling shape of a table (soft spread by hostname and rack,
hard spread with node inclusion policies or ``minDomains``, ``matchLabelKeys``, selectors by
expression, preferred and required pod affinity and anti-affinity on several topology keys,
required node affinity with ``NotIn`` and ``Exists``, host ports, init and sidecar containers,
pod overhead, an image the nodes hold, no requests at all, a toleration of every taint — so it
may land on GPU nodes — a priority that never preempts, and a DaemonSet's pinning to one node
by name), and the GPU pods lose their
workload labels, so that ``gpu-fgd`` (fragmentation against shapes learned from the running
pods) governs them instead of the training and inference policies. The pods are placed in
queue order under the shipped policy directory, in this process; CPU time per pod, summed
per shape, slowest first, and the first pods of each shape decided again by the reference.
Then a DaemonSet is rolled out alone on the same cluster, one pod pinned to each of 2,000
nodes: every pod a class of its own, the case a class cache helps least.
"""

from __future__ import annotations

import itertools
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence
from typing import Any

from benchmarks.harness import Measurement, note, progress, summarise
from benchmarks.workload import SEED, SHIPPED, compile_policy
from policyengine import synthetic
from policyengine.engine import heap
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.engine.simulate import queue_order
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.schedlib import gpu, kept, steplog

NODES = 5000
PODS = 6000
ROLLOUT = 2000  # nodes a DaemonSet is rolled out to, alone
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0
DEFAULT_CHECK = 3  # pods per shape

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "topology.kubernetes.io/rack"
KIND = "workload.ai/kind"

Pod = dict[str, Any]
# (pod, its app, a node to pin it to)
Reshape = Callable[[Pod, str, str], None]


def _selector(app: str) -> dict[str, Any]:
    return {"matchLabels": {"app": app}}


def _spread(*constraints: tuple[str, int, str, dict[str, Any]]) -> Reshape:
    def reshape(pod: Pod, app: str, node: str) -> None:
        pod["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": _selector(app),
                **extra,
            }
            for key, skew, when, extra in constraints
        ]

    return reshape


def _pod_affinity(kind: str, required: bool, key: str, target: str | None, **extra: Any) -> Reshape:
    def reshape(pod: Pod, app: str, node: str) -> None:
        term = {"labelSelector": _selector(target or app), "topologyKey": key, **extra}
        terms = pod["spec"].setdefault("affinity", {}).setdefault(kind, {})
        if required:
            terms.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            terms.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": 80, "podAffinityTerm": term}
            )

    return reshape


def _node_affinity(pod: Pod, app: str, node: str) -> None:
    racks = [f"rack-{i:03d}" for i in range(10, 40)]
    pod["spec"].setdefault("affinity", {})["nodeAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": RACK, "operator": "NotIn", "values": ["rack-001", "rack-002"]},
                        {"key": "node.kubernetes.io/instance-type", "operator": "Exists"},
                    ]
                }
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 30, "preference": {"matchExpressions": [_in(ZONE, ["us-east-2a"])]}},
            {"weight": 70, "preference": {"matchExpressions": [_in(RACK, racks)]}},
        ],
    }


def _in(key: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": values}


def _match_label_keys(pod: Pod, app: str, node: str) -> None:
    pod["metadata"]["labels"]["pod-template-hash"] = f"h{len(app) % 3}"
    _spread((HOST, 1, "ScheduleAnyway", {"matchLabelKeys": ["pod-template-hash"]}))(pod, app, node)


def _selector_expressions(pod: Pod, app: str, node: str) -> None:
    pod["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 2,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {
                "matchExpressions": [
                    _in("app", [app, "web-4", "api-3"]),
                    {"key": "tier", "operator": "DoesNotExist"},
                ]
            },
        }
    ]


def _host_port(pod: Pod, app: str, node: str) -> None:
    port = {"containerPort": 8080, "hostPort": 18080 + len(app) % 5, "protocol": "TCP"}
    pod["spec"]["containers"][0]["ports"] = [port]


def _init_and_sidecar(pod: Pod, app: str, node: str) -> None:
    pod["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "resources": {"requests": {"cpu": "3"}}},
        {
            "name": "proxy",
            "image": "envoy",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        },
    ]


def _overhead(pod: Pod, app: str, node: str) -> None:
    pod["spec"]["overhead"] = {"cpu": "250m", "memory": "120Mi"}


def _held_image(pod: Pod, app: str, node: str) -> None:
    pod["spec"]["containers"][0]["image"] = "registry.example.com/web/api:1.4.2"


def _no_requests(pod: Pod, app: str, node: str) -> None:
    for container in pod["spec"]["containers"]:
        container.pop("resources", None)


def _tolerates_everything(pod: Pod, app: str, node: str) -> None:
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]


def _pinned(pod: Pod, app: str, node: str) -> None:
    # As the DaemonSet controller makes its pods: one node by name, every taint tolerated.
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    pod["spec"]["tolerations"] = [{"operator": "Exists"}]


def daemonset_pod(index: int, node: str) -> Pod:
    """A DaemonSet's pod for ``node``, as its controller makes it (owner, small requests)."""
    pod: Pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"node-agent-{index}",
            "namespace": "kube-system",
            "uid": f"node-agent-uid-{index}",
            "labels": {"app": "node-agent"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "DaemonSet",
                    "name": "node-agent",
                    "uid": "node-agent-ds",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "agent",
                    "image": "node-agent:1",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ]
        },
    }
    _pinned(pod, "node-agent", node)
    return pod


def _never_preempts(pod: Pod, app: str, node: str) -> None:
    pod["spec"]["preemptionPolicy"] = "Never"
    pod["spec"]["priority"] = 1000


SHAPES: dict[str, Reshape] = {
    "soft spread by hostname": _spread((HOST, 1, "ScheduleAnyway", {})),
    "soft spread by rack": _spread((RACK, 2, "ScheduleAnyway", {})),
    "hard spread by rack": _spread((RACK, 3, "DoNotSchedule", {})),
    "hard spread, inclusion policies": _spread(
        (ZONE, 1, "DoNotSchedule", {"nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"})
    ),
    "hard spread, minDomains": _spread((ZONE, 1, "DoNotSchedule", {"minDomains": 3})),
    "soft spread by zone and hostname": _spread(
        (ZONE, 3, "ScheduleAnyway", {}), (HOST, 1, "ScheduleAnyway", {})
    ),
    "spread with matchLabelKeys": _match_label_keys,
    "spread by selector expressions": _selector_expressions,
    "preferred anti-affinity by hostname": _pod_affinity("podAntiAffinity", False, HOST, None),
    "preferred anti-affinity by zone": _pod_affinity("podAntiAffinity", False, ZONE, None),
    "required affinity to another app's zone": _pod_affinity("podAffinity", True, ZONE, "web-4"),
    "preferred affinity, every namespace": _pod_affinity(
        "podAffinity", False, HOST, "cache-0", namespaceSelector={}
    ),
    "required anti-affinity by rack": _pod_affinity("podAntiAffinity", True, RACK, None),
    "node affinity by NotIn and Exists": _node_affinity,
    "host port": _host_port,
    "init and sidecar containers": _init_and_sidecar,
    "pod overhead": _overhead,
    "an image the nodes hold": _held_image,
    "no requests": _no_requests,
    "tolerates every taint": _tolerates_everything,
    "a priority that never preempts": _never_preempts,
    "pinned to one node by name (a DaemonSet's pods)": _pinned,
}
GPU_SHAPE = "GPU pods under gpu-fgd"


def reshaped(nodes: int, pods: int, seed: int = SEED) -> tuple[list[Any], dict[str, str]]:
    """The mixed cluster's objects with its pending pods reshaped, and each pending pod's
    shape by name. Each CPU app takes one shape (the apps shuffled, then dealt in turn)."""
    objects = synthetic.generate(synthetic.mixed(nodes, pods), seed=seed)
    pending = [o for o in objects if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
    apps = sorted({p["metadata"]["labels"].get("app", "") for p in pending})
    cpu_apps = [a for a in apps if not a.startswith("gpu")]
    random.Random(seed).shuffle(cpu_apps)
    names = list(SHAPES)
    shape_of_app = {app: names[i % len(names)] for i, app in enumerate(cpu_apps)}
    pins = itertools.cycle(sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Node"))
    shape_of: dict[str, str] = {}
    for pod in pending:
        app = pod["metadata"]["labels"].get("app", "")
        shape = shape_of_app.get(app)
        if shape is None:
            pod["metadata"]["labels"].pop(KIND, None)
            shape = GPU_SHAPE
        else:
            SHAPES[shape](pod, app, next(pins))
        shape_of[pod["metadata"]["name"]] = shape
    return objects, shape_of


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    nodes: int = NODES,
) -> list[Measurement]:
    count = max(len(SHAPES) * 4, round(PODS * scale))
    progress(f"shapes: building {nodes:,} nodes and {count:,} reshaped pods")
    objects, shape_of = reshaped(nodes, count)
    loaded = parse_objects(objects, "synthetic")
    snapshot, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, workloads=loaded.workloads
    )
    queue = queue_order(pending)
    program = compile_policy(SHIPPED)
    head = f"{nodes:,} nodes, {len(queue):,} pods"
    totals: list[float] = []
    by_shape: dict[str, list[float]] = defaultdict(list)
    checked = differing = 0
    firsts: Counter[str] = Counter()
    sampled: set[str] = set()
    for pod in queue:
        firsts[shape_of[pod.name]] += 1
        if firsts[shape_of[pod.name]] <= check:
            sampled.add(pod.name)
    for i in range(runs):
        progress(f"shapes: run {i + 1}/{runs}")
        seconds, found = place_queue(program, queue, snapshot, sampled if i == 0 else set())
        checked, differing = checked + found[0], differing + found[1]
        spent: dict[str, float] = defaultdict(float)
        seen: Counter[str] = Counter()
        for pod, cpu in zip(queue, seconds, strict=True):
            spent[shape_of[pod.name]] += cpu
            seen[shape_of[pod.name]] += 1
        totals.append(len(queue) / sum(spent.values()))
        for shape, total in spent.items():
            by_shape[shape].append(seen[shape] / total)
    note("shapes", pods=dict(Counter(shape_of.values())), checked=checked, differing=differing)
    rows = [summarise("shapes", f"{head}: throughput (CPU time)", totals, "pods/s")]
    rows.append(_agreed(head, checked, differing))
    for shape in sorted(by_shape, key=lambda s: min(by_shape[s])):
        rows.append(summarise("shapes", f"shape {shape} (CPU time)", by_shape[shape], "pods/s"))
    return rows + rollout(runs, scale, check, nodes)


def rollout(runs: int, scale: float, check: int, nodes: int) -> list[Measurement]:
    """A DaemonSet rolled out alone on the mixed cluster (its pending pods left out): one pod
    per node, each pinned to its node by name, so each is a class of its own."""
    count = min(nodes, max(50, round(ROLLOUT * scale)))
    progress(f"shapes: a DaemonSet rolled out to {count:,} of {nodes:,} nodes")
    objects = [
        o
        for o in synthetic.generate(synthetic.mixed(nodes, 0), seed=SEED)
        if o["kind"] != "Pod" or o["spec"].get("nodeName")
    ]
    names = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "Node")
    objects += [daemonset_pod(i, name) for i, name in enumerate(names[:count])]
    loaded = parse_objects(objects, "synthetic")
    snapshot, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, workloads=loaded.workloads
    )
    queue = queue_order(pending)
    program = compile_policy(SHIPPED)
    rates: list[float] = []
    checked = differing = 0
    sampled = {pod.name for pod in queue[:check]}
    for i in range(runs):
        progress(f"shapes: rollout run {i + 1}/{runs}")
        spent, found = place_queue(program, queue, snapshot, sampled if i == 0 else set())
        checked, differing = checked + found[0], differing + found[1]
        rates.append(len(queue) / sum(spent))
    head = f"a DaemonSet rolled out to {len(queue):,} of {nodes:,} nodes"
    return [
        summarise("shapes", f"{head}, alone: throughput (CPU time)", rates, "pods/s"),
        _agreed(head, checked, differing),
    ]


def _agreed(head: str, checked: int, differing: int) -> Measurement:
    return summarise(
        "shapes",
        f"{head}: pods deciding as the reference evaluator",
        [checked - differing],
        f"of {checked}",
        target=f"= {checked}",
    )


def place_queue(
    program: Any, queue: Sequence[Any], snapshot: Any, sampled: Collection[str]
) -> tuple[list[float], tuple[int, int]]:
    """Place ``queue`` in order, each choice assumed before the next, with a class cache of
    its own: each pod's CPU seconds, and how many of the pods named in ``sampled`` were decided
    again by the reference evaluator and how many of those differed."""
    _as_a_fresh_process()
    heap.keep_for_long_run()
    rng = random.Random(0)
    options = CycleOptions(all_filters=False, cache=ClassCache())
    state = snapshot
    seconds: list[float] = []
    checked = differing = 0
    for pod in queue:
        before = rng.getstate()
        start = time.process_time()
        decision = schedule(program, pod, state, rng, options)
        after = state if decision.node is None else state.with_pod(pod, decision.node)
        seconds.append(time.process_time() - start)
        if pod.name in sampled:
            replay = random.Random()
            replay.setstate(before)
            checked += 1
            if differences(decision, reference_decision(program, pod, state, replay)):
                differing += 1
        state = after
    return seconds, (checked, differing)


def _as_a_fresh_process() -> None:
    """Forget what an earlier run left in schedlib's cross-cycle caches (the learned GPU
    shapes, the domain sums kept per key, the snapshots' step log), as a run in a process of
    its own starts: a run starting again from the first snapshot would otherwise correct, pod
    after pod, sums kept at the last run's end, which no scheduler's forward-moving snapshots
    ask."""
    kept.forget()
    gpu.clear()
    steplog.clear()
