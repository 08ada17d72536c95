"""The chosen node's volume decisions, and the snapshot once they are assumed.

When a pod with claims waiting for their first consumer is placed, kube-scheduler's
VolumeBinding decides, for the chosen node, which available volume each claim binds to and
which claims are provisioned there, and assumes that at once (its Reserve step): the next pod
sees those volumes taken and those claims' node selected. ``pod_volumes`` asks the binder for
that node's decisions (``Decision.volumes``); ``assume_volumes`` applies them to a snapshot, as
``simulate`` and the scheduler loop do with the pod itself.
"""

from __future__ import annotations

from policyengine.model.objects import Pod
from policyengine.model.plugins import volume_binding
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.volume_binder import NO_VOLUMES, PodVolumes, assume
from policyengine.schedlib.context import CycleContext


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
