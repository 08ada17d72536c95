"""``engine.gang_domains`` gives the domains and free sums a fresh pass over the nodes gives.

Hypothesis replays what the scheduler and a watch loop do to a snapshot between gangs (pods
assumed and forgotten, a node relabelled into another clique or rack, a node added) and, after
some of the steps (so derivation steps go unseen), compares the kept layout and free sums with
a grouping of every node by ``topology_of`` and ``schedlib.gangs.free_units`` per domain,
keys and their order included (a rule may iterate ``domain.free``), and the ``DomainView`` kept
for a domain whose nodes did not change with one made afresh.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine import gang_domains
from policyengine.engine.gang_domains import domain_free, domain_view, free_sums, layout
from policyengine.model.objects import Node
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig, topology_of
from policyengine.schedlib.gangs import DomainView, free_units
from tests.model.builders import make_node, make_pod, snapshot

CLIQUE = "nvidia.com/gpu.clique"
RACK = "topology.kubernetes.io/rack"
GPU = "nvidia.com/gpu"
LEVELS = ("nvlink_domain", "rack")


def gpu_node(name: str, clique: str | None, rack: str | None, gpus: str, hugepages: bool) -> Node:
    labels = {k: v for k, v in ((CLIQUE, clique), (RACK, rack)) if v is not None}
    extra = {GPU: gpus, **({"hugepages-2Mi": "1Gi"} if hugepages else {})}
    return make_node(name, labels=labels, cpu="8", memory="64Gi", extra=extra)


def fresh(
    cluster: ClusterSnapshot, topology: TopologyConfig, levels: tuple[str, ...]
) -> dict[str, dict[str, list[NodeInfo]]]:
    out: dict[str, dict[str, list[NodeInfo]]] = {level: {} for level in levels}
    for info in cluster.nodes:
        where = topology_of(info.node, topology)
        for level in levels:
            value = where.domain(level)
            if value is not None:
                out[level].setdefault(value, []).append(info)
    return out


def check(cluster: ClusterSnapshot, levels: tuple[str, ...]) -> None:
    expected = fresh(cluster, DEFAULT_TOPOLOGY, levels)
    shape = layout(cluster, DEFAULT_TOPOLOGY, levels)
    sums = free_sums(cluster, DEFAULT_TOPOLOGY, levels)
    for level in levels:
        domains = shape.levels[level]
        assert list(domains) == list(expected[level])
        for value, infos in expected[level].items():
            domain = domains[value]
            assert domain.infos(cluster.nodes) == infos
            assert domain.names == {info.name for info in infos}
            want = free_units(infos)
            got = domain_free(sums, domain)
            assert list(got.items()) == list(want.items())
            # A resource none of the domain's nodes has reads 0 (what ``_too_small`` asks).
            for name in ("cpu", GPU, "example.com/none"):
                assert sums.get((level, value, name), 0) == free_units(infos, [name])[name]
            # The view a gang rule sees (kept from an earlier look when the domain's nodes are
            # the same objects) reads as one made afresh, keys in order included.
            kept = domain_view(shape, domain, cluster.nodes, sums)
            made = DomainView(level, value, infos)
            for attribute in ("free", "allocatable", "allocated"):
                assert list(getattr(kept, attribute).items()) == list(
                    getattr(made, attribute).items()
                ), attribute
            assert (kept.level, kept.name, kept.nodes, kept.empty_nodes) == (
                made.level,
                made.name,
                made.nodes,
                made.empty_nodes,
            )


CLIQUES = st.sampled_from(["c1", "c2", "c3", None])
RACKS = st.sampled_from(["r1", "r2", None])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_kept_layout_and_free_sums_equal_fresh_passes(data: st.DataObject) -> None:
    gang_domains.clear()
    levels = data.draw(st.sampled_from([LEVELS, ("rack",), ("rack", "nvlink_domain")]))

    def node(name: str) -> Node:
        return gpu_node(
            name,
            data.draw(CLIQUES),
            data.draw(RACKS),
            data.draw(st.sampled_from(["0", "4", "8"])),
            data.draw(st.booleans()),
        )

    cluster = snapshot([node(f"n{i}") for i in range(data.draw(st.integers(1, 6)))])
    placed: list[str] = []
    check(cluster, levels)
    for step in range(data.draw(st.integers(1, 12))):
        action = data.draw(st.sampled_from(["place", "place", "place", "forget", "relabel", "add"]))
        names = list(cluster.node_infos)
        if action == "forget" and placed:
            cluster = cluster.without_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        elif action == "relabel":
            cluster = cluster.with_node(node(data.draw(st.sampled_from(names))))
        elif action == "add":
            cluster = cluster.with_node(node(f"x{step}"))
        else:
            gpus = data.draw(st.sampled_from(["1", "4", "8", "9"]))  # 9: over-committed
            cpu = data.draw(st.sampled_from(["1", "16"]))
            pod = make_pod(f"p{step}", requests={GPU: gpus, "cpu": cpu})
            cluster = cluster.with_pod(pod, data.draw(st.sampled_from(names)))
            placed.append(pod.key)
        if data.draw(st.booleans()):  # unseen steps: the next look compares rows instead
            continue
        check(cluster, levels)


def test_free_sums_by_domain_and_resource() -> None:
    gang_domains.clear()
    cluster = snapshot(
        [
            gpu_node("a0", "c1", "r1", "8", False),
            gpu_node("a1", "c1", "r1", "8", False),
            gpu_node("b0", "c2", "r1", "4", False),
            gpu_node("z0", None, None, "8", False),
        ],
        [
            make_pod("p0", requests={GPU: "6", "cpu": "2"}, node_name="a0"),
            make_pod("p1", requests={GPU: "9"}, node_name="b0"),  # over-committed: counts 0
        ],
    )
    sums = free_sums(cluster, DEFAULT_TOPOLOGY, LEVELS)
    shape = layout(cluster, DEFAULT_TOPOLOGY, LEVELS)
    cases = [
        ("nvlink_domain", "c1", GPU, 2 + 8),
        ("nvlink_domain", "c1", "cpu", 6000 + 8000),
        ("nvlink_domain", "c2", GPU, 0),
        ("rack", "r1", GPU, 2 + 8 + 0),
    ]
    for level, value, resource, free in cases:
        assert sums[(level, value, resource)] == free, (level, value, resource)
        assert domain_free(sums, shape.levels[level][value])[resource] == free
    assert sorted(shape.levels["nvlink_domain"]) == ["c1", "c2"]  # z0 is in no domain
    assert shape.levels["rack"]["r1"].rows == (0, 1, 2)
