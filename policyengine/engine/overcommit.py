"""The scheduler configuration a pod's cycle runs with once its governing policy is known.

A policy's ``overcommit`` statements change what NodeResourcesFit and BalancedAllocation count
as a node's allocatable cpu, for Burstable and BestEffort pods (``model.overcommit``). The
builtins read it from the cycle's ``SchedulerConfig``, so every path that evaluates a policy —
the cycle, the reference evaluator behind ``explain``, policy tests' coverage — derives the
same configuration here. Derived configurations are memoised: the class cache tells
configurations apart by identity, and one object per (base, overcommit) keeps pods of one
class hitting the same cache entry.
"""

from __future__ import annotations

import threading

from policyengine.lang.compiler import CompiledPolicy
from policyengine.model.objects import Pod
from policyengine.model.overcommit import Overcommits, overcommits_for
from policyengine.model.plugins.config import SchedulerConfig

_MEMO_LIMIT = 256
_memo: dict[tuple[int, Overcommits], tuple[SchedulerConfig, SchedulerConfig]] = {}
_lock = threading.Lock()


def policy_config(policy: CompiledPolicy, pod: Pod, config: SchedulerConfig) -> SchedulerConfig:
    """``config`` with the policy's overcommit for ``pod`` (``config`` itself when none applies)."""
    if not policy.overcommit:
        return config
    rules = overcommits_for(pod, policy.overcommit, policy.overcommit_max_load)
    if not rules:
        return config
    key = (id(config), rules)
    with _lock:
        found = _memo.get(key)
        if found is not None and found[0] is config:
            return found[1]
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        derived = config.with_(overcommit=rules)
        _memo[key] = (config, derived)
        return derived
