"""VolumeZone: the zone and region labels of the pod's bound volumes against the node's.

A bound volume labelled ``topology.kubernetes.io/zone`` (or region, or their beta
``failure-domain.beta.kubernetes.io`` forms; several zones joined by ``__``) reaches only nodes
whose label of that key is one of the values; since v1.29 a beta label on the volume is read
against the node's GA label of the same meaning when the node lacks the beta one (v1.28 did
not: ``SchedulerConfig.volume_zone_beta_as_ga``). A node with none of the four labels passes.
Claims waiting for their first consumer have no volume yet and are VolumeBinding's; a label
that does not parse is ignored. In-tree volumes (GCE PD, EBS, ...) are read by their labels
like any other: VolumeZone translates nothing to CSI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin, PreFilterResult
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import WAIT_FOR_FIRST_CONSUMER
from policyengine.model.volume_binder import not_found
from policyengine.model.volumes import PVC

NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}


@dataclass(frozen=True, slots=True)
class VolumeTopology:
    volume: str  # the PersistentVolume's name
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class FilterState:
    skip: bool
    topologies: tuple[VolumeTopology, ...] = ()
    prefilter: PreFilterResult | None = None
    beta_as_ga: bool = True  # ``SchedulerConfig.volume_zone_beta_as_ga``


SKIP = FilterState(skip=True)


def label_zones(value: str) -> frozenset[str] | None:
    """The zones of a ``__``-joined label value; None when one of them is empty."""
    zones = [z.strip() for z in value.split("__")]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


def _rejected(message: str) -> FilterState:
    return FilterState(False, prefilter=PreFilterResult(rejection=message))


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    claims = [v.handle for v in pod.volumes if v.kind == PVC]
    if not claims or not snapshot.storage.known:
        return SKIP
    storage = snapshot.storage
    topologies: list[VolumeTopology] = []
    for name in claims:
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            return _rejected(not_found(name))
        if not claim.volume_name:
            if not claim.storage_class:
                return _rejected("PersistentVolumeClaim had no pv name and storageClass name")
            cls = storage.classes.get(claim.storage_class)
            if cls is None:
                return _rejected(f'storageclass.storage.k8s.io "{claim.storage_class}" not found')
            if cls.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                continue
            return _rejected("PersistentVolume had no name")
        pv = storage.pvs.get(claim.volume_name)
        if pv is None:
            return _rejected(f'persistentvolume "{claim.volume_name}" not found')
        for key in TOPOLOGY_LABELS:
            value = pv.labels.get(key)
            if value is None:
                continue
            zones = label_zones(value)
            if zones is not None:
                topologies.append(VolumeTopology(pv.name, key, zones))
    return FilterState(False, tuple(topologies), beta_as_ga=config.volume_zone_beta_as_ga)


def prefilter_result(state: FilterState) -> PreFilterResult | None:
    return state.prefilter


def node_value(state: FilterState, key: str, labels: Mapping[str, str]) -> tuple[str, str | None]:
    """The node label a volume's ``key`` is read against, and its value: the key itself, or,
    for a beta key the node lacks, the GA one (never the other way)."""
    value = labels.get(key)
    if value is None and state.beta_as_ga and key in _GA:
        return _GA[key], labels.get(_GA[key])
    return key, value


def conflict(state: FilterState, node: NodeInfo) -> VolumeTopology | None:
    """The first volume label the node does not satisfy, or None."""
    labels = node.node.labels
    if not state.topologies or not any(k in labels for k in TOPOLOGY_LABELS):
        return None
    for t in state.topologies:
        _, value = node_value(state, t.key, labels)
        if value is None or value not in t.values:
            return t
    return None


def passes_everywhere(state: FilterState) -> bool:
    """Whether the filter passes every node: no bound volume has a zone or region label."""
    return state.skip or (state.prefilter is None and not state.topologies)


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.skip:
        return []
    return [REASON] if conflict(state, node) is not None else []


PLUGIN = Plugin(
    NAME,
    "volume_zone",
    None,
    0,
    prepare_filter=prepare_filter,
    filter=filter,
    prefilter_result=prefilter_result,
)
