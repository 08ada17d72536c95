"""VolumeRestrictions: in-tree disks a node can mount once, and ReadWriteOncePod claims.

A GCE PD, an AWS EBS volume, an RBD image or an iSCSI IQN already mounted by a pod of the node
conflicts with the pod's own (``model.volumes.disks_conflict``). A ReadWriteOncePod claim of the
pod that any placed pod already uses rejects every node; preemption may free it. PreFilter
reads every claim the pod names, and rejects the pod when one is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin, PreFilterResult
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import READ_WRITE_ONCE_POD
from policyengine.model.volume_binder import not_found
from policyengine.model.volumes import EXCLUSIVE_DISKS, PVC, Volume, disks_conflict

NAME = "VolumeRestrictions"
DISK_CONFLICT = "node(s) had no available disk"
RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)


@dataclass(frozen=True, slots=True)
class FilterState:
    skip: bool
    disks: tuple[Volume, ...] = ()
    rwop_in_use: tuple[str, ...] = ()  # the pod's ReadWriteOncePod claims some pod uses
    prefilter: PreFilterResult | None = None


SKIP = FilterState(skip=True)


def needs_check(pod: Pod) -> bool:
    return any(v.kind == PVC or v.kind in EXCLUSIVE_DISKS for v in pod.volumes)


def claims_in_use(snapshot: ClusterSnapshot, namespace: str, names: set[str]) -> set[str]:
    """Which of the claims ``namespace/<name>`` a placed pod uses through a claim volume."""
    used: set[str] = set()
    for pod in snapshot.pods():
        if pod.namespace != namespace or not pod.volumes:
            continue
        for v in pod.volumes:
            if v.kind == PVC and v.handle in names:
                used.add(v.handle)
    return used


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    if not needs_check(pod) or not snapshot.storage.known:
        return SKIP
    storage = snapshot.storage
    rwop: set[str] = set()
    for v in pod.volumes:
        if v.kind != PVC:
            continue
        claim = storage.claim(pod.namespace, v.handle)
        if claim is None:
            return FilterState(False, prefilter=PreFilterResult(rejection=not_found(v.handle)))
        if READ_WRITE_ONCE_POD in claim.access_modes:
            rwop.add(v.handle)
    in_use = claims_in_use(snapshot, pod.namespace, rwop) if rwop else set()
    disks = tuple(v for v in pod.volumes if v.kind in EXCLUSIVE_DISKS)
    return FilterState(False, disks, tuple(sorted(in_use)))


def prefilter_result(state: FilterState) -> PreFilterResult | None:
    return state.prefilter


def conflicting_disk(state: FilterState, node: NodeInfo) -> tuple[Volume, str] | None:
    """The pod's disk and the placed pod (``namespace/name``) whose disk conflicts with it."""
    for mine in state.disks:
        for info in node.pods:
            for theirs in info.pod.volumes:
                if disks_conflict(mine, theirs):
                    return mine, info.key
    return None


def passes_everywhere(state: FilterState) -> bool:
    """Whether the filter passes every node: no disk of the pod's to conflict, no
    ReadWriteOncePod claim in use."""
    return state.skip or (not state.disks and not state.rwop_in_use)


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.skip:
        return []
    if state.disks and conflicting_disk(state, node) is not None:
        return [DISK_CONFLICT]
    if state.rwop_in_use:
        return [RWOP_CONFLICT]
    return []


PLUGIN = Plugin(
    NAME,
    "volume_restrictions",
    None,
    0,
    prepare_filter=prepare_filter,
    filter=filter,
    prefilter_result=prefilter_result,
    resolvable_reasons=frozenset({DISK_CONFLICT, RWOP_CONFLICT}),
)
