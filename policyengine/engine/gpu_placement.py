"""Which GPU device(s) a placed pod gets inside its node, and how that travels with the pod.

The node is chosen by the policy; inside it, the device follows the policy's ``device``
statement (best fit by default: the fitting device left with the least free capacity; spread;
or the device whose use grows fragmentation least), the same choice the GPU builtins measure
(``gpu_device``, ``gpu_fragmentation_delta``), so what a policy scored is what happens; a pod
annotated ``hami.io/gpu-scheduler-policy: spread`` gets the fitting device(s) left with the
most free capacity instead, as HAMi's spread policy. The grants are recorded on the ``Decision`` and written onto the
pod as HAMi's assignment annotations: the snapshot's device accounting reads them when the
pod is assumed (``simulate``, the loop's assume cache), and the binder sends them to the API
server before the Binding, where HAMi's device plugin reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from policyengine.engine.profiles import profile_for
from policyengine.lang.compiler import CompiledPolicy, Program
from policyengine.lang.runtime import Env
from policyengine.model.fragmentation import (
    LEAST_FRAGMENTATION,
    Shapes,
    choose_device,
    host_free,
    pod_host,
)
from policyengine.model.frozen import FrozenDict
from policyengine.model.gpu_devices import BEST_FIT, MOST_FREE, GpuDemand, Grant
from policyengine.model.gpu_share import pod_demand
from policyengine.model.hami import GPU_POLICY, assignment_annotations
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.gpu import DEFAULT_CHOICE, parse_host_shapes
from policyengine.schedlib.views import PodView


def choose_devices(
    snapshot: ClusterSnapshot,
    node: str,
    pod: Pod,
    demand: GpuDemand | None = None,
    choice: tuple[str, Shapes] | None = None,
) -> tuple[Grant, ...]:
    """The pod's grants on ``node`` under ``choice`` (the governing policy's, from
    ``device_choice_for``; None: best fit, or most free for a pod asking HAMi's spread
    policy); empty when it asks no GPU or (a policy that checks no device fit placed it
    anyway) no device has room. ``demand``: the pod's ``pod_demand`` when the caller has it."""
    if demand is None:
        demand = pod_demand(pod)
    if demand.empty:
        return ()
    info = snapshot.get(node)
    if info is None:
        return ()
    if choice is None:
        return info.gpus.choose(demand, device_rule(pod)) or ()
    rule, shapes = choice
    cpu, memory = host_free(info)
    pod_cpu, pod_memory = pod_host(pod)
    return choose_device(info.gpus, demand, rule, shapes, cpu - pod_cpu, memory - pod_memory) or ()


_MODES = {"best_fit": BEST_FIT, "spread": MOST_FREE, "least_fragmentation": LEAST_FRAGMENTATION}


def device_choice_for(policy: CompiledPolicy | None, pod: Pod, env: Env) -> tuple[str, Shapes]:
    """How ``pod`` gets its devices under ``policy``: what the pod asks with
    ``hami.io/gpu-scheduler-policy`` when it asks (``spread``: most free; anything else: best
    fit), else the policy's ``device`` statement (its shapes evaluated for the pod; shapes that
    fail to evaluate or to parse leave best fit), else best fit. The builtins measure the
    same choice (``CycleContext.device_choice``)."""
    asked = pod.annotations.get(GPU_POLICY, "").strip()
    if asked:
        return (MOST_FREE if asked == "spread" else BEST_FIT), ()
    device = policy.device if policy is not None else None
    if device is None:
        return DEFAULT_CHOICE
    rule = _MODES.get(device.mode, BEST_FIT)
    if rule != LEAST_FRAGMENTATION:
        return rule, ()
    if device.shapes is None:
        return DEFAULT_CHOICE
    try:
        shapes = parse_host_shapes(device.shapes(env))
    except Exception:  # an evaluation error or a bad shape: the default, never a crash
        return DEFAULT_CHOICE
    return rule, shapes


def governing_device_choice(
    program: Program, pod: Pod, snapshot: ClusterSnapshot, scheduler_name: str | None = None
) -> tuple[str, Shapes]:
    """``device_choice_for`` outside a cycle — where preemption places a pod, or an extender
    binds one kube-scheduler placed: the choice of the policy governing ``pod`` (its profile
    as a cycle picks it), its shapes evaluated on ``snapshot`` (learned shapes: from the GPU
    pods running there). So a pod gets the device its policy would give it however it was
    placed."""
    view = PodView(pod)
    env = Env({"pod": view}, CycleContext(snapshot, view))
    policy = program.governing_policy(profile_for(program, pod, scheduler_name), env)
    return device_choice_for(policy, pod, env)


def device_rule(pod: Pod) -> str:
    """The device choice ``pod`` asks for with ``hami.io/gpu-scheduler-policy`` (``spread``:
    most free; anything else, ``binpack`` included: best fit)."""
    return MOST_FREE if pod.annotations.get(GPU_POLICY, "").strip() == "spread" else BEST_FIT


def gpu_annotations(grants: Sequence[Grant], node: str, now: int) -> dict[str, str]:
    """The annotations the binder patches onto a pod given ``grants`` (none when empty)."""
    return assignment_annotations(grants, node, now) if grants else {}


def with_devices(pod: Pod, node: str, grants: Sequence[Grant], now: int = 0) -> Pod:
    """``pod`` carrying HAMi's assignment annotations for ``grants`` (unchanged when none)."""
    if not grants:
        return pod
    annotations = {**pod.annotations, **gpu_annotations(grants, node, now)}
    return replace(pod, annotations=FrozenDict(annotations))
