"""In-tree volumes seen through CSI migration, as kube-scheduler's storage plugins see them.

In current Kubernetes the in-tree block-volume plugins are migrated to CSI drivers: a
``gcePersistentDisk``, ``awsElasticBlockStore``, ``azureDisk``, ``cinder`` or
``portworxVolume`` source (in a PersistentVolume, or inline in a pod) stands for a volume of
the driver it translates to (``csi-translation-lib``). Two plugins read the translation:

- NodeVolumeLimits counts such a volume against the driver's limit on a node, under the
  translated volume handle (so an in-tree PV and a CSI PV of one disk count once), whenever
  the node has a CSINode; Portworx, whose migration went GA last, also needs the plugin
  named in the CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` annotation (as
  every plugin did in older releases: ``limits_migrated``).
- VolumeBinding checks a bound in-tree PV's node affinity as translated (the zone labels or
  zone requirements become the driver's topology key) on a node whose CSINode names the
  plugin as migrated; elsewhere it reads the PV as written (``binding_migrated``).

VolumeZone reads PV labels and translates nothing. A translation that fails (a GCE PD
labelled with zones of several regions, a malformed EBS volume ID) raises
``TranslationError`` with kube's message; each plugin treats it as kube-scheduler does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from policyengine.model.node_selectors import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)


class PersistentVolume(Protocol):
    """What the translation reads of a ``model.storage.PersistentVolume``."""

    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def node_affinity(self) -> NodeSelector | None: ...
    @property
    def csi_handle(self) -> str: ...


class CSINode(Protocol):
    """What the translation reads of a ``model.storage.CSINode``."""

    @property
    def migrated_plugins(self) -> frozenset[str]: ...


GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
CINDER_PLUGIN = "kubernetes.io/cinder"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
MULTI_ZONE_DELIMITER = "__"
UNSPECIFIED = "UNSPECIFIED"


class TranslationError(Exception):
    """An in-tree volume the translation library cannot express as a CSI volume."""


@dataclass(frozen=True, slots=True)
class InTreePlugin:
    """One migrated in-tree plugin: its source key, its plugin (and provisioner) name, the
    CSI driver it translates to, the driver's zonal topology key (empty: the translation
    keeps the node affinity as written), and whether its migration still needs the node's
    CSINode to name it for the volume limits."""

    source: str
    plugin: str
    driver: str
    topology_key: str = ""
    limits_need_annotation: bool = False


PLUGINS: Mapping[str, InTreePlugin] = {
    p.source: p
    for p in (
        InTreePlugin(
            "gcePersistentDisk", GCE_PD_PLUGIN, "pd.csi.storage.gke.io", "topology.gke.io/zone"
        ),
        InTreePlugin(
            "awsElasticBlockStore",
            AWS_EBS_PLUGIN,
            "ebs.csi.aws.com",
            "topology.ebs.csi.aws.com/zone",
        ),
        InTreePlugin("azureDisk", AZURE_DISK_PLUGIN, "disk.csi.azure.com"),
        InTreePlugin(
            "cinder",
            CINDER_PLUGIN,
            "cinder.csi.openstack.org",
            "topology.cinder.csi.openstack.org/zone",
        ),
        InTreePlugin(
            "portworxVolume", PORTWORX_PLUGIN, "pxd.portworx.com", limits_need_annotation=True
        ),
    )
}
BY_PLUGIN: Mapping[str, InTreePlugin] = {p.plugin: p for p in PLUGINS.values()}

# Provisioners the translation library knows whose migration NodeVolumeLimits never counts
# (vSphere and Azure File volumes are not attach-limited there): a claim of such a class is
# not counted at all, rather than as a volume of a driver named after the provisioner.
UNCOUNTED_PROVISIONERS = frozenset({"kubernetes.io/azure-file", "kubernetes.io/vsphere-volume"})


def annotated(csi_node: CSINode | None, plugin: InTreePlugin) -> bool:
    """Whether the node's CSINode names the plugin as migrated."""
    return csi_node is not None and plugin.plugin in csi_node.migrated_plugins


def limits_migrated(
    csi_node: CSINode | None, plugin: InTreePlugin, needs_annotation: bool = False
) -> bool:
    """kube's ``isCSIMigrationOn`` for NodeVolumeLimits: never without a CSINode; with one,
    always for the plugins whose migration is GA and locked on, and for Portworx (and, with
    ``needs_annotation``, every plugin, as the feature-gated code of older releases did) only
    when the CSINode names it."""
    if csi_node is None:
        return False
    if plugin.limits_need_annotation or needs_annotation:
        return annotated(csi_node, plugin)
    return True


def binding_migrated(csi_node: CSINode | None, plugin: InTreePlugin) -> bool:
    """kube's ``isCSIMigrationOnForPlugin`` and ``isPluginMigratedToCSIOnNode`` for
    VolumeBinding: the migration is on cluster-wide for all five plugins, and the node's
    CSINode must name the plugin."""
    return annotated(csi_node, plugin)


# --- volume handles ----------------------------------------------------------------------


def _ebs_volume_id(volume_id: str) -> str:
    """kube's ``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/vol-…``, ``aws:///vol-…``
    or a bare ``vol-…`` ID become the bare ID."""
    if not volume_id.startswith("aws://"):
        return volume_id
    path = volume_id[len("aws://") :]
    # The URL's host is the zone; its path holds the ID.
    slash = path.find("/")
    found = path[slash:] if slash >= 0 else ""
    found = found.strip("/")
    if not found.startswith("vol-") or "/" in found:
        raise TranslationError(
            "failed to translate Kubernetes ID to EBS Volume ID "
            f"Invalid format for AWS volume ({volume_id})"
        )
    return found


def _gce_region(zones: list[str]) -> str:
    """The region of a regional disk's zones (kube's ``getRegionFromZones``): each zone is
    ``<locale>-<region>-<zone>``, and all are of one region."""
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(
                "failed to get region from zones: zone in unexpected format, expected: "
                f"{{locale}}-{{region}}-{{zone}}, got: {zone}"
            )
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        # Go prints the set as a map, keys sorted.
        listed = " ".join(f"{r}:{{}}" for r in sorted(regions))
        raise TranslationError(
            "failed to get region from zones: multiple or no regions gotten from zones, "
            f"got: map[{listed}]"
        )
    return next(iter(regions))


def _gce_handle(pv: PersistentVolume) -> str:
    """The GCE PD CSI volume ID of an in-tree PV: zonal from one zone label (the beta one
    first, else the GA one), regional from several, zone unspecified without a label."""
    label = pv.labels.get(BETA_ZONE) or pv.labels.get(ZONE) or ""
    zones = label.split(MULTI_ZONE_DELIMITER)
    name = pv.csi_handle
    if len(zones) == 1 and zones[0]:
        return f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{name}"
    if len(zones) > 1:
        return f"projects/{UNSPECIFIED}/regions/{_gce_region(zones)}/disks/{name}"
    return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{name}"


def pv_handle(pv: PersistentVolume, plugin: InTreePlugin) -> str:
    """The CSI volume handle an in-tree PV translates to (``TranslateInTreePVToCSI``)."""
    if plugin.plugin == GCE_PD_PLUGIN:
        return _gce_handle(pv)
    if plugin.plugin == AWS_EBS_PLUGIN:
        return _ebs_volume_id(pv.csi_handle)
    return pv.csi_handle  # Azure's disk URI, Cinder's and Portworx's volume ID


def inline_handle(kind: str, handle: str) -> str:
    """The CSI volume handle an inline in-tree volume translates to
    (``TranslateInTreeInlineVolumeToCSI``): a GCE PD's zone is never known inline."""
    if kind == "gcePersistentDisk":
        return f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{handle}"
    if kind == "awsElasticBlockStore":
        return _ebs_volume_id(handle)
    return handle


# --- node affinity -----------------------------------------------------------------------


def _terms(selector: NodeSelector | None) -> tuple[NodeSelectorTerm, ...]:
    return () if selector is None else selector.terms


def _has_key(terms: tuple[NodeSelectorTerm, ...], key: str) -> bool:
    return any(r.key == key for t in terms for r in t.match_expressions)


def _values(terms: tuple[NodeSelectorTerm, ...], key: str) -> list[str]:
    return sorted({v for t in terms for r in t.match_expressions if r.key == key for v in r.values})


def _rekeyed(
    terms: tuple[NodeSelectorTerm, ...], old: str, new: str
) -> tuple[NodeSelectorTerm, ...]:
    return tuple(
        NodeSelectorTerm(
            tuple(
                NodeSelectorRequirement(new, r.operator, r.values) if r.key == old else r
                for r in t.match_expressions
            ),
            t.match_fields,
        )
        for t in terms
    )


def _zone_labels(pv: PersistentVolume) -> tuple[str, str]:
    """kube's ``getTopologyLabel``: the GA zone and region keys, unless the PV's node
    affinity (first) or labels (then) use the beta zone key and not the GA one."""
    terms = _terms(pv.node_affinity)
    if _has_key(terms, ZONE):
        return ZONE, REGION
    if _has_key(terms, BETA_ZONE):
        return BETA_ZONE, BETA_REGION
    if ZONE in pv.labels:
        return ZONE, REGION
    if BETA_ZONE in pv.labels:
        return BETA_ZONE, BETA_REGION
    return ZONE, REGION


def translated_affinity(pv: PersistentVolume, plugin: InTreePlugin) -> NodeSelector | None:
    """The PV's node affinity once translated (``translateTopologyFromInTreeToCSI``): zone
    requirements are rekeyed to the driver's topology key, or, when the affinity has none,
    the zone label's zones (``__``-joined) are added to every term as ``key In zones``; beta
    region requirements become GA ones. A plugin without a topology key keeps the affinity
    as written."""
    if not plugin.topology_key:
        return pv.node_affinity
    if plugin.plugin == GCE_PD_PLUGIN:
        _gce_handle(pv)  # a PV whose zones name no one region does not translate
    zone_key, region_key = _zone_labels(pv)
    terms = _terms(pv.node_affinity)
    if _values(terms, zone_key):
        terms = _rekeyed(terms, zone_key, plugin.topology_key)
    elif zone_key in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone_key].split(MULTI_ZONE_DELIMITER)} - {""})
        if zones:
            added = NodeSelectorRequirement(plugin.topology_key, "In", tuple(zones))
            terms = tuple(
                NodeSelectorTerm((*t.match_expressions, added), t.match_fields)
                for t in (terms or (NodeSelectorTerm(),))
            )
    if region_key == BETA_REGION and _values(terms, BETA_REGION):
        terms = _rekeyed(terms, BETA_REGION, REGION)
    if not terms:
        return pv.node_affinity
    return NodeSelector(terms)
