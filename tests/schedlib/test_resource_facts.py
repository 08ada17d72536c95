"""The resource facts store (``schedlib.resource_facts``) gives each node the row its own maps
give, however the calls come: nodes replaced one at a time as pods are assumed, subsets,
repeats and reorderings, extended resources asked for late, and a store that starts afresh
when it holds too many replaced nodes. The resource forms of ``schedlib.batch`` built on it
must keep equal to the plugins over the same sequences.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.schedlib.batch import FILTERS, SCORES
from policyengine.schedlib.resource_facts import (
    LIMIT,
    ResourceFacts,
    _scalar_row,
    facts_row,
)
from tests.model.builders import container, make_node, make_pod, snapshot
from tests.schedlib.batch_strategies import GPU, HUGE, clusters, every_path, requests

RESOURCE_FORMS = ("NodeResourcesFit", "NodeResourcesBalancedAllocation")
CONFIG = SchedulerConfig(
    fit_score_resources=(("cpu", 1), ("memory", 1), (GPU, 2), (HUGE, 1)),
    balanced_resources=("cpu", GPU),
)


def _expected_row(info: Any) -> tuple[int, ...] | None:
    row = facts_row(info)
    return row if all(0 <= v <= LIMIT for v in row) else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_rows_follow_the_nodes_through_assumes_subsets_and_resets(cluster, data) -> None:  # type: ignore[no-untyped-def]
    store = ResourceFacts(spare=data.draw(st.integers(0, 6)))
    names = [info.name for info in cluster.nodes]
    for step in range(data.draw(st.integers(1, 6))):
        if data.draw(st.booleans()):
            pod = make_pod(f"s{step}", containers=[container("c", data.draw(requests()))])
            cluster = cluster.with_pod(pod, data.draw(st.sampled_from(names)))
        infos = data.draw(st.lists(st.sampled_from(list(cluster.nodes)), max_size=8))
        gathered = store.gather(infos)
        rows = [_expected_row(info) for info in infos]
        base = gathered.base()
        if any(row is None for row in rows):
            assert base is None
        else:
            assert base is not None and [tuple(r) for r in base.tolist()] == rows
        for name in data.draw(st.lists(st.sampled_from([GPU, HUGE, "example.com/x"]))):
            scalar = gathered.scalar(name)
            want = [_scalar_row(info, name) for info in infos]
            if all(0 <= v <= LIMIT for row in want for v in row):
                assert scalar is not None and [tuple(r) for r in scalar.tolist()] == want
            else:
                assert scalar is None


def _assert_forms_equal_plugins(cluster: Any, pod: Any, infos: list[Any]) -> None:
    # Every way the forms read facts: kept rows in plain Python, a few nodes' rows computed for
    # the call, and the store (the tests' clusters are small; ``every_path`` lowers the
    # thresholds).
    for _ in every_path():
        _assert_forms_equal_plugins_once(cluster, pod, infos)


def _assert_forms_equal_plugins_once(cluster: Any, pod: Any, infos: list[Any]) -> None:
    fit = PLUGINS_BY_NAME["NodeResourcesFit"]
    assert fit.prepare_filter is not None and fit.filter is not None
    state = fit.prepare_filter(pod, cluster, CONFIG)
    assert FILTERS["NodeResourcesFit"](state, infos, None) == [
        fit.filter(state, info) for info in infos
    ]
    for name in RESOURCE_FORMS:
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_score is not None and plugin.score is not None
        score_state = plugin.prepare_score(pod, cluster, infos, CONFIG)
        if score_state is None:
            continue
        assert SCORES[name](score_state, infos, None) == [
            plugin.score(score_state, info) for info in infos
        ], name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_resource_forms_equal_the_plugins_as_pods_are_assumed(cluster, data) -> None:  # type: ignore[no-untyped-def]
    # The forms keep what they gathered between calls (by the length of the node list) and
    # patch the rows of replaced nodes: each call must still see the nodes it is given.
    names = [info.name for info in cluster.nodes]
    for step in range(data.draw(st.integers(1, 6))):
        pod = make_pod(f"p{step}", containers=[container("c", data.draw(requests()))])
        nodes = list(cluster.nodes)
        infos = data.draw(st.sampled_from([nodes, nodes[1:], nodes[::-1], nodes + nodes[:1]]))
        _assert_forms_equal_plugins(cluster, pod, infos)
        cluster = cluster.with_pod(pod, data.draw(st.sampled_from(names)))


def test_nodes_beyond_the_int64_range_take_the_plugins_step() -> None:
    # 8Ei of memory is beyond the columns' range: the forms fall back, node by node.
    nodes = [
        make_node("small", cpu="4", memory="8Gi", extra={GPU: "8"}),
        make_node("huge", cpu="4", memory="8Ei", extra={GPU: "8"}),
    ]
    cluster = snapshot(nodes)
    infos = list(cluster.nodes)
    assert ResourceFacts().gather(infos).base() is None
    pod = make_pod("p", containers=[container("c", {"cpu": "1", "memory": "1Gi", GPU: "1"})])
    _assert_forms_equal_plugins(cluster, pod, infos)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rows_of_replaced_nodes_are_patched_in(data) -> None:  # type: ignore[no-untyped-def]
    # Enough nodes that one replaced node is patched into the kept rows (not regathered):
    # after each assume, the forms must see the replaced node's new requests.
    nodes = [
        make_node(
            f"n{i}",
            cpu=data.draw(st.sampled_from(["2", "4", "8"])),
            memory=data.draw(st.sampled_from(["4Gi", "8Gi"])),
            pods=data.draw(st.integers(2, 4)),
            extra={GPU: data.draw(st.sampled_from(["0", "2", "8"]))},
        )
        for i in range(16)
    ]
    cluster = snapshot(nodes)
    for step in range(data.draw(st.integers(2, 8))):
        pod = make_pod(f"p{step}", containers=[container("c", data.draw(requests()))])
        _assert_forms_equal_plugins(cluster, pod, list(cluster.nodes))
        cluster = cluster.with_pod(pod, f"n{data.draw(st.integers(0, 15))}")
