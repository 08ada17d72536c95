"""PodGroups: parsing the coscheduling object, a pod's group, snapshots that carry them."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.podgroup import POD_GROUP_LABEL, PodGroup, parse_pod_group, pod_group_key
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_snapshot_text
from tests.model.builders import make_node, make_pod


def group(spec: Any = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "job", "namespace": "train", **meta},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            group(
                {
                    "minMember": 8,
                    "scheduleTimeoutSeconds": 600,
                    "minResources": {"nvidia.com/gpu": "64", "cpu": "500m"},
                }
            ),
            PodGroup(
                "train", "job", 8, 600, {"nvidia.com/gpu": Fraction(64), "cpu": Fraction(1, 2)}
            ),
        ),
        (group({"minMember": 2}), PodGroup("train", "job", 2, None)),
        (group(None), PodGroup("train", "job", 1, None)),  # minMember defaults to 1
        (
            group({"minMember": "3"}, creationTimestamp="2026-01-01T00:00:00Z"),
            PodGroup("train", "job", 3, None, creation_timestamp="2026-01-01T00:00:00Z"),
        ),
    ],
    ids=["full", "min-member", "defaults", "min-member-as-string"],
)
def test_parse_pod_group(obj: dict[str, Any], expected: PodGroup) -> None:
    parsed = parse_pod_group(obj)
    assert parsed == expected
    assert parsed.key == "train/job"


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (group({"minMember": 0}), "PodGroup train/job: spec.minMember: must be at least 1, got 0"),
        (
            group({"minMember": "many"}),
            "PodGroup train/job: spec.minMember: expected an integer, got string 'many'",
        ),
        (
            group({"minMember": 2, "scheduleTimeoutSeconds": -1}),
            "PodGroup train/job: spec.scheduleTimeoutSeconds: must not be negative, got -1",
        ),
        (
            group({"minResources": {"cpu": "lots"}}),
            "PodGroup train/job: spec.minResources.cpu: quantity 'lots' is not valid",
        ),
        ({"kind": "PodGroup", "metadata": {}}, "PodGroup <unnamed>: metadata.name: is required"),
    ],
    ids=[
        "group(minMember=0)",
        "group(minMember=many)",
        "group(minMember=2 scheduleTimeoutSeconds=-1)",
        "group(minResources=cpu=lots)",
        "kind=PodGroup metadata=empty",
    ],
)
def test_bad_pod_groups_name_the_object_and_field(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError) as error:
        parse_pod_group(obj)
    assert str(error.value).startswith(message)


def test_a_pods_group_is_its_label_in_its_namespace() -> None:
    assert (
        pod_group_key(make_pod("w", namespace="train", labels={POD_GROUP_LABEL: "job"}))
        == "train/job"
    )
    assert pod_group_key(make_pod("w", labels={POD_GROUP_LABEL: ""})) is None
    assert pod_group_key(make_pod("w")) is None


SNAPSHOT = """
apiVersion: v1
kind: List
items:
  - kind: Node
    metadata: {name: n1}
    status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
  - apiVersion: scheduling.x-k8s.io/v1alpha1
    kind: PodGroup
    metadata: {name: job, namespace: train}
    spec: {minMember: 2}
  - apiVersion: example.com/v1
    kind: PodGroup
    metadata: {name: other, namespace: train}
  - kind: PodGroupList
    items:
      - metadata: {name: listed, namespace: train}
        spec: {minMember: 4}
"""


def test_snapshots_read_pod_groups_and_skip_other_groups_kinds() -> None:
    loaded = parse_snapshot_text(SNAPSHOT, "snap.yaml")
    assert loaded.pod_groups == (
        PodGroup("train", "job", 2, None),
        PodGroup("train", "listed", 4, None),
    )
    assert loaded.warnings == (
        "snap.yaml: PodGroup train/other: kind PodGroup is not used by the engine; ignored",
    )
    snap, _, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, loaded.pod_groups
    )
    assert snap.pod_group("train/job") == PodGroup("train", "job", 2, None)


def test_pod_groups_survive_derivations_and_can_be_replaced_or_removed() -> None:
    snap = ClusterSnapshot.build(
        [make_node("n1"), make_node("n2")], pod_groups=[PodGroup("ns", "a", 2, None)]
    )
    derived = snap.with_pod(make_pod("p"), "n1").without_node("n2")
    assert derived.pod_group("ns/a") == PodGroup("ns", "a", 2, None)
    bigger = derived.with_pod_group(PodGroup("ns", "a", 4, 30))
    assert bigger.pod_group("ns/a") == PodGroup("ns", "a", 4, 30)
    assert derived.pod_group("ns/a") == PodGroup("ns", "a", 2, None)  # the original is unchanged
    assert bigger.without_pod_group("ns/a").pod_group("ns/a") is None
    assert bigger.without_pod_group("ns/missing") is bigger
