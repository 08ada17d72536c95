"""The builtins' cache and idle declarations say no more than the builtins do.

``schedlib.functions`` tells the engine's caches what each builtin reads: keys that skip a
plugin's per-pod preparation when the pod alone shows the plugin idle (``_QUICK_IDLE``),
ImageLocality's state kept while the snapshot's image counts are the very same object,
``Function.keys_alike`` (cluster keys the same for every pod of a class) and ``Function.idle``
(the engine leaves a rule calling it out of the cycle). Each must only ever
shorten the way to the value the full preparation gives: these tests hold them to it over pods
with and without spread constraints and (anti-)affinity, in clusters with and without pods
holding terms.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY
from policyengine.schedlib import functions, score_keys
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import NodeView, PodView
from tests.model.builders import container, make_node, make_pod, snapshot, term

SPREAD_HARD = {
    "maxSkew": 1,
    "topologyKey": "zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "web"}},
}
SPREAD_SOFT = {**SPREAD_HARD, "whenUnsatisfiable": "ScheduleAnyway"}
REQUIRED_ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term({"app": "web"}, "zone")]
    }
}
PREFERRED_AFFINITY = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "podAffinityTerm": term({"app": "db"}, "zone")}
        ]
    }
}

POD_SHAPES: dict[str, dict[str, Any]] = {
    "plain": {},
    "hard spread": {"spread": [SPREAD_HARD]},
    "soft spread": {"spread": [SPREAD_SOFT]},
    "required anti-affinity": {"affinity": REQUIRED_ANTI},
    "preferred affinity": {"affinity": PREFERRED_AFFINITY},
}

# What runs in the cluster besides the pod being scheduled.
RUNNING: dict[str, dict[str, Any]] = {
    "nothing": {},
    "a plain pod": {"labels": {"app": "web"}},
    "a pod with required anti-affinity": {"labels": {"app": "db"}, "affinity": REQUIRED_ANTI},
    "a pod with preferred affinity": {"labels": {"app": "web"}, "affinity": PREFERRED_AFFINITY},
}


def cluster(running: str, table: dict[str, dict[str, Any]] = RUNNING) -> ClusterSnapshot:
    nodes = [make_node(f"n{i}", labels={"zone": "a" if i < 2 else "b"}) for i in range(3)]
    pods = []
    if table[running]:
        pods.append(make_pod("running", node_name="n0", **table[running]))
    return snapshot(nodes, pods)


def context(snap: ClusterSnapshot, shape: str, feasible: bool = True) -> CycleContext:
    pod = make_pod("incoming", labels={"app": "web"}, **POD_SHAPES[shape])
    ctx = CycleContext(snap, PodView(pod), DEFAULT_CONFIG)
    ctx.alike = {}
    ctx.feasible = snap.nodes if feasible else ()
    return ctx


def idle_state(plugin: str, kind: str, ctx: CycleContext) -> bool:
    """Whether the plugin's full preparation (in a fresh cycle) leaves it idle."""
    fresh = CycleContext(ctx.snapshot, ctx.pod, ctx.config)
    fresh.feasible = ctx.feasible
    plugin_ = PLUGINS_BY_NAME[plugin]
    if kind == "filter":
        return functions._IDLE_FILTERS[plugin](functions._filter_state(fresh, plugin_))
    return functions._score_state(fresh, plugin_) is None


CASES = [
    (plugin, kind, shape, running, feasible)
    for plugin, kind in functions._QUICK_IDLE
    for shape in POD_SHAPES
    for running in RUNNING
    for feasible in (True, False)
]


@pytest.mark.parametrize(("plugin", "kind", "shape", "running", "feasible"), CASES, ids=str)
def test_a_plugin_told_idle_without_its_state_is_idle_with_it(
    plugin: str, kind: str, shape: str, running: str, feasible: bool
) -> None:
    ctx = context(cluster(running), shape, feasible)
    if functions._QUICK_IDLE[(plugin, kind)](ctx):
        assert idle_state(plugin, kind, ctx)


@pytest.mark.parametrize(
    ("plugin", "kind", "shape", "running"),
    [
        ("PodTopologySpread", "filter", "plain", "nothing"),
        ("PodTopologySpread", "score", "plain", "a pod with preferred affinity"),
        ("InterPodAffinity", "filter", "plain", "a plain pod"),
        ("InterPodAffinity", "score", "plain", "a plain pod"),
    ],
)
def test_plain_pods_need_no_state_in_clusters_without_terms(
    plugin: str, kind: str, shape: str, running: str
) -> None:
    # The shortcut is taken where the benchmarks' pods spend their cycles (so it can fail).
    assert functions._QUICK_IDLE[(plugin, kind)](context(cluster(running), shape))


@pytest.mark.parametrize("shape", list(POD_SHAPES), ids=str)
@pytest.mark.parametrize("running", list(RUNNING), ids=str)
def test_keys_with_the_shortcut_are_the_keys_of_the_prepared_states(
    shape: str, running: str
) -> None:
    snap = cluster(running)
    ctx = context(snap, shape)
    by_name = {f.name: f for f in functions.FUNCTIONS}
    for name in (
        "topology_spread_reasons",
        "inter_pod_affinity_reasons",
        "topology_spread_score",
        "inter_pod_affinity_weight",
    ):
        function = by_name[name]
        assert function.cluster_key is not None and function.pod_key is not None
        # What the key would be from the state itself (the idle tests of the module).
        plugin = "PodTopologySpread" if "spread" in name else "InterPodAffinity"
        fresh = CycleContext(snap, ctx.pod, ctx.config)
        fresh.feasible = ctx.feasible
        if name.endswith("reasons"):
            state = functions._filter_state(fresh, PLUGINS_BY_NAME[plugin])
            idle = functions._IDLE_FILTERS[plugin](state)
            want_pod_key: Any = (
                functions._IDLE if idle else state,
                functions._considered_names(fresh),
            )
        else:
            score_state = functions._score_state(fresh, PLUGINS_BY_NAME[plugin])
            idle = score_state is None
            if idle:
                want_pod_key = None
            elif plugin == "PodTopologySpread":  # the counts are in the row keys
                require_all = spread.requires_all_keys(ctx.pod.pod, ctx.config)
                want_pod_key = score_keys.spread_pod_key(score_state, require_all)
            else:
                want_pod_key = score_keys.affinity_pod_key(score_state)
        if idle:
            assert function.cluster_key(ctx) == functions._IDLE
            assert function.pod_key(ctx) == want_pod_key
        else:  # the state (or its part outside the row keys); an unhashable one is refused
            try:
                got = function.pod_key(ctx)
            except TypeError:
                continue
            assert got == want_pod_key


def test_image_locality_keeps_its_state_while_the_image_counts_stay() -> None:
    plugin = PLUGINS_BY_NAME["ImageLocality"]
    nodes = [
        make_node("n0", images=[(["app:v1"], 300 * 1024 * 1024)]),
        make_node("n1", images=[(["other:v2"], 50 * 1024 * 1024)]),
    ]
    snap = snapshot(nodes)
    first = context(snap, "plain")
    state = functions._score_state(first, plugin)
    key = functions._image_key(first)
    # The assume step keeps the counts: the next cycle of the class reuses state and key.
    placed = snap.with_pod(make_pod("placed", labels={"app": "db"}), "n1")
    assert placed.image_node_counts is snap.image_node_counts
    second = context(placed, "plain")
    second.alike = first.alike
    assert functions._score_state(second, plugin) is state
    assert functions._image_key(second) is key
    # A node whose images change makes new counts: a new state, as the plugin computes it.
    changed = placed.with_node(make_node("n1", images=[(["app:v1"], 300 * 1024 * 1024)]))
    third = context(changed, "plain")
    third.alike = first.alike
    got = functions._score_state(third, plugin)
    assert got is not state
    assert plugin.prepare_score is not None
    assert got == plugin.prepare_score(third.pod.pod, changed, changed.nodes, DEFAULT_CONFIG)
    assert functions._image_key(third) == (2, (("app:v1", 2),))


@settings(max_examples=40, deadline=None)
@given(
    shape=st.sampled_from(list(POD_SHAPES)),
    runnings=st.lists(st.sampled_from(list(RUNNING)), max_size=3),
)
def test_keys_alike_are_the_same_in_every_cluster(shape: str, runnings: list[str]) -> None:
    # ``Function.keys_alike``: the cluster key and the stable test read the pod and the
    # configuration alone, so every cluster gives the same for one pod.
    clusters = [cluster(running) for running in ["nothing", *runnings]]
    alike = [f for f in functions.FUNCTIONS if f.keys_alike]
    assert {f.name for f in alike} >= {"considered", "resources_fit_reasons"}
    for function in alike:
        assert function.cluster_key is not None
        seen = set()
        for snap in clusters:
            ctx = context(snap, shape)
            stable = None if function.stable_only is None else function.stable_only(ctx)
            seen.add((function.cluster_key(ctx), stable))
        assert len(seen) == 1, function.name


# --- Function.idle: told only where every node gets the empty value -------------------------

PREFERRED_NODE = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 3,
                "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                },
            }
        ]
    }
}

IDLE_SHAPES: dict[str, dict[str, Any]] = {
    **POD_SHAPES,
    "host port": {
        "containers": [
            container("c", {"cpu": "100m"}, ports=[{"containerPort": 80, "hostPort": 80}])
        ]
    },
    "node selector": {"node_selector": {"zone": "a"}},
    "preferred node affinity": {"affinity": PREFERRED_NODE},
    "requests": {"requests": {"cpu": "500m", "memory": "1Gi"}},
}

IDLE_RUNNING: dict[str, dict[str, Any]] = {
    **RUNNING,
    "a pod holding host port 80": {
        "containers": [container("c", ports=[{"containerPort": 80, "hostPort": 80}])]
    },
}


IDLE_FUNCTIONS = [f for f in functions.FUNCTIONS if f.idle is not None]


def test_the_plugins_kube_skips_per_pod_are_told_idle() -> None:
    assert sorted(f.name for f in IDLE_FUNCTIONS) == [
        "balanced_allocation_score",
        "inter_pod_affinity_reasons",
        "inter_pod_affinity_weight",
        "node_affinity_reasons",
        "node_ports_reasons",
        "node_volume_limits_reasons",
        "preferred_node_affinity_weight",
        "topology_spread_reasons",
        "topology_spread_score",
        "volume_binding_reasons",
        "volume_restrictions_reasons",
        "volume_zone_reasons",
    ]


@pytest.mark.parametrize("function", IDLE_FUNCTIONS, ids=lambda f: f.name)
@pytest.mark.parametrize("shape", list(IDLE_SHAPES), ids=str)
@pytest.mark.parametrize("running", list(IDLE_RUNNING), ids=str)
def test_a_function_told_idle_gives_its_empty_value_at_every_node(
    function: Any, shape: str, running: str
) -> None:
    snap = cluster(running, IDLE_RUNNING)
    pod = make_pod("incoming", labels={"app": "web"}, **IDLE_SHAPES[shape])
    ctx = CycleContext(snap, PodView(pod), DEFAULT_CONFIG)
    ctx.alike = {}
    ctx.feasible = snap.nodes
    if not function.idle(ctx):
        return
    empty = [] if function.name.endswith("reasons") else None
    views = [NodeView(info, DEFAULT_TOPOLOGY) for info in snap.nodes]
    fresh = CycleContext(snap, PodView(pod), DEFAULT_CONFIG)
    fresh.feasible = snap.nodes
    assert [function.impl(fresh, PodView(pod), view) for view in views] == [empty] * len(views)


@pytest.mark.parametrize(
    ("name", "shape", "running", "idle"),
    [
        ("node_ports_reasons", "plain", "a pod holding host port 80", True),
        ("node_ports_reasons", "host port", "nothing", False),
        ("node_affinity_reasons", "plain", "nothing", True),
        ("node_affinity_reasons", "node selector", "nothing", False),
        ("preferred_node_affinity_weight", "plain", "nothing", True),
        ("preferred_node_affinity_weight", "preferred node affinity", "nothing", False),
        ("balanced_allocation_score", "plain", "nothing", True),  # BestEffort: skipped
        ("balanced_allocation_score", "requests", "nothing", False),
        ("topology_spread_reasons", "plain", "nothing", True),
        ("topology_spread_reasons", "hard spread", "nothing", False),
        ("topology_spread_score", "soft spread", "nothing", False),
        ("inter_pod_affinity_reasons", "plain", "a plain pod", True),
        ("inter_pod_affinity_reasons", "plain", "a pod with required anti-affinity", False),
        ("inter_pod_affinity_weight", "plain", "a pod with preferred affinity", False),
        ("inter_pod_affinity_weight", "preferred affinity", "nothing", False),
    ],
)
def test_idle_is_told_for_the_pods_that_leave_a_plugin_nothing_to_do(
    name: str, shape: str, running: str, idle: bool
) -> None:
    # Where the tests above can fail: each plugin is told idle for some pods and not others.
    function = next(f for f in functions.FUNCTIONS if f.name == name)
    pod = make_pod("incoming", labels={"app": "web"}, **IDLE_SHAPES[shape])
    ctx = CycleContext(cluster(running, IDLE_RUNNING), PodView(pod), DEFAULT_CONFIG)
    ctx.alike = {}
    assert function.idle(ctx) is idle
