"""Taints and tolerations, as ``v1helper`` and the TaintToleration plugin use them.

A toleration matches a taint when its effect is empty or equal, its key is empty or equal, and
then ``Exists`` always holds while ``Equal`` (also spelled as the empty operator) compares
values. So ``{operator: Exists}`` with no key and no effect tolerates every taint. Filtering
looks only at ``NoSchedule`` and ``NoExecute`` taints, in the node's order, and reports the
first one left untolerated; ``PreferNoSchedule`` taints only lower the score.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)

EQUAL = "Equal"
EXISTS = "Exists"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE

    def __str__(self) -> str:
        # The spelling kube-scheduler puts in "untolerated taint {key: value}".
        return f"{{{self.key}: {self.value}}}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""  # "" means Equal
    value: str = ""
    effect: str = ""  # "" means every effect
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", EQUAL):
            return self.value == taint.value
        return self.operator == EXISTS


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def first_untolerated(
    taints: Iterable[Taint],
    tolerations: tuple[Toleration, ...],
    effects: tuple[str, ...] = (NO_SCHEDULE, NO_EXECUTE),
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates (kube's order)."""
    for taint in taints:
        if taint.effect in effects and not tolerates(tolerations, taint):
            return taint
    return None


def prefer_no_schedule_tolerations(tolerations: Iterable[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations that can tolerate a PreferNoSchedule taint (empty effect included)."""
    return tuple(t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def count_intolerable_prefer_no_schedule(
    taints: Iterable[Taint], tolerations: tuple[Toleration, ...]
) -> int:
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerates(tolerations, taint)
    )


def tolerates_unschedulable(tolerations: Iterable[Toleration]) -> bool:
    """Whether a cordoned node (``spec.unschedulable``) lets the pod in."""
    return tolerates(tolerations, Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE))
