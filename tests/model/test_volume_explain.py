"""``volume_findings``: each storage objection to a node in words, naming the claim, the
volume or the disk, with the values."""

from __future__ import annotations

from policyengine.model.volume_explain import volume_findings
from tests.model.storage_builders import (
    HOSTNAME,
    ZONE,
    affinity,
    claims,
    cluster,
    csi_node,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)

GCE = {"name": "d", "gcePersistentDisk": {"pdName": "foo"}}


def test_a_disk_mounted_by_a_placed_pod_is_named_with_the_pod() -> None:
    snap = cluster([node("n1")], [pod("other", [GCE], node_name="n1")], [])
    assert volume_findings(pod("p", [GCE]), snap, "n1") == (
        "gcePersistentDisk foo is mounted by pod default/other on this node",
    )


def test_a_read_write_once_pod_claim_in_use_is_named() -> None:
    objects = [pvc("solo", modes=("ReadWriteOncePod",))]
    snap = cluster([node("n1")], [pod("other", claims("solo"), node_name="n1")], objects)
    assert volume_findings(pod("p", claims("solo")), snap, "n1") == (
        "claim solo is ReadWriteOncePod and a placed pod uses it",
    )


def test_an_attach_limit_is_shown_with_the_counts() -> None:
    objects = [
        storage_class("csi", "ebs.csi.aws.com"),
        pvc("a", cls="csi"),
        pvc("b", cls="csi"),
        csi_node("n1", **{"ebs.csi.aws.com": 1}),
    ]
    snap = cluster([node("n1")], [pod("other", claims("b"), node_name="n1")], objects)
    assert volume_findings(pod("p", claims("a")), snap, "n1") == (
        "attachable-volumes-csi-ebs.csi.aws.com: 1 attached + 1 new volume(s) > limit 1",
    )


def test_a_bound_volume_elsewhere_is_shown_with_the_node_labels() -> None:
    objects = [
        pv("pv", node_affinity=affinity(ZONE, "z2"), claim="c"),
        pvc("c", volume="pv", bound=True),
    ]
    snap = cluster([node("n1", {ZONE: "z1"})], [], objects)
    assert volume_findings(pod("p", claims("c")), snap, "n1") == (
        f"claim c: volume pv reaches {ZONE} In [z2]; node n1 has {ZONE}=z1",
    )


def test_a_volume_zone_label_is_shown_against_the_node_s() -> None:
    objects = [pv("pv", labels={ZONE: "z2__z3"}), pvc("c", volume="pv", bound=True)]
    snap = cluster([node("n1", {ZONE: "z1"})], [], objects)
    assert volume_findings(pod("p", claims("c")), snap, "n1") == (
        f"volume pv is in {ZONE} [z2 z3]; node n1 has {ZONE}=z1",
    )


def test_a_waiting_claim_says_what_each_candidate_lacks() -> None:
    objects = [
        storage_class("local"),
        pv("small", "1Gi", cls="local"),
        pv("far", cls="local", node_affinity=affinity(HOSTNAME, "n2")),
        pvc("c", cls="local"),
    ]
    snap = cluster([node("n1"), node("n2")], [], objects)
    assert volume_findings(pod("p", claims("c")), snap, "n1") == (
        "claim c (5Gi of class local): no available volume fits (far reaches "
        f"{HOSTNAME} In [n2]; small holds 1Gi), and the class cannot provision one "
        "(provisioner kubernetes.io/no-provisioner)",
    )
    assert volume_findings(pod("p", claims("c")), snap, "n2") == ()


def test_a_pod_without_claims_has_no_findings() -> None:
    snap = cluster([node("n1")], [], [])
    assert volume_findings(pod("p"), snap, "n1") == ()
