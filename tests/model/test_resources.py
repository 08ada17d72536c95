from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model import resources
from policyengine.model.errors import ModelError
from policyengine.model.parse import parse_pod
from policyengine.model.resources import (
    is_compressible,
    is_extended_resource,
    is_gpu_resource,
    is_scalar_resource,
    pod_non_zero_requests,
    pod_request_units,
    pod_requests,
    to_units,
)
from tests.model.builders import container, make_pod, pod_dict

Gi = 1024**3
Mi = 1024**2


def test_quantities_are_exact() -> None:
    pod = make_pod(
        containers=[
            container("a", {"cpu": "100m", "memory": "1Gi"}),
            container("b", {"cpu": "0.5", "memory": "512Mi"}),
        ]
    )
    assert pod_requests(pod) == {"cpu": Fraction(6, 10), "memory": Gi + 512 * Mi}
    assert pod_request_units(pod) == {"cpu": 600, "memory": Gi + 512 * Mi}


def test_limits_default_requests() -> None:
    pod = make_pod(containers=[container("a", None, {"cpu": "2", "nvidia.com/gpu": "1"})])
    assert pod_requests(pod) == {"cpu": 2, "nvidia.com/gpu": 1}


@pytest.mark.parametrize(
    ("init", "expected_cpu"),
    [
        # plain init containers: the max of each, against the sum of app containers (1.5)
        ([container("i1", {"cpu": "1"})], Fraction(3, 2)),
        ([container("i1", {"cpu": "2"}), container("i2", {"cpu": "1"})], Fraction(2)),
        # a sidecar adds to the sum and to every later init container
        ([container("s", {"cpu": "500m"}, restart_policy="Always")], Fraction(2)),
        (
            [
                container("s", {"cpu": "500m"}, restart_policy="Always"),
                container("i", {"cpu": "2"}),
            ],
            Fraction(5, 2),
        ),
        # an init container before the sidecar does not see it
        (
            [
                container("i", {"cpu": "2"}),
                container("s", {"cpu": "500m"}, restart_policy="Always"),
            ],
            Fraction(2),
        ),
    ],
    ids=["one-init", "two-inits", "sidecar", "sidecar-then-init", "init-then-sidecar"],
)
def test_init_containers_and_sidecars(
    init: list[dict[str, object]], expected_cpu: Fraction
) -> None:
    pod = make_pod(
        containers=[container("a", {"cpu": "1"}), container("b", {"cpu": "500m"})],
        init_containers=init,
    )
    assert pod_requests(pod)["cpu"] == expected_cpu


def test_overhead_is_added_after_init_max() -> None:
    pod = make_pod(
        containers=[container("a", {"cpu": "1", "memory": "1Gi"})],
        init_containers=[container("i", {"cpu": "3"})],
        overhead={"cpu": "250m", "memory": "120Mi"},
    )
    assert pod_requests(pod) == {"cpu": Fraction(13, 4), "memory": Gi + 120 * Mi}


def test_pod_level_requests_replace_cpu_and_memory_only() -> None:
    pod = make_pod(
        containers=[container("a", {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})],
        resources={"requests": {"cpu": "4", "memory": "8Gi"}},
    )
    assert pod_requests(pod) == {"cpu": 4, "memory": 8 * Gi, "nvidia.com/gpu": 1}


def test_non_zero_defaults_apply_to_missing_not_zero() -> None:
    pod = make_pod(
        containers=[container("a"), container("b", {"cpu": "0"}), container("c", {"memory": "1Gi"})]
    )
    nz = pod_non_zero_requests(pod)
    assert nz["cpu"] == Fraction(2, 10)  # a and c default to 100m, b asked for 0
    assert nz["memory"] == 2 * 200 * Mi + Gi
    assert pod_requests(pod) == {"cpu": 0, "memory": Gi}


def test_best_effort_pod_has_no_requests() -> None:
    assert pod_requests(make_pod()) == {}
    assert pod_non_zero_requests(make_pod()) == {"cpu": Fraction(1, 10), "memory": 200 * Mi}


@pytest.mark.parametrize(
    ("name", "value", "units"),
    [
        ("cpu", Fraction(1, 10), 100),
        ("cpu", Fraction(1, 3), 334),  # kube rounds up
        ("cpu", Fraction(2), 2000),
        ("memory", Fraction(3, 2), 2),
        ("nvidia.com/gpu", Fraction(1), 1),
    ],
    ids=[
        "cpu-Fraction(1,10)",
        "cpu-Fraction(1,3)",
        "cpu-Fraction(2)",
        "memory-Fraction(3,2)",
        "nvidia.com/gpu-Fraction(1)",
    ],
)
def test_to_units(name: str, value: Fraction, units: int) -> None:
    assert to_units(name, value) == units


@pytest.mark.parametrize(
    ("name", "extended", "scalar", "gpu", "compressible"),
    [
        ("cpu", False, False, False, True),
        ("memory", False, False, False, False),
        ("ephemeral-storage", False, False, False, False),
        ("hugepages-2Mi", False, True, False, False),
        ("nvidia.com/gpu", True, True, True, False),
        ("nvidia.com/mig-1g.10gb", True, True, True, False),
        ("example.com/foo", True, True, False, False),
        ("kubernetes.io/something", False, True, False, False),
    ],
)
def test_resource_kinds(
    name: str, extended: bool, scalar: bool, gpu: bool, compressible: bool
) -> None:
    assert is_extended_resource(name) is extended
    assert is_scalar_resource(name) is scalar
    assert is_gpu_resource(name) is gpu
    assert is_compressible(name) is compressible


def test_requests_kept_on_the_pod_follow_its_containers() -> None:
    # ``pod_requests`` keeps its results on the pod: a pod placed by ``with_node_name`` shares
    # them (same containers), a pod rebuilt with other containers computes its own, and each
    # variant (non-zero, without overhead, without pod-level requests) is kept apart.
    pod = make_pod("p", containers=[container("c", {"cpu": "1"})], overhead={"cpu": "250m"})
    assert pod_requests(pod) == {"cpu": Fraction(5, 4)}
    assert pod_requests(pod, include_overhead=False) == {"cpu": Fraction(1)}
    assert pod_non_zero_requests(pod) == {"cpu": Fraction(5, 4), "memory": 200 * 1024 * 1024}
    placed = pod.with_node_name("n1")
    assert pod_requests(placed) is pod_requests(pod)
    resized = dataclasses.replace(
        placed, containers=make_pod("q", containers=[container("c", {"cpu": "2"})]).containers
    )
    assert pod_requests(resized) == {"cpu": Fraction(9, 4)}
    assert pod_requests(pod) == {"cpu": Fraction(5, 4)}
    resources._REQUESTS.clear()  # the memo alone answers for a pod that asked before
    assert pod_requests(placed, include_overhead=False) == {"cpu": Fraction(1)}


def test_pods_sharing_a_memo_read_the_first_s_requests() -> None:
    # ``share_requests``: pods of one class (equal containers and overhead) keep their results
    # in one memo, so the second reads the very result the first computed; a pod that already
    # keeps results of its own keeps them.
    memo: dict[object, object] = {}
    first = make_pod("a", containers=[container("c", {"cpu": "1"})], overhead={"cpu": "250m"})
    second = make_pod("b", containers=[container("c", {"cpu": "1"})], overhead={"cpu": "250m"})
    resources.share_requests(first, memo)  # type: ignore[arg-type]
    resources.share_requests(second, memo)  # type: ignore[arg-type]
    found = pod_requests(first)
    assert found == {"cpu": Fraction(5, 4)}
    resources._REQUESTS.clear()  # only the shared memo can answer alike now
    assert pod_requests(second) is found
    assert pod_non_zero_requests(second) == {"cpu": Fraction(5, 4), "memory": 200 * Mi}
    own = make_pod("c", containers=[container("c", {"cpu": "2"})])
    assert pod_requests(own) == {"cpu": Fraction(2)}
    resources.share_requests(own, memo)  # type: ignore[arg-type]
    assert pod_requests(own) == {"cpu": Fraction(2)}


def _status(name: str, requests: str | None = None, allocated: str | None = None) -> dict:
    cs: dict = {"name": name}
    if requests is not None:
        cs["resources"] = {"requests": {"cpu": requests}}
    if allocated is not None:
        cs["allocatedResources"] = {"cpu": allocated}
    return cs


INFEASIBLE = {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
DEFERRED = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}


@pytest.mark.parametrize(
    ("statuses", "init_statuses", "conditions", "cpu"),
    [
        ([], [], [], "5/2"),  # a 2 + sidecar 0.5; no status: the spec
        ([_status("a", "3")], [], [], "7/2"),  # resized up and actuated: what it holds
        ([_status("a", "1", "1")], [], [], "5/2"),  # a resize down not done yet: the spec
        ([_status("a", "1", "4")], [], [], "9/2"),  # allocated above both
        ([_status("a", "1")], [], [DEFERRED], "5/2"),  # deferred: still the larger
        ([_status("a", "1")], [], [INFEASIBLE], "3/2"),  # infeasible: only what it holds
        ([_status("a", None, "4")], [], [], "5/2"),  # no resources reported: the spec
        ([], [_status("s", "2")], [], "4"),  # a sidecar's status counts (a 2 + s 2)
        ([], [_status("i", "5")], [], "5/2"),  # an init container's does not
    ],
    ids=[
        "no-status",
        "resized-up",
        "resize-down-pending",
        "allocated-above-both",
        "deferred",
        "infeasible",
        "no-resources-reported",
        "sidecar-status",
        "init-status",
    ],
)
def test_a_pod_resized_in_place_counts_what_its_containers_hold(
    statuses: list[dict], init_statuses: list[dict], conditions: list[dict], cpu: str
) -> None:
    """kube-scheduler's accounting with InPlacePodVerticalScaling (``UseStatusResources``)."""
    obj = pod_dict(
        containers=[container("a", {"cpu": "2"})],
        init_containers=[
            container("i", {"cpu": "1"}),
            container("s", {"cpu": "500m"}, restart_policy="Always"),
        ],
        node_name="n1",
    )
    obj["status"] = {
        "containerStatuses": statuses,
        "initContainerStatuses": init_statuses,
        "conditions": conditions,
    }
    pod = parse_pod(obj)
    assert pod_requests(pod)["cpu"] == Fraction(cpu)
    # Kept apart from the same containers without a status (the lookup by value).
    assert pod_requests(make_pod(**_spec_only()))["cpu"] == Fraction(5, 2)


def _spec_only() -> dict:
    return {
        "containers": [container("a", {"cpu": "2"})],
        "init_containers": [
            container("i", {"cpu": "1"}),
            container("s", {"cpu": "500m"}, restart_policy="Always"),
        ],
        "node_name": "n1",
    }


def test_a_malformed_status_quantity_names_the_field() -> None:
    obj = pod_dict(containers=[container("a", {"cpu": "2"})])
    obj["status"] = {"containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "x"}}}]}
    with pytest.raises(ModelError) as error:
        parse_pod(obj)
    assert str(error.value).startswith(
        "Pod default/p: status.containerStatuses[0].resources.requests.cpu: "
    )


_MILLI = st.integers(0, 4000)


@settings(max_examples=200, deadline=None)
@given(
    spec=st.lists(_MILLI, min_size=1, max_size=3),
    reported=st.lists(st.tuples(st.one_of(st.none(), _MILLI), _MILLI), min_size=1, max_size=3),
    infeasible=st.booleans(),
)
def test_status_resources_count_as_kube_scheduler_counts_them(
    spec: list[int], reported: list[tuple[int | None, int]], infeasible: bool
) -> None:
    """Per container, the larger of spec, reported and allocated; only reported and allocated
    when the resize is infeasible; a container without reported resources counts its spec."""
    names = [f"c{i}" for i in range(len(spec))]
    obj = pod_dict(
        containers=[container(n, {"cpu": f"{m}m"}) for n, m in zip(names, spec, strict=True)]
    )
    statuses = []
    for name, (actual, allocated) in zip(names, reported, strict=False):
        status: dict = {"name": name, "allocatedResources": {"cpu": f"{allocated}m"}}
        if actual is not None:
            status["resources"] = {"requests": {"cpu": f"{actual}m"}}
        statuses.append(status)
    conditions = [{"type": "PodResizePending", "reason": "Infeasible"}] if infeasible else []
    obj["status"] = {"containerStatuses": statuses, "conditions": conditions}
    expected = 0
    for i, wanted in enumerate(spec):
        actual, allocated = reported[i] if i < len(reported) else (None, 0)
        if actual is None:
            expected += wanted
        elif infeasible:
            expected += max(actual, allocated)
        else:
            expected += max(wanted, actual, allocated)
    assert pod_requests(parse_pod(obj)).get("cpu", 0) == Fraction(expected, 1000)


def test_a_container_holding_its_spec_stays_the_spec_only_container() -> None:
    """Every running pod not being resized reports what its spec asks: no extra object."""
    obj = pod_dict(containers=[container("a", {"cpu": "2"})])
    plain = parse_pod(obj)
    obj["status"] = {"containerStatuses": [_status("a", "2", "2")]}
    assert parse_pod(obj).containers == plain.containers
    obj["status"] = {"containerStatuses": [_status("a", "1", "1")]}  # resized down, not yet
    assert parse_pod(obj).containers[0].status_requests == {"cpu": 1}
