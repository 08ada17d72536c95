"""Which GPU device(s) a placed pod gets inside its node, and how that travels with the pod.

The node is chosen by the policy; inside it, the device follows the same rule the GPU builtins
use (``best_fit_device``: the fitting device left with the least free capacity), so what a
policy scored is what happens; a pod annotated ``hami.io/gpu-scheduler-policy: spread`` gets
the fitting device(s) left with the most free capacity instead, as HAMi's spread policy. The grants are recorded on the ``Decision`` and written onto the
pod as HAMi's assignment annotations: the snapshot's device accounting reads them when the
pod is assumed (``simulate``, the loop's assume cache), and the binder sends them to the API
server before the Binding, where HAMi's device plugin reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from policyengine.model.frozen import FrozenDict
from policyengine.model.gpu_devices import BEST_FIT, MOST_FREE, GpuDemand, Grant
from policyengine.model.gpu_share import pod_demand
from policyengine.model.hami import GPU_POLICY, assignment_annotations
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot


def choose_devices(
    snapshot: ClusterSnapshot, node: str, pod: Pod, demand: GpuDemand | None = None
) -> tuple[Grant, ...]:
    """The pod's grants on ``node`` by best fit (by most free for a pod asking HAMi's spread
    policy); empty when it asks no GPU or (a policy that checks no device fit placed it
    anyway) no device has room. ``demand``: the pod's ``pod_demand`` when the caller has it."""
    if demand is None:
        demand = pod_demand(pod)
    if demand.empty:
        return ()
    info = snapshot.get(node)
    if info is None:
        return ()
    return info.gpus.choose(demand, device_rule(pod)) or ()


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
