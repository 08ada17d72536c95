"""PodDisruptionBudgets (``policy/v1``) as preemption reads them.

Preemption prefers victims whose eviction keeps every budget; kube-scheduler counts a budget by
its ``status.disruptionsAllowed`` (what the disruption controller last computed), minus the
victims already chosen. A snapshot written by hand often has no status, so when it is absent
the allowance is computed here the way the disruption controller would for pods that are all
healthy: ``minAvailable`` (a count, or a percentage of the matching pods rounded up) subtracted
from the matching pods, or ``maxUnavailable`` (likewise) itself. As in kube-scheduler, a budget
with a nil or empty selector protects no pod during preemption, and a pod already listed in
``status.disruptedPods`` is not counted again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policyengine.model.labels import LabelSelector, SelectorError
from policyengine.model.objects import Pod
from policyengine.model.parse import _Ctx, _int, _map, _metadata, parse_label_selector

PDB_KIND = "PodDisruptionBudget"
PDB_API_GROUP = "policy"

IntOrPercent = int | str  # 2 or "50%"


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    disruptions_allowed: int | None = None  # status.disruptionsAllowed; None when no status
    disrupted_pods: frozenset[str] = frozenset()  # status.disruptedPods (pod names)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, pod: Pod) -> bool:
        """Whether the budget covers ``pod`` for preemption (empty selectors cover nothing)."""
        if pod.namespace != self.namespace or self.selector is None:
            return False
        if not self.selector.match_labels and not self.selector.match_expressions:
            return False
        try:
            return self.selector.compile().matches(pod.labels)
        except SelectorError:
            return False

    def allowed(self, pods: Iterable[Pod]) -> int:
        """Disruptions allowed now: the status when present, else computed over ``pods``
        (the running pods of the cluster, each taken as healthy)."""
        if self.disruptions_allowed is not None:
            return self.disruptions_allowed
        healthy = sum(1 for p in pods if not p.is_terminating and self.selects(p))
        if self.min_available is not None:
            return max(0, healthy - _scaled(self.min_available, healthy))
        if self.max_unavailable is not None:
            return max(0, _scaled(self.max_unavailable, healthy))
        return 0


def _scaled(value: IntOrPercent, total: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(int(value[:-1]) * total / 100)


def _int_or_percent(ctx: _Ctx, value: Any, path: str) -> IntOrPercent | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ctx.fail(path, f"expected an integer or a percentage, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ctx.fail(path, f"must not be negative, got {value}")
        return value
    if (
        isinstance(value, str)
        and value.endswith("%")
        and value[:-1].isascii()
        and value[:-1].isdigit()
    ):
        return value
    raise ctx.fail(path, f'expected an integer or a percentage such as "50%", got {value!r}')


def is_pdb_object(obj: Mapping[str, Any]) -> bool:
    """A ``policy`` PodDisruptionBudget; items of a PodDisruptionBudgetList carry no
    apiVersion of their own."""
    api = obj.get("apiVersion")
    if obj.get("kind") != PDB_KIND:
        return False
    return api is None or (isinstance(api, str) and api.split("/", 1)[0] == PDB_API_GROUP)


def parse_pdb(obj: Mapping[str, Any], source: str | None = None) -> PodDisruptionBudget:
    """A budget from its API dict; raises ``ModelError`` naming the object and field."""
    ctx, _ = _metadata(obj, PDB_KIND, source)
    spec = _map(ctx, obj.get("spec"), "spec")
    status = _map(ctx, obj.get("status"), "status")
    min_available = _int_or_percent(ctx, spec.get("minAvailable"), "spec.minAvailable")
    max_unavailable = _int_or_percent(ctx, spec.get("maxUnavailable"), "spec.maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        raise ctx.fail("spec", "minAvailable and maxUnavailable cannot both be set")
    allowed = None
    if "disruptionsAllowed" in status:
        allowed = _int(ctx, status.get("disruptionsAllowed"), "status.disruptionsAllowed")
    disrupted = _map(ctx, status.get("disruptedPods"), "status.disruptedPods")
    selector = parse_label_selector(ctx, spec.get("selector"), "spec.selector")
    if selector is not None:
        # The API server rejects such a budget; a snapshot may still hold one, and silently
        # protecting nothing would hide the mistake.
        try:
            selector.compile()
        except SelectorError as exc:
            raise ctx.fail("spec.selector", str(exc)) from None
    return PodDisruptionBudget(
        namespace=ctx.namespace or "default",
        name=ctx.name or "",
        selector=selector,
        min_available=min_available,
        max_unavailable=max_unavailable,
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(str(name) for name in disrupted),
    )
