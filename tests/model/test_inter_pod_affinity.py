from __future__ import annotations

from typing import Any

from policyengine.model.objects import Namespace
from policyengine.model.plugins import inter_pod_affinity as ipa
from policyengine.model.snapshot import ClusterSnapshot
from tests.model.builders import HOSTNAME, ZONE, make_node, make_pod, pod_affinity, snapshot, term

EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"


def nodes(*specs: tuple[str, str | None]) -> list[Any]:
    return [make_node(n, labels={ZONE: z} if z else {}) for n, z in specs]


NODES = nodes(("a", "z1"), ("b", "z1"), ("c", "z2"))


def filter_all(
    pod: Any, node_list: list[Any], pods: list[Any], snap: ClusterSnapshot | None = None
) -> dict[str, list[str]]:
    snap = snap or snapshot(node_list, pods)
    state = ipa.prepare_filter(pod, snap)
    return {n.name: ipa.filter(state, n) for n in snap.nodes}


def test_existing_pods_anti_affinity_rejects_incoming_pod_symmetry() -> None:
    guard = make_pod(
        "guard",
        node_name="a",
        labels={"app": "db"},
        affinity={"podAntiAffinity": pod_affinity([term({"app": "web"}, ZONE)])},
    )
    incoming = make_pod(labels={"app": "web"})  # has no affinity of its own
    assert filter_all(incoming, NODES, [guard]) == {
        "a": [EXISTING_ANTI],
        "b": [EXISTING_ANTI],
        "c": [],
    }
    assert ipa.PLUGIN.code([EXISTING_ANTI]) == "Unschedulable"


def test_incoming_anti_affinity() -> None:
    web = make_pod("web", node_name="a", labels={"app": "web"})
    incoming = make_pod(
        labels={"app": "web"},
        affinity={"podAntiAffinity": pod_affinity([term({"app": "web"}, HOSTNAME)])},
    )
    assert filter_all(incoming, NODES, [web]) == {"a": [ANTI], "b": [], "c": []}


def test_required_affinity_follows_matching_pods() -> None:
    cache = make_pod("cache", node_name="b", labels={"app": "cache"})
    incoming = make_pod(
        labels={"app": "web"},
        affinity={"podAffinity": pod_affinity([term({"app": "cache"}, ZONE)])},
    )
    assert filter_all(incoming, NODES, [cache]) == {"a": [], "b": [], "c": [AFFINITY]}
    assert ipa.PLUGIN.code([AFFINITY]) == "UnschedulableAndUnresolvable"


def test_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_key() -> None:
    own = {"podAffinity": pod_affinity([term({"app": "db"}, ZONE)])}
    first = make_pod(labels={"app": "db"}, affinity=own)
    with_keyless = [*NODES, *nodes(("d", None))]
    assert filter_all(first, with_keyless, []) == {"a": [], "b": [], "c": [], "d": [AFFINITY]}
    stranger = make_pod(labels={"app": "web"}, affinity=own)
    assert set(map(tuple, filter_all(stranger, NODES, []).values())) == {(AFFINITY,)}


def test_affinity_term_namespaces() -> None:
    other = make_pod("cache", namespace="team-a", node_name="c", labels={"app": "cache"})
    same_ns = make_pod(
        labels={"app": "web"},
        affinity={"podAffinity": pod_affinity([term({"app": "cache"}, ZONE)])},
    )
    assert filter_all(same_ns, NODES, [other])["c"] == [AFFINITY]
    listed = make_pod(
        labels={"app": "web"},
        affinity={
            "podAffinity": pod_affinity([term({"app": "cache"}, ZONE, namespaces=["team-a"])])
        },
    )
    assert filter_all(listed, NODES, [other])["c"] == []
    any_ns = make_pod(
        labels={"app": "web"},
        affinity={
            "podAffinity": pod_affinity([term({"app": "cache"}, ZONE, namespaceSelector={})])
        },
    )
    assert filter_all(any_ns, NODES, [other])["c"] == []
    by_label = make_pod(
        labels={"app": "web"},
        affinity={
            "podAffinity": pod_affinity(
                [term({"app": "cache"}, ZONE, namespaceSelector={"matchLabels": {"team": "a"}})]
            )
        },
    )
    plain = ClusterSnapshot.build(NODES, [other])
    labelled = plain.with_namespace(Namespace("team-a", {"team": "a"}))  # type: ignore[arg-type]
    assert filter_all(by_label, NODES, [], plain)["c"] == [AFFINITY]
    assert filter_all(by_label, NODES, [], labelled)["c"] == []


def test_match_label_keys_in_affinity_terms() -> None:
    old = make_pod("old", node_name="a", labels={"app": "web", "rev": "1"})
    incoming = make_pod(
        labels={"app": "web", "rev": "2"},
        affinity={
            "podAntiAffinity": pod_affinity(
                [term({"app": "web"}, HOSTNAME, matchLabelKeys=["rev"])]
            )
        },
    )
    assert filter_all(incoming, NODES, [old])["a"] == []


def score_all(
    pod: Any, node_list: list[Any], pods: list[Any]
) -> tuple[list[int], list[int]] | None:
    snap = snapshot(node_list, pods)
    state = ipa.prepare_score(pod, snap, snap.nodes)
    if state is None:
        return None
    raw = [ipa.score(state, n) for n in snap.nodes]
    return raw, ipa.normalize(state, list(snap.node_names), raw)


def test_score_preferred_terms_both_ways() -> None:
    cache = make_pod("cache", node_name="c", labels={"app": "cache"})
    grumpy = make_pod(
        "grumpy",
        node_name="a",
        labels={"app": "x"},
        affinity={"podAntiAffinity": pod_affinity(preferred=[(5, term({"app": "web"}, HOSTNAME))])},
    )
    incoming = make_pod(
        labels={"app": "web"},
        affinity={"podAffinity": pod_affinity(preferred=[(10, term({"app": "cache"}, ZONE))])},
    )
    assert score_all(incoming, NODES, [cache, grumpy]) == ([-5, 0, 10], [0, 33, 100])


def test_existing_required_affinity_scores_with_hard_weight() -> None:
    fan = make_pod(
        "fan",
        node_name="c",
        labels={"app": "x"},
        affinity={"podAffinity": pod_affinity([term({"app": "web"}, ZONE)])},
    )
    incoming = make_pod(labels={"app": "web"})
    assert score_all(incoming, NODES, [fan]) == ([0, 0, 1], [0, 0, 100])


def test_score_skipped_without_any_terms() -> None:
    assert score_all(make_pod(labels={"app": "web"}), NODES, [make_pod("x", node_name="a")]) is None
