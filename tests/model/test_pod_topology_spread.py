from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from policyengine.model.plugins import pod_topology_spread as pts
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.workloads import parse_workload
from tests.model.builders import HOSTNAME, ZONE, make_node, make_pod, snapshot, spread

WEB = {"app": "web"}
MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW = "node(s) didn't match pod topology spread constraints"


def zone_node(name: str, zone: str | None, **kwargs: Any) -> Any:
    labels = {ZONE: zone} if zone else {}
    labels.update(kwargs.pop("labels", {}))
    return make_node(name, labels=labels, **kwargs)


def filter_all(pod: Any, nodes: list[Any], pods: list[Any]) -> dict[str, list[str]]:
    snap = snapshot(nodes, pods)
    state = pts.prepare_filter(pod, snap)
    return {n.name: pts.filter(state, n) for n in snap.nodes}


def web_on(node: str, i: int, **labels: str) -> Any:
    return make_pod(f"w{node}{i}", node_name=node, labels={**WEB, **labels})


BASE_NODES = [zone_node("a", "z1"), zone_node("b", "z1"), zone_node("c", "z2")]


def test_max_skew_and_missing_label() -> None:
    pod = make_pod(labels=WEB, spread=[spread(1, ZONE, labels=WEB)])
    result = filter_all(pod, [*BASE_NODES, zone_node("d", None)], [web_on("a", 1), web_on("a", 2)])
    assert result == {"a": [SKEW], "b": [SKEW], "c": [], "d": [MISSING]}


def test_pod_not_matching_its_own_selector_adds_nothing() -> None:
    pod = make_pod(labels={"app": "other"}, spread=[spread(1, ZONE, labels=WEB)])
    result = filter_all(pod, BASE_NODES, [web_on("a", 1)])
    assert result == {"a": [], "b": [], "c": []}


@pytest.mark.parametrize(
    ("min_domains", "expected"), [(None, []), (2, []), (3, [SKEW])], ids=["None", "2", "3"]
)
def test_min_domains(min_domains: int | None, expected: list[str]) -> None:
    extra = {} if min_domains is None else {"minDomains": min_domains}
    pod = make_pod(labels=WEB, spread=[spread(1, ZONE, labels=WEB, **extra)])
    result = filter_all(pod, BASE_NODES, [web_on("a", 1), web_on("c", 1)])
    # with fewer eligible domains than minDomains the global minimum is 0
    assert result["a"] == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [(None, []), ("Honor", []), ("Ignore", [SKEW])],
    ids=["None", "Honor", "Ignore"],
)
def test_node_affinity_policy(policy: str | None, expected: list[str]) -> None:
    extra = {} if policy is None else {"nodeAffinityPolicy": policy}
    nodes = [zone_node("a", "z1", labels={"pool": "y"}), zone_node("c", "z2")]
    pod = make_pod(
        labels=WEB, node_selector={"pool": "y"}, spread=[spread(1, ZONE, labels=WEB, **extra)]
    )
    # Honor: z2 (no node the pod may use) is not a domain, so the minimum is z1's 1
    assert filter_all(pod, nodes, [web_on("a", 1)])["a"] == expected


@pytest.mark.parametrize(
    ("policy", "expected"),
    [(None, [SKEW]), ("Ignore", [SKEW]), ("Honor", [])],
    ids=["None", "Ignore", "Honor"],
)
def test_node_taints_policy(policy: str | None, expected: list[str]) -> None:
    extra = {} if policy is None else {"nodeTaintsPolicy": policy}
    nodes = [zone_node("a", "z1"), zone_node("c", "z2", taints=[("gpu", "", "NoSchedule")])]
    pod = make_pod(labels=WEB, spread=[spread(1, ZONE, labels=WEB, **extra)])
    assert filter_all(pod, nodes, [web_on("a", 1)])["a"] == expected


def test_match_label_keys_narrow_the_selector() -> None:
    old = [web_on("a", 1, version="v1"), web_on("a", 2, version="v1")]
    plain = make_pod(labels={**WEB, "version": "v2"}, spread=[spread(1, ZONE, labels=WEB)])
    keyed = make_pod(
        labels={**WEB, "version": "v2"},
        spread=[spread(1, ZONE, labels=WEB, matchLabelKeys=["version"])],
    )
    assert filter_all(plain, BASE_NODES, old)["a"] == [SKEW]
    assert filter_all(keyed, BASE_NODES, old)["a"] == []


def test_terminating_and_other_namespace_pods_do_not_count() -> None:
    dying = make_pod("dying", node_name="a", labels=WEB)
    dying = replace(dying, deletion_timestamp="2026-01-01T00:00:00Z")
    elsewhere = make_pod("x", namespace="other", node_name="a", labels=WEB)
    pod = make_pod(labels=WEB, spread=[spread(1, ZONE, labels=WEB)])
    assert filter_all(pod, BASE_NODES, [dying, elsewhere]) == {"a": [], "b": [], "c": []}


def test_no_constraints_means_no_filtering() -> None:
    assert filter_all(make_pod(), [zone_node("d", None)], []) == {"d": []}


def test_score_zone_spread_with_ignored_node() -> None:
    nodes = [*BASE_NODES, zone_node("d", None)]
    snap = snapshot(nodes, [web_on("a", 1), web_on("a", 2), web_on("c", 1)])
    pod = make_pod(labels=WEB, spread=[spread(1, ZONE, "ScheduleAnyway", labels=WEB)])
    state = pts.prepare_score(pod, snap, snap.nodes)
    assert state is not None and state.ignored == {"d"}
    raw = [pts.score(state, n) for n in snap.nodes]
    assert raw == [3, 3, 1, 0]  # round(2*ln 4), round(1*ln 4)
    assert pts.normalize(state, list(snap.node_names), raw) == [33, 33, 100, 0]


def test_score_hostname_counts_on_the_node() -> None:
    snap = snapshot([zone_node("a", "z1"), zone_node("b", "z1")], [web_on("a", 1)])
    pod = make_pod(
        labels=WEB, spread=[spread(2, "kubernetes.io/hostname", "ScheduleAnyway", labels=WEB)]
    )
    state = pts.prepare_score(pod, snap, snap.nodes)
    raw = [pts.score(state, n) for n in snap.nodes]
    # hostname domains: 2 feasible nodes -> weight ln(4); a: 1*ln 4 + (2-1) = 2.39, b: 0 + 1
    assert raw == [2, 1]
    assert pts.normalize(state, list(snap.node_names), raw) == [50, 100]


def _with_service(nodes: list[Any], pods: list[Any], selector: dict[str, str]) -> Any:
    svc = parse_workload(
        {
            "kind": "Service",
            "metadata": {"name": "svc", "namespace": "default"},
            "spec": {"selector": selector},
        }
    )
    return ClusterSnapshot.build(nodes, pods, workloads=[svc])


def test_system_defaults_spread_a_pod_its_service_selects() -> None:
    # No constraints of its own: hostname (maxSkew 3) and zone (maxSkew 5), ScheduleAnyway,
    # over the pods the Service selects. A node without a zone label is scored by hostname
    # alone, not ignored, and "" is one more zone domain.
    nodes = [*BASE_NODES, zone_node("d", None)]
    snap = _with_service(nodes, [web_on("a", 1), web_on("a", 2), web_on("c", 1)], WEB)
    pod = make_pod(labels=WEB)
    assert pts.prepare_filter(pod, snap).constraints == ()
    state = pts.prepare_score(pod, snap, snap.nodes)
    assert state is not None and state.ignored == frozenset()
    assert [c.topology_key for c in state.constraints] == [HOSTNAME, ZONE]
    raw = [pts.score(state, n) for n in snap.nodes]
    # a: 2 ln 6 + 2 + 2 ln 5 + 4 = 12.8; b: 2 + 7.2; c: ln 6 + 2 + ln 5 + 4 = 9.4; d: 2
    assert raw == [13, 9, 9, 2]
    assert pts.normalize(state, list(snap.node_names), raw) == [15, 46, 46, 100]


@pytest.mark.parametrize(
    ("labels", "own", "expected"),
    [
        ({"app": "other"}, False, None),  # no Service selects it: no default constraints
        (WEB, True, [ZONE]),  # its own constraints replace the defaults
    ],
    ids=["unselected", "own-constraints"],
)
def test_system_defaults_apply_only_to_selected_pods_without_constraints(
    labels: dict[str, str], own: bool, expected: list[str] | None
) -> None:
    snap = _with_service(BASE_NODES, [web_on("a", 1)], WEB)
    extra = [spread(1, ZONE, "ScheduleAnyway", labels=WEB)] if own else []
    state = pts.prepare_score(make_pod(labels=labels, spread=extra), snap, snap.nodes)
    if expected is None:
        assert state is None
    else:
        assert state is not None and [c.topology_key for c in state.constraints] == expected


def test_an_empty_selector_counts_no_pod() -> None:
    # labelSelector: {} selects every label set, yet kube-scheduler counts no pod with it.
    pod = make_pod(
        labels=WEB,
        spread=[
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {},
            }
        ],
    )
    result = filter_all(pod, BASE_NODES, [web_on("a", 1), web_on("a", 2)])
    assert result == {"a": [], "b": [], "c": []}


def _defaults_config(*constraints: Any) -> Any:
    from policyengine.model.plugins.config import DEFAULT_CONFIG

    return replace(DEFAULT_CONFIG, spread_default_constraints=tuple(constraints))


@pytest.mark.parametrize(
    ("max_skew", "labels"),
    [
        pytest.param(1, {"app": "web", "rev": "1"}, id="skew 1"),
        pytest.param(1, {"app": "web", "rev": "2"}, id="skew 1, other labels"),
        pytest.param(4, {"app": "web", "rev": "1"}, id="skew 4"),
    ],
)
def test_default_constraints_follow_the_configuration_and_the_selecting_objects(
    max_skew: int, labels: dict[str, str]
) -> None:
    # Kept per what they read: another configuration gets its own constraints; the pod's
    # labels reach them only through the selector derived from what selects the pod (kube
    # replaces a default's selector, matchLabelKeys' included, by that one).
    from policyengine.model.objects import TopologySpreadConstraint

    service = parse_workload(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}},
        }
    )
    workloads = ClusterSnapshot.build([]).with_workload(service).workloads
    config = _defaults_config(
        TopologySpreadConstraint(max_skew, ZONE, "ScheduleAnyway", match_label_keys=("rev",))
    )
    pod = make_pod(labels=labels)
    for _ in range(2):  # computed, then kept
        (constraint,) = pts.pod_constraints(pod, "ScheduleAnyway", config, workloads)
        assert constraint.max_skew == max_skew
        assert {(r.key, v) for r in constraint.selector.requirements for v in r.values} == {
            ("app", "web")
        }
    assert pts.pod_constraints(pod, "DoNotSchedule", config, workloads) == ()
    assert (
        pts.pod_constraints(make_pod(labels={"app": "db"}), "ScheduleAnyway", config, workloads)
        == ()
    )
