"""Hypothesis strategies for the columnar forms of ``schedlib.batch``: small clusters whose nodes
carry cpu, memory, ephemeral storage, GPUs and hugepages (some over-committed, some full),
images in several sizes, zone and rack labels, and running pods with topology spread and
(anti-)affinity terms; resource requests over those; and ``every_path``, which runs a loop body
once per way the resource forms compute.

``scoring_placement`` adds preferred terms; ``soft_constraints`` draws ScheduleAnyway spread
constraints, and ``SERVICES`` selects the pods of each of ``SELECTORS`` (so the system default
constraints apply to them).

The batch-form and resource-fact tests hold the batch forms equal to the plugins on the same
generated clusters; they draw them from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st

from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.workloads import WorkloadIndex, parse_workload
from policyengine.schedlib import batch
from tests.model.builders import container, make_node, make_pod, pod_affinity, snapshot, term

GPU = "nvidia.com/gpu"
HUGE = "hugepages-2Mi"
QUANTITIES = {
    "cpu": ["0", "1m", "100m", "999m", "1", "3", "64"],
    "memory": ["0", "1", "256Mi", "2Gi", "6Gi", "1Ti"],
    "ephemeral-storage": ["0", "1Gi", "10Gi", "1Ti"],
    GPU: ["0", "1", "2", "8"],
    HUGE: ["0", "2Mi", "1Gi"],
}
MiB = 1024 * 1024
NODE_IMAGES = [
    (),
    ([["app:v1"], 300 * MiB],),
    ([["app:v1"], 900 * MiB],),
    ([["app:v1", "app:latest"], 300 * MiB], [["db:v2"], 40 * MiB]),
    ([["db:v2"], 5000 * MiB], [["cache:v3"], 20 * MiB]),
]


ZONES = ["a", "b", None]
SELECTORS = [{"app": "web"}, {"app": "db"}]
TOPOLOGY_KEYS = ["zone", "rack", "kubernetes.io/hostname"]


@st.composite
def placement(draw: st.DrawFn) -> dict[str, object]:
    """Labels, and maybe spread constraints and pod (anti-)affinity, for a pod."""
    out: dict[str, object] = {"labels": draw(st.sampled_from(SELECTORS))}
    if draw(st.booleans()):
        out["spread"] = [
            {
                "maxSkew": draw(st.integers(1, 2)),
                "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS)),
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": draw(st.sampled_from(SELECTORS))},
            }
            for _ in range(draw(st.integers(1, 2)))
        ]
    kinds = draw(st.lists(st.sampled_from(["podAffinity", "podAntiAffinity"]), unique=True))
    affinity: dict[str, object] = {
        kind: {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term(draw(st.sampled_from(SELECTORS)), draw(st.sampled_from(TOPOLOGY_KEYS)))
            ]
        }
        for kind in kinds
    }
    if draw(st.booleans()):
        out["node_selector"] = draw(st.sampled_from([{"zone": "a"}, {"zone": "b", "rack": "r1"}]))
    if draw(st.integers(0, 3)) == 0:
        expression = {"key": "rack", "operator": "In", "values": ["r1"]}
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expression]}]
            }
        }
    if affinity:
        out["affinity"] = affinity
    return out


@st.composite
def requests(draw: st.DrawFn) -> dict[str, str]:
    chosen = draw(st.lists(st.sampled_from(sorted(QUANTITIES)), max_size=5, unique=True))
    return {r: draw(st.sampled_from(QUANTITIES[r])) for r in chosen}


@st.composite
def clusters(draw: st.DrawFn) -> object:
    nodes = []
    for index in range(draw(st.integers(1, 6))):
        extra = {
            r: draw(st.sampled_from(QUANTITIES[r][1:]))
            for r in ("ephemeral-storage", GPU, HUGE)
            if draw(st.booleans())
        }
        labels = {"kubernetes.io/hostname": f"n{index}"}
        zone = draw(st.sampled_from(ZONES))
        if zone is not None:
            labels["zone"] = zone
        if draw(st.booleans()):
            labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
        nodes.append(
            make_node(
                f"n{index}",
                labels=labels,
                cpu=draw(st.sampled_from(["0", "1", "2", "4", "96"])),
                memory=draw(st.sampled_from(["0", "1Gi", "8Gi", "2Ti"])),
                pods=draw(st.integers(0, 3)),
                extra=extra,
                images=draw(st.sampled_from(NODE_IMAGES)),
            )
        )
    running = [
        make_pod(
            f"r{index}",
            node_name=f"n{draw(st.integers(0, len(nodes) - 1))}",
            containers=[
                container(f"c{c}", draw(requests())) for c in range(draw(st.integers(1, 2)))
            ],
            **draw(placement()),
        )
        for index in range(draw(st.integers(0, 8)))
    ]
    return snapshot(nodes, running)


def every_path() -> Iterator[str]:
    """Run the loop body once per way the resource forms compute (the tests' clusters are
    small): plain Python over kept rows (calls about at most ``_SMALL`` nodes), numpy over
    rows computed for the call (at most ``_FEW``), numpy over the shared store."""
    small, few = batch._SMALL, batch._FEW
    try:
        for batch._SMALL, batch._FEW, path in (
            (small, few, "python"),
            (0, few, "direct"),
            (0, 0, "store"),
        ):
            yield path
    finally:
        batch._SMALL, batch._FEW = small, few


def assume_and_forget(
    data: st.DataObject,
    cluster: ClusterSnapshot,
    new_pod: Callable[[str], Pod],
    steps: int,
    forget_odds: int,
) -> Iterator[ClusterSnapshot]:
    """The cluster after each of up to ``steps`` steps, as the scheduler makes them: a new pod
    assumed onto a drawn node, or (one time in ``forget_odds``) a placed pod forgotten."""
    names = [info.name for info in cluster.nodes]
    placed: list[str] = []
    for step in range(data.draw(st.integers(1, steps))):
        if placed and data.draw(st.integers(0, forget_odds - 1)) == 0:
            cluster = cluster.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        else:
            pod = new_pod(f"s{step}")
            cluster = cluster.with_pod(pod, data.draw(st.sampled_from(names)))
            placed.append(pod.key)
        yield cluster


@st.composite
def scoring_placement(draw: st.DrawFn) -> dict[str, object]:
    """A placement whose (anti-)affinity may also carry preferred terms."""
    out = draw(placement())
    affinity = dict(out.get("affinity", {}))  # type: ignore[call-overload]
    for kind in ("podAffinity", "podAntiAffinity"):
        preferred = [
            (
                draw(st.sampled_from([1, 50])),  # equal terms meet in one domain often
                term(draw(st.sampled_from(SELECTORS)), draw(st.sampled_from(TOPOLOGY_KEYS))),
            )
            for _ in range(draw(st.integers(0, 2)))
        ]
        if preferred:
            required = affinity.get(kind, {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution", []
            )
            affinity[kind] = pod_affinity(required=required, preferred=preferred)
    if affinity:
        out["affinity"] = affinity
    return out


SERVICES = WorkloadIndex.build(
    parse_workload(
        {
            "kind": "Service",
            "metadata": {"name": f"s-{labels['app']}", "namespace": "default"},
            "spec": {"selector": labels},
        }
    )
    for labels in SELECTORS
)


@st.composite
def soft_constraints(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(st.lists(st.sampled_from(TOPOLOGY_KEYS), max_size=2, unique=True))
    return [
        {
            "maxSkew": draw(st.integers(1, 5)),
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": draw(st.sampled_from(SELECTORS))},
        }
        for key in keys
    ]
