"""The storage builtins: kube-scheduler's four storage plugins as filter functions.

``volume_restrictions_reasons``, ``node_volume_limits_reasons``, ``volume_binding_reasons`` and
``volume_zone_reasons`` run the model's plugins (``model.plugins.volume_*``,
``node_volume_limits``) over one pod's cycle. Three of them may reject the pod outright in
their PreFilter (a claim missing or being deleted, an unbound Immediate claim, ...): then no
node is filtered at all, and the rejecting builtin gives its message at every node while every
other filter builtin, and ``considered(pod, node)``, steps aside (``pod_rejection``), so that
each node's first rejection is that message, as kube-scheduler reports it.

A pod without volumes pays nothing: each builtin is idle for it (its rule leaves the cycle),
and its keys are constants; so is every pod when the snapshot does not know the cluster's
storage (``StorageObjects.known``).

A pod whose claims all wait for their first consumer untouched (``_fresh_shapes``: no volume
named, no node selected, no ReadWriteOncePod mode, no claim named twice, none attached anywhere
yet) — a StatefulSet's replica — gets what the plugins read of each claim as its key, not the
claim's name: its shape (class, size, modes, selector, annotations). Pods alike in it share the
builtins' results from cycle to cycle, as pods of one template share every other rule's. What
those results read beyond the node's ``NodeInfo`` is in the cluster key: the classes, CSI
drivers and capacities (by identity: an assumed pod replaces none of them); for NodeVolumeLimits
each row's group (``volume_rows``); for VolumeBinding, when one claim has volumes of its class
to be matched to, those pinned to no node and, per row, whether one pinned to its hostname
alone is found there (``_candidates_key``). So a placement elsewhere, which changes another
pod's claim and takes a volume of another node, leaves them standing. A pod whose volumes these
keys cannot describe (two claims with candidates of one class, a volume naming its claim, a candidate
pinned by more than a hostname) is keyed by its name and the snapshot, so its results hold for
the one snapshot only (claims and volumes change with every assumed pod) and are never carried
to another.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from policyengine.lang.copied import Copied
from policyengine.lang.schema import Function, Param
from policyengine.lang.types import STRING, ListType
from policyengine.model.objects import Pod
from policyengine.model.plugins import PLUGINS_BY_NAME, Plugin
from policyengine.model.plugins import node_volume_limits as limits
from policyengine.model.plugins import volume_binding as binding
from policyengine.model.plugins import volume_restrictions as restrictions
from policyengine.model.plugins import volume_zone as zone
from policyengine.model.storage import READ_WRITE_ONCE_POD, StorageObjects
from policyengine.model.volume_binder import claim_problem
from policyengine.model.volumes import claim_name
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.node_rows import node_infos
from policyengine.schedlib.records import NODE, POD
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.storage_batch import FORMS, PASS, pinned_rows
from policyengine.schedlib.views import NodeView, PodView
from policyengine.schedlib.volume_rows import limit_row_key

REASONS = ListType(STRING, bound=16)

# kube-scheduler's order: a PreFilter rejection by the first of them is the one reported.
VOLUME_PLUGINS = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone")

_NEEDS: dict[str, Callable[[Pod], bool]] = {
    "VolumeRestrictions": restrictions.needs_check,
    "NodeVolumeLimits": limits.needs_check,
    "VolumeBinding": binding.needs_check,
    "VolumeZone": lambda pod: any(v.kind == "persistentVolumeClaim" for v in pod.volumes),
}
_IDLE = "idle"
# The plugins that can tell from their state alone that they pass every node.
_PASSES_EVERYWHERE: dict[str, Callable[[Any], bool]] = {
    "VolumeRestrictions": restrictions.passes_everywhere,
    "VolumeZone": zone.passes_everywhere,
}
_REJECTION = object()  # the prepared key of the pod's PreFilter rejection


def _state(ctx: CycleContext, plugin: Plugin) -> Any:
    """The plugin's PreFilter state for this cycle (it reads the snapshot's storage)."""
    prepare = plugin.prepare_filter
    assert prepare is not None
    return ctx.prepared(
        (plugin.name, "filter"), lambda: prepare(ctx.pod.pod, ctx.snapshot, ctx.config)
    )


def _find_rejection(ctx: CycleContext) -> tuple[str, str] | None:
    pod = ctx.pod.pod
    for name in VOLUME_PLUGINS:
        if not _NEEDS[name](pod):
            continue
        plugin = PLUGINS_BY_NAME[name]
        if plugin.prefilter_result is None:
            continue
        result = plugin.prefilter_result(_state(ctx, plugin))
        if result is not None and result.rejection is not None:
            return name, result.rejection
    return None


def pod_rejection(ctx: CycleContext) -> tuple[str, str] | None:
    """``(plugin, message)`` when a storage plugin's PreFilter rejects the pod outright (no
    node is then filtered); None otherwise, at once for a pod without volumes."""
    if not ctx.pod.pod.uses_storage or not ctx.snapshot.storage.known:
        return None
    return ctx.prepared(_REJECTION, lambda: _find_rejection(ctx))


def volume_binding_node_names(ctx: CycleContext) -> frozenset[str] | None:
    """The only nodes kube-scheduler filters when the pod's bound local volumes pin it
    (VolumeBinding's PreFilter result); None when they do not restrict the nodes, or when a
    storage plugin rejects the pod whole (``pod_rejection``)."""
    pod = ctx.pod.pod
    if not pod.uses_storage or not binding.needs_check(pod) or not ctx.snapshot.storage.known:
        return None
    if pod_rejection(ctx) is not None:
        return None
    result = binding.prefilter_result(_state(ctx, PLUGINS_BY_NAME["VolumeBinding"]))
    return None if result is None else result.node_names


def _outside(ctx: CycleContext, plugin_name: str) -> frozenset[str] | None:
    """The nodes a PreFilter keeps (None: all), which the plugin steps aside for: those
    NodeAffinity's keeps (as ``schedlib.functions`` does), and for the other storage plugins
    those VolumeBinding's keeps (VolumeBinding itself rejects the rest)."""
    affinity = PLUGINS_BY_NAME["NodeAffinity"]
    assert affinity.prepare_filter is not None and affinity.prefilter_result is not None
    state = ctx.prepared(
        ("NodeAffinity", "filter"),
        lambda: affinity.prepare_filter(ctx.pod.pod, ctx.snapshot, ctx.config),  # type: ignore[misc]
        True,
    )
    result = affinity.prefilter_result(state)
    names = None if result is None else result.node_names
    if plugin_name != "VolumeBinding":
        pinned = volume_binding_node_names(ctx)
        if pinned is not None:
            names = pinned if names is None else names & pinned
    return names


_INFOS = object()  # the prepared key of the node lists' NodeInfos


def _infos(ctx: CycleContext, nodes: Sequence[NodeView]) -> list[Any]:
    """The ``NodeInfo`` of each of ``nodes``, one list per list of views and cycle: the
    filters of a cycle mostly read one list of views, and one list lets ``node_rows.rows_at``
    find its rows once."""
    kept: dict[int, tuple[Sequence[NodeView], list[Any]]] = ctx.prepared(_INFOS, dict)
    found = kept.get(id(nodes))
    if found is not None and found[0] is nodes:
        return found[1]
    infos = node_infos(ctx, nodes)
    kept[id(nodes)] = (nodes, infos)  # holding ``nodes`` keeps its id from being reused
    return infos


def _alike(reasons: list[str], count: int) -> list[list[str]]:
    """``reasons`` at each of ``count`` nodes, told once (``lang.copied``)."""
    return Copied([reasons], np.zeros(count, np.int64))  # type: ignore[return-value]


def _idle_test(plugin_name: str) -> Callable[[CycleContext], bool]:
    needs = _NEEDS[plugin_name]

    def idle(ctx: CycleContext) -> bool:
        pod = ctx.pod.pod
        return not pod.uses_storage or not needs(pod) or not ctx.snapshot.storage.known

    return idle


_SHAPES = object()  # the prepared key of the pod's fresh claims' shapes
_FRESH = "fresh"  # tags a key by claim shapes


def _fresh_shapes(ctx: CycleContext) -> tuple[Hashable, ...] | None:
    """The pod's volumes, each claim told by its shape, when every claim is fresh (module
    docstring); None when one is not, or a storage plugin rejects the pod."""

    def shapes() -> tuple[Hashable, ...] | None:
        if pod_rejection(ctx) is not None:
            return None
        return _shapes_of(ctx.pod.pod, ctx.snapshot.storage)

    return ctx.prepared(_SHAPES, shapes)


def _shapes_of(pod: Pod, storage: StorageObjects) -> tuple[Hashable, ...] | None:
    if claim_problem(pod, storage) is not None:
        return None
    out: list[Hashable] = []
    named: set[str] = set()
    for volume in pod.volumes:
        if not volume.uses_claim:
            out.append(volume)
            continue
        name = claim_name(pod.name, volume)
        claim = storage.claim(pod.namespace, name)
        if (
            claim is None
            or name in named
            or claim.volume_name
            or claim.selected_node is not None
            or READ_WRITE_ONCE_POD in claim.access_modes
            or not storage.is_delay_binding(claim)
        ):
            return None
        named.add(name)
        # The request as written, not as volume matching rounds it (``volume_binder``'s
        # shape): capacity is not checked for a claim that asks for no size at all.
        out.append(
            (
                volume.kind,
                volume.read_only,
                claim.storage_class,
                claim.request,
                claim.volume_mode,
                claim.selector,
                frozenset(claim.access_modes),
                claim.annotations,
            )
        )
    return tuple(out)


def _fresh_key(ctx: CycleContext, plugin_name: str) -> Hashable | None:
    """The plugin's cluster key for a pod keyed by its claims' shapes (``_fresh_shapes``):
    what its results read of the cluster beyond each node's ``NodeInfo``; None when the pod is
    not (or, for NodeVolumeLimits, one of its volumes is attached somewhere already). Worked
    out once a cycle: the pod key and the cluster key both ask."""
    return ctx.prepared((plugin_name, _FRESH), lambda: _cluster_part(ctx, plugin_name))


def _cluster_part(ctx: CycleContext, plugin_name: str) -> Hashable | None:
    if _fresh_shapes(ctx) is None:
        return None
    storage = ctx.snapshot.storage
    if plugin_name == "VolumeBinding":
        # Provisioning: the classes, whether their drivers track capacity, and the capacities.
        whole = (
            _FRESH,
            _Same(storage.classes),
            _Same(storage.csi_drivers),
            _Same(storage.capacities),
        )
        candidates = _candidates_key(ctx)
        if candidates is _NOT_SHARED:
            return None
        if candidates is None:
            return whole
        anywhere, rows = candidates
        return RowKeyed((*whole, anywhere), rows)
    if plugin_name == "NodeVolumeLimits":
        state = _state(ctx, PLUGINS_BY_NAME[plugin_name])
        limit_rows = limit_row_key(ctx.snapshot, state)
        if limit_rows is None:
            return None
        # The claims' drivers are their classes' provisioners.
        return RowKeyed((_FRESH, limit_rows.whole, _Same(storage.classes)), limit_rows.rows)
    # VolumeRestrictions reads the node's pods' disks, VolumeZone only bound volumes.
    return _FRESH, plugin_name


_NOT_SHARED = object()  # a pod's volumes the keys by claim shape cannot describe


def _candidates_key(ctx: CycleContext) -> Any:
    """What VolumeBinding's answer reads of the volumes the claims may be matched to: None
    when no claim's class has any (all are provisioned); for claims that have, each of a
    class of its own, the candidates pinned to no host and, per row, whether one pinned to
    the node's hostname alone is found there (``storage_batch.pinned_rows``);
    ``_NOT_SHARED`` when two claims of one class have candidates (they take them from each
    other), a volume names a claim, or a candidate reads more of a node than its hostname."""
    state = _state(ctx, PLUGINS_BY_NAME["VolumeBinding"])
    storage = ctx.snapshot.storage
    matched = [c for c in state.claims.to_match if storage.pvs_by_class.get(c.storage_class)]
    if not matched:
        return None
    if len({c.storage_class for c in matched}) < len(matched):
        return _NOT_SHARED
    anywhere: list[Any] = []
    columns: list[np.ndarray] = []
    for claim in matched:
        matcher = state.matchers.get(claim.key)
        if matcher is None:
            continue  # an invalid selector: no volume is matched to it
        if matcher.prebound:
            return _NOT_SHARED
        rows = pinned_rows(ctx.snapshot, matcher)
        if rows is None:
            return _NOT_SHARED
        anywhere.append(matcher.anywhere)
        columns.append(rows)
    if not columns:
        return None
    return tuple(anywhere), columns[0] if len(columns) == 1 else np.stack(columns, axis=1)


class _Same:
    """A cluster key equal only to one of the very same object (a snapshot, the storage's
    classes), which it holds so that no other object takes its id."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _builtin(plugin_name: str, doc: str, name: str) -> Function:
    plugin = PLUGINS_BY_NAME[plugin_name]
    run = plugin.filter
    assert run is not None
    idle = _idle_test(plugin_name)
    everywhere = _PASSES_EVERYWHERE.get(plugin_name)
    form = FORMS.get(plugin_name)

    def reasons(ctx: CycleContext, everything: Sequence[NodeView]) -> list[list[str]]:
        nodes = everything
        if idle(ctx):
            return _alike(PASS, len(nodes))
        rejection = pod_rejection(ctx)
        if rejection is not None:
            return _alike([rejection[1]] if rejection[0] == plugin_name else PASS, len(nodes))
        state = _state(ctx, plugin)
        if everywhere is not None and everywhere(state):
            return _alike(PASS, len(nodes))
        kept = _outside(ctx, plugin_name)
        if kept is not None:
            nodes = [view for view in nodes if view.node.name in kept]
        infos = _infos(ctx, nodes) if kept is None else [view.info for view in nodes]
        if form is not None:
            found = form(state, infos, ctx.snapshot)
        else:
            found = [run(state, i) for i in infos]
        if kept is None:
            return found
        # The nodes a PreFilter left out pass (``considered`` steps aside for NodeAffinity's).
        by_name = dict(zip((i.node.name for i in infos), found, strict=True))
        return [by_name.get(view.node.name, PASS) for view in everything]

    def impl(ctx: CycleContext, pod: PodView, node: NodeView) -> list[str]:
        return reasons(ctx, (node,))[0]

    def batch(ctx: CycleContext, pod: PodView, nodes: Sequence[NodeView]) -> list[list[str]]:
        return reasons(ctx, nodes)

    def cluster_key(ctx: CycleContext) -> Hashable:
        if idle(ctx):
            return _IDLE
        fresh = _fresh_key(ctx, plugin_name)
        return _Same(ctx.snapshot) if fresh is None else fresh

    def pod_key(ctx: CycleContext) -> Hashable:
        if idle(ctx):
            return _IDLE
        if _fresh_key(ctx, plugin_name) is not None:
            return _FRESH, _fresh_shapes(ctx), _outside(ctx, plugin_name)
        pod = ctx.pod.pod
        return pod.namespace, pod.name, pod.uid, pod.volumes, _outside(ctx, plugin_name)

    return Function(
        name,
        (Param("pod", POD), Param("node", NODE)),
        REASONS,
        impl,
        doc,
        cost=50,
        needs_context=True,
        varies_per_node=True,
        batch=batch,
        cluster_key=cluster_key,
        pod_key=pod_key,
        stable_only=idle,
        idle=idle,
    )


STORAGE_FUNCTIONS: tuple[Function, ...] = (
    _builtin(
        "VolumeRestrictions",
        "kube-scheduler's VolumeRestrictions filter: in-tree disks (GCE PD, EBS, RBD, iSCSI) "
        "already mounted on the node, and ReadWriteOncePod claims in use.",
        "volume_restrictions_reasons",
    ),
    _builtin(
        "NodeVolumeLimits",
        "kube-scheduler's NodeVolumeLimits (CSI) filter: each driver's attach limit, from the "
        "CSINode or the node's allocatable, against the node's and the pod's unique volumes.",
        "node_volume_limits_reasons",
    ),
    _builtin(
        "VolumeBinding",
        "kube-scheduler's VolumeBinding filter: bound volumes' node affinity, waiting claims "
        "matched to available volumes or provisioned where the class allows; rejects the pod "
        "whose claims are missing, being deleted or unbound Immediate.",
        "volume_binding_reasons",
    ),
    _builtin(
        "VolumeZone",
        "kube-scheduler's VolumeZone filter: zone and region labels of bound volumes against "
        "the node's.",
        "volume_zone_reasons",
    ),
)
