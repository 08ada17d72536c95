"""The chosen node's volume decisions, and the snapshot once they are assumed.

When a pod with claims waiting for their first consumer is placed, kube-scheduler's
VolumeBinding decides, for the chosen node, which available volume each claim binds to and
which claims are provisioned there, and assumes that at once (its Reserve step): the next pod
sees those volumes taken and those claims' node selected. ``pod_volumes`` asks the binder for
that node's decisions (``Decision.volumes``); ``assume_volumes`` applies them to a snapshot, as
``simulate`` and the scheduler loop do with the pod itself.

Bound local volumes make VolumeBinding's PreFilter name the only nodes kube-scheduler filters;
``reported`` gives the FailedScheduling line the rejections kube-scheduler counts then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from policyengine.engine.decision import Rejection
from policyengine.model.objects import Pod
from policyengine.model.plugins import volume_binding
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.volume_binder import NO_VOLUMES, PodVolumes, assume
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.storage import volume_binding_node_names


def pod_volumes(
    pod: Pod,
    snapshot: ClusterSnapshot,
    node: str,
    config: SchedulerConfig = DEFAULT_CONFIG,
    context: CycleContext | None = None,
) -> PodVolumes:
    """What binding the pod's waiting claims on ``node`` takes (nothing when it has none, or
    when the node cannot take them: a policy without ``volume_binding`` may choose one).
    ``context``: the cycle's, whose VolumeBinding state is reused."""
    if not pod.uses_storage or node not in snapshot:
        return NO_VOLUMES

    def prepare() -> volume_binding.FilterState:
        return volume_binding.prepare_filter(pod, snapshot, config)

    state = (
        prepare() if context is None else context.prepared((volume_binding.NAME, "filter"), prepare)
    )
    found = volume_binding.node_volumes(state, snapshot.node(node))
    if found.reasons or found.error is not None:
        return NO_VOLUMES
    return found.volumes


def assume_volumes(snapshot: ClusterSnapshot, node: str, volumes: PodVolumes) -> ClusterSnapshot:
    """``snapshot`` with the decisions assumed: matched volumes name their claims, claims to
    provision name ``node``."""
    if not volumes:
        return snapshot
    return snapshot.with_storage(assume(snapshot.storage, node, volumes))


# How kube-scheduler since v1.31 reports the nodes a PreFilter's node names left out.
UNSATISFIED = "node(s) didn't satisfy plugin(s) [VolumeBinding]"
_UNSATISFIED = (Rejection("volume_binding", (UNSATISFIED,)),)


def reported(
    infeasible: Mapping[str, Sequence[Rejection]],
    context: CycleContext,
    filters: Iterable[str],
) -> Mapping[str, Sequence[Rejection]]:
    """The rejections the FailedScheduling line counts. When the pod's bound local volumes
    restrict the nodes (VolumeBinding's PreFilter result names them) and the policy has the
    ``volume_binding`` filter (``filters``: its filter rules' names), kube-scheduler filters
    no other node: v1.28 leaves those out of its line, later releases count each as
    ``UNSATISFIED`` (``SchedulerConfig.prefilter_absent_nodes_unresolvable``). The engine
    still evaluates them (``filter`` and ``explain`` show why they fail), but the line is
    kube-scheduler's."""
    if not context.pod.pod.uses_storage or "volume_binding" not in filters:
        return infeasible
    kept = volume_binding_node_names(context)
    if kept is None:
        return infeasible
    out: dict[str, Sequence[Rejection]] = {}
    absent = context.config.prefilter_absent_nodes_unresolvable
    for name, rejections in infeasible.items():
        if name in kept:
            out[name] = rejections
        elif absent:
            out[name] = _UNSATISFIED
    return out
