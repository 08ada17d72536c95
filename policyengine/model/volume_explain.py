"""Why a node cannot take a pod's volumes, in words with the values: which claim, which volume.

The storage plugins give kube-scheduler's reasons ("node(s) had volume node affinity
conflict"), which name neither the claim nor the volume. ``volume_findings`` looks again at
one node for ``explain``: the volume whose node affinity or zone excludes the node (with the
node's labels), the claim that finds no volume (and what each candidate volume lacks) or
cannot be provisioned there, the driver whose attach limit is reached (with the counts), the
disk or ReadWriteOncePod claim already in use.
"""

from __future__ import annotations

from collections.abc import Mapping

from policyengine.model.node_selectors import NodeSelector
from policyengine.model.objects import Pod
from policyengine.model.plugins import node_volume_limits as limits
from policyengine.model.plugins import volume_binding as binding
from policyengine.model.plugins import volume_restrictions as restrictions
from policyengine.model.plugins import volume_zone as zone
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import (
    VOLUME_AVAILABLE,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageObjects,
    quantity_value,
)
from policyengine.model.storage_migration import (
    TranslationError,
    binding_migrated,
    translated_affinity,
)
from policyengine.model.volume_binder import find_matching_volume, has_capacity


def _affinity(selector: NodeSelector | None) -> str:
    if selector is None:
        return "any node"
    terms = [
        " and ".join(f"{r.key} {r.operator} [{' '.join(r.values)}]" for r in t.match_expressions)
        or "nothing"
        for t in selector.terms
    ]
    return " or ".join(terms) or "nothing"


def _labels_for(selector: NodeSelector | None, labels: Mapping[str, str]) -> str:
    keys = sorted(
        {r.key for t in (selector.terms if selector else ()) for r in t.match_expressions}
    )
    shown = [f"{k}={labels[k]}" if k in labels else f"no {k}" for k in keys]
    return ", ".join(shown) or "no such labels"


def _size(value: int) -> str:
    for unit, factor in (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2)):
        if value >= factor and value % factor == 0:
            return f"{value // factor}{unit}"
    return f"{value} bytes"


def _why_not(claim: PersistentVolumeClaim, pv: PersistentVolume, labels: Mapping[str, str]) -> str:
    """What keeps one volume of the claim's class from it on the node."""
    if pv.claim_ref is not None and not pv.bound_to(claim):
        return f"{pv.name} is bound to {pv.claim_ref.namespace}/{pv.claim_ref.name}"
    if pv.deletion_timestamp is not None:
        return f"{pv.name} is being deleted"
    if quantity_value(pv.capacity) < quantity_value(claim.request):
        return f"{pv.name} holds {_size(quantity_value(pv.capacity))}"
    if pv.volume_mode != claim.volume_mode:
        return f"{pv.name} is {pv.volume_mode}"
    if pv.phase != VOLUME_AVAILABLE and not pv.bound_to(claim):
        return f"{pv.name} is {pv.phase or 'in no phase'}"
    if not set(claim.access_modes) <= set(pv.access_modes):
        return f"{pv.name} offers {' '.join(pv.access_modes) or 'no access modes'}"
    if claim.selector is not None and not claim.selector.matches(pv.labels):
        return f"{pv.name} does not match the claim's selector"
    if not pv.reaches(labels):
        return f"{pv.name} reaches {_affinity(pv.node_affinity)}"
    return f"{pv.name} is chosen for another claim of the pod"


def _bound(claim: str, pv: PersistentVolume, node: NodeInfo, storage: StorageObjects) -> list[str]:
    """Why a bound claim's volume does not reach the node: its node affinity as written, or
    as its CSI driver reads it where the node migrated its in-tree plugin."""
    labels = node.node.labels
    csi_node = storage.csi_nodes.get(node.name)
    try:
        if pv.reaches_on(labels, csi_node):
            return []
    except TranslationError as problem:
        return [f"claim {claim}: volume {pv.name} does not translate to CSI: {problem}"]
    affinity = pv.node_affinity
    read_as = ""
    plugin = pv.in_tree
    if plugin is not None and binding_migrated(csi_node, plugin):
        affinity = translated_affinity(pv, plugin)
        read_as = f" (as {plugin.driver} reads it)"
    return [
        f"claim {claim}: volume {pv.name}{read_as} reaches {_affinity(affinity)}; "
        f"node {node.name} has {_labels_for(affinity, labels)}"
    ]


def _binding(state: binding.FilterState, node: NodeInfo, storage: StorageObjects) -> list[str]:
    labels = node.node.labels
    out: list[str] = []
    if not binding.filter(state, node):
        return out
    if state.eligible is not None and node.name not in state.eligible:
        out.append(
            f"bound local volumes pin the pod to {' '.join(sorted(state.eligible)) or 'no node'}"
        )
        return out
    for claim in state.claims.bound:
        pv = storage.pvs.get(claim.volume_name)
        if pv is None:
            out.append(f"claim {claim.name}: its volume {claim.volume_name} does not exist")
        else:
            out.extend(_bound(claim.name, pv, node, storage))
    for claim in state.claims.delayed:
        selected = claim.selected_node
        if selected is not None:
            if selected != node.name:
                out.append(f"claim {claim.name}: being provisioned on node {selected}")
            continue
        candidates = storage.pvs_by_class.get(claim.storage_class, ())
        if find_matching_volume(claim, candidates, labels, set()) is not None:
            continue
        cls = storage.classes.get(claim.storage_class)
        wanted = f"{_size(quantity_value(claim.request))} of class {claim.storage_class}"
        lacks = "; ".join(_why_not(claim, pv, labels) for pv in candidates) or "none exist"
        if cls is None or not cls.can_provision:
            provisioner = cls.provisioner if cls is not None else "no class"
            out.append(
                f"claim {claim.name} ({wanted}): no available volume fits ({lacks}), and the "
                f"class cannot provision one (provisioner {provisioner or 'none'})"
            )
        elif not cls.allows(labels):
            allowed = " or ".join(
                " and ".join(f"{k} in [{' '.join(sorted(v))}]" for k, v in t.requirements)
                for t in cls.allowed_topologies
            )
            out.append(
                f"claim {claim.name} ({wanted}): no available volume fits ({lacks}), and the "
                f"class provisions only where {allowed}"
            )
        elif not has_capacity(storage, claim, labels):
            out.append(
                f"claim {claim.name} ({wanted}): no storage capacity of driver "
                f"{cls.provisioner} reaching node {node.name} holds it"
            )
    return out


def volume_findings(
    pod: Pod, snapshot: ClusterSnapshot, node_name: str, config: SchedulerConfig = DEFAULT_CONFIG
) -> tuple[str, ...]:
    """Each storage plugin's objection to ``node_name`` for ``pod``, with the claim, the
    volume and the values; empty when they have none (or the pod has no volumes)."""
    if not pod.uses_storage or node_name not in snapshot:
        return ()
    node = snapshot.node(node_name)
    storage = snapshot.storage
    out: list[str] = []
    r_state = restrictions.prepare_filter(pod, snapshot, config)
    if not r_state.skip and r_state.prefilter is None:
        found = restrictions.conflicting_disk(r_state, node)
        if found is not None:
            disk, owner = found
            out.append(f"{disk.kind} {disk.handle} is mounted by pod {owner} on this node")
        for claim in r_state.rwop_in_use:
            out.append(f"claim {claim} is ReadWriteOncePod and a placed pod uses it")
    l_state = limits.prepare_filter(pod, snapshot, config)
    exceeded = limits.exceeded(l_state, node)
    if isinstance(exceeded, limits.Exceeded):
        out.append(
            f"{exceeded.key}: {exceeded.attached} attached + {exceeded.new} new volume(s) "
            f"> limit {exceeded.limit}"
        )
    b_state = binding.prepare_filter(pod, snapshot, config)
    if not b_state.skip and b_state.storage is not None:
        out.extend(_binding(b_state, node, storage))
    z_state = zone.prepare_filter(pod, snapshot, config)
    if not z_state.skip:
        conflict = zone.conflict(z_state, node)
        if conflict is not None:
            read, has = zone.node_value(z_state, conflict.key, node.node.labels)
            out.append(
                f"volume {conflict.volume} is in {conflict.key} [{' '.join(sorted(conflict.values))}]; "
                f"node {node.name} has {f'{read}={has}' if has is not None else f'no {read}'}"
            )
    return tuple(out)
