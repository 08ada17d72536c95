"""In-tree volumes through CSI migration: NodeVolumeLimits, VolumeBinding and VolumeZone.

Cases follow kube-scheduler's table tests (``nodevolumelimits/csi_test.go``,
``volumebinding/binder_test.go``, ``volumezone/volume_zone_test.go``) and
``csi-translation-lib``'s: in-tree PVs with and without the CSINode's migrated-plugins
annotation, inline in-tree volumes, limits per translated driver, translated volume handles
and topology, zone labels of in-tree PVs.
"""

from __future__ import annotations

from typing import Any

import pytest

from policyengine.model.node_selectors import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
)
from policyengine.model.plugins import KUBE_1_28
from policyengine.model.plugins import node_volume_limits as limits
from policyengine.model.plugins import volume_binding as binding
from policyengine.model.plugins import volume_zone as zone
from policyengine.model.storage import PersistentVolume
from policyengine.model.storage_migration import (
    PLUGINS,
    TranslationError,
    inline_handle,
    limits_migrated,
    pv_handle,
    translated_affinity,
)
from policyengine.model.storage_parse import parse_csi_node
from policyengine.model.volume_explain import volume_findings
from tests.model.storage_builders import (
    ZONE,
    claims,
    cluster,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
REGION = "topology.kubernetes.io/region"
MIGRATED = "storage.alpha.kubernetes.io/migrated-plugins"
EBS_DRIVER = "ebs.csi.aws.com"
GCE_DRIVER = "pd.csi.storage.gke.io"
EBS_KEY = "topology.ebs.csi.aws.com/zone"
GCE_KEY = "topology.gke.io/zone"


def csi_node(name: str, migrated: str | None = None, **counts: int) -> dict[str, Any]:
    drivers = [{"name": d, "nodeID": name, "allocatable": {"count": c}} for d, c in counts.items()]
    meta: dict[str, Any] = {"name": name}
    if migrated is not None:
        meta["annotations"] = {MIGRATED: migrated}
    return {"kind": "CSINode", "metadata": meta, "spec": {"drivers": drivers}}


def ebs_pv(name: str, volume_id: str, **more: Any) -> dict[str, Any]:
    return pv(name, awsElasticBlockStore={"volumeID": volume_id}, **more)


def gce_pv(name: str, disk: str, **more: Any) -> dict[str, Any]:
    return pv(name, gcePersistentDisk={"pdName": disk}, **more)


def bound(claim: str, volume: str) -> dict[str, Any]:
    return pvc(claim, volume=volume, bound=True)


def _model_pv(raw: dict[str, Any]) -> PersistentVolume:
    snap = cluster([node("n1")], [], [raw])
    return snap.storage.pvs[raw["metadata"]["name"]]


def _limits(incoming: Any, snap: Any, config: Any = None) -> list[str]:
    state = (
        limits.prepare_filter(incoming, snap)
        if config is None
        else limits.prepare_filter(incoming, snap, config)
    )
    return limits.filter(state, snap.node("n1"))


# --- NodeVolumeLimits -----------------------------------------------------------------------

# One EBS volume already attached on n1 by pod "r" (PV "ebs-1", vol-1); the limit is one.
RUNNING = [pod("r", claims("c-running"), node_name="n1")]
ATTACHED = [ebs_pv("ebs-1", "vol-1"), bound("c-running", "ebs-1")]
LIMITS = [
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [ebs_pv("ebs-2", "vol-2"), bound("c", "ebs-2")],
        claims("c"),
        [limits.REASON],
        id="in-tree-pv-counts-as-ebs-csi-without-annotation",
    ),
    pytest.param(
        [csi_node("n1", "kubernetes.io/aws-ebs", **{EBS_DRIVER: 1})],
        [ebs_pv("ebs-2", "vol-2"), bound("c", "ebs-2")],
        claims("c"),
        [limits.REASON],
        id="in-tree-pv-counts-as-ebs-csi-with-annotation",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 2})],
        [ebs_pv("ebs-2", "vol-2"), bound("c", "ebs-2")],
        claims("c"),
        [],
        id="in-tree-pv-within-the-limit",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [ebs_pv("ebs-2", "aws://us-east-1a/vol-1"), bound("c", "ebs-2")],
        claims("c"),
        [],
        id="translated-handle-names-the-attached-volume",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [pv("csi-1", csi=(EBS_DRIVER, "vol-1")), bound("c", "csi-1")],
        claims("c"),
        [],
        id="csi-pv-of-the-same-disk-counts-once",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [ebs_pv("ebs-2", "aws://us-east-1a/not-a-volume"), bound("c", "ebs-2")],
        claims("c"),
        [],
        id="untranslatable-pv-is-not-counted",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [storage_class("ebs", "kubernetes.io/aws-ebs"), pvc("c", cls="ebs")],
        claims("c"),
        [limits.REASON],
        id="unbound-claim-of-in-tree-class-counts-as-its-driver",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [storage_class("file", "kubernetes.io/azure-file"), pvc("c", cls="file")],
        claims("c"),
        [],
        id="azure-file-class-is-not-counted",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [],
        [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-2"}}],
        [limits.REASON],
        id="inline-ebs-counts-as-ebs-csi",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [],
        [{"name": "d", "awsElasticBlockStore": {"volumeID": "aws:///vol-1"}}],
        [],
        id="inline-ebs-translated-handle-names-the-attached-volume",
    ),
    pytest.param(
        [csi_node("n1", **{EBS_DRIVER: 1})],
        [],
        [{"name": "d", "awsElasticBlockStore": {"volumeID": "aws://zone/bad"}}],
        [
            "converting volume(d) from inline to csi: failed to translate Kubernetes ID to EBS "
            "Volume ID Invalid format for AWS volume (aws://zone/bad)"
        ],
        id="inline-ebs-that-does-not-translate-is-an-error",
    ),
    pytest.param(
        [csi_node("n1", **{GCE_DRIVER: 1})],
        [],
        [{"name": "d", "awsElasticBlockStore": {"volumeID": "vol-2"}}],
        [],
        id="limit-of-another-driver",
    ),
    pytest.param(
        [csi_node("n1", **{"pxd.portworx.com": 0})],
        [],
        [{"name": "d", "portworxVolume": {"volumeID": "px-1"}}],
        [],
        id="portworx-needs-the-annotation",
    ),
    pytest.param(
        [csi_node("n1", "kubernetes.io/portworx-volume", **{"pxd.portworx.com": 0})],
        [],
        [{"name": "d", "portworxVolume": {"volumeID": "px-1"}}],
        [limits.REASON],
        id="portworx-with-the-annotation",
    ),
]


@pytest.mark.parametrize(("csi_nodes", "objects", "volumes", "expected"), LIMITS)
def test_in_tree_volume_limits(
    csi_nodes: list[Any], objects: list[Any], volumes: list[Any], expected: list[str]
) -> None:
    snap = cluster([node("n1")], RUNNING, [*csi_nodes, *ATTACHED, *objects])
    assert _limits(pod("p", volumes), snap) == expected


@pytest.mark.parametrize(
    ("plugin", "driver", "source"),
    [
        ("kubernetes.io/gce-pd", GCE_DRIVER, {"gcePersistentDisk": {"pdName": "d-2"}}),
        ("kubernetes.io/azure-disk", "disk.csi.azure.com", {"azureDisk": {"diskURI": "uri-2"}}),
        ("kubernetes.io/cinder", "cinder.csi.openstack.org", {"cinder": {"volumeID": "c-2"}}),
    ],
    ids=["gce-pd", "azure-disk", "cinder"],
)
def test_each_plugin_counts_against_its_driver(plugin: str, driver: str, source: Any) -> None:
    inline = [{"name": "d", **source}]
    other = {k: {kk: vv.replace("-2", "-1") for kk, vv in v.items()} for k, v in source.items()}
    running = [pod("r", [{"name": "o", **other}], node_name="n1")]
    snap = cluster([node("n1")], running, [csi_node("n1", **{driver: 1})])
    assert _limits(pod("p", inline), snap) == [limits.REASON]
    roomy = cluster([node("n1")], running, [csi_node("n1", **{driver: 2})])
    assert _limits(pod("p", inline), roomy) == []
    # Without a CSINode the in-tree volume is no CSI volume.
    attach = {"attachable-volumes-csi-" + driver: "1"}
    bare = cluster([node("n1", extra=attach)], running, [pvc("unrelated")])
    assert _limits(pod("p", inline), bare) == []
    assert plugin in {p.plugin for p in PLUGINS.values()}


def test_kube_1_28_wants_the_annotation() -> None:
    objects = [*ATTACHED, ebs_pv("ebs-2", "vol-2"), bound("c", "ebs-2")]
    plain = cluster([node("n1")], RUNNING, [csi_node("n1", **{EBS_DRIVER: 1}), *objects])
    assert _limits(pod("p", claims("c")), plain, KUBE_1_28) == []
    annotated = cluster(
        [node("n1")],
        RUNNING,
        [csi_node("n1", "kubernetes.io/aws-ebs", **{EBS_DRIVER: 1}), *objects],
    )
    assert _limits(pod("p", claims("c")), annotated, KUBE_1_28) == [limits.REASON]


def test_limits_migrated() -> None:
    ebs, portworx = PLUGINS["awsElasticBlockStore"], PLUGINS["portworxVolume"]
    plain = parse_csi_node(csi_node("n1"))
    named = parse_csi_node(csi_node("n1", "kubernetes.io/aws-ebs,kubernetes.io/portworx-volume"))
    assert not limits_migrated(None, ebs)
    assert limits_migrated(plain, ebs)
    assert not limits_migrated(plain, ebs, needs_annotation=True)
    assert limits_migrated(named, ebs, needs_annotation=True)
    assert not limits_migrated(plain, portworx)
    assert limits_migrated(named, portworx)


# --- translated handles ---------------------------------------------------------------------

HANDLES = [
    pytest.param(gce_pv("g", "disk", labels={BETA_ZONE: "us-east1-b"}),
                 "projects/UNSPECIFIED/zones/us-east1-b/disks/disk", id="gce-zonal-beta"),
    pytest.param(gce_pv("g", "disk", labels={ZONE: "us-east1-c"}),
                 "projects/UNSPECIFIED/zones/us-east1-c/disks/disk", id="gce-zonal-ga"),
    pytest.param(gce_pv("g", "disk", labels={BETA_ZONE: "us-east1-b__us-east1-c"}),
                 "projects/UNSPECIFIED/regions/us-east1/disks/disk", id="gce-regional"),
    pytest.param(gce_pv("g", "disk"),
                 "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/disk", id="gce-no-zone"),
    pytest.param(ebs_pv("e", "aws://us-east-1a/vol-0123"), "vol-0123", id="ebs-url"),
    pytest.param(ebs_pv("e", "aws:///vol-0123"), "vol-0123", id="ebs-url-without-zone"),
    pytest.param(ebs_pv("e", "vol-0123"), "vol-0123", id="ebs-bare"),
    pytest.param(pv("a", azureDisk={"diskURI": "/subscriptions/s/disks/d", "diskName": "d"}),
                 "/subscriptions/s/disks/d", id="azure-disk-uri"),
    pytest.param(pv("c", cinder={"volumeID": "c-1"}), "c-1", id="cinder-volume-id"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "expected"), HANDLES)
def test_pv_handle(raw: dict[str, Any], expected: str) -> None:
    volume = _model_pv(raw)
    assert volume.in_tree is not None
    assert pv_handle(volume, volume.in_tree) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            gce_pv("g", "disk", labels={BETA_ZONE: "us-east1-b__us-west1-a"}),
            "failed to get region from zones: multiple or no regions gotten from zones, "
            "got: map[us-east1:{} us-west1:{}]",
            id="gce-zones-of-two-regions",
        ),
        pytest.param(
            gce_pv("g", "disk", labels={BETA_ZONE: "a__b"}),
            "failed to get region from zones: zone in unexpected format, expected: "
            "{locale}-{region}-{zone}, got: a",
            id="gce-malformed-zone",
        ),
        pytest.param(
            ebs_pv("e", "aws://us-east-1a/"),
            "failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume "
            "(aws://us-east-1a/)",
            id="ebs-without-id",
        ),
    ],
)
def test_pv_handle_errors(raw: dict[str, Any], message: str) -> None:
    volume = _model_pv(raw)
    assert volume.in_tree is not None
    with pytest.raises(TranslationError) as raised:
        pv_handle(volume, volume.in_tree)
    assert str(raised.value) == message


def test_inline_handles() -> None:
    assert (
        inline_handle("gcePersistentDisk", "d") == "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"
    )
    assert inline_handle("awsElasticBlockStore", "aws://z/vol-1") == "vol-1"
    assert inline_handle("cinder", "c-1") == "c-1"


# --- translated node affinity ---------------------------------------------------------------


def _in(key: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, "In", values)


def _affinity(*terms: tuple[NodeSelectorRequirement, ...]) -> NodeSelector:
    return NodeSelector(tuple(NodeSelectorTerm(t) for t in terms))


def _raw_affinity(*terms: list[tuple[str, list[str]]]) -> dict[str, Any]:
    return {
        "required": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in t]}
                for t in terms
            ]
        }
    }


TOPOLOGY = [
    pytest.param(
        gce_pv("g", "d", labels={BETA_ZONE: "us-east1-b"}),
        _affinity((_in(GCE_KEY, "us-east1-b"),)),
        id="gce-beta-zone-label",
    ),
    pytest.param(
        gce_pv("g", "d", labels={ZONE: "us-east1-b__us-east1-c"}),
        _affinity((_in(GCE_KEY, "us-east1-b", "us-east1-c"),)),
        id="gce-ga-zones-label",
    ),
    pytest.param(
        ebs_pv(
            "e",
            "vol-1",
            labels={ZONE: "us-east-1a"},
            node_affinity=_raw_affinity(
                [(BETA_ZONE, ["us-east-1b"]), (BETA_REGION, ["us-east-1"])]
            ),
        ),
        _affinity((_in(EBS_KEY, "us-east-1b"), _in(REGION, "us-east-1"))),
        id="ebs-affinity-wins-over-labels-beta-region-becomes-ga",
    ),
    pytest.param(
        ebs_pv(
            "e",
            "vol-1",
            labels={ZONE: "us-east-1a"},
            node_affinity=_raw_affinity([("kubernetes.io/hostname", ["n1"])], [("rack", ["r1"])]),
        ),
        _affinity(
            (_in("kubernetes.io/hostname", "n1"), _in(EBS_KEY, "us-east-1a")),
            (_in("rack", "r1"), _in(EBS_KEY, "us-east-1a")),
        ),
        id="ebs-zone-label-added-to-every-term",
    ),
    pytest.param(ebs_pv("e", "vol-1"), None, id="ebs-without-topology"),
    pytest.param(
        pv("a", azureDisk={"diskURI": "u", "diskName": "d"}, labels={ZONE: "westus-1"}),
        None,
        id="azure-disk-keeps-its-affinity",
    ),
    pytest.param(
        pv("c", cinder={"volumeID": "c-1"}, labels={BETA_ZONE: "nova"}),
        _affinity((_in("topology.cinder.csi.openstack.org/zone", "nova"),)),
        id="cinder-zone-label",
    ),
]


@pytest.mark.parametrize(("raw", "expected"), TOPOLOGY)
def test_translated_affinity(raw: dict[str, Any], expected: NodeSelector | None) -> None:
    volume = _model_pv(raw)
    assert volume.in_tree is not None
    assert translated_affinity(volume, volume.in_tree) == expected


# --- VolumeBinding --------------------------------------------------------------------------

ZONED_EBS = [
    ebs_pv("ebs-1", "vol-1", labels={ZONE: "us-east-1a"}, node_affinity=_raw_affinity([(ZONE, ["us-east-1a"])])),
    bound("c", "ebs-1"),
]  # fmt: skip
BINDING = [
    pytest.param({ZONE: "us-east-1a"}, None, [], id="not-migrated-reads-the-pv-as-written"),
    pytest.param({ZONE: "us-east-1b"}, None, [binding.NODE_CONFLICT], id="not-migrated-conflict"),
    pytest.param(
        {ZONE: "us-east-1a"},
        "kubernetes.io/aws-ebs",
        [binding.NODE_CONFLICT],
        id="migrated-node-without-the-driver-topology-label",
    ),
    pytest.param(
        {ZONE: "us-east-1b", EBS_KEY: "us-east-1a"},
        "kubernetes.io/aws-ebs",
        [],
        id="migrated-node-with-the-driver-topology-label",
    ),
    pytest.param(
        {ZONE: "us-east-1a"},
        "kubernetes.io/gce-pd",
        [],
        id="another-plugin-migrated",
    ),
]


@pytest.mark.parametrize(("labels", "migrated", "expected"), BINDING)
def test_bound_in_tree_pv_node_affinity(
    labels: dict[str, str], migrated: str | None, expected: list[str]
) -> None:
    objects = [*ZONED_EBS]
    if migrated is not None:
        objects.append(csi_node("n1", migrated))
    snap = cluster([node("n1", labels)], [], objects)
    state = binding.prepare_filter(pod("p", claims("c")), snap)
    assert binding.filter(state, snap.node("n1")) == expected


def test_bound_in_tree_pv_that_does_not_translate_stops_the_cycle() -> None:
    objects = [
        gce_pv("g", "d", labels={BETA_ZONE: "us-east1-b__us-west1-a"}),
        bound("c", "g"),
        csi_node("n1", "kubernetes.io/gce-pd"),
    ]
    snap = cluster([node("n1", {GCE_KEY: "us-east1-b"})], [], objects)
    state = binding.prepare_filter(pod("p", claims("c")), snap)
    assert binding.filter(state, snap.node("n1")) == [
        "could not translate pv: failed to get region from zones: multiple or no regions "
        "gotten from zones, got: map[us-east1:{} us-west1:{}]"
    ]


# --- VolumeZone -----------------------------------------------------------------------------

ZONES = [
    pytest.param({BETA_ZONE: "us-east1-b"}, {BETA_ZONE: "us-east1-b"}, None, [], id="beta-beta"),
    pytest.param({BETA_ZONE: "us-east1-b"}, {ZONE: "us-east1-b"}, None, [], id="beta-pv-ga-node"),
    pytest.param(
        {BETA_ZONE: "us-east1-b"}, {ZONE: "us-east1-b"}, KUBE_1_28, [zone.REASON], id="v1.28"
    ),
    pytest.param(
        {BETA_ZONE: "us-east1-b"},
        {BETA_ZONE: "us-east1-c", ZONE: "us-east1-b"},
        None,
        [zone.REASON],
        id="node-beta-label-wins",
    ),
    pytest.param({ZONE: "us-east1-b"}, {BETA_ZONE: "us-east1-b"}, None, [zone.REASON], id="ga-pv"),
    pytest.param({BETA_REGION: "us-east1"}, {REGION: "us-east1"}, None, [], id="beta-region"),
]


@pytest.mark.parametrize(("pv_labels", "node_labels", "config", "expected"), ZONES)
def test_zone_labels_of_in_tree_pvs(
    pv_labels: dict[str, str], node_labels: dict[str, str], config: Any, expected: list[str]
) -> None:
    # VolumeZone reads an in-tree PV's labels like any PV's: it translates nothing.
    objects = [
        gce_pv("g", "d", labels=pv_labels),
        bound("c", "g"),
        csi_node("n1", "kubernetes.io/gce-pd"),
    ]
    snap = cluster([node("n1", node_labels)], [], objects)
    incoming = pod("p", claims("c"))
    state = (
        zone.prepare_filter(incoming, snap)
        if config is None
        else zone.prepare_filter(incoming, snap, config)
    )
    assert zone.filter(state, snap.node("n1")) == expected


# --- explain --------------------------------------------------------------------------------


def test_findings_name_the_translated_affinity_and_the_ga_label_read() -> None:
    objects = [*ZONED_EBS, csi_node("n1", "kubernetes.io/aws-ebs")]
    snap = cluster([node("n1", {ZONE: "us-east-1a", EBS_KEY: "us-east-1b"})], [], objects)
    assert volume_findings(pod("p", claims("c")), snap, "n1") == (
        f"claim c: volume ebs-1 (as {EBS_DRIVER} reads it) reaches {EBS_KEY} In "
        f"[us-east-1a]; node n1 has {EBS_KEY}=us-east-1b",
    )
    objects = [gce_pv("g", "d", labels={BETA_ZONE: "us-east1-b"}), bound("c", "g")]
    snap = cluster([node("n1", {ZONE: "us-east1-c"})], [], objects)
    assert volume_findings(pod("p", claims("c")), snap, "n1") == (
        f"volume g is in {BETA_ZONE} [us-east1-b]; node n1 has {ZONE}=us-east1-c",
    )
