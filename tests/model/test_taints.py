from __future__ import annotations

import pytest

from policyengine.model.taints import (
    Taint,
    Toleration,
    count_intolerable_prefer_no_schedule,
    first_untolerated,
    prefer_no_schedule_tolerations,
    tolerates_unschedulable,
)

GPU = Taint("nvidia.com/gpu", "present", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration("nvidia.com/gpu", "Exists"), GPU, True),
        (Toleration("nvidia.com/gpu", "Equal", "present"), GPU, True),
        (Toleration("nvidia.com/gpu", "", "present"), GPU, True),  # empty operator = Equal
        (Toleration("nvidia.com/gpu", "Equal", "absent"), GPU, False),
        (Toleration("nvidia.com/gpu", "Equal", ""), GPU, False),
        (Toleration("other", "Exists"), GPU, False),
        (Toleration("", "Exists"), GPU, True),  # empty key + Exists tolerates everything
        (Toleration("", "Exists", effect="NoExecute"), GPU, False),
        (Toleration("nvidia.com/gpu", "Exists", effect="NoSchedule"), GPU, True),
        (Toleration("nvidia.com/gpu", "Exists", effect="PreferNoSchedule"), GPU, False),
        (Toleration("nvidia.com/gpu", "Exists", effect=""), GPU, True),  # empty effect = all
        (Toleration("spot", "Equal", ""), Taint("spot", "", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Gt", "1"), GPU, False),  # unknown operator
    ],
    ids=[
        "exists",
        "equal",
        "empty-operator-is-equal",
        "other-value",
        "empty-value",
        "other-key",
        "empty-key-exists",
        "empty-key-other-effect",
        "same-effect",
        "other-effect",
        "empty-effect",
        "empty-value-matches",
        "unknown-operator",
    ],
)
def test_toleration_matches_taint(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert toleration.tolerates(taint) is expected


def test_first_untolerated_respects_order_and_ignores_prefer() -> None:
    taints = (
        Taint("soft", "x", "PreferNoSchedule"),
        Taint("a", "1", "NoExecute"),
        Taint("b", "2", "NoSchedule"),
    )
    assert first_untolerated(taints, ()) == taints[1]
    assert first_untolerated(taints, (Toleration("a", "Exists"),)) == taints[2]
    assert first_untolerated(taints, (Toleration("", "Exists"),)) is None
    assert str(taints[2]) == "{b: 2}"
    assert str(Taint("spot", "", "NoSchedule")) == "{spot: }"


def test_prefer_no_schedule_counting() -> None:
    taints = (
        Taint("a", "", "PreferNoSchedule"),
        Taint("b", "", "PreferNoSchedule"),
        Taint("c", "", "NoSchedule"),
    )
    tols = prefer_no_schedule_tolerations(
        (Toleration("a", "Exists"), Toleration("b", "Exists", effect="NoSchedule"))
    )
    assert tols == (Toleration("a", "Exists"),)
    assert count_intolerable_prefer_no_schedule(taints, tols) == 1
    assert count_intolerable_prefer_no_schedule(taints, ()) == 2


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ((), False),
        ((Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),), True),
        ((Toleration("node.kubernetes.io/unschedulable", "Exists"),), True),
        ((Toleration("", "Exists"),), True),
        ((Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoExecute"),), False),
    ],
    ids=[
        "none",
        "unschedulable-no-schedule",
        "unschedulable-any-effect",
        "everything",
        "unschedulable-no-execute",
    ],
)
def test_tolerates_unschedulable(tolerations: tuple[Toleration, ...], expected: bool) -> None:
    assert tolerates_unschedulable(tolerations) is expected
