"""``schedlib.domains`` keeps sums over nodes and label columns equal to fresh passes.

Hypothesis replays what a scheduler and a watch loop do to a snapshot (pods assumed and
forgotten, a node's labels changed, a node added) and, after each step or only after some
(so derivation steps go unseen and the row-by-row comparison has to take over), compares
``NodeSums`` and ``label_column`` with what a pass over every node gives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, PodInfo
from policyengine.schedlib import domains, node_rows
from policyengine.schedlib.domains import NodeSums, label_column
from policyengine.schedlib.steplog import ANTI_AFFINITY, marked_changes
from tests.model.builders import make_node, make_pod, snapshot

ZONES = ["a", "b", "c"]


def zone_part(node: NodeInfo) -> dict[Any, int]:
    # Counts web pods per zone; nodes without a zone add nothing, zoned ones add their pair
    # even with no web pod (a 0 that must stay present).
    zone = node.node.labels.get("zone")
    if zone is None:
        return {}
    return {("zone", zone): sum(1 for p in node.pods if p.pod.labels.get("app") == "web")}


def zone_step(node: NodeInfo, pods: Sequence[PodInfo]) -> dict[Any, int]:
    # How zone_part grows when ``pods`` come to the node.
    zone = node.node.labels.get("zone")
    if zone is None:
        return {}
    return {("zone", zone): sum(1 for p in pods if p.pod.labels.get("app") == "web")}


def zone_presence(node: NodeInfo) -> dict[Any, int]:
    zone = node.node.labels.get("zone")
    return {} if zone is None else {("zone", zone): 0}


def is_web(info: PodInfo) -> bool:
    return info.pod.labels.get("app") == "web"


def fresh(cluster: ClusterSnapshot) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for node in cluster.nodes:
        for pair, n in zone_part(node).items():
            out[pair] = out.get(pair, 0) + n
    return out


def labels(zone: str | None) -> dict[str, str]:
    return {} if zone is None else {"zone": zone}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sums_and_label_columns_follow_every_kind_of_step(data: st.DataObject) -> None:
    domains.clear()
    zones = st.sampled_from([*ZONES, None])
    count = data.draw(st.integers(1, 5))
    cluster = snapshot([make_node(f"n{i}", labels=labels(data.draw(zones))) for i in range(count)])
    sums = NodeSums(kept=2)
    placed: list[str] = []
    # Kept dicts read by someone (copy=False), with what they held then: a later correction
    # must not change them (it corrects in place only a dict nothing else holds).
    held: list[tuple[dict[Any, int], dict[Any, int]]] = []
    for step in range(data.draw(st.integers(1, 12))):
        action = data.draw(st.sampled_from(["place", "place", "forget", "relabel", "add"]))
        names = list(cluster.node_infos)
        if action == "forget" and placed:
            cluster = cluster.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        elif action == "relabel":
            name = data.draw(st.sampled_from(names))
            cluster = cluster.with_node(make_node(name, labels=labels(data.draw(zones))))
        elif action == "add":
            cluster = cluster.with_node(make_node(f"x{step}", labels=labels(data.draw(zones))))
        else:
            app = data.draw(st.sampled_from(["web", "db"]))
            pod = make_pod(f"p{step}", labels={"app": app})
            cluster = cluster.with_pod(pod, data.draw(st.sampled_from(names)))
            placed.append(pod.key)
        if data.draw(st.booleans()):  # unseen steps: the next look compares rows instead
            continue
        key = data.draw(st.sampled_from(["k1", "k2", "k3", "k4", "k5", "k6", "k7"]))
        # k1 and k2 skip nodes that only gained or lost db pods (which zone_part ignores);
        # k2 met afresh starts from the zones' presence and counts only nodes with web pods.
        # k4 and k5 look only at the steps the step log marks with app=web (k5 from the base).
        # k6 and k7 correct a node that only gained or lost pods from those pods (zone_step).
        relevant = is_web if key != "k3" else None
        base = ("zones", zone_presence) if key in ("k2", "k5") else None
        marks = (("app", "web"),) if key in ("k4", "k5", "k7") else None
        grow = zone_step if key in ("k6", "k7") else None
        found = sums.sums(key, cluster, zone_part, relevant, base=base, marks=marks, step=grow)
        assert found == fresh(cluster)
        if data.draw(st.booleans()):
            shared = sums.sums(key, cluster, zone_part, relevant, False, base, marks, grow)
            held.append((shared, dict(shared)))
        # Per key, how many pairs hold each sum: made once, then carried through corrections.
        kept = sums.kept(key, cluster, zone_part, relevant, base=base, marks=marks, step=grow)
        histograms: dict[str, dict[int, int]] = {}
        for (topology_key, _), n in fresh(cluster).items():
            by_sum = histograms.setdefault(topology_key, {})
            by_sum[n] = by_sum.get(n, 0) + 1
        assert kept.histograms() == histograms
        # The rows holding pods with a label pair, as a walk over every pod finds them.
        for pairs in ([("app", "web")], [("app", "db"), ("app", "web")], [("app", "none")]):
            want = [
                row
                for row, node in enumerate(cluster.nodes)
                if any((k, v) in pairs for info in node.pods for k, v in info.pod.labels.items())
            ]
            assert node_rows.pair_rows(cluster, pairs) == want
        column = label_column(cluster, "zone")
        for row, node in enumerate(cluster.nodes):
            value = node.node.labels.get("zone")
            code = int(column.codes[row])
            assert (code == -1) if value is None else column.values[value] == code
    for shared, then in held:
        assert shared == then


def test_label_column_gathers_per_value_counts_and_marks_missing_labels() -> None:
    domains.clear()
    cluster = snapshot(
        [
            make_node("n0", labels={"zone": "b"}),
            make_node("n1"),
            make_node("n2", labels={"zone": "a"}),
            make_node("n3", labels={"zone": "b"}),
        ]
    )
    column = label_column(cluster, "zone")
    assert column.gather({"b": 3, "a": 1, "gone": 9}, missing=-7).tolist() == [3, -7, 1, 3]
    assert column.gather({}).tolist() == [0, 0, 0, 0]
    # Values it lacks read ``default`` (spread's verdict at a domain holding no matching pod).
    assert column.gather({"b": 1}, missing=-1, default=5).tolist() == [1, -1, 5, 1]


def test_sums_started_from_the_base_drop_a_domain_its_last_node_leaves() -> None:
    # The key is met once web pods exist (so it starts from the zones' presence); then the
    # only node of zone c moves to zone a: zone c must go, as a fresh pass has it.
    domains.clear()
    cluster = snapshot(
        [make_node("n0", labels={"zone": "a"}), make_node("n1", labels={"zone": "c"})]
    )
    cluster = cluster.with_pod(make_pod("w", labels={"app": "web"}), "n1")
    sums = NodeSums(kept=4)
    base = ("zones", zone_presence)
    assert sums.sums("k", cluster, zone_part, is_web, base=base) == {
        ("zone", "a"): 0,
        ("zone", "c"): 1,
    }
    cluster = cluster.with_node(make_node("n1", labels={"zone": "a"}))
    assert sums.sums("k", cluster, zone_part, is_web, base=base) == fresh(cluster)
    assert fresh(cluster) == {("zone", "a"): 1}


def seen(cluster: ClusterSnapshot) -> ClusterSnapshot:
    """``cluster`` noted by the step log, as a scheduler's next cycle notes it."""
    marked_changes(cluster, cluster.generation, cluster.nodes, ())
    return cluster


def test_marked_changes_name_the_rows_whose_steps_moved_a_marked_pod() -> None:
    domains.clear()
    first = seen(snapshot([make_node(f"n{i}", labels={"zone": "a"}) for i in range(4)]))
    web = make_pod("w", labels={"app": "web"})
    anti = make_pod("x", labels={"app": "db"}, affinity=ANTI_ZONE)
    # Steps no cycle saw: the log cannot tell what they moved, the caller falls back.
    second = seen(first.with_pod(web, "n1").with_pod(make_pod("d", labels={"app": "db"}), "n2"))
    assert marked_changes(second, first.generation, first.nodes, ()) is None
    third = seen(second.with_pod(anti, "n3"))
    assert marked_changes(third, second.generation, second.nodes, [("app", "web")]) == []
    assert marked_changes(third, second.generation, second.nodes, [ANTI_AFFINITY]) == [3]
    fourth = seen(seen(third.without_pod(anti.key)).with_pod(make_pod("w2", labels=WEB), "n0"))
    assert marked_changes(fourth, second.generation, second.nodes, [("app", "web")]) == [0]
    assert marked_changes(fourth, second.generation, second.nodes, [ANTI_AFFINITY]) == [3]
    assert marked_changes(fourth, third.generation, third.nodes, [ANTI_AFFINITY]) == [3]
    assert marked_changes(fourth, fourth.generation, fourth.nodes, [ANTI_AFFINITY]) == []
    # A new Node object is a step of unknown pods: every caller looks at it.
    fifth = seen(fourth.with_node(make_node("n2", labels={"zone": "b"})))
    assert marked_changes(fifth, fourth.generation, fourth.nodes, ()) == [2]
    # An older snapshot is not after a later one: the caller falls back.
    assert marked_changes(first, fifth.generation, fifth.nodes, ()) is None


WEB = {"app": "web"}
ANTI_ZONE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
        ]
    }
}
