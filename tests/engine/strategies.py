"""Hypothesis strategies for the fast-path tests: small clusters, pending pods and random
policies over ``kube-default.sched``, and the compiled program of one.

Several engine and schedlib tests hold the fast path equal to the reference on the same
generated inputs; they draw them from here.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st

from policyengine.lang.compiler import Program, compile_texts
from policyengine.schedlib import default_schema
from tests.engine.storage_strategies import volumes
from tests.model.builders import container, make_node, make_pod

KUBE_DEFAULT = (Path(__file__).parents[2] / "policies" / "kube-default.sched").read_text()
ZONES = ["a", "b"]
TAINTS = [
    ("dedicated", "gpu", "NoSchedule"),
    ("spot", "", "PreferNoSchedule"),
    ("maint", "x", "NoExecute"),
]

FILTER_BODIES = [
    'node.labels["zone"] == "a"',
    'node.labels["zone"] ?? "none" != "b"',
    'node.allocatable["cpu"] >= pod.requests["cpu"] * 2',
    "node.pod_count < 2",
    "not node.unschedulable",
    'node.free["memory"] > 1Gi',
    "(node.load.cpu ?? 1.0) < 0.6",
    'domain_pod_count(pod, node, "zone", {"app": "web"}) < 2',
]
SCORE_BODIES = [
    "node.pod_count * 10",
    '100 * node.allocated["cpu"] / node.allocatable["cpu"]',
    'if node.labels["zone"] == "a" then 50 else 10',
    'node.allocatable["memory"] / 1Gi',
    "100 * (1 - (node.load.gpu ?? 1.0))",
    'domain_pod_count(pod, node, "zone", {"app": pod.labels["app"] ?? "none"}) * 10',
    'domain_pod_count(pod, node, "zone", {}) + domain_pod_count(pod, node, "disk", {"app": "db"})',
    # Counted by a key each node names (no literal narrows the rule's key): the class's
    # counts of every label key guard it.
    'domain_pod_count(pod, node, if node.labels["zone"] == "a" then "zone" else "disk", {})',
    'domain_pod_count(pod, node, "kubernetes.io/hostname", {"app": pod.labels["app"] ?? "x"})',
]
NORMALIZE = ["", " normalize max", " normalize reverse", " normalize minmax"]
SCORE_GUARDS = [
    "",
    ' when pod.labels["app"] == "db"',
    ' when pod.requests["cpu"] > 0.5 and node.pod_count > 0',
]


# How the best node is chosen among equal totals (``engine.selection``): keys that order all
# nodes, keys that leave ties for the seeded choice, a key that fails on some nodes.
SELECTS = (
    "",
    "select random",
    "select lowest { node.name }",
    'select highest { node.labels["disk"] ?? "" }',
    "select lowest { node.pod_count }",
    'select highest { node.free["cpu"] }',
    "select lowest { 1 / (node.pod_count - 1) }",
)


@st.composite
def policies(draw: st.DrawFn) -> str:
    rules = []
    for index in range(draw(st.integers(0, 2))):
        body = draw(st.sampled_from(FILTER_BODIES))
        guard = draw(
            st.sampled_from(
                [
                    "",
                    ' when pod.labels["app"] == "web"',
                    " when considered(pod, node)",
                    # A pod-only left operand: idle for other pods (``engine.idle``).
                    ' when pod.labels["app"] == "web" and node.pod_count < 3',
                ]
            )
        )
        reason = draw(
            st.sampled_from(["", ' reason "node {node.name} holds {node.pod_count} pods"'])
        )
        rules.append(f"filter extra{index}{guard} {{ {body} }}{reason}")
    for index in range(draw(st.integers(0, 2))):
        body = draw(st.sampled_from(SCORE_BODIES))
        weight = draw(st.integers(1, 3))
        guard = draw(st.sampled_from(SCORE_GUARDS))
        rules.append(
            f"score bonus{index} weight {weight}{draw(st.sampled_from(NORMALIZE))}{guard}"
            f" {{ {body} }}"
        )
    disable = draw(st.sampled_from(["", " { disable image_locality }"]))
    rules.append(draw(st.sampled_from(["", "overcommit cpu 1.5", "overcommit cpu 2 max_load 0.5"])))
    rules.append(draw(st.sampled_from(SELECTS)))
    inner = "\n  ".join(rules)
    # The profile makes "p" govern: otherwise the imported "kube-default" policy, first in the
    # default profile, would decide every pod and the random rules would never run.
    return (
        f'import "kube-default.sched"\npolicy "p" {{\n  use kube{disable}\n  {inner}\n}}\n'
        'profile "policyengine" {\n  policies "p"\n}\n'
    )


@st.composite
def nodes(draw: st.DrawFn, count: int) -> list:
    out = []
    for index in range(count):
        labels = {"kubernetes.io/hostname": f"n{index}"}
        zone = draw(st.sampled_from([None, *ZONES]))
        if zone is not None:
            labels["zone"] = zone
            if draw(st.booleans()):  # read by VolumeZone
                labels["topology.kubernetes.io/zone"] = zone
        if draw(st.booleans()):
            labels["disk"] = draw(st.sampled_from(["ssd", "hdd"]))
        out.append(
            make_node(
                f"n{index}",
                labels=labels,
                cpu=draw(st.sampled_from(["1", "2", "4"])),
                memory=draw(st.sampled_from(["1Gi", "4Gi", "8Gi"])),
                pods=draw(st.integers(1, 4)),
                taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True)),
                unschedulable=draw(st.integers(0, 9)) == 0,
                images=draw(st.sampled_from([(), ([["app:v1"], 300 * 1024 * 1024],)])),
            )
        )
    return out


@st.composite
def pods(
    draw: st.DrawFn, name: str, node_names: list[str], on: str = "", with_volumes: bool = False
) -> object:
    requests = {
        "cpu": draw(st.sampled_from(["0", "100m", "500m", "1", "3"])),
        "memory": draw(st.sampled_from(["0", "256Mi", "2Gi", "6Gi"])),
    }
    requests = {k: v for k, v in requests.items() if v != "0"}
    kwargs: dict = {"labels": {"app": draw(st.sampled_from(["web", "db"]))}}
    ports = [{"containerPort": 80, "hostPort": 8080}] if draw(st.integers(0, 5)) == 0 else []
    kwargs["containers"] = [container("c", requests, ports=ports)]
    if with_volumes:
        kwargs["volumes"] = draw(volumes())
    if on:
        return make_pod(name, node_name=on, **kwargs)
    if draw(st.booleans()):
        kwargs["tolerations"] = [
            {"key": key, "operator": "Exists", "effect": effect}
            for key, _, effect in draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique=True))
        ]
    if draw(st.integers(0, 3)) == 0:
        kwargs["node_selector"] = {"zone": draw(st.sampled_from(ZONES))}
    if draw(st.integers(0, 3)) == 0:
        term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
        kwargs["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": draw(st.integers(1, 50)), "preference": term}
                ]
            }
        }
    if draw(st.integers(0, 5)) == 0:
        kwargs["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {
                                    "key": "metadata.name",
                                    "operator": "In",
                                    "values": draw(
                                        st.lists(
                                            st.sampled_from(node_names), min_size=1, max_size=2
                                        )
                                    ),
                                }
                            ]
                        }
                    ]
                }
            }
        }
    if draw(st.integers(0, 7)) == 0:
        kwargs["node_name"] = draw(st.sampled_from(node_names))
    return make_pod(name, **kwargs)


def compiled(source: str) -> Program:
    result = compile_texts(
        {"kube-default.sched": KUBE_DEFAULT, "p.sched": source}, default_schema()
    )
    assert result.program is not None, result.diagnostics
    return result.program


@st.composite
def volume_cluster(draw: st.DrawFn, most_nodes: int, most_running: int) -> tuple[list, list]:
    """A cluster of 1 to ``most_nodes`` nodes and up to ``most_running`` running pods, each
    on a drawn node and given volumes (claims, disks, ephemeral ones) now and then."""
    cluster_nodes = draw(nodes(draw(st.integers(1, most_nodes))))
    names = [n.name for n in cluster_nodes]
    running = [
        draw(pods(f"run{i}", names, on=draw(st.sampled_from(names)), with_volumes=True))
        for i in range(draw(st.integers(0, most_running)))
    ]
    return cluster_nodes, running
