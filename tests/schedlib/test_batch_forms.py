"""The columnar forms of ``schedlib.batch`` return exactly what each plugin's own per-node step
returns, node for node: filter reasons (and their order) and integer scores.

Hypothesis draws nodes with cpu, memory, ephemeral storage, GPUs and hugepages (some
over-committed by the pods already on them, some full), pending pods requesting any of those
(or nothing) and running containers of a few images some nodes hold (in several sizes), with
zone and rack labels, topology spread, (anti-)affinity terms, node selectors and required
node affinity (so the label-grouped forms of PodTopologySpread, InterPodAffinity and
NodeAffinity meet domains, missing labels and existing pods' anti-affinity), and
configurations that weight, ignore or add resources, then compares every form in ``FILTERS``
and ``SCORES`` with ``plugin.filter``/``plugin.score`` on every node.
"""

from __future__ import annotations

from fractions import Fraction
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.model.load import NodeLoad
from policyengine.model.objects import Pod
from policyengine.model.overcommit import Overcommit
from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins.config import SchedulerConfig
from policyengine.schedlib import batch, domain_counts, topology_filters
from policyengine.schedlib.batch import FILTERS, PREPARE_FILTERS, SCORES
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.domain_counts import (
    domain_pod_count,
    domain_pod_count_batch,
    kept_counts,
)
from policyengine.schedlib.views import NodeView, PodView
from tests.model.builders import container, make_node, make_pod, pod_affinity, snapshot, term
from tests.schedlib.batch_strategies import (
    GPU,
    HUGE,
    assume_and_forget,
    clusters,
    every_path,
    placement,
    requests,
    scoring_placement,
)

IMAGES = ["app:v1", "db:v2", "cache:v3"]


configs = st.builds(
    lambda fit, ignored, balanced, skips, overcommit: SchedulerConfig(
        fit_score_resources=fit,
        ignored_extended_resources=ignored,
        balanced_resources=balanced,
        balanced_skips_best_effort=skips,
        overcommit=overcommit,
    ),
    st.sampled_from(
        [
            (("cpu", 1), ("memory", 1)),
            (("cpu", 3), ("memory", 1), (GPU, 5)),
            (("memory", 2), ("ephemeral-storage", 1), (HUGE, 1)),
            (("cpu", 0), ("memory", 1)),
        ]
    ),
    st.sampled_from([frozenset(), frozenset({GPU})]),
    st.sampled_from(
        [("cpu", "memory"), ("cpu",), ("cpu", GPU), ("memory", "ephemeral-storage", GPU)]
    ),
    st.booleans(),
    # A policy's overcommit (the nodes carry no load reading: with max_load it never holds).
    st.sampled_from(
        [
            (),
            (Overcommit("cpu", Fraction(3, 2)),),
            (Overcommit("cpu", Fraction(2), Fraction(1, 2)),),
        ]
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data(), config=configs)
def test_batch_forms_equal_the_plugins(cluster, data, config) -> None:  # type: ignore[no-untyped-def]
    for path in every_path():
        _batch_forms_equal_the_plugins(cluster, data, config, path)


def _batch_forms_equal_the_plugins(cluster, data, config, path) -> None:  # type: ignore[no-untyped-def]
    pod = make_pod(
        "p",
        containers=[
            container(f"c{c}", data.draw(requests()), image=data.draw(st.sampled_from(IMAGES)))
            for c in range(data.draw(st.integers(1, 2)))
        ],
        **data.draw(placement()),
    )
    infos = list(cluster.nodes)
    for name, form in FILTERS.items():
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_filter is not None and plugin.filter is not None
        state = plugin.prepare_filter(pod, cluster, config)
        expected = [plugin.filter(state, info) for info in infos]
        assert form(state, infos, None) == expected, (name, path)
    for name, form in SCORES.items():
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_score is not None and plugin.score is not None
        state = plugin.prepare_score(pod, cluster, infos, config)
        if state is None:
            continue
        expected_scores = [plugin.score(state, info) for info in infos]
        got = form(state, infos, None)
        assert got == expected_scores, (name, path)
        assert all(type(v) is type(e) for v, e in zip(got, expected_scores, strict=True)), (
            name,
            path,
        )
        # With a cycle's context, forms may read the snapshot's kept columns instead.
        with mock.patch.object(batch, "_FEW_AFFINITY", 0):
            got = list(form(state, infos, CycleContext(cluster, PodView(pod))))
        assert got == expected_scores, (name, path, "context")
        assert all(type(v) is type(e) for v, e in zip(got, expected_scores, strict=True))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_incremental_spread_prefilter_equals_the_plugin(cluster, data) -> None:  # type: ignore[no-untyped-def]
    # Pods are assumed onto nodes and removed again one at a time, as the scheduler does; the
    # incremental PreFilter must give the state the plugin computes from scratch each time.
    plugin = PLUGINS_BY_NAME["PodTopologySpread"]
    assert plugin.prepare_filter is not None
    prepare = PREPARE_FILTERS["PodTopologySpread"]
    wanted = make_pod("p", labels={"app": "web"}, **{"spread": data.draw(placement_spread())})

    def new_pod(name: str) -> Pod:
        return make_pod(name, **data.draw(placement()))

    for now in assume_and_forget(data, cluster, new_pod, steps=6, forget_odds=2):
        got = prepare(wanted, now, SchedulerConfig())
        expected = plugin.prepare_filter(wanted, now, SchedulerConfig())
        assert (got.pair_counts, got.domains, got.minimum) == (
            expected.pair_counts,
            expected.domains,
            expected.minimum,
        )
        assert got.constraints == expected.constraints


@st.composite
def placement_spread(draw: st.DrawFn) -> list[dict[str, object]]:
    spread = draw(placement().filter(lambda p: "spread" in p))["spread"]
    assert isinstance(spread, list)
    return spread


ZONED = [
    ("n0", {"zone": "b", "rack": "r2"}),
    ("n1", {"zone": "b", "rack": "r1"}),
    ("n2", {"zone": "a", "rack": "r1"}),
    ("n3", {"zone": "b"}),
]


def _required(*terms: dict[str, object]) -> dict[str, object]:
    """A pod's required node affinity of ``terms``."""
    selector = {"nodeSelectorTerms": list(terms)}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}
    }


GROUPED_CASES = [
    ("NodeAffinity", {"node_selector": {"zone": "b", "rack": "r1"}}),
    (
        "NodeAffinity",
        _required(
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "NotIn", "values": ["a"]},
                    {"key": "rack", "operator": "In", "values": ["r1"]},
                ]
            }
        ),
    ),
    (
        # Nodes n0 and n1 are alike in zone, the one label read; the name tells them apart.
        "NodeAffinity",
        _required(
            {
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}],
                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}],
            }
        ),
    ),
    (
        "PodTopologySpread",
        {
            "labels": {"app": "web"},
            "spread": [
                {
                    "maxSkew": skew,
                    "topologyKey": key,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
                for key, skew in (("zone", 2), ("rack", 1))
            ],
        },
    ),
    (
        "InterPodAffinity",
        {"affinity": {"podAntiAffinity": pod_affinity(required=[term({"app": "web"}, "rack")])}},
    ),
]


@pytest.mark.parametrize(
    ("name", "placement_of_pod"),
    GROUPED_CASES,
    ids=[
        "NodeAffinity-selector",
        "NodeAffinity-terms",
        "NodeAffinity-name",
        *(name for name, _ in GROUPED_CASES[3:]),
    ],
)
def test_grouped_forms_tell_apart_nodes_that_differ_in_any_label_read(
    name: str, placement_of_pod: dict[str, object]
) -> None:
    # Nodes alike in their first label but not their second: a form grouping by too few
    # labels gives the second node of a group the first one's answer.
    nodes = [make_node(n, labels=labels) for n, labels in ZONED]
    running = [make_pod("r", node_name="n1", labels={"app": "web"})]
    cluster = snapshot(nodes, running)
    plugin = PLUGINS_BY_NAME[name]
    assert plugin.prepare_filter is not None and plugin.filter is not None
    state = plugin.prepare_filter(make_pod("p", **placement_of_pod), cluster, SchedulerConfig())
    infos = list(cluster.nodes)
    expected = [plugin.filter(state, info) for info in infos]
    assert len({tuple(e) for e in expected}) > 1  # the case tells nodes apart
    assert FILTERS[name](state, infos, None) == expected


def _preferred(*terms: tuple[int, dict[str, object]]) -> dict[str, object]:
    """A pod's preferred node affinity of (weight, term) pairs."""
    preferred = [{"weight": weight, "preference": term} for weight, term in terms]
    return {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}}
    }


_IN_ZONE_B = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
_IN_RACK_R1 = {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
_NOT_N1 = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}


@pytest.mark.parametrize(
    "placement_of_pod",
    [
        pytest.param(_preferred((3, _IN_ZONE_B), (5, _IN_RACK_R1)), id="labels"),
        # n0 and n1 are alike in zone, the one label read; the name tells them apart.
        pytest.param(_preferred((3, _IN_ZONE_B), (5, _NOT_N1)), id="a-name"),
    ],
)
def test_the_grouped_node_affinity_score_tells_apart_nodes_that_differ_in_what_it_reads(
    placement_of_pod: dict[str, object],
) -> None:
    nodes = [make_node(n, labels=labels) for n, labels in ZONED]
    cluster = snapshot(nodes)
    plugin = PLUGINS_BY_NAME["NodeAffinity"]
    assert plugin.prepare_score is not None and plugin.score is not None
    infos = list(cluster.nodes)
    state = plugin.prepare_score(
        make_pod("p", **placement_of_pod), cluster, infos, SchedulerConfig()
    )
    expected = [plugin.score(state, info) for info in infos]
    assert len(set(expected)) > 2  # the case tells nodes apart
    assert SCORES["NodeAffinity"](state, infos, None) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_incremental_affinity_prefilter_equals_the_plugin(cluster, data) -> None:  # type: ignore[no-untyped-def]
    # As for spread: pods with (anti-)affinity come and go; the kept sums (existing pods'
    # anti-affinity, the pod's own terms) must give the plugin's state each time.
    plugin = PLUGINS_BY_NAME["InterPodAffinity"]
    assert plugin.prepare_filter is not None
    prepare = PREPARE_FILTERS["InterPodAffinity"]
    wanted = make_pod("p", **data.draw(placement()))

    def new_pod(name: str) -> Pod:
        return make_pod(name, **data.draw(placement()))

    for now in assume_and_forget(data, cluster, new_pod, steps=6, forget_odds=2):
        assert prepare(wanted, now, SchedulerConfig()) == plugin.prepare_filter(
            wanted, now, SchedulerConfig()
        )


ROW_KEYED = ("PodTopologySpread", "InterPodAffinity")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_filter_verdicts_are_a_function_of_their_row_keys(cluster, data) -> None:  # type: ignore[no-untyped-def]
    # The engine reuses a node's verdict while its NodeInfo and its row key stand
    # (``schedlib.rowkeys``): so over snapshots that change under one pod, any two rows with
    # equal keys must get equal verdicts. The form run once per distinct key gives the
    # plugin's verdict on every node.
    pod = make_pod("p", **data.draw(placement()))
    names = [info.name for info in cluster.nodes]
    seen: dict[str, dict[object, list[str]]] = {name: {} for name in ROW_KEYED}
    for step in range(data.draw(st.integers(1, 5))):
        if step:
            placed = make_pod(f"s{step}", **data.draw(placement()))
            cluster = cluster.with_pod(placed, data.draw(st.sampled_from(names)))
        context = CycleContext(cluster, PodView(pod), SchedulerConfig())
        infos = list(cluster.nodes)
        for name in ROW_KEYED:
            plugin = PLUGINS_BY_NAME[name]
            assert plugin.prepare_filter is not None and plugin.filter is not None
            state = plugin.prepare_filter(pod, cluster, SchedulerConfig())
            expected = [plugin.filter(state, info) for info in infos]
            skip = state.skip if name == "InterPodAffinity" else not state.constraints
            if skip:
                continue
            key = topology_filters.filter_key(context, name, state)
            for row, verdict in enumerate(expected):
                known = seen[name].setdefault((key.whole, tuple(key.rows[row].tolist())), verdict)
                assert known == verdict, name
            got = topology_filters.by_pattern(context, name, state, infos, plugin.filter)
            assert got == expected, name
            assert FILTERS[name](state, infos, context) == expected, name
            # The engine also asks about some rows only (the nodes still in the running).
            assert FILTERS[name](state, infos[1::2], context) == expected[1::2], name


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data(), hard=st.sampled_from([0, 1, 7]))
def test_incremental_affinity_prescore_equals_the_plugin(cluster, data, hard) -> None:  # type: ignore[no-untyped-def]
    plugin = PLUGINS_BY_NAME["InterPodAffinity"]
    assert plugin.prepare_score is not None
    prepare = topology_filters.PREPARE_SCORES["InterPodAffinity"]
    config = SchedulerConfig(hard_pod_affinity_weight=hard)
    wanted = make_pod("p", **data.draw(scoring_placement()))

    def new_pod(name: str) -> Pod:
        return make_pod(name, **data.draw(scoring_placement()))

    for now in assume_and_forget(data, cluster, new_pod, steps=10, forget_odds=4):
        feasible = list(now.nodes)[: data.draw(st.integers(0, len(now.nodes)))]
        assert prepare(wanted, now, feasible, config) == plugin.prepare_score(
            wanted, now, feasible, config
        )


def test_affinity_prescore_counts_every_pod_of_equal_terms() -> None:
    # Two pods with one required affinity term in zone a, one preferred anti-affinity pod on
    # a node of zone b: the kept sums count each pod, weighted, as the plugin does.
    cluster = snapshot([make_node(f"n{i}", labels={"zone": zone}) for i, zone in enumerate("aab")])
    required = {"podAffinity": pod_affinity(required=[term({"app": "web"}, "zone")])}
    preferred = {"podAntiAffinity": pod_affinity(preferred=[(30, term({"app": "web"}, "zone"))])}
    for name, node, affinity in (("r1", "n0", required), ("r2", "n1", required)):
        cluster = cluster.with_pod(make_pod(name, labels={"app": "db"}, affinity=affinity), node)
    cluster = cluster.with_pod(make_pod("r3", affinity=preferred), "n2")
    pod = make_pod("p", labels={"app": "web"})
    config = SchedulerConfig(hard_pod_affinity_weight=3)
    plugin = PLUGINS_BY_NAME["InterPodAffinity"]
    assert plugin.prepare_score is not None
    got = topology_filters.PREPARE_SCORES["InterPodAffinity"](
        pod, cluster, list(cluster.nodes), config
    )
    assert got == plugin.prepare_score(pod, cluster, list(cluster.nodes), config)
    assert got.topology_score == {"zone": {"a": 6, "b": -30}}


COUNT_SELECTORS = [{}, {"app": "web"}, {"app": "db"}, {"app": "web", "tier": "x"}, {"tier": "y"}]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), data=st.data())
def test_domain_pod_count_kept_and_batched_equal_a_fresh_count(cluster, data) -> None:  # type: ignore[no-untyped-def]
    # Pods of two namespaces are assumed and forgotten (some steps unseen); for selectors that
    # share an index (same label names, other values) and others, the kept counts, the
    # per-node builtin and its batch form must count what a pass over every pod counts.
    selectors = data.draw(st.lists(st.sampled_from(COUNT_SELECTORS), min_size=1, max_size=3))
    key = data.draw(st.sampled_from(["zone", "rack", "missing"]))
    pod = make_pod("p", namespace=data.draw(st.sampled_from(["default", "other"])))

    def new_pod(name: str) -> Pod:
        extra = data.draw(st.sampled_from([{}, {"tier": "x"}, {"tier": "y"}]))
        app = data.draw(st.sampled_from(["web", "db"]))
        namespace = data.draw(st.sampled_from(["default", "other"]))
        return make_pod(name, namespace=namespace, labels={"app": app, **extra})

    for now in assume_and_forget(data, cluster, new_pod, steps=8, forget_odds=4):
        if data.draw(st.booleans()):
            continue
        views = [NodeView(info) for info in now.nodes]
        ctx = CycleContext(now, PodView(pod))
        for labels in selectors:
            expected = [
                0
                if (value := info.node.labels.get(key)) is None
                else sum(
                    1
                    for peer in now.nodes
                    if peer.node.labels.get(key) == value
                    for p in peer.pods
                    if p.pod.namespace == pod.namespace
                    and all(p.pod.labels.get(k) == v for k, v in labels.items())
                )
                for info in now.nodes
            ]
            counts = kept_counts(now, key, pod.namespace, tuple(sorted(labels.items())))
            by_value = {
                v.node.labels[key]: e
                for v, e in zip(views, expected, strict=True)
                if key in v.node.labels
            }
            assert {value: counts.get(value, 0) for value in by_value} == by_value
            assert all(value in by_value for value, n in counts.items() if n)
            assert [domain_pod_count(ctx, ctx.pod, v, key, labels) for v in views] == expected
            for few in (domain_counts._FEW, 0):  # node by node, and the label's column
                with mock.patch.object(domain_counts, "_FEW", few):
                    got = domain_pod_count_batch(ctx, ctx.pod, views, key, labels)
                assert list(got) == expected, few
            some = data.draw(st.lists(st.integers(0, len(views) - 1), max_size=4))
            fresh_ctx = CycleContext(now, PodView(pod))
            assert domain_pod_count_batch(
                fresh_ctx, fresh_ctx.pod, [views[i] for i in some], key, labels
            ) == [expected[i] for i in some]


@pytest.mark.parametrize(
    ("overcommit", "request_cpu", "expected"),
    [
        pytest.param((), "1", [["Insufficient cpu"]], id="no overcommit: 1 cpu does not fit 0.5"),
        pytest.param(
            (Overcommit("cpu", Fraction(3, 2)),), "1", [[]], id="cpu 1.5: 6 allocatable, 2.5 free"
        ),
        pytest.param(
            (Overcommit("cpu", Fraction(3, 2)),),
            "3",
            [["Insufficient cpu"]],
            id="cpu 1.5: 3 cpu beyond 2.5 free",
        ),
        pytest.param(
            (Overcommit("cpu", Fraction(2), Fraction(1, 2)),),
            "1",
            [["Insufficient cpu"]],
            id="max_load without a reading: plain allocatable",
        ),
    ],
)
def test_the_resources_filter_over_few_nodes_counts_overcommitted_cpu(
    overcommit: tuple[Overcommit, ...], request_cpu: str, expected: list[list[str]]
) -> None:
    # A class's later cycles ask about a few changed nodes: that form scales allocatable cpu
    # by the policy's overcommit as the plugin does.
    cluster = snapshot(
        [make_node("n0", cpu="4")],
        [make_pod("busy", requests={"cpu": "3500m"}, node_name="n0")],
    )
    pod = make_pod("p", requests={"cpu": request_cpu})
    plugin = PLUGINS_BY_NAME["NodeResourcesFit"]
    assert plugin.prepare_filter is not None and plugin.filter is not None
    state = plugin.prepare_filter(pod, cluster, SchedulerConfig(overcommit=overcommit))
    infos = list(cluster.nodes)
    assert [plugin.filter(state, info) for info in infos] == expected
    assert FILTERS["NodeResourcesFit"](state, infos, None) == expected


@pytest.mark.parametrize("nodes", [3, 60], ids=["few nodes", "many nodes"])
@pytest.mark.parametrize(
    "overcommit",
    [
        pytest.param((Overcommit("cpu", Fraction(3, 2)),), id="cpu 1.5"),
        pytest.param((Overcommit("cpu", Fraction(2), Fraction(1, 2)),), id="cpu 2 below load 0.5"),
    ],
)
def test_resource_forms_scale_cpu_by_each_node_s_load_as_the_plugins(
    overcommit: tuple[Overcommit, ...], nodes: int
) -> None:
    # Nodes with a fresh cpu reading below, at and above the bound, and none: the forms (over
    # few nodes and over many) scale each node's allocatable cpu exactly as the plugins do.
    cluster = snapshot(
        [make_node(f"n{i}", cpu="4", memory="8Gi") for i in range(nodes)],
        [
            make_pod(
                f"busy{i}",
                requests={"cpu": f"{(2000, 3500, 3000, 500)[i % 4]}m"},
                node_name=f"n{i}",
            )
            for i in range(nodes)
        ],
    )
    readings = [0.2, 0.5, 0.7, None]
    infos = [
        info.with_load(NodeLoad(cpu=readings[i % 4], age=None if readings[i % 4] is None else 5))
        for i, info in enumerate(cluster.nodes)
    ]
    config = SchedulerConfig(overcommit=overcommit)
    pod = make_pod("p", requests={"cpu": "3", "memory": "1Gi"})
    fit = PLUGINS_BY_NAME["NodeResourcesFit"]
    assert fit.prepare_filter is not None and fit.filter is not None
    state = fit.prepare_filter(pod, cluster, config)
    expected = [fit.filter(state, info) for info in infos]
    assert FILTERS["NodeResourcesFit"](state, infos, None) == expected
    assert any(expected) and not all(expected)  # the load decides for some nodes
    for name in ("NodeResourcesFit", "NodeResourcesBalancedAllocation"):
        plugin = PLUGINS_BY_NAME[name]
        assert plugin.prepare_score is not None and plugin.score is not None
        score_state = plugin.prepare_score(pod, cluster, infos, config)
        assert list(SCORES[name](score_state, infos, None)) == [
            plugin.score(score_state, info) for info in infos
        ], name
