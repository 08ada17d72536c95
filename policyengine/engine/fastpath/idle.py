"""The rules a pod leaves idle, left out of its cycle.

Most rules do nothing for most pods: kube-default's spread and inter-pod affinity rules for a
pod without constraints or terms (in a cluster whose pods have none that reach it), node ports
for a pod wanting none, a rule guarded by ``when wanted_gpus > 0`` for a CPU pod. Such a rule
passes every node or scores none, so the cycle would only carry its column along: look its
keys up, compare its rows, store its values at changed nodes. ``CompiledRule.idle`` tells it
from the pod alone; the cycle runs the *active* plan (the others left out) and lists the idle
score rules back in ``Decision.scores`` with the values they would have had: no raw value,
normalised to 0, adding nothing to the totals (rules scoring no feasible node add exactly
nothing: ``cycle._score_all``).

A score rule whose weight a float64 does not hold exactly stays in: its zero contribution is
computed as every other rule's is. ``tests/engine/test_idle.py`` holds cycles with and
without the idle rules equal, and the fast-path property tests hold both to the reference.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from policyengine.engine.fastpath.sharekeys import PolicyPlan, RulePlan
from policyengine.lang.runtime import Env
from policyengine.model.cached import kept_on

# Weights a float64 holds exactly: ``weight * 0.0`` is then a zero, never NaN.
EXACT_WEIGHT = 2**53


class IdleTests:
    """The idle tests of one policy plan's rules, and the active plans made of it (one per
    set of idle rules, the very object each time: column and state caches key on it)."""

    def __init__(self, plan: PolicyPlan):
        self.plan = plan
        tests = [
            (at, rule, rule.rule.idle)
            for at, rule in enumerate((*plan.filters, *plan.scores))
            if rule.rule.idle is not None and _may_idle(rule)
        ]
        # A rule reading nothing of the pod that its class leaves out, and nothing of the
        # cluster but each node (``keys_alike``), is idle for every pod of a class alike: its
        # test is asked once per class and configuration (``CycleContext.alike``).
        self._alike = tuple((at, test) for at, rule, test in tests if _per_class(rule))
        self._each = tuple((at, test) for at, rule, test in tests if not _per_class(rule))
        self._active: dict[tuple[int, ...], PolicyPlan] = {}
        self._positions: dict[int, tuple[int | None, ...]] = {}
        self._lock = threading.Lock()

    def active(self, env: Env) -> PolicyPlan:
        """The plan without the rules idle for ``env``'s pod (``plan`` itself when none is)."""
        memo = getattr(env.context, "alike", None)
        idle = None if memo is None else memo.get(self)
        if idle is None:
            idle = tuple(at for at, test in self._alike if _holds(test, env))
            if memo is not None:
                memo[self] = idle
        if self._each:
            idle = tuple(sorted((*idle, *(at for at, test in self._each if _holds(test, env)))))
        if not idle:
            return self.plan
        found = self._active.get(idle)
        if found is None:
            with self._lock:
                found = self._active.get(idle)
                if found is None:
                    found = self._active[idle] = self._without(frozenset(idle))
                    self._positions[id(found)] = _positions(self.plan, found)
        return found

    def positions(self, active: PolicyPlan) -> tuple[int | None, ...]:
        """For each score rule of the plan, its position among ``active``'s (None: idle)."""
        return self._positions[id(active)]

    def _without(self, idle: frozenset[int]) -> PolicyPlan:
        plan = self.plan
        count = len(plan.filters)
        return PolicyPlan(
            tuple(rule for at, rule in enumerate(plan.filters) if at not in idle),
            tuple(rule for at, rule in enumerate(plan.scores) if count + at not in idle),
        )


def _per_class(rule: RulePlan) -> bool:
    return rule.alike and rule.keys_alike


def _may_idle(rule: RulePlan) -> bool:
    return rule.rule.kind == "filter" or abs(rule.rule.weight) <= EXACT_WEIGHT


def _holds(test: Callable[[Env], bool], env: Env) -> bool:
    try:
        return bool(test(env))
    except Exception:  # the rule's own evaluation meets it and reports it
        return False


def idle_tests(plan: PolicyPlan) -> IdleTests:
    """The idle tests of ``plan``, made once and kept on it (plans are made once per policy
    and cached by ``policy_plan``), as ``functools.cached_property`` keeps a value."""
    return kept_on(plan, "_idle_tests", IdleTests)


def _positions(plan: PolicyPlan, active: PolicyPlan) -> tuple[int | None, ...]:
    at = {id(rule): i for i, rule in enumerate(active.scores)}
    return tuple(at.get(id(rule)) for rule in plan.scores)


class WithIdleRules(Sequence[Any]):
    """``active``'s per-rule sequence as one of ``plan``'s rules: the idle rules' places hold
    ``missing`` (their value read from the active ones when read)."""

    __slots__ = ("_at", "_missing", "_values")

    def __init__(self, values: Sequence[Any], at: tuple[int | None, ...], missing: Any):
        self._values = values
        self._at = at
        self._missing = missing

    def __len__(self) -> int:
        return len(self._at)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        at = self._at[index]
        return self._missing if at is None else self._values[at]


_UNSCORED: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def unscored(size: int) -> tuple[np.ndarray, np.ndarray]:
    """An idle score rule's raw values and scored flags over ``size`` rows (never written)."""
    found = _UNSCORED.get(size)
    if found is None:
        values, scored = np.zeros(size), np.zeros(size, bool)
        values.flags.writeable = False
        scored.flags.writeable = False
        found = _UNSCORED[size] = (values, scored)
        if len(_UNSCORED) > 16:
            del _UNSCORED[next(iter(_UNSCORED))]
    return found


def zero_at(rows: np.ndarray) -> np.ndarray:
    """An idle score rule's normalised values at ``rows``."""
    return np.zeros(len(rows))
