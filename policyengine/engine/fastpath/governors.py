"""The policy that governs a pod, decided once per pod class.

A profile's policies are tried in order and the first whose ``match`` holds governs the pod
(``Program.governing_policy``): under the shipped profile that is up to six expressions per
pod, every cycle. When every ``match`` of a profile reads only what the pods of a class share
(``sharekeys.alike_for_a_class``), the first pod of a class decides for the others: the
answer is kept in the class cache (``ClassCache.governor``) beside the class's columns.
"""

from __future__ import annotations

from collections.abc import Hashable

from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.fastpath.sharekeys import alike_for_a_class
from policyengine.lang.compiler import CompiledPolicy, Program
from policyengine.lang.reads import expression_reads
from policyengine.lang.runtime import Env
from policyengine.model.cached import kept_on


def governing_policy(
    program: Program,
    profile: str,
    pod_env: Env,
    classes: ClassCache,
    klass: Hashable | None,
) -> CompiledPolicy | None:
    """``program.governing_policy(profile, pod_env)``, once per class (``klass``: the pod's
    class; None, or a profile whose matches read more than a class shares: every pod)."""
    if klass is None or not decided_by_class(program, profile):
        return program.governing_policy(profile, pod_env)
    return classes.governor(
        (klass, profile), program, lambda: program.governing_policy(profile, pod_env)
    )


def decided_by_class(program: Program, profile: str) -> bool:
    """Whether every ``match`` of the profile's policies reads only what a class shares
    (worked out once per program and profile)."""
    known: dict[str, bool] = kept_on(program, "_governed_by_class", lambda _: {})
    found = known.get(profile)
    if found is None:
        found = known[profile] = all(
            _match_alike(policy, program) for policy in program.governors(profile)
        )
    return found


def _match_alike(policy: CompiledPolicy, program: Program) -> bool:
    if policy.match_expr is None:
        return True  # the policy matches every pod
    if program.checked is None:
        return False
    reads = expression_reads(policy.match_expr, program.checked)
    return reads is not None and alike_for_a_class(reads)
