"""Rules decided by their row key are evaluated once per distinct key and decide as the reference.

``engine.rowgroups`` lets a cycle evaluate a rule that reads the node only through functions
declaring ``row_determined`` (spread's and inter-pod affinity's filters) on one row of each
distinct row key and copy the verdict to the other rows: after one placement under zone spread
a thousand rows of a zone move at once. The tables pin which rules qualify and how rows are
grouped; the property places spread and anti-affinity pods on zoned clusters large enough for
groups to form, forgets some and relabels nodes, holding every decision equal to the reference
evaluator's, with pods whose node affinity names nodes (then the filters pass the other nodes
and are not decided by their row keys) among them. Filters guarded by ``considered`` pass the
nodes a DaemonSet's pod does not name without an evaluation: a table pins which guards qualify,
and pods pinned to cordoned and labelled nodes decide as the reference, under kube's rules and
under a policy whose guard is true at the nodes not named.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.fastpath import rowgroups, rules
from policyengine.engine.fastpath.sharekeys import policy_plan
from policyengine.lang.compiler import Program, compile_texts
from policyengine.schedlib import default_schema
from tests.engine.agreement import decide_as_the_reference, incremental
from tests.model.builders import make_node, make_pod, snapshot

KUBE_DEFAULT = (Path(__file__).parents[2] / "policies" / "kube-default.sched").read_text()


def _program(*rules: str) -> Program:
    source = (
        'import "kube-default.sched"\npolicy "p" {\n  use kube\n  '
        + "\n  ".join(rules)
        + '\n}\nprofile "policyengine" {\n  policies "p"\n}\n'
    )
    result = compile_texts(
        {"p.sched": source, "kube-default.sched": KUBE_DEFAULT}, default_schema()
    )
    assert result.program is not None, result.diagnostics
    return result.program


def _bare_program(*rules: str) -> Program:
    """A policy of ``rules`` alone, none of kube's before them."""
    source = (
        'policy "p" {\n  '
        + "\n  ".join(rules)
        + '\n}\nprofile "policyengine" {\n  policies "p"\n}\n'
    )
    result = compile_texts({"p.sched": source}, default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


def _filter_plan(name: str, rule: str | None) -> Any:
    """The plan of filter ``name`` in a policy of kube-default's rules and ``rule``."""
    program = _program(*([rule] if rule else []))
    plans = {
        plan.rule.qualified_name: plan
        for policy in program.policies
        for plan in policy_plan(policy).filters
    }
    return plans[name]


def _names(functions: Any) -> list[str] | None:
    return None if functions is None else sorted(f.name for f in functions)


def _sorted(names: list[str] | None) -> list[str] | None:
    return None if names is None else sorted(names)


RULES = [
    # The kube filter as shipped, and others reading the node only through such builtins.
    ("kube.pod_topology_spread", None, ["topology_spread_reasons"]),
    ("kube.inter_pod_affinity", None, ["inter_pod_affinity_reasons"]),
    (
        "guarded",
        'filter guarded when pod.labels["app"] == "web" { inter_pod_affinity_reasons(pod, node) }',
        ["inter_pod_affinity_reasons"],
    ),
    (
        "both",
        "filter both { inter_pod_affinity_reasons(pod, node) == []"
        " or topology_spread_reasons(pod, node) == [] }",
        ["inter_pod_affinity_reasons", "topology_spread_reasons"],
    ),
    # Rules reading the node some other way: a reason naming it, an attribute, a builtin
    # that reads its name, one that does not declare itself decided by row keys.
    (
        "named",
        'filter named { topology_spread_reasons(pod, node) == [] } reason "on {node.name}"',
        None,
    ),
    (
        "zoned",
        'filter zoned { topology_spread_reasons(pod, node) == [] and node.labels["zone"] == "a" }',
        None,
    ),
    (
        "considered_only",
        "filter considered_only when considered(pod, node) { topology_spread_reasons(pod, node) }",
        None,
    ),
    ("kube.node_resources_fit", None, None),
    ("kube.taint_toleration", None, None),
]


@pytest.mark.parametrize(("name", "rule", "functions"), RULES, ids=[r[0] for r in RULES])
def test_rules_reading_the_node_only_through_row_determined_builtins_are_grouped(
    name: str, rule: str | None, functions: list[str] | None
) -> None:
    assert _names(_filter_plan(name, rule).by_rows) == _sorted(functions)


def _rows(*keys: list[int]) -> np.ndarray:
    return np.array(keys, np.int64)


GROUPS = [
    # (row keys, rows asked about, expected (first positions, groups) or None)
    (None, [0, 1, 2, 3], ([0], [0, 0, 0, 0])),  # no row part: one key for every row
    (_rows([1], [0], [1], [-1], [0], [1]), [0, 1, 2, 4, 5], ([1, 0], [1, 0, 1, 0, 1])),
    (_rows([1, 0], [1, 1], [1, 0], [1, 1], [-1, 0]), [0, 1, 2, 3], ([0, 1], [0, 1, 0, 1])),
    (_rows([1], [0], [1]), [0, 1, 2], None),  # too few rows to pay
    (_rows([1], [2], [3], [4], [5], [6]), [0, 1, 2, 3, 4, 5], None),  # keys hardly repeat
    (np.zeros((5, 0), np.int64), [0, 2, 4, 1], ([0], [0, 0, 0, 0])),  # an idle key
]


@pytest.mark.parametrize(
    ("keys", "rows", "expected"),
    GROUPS,
    ids=[
        "None",
        "_rows(1,0,1,-1,0,1)",
        "_rows(1,0,1,1,1,0,1,1,-1,0)",
        "_rows(1,0,1)",
        "_rows(1,2,3,4,5,6)",
        "zeros(5,0,int64)",
    ],
)
def test_rows_are_grouped_by_their_row_keys(
    keys: np.ndarray | None, rows: list[int], expected: tuple[list[int], list[int]] | None
) -> None:
    found = rowgroups.groups(keys, np.array(rows, np.int64))
    if expected is None:
        assert found is None
        return
    assert found is not None
    first, inverse = found
    # The same groups of rows, whatever their order and whichever row stands for each.
    want_first, want_inverse = expected
    assert len(first) == len(want_first)
    assert _partition(inverse.tolist()) == _partition(want_inverse)
    assert inverse[first].tolist() == list(range(len(first)))
    if keys is not None and keys.shape[1]:
        # Each row's group holds its own key.
        asked = keys[np.array(rows)]
        assert (asked[first][inverse] == asked).all()


def _partition(groups: list[int]) -> list[list[int]]:
    return sorted([i for i, g in enumerate(groups) if g == group] for group in set(groups))


@pytest.mark.parametrize(
    "keys",
    [
        np.array([[3], [-1], [3], [7], [-1]]),
        np.array([[0, 5], [0, 6], [1, 5], [0, 5], [1, 5], [1, 6]]),
        np.array([[-1, 1 << 40], [2, 0], [-1, 1 << 40], [2, 0]]),  # a wide span: sorted
        np.array([[1 << 61, 0, 1 << 61], [0, 1, 0], [1 << 61, 0, 1 << 61], [1, 1, 1]]),
    ],
    ids=["one column", "two columns", "a wide column", "columns no int64 folds"],
)
def test_grouped_rows_share_their_keys_and_groups_differ(keys: np.ndarray) -> None:
    keys = np.tile(keys, (3, 1))  # each key thrice: grouping pays
    rows = np.arange(len(keys))
    found = rowgroups.groups(keys, rows)
    assert found is not None
    first, inverse = found
    assert (keys[first][inverse] == keys).all()  # every row's group holds its own key
    assert len({tuple(k) for k in keys[first].tolist()}) == len(first)  # one group per key


LOOKED = [
    # Every kube filter looks only at the nodes NodeAffinity's PreFilter names.
    ("kube.node_resources_fit", None, ["resources_fit_reasons"]),
    ("kube.taint_toleration", None, ["taint_toleration_reasons"]),
    ("kube.node_affinity", None, ["node_affinity_reasons"]),
    (
        "both",
        "filter both { node_affinity_reasons(pod, node) == []"
        " and resources_fit_reasons(pod, node) == [] }",
        ["node_affinity_reasons", "resources_fit_reasons"],
    ),
    # A rule reading the node otherwise tells every node apart.
    (
        "zoned",
        'filter zoned { node_affinity_reasons(pod, node) == [] and node.labels["zone"] == "a" }',
        None,
    ),
    (
        "named",
        'filter named { taint_toleration_reasons(pod, node) == [] } reason "{node.name}"',
        None,
    ),
]


@pytest.mark.parametrize(("name", "rule", "functions"), LOOKED, ids=[r[0] for r in LOOKED])
def test_rules_reading_the_node_only_through_kube_filters_tell_apart_only_what_they_look_at(
    name: str, rule: str | None, functions: list[str] | None
) -> None:
    assert _names(_filter_plan(name, rule).by_looked) == _sorted(functions)


def _looking_at(*positions: int | None) -> Any:
    """A function that looks at ``positions`` (None: at every node)."""
    at = None if positions == (None,) else list(positions)
    return SimpleNamespace(looked_at=lambda context, nodes: at)


LOOKED_GROUPS = {
    # (functions' positions, rows asked about of 8 nodes, expected (first, groups) or None)
    "one node named": ([(3,)], [0, 1, 2, 3, 4, 5], ([3, 0], [1, 1, 1, 0, 1, 1])),
    "two functions, two nodes": (
        [(1,), (6,)],
        [0, 1, 2, 6, 7],
        ([1, 3, 0], [2, 0, 2, 1, 2]),
    ),
    "a named node not asked about": ([(7,)], [0, 2, 4, 6], ([0], [0, 0, 0, 0])),
    "every node apart": ([(None,)], [0, 1, 2, 3, 4], None),
    "too few left out": ([(0, 1, 2, 3)], [0, 1, 2, 3, 4], None),
    "too few rows": ([(0,)], [0, 1, 2], None),
}


@pytest.mark.parametrize(("looks", "rows", "expected"), LOOKED_GROUPS.values(), ids=LOOKED_GROUPS)
def test_rows_no_function_looks_at_are_one_group(
    looks: list[tuple[int | None, ...]],
    rows: list[int],
    expected: tuple[list[int], list[int]] | None,
) -> None:
    functions = [_looking_at(*at) for at in looks]
    found = rowgroups.looked_groups(functions, None, [object()] * 8, np.array(rows, np.int64))  # type: ignore[arg-type]
    if expected is None:
        assert found is None
        return
    assert found is not None
    assert (found[0].tolist(), found[1].tolist()) == expected


SPREAD_ZONE = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}
ONLY_NAMED = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": ["n0", "n1", "n5"]}
                    ]
                }
            ]
        }
    }
}


def _anti(key: str) -> dict[str, Any]:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key}
            ]
        }
    }


@st.composite
def templates(draw: st.DrawFn, index: int) -> Any:
    kind = draw(st.sampled_from(["spread", "spread", "anti", "both", "plain"]))
    extra: dict[str, Any] = {}
    affinity: dict[str, Any] = {}
    if kind in ("anti", "both"):
        affinity.update(_anti(draw(st.sampled_from(["zone", "kubernetes.io/hostname"]))))
    if kind in ("spread", "both"):
        extra["spread"] = [{**SPREAD_ZONE, "maxSkew": draw(st.integers(1, 2))}]
    if draw(st.integers(0, 4)) == 0:
        affinity.update(ONLY_NAMED)
    if affinity:
        extra["affinity"] = affinity
    app = draw(st.sampled_from(["web", "web", "db"]))
    return make_pod(f"t{index}", labels={"app": app}, requests={"cpu": "100m"}, **extra)


def _node(index: int, zone: str | None) -> Any:
    labels = {"kubernetes.io/hostname": f"n{index}"}
    if zone is not None:
        labels["zone"] = zone
    return make_node(f"n{index}", labels=labels, pods=8)


def _zoned(count: int, zone_of: Any) -> list[Any]:
    return [_node(index, zone_of(index)) for index in range(count)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_spread_and_anti_affinity_pods_on_zoned_clusters_decide_as_the_reference(
    data: st.DataObject,
) -> None:
    options = incremental()
    program = _program()
    count = data.draw(st.integers(8, 24))
    zones = st.sampled_from(["a", "b", "c", "a", "b", None])
    drawn = [data.draw(zones) for _ in range(count)]
    snap = snapshot(_zoned(count, drawn.__getitem__))
    shapes = [data.draw(templates(i)) for i in range(data.draw(st.integers(1, 3)))]
    rng = random.Random(data.draw(st.integers(0, 5)))
    placed: list[str] = []
    for index in range(data.draw(st.integers(4, 14))):
        action = data.draw(st.sampled_from(["place"] * 5 + ["forget", "relabel"]))
        if action == "forget" and placed:
            snap = snap.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
            continue
        if action == "relabel":
            at = data.draw(st.integers(0, count - 1))
            snap = snap.with_node(_node(at, data.draw(zones)))
            continue
        template = shapes[data.draw(st.integers(0, len(shapes) - 1))]
        pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
            placed.append(pod.key)


def test_a_zone_moving_under_spread_is_evaluated_once_per_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two zones of ten nodes: each placement moves one zone's verdicts (or both), and the
    # filter runs on one row per distinct row key, never on every moved row.
    options = incremental()
    program = _program()
    snap = snapshot(_zoned(20, lambda i: "ab"[i % 2]))
    grouped: list[int] = []
    real = rowgroups.groups

    def watched(keys: Any, rows: np.ndarray) -> Any:
        found = real(keys, rows)
        if found is not None:
            grouped.append(len(rows) - len(found[0]))
        return found

    monkeypatch.setattr(rules, "groups", watched)
    template = make_pod("t", labels={"app": "web"}, requests={"cpu": "100m"}, spread=[SPREAD_ZONE])
    rng = random.Random(3)
    zones = []
    for index in range(6):
        pod = dataclasses.replace(template, name=f"pod-{index}", uid=f"uid-{index}")
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        assert decision.node is not None
        zones.append(snap.node(decision.node).labels["zone"])
        snap = snap.with_pod(pod, decision.node)
    assert sorted(zones) == ["a"] * 3 + ["b"] * 3
    assert grouped and max(grouped) >= 8  # a zone's rows took one evaluation, not ten


GUARD_LOOKED = [
    # A filter guarded by ``considered`` alone: the nodes NodeAffinity's PreFilter leaves out
    # pass it without an evaluation.
    ("kube.node_unschedulable", None, ["considered"]),
    ("kube.node_name", None, ["considered"]),
    (
        "labelled",
        'filter labelled when considered(pod, node) { node.labels["disk"] == "ssd" }',
        ["considered"],
    ),
    # A guard reading the node otherwise, or no guard at all.
    (
        "zoned_guard",
        'filter zoned_guard when node.labels["zone"] == "a" { considered(pod, node) }',
        None,
    ),
    ("unguarded", 'filter unguarded { node.labels["disk"] == "ssd" }', None),
    ("kube.node_resources_fit", None, None),
]


@pytest.mark.parametrize(
    ("name", "rule", "functions"), GUARD_LOOKED, ids=[r[0] for r in GUARD_LOOKED]
)
def test_filters_guarded_through_looking_functions_alone_know_it(
    name: str, rule: str | None, functions: list[str] | None
) -> None:
    assert _names(_filter_plan(name, rule).guard_looked) == _sorted(functions)


def _pinned(index: int, tolerant: bool, *names: str) -> Any:
    """A DaemonSet's pod: the named nodes by ``matchFields`` (one term each: ``In`` takes
    one node name), every taint tolerated when ``tolerant`` (cordoned nodes too)."""
    terms = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        for name in names
    ]
    required = {"nodeSelectorTerms": terms}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return make_pod(
        f"ds-{index}",
        requests={"cpu": "100m"},
        affinity=affinity,
        tolerations=[{"operator": "Exists"}] if tolerant else [],
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_pinned_pods_on_cordoned_and_labelled_nodes_decide_as_the_reference(
    data: st.DataObject,
) -> None:
    """Pods pinned to a few nodes by name meet cordoned nodes among them and outside them,
    under kube's guarded filters and one reading a label, as a DaemonSet rollout does."""
    options = incremental()
    labelled = 'filter labelled when considered(pod, node) { node.labels["disk"] != "hdd" }'
    # Without kube's NodeAffinity first, the nodes nothing looks at reach a guard that is
    # true there: those rows are each evaluated.
    elsewhere = 'filter elsewhere when not considered(pod, node) { node.labels["disk"] != "ssd" }'
    program = data.draw(st.sampled_from([_program(labelled), _bare_program(elsewhere, labelled)]))
    count = data.draw(st.integers(6, 16))
    nodes = []
    for index in range(count):
        labels = {"kubernetes.io/hostname": f"n{index}"}
        disk = data.draw(st.sampled_from([None, "ssd", "hdd"]))
        if disk is not None:
            labels["disk"] = disk
        cordoned = data.draw(st.integers(0, 3)) == 0
        nodes.append(make_node(f"n{index}", labels=labels, pods=8, unschedulable=cordoned))
    snap = snapshot(nodes)
    rng = random.Random(data.draw(st.integers(0, 5)))
    for index in range(data.draw(st.integers(2, 8))):
        named = data.draw(st.lists(st.integers(0, count + 1), min_size=1, max_size=3, unique=True))
        tolerant = data.draw(st.booleans())
        pod = _pinned(
            index, tolerant, *(f"n{i}" for i in named)
        )  # n{count}, n{count+1}: no such node
        decision = decide_as_the_reference(program, pod, snap, rng, options)
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
