"""A pod's volumes as the storage plugins read them: which claim, which disk, which driver.

kube-scheduler's storage plugins look at ``spec.volumes`` only through a few questions: does
the volume use a PersistentVolumeClaim (named, or a generic ephemeral one whose claim is named
after the pod), is it an in-tree disk whose use is exclusive (GCE PD, AWS EBS, RBD, iSCSI),
is it an inline CSI volume. ``Volume`` keeps the answers and nothing else; the rest of a volume
source does not change where a pod may run.
"""

from __future__ import annotations

from dataclasses import dataclass

# Volume kinds the storage plugins tell apart (the key of the volume source in the API).
PVC = "persistentVolumeClaim"
EPHEMERAL = "ephemeral"
CSI = "csi"
GCE_PD = "gcePersistentDisk"
AWS_EBS = "awsElasticBlockStore"
RBD = "rbd"
ISCSI = "iscsi"
AZURE_DISK = "azureDisk"
CINDER = "cinder"
PORTWORX = "portworxVolume"

# The sources known by their key; any other source (emptyDir, configMap, hostPath, ...) is
# kept as its key and never read.
KNOWN_SOURCES = (PVC, EPHEMERAL, CSI, GCE_PD, AWS_EBS, RBD, ISCSI, AZURE_DISK, CINDER, PORTWORX)

# In-tree sources whose disks VolumeRestrictions keeps from being used twice on a node.
EXCLUSIVE_DISKS = frozenset({GCE_PD, AWS_EBS, RBD, ISCSI})

# The sources some storage plugin reads: a pod with none of them (only emptyDirs, projected
# service account tokens, configMaps, ...) is nothing to any of them.
STORAGE_SOURCES = frozenset(
    {PVC, EPHEMERAL, GCE_PD, AWS_EBS, RBD, ISCSI, AZURE_DISK, CINDER, PORTWORX}
)


@dataclass(frozen=True, slots=True)
class Volume:
    """One entry of ``spec.volumes``.

    ``handle`` names the disk: a claim's name, a GCE PD's ``pdName``, an EBS ``volumeID``, an
    iSCSI ``iqn``, an RBD ``image``, an Azure disk's ``diskURI``, a Cinder or Portworx
    ``volumeID``, an inline CSI volume's driver. ``pool`` and ``monitors`` are RBD's.
    """

    name: str
    kind: str = ""  # one of KNOWN_SOURCES, another source's key, or "" for none
    handle: str = ""
    read_only: bool = False
    pool: str = ""
    monitors: tuple[str, ...] = ()

    @property
    def uses_claim(self) -> bool:
        return self.kind in (PVC, EPHEMERAL)


def ephemeral_claim_name(pod_name: str, volume: Volume) -> str:
    """The claim the ephemeral volume controller creates for a generic ephemeral volume:
    ``<pod name>-<volume name>``."""
    return f"{pod_name}-{volume.name}"


def claim_name(pod_name: str, volume: Volume) -> str:
    """The claim a volume uses (its own name for an ephemeral one); "" for other sources."""
    if volume.kind == PVC:
        return volume.handle
    if volume.kind == EPHEMERAL:
        return ephemeral_claim_name(pod_name, volume)
    return ""


def disks_conflict(mine: Volume, theirs: Volume) -> bool:
    """Whether two in-tree disks cannot be mounted by two pods of one node (kube's
    VolumeRestrictions): the same GCE PD unless both read-only, the same EBS volume always,
    the same iSCSI IQN or RBD image (sharing a monitor, in one pool) unless both read-only."""
    if mine.kind != theirs.kind or mine.kind not in EXCLUSIVE_DISKS:
        return False
    both_read_only = mine.read_only and theirs.read_only
    if mine.kind == AWS_EBS:
        return mine.handle == theirs.handle
    if mine.kind in (GCE_PD, ISCSI):
        return mine.handle == theirs.handle and not both_read_only
    # RBD
    return (
        bool(set(mine.monitors) & set(theirs.monitors))
        and mine.pool == theirs.pool
        and mine.handle == theirs.handle
        and not both_read_only
    )
