"""The affinity node lists a derived snapshot carries over equal the ones computed afresh.

``ClusterSnapshot._replace_node`` edits the parent's ``nodes_with_affinity_pods`` and
``nodes_with_required_anti_affinity_pods`` for the one node it replaces instead of rescanning
every node, and carries ``node_positions`` over. Hypothesis assumes and removes pods with and
without (anti-)affinity on random nodes, reading the lists on every snapshot (so each is
carried, never recomputed), and holds them equal to a fresh scan, order included.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.model.builders import make_node, make_pod, pod_affinity, snapshot, term

AFFINITIES = [
    None,
    {"podAffinity": pod_affinity(preferred=[(5, term({"app": "web"}, "zone"))])},
    {"podAntiAffinity": pod_affinity(required=[term({"app": "web"}, "kubernetes.io/hostname")])},
]


def _fresh(snap: object, pods: str) -> tuple[object, ...]:
    return tuple(n for n in snap.nodes if getattr(n, pods))  # type: ignore[attr-defined]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_carried_affinity_lists_equal_a_fresh_scan(data: st.DataObject) -> None:
    names = [f"n{i}" for i in range(data.draw(st.integers(1, 6)))]
    snap = snapshot([make_node(name) for name in names])
    placed: list[str] = []
    for step in range(data.draw(st.integers(1, 12))):
        if placed and data.draw(st.booleans()):
            snap = snap.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        else:
            affinity = data.draw(st.sampled_from(AFFINITIES))
            extra = {"affinity": affinity} if affinity else {}
            pod = make_pod(f"p{step}", labels={"app": "web"}, **extra)
            snap = snap.with_pod(pod, data.draw(st.sampled_from(names)))
            placed.append(pod.key)
        assert snap.nodes_with_affinity_pods == _fresh(snap, "pods_with_affinity")
        assert snap.nodes_with_required_anti_affinity_pods == _fresh(
            snap, "pods_with_required_anti_affinity"
        )
        assert all(
            a is b
            for a, b in zip(
                snap.nodes_with_affinity_pods, _fresh(snap, "pods_with_affinity"), strict=True
            )
        )
        # ``node_positions`` is carried too (read on every snapshot, so each derived one has
        # its parent's): it and ``nodes`` follow the node map's order.
        assert snap.node_positions == {name: at for at, name in enumerate(snap.node_infos)}
        assert len(snap.nodes) == len(snap.node_infos)
        assert all(a is b for a, b in zip(snap.nodes, snap.node_infos.values(), strict=True))
