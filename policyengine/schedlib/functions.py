"""Builtin functions policies call: Kubernetes semantics too intricate for plain expressions.

Each builtin that reproduces a kube-scheduler plugin runs the model's implementation of that
plugin: its per-pod preparation once per cycle (through ``CycleContext.prepared``), its per-node
step per call. Filter builtins return kube-scheduler's reason strings (an empty list passes);
score builtins return the raw score before normalisation, or null where kube-scheduler's
PreScore skips the plugin or ignores the node, so the rule does not score it.

Nodes left out by NodeAffinity's PreFilter (a ``matchFields`` on ``metadata.name``) are never
filtered by kube-scheduler's other plugins: they fail node affinity alone. The filter builtins
pass them, ``node_affinity_reasons`` rejects them, and ``considered(pod, node)`` lets plain rules
do the same.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Any

from policyengine.lang.schema import Function, Param
from policyengine.lang.types import BOOL, INT, STRING, ListType, MapType, Nullable, Type
from policyengine.lang.values import Column, Value
from policyengine.lang.vector import Numbers
from policyengine.model.objects import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from policyengine.model.plugins import PLUGINS_BY_NAME, Plugin
from policyengine.model.plugins import pod_topology_spread as spread
from policyengine.model.taints import Taint, Toleration
from policyengine.schedlib import score_keys, spread_score, topology_filters
from policyengine.schedlib.batch import FILTERS, PREPARE_FILTERS, SCORES
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.domain_counts import (
    domain_pod_count,
    domain_pod_count_batch,
    domain_pod_count_key,
    domain_pod_count_key_by,
    domain_pod_count_pod_key,
)
from policyengine.schedlib.gpu import GPU_FUNCTIONS
from policyengine.schedlib.node_rows import named_positions, node_infos
from policyengine.schedlib.records import NODE, POD, TAINT, TOLERATION
from policyengine.schedlib.storage import STORAGE_FUNCTIONS, pod_rejection
from policyengine.schedlib.views import NodeView, PodView

REASONS = ListType(STRING, bound=16)

_POD_NODE = (Param("pod", POD), Param("node", NODE))


# The plugins whose PreFilter / PreScore read nothing but the pod and the configuration (not
# the snapshot, not the feasible nodes): pods alike share their states between cycles.
_POD_ONLY = frozenset(
    {
        ("NodeResourcesFit", "filter"),
        ("NodeResourcesFit", "score"),
        ("NodeResourcesBalancedAllocation", "score"),
        ("TaintToleration", "filter"),
        ("TaintToleration", "score"),
        ("NodeAffinity", "filter"),
        ("NodeAffinity", "score"),
        ("NodePorts", "filter"),
        ("NodeUnschedulable", "filter"),
        ("NodeName", "filter"),
    }
)


_INFOS = object()  # the prepared key of the node lists' NodeInfos


def _infos(ctx: CycleContext, nodes: Sequence[NodeView]) -> list[Any]:
    """The ``NodeInfo`` of each of ``nodes``. The builtins of one cycle mostly read one list
    of views (the batch's column, or the feasible nodes'), so it is read once per cycle."""
    kept: dict[int, tuple[Sequence[NodeView], list[Any]]] = ctx.prepared(_INFOS, dict)
    found = kept.get(id(nodes))
    if found is not None and found[0] is nodes:
        return found[1]
    infos = node_infos(ctx, nodes)  # their rows told where the views say them
    kept[id(nodes)] = (nodes, infos)  # holding ``nodes`` keeps its id from being reused
    return infos


def _filter_state(ctx: CycleContext, plugin: Plugin) -> Any:
    # An incremental PreFilter (``batch.PREPARE_FILTERS``) computes the same state.
    prepare = PREPARE_FILTERS.get(plugin.name, plugin.prepare_filter)
    assert prepare is not None
    key = (plugin.name, "filter")
    return ctx.prepared(
        key,
        lambda: prepare(ctx.pod.pod, ctx.snapshot, ctx.config),
        key in _POD_ONLY,
    )


def _score_state(ctx: CycleContext, plugin: Plugin) -> Any:
    # An incremental PreScore (``topology_filters.PREPARE_SCORES``) computes the same state.
    prepare = topology_filters.PREPARE_SCORES.get(plugin.name, plugin.prepare_score)
    assert prepare is not None
    key = (plugin.name, "score")
    if prepare is _IMAGES.prepare_score:
        return ctx.prepared(key, lambda: _image_state(ctx))
    return ctx.prepared(
        key,
        lambda: prepare(ctx.pod.pod, ctx.snapshot, ctx.feasible, ctx.config),
        key in _POD_ONLY,
    )


_IMAGES = PLUGINS_BY_NAME["ImageLocality"]
_IMAGE_STATE = object()  # the prepared key of pods alike's last ImageLocality state


def _image_state(ctx: CycleContext) -> Any:
    """ImageLocality's PreScore reads of the cluster only the node count and the counts of
    nodes holding each image (``ClusterSnapshot.image_node_counts``, the very object while
    no node's images change: the assume step keeps it). Pods alike keep their last state
    with the two, and the cluster key made of it (``_image_key``)."""
    snapshot = ctx.snapshot
    counts, nodes = snapshot.image_node_counts, snapshot.num_nodes
    kept: list[Any] = ctx.prepared(_IMAGE_STATE, list, pod_only=True)
    if kept and kept[0] is counts and kept[1] == nodes:
        return kept[2]
    assert _IMAGES.prepare_score is not None
    state = _IMAGES.prepare_score(ctx.pod.pod, snapshot, ctx.feasible, ctx.config)
    kept[:] = (counts, nodes, state, (state.total_nodes, tuple(sorted(state.spread.items()))))
    return state


def _considered_names(ctx: CycleContext) -> frozenset[str] | None:
    """The only nodes kube-scheduler filters for this pod (None: all of them); none when a
    storage plugin's PreFilter rejects the pod (``schedlib.storage``)."""
    if pod_rejection(ctx) is not None:
        return frozenset()
    return node_affinity_node_names(ctx)


def node_affinity_node_names(ctx: CycleContext) -> frozenset[str] | None:
    """The only nodes kube-scheduler filters when the pod's required node affinity names them
    (``matchFields`` on ``metadata.name`` in every term: NodeAffinity's PreFilter result);
    None when it does not restrict them."""
    state = _filter_state(ctx, PLUGINS_BY_NAME["NodeAffinity"])
    result = PLUGINS_BY_NAME["NodeAffinity"].prefilter_result(state)  # type: ignore[misc]
    return None if result is None else result.node_names


def considered(ctx: CycleContext, pod: PodView, node: NodeView) -> bool:
    """False for a node NodeAffinity's PreFilter left out (``matchFields`` on the node name)."""
    names = _considered_names(ctx)
    return names is None or node.node.name in names


def looked_at(ctx: CycleContext, nodes: Sequence[NodeView]) -> list[int] | None:
    """``Function.looked_at`` of every plugin filter: the positions of the nodes NodeAffinity's
    PreFilter names (None: it names none). At every other node each filter gives one result:
    NodeAffinity its rejection, the others a pass (``_filter_builtin``)."""
    names = _considered_names(ctx)
    return None if names is None else named_positions(nodes, names, ctx.snapshot)


def considered_batch(ctx: CycleContext, pod: PodView, nodes: Sequence[NodeView]) -> list[bool]:
    names = _considered_names(ctx)
    if names is None:
        return [True] * len(nodes)
    out = [False] * len(nodes)
    for at in named_positions(nodes, names, ctx.snapshot):
        out[at] = True
    return out


def _filter_builtin(plugin_name: str) -> Callable[[CycleContext, PodView, NodeView], list[str]]:
    plugin = PLUGINS_BY_NAME[plugin_name]
    restricts = plugin_name == "NodeAffinity"

    def impl(ctx: CycleContext, pod: PodView, node: NodeView) -> list[str]:
        if not considered(ctx, pod, node) and (not restricts or pod_rejection(ctx)):
            return []
        assert plugin.filter is not None
        return plugin.filter(_filter_state(ctx, plugin), node.info)

    return impl


def _filter_batch(
    plugin_name: str,
) -> Callable[[CycleContext, PodView, Sequence[NodeView]], list[list[str]]]:
    """``_filter_builtin`` over many nodes: the per-pod state is looked up once, and plugins
    with a columnar form (``schedlib.batch``) run it instead of one call per node."""
    plugin = PLUGINS_BY_NAME[plugin_name]
    restricts = plugin_name == "NodeAffinity"
    columnar = FILTERS.get(plugin_name)

    def batch(ctx: CycleContext, pod: PodView, nodes: Sequence[NodeView]) -> list[list[str]]:
        state = _filter_state(ctx, plugin)
        infos = _infos(ctx, nodes)
        run = plugin.filter
        assert run is not None
        names = None if restricts and not pod_rejection(ctx) else _considered_names(ctx)
        if names is not None:
            # Only the nodes kube-scheduler looks at are filtered (a DaemonSet's pod names
            # one): the others pass here, and NodeAffinity rejects them.
            at = named_positions(infos, names, ctx.snapshot)
            if len(at) < len(infos):
                reasons: list[list[str]] = [[]] * len(infos)  # one shared pass
                some = [infos[i] for i in at]
                found = (
                    columnar(state, some, ctx)
                    if columnar is not None
                    else map(partial(run, state), some)
                )
                for i, r in zip(at, found, strict=True):
                    reasons[i] = r
                return reasons
        if columnar is not None:
            return columnar(state, infos, ctx)
        return [run(state, info) for info in infos]

    return batch


def _score_batch(
    plugin_name: str,
) -> Callable[[CycleContext, PodView, Sequence[NodeView]], list[int | None]]:
    """``_score_builtin`` over many nodes (see ``_filter_batch``)."""
    plugin = PLUGINS_BY_NAME[plugin_name]
    ignored_nodes = plugin_name == "PodTopologySpread"
    columnar = SCORES.get(plugin_name)

    def batch(ctx: CycleContext, pod: PodView, nodes: Sequence[NodeView]) -> list[int | None]:
        state = _score_state(ctx, plugin)
        if state is None:
            return [None] * len(nodes)
        infos = _infos(ctx, nodes)
        run = plugin.score
        assert run is not None
        if ignored_nodes:
            found: Sequence[Any] = spread_score.scores(state, infos, ctx)
        elif columnar is not None:
            found = columnar(state, infos, ctx)
        else:
            return [run(state, info) for info in infos]
        # A numpy-backed column (``vector.Numbers``) stays one: the scores' conversion reads
        # its array.
        return found if isinstance(found, list | Numbers) else list(found)  # type: ignore[return-value]

    return batch


def _score_builtin(plugin_name: str) -> Callable[[CycleContext, PodView, NodeView], int | None]:
    plugin = PLUGINS_BY_NAME[plugin_name]
    ignored_nodes = plugin_name == "PodTopologySpread"

    def impl(ctx: CycleContext, pod: PodView, node: NodeView) -> int | None:
        state = _score_state(ctx, plugin)
        if state is None:  # kube's PreScore Skip: the plugin scores no node
            return None
        if ignored_nodes and node.node.name in state.ignored:
            return None
        assert plugin.score is not None
        return plugin.score(state, node.info)

    return impl


def tolerated(taint: Taint, tolerations: list[Toleration]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


# --- what each builtin reads of the cluster (``Function.cluster_key``) --------------------


class _Same:
    """A cluster key equal only to a key of the very same object (a snapshot: results read
    other nodes' pods, so they hold for that snapshot alone)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


_IDLE = "idle"  # the plugin does nothing for this pod: every node gets the same answer


def _node_only(ctx: CycleContext) -> Hashable:
    """The plugin reads only the pod and the node it is asked about."""
    return None


# --- plugins idle for a pod, told without their PreFilter / PreScore ------------------------
#
# Spread and inter-pod affinity read the whole cluster in their per-pod step, yet for most
# pods they do nothing: no constraint, no term of the pod's own, no pod in the cluster with
# terms. These tests see that from the pod (kept per class), the configuration and a cached
# fact of the snapshot, so the keys below need not prepare the state every cycle. Each is only
# ever true where the state is idle (``_IDLE_FILTERS``, a None score state), by both the
# incremental preparations and the plugins' own.


def _constraints(ctx: CycleContext, action: str) -> bool:
    """Whether the pod has spread constraints with ``action`` (its own or the defaults). The
    defaults' selector comes from the snapshot's Services and controllers and the pod's owner
    (which pods alike need not share): only a pod's own constraints are kept per class."""
    pod = ctx.pod.pod
    return ctx.prepared(
        ("spread_constraints", action),
        lambda: bool(spread.pod_constraints(pod, action, ctx.config, ctx.snapshot.workloads)),
        pod_only=bool(pod.topology_spread_constraints),
    )


def _no_terms(ctx: CycleContext) -> bool:
    """The pod has no (anti-)affinity stanza: no term of its own, required or preferred."""
    pod = ctx.pod.pod
    return pod.pod_affinity is None and pod.pod_anti_affinity is None


_QUICK_IDLE: dict[tuple[str, str], Callable[[CycleContext], bool]] = {
    ("PodTopologySpread", "filter"): lambda ctx: not _constraints(ctx, DO_NOT_SCHEDULE),
    ("PodTopologySpread", "score"): lambda ctx: not _constraints(ctx, SCHEDULE_ANYWAY),
    # The existing pods' required anti-affinity is all that can reject a pod without terms.
    ("InterPodAffinity", "filter"): lambda ctx: (
        _no_terms(ctx) and not ctx.snapshot.nodes_with_required_anti_affinity_pods
    ),
    # Only existing pods' terms can score a pod without preferred terms of its own.
    ("InterPodAffinity", "score"): lambda ctx: (
        _no_terms(ctx)
        and (
            ctx.config.ignore_preferred_terms_of_existing_pods
            or not ctx.snapshot.nodes_with_affinity_pods
        )
    ),
}


def _quick_idle(plugin_name: str, kind: str) -> Callable[[CycleContext], bool]:
    return _QUICK_IDLE.get((plugin_name, kind), _never)


def _never(ctx: CycleContext) -> bool:
    return False


_SPREAD_IDLE = _quick_idle("PodTopologySpread", "filter")
_AFFINITY_IDLE = _quick_idle("InterPodAffinity", "filter")


def _spread_filter_key(ctx: CycleContext) -> Hashable:
    # Per row: what the filter decides on at the node's domains (``topology_filters``).
    if _SPREAD_IDLE(ctx):
        return _IDLE
    state = _filter_state(ctx, PLUGINS_BY_NAME["PodTopologySpread"])
    if not state.constraints:
        return _IDLE
    return topology_filters.filter_key(ctx, "PodTopologySpread", state)


def _affinity_filter_key(ctx: CycleContext) -> Hashable:
    if _AFFINITY_IDLE(ctx):
        return _IDLE
    state = _filter_state(ctx, PLUGINS_BY_NAME["InterPodAffinity"])
    if state.skip:
        return _IDLE
    return topology_filters.filter_key(ctx, "InterPodAffinity", state)


def _score_key(plugin_name: str) -> Callable[[CycleContext], Hashable]:
    # PreScore reads the whole snapshot and the feasible set; a skipped plugin scores no node.
    # What the per-node step reads of them is its row key (``score_keys``).
    plugin = PLUGINS_BY_NAME[plugin_name]
    idle = _quick_idle(plugin_name, "score")
    make = _SCORE_ROWS[plugin_name]

    def key(ctx: CycleContext) -> Hashable:
        if idle(ctx):
            return _IDLE
        state = _score_state(ctx, plugin)
        if state is None:
            return _IDLE
        try:
            return score_keys.score_rows(ctx, plugin_name, state, make)
        except OverflowError:  # sums no int64 holds: the snapshot whole is the key
            return _Same(ctx.snapshot)

    return key


_SCORE_ROWS: dict[str, Callable[[Any, CycleContext], Hashable]] = {
    "PodTopologySpread": score_keys.spread_rows,
    "InterPodAffinity": score_keys.affinity_rows,
}


def _image_key(ctx: CycleContext) -> Hashable:
    # ImageLocality reads of the cluster only the node count and how many nodes hold each of
    # the pod's images.
    state = _score_state(ctx, PLUGINS_BY_NAME["ImageLocality"])
    kept: list[Any] = ctx.prepared(_IMAGE_STATE, list, pod_only=True)
    if kept and kept[2] is state:
        return kept[3]
    return state.total_nodes, tuple(sorted(state.spread.items()))


def _snapshot_key(ctx: CycleContext) -> Hashable:
    return _Same(ctx.snapshot)


_CLUSTER_KEYS: dict[tuple[str, str], Callable[[CycleContext], Hashable]] = {
    ("PodTopologySpread", "filter"): _spread_filter_key,
    ("InterPodAffinity", "filter"): _affinity_filter_key,
    ("PodTopologySpread", "score"): _score_key("PodTopologySpread"),
    ("InterPodAffinity", "score"): _score_key("InterPodAffinity"),
    ("ImageLocality", "score"): _image_key,
}


# --- what each builtin reads of the pod (``Function.pod_key``) -----------------------------
#
# A plugin's per-node step reads the pod only through its prepared state (frozen dataclasses
# compared by value), so the state itself is the key; the filters but NodeAffinity's also read
# the nodes NodeAffinity's PreFilter kept. A state that does not hash raises: the engine then
# shares results between pods alike only.

_IDLE_FILTERS: dict[str, Callable[[Any], bool]] = {
    # Every node passes while the plugin is idle for the pod, whatever else the state holds.
    "PodTopologySpread": lambda state: not state.constraints,
    "InterPodAffinity": lambda state: bool(state.skip),
}


def _hashed(value: Hashable) -> Hashable:
    hash(value)  # raises TypeError for a state holding a dict or a list
    return value


def _filter_pod_key(plugin_name: str) -> Callable[[CycleContext], Hashable]:
    plugin = PLUGINS_BY_NAME[plugin_name]
    restricts = plugin_name == "NodeAffinity"
    idle = _IDLE_FILTERS.get(plugin_name)
    quick = _quick_idle(plugin_name, "filter")

    def key(ctx: CycleContext) -> Hashable:
        if quick(ctx):
            part: Hashable = _IDLE
        else:
            state = _filter_state(ctx, plugin)
            part = _IDLE if idle is not None and idle(state) else _hashed(state)
        if restricts:
            return part if not ctx.pod.pod.uses_storage else (part, pod_rejection(ctx))
        return part, _considered_names(ctx)

    return key


def _score_pod_key(plugin_name: str) -> Callable[[CycleContext], Hashable]:
    plugin = PLUGINS_BY_NAME[plugin_name]
    images = plugin_name == "ImageLocality"
    quick = _quick_idle(plugin_name, "score")

    def key(ctx: CycleContext) -> Hashable:
        if quick(ctx):
            return None  # the state is None
        state = _score_state(ctx, plugin)
        if state is None:
            return None
        if images:
            # The node count and the images' spread are the cluster key's part.
            return state.images, state.num_containers
        if plugin_name == "PodTopologySpread":  # the counts are the row keys' part
            return score_keys.spread_pod_key(
                state, spread.requires_all_keys(ctx.pod.pod, ctx.config)
            )
        if plugin_name == "InterPodAffinity":
            return score_keys.affinity_pod_key(state)
        return _hashed(state)

    return key


def _considered_key(ctx: CycleContext) -> Hashable:
    return _considered_names(ctx)


# --- which builtins read only the Node object (``Function.stable_only``) -------------------
#
# The assume step gives a node a new NodeInfo (its pods, requests, ports) but keeps its Node
# object; results of these plugins stay valid for it. Spread's and inter-pod affinity's
# filters read of a node its labels and the counts at its domains: every node gets the same
# answer while they are idle, and otherwise their row keys (``topology_filters``) hold what
# the counts decide per row, so a row's verdict stands while its Node object and its row key
# do, whatever pods the node gained or lost.


def _always(ctx: CycleContext) -> bool:
    return True


def _no_host_ports(ctx: CycleContext) -> bool:
    # NodePorts passes every node for a pod that wants no host port: nothing of the node read.
    return not _filter_state(ctx, PLUGINS_BY_NAME["NodePorts"]).wanted


_ALIKE_STABLE: frozenset[Callable[[CycleContext], bool]] = frozenset({_always, _no_host_ports})

_STABLE: dict[tuple[str, str], Callable[[CycleContext], bool]] = {
    ("TaintToleration", "filter"): _always,
    ("NodePorts", "filter"): _no_host_ports,
    ("NodeAffinity", "filter"): _always,
    ("PodTopologySpread", "filter"): _always,
    ("InterPodAffinity", "filter"): _always,
    ("TaintToleration", "score"): _always,
    ("NodeAffinity", "score"): _always,
    # What the scores read of a node beyond its labels is in their row keys (``score_keys``).
    ("PodTopologySpread", "score"): _always,
    ("InterPodAffinity", "score"): _always,
    ("ImageLocality", "score"): _always,  # the node's images; the counts are the cluster key
}


def _nothing_outside(ctx: CycleContext) -> bool:
    # Spread's and inter-pod affinity's filters decide on what their row keys hold
    # (``topology_filters``) but for the nodes NodeAffinity's PreFilter left out, which pass.
    return _considered_names(ctx) is None


# Builtins whose result at a node is decided by their row key (``Function.row_determined``).
_ROW_DETERMINED: dict[tuple[str, str], Callable[[CycleContext], bool]] = {
    ("PodTopologySpread", "filter"): _nothing_outside,
    ("InterPodAffinity", "filter"): _nothing_outside,
    ("PodTopologySpread", "score"): _always,
    ("InterPodAffinity", "score"): _always,
}


# Builtins whose result at a node is their row key itself (``Function.row_values``).
_ROW_VALUES: dict[tuple[str, str], Callable[[Any, Any], tuple[Any, Any]]] = {
    ("PodTopologySpread", "score"): score_keys.spread_values,
}


# --- plugins that do nothing for a pod (``Function.idle``) ----------------------------------
#
# kube-scheduler's PreFilter and PreScore skip a plugin for such a pod: every node passes, or
# none is scored. The quick tests above hold only where that is so; the others read a state
# prepared from the pod alone (kept per class).


def _score_skipped(plugin_name: str) -> Callable[[CycleContext], bool]:
    plugin = PLUGINS_BY_NAME[plugin_name]

    def idle(ctx: CycleContext) -> bool:
        return _score_state(ctx, plugin) is None

    return idle


def _no_required_affinity(ctx: CycleContext) -> bool:
    return bool(_filter_state(ctx, PLUGINS_BY_NAME["NodeAffinity"]).skip)


_IDLE_TESTS: dict[tuple[str, str], Callable[[CycleContext], bool]] = {
    **_QUICK_IDLE,
    ("NodePorts", "filter"): _no_host_ports,
    ("NodeAffinity", "filter"): _no_required_affinity,
    ("NodeAffinity", "score"): _score_skipped("NodeAffinity"),
    ("NodeResourcesBalancedAllocation", "score"): _score_skipped("NodeResourcesBalancedAllocation"),
}


def _keys_alike(cluster_key: Callable[..., Any], stable_only: Any) -> bool:
    """``Function.keys_alike``: a constant cluster key, and a stable test that is constant or
    reads only a state kept per class of pods (NodePorts' PreFilter)."""
    return cluster_key is _node_only and (stable_only is None or stable_only in _ALIKE_STABLE)


def _kube(name: str, plugin: str, kind: str, doc: str) -> Function:
    cluster_key = _CLUSTER_KEYS.get((plugin, kind), _node_only)
    stable_only = _STABLE.get((plugin, kind))
    keys_alike = _keys_alike(cluster_key, stable_only)
    if kind == "filter":
        return Function(
            name,
            _POD_NODE,
            REASONS,
            _filter_builtin(plugin),
            doc,
            cost=50,
            needs_context=True,
            varies_per_node=True,
            batch=_filter_batch(plugin),
            cluster_key=cluster_key,
            pod_key=_filter_pod_key(plugin),
            stable_only=stable_only,
            pod_key_alike=(plugin, kind) in _POD_ONLY,
            row_determined=_ROW_DETERMINED.get((plugin, kind)),
            keys_alike=keys_alike,
            idle=_IDLE_TESTS.get((plugin, kind)),
            looked_at=looked_at,
        )
    return Function(
        name,
        _POD_NODE,
        Nullable(INT),
        _score_builtin(plugin),
        doc,
        cost=50,
        needs_context=True,
        varies_per_node=True,
        batch=_score_batch(plugin),
        cluster_key=cluster_key,
        pod_key=_score_pod_key(plugin),
        stable_only=stable_only,
        row_determined=_ROW_DETERMINED.get((plugin, kind)),
        row_values=_ROW_VALUES.get((plugin, kind)),
        # ImageLocality's key is the pod's images (its state also reads the cluster).
        pod_key_alike=(plugin, kind) in _POD_ONLY or plugin == "ImageLocality",
        keys_alike=keys_alike,
        idle=_IDLE_TESTS.get((plugin, kind)),
    )


def _fn(
    name: str,
    params: tuple[Param, ...],
    returns: Type,
    impl: Callable[..., Value],
    doc: str,
    cost: int = 10,
    needs_context: bool = False,
    varies_per_node: bool = False,
    batch: Callable[..., Column] | None = None,
    cluster_key: Callable[[Any], Hashable] | None = None,
    pod_key: Callable[[Any], Hashable] | None = None,
    stable_only: Callable[[Any], bool] | None = None,
    pod_key_alike: bool = False,
    narrowed_key: tuple[int, Callable[[Any, frozenset[Value]], Hashable]] | None = None,
    looked_at: Callable[[Any, Sequence[Any]], Sequence[int] | None] | None = None,
) -> Function:
    return Function(
        name,
        params,
        returns,
        impl,
        doc,
        cost,
        needs_context,
        varies_per_node,
        batch,
        cluster_key,
        pod_key,
        stable_only,
        pod_key_alike,
        keys_alike=cluster_key is not None and _keys_alike(cluster_key, stable_only),
        narrowed_key=narrowed_key,
        looked_at=looked_at,
    )


FUNCTIONS: tuple[Function, ...] = (
    _fn(
        "considered",
        _POD_NODE,
        BOOL,
        considered,
        "False when kube-scheduler would not filter this node at all: NodeAffinity's PreFilter "
        "left it out (a matchFields on metadata.name names other nodes).",
        needs_context=True,
        varies_per_node=True,
        batch=considered_batch,
        cluster_key=_node_only,
        pod_key=_considered_key,
        stable_only=_always,  # the node's name
        pod_key_alike=True,  # NodeAffinity's PreFilter reads the pod alone
        looked_at=looked_at,  # false at every node the PreFilter does not name
    ),
    _kube(
        "taint_toleration_reasons",
        "TaintToleration",
        "filter",
        "kube-scheduler's TaintToleration filter: the first NoSchedule/NoExecute taint the pod does not tolerate.",
    ),
    _kube(
        "node_affinity_reasons",
        "NodeAffinity",
        "filter",
        "kube-scheduler's NodeAffinity filter: nodeSelector and required node affinity.",
    ),
    _kube(
        "node_ports_reasons",
        "NodePorts",
        "filter",
        "kube-scheduler's NodePorts filter: host ports already in use on the node.",
    ),
    _kube(
        "resources_fit_reasons",
        "NodeResourcesFit",
        "filter",
        "kube-scheduler's NodeResourcesFit filter: Too many pods, Insufficient <resource>.",
    ),
    _kube(
        "topology_spread_reasons",
        "PodTopologySpread",
        "filter",
        "kube-scheduler's PodTopologySpread filter (DoNotSchedule constraints).",
    ),
    _kube(
        "inter_pod_affinity_reasons",
        "InterPodAffinity",
        "filter",
        "kube-scheduler's InterPodAffinity filter, with existing pods' anti-affinity (symmetry).",
    ),
    _kube(
        "intolerable_taint_count",
        "TaintToleration",
        "score",
        "PreferNoSchedule taints the pod does not tolerate (normalise with reverse).",
    ),
    _kube(
        "preferred_node_affinity_weight",
        "NodeAffinity",
        "score",
        "Sum of the weights of the preferred node affinity terms the node matches (normalise with max).",
    ),
    _kube(
        "topology_spread_score",
        "PodTopologySpread",
        "score",
        "PodTopologySpread's raw score; null for nodes it ignores (normalise with pod_topology_spread).",
    ),
    _kube(
        "inter_pod_affinity_weight",
        "InterPodAffinity",
        "score",
        "InterPodAffinity's raw score, existing pods' terms included (normalise with minmax).",
    ),
    _kube(
        "least_allocated_score",
        "NodeResourcesFit",
        "score",
        "NodeResourcesFit LeastAllocated over cpu and memory, 0–100.",
    ),
    _kube(
        "balanced_allocation_score",
        "NodeResourcesBalancedAllocation",
        "score",
        "NodeResourcesBalancedAllocation, 0–100.",
    ),
    _kube("image_locality_score", "ImageLocality", "score", "ImageLocality, 0–100."),
    _fn(
        "tolerated",
        (Param("taint", TAINT), Param("tolerations", ListType(TOLERATION, bound=64))),
        BOOL,
        tolerated,
        "Whether any of the tolerations tolerates the taint (Kubernetes' matching rules).",
        cost=64,
    ),
    _fn(
        "domain_pod_count",
        (*_POD_NODE, Param("key", STRING), Param("labels", MapType(STRING, STRING, bound=16))),
        INT,
        domain_pod_count,
        "Pods of the pod's namespace that carry all the labels, on the nodes that share this node's "
        "value of label key (its topology domain); 0 when the node lacks the label.",
        cost=100,
        needs_context=True,
        varies_per_node=True,
        cluster_key=domain_pod_count_key,
        batch=domain_pod_count_batch,
        pod_key=domain_pod_count_pod_key,
        narrowed_key=(2, domain_pod_count_key_by),
    ),
)

FUNCTIONS += GPU_FUNCTIONS
FUNCTIONS += STORAGE_FUNCTIONS
