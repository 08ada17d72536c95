from __future__ import annotations

import pytest

from policyengine.model.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, qos_class
from tests.model.builders import container, make_pod

FULL = {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("containers", "init", "expected"),
    [
        ([container("a")], [], BEST_EFFORT),
        ([container("a", {"nvidia.com/gpu": "1"})], [], BEST_EFFORT),  # only cpu/memory count
        ([container("a", {"cpu": "0"})], [], BEST_EFFORT),  # zero does not count
        ([container("a", FULL, FULL)], [], GUARANTEED),
        ([container("a", None, FULL)], [], GUARANTEED),  # requests default to limits
        ([container("a", {"cpu": "500m", "memory": "1Gi"}, FULL)], [], BURSTABLE),
        ([container("a", FULL, FULL), container("b")], [], BURSTABLE),
        ([container("a", {"cpu": "1"}, {"cpu": "1"})], [], BURSTABLE),  # memory limit missing
        ([container("a", FULL, FULL)], [container("i", FULL, FULL)], GUARANTEED),
        ([container("a", FULL, FULL)], [container("i", {"cpu": "1"})], BURSTABLE),
        ([container("a", {"memory": "1Gi"})], [], BURSTABLE),
    ],
    ids=[
        "nothing-asked",
        "only-gpus",
        "zero-cpu",
        "limits-equal-requests",
        "requests-default-to-limits",
        "requests-below-limits",
        "one-container-unlimited",
        "memory-limit-missing",
        "init-guaranteed",
        "init-burstable",
        "memory-request-only",
    ],
)
def test_qos(
    containers: list[dict[str, object]], init: list[dict[str, object]], expected: str
) -> None:
    assert qos_class(make_pod(containers=containers, init_containers=init)) == expected


def test_pod_level_resources_decide() -> None:
    pod = make_pod(containers=[container("a")], resources={"limits": FULL})
    assert qos_class(pod) == GUARANTEED
