"""Which profile a pod runs under and which of its policies governs the pod.

Both the fast cycle and the reference cycle ask this first; it lives apart from either so
that the reference shares no code with the fast path (an import contract holds it so).
"""

from __future__ import annotations

from policyengine.lang.compiler import DEFAULT_PROFILE, CompiledPolicy, Program
from policyengine.lang.runtime import Env
from policyengine.model.objects import Pod
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView


def profile_for(program: Program, pod: Pod, scheduler_name: str | None = None) -> str:
    """The profile a pod runs under: its own schedulerName when a profile has that name."""
    if scheduler_name:
        return scheduler_name
    if pod.scheduler_name in program.profiles:
        return pod.scheduler_name
    if DEFAULT_PROFILE in program.profiles:
        return DEFAULT_PROFILE
    return next(iter(program.profiles), DEFAULT_PROFILE)


def governing_policy(
    program: Program, pod_view: PodView, context: CycleContext, profile: str
) -> CompiledPolicy | None:
    """The first policy of ``profile`` whose guard holds for the pod; None when none does."""
    return program.governing_policy(profile, Env({"pod": pod_view}, context))
