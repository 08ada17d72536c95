"""Pods of one template share cached per-node results and still decide as the reference.

``engine.fastpath`` reuses a rule's per-node verdicts and raw scores for the next pod of the
same class while the node's ``NodeInfo`` is unchanged. Hypothesis draws a cluster, a policy
and a few pod templates, then places a sequence of pods stamped from those templates one after
another, assuming each choice (so the node the previous pod went to changes under the cache),
and holds every decision equal to the reference evaluator's. Policies may read ``pod.name``
(then pods share nothing) and use inter-pod anti-affinity and spread (rules whose verdicts
depend on other nodes' pods, guarded by their cluster keys).
"""

from __future__ import annotations

import dataclasses
import math
import random
from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine import cycle
from policyengine.engine.cycle import schedule
from policyengine.engine.fastpath import classes as class_store
from policyengine.engine.fastpath import columns, fullpass, rules
from policyengine.engine.fastpath import incremental as incremental_pass
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.fastpath.columns import FilterColumn, ScoreColumn
from policyengine.engine.fastpath.sharekeys import pod_class, policy_plan
from policyengine.engine.normalize import apply_stats, column_stats
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.lang.runtime import FilterVerdict, ScoreValue
from policyengine.model import resources
from policyengine.model.frozen import FrozenDict
from policyengine.model.load import NodeLoad
from policyengine.model.objects import Pod
from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.resources import pod_requests
from policyengine.model.shared_list import SharedList
from policyengine.schedlib.batch import PREPARE_FILTERS
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.topology_filters import PREPARE_SCORES
from policyengine.schedlib.views import PodView
from tests.engine.agreement import (
    decide_and_refer,
    decide_as_the_reference,
    decide_beside_the_reference,
    incremental,
)
from tests.engine.strategies import compiled, nodes, pods, policies
from tests.engine.topology_templates import ANTI_AFFINITY, SPREAD
from tests.model.builders import container, make_node, make_pod, snapshot, zoned_node

NAME_RULES = [
    "",
    'score named weight 2 { if pod.name == "pod-1" then 80 else 10 }',
    'filter named { pod.name != "pod-2" or node.pod_count == 0 }',
    # The pod used whole: its class is shared by pods of other names (keyed by name too).
    'filter named { len([p for p in [pod] if p.name == "pod-2"]) == 0 or node.pod_count == 0 }',
    'score named weight 2 { if pod.name == "pod-1" then 80 else len([p for p in [pod]]) }',
]

# The kube plugins alone, in the profile every cycle here runs.
KUBE_ONLY = (
    'import "kube-default.sched"\npolicy "p" {\n  use kube\n}\n'
    'profile "policyengine" {\n  policies "p"\n}\n'
)


@st.composite
def templates(draw: st.DrawFn, names: list[str], index: int) -> Pod:
    pod = draw(pods(f"template{index}", names))
    extra = draw(st.sampled_from(["", "anti", "spread", "spread"]))
    if extra == "anti":
        helper = make_pod("h", labels={"app": "web"}, affinity=ANTI_AFFINITY)
        pod = dataclasses.replace(pod, labels=helper.labels, affinity=helper.affinity)
    elif extra == "spread":
        helper = make_pod("h", labels={"app": "web"}, spread=SPREAD)
        pod = dataclasses.replace(
            pod,
            labels=helper.labels,
            topology_spread_constraints=helper.topology_spread_constraints,
        )
    return pod


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pods_of_templates_decide_as_the_reference(data: st.DataObject) -> None:
    source = data.draw(policies())
    named = data.draw(st.sampled_from(NAME_RULES))
    if named:
        source = source.replace("\n}\nprofile", f"\n  {named}\n}}\nprofile")
    program = compiled(source)
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 6))))
    names = [n.name for n in cluster_nodes]
    running = [
        data.draw(pods(f"run{i}", names, on=data.draw(st.sampled_from(names))))
        for i in range(data.draw(st.integers(0, 3)))
    ]
    snap = snapshot(cluster_nodes, running)
    shapes = [data.draw(templates(names, i)) for i in range(data.draw(st.integers(1, 3)))]
    options = incremental(all_filters=data.draw(st.booleans()))
    rng = random.Random(data.draw(st.integers(0, 5)))
    for index in range(data.draw(st.integers(3, 8))):
        template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decisions_read_after_later_cycles_still_read_their_own(data: st.DataObject) -> None:
    # Columns lend their arrays to the decisions' tables and copy them at the next store only
    # while a table lives: kept decisions, read after later cycles stored into the same
    # columns, still show their own cycle's scores and rejections; dropped ones cost no copy.
    options = incremental()
    program = compiled(data.draw(policies()))
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 6))))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes, [])
    shapes = [data.draw(templates(names, i)) for i in range(data.draw(st.integers(1, 3)))]
    rng = random.Random(data.draw(st.integers(0, 5)))
    kept = []
    for index in range(data.draw(st.integers(3, 8))):
        template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
        decision, reference = decide_and_refer(program, pod, snap, rng, options)
        if data.draw(st.booleans()):
            kept.append((decision, reference))
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
    for decision, reference in kept:
        assert differences(decision, reference) == []


def _anti(selector: dict[str, Any], key: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": key}
            ]
        }
    }


def _spread(
    selector: dict[str, Any], key: str, skew: int, when: str = "DoNotSchedule"
) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": skew,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": selector,
        }
    ]


# Selectors with a matchLabels entry (the step log's marks narrow the kept sums' corrections)
# and without one (an Exists: every step is looked at).
_SELECTORS = [
    {"matchLabels": {"app": "web"}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
]


@st.composite
def topology_templates(draw: st.DrawFn, index: int) -> Pod:
    selector = draw(st.sampled_from(_SELECTORS))
    key = draw(st.sampled_from(["zone", "kubernetes.io/hostname"]))
    app = draw(st.sampled_from(["web", "db"]))
    kind = draw(st.sampled_from(["anti", "spread", "both", ""]))
    extra: dict[str, Any] = {}
    if kind in ("anti", "both"):
        extra["affinity"] = _anti(selector, key)
    if kind in ("spread", "both"):
        when = draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]))
        extra["spread"] = _spread(selector, draw(st.sampled_from(["zone", key])), 1, when)
    return make_pod(f"t{index}", labels={"app": app}, requests={"cpu": "100m"}, **extra)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_spread_and_anti_affinity_pods_decide_as_the_reference_through_forgets_and_relabels(
    data: st.DataObject,
) -> None:
    # Their filters' rows stand by Node object and row key: pods placed, pods forgotten and
    # Node objects replaced (a zone changed) must each reach the rows they change.
    options = incremental()
    program = compiled(KUBE_ONLY)
    count = data.draw(st.integers(2, 7))
    zones = st.sampled_from(["a", "b", "c", None])

    snap = snapshot([zoned_node(i, data.draw(zones), pods=6) for i in range(count)])
    shapes = [data.draw(topology_templates(i)) for i in range(data.draw(st.integers(1, 3)))]
    rng = random.Random(data.draw(st.integers(0, 5)))
    placed: list[str] = []
    for index in range(data.draw(st.integers(3, 12))):
        action = data.draw(st.sampled_from(["place", "place", "place", "forget", "relabel"]))
        if action == "forget" and placed:
            snap = snap.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
            continue
        if action == "relabel":
            at = data.draw(st.integers(0, count - 1))
            pods_there = snap.node(f"n{at}").pods
            snap = snap.with_node(zoned_node(at, data.draw(zones), pods=6))
            assert snap.node(f"n{at}").pods == pods_there
            continue
        template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        # The reference's builtins read the kept PreFilter states too: those equal the
        # plugins' passes over every node.
        for name in ("PodTopologySpread", "InterPodAffinity"):
            prepare = PLUGINS_BY_NAME[name].prepare_filter
            assert prepare is not None
            kept = PREPARE_FILTERS[name](pod, snap, DEFAULT_CONFIG)
            assert kept == prepare(pod, snap, DEFAULT_CONFIG), name
        # And their PreScores, over every node and over some of them.
        some = [info for info in snap.nodes if data.draw(st.booleans())]
        for name, kept_score in PREPARE_SCORES.items():
            prepare_score = PLUGINS_BY_NAME[name].prepare_score
            assert prepare_score is not None
            for feasible in (snap.nodes, some):
                assert kept_score(pod, snap, feasible, DEFAULT_CONFIG) == prepare_score(
                    pod, snap, feasible, DEFAULT_CONFIG
                ), name
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
            placed.append(pod.key)


def test_pods_of_one_template_are_one_class() -> None:
    owner = FrozenDict({"kind": "ReplicaSet", "name": "rs-1", "uid": "u1"})
    a = dataclasses.replace(make_pod("a", labels={"app": "web"}), owner_references=(owner,))
    b = dataclasses.replace(
        a,
        name="b",
        uid="other",
        creation_timestamp="2024-01-01T00:00:00Z",
        owner_references=(FrozenDict({**owner, "name": "rs-2", "uid": "u2"}),),
    )
    assert pod_class(a) == pod_class(b)
    assert pod_class(a) != pod_class(dataclasses.replace(a, labels=FrozenDict({"app": "db"})))
    assert pod_class(a) != pod_class(dataclasses.replace(a, priority=5))
    other_kind = FrozenDict({**owner, "kind": "Job"})
    assert pod_class(a) != pod_class(dataclasses.replace(a, owner_references=(other_kind,)))


def test_spread_and_anti_affinity_see_pods_placed_on_other_nodes() -> None:
    # Placing a pod on one node of zone "a" changes the spread and anti-affinity verdicts of
    # every other node of zone "a", whose NodeInfo did not change: their cluster keys must.
    options = incremental()
    program = compiled(KUBE_ONLY)
    cluster = [
        make_node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", "zone": zone})
        for i, zone in enumerate(["a", "a", "b", "b", "a", "b"])
    ]
    for extra in ({"spread": SPREAD}, {"affinity": ANTI_AFFINITY}):
        snap = snapshot(cluster)
        template = make_pod("t", labels={"app": "web"}, requests={"cpu": "100m"}, **extra)
        rng = random.Random(1)
        zones = []
        for index in range(4):
            pod = dataclasses.replace(template, name=f"pod-{index}")
            decision = decide_as_the_reference(program, pod, snap, rng, options)
            if decision.node is not None:
                zones.append(snap.node(decision.node).labels["zone"])
                snap = snap.with_pod(pod, decision.node)
        expected = ["a", "b", "a", "b"] if "spread" in extra else ["a", "b"]
        assert sorted(zones) == sorted(expected)


def _columns_by_rule(
    classes: ClassCache | None, policy_rules: dict[str, tuple[str, int]]
) -> dict[str, int]:
    """How many cached columns each named rule has (keys end in kind, index, share key)."""
    assert classes is not None
    counts = dict.fromkeys(policy_rules, 0)
    for key in list(classes._columns):
        for name, (kind, index) in policy_rules.items():
            if key[-3] == kind and key[-2] == index:
                counts[name] += 1
    return counts


def test_pods_of_different_classes_share_the_rules_that_read_them_alike() -> None:
    # A rule's column is keyed by what the rule reads of the pod: ``zone_ok`` reads only the
    # pod's labels, NodeResourcesFit's filter only the pod's requests (its prepared state).
    options = incremental()
    program = compiled(
        'import "kube-default.sched"\npolicy "p" {\n  use kube\n'
        '  filter zone_ok { node.labels["zone"] ?? "" == "a" or pod.labels["app"] == "db" }\n}\n'
        'profile "policyengine" {\n  policies "p"\n}\n'
    )
    policy = program.policies[-1]
    rules = {
        rule.name: (rule.kind, index)
        for kind_rules in (policy.filters,)
        for index, rule in enumerate(kind_rules)
        if rule.name in ("zone_ok", "node_resources_fit")
    }
    assert set(rules) == {"zone_ok", "node_resources_fit"}
    snap = snapshot(
        [make_node(f"n{i}", labels={"zone": zone}) for i, zone in enumerate(["a", "b", "a"])]
    )
    pods = [
        make_pod("a", labels={"app": "web"}, requests={"cpu": "100m"}),
        make_pod("b", labels={"app": "web"}, requests={"cpu": "200m"}),
        make_pod("c", labels={"app": "db"}, requests={"cpu": "100m"}),
    ]
    seen = []
    for pod in pods:
        decide_as_the_reference(program, pod, snap, random.Random(1), options)
        seen.append(_columns_by_rule(options.cache, rules))
    assert seen == [
        {"zone_ok": 1, "node_resources_fit": 1},
        {"zone_ok": 1, "node_resources_fit": 2},  # b: other requests, same labels
        {"zone_ok": 2, "node_resources_fit": 2},  # c: other labels, a's requests
    ]


# --- whole-cycle states: rows re-examined only where something changed ---------------------
#
# A class's next cycle starts from its last one and looks again only at the rows the node
# frames logged as changed; a rule reading nothing of a node but its Node object keeps its
# results across the assume step. Operations below change the cluster under those states:
# pods assumed and removed, Node objects replaced while their pods stay (labels, taints,
# cordon), measured load, and cycles against an older snapshot. The extra rules read the Node
# object (labels, allocatable, the GPU product) or what pods add to it (allocated, free).

STATE_RULES = [
    'filter labelled { node.labels["disk"] ?? "" != "hdd" or pod.labels["app"] == "db" }',
    'filter roomy { node.allocated["cpu"] + pod.requests["cpu"] <= node.allocatable["cpu"] }',
    'filter product { node.gpu.product == "" }',
    "filter few { node.gpu.free >= 0 and node.pod_count < 3 }",
    'score by_zone weight 2 normalize reverse { if node.labels["zone"] ?? "" == "a" then 1 else 3 }',
    'score free_memory weight 1 normalize max { node.free["memory"] / 1Gi }',
    "score pods_on weight 1 normalize minmax { node.pod_count }",
    'score big weight 3 { node.allocatable["memory"] / 1Gi }',
]


def _relabelled(snap: Any, name: str, change: str) -> Any:
    node = snap.node(name).node
    if change == "cordon":
        return snap.with_node(dataclasses.replace(node, unschedulable=not node.unschedulable))
    if change == "taint":
        taints = () if node.taints else make_node(name, taints=[TAINT]).taints
        return snap.with_node(dataclasses.replace(node, taints=taints))
    labels = dict(node.labels)
    if change == "disk":
        labels["disk"] = "ssd" if labels.get("disk") == "hdd" else "hdd"
    else:
        labels["zone"] = "b" if labels.get("zone") == "a" else "a"
    return snap.with_node(dataclasses.replace(node, labels=FrozenDict(labels)))


TAINT = ("dedicated", "gpu", "NoSchedule")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_states_follow_every_change_and_decide_as_the_reference(data: st.DataObject) -> None:
    options = incremental()
    source = data.draw(policies())
    extra = data.draw(st.lists(st.sampled_from(STATE_RULES), max_size=3, unique=True))
    if extra:
        source = source.replace("\n}\nprofile", "\n  " + "\n  ".join(extra) + "\n}\nprofile")
    program = compiled(source)
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 7))))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes)
    shapes = [data.draw(pods(f"template{i}", names)) for i in range(data.draw(st.integers(1, 3)))]
    rng = random.Random(data.draw(st.integers(0, 5)))
    placed: list[str] = []
    seen = [snap]
    for index in range(data.draw(st.integers(4, 12))):
        step = data.draw(
            st.sampled_from(["place", "place", "place", "remove", "node", "load", "older"])
        )
        if step == "remove" and placed:
            snap = snap.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        elif step == "node":
            change = data.draw(st.sampled_from(["cordon", "taint", "disk", "zone"]))
            snap = _relabelled(snap, data.draw(st.sampled_from(names)), change)
        elif step == "load":
            level = data.draw(st.sampled_from([0.1, 0.7]))
            snap = snap.with_loads({data.draw(st.sampled_from(names)): NodeLoad(level, level)})
        else:
            template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
            pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
            target = data.draw(st.sampled_from(seen)) if step == "older" else snap
            decision, reference = decide_beside_the_reference(program, pod, target, rng, options)
            assert tuple(decision.ranking) == _reference_ranking(reference)
            if decision.node is not None and step == "place":
                snap = snap.with_pod(pod, decision.node)
                placed.append(pod.key)
        seen.append(snap)


def _reference_ranking(reference: Any) -> tuple[str, ...]:
    totals = reference.totals
    return tuple(sorted(reference.feasible, key=lambda name: (-totals[name], name)))


def test_a_class_s_next_cycle_looks_again_only_at_changed_rows(monkeypatch: Any) -> None:
    # Forty nodes, pods of one template placed one after another: from the second pod on,
    # every cycle starts from the class's last one and looks at the one row that changed.
    options = incremental()
    program = compiled(KUBE_ONLY)
    snap = snapshot([make_node(f"n{i:02}", cpu="4") for i in range(40)])
    looked: list[int | None] = []
    real = incremental_pass.filter_rows

    def spy(entry: Any, batch: Any, context: Any, state: Any, changed: set[int], *rest: Any) -> Any:
        result = real(entry, batch, context, state, changed, *rest)
        looked.append(None if result is None else len(changed))
        return result

    monkeypatch.setattr(incremental_pass, "filter_rows", spy)
    template = make_pod("t", requests={"cpu": "1"})
    rng = random.Random(3)
    for index in range(5):
        pod = dataclasses.replace(template, name=f"pod-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        assert decision.node is not None
        snap = snap.with_pod(pod, decision.node)
    assert looked == [1, 1, 1, 1]


@pytest.mark.parametrize(
    ("body", "stable"),
    [
        ('node.labels["zone"] ?? "" == "a"', True),
        ("not node.unschedulable", True),
        ('node.gpu.product == "A100"', True),
        ('node.allocatable["cpu"] >= pod.requests["cpu"]', True),
        ("node.taints == []", True),
        ('node.allocated["cpu"] < 2', False),
        ('node.free["memory"] > 1Gi', False),
        ("node.gpu.free > 0", False),
        ("node.pod_count < 3", False),
        ("(node.load.cpu ?? 1.0) < 0.5", False),
        ("len(taint_toleration_reasons(pod, node)) == 0", True),
        ("len(resources_fit_reasons(pod, node)) == 0", False),
        # Stable for a pod that wants no host port (``functions._no_host_ports``).
        ("len(node_ports_reasons(pod, node)) == 0", True),
        ("considered(pod, node)", True),
    ],
)
def test_rules_reading_only_the_node_object_are_stable(body: str, stable: bool) -> None:
    program = compiled(
        'import "kube-default.sched"\npolicy "p" {\n  use kube\n'
        f"  filter probe {{ {body} }}\n}}\n"
        'profile "policyengine" {\n  policies "p"\n}\n'
    )
    policy = next(p for p in program.policies if p.name == "p")
    plan = next(r for r in policy_plan(policy).filters if r.rule.name == "probe")
    assert (plan.stable is not None) == stable


IMAGES = ["app:v1", "db:v2", "cache:v3"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_classes_that_filter_alike_and_score_apart_take_turns_as_the_reference(
    data: st.DataObject,
) -> None:
    # Templates with equal requests and different images share every filter column (one
    # filter state) but not ImageLocality's: each scores from the last state of its own
    # columns (``fastpath.incremental.scoring_state``), whatever the others did meanwhile.
    options = incremental()
    program = compiled(KUBE_ONLY)
    count = data.draw(st.integers(2, 8))
    held = [
        data.draw(st.lists(st.sampled_from(IMAGES), unique=True, max_size=2)) for _ in range(count)
    ]
    snap = snapshot(
        [
            make_node(f"n{i}", cpu="4", images=[([image], 300 * 1024 * 1024) for image in held[i]])
            for i in range(count)
        ]
    )
    shapes = [
        make_pod("t", containers=[container("c", {"cpu": "500m"}, image=image)])
        for image in data.draw(st.lists(st.sampled_from(IMAGES), min_size=2, unique=True))
    ]
    rng = random.Random(data.draw(st.integers(0, 5)))
    for index in range(data.draw(st.integers(4, 12))):
        template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)


def test_a_class_scores_from_its_own_last_state_after_another_s_turn(monkeypatch: Any) -> None:
    options = incremental()
    program = compiled(KUBE_ONLY)
    snap = snapshot(
        [
            make_node(f"n{i:02}", cpu="8", images=[([IMAGES[i % 3]], 300 * 1024 * 1024)])
            for i in range(40)
        ]
    )
    whole: list[int] = []
    real = fullpass.score_all

    def spy(*args: Any) -> Any:
        whole.append(1)
        return real(*args)

    monkeypatch.setattr(fullpass, "score_all", spy)
    shapes = [
        make_pod("t", containers=[container("c", {"cpu": "1"}, image=image)])
        for image in IMAGES[:2]
    ]
    rng = random.Random(1)
    for index in range(8):
        pod = dataclasses.replace(shapes[index % 2], name=f"pod-{index}", uid=f"uid-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        assert decision.node is not None
        snap = snap.with_pod(pod, decision.node)
    # The first pod alone: the second template's first pod scores from the first one's
    # state (the image column it does not share brought up to date inside it), the rest
    # from their own kept states.
    assert len(whole) == 1


def _pinned_to(node: str) -> dict[str, Any]:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


# Pods alike in their labels but not elsewhere: each pair is two classes, in buckets of
# their own (a bucket shared by every pod of a DaemonSet made each lookup compare the pod
# with every earlier one).
APART_BY = {
    "requests": ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "2"}}),
    "pinned node": ({"affinity": _pinned_to("n1")}, {"affinity": _pinned_to("n2")}),
    "tolerations": ({}, {"tolerations": [{"operator": "Exists"}]}),
    "image": (
        {"containers": [container("c", None, image="a:1")]},
        {"containers": [container("c", None, image="a:2")]},
    ),
    "spread": (
        {},
        {
            "spread": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ]
        },
    ),
    "host port": (
        {"containers": [container("c", None, ports=[{"containerPort": 80, "hostPort": 80}])]},
        {"containers": [container("c", None, ports=[{"containerPort": 80, "hostPort": 81}])]},
    ),
}


@pytest.mark.parametrize(("one", "other"), APART_BY.values(), ids=APART_BY)
def test_pods_alike_in_labels_but_not_elsewhere_are_classes_apart(
    one: dict[str, Any], other: dict[str, Any]
) -> None:
    a = make_pod("a", labels={"app": "web"}, **one)
    twin = dataclasses.replace(a, name="b", uid="u-b", creation_timestamp="2024-01-01T00:00:00Z")
    b = make_pod("c", labels={"app": "web"}, **other)
    assert pod_class(a) == pod_class(twin) and hash(pod_class(a)) == hash(pod_class(twin))
    assert pod_class(a) != pod_class(b)
    assert hash(pod_class(a)) != hash(pod_class(b))
    assert len({pod_class(a): 1, pod_class(b): 2, pod_class(twin): 3}) == 2


def _frame(size: int) -> Any:
    """What a column's store reads of a frame: the rows' identities and objects (the whole
    ``nodes``, or each row's view's ``info``)."""
    nodes = [object() for _ in range(size)]
    return SimpleNamespace(
        ids=np.arange(1, size + 1, dtype=np.int64),
        oids=np.arange(101, size + 101, dtype=np.int64),
        nodes=nodes,
        views=SharedList(SimpleNamespace(info=node) for node in nodes),
    )


SCORE_VALUES = st.one_of(
    st.none(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.fractions(max_denominator=1000),
)


def _drawn_rows(data: st.DataObject, size: int) -> np.ndarray:
    """Up to 16 distinct rows of a column of ``size``, in order (a store's ``rows``)."""
    drawn = data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=16, unique=True))
    return np.array(sorted(drawn), np.int64)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), size=st.integers(1, 24))
def test_a_few_scores_store_as_many_do(data: st.DataObject, size: int) -> None:
    # ``ScoreColumn.store`` takes up to ``_FEW_RESULTS`` results value by value: the column
    # must hold what grouping equal results first gives, lent arrays left as they were.
    frame = _frame(size)
    fast, grouped = ScoreColumn.empty(size), ScoreColumn.empty(size)
    for _ in range(data.draw(st.integers(1, 3))):
        rows = _drawn_rows(data, size)
        values = data.draw(st.lists(SCORE_VALUES, min_size=len(rows), max_size=len(rows)))
        results = [ScoreValue(value) for value in values]
        lent = fast.values, fast.values.copy()
        fast.lend()
        fast.store(rows, results, frame)
        with mock.patch.object(columns, "_FEW_RESULTS", 0):
            grouped.store(rows, results, frame)
        assert fast.values.tobytes() == grouped.values.tobytes()
        assert fast.scored.tobytes() == grouped.scored.tobytes()
        assert fast.ids.tobytes() == grouped.ids.tobytes()
        assert fast.oids.tobytes() == grouped.oids.tobytes()
        assert fast.errors == grouped.errors == 0
        assert lent[0].tobytes() == lent[1].tobytes()  # a decision still reads the old ones
        assert fast.stamp == int(fast.stamps.max())


class _Table:
    """Stands for a decision's table (anything a weak reference can name)."""


# (tables lent to since the last store, which of them are still alive) -> whether the store
# copies the lent arrays: only a table still alive may read them.
LENDING = [
    ([None], [], True),  # lent without saying to what: always copied
    (["a"], ["a"], True),
    (["a"], [], False),
    (["a", "b"], ["b"], True),
    (["a", "b"], [], False),
    ([str(i) for i in range(columns._BORROWERS + 1)], [], True),  # too many to track
]


@pytest.mark.parametrize(
    ("lent_to", "alive", "copied"),
    LENDING,
    ids=[
        "lent-to-unknown",
        "borrower-alive",
        "borrower-gone",
        "one-of-two-alive",
        "both-gone",
        "too-many-borrowers",
    ],
)
def test_a_store_copies_lent_arrays_only_while_a_borrower_lives(
    lent_to: list[str | None], alive: list[str], copied: bool
) -> None:
    frame = _frame(4)
    column = ScoreColumn.empty(4)
    tables = {name: _Table() for name in lent_to if name is not None}
    for name in lent_to:
        column.lend(None if name is None else tables[name])
    for name in list(tables):
        if name not in alive:
            del tables[name]  # the last reference: CPython frees it at once
    before = column.values
    column.store_array(np.array([1], np.int64), np.array([7.0]), np.array([True]), frame)
    assert (column.values is not before) == copied
    assert before[1] == (0.0 if copied else 7.0)
    assert column.values[1] == 7.0
    # Lending starts afresh after a store: a table lent to now and dropped costs no copy.
    column.lend(_Table())
    after = column.values
    column.store_array(np.array([2], np.int64), np.array([3.0]), np.array([True]), frame)
    assert column.values is after


VERDICTS = st.sampled_from(
    [
        FilterVerdict(True),
        FilterVerdict(False, ("Insufficient cpu",)),
        FilterVerdict(False, ("Insufficient cpu", "Insufficient memory")),
        FilterVerdict(False, ("node(s) had untolerated taint {a: b}",)),
    ]
)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), size=st.integers(1, 24))
def test_a_few_verdicts_store_as_many_do(data: st.DataObject, size: int) -> None:
    # ``FilterColumn.store`` takes up to ``_FEW_RESULTS`` verdicts one by one: the column must
    # hold what grouping equal verdicts first gives, lent codes left as they were.
    frame = _frame(size)
    fast, grouped = FilterColumn.empty(size), FilterColumn.empty(size)
    rule = SimpleNamespace(qualified_name="kube.node_resources_fit")
    for _ in range(data.draw(st.integers(1, 3))):
        rows = _drawn_rows(data, size)
        verdicts = data.draw(st.lists(VERDICTS, min_size=len(rows), max_size=len(rows)))
        lent = fast.codes, fast.codes.copy()
        fast.lend()
        fast.store(rows, rule, verdicts, frame)  # type: ignore[arg-type]
        with mock.patch.object(columns, "_FEW_RESULTS", 0):
            grouped.store(rows, rule, verdicts, frame)  # type: ignore[arg-type]
        assert fast.passed.tobytes() == grouped.passed.tobytes()
        assert [fast.rejection(r) for r in range(size)] == [
            grouped.rejection(r) for r in range(size)
        ]
        assert fast.ids.tobytes() == grouped.ids.tobytes()
        assert fast.errors == grouped.errors == 0
        assert lent[0].tobytes() == lent[1].tobytes()  # a decision still reads the old ones


def _old_choose(
    feasible: np.ndarray, rows: np.ndarray, totals: np.ndarray, entry: Any, rng: random.Random
) -> tuple[str | None, float]:
    """The choice as kube-scheduler makes it: the best feasible total, ties broken by ``rng``
    among the tied nodes in name order (the sorted ranking's prefix)."""
    if not len(rows):
        return None, 0
    if len(rows) == 1:
        return str(entry.names[rows[0]]), float(totals[rows[0]])
    ranking = cycle._ranking(entry.names, rows, totals, entry.ranks)
    order = np.lexsort((entry.ranks[rows], -totals[rows]))
    ordered = totals[rows[order]]
    best = float(np.where(feasible, totals, -math.inf).max())
    return cycle._select(ranking, ordered, rng), best if math.isfinite(best) else float(ordered[0])


TOTALS = st.one_of(
    st.sampled_from([0.0, -0.0, 50.0, 100.0, -3.0]),  # ties, mostly
    st.sampled_from([50.0, 100.0]),
    st.floats(-200, 400, allow_nan=False),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)


class _OwnRandom(random.Random):
    """A generator of another type: ``_choose`` then asks its own ``choice``."""


@settings(max_examples=500, deadline=None)
@given(
    data=st.data(),
    size=st.integers(1, 30),
    seed=st.integers(0, 9),
    kind=st.sampled_from([random.Random, _OwnRandom]),
)
def test_the_choice_without_masking_is_the_ranking_s(
    data: st.DataObject, size: int, seed: int, kind: type[random.Random]
) -> None:
    # ``_choose`` skips masking the infeasible rows when only feasible ones reach the best
    # total; whatever the infeasible rows hold, it picks what the sorted ranking gives.
    totals = np.array(data.draw(st.lists(TOTALS, min_size=size, max_size=size)))
    feasible = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    # Rows in name order (the choice then skips ranking them), partly or not at all.
    in_order = list(range(size))
    cut = data.draw(st.integers(0, size))
    order = data.draw(
        st.one_of(
            st.just(in_order),
            st.permutations(in_order[cut:]).map(lambda rest: in_order[:cut] + list(rest)),
            st.permutations(in_order),
        )
    )
    names = np.array([f"n{i:02}" for i in order], object)
    ranks = np.empty(size, np.int64)
    ranks[np.argsort(names.astype(str), kind="stable")] = np.arange(size)
    entry = SimpleNamespace(names=names, ranks=ranks)
    rows = np.flatnonzero(feasible)
    fast_rng, old_rng = kind(seed), kind(seed)

    def outcome(choose: Any, rng: random.Random) -> Any:
        given = len(rows) if choose is cycle._choose else rows  # the feasible count, or rows
        try:  # every feasible total NaN: nothing ranks first, and both refuse alike
            chosen, best = choose(feasible, given, totals, entry, rng)
        except IndexError as error:
            return "raised", str(error)
        return chosen, repr(best)

    assert outcome(cycle._choose, fast_rng) == outcome(_old_choose, old_rng)
    assert fast_rng.getstate() == old_rng.getstate()


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    kind=st.sampled_from(["none", "max", "reverse", "minmax", "pod_topology_spread"]),
    size=st.integers(1, 30),
)
def test_rows_normalised_from_a_whole_column_are_the_rows_normalised(
    data: st.DataObject, kind: str, size: int
) -> None:
    # ``rules.normalised`` keeps a column normalised whole while no store touches it; read at
    # any rows it must give what normalising those rows alone gives, before and after stores.
    frame = _frame(size)
    column = ScoreColumn.empty(size)
    numbers = st.one_of(st.integers(-50, 150), st.floats(-50, 150))
    every = np.arange(size)

    def store(rows: np.ndarray) -> None:
        values = data.draw(
            st.lists(st.one_of(st.none(), numbers), min_size=len(rows), max_size=len(rows))
        )
        column.store(rows, [ScoreValue(v) for v in values], frame)

    store(every)
    for _ in range(data.draw(st.integers(1, 6))):
        # Another class's feasible set: other facts over the very same column.
        feasible = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)))
        facts = column_stats(kind, column.values, column.scored & feasible)
        assert facts is not None
        rows = np.flatnonzero(feasible)
        seen = column.stamp - data.draw(st.integers(0, 1))
        for _ in range(2):
            got = rules.normalised(column, kind, facts, rows, column.scored[rows], seen)
            want = apply_stats(kind, column.values[rows], column.scored[rows], facts)
            assert got.tobytes() == want.tobytes()
        if data.draw(st.booleans()):
            changed = data.draw(st.lists(st.integers(0, size - 1), min_size=1, unique=True))
            store(np.array(sorted(changed), np.int64))


def test_only_pods_of_one_class_share_their_requests() -> None:
    # A class's pods keep ``pod_requests`` in one memo (``cycle.schedule``): templates that
    # differ only in what the requests read (containers, init containers, pod-level requests,
    # overhead) are other classes, so each pod reads its own requests and decides as the
    # reference evaluator deciding a fresh copy of it (one holding no memo).
    program = compiled(
        KUBE_ONLY.replace("use kube", 'use kube\n  score cpu { pod.requests["cpu"] * 10 }')
    )
    snap = snapshot([make_node(f"n{i}", cpu="16", memory="32Gi") for i in range(6)])
    shapes = [
        make_pod("t", containers=[container("c", {"cpu": "1"})]),
        make_pod("t", containers=[container("c", {"cpu": "2"})]),
        make_pod("t", containers=[container("c", {"cpu": "1"})], overhead={"cpu": "500m"}),
        make_pod(
            "t",
            containers=[container("c", {"cpu": "1"})],
            init_containers=[container("i", {"cpu": "3"})],
        ),
    ]
    options = incremental()
    rng = random.Random(5)
    memos: list[Any] = []
    for index in range(12):
        pod = dataclasses.replace(shapes[index % len(shapes)], name=f"pod-{index}")
        fresh = dataclasses.replace(pod)
        replay = random.Random()
        replay.setstate(rng.getstate())
        decision = schedule(program, pod, snap, rng, options)
        assert differences(decision, reference_decision(program, fresh, snap, replay)) == []
        assert pod_requests(pod) == pod_requests(fresh)
        memos.append(pod.__dict__[resources._MEMO])
        assert decision.node is not None
        snap = snap.with_pod(pod, decision.node)
    # Each class's pods share one memo, and no two classes do.
    assert all(memos[i] is memos[i % len(shapes)] for i in range(len(memos)))
    assert len({id(memo) for memo in memos}) == len(shapes)


@pytest.mark.parametrize(
    "body",
    [
        'pod.name != "pod-1" or len([p for p in [pod]]) > 5',
        'len([p for p in [pod] if p.name == "pod-1"]) == 0',
    ],
)
def test_a_rule_reading_the_pod_whole_is_not_shared_by_pods_of_other_names(body: str) -> None:
    # Such a rule is keyed by the pod's class, which leaves the name out: the key holds it.
    options = incremental()
    program = compiled(
        f'policy "p" {{ filter f {{ {body} }} }}\nprofile "policyengine" {{ policies "p" }}'
    )
    policy = program.policy("p")
    assert policy is not None and policy_plan(policy).filters[0].named
    snap = snapshot([make_node("n1"), make_node("n2")])
    rng = random.Random(0)
    placed = [
        decide_as_the_reference(
            program, make_pod(name, labels={"app": "x"}), snap, rng, options
        ).node
        for name in ("pod-2", "pod-1", "pod-3", "pod-1")
    ]
    assert [node is None for node in placed] == [False, True, False, True]


# (the pod's labels, its name) -> its share key's part for a rule reading
# ``let job = pod.labels["job"] ?? pod.name``: pods of one job alike, the others by name.
JOB_KEYS = [
    ({"job": "a"}, "p1", "a"),
    ({"job": "a"}, "p2", "a"),
    ({"job": "b"}, "p1", "b"),
    ({}, "p3", "p3"),
    ({}, "p4", "p4"),
]


@pytest.mark.parametrize(
    ("labels", "name", "value"),
    JOB_KEYS,
    ids=["job=a-p1", "job=a-p2", "job=b-p1", "empty-p3", "empty-p4"],
)
def test_a_rule_reading_a_pod_only_let_is_keyed_by_the_let_s_value(
    labels: dict[str, str], name: str, value: str
) -> None:
    program = compiled(
        'policy "p" {\n  let job = pod.labels["job"] ?? pod.name\n'
        '  score near weight 2 { if job == "a" then 80 else node.pod_count }\n}\n'
        'profile "policyengine" { policies "p" }'
    )
    policy = program.policy("p")
    assert policy is not None
    plan = policy_plan(policy).scores[0]
    # Pods of a class may differ in the let (it falls back to the name): not kept per class,
    # and a key by class would hold the name; the share key itself holds the let's value.
    assert plan.named and not plan.alike and not plan.own and not plan.by_class
    pod = PodView(make_pod(name, labels=labels))
    context = CycleContext(snapshot([make_node("n1")]), pod)
    assert plan.share_key(pod, context)[0] == (value,)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pods_keyed_by_a_let_s_value_decide_as_the_reference(data: st.DataObject) -> None:
    # Pods with the label share the rule's column whatever their names, the others key by
    # name: every decision as the reference's, through assumes between them.
    options = incremental()
    source = data.draw(policies()).replace(
        "\n}\nprofile",
        '\n  let job = pod.labels["app"] ?? pod.name\n'
        "  score by_job weight 2 { len(job) * 7 + node.pod_count }"
        "\n}\nprofile",
    )
    program = compiled(source)
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 5))))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes, [])
    shapes = [data.draw(templates(names, i)) for i in range(data.draw(st.integers(1, 3)))]
    rng = random.Random(data.draw(st.integers(0, 5)))
    for index in range(data.draw(st.integers(3, 8))):
        template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        # Names of other lengths: a pod keyed with another's name scores apart from it.
        name = "pod-" + "x" * data.draw(st.integers(0, 3))
        labels = dict(template.labels)
        if data.draw(st.booleans()):  # without the label: keyed by the name
            labels.pop("app", None)
        pod = dataclasses.replace(
            template, name=f"{name}{index}", uid=f"uid-{index}", labels=FrozenDict(labels)
        )
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)


@pytest.mark.parametrize(
    ("old", "new", "dropped"),
    [
        ([[1], [2], [3]], [[1], [5], [3]], [1]),
        ([[1, 0], [2, 0], [3, 0]], [[1, 0], [2, 1], [4, 0]], [1, 2]),
        ([[1, 0, 7], [2, 0, 7]], [[1, 0, 7], [2, 0, 7]], []),
        ([[0, 0, 0], [0, 0, 0]], [[0, 0, -1], [0, 0, 0]], [0]),
    ],
    ids=["one column", "two columns", "none moved", "the last column"],
)
def test_a_column_drops_the_rows_whose_row_keys_moved(
    old: list[list[int]], new: list[list[int]], dropped: list[int]
) -> None:
    rows = len(old)
    frame = SimpleNamespace(ids=np.arange(1, rows + 1), oids=np.arange(1, rows + 1), views=[])
    column = ScoreColumn.empty(len(old))
    column.by_row(np.array(old, np.int64))
    column.store_array(np.arange(len(old)), np.zeros(len(old)), np.ones(len(old), bool), frame)  # type: ignore[arg-type]
    column.by_row(np.array(new, np.int64))
    assert np.flatnonzero(column.ids == 0).tolist() == dropped
    assert column.dropped_since(0).tolist() == dropped


@pytest.mark.parametrize(
    ("since", "dropped"),
    [
        ("before the first", [0, 1, 2]),
        ("after the first", [1, 2]),
        ("after the second", [2]),
        ("after the last", []),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_a_column_tells_the_rows_dropped_since_a_stamp(since: str, dropped: list[int]) -> None:
    frame = SimpleNamespace(ids=np.arange(1, 4), oids=np.arange(1, 4), views=[])
    column = ScoreColumn.empty(3)
    keys = np.zeros((3, 1), np.int64)
    column.by_row(keys.copy())
    column.store_array(np.arange(3), np.zeros(3), np.ones(3, bool), frame)  # type: ignore[arg-type]
    stamps = {"before the first": column.stamp}
    for row, name in enumerate(["after the first", "after the second", "after the last"]):
        keys[row] += 1  # each drop moves one more row's key
        column.by_row(keys.copy())
        stamps[name] = column.drops[-1][0]
    assert sorted(column.dropped_since(stamps[since]).tolist()) == dropped
    column.drops_since = stamps["after the first"]  # the first drop left the log
    reaches = since != "before the first"
    assert (column.dropped_since(stamps[since]) is not None) == reaches


@pytest.mark.parametrize(
    ("budget", "kept"),
    [(60, ["a", "b", "c"]), (59, ["b", "c"]), (20, ["c"])],
    ids=["room for all", "one over: the least recently used goes", "room for one: the last stays"],
)
def test_states_past_their_budget_go_least_recently_used_first(
    monkeypatch: pytest.MonkeyPatch, budget: int, kept: list[str]
) -> None:
    monkeypatch.setattr(class_store, "_STATE_CELLS", budget)
    cache = ClassCache()
    refs = (object(),)
    for key in ("a", "b", "c"):
        cache.put_state(key, refs, f"state {key}", 20)
    assert [key for key in ("a", "b", "c") if cache.take_state(key, refs) is not None] == kept


@pytest.mark.parametrize(
    ("other", "same"),
    [
        ({"name": "web-2"}, True),  # only the name differs: one class, one key object
        ({"name": "web-2", "labels": {"app": "db"}}, False),
        ({"name": "web-2", "requests": {"cpu": "2"}}, False),
    ],
    ids=["another name", "other labels", "other requests"],
)
def test_pods_of_a_class_get_its_very_key_object(other: dict[str, Any], same: bool) -> None:
    classes = ClassCache()
    first = make_pod("web-1", labels={"app": "web"}, requests={"cpu": "1"})
    spec: dict[str, Any] = {"labels": {"app": "web"}, "requests": {"cpu": "1"}, **other}
    second = make_pod(spec.pop("name"), **spec)
    key = classes.class_of(first)
    assert key == pod_class(first)
    assert (classes.class_of(second) is key) is same
