"""VolumeBinding: every claim of the pod is bound to a volume that reaches the node, or can be
bound or provisioned there (``model.volume_binder`` decides how).

PreFilter rejects the whole pod when a claim is missing, lost, being deleted or not the pod's
own ephemeral claim, and when a claim left to the PV controller (an Immediate class, or a
volume named but not bound yet) is unbound. Bound local volumes restrict the nodes looked at
to their hostnames. Filter runs the binder per node. The score is off in kube-scheduler's
default configuration (its VolumeCapacityPriority feature is alpha), so there is none here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin, PreFilterResult
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import StorageObjects
from policyengine.model.volume_binder import (
    NO_CLAIMS,
    NODE_CONFLICT,
    UNBOUND_IMMEDIATE,
    ClaimMatcher,
    NodeVolumes,
    PodClaims,
    claim_matchers,
    claim_problem,
    eligible_nodes,
    find_pod_volumes,
    pod_claims,
)

NAME = "VolumeBinding"


@dataclass(frozen=True)
class FilterState:
    skip: bool
    prefilter: PreFilterResult | None = None
    claims: PodClaims = NO_CLAIMS
    storage: StorageObjects | None = None
    eligible: frozenset[str] | None = None  # the nodes bound local volumes allow
    # Each waiting claim's matcher (``volume_binder.ClaimMatcher``), by the claim's key.
    matchers: Mapping[str, ClaimMatcher | None] = field(default_factory=dict)


SKIP = FilterState(skip=True)


def needs_check(pod: Pod) -> bool:
    return any(v.uses_claim for v in pod.volumes)


def prepare_filter(
    pod: Pod, snapshot: ClusterSnapshot, config: SchedulerConfig = DEFAULT_CONFIG
) -> FilterState:
    if not needs_check(pod) or not snapshot.storage.known:
        return SKIP
    storage = snapshot.storage
    problem = claim_problem(pod, storage)
    if problem is not None:
        return FilterState(False, PreFilterResult(rejection=problem))
    claims = pod_claims(pod, storage)
    if claims.immediate:
        return FilterState(False, PreFilterResult(rejection=UNBOUND_IMMEDIATE))
    eligible = eligible_nodes(claims.bound, storage)
    prefilter = None
    if eligible is not None:
        missing = sorted(n for n in eligible if n not in snapshot)
        if missing:
            # kube-scheduler looks each name up and stops the cycle with this error.
            prefilter = PreFilterResult(
                rejection=f'nodeinfo not found for node name "{missing[0]}"'
            )
        elif not eligible:
            prefilter = PreFilterResult(rejection=f"node(s) didn't satisfy plugin {NAME}")
        else:
            prefilter = PreFilterResult(node_names=eligible)
    return FilterState(False, prefilter, claims, storage, eligible, claim_matchers(claims, storage))


def prefilter_result(state: FilterState) -> PreFilterResult | None:
    return state.prefilter


def node_volumes(state: FilterState, node: NodeInfo) -> NodeVolumes:
    """The binder's answer for one node (no reasons and no decisions for a skipped pod)."""
    if state.skip or state.storage is None:
        return NodeVolumes()
    if state.eligible is not None and node.name not in state.eligible:
        return NodeVolumes((NODE_CONFLICT,))
    return find_pod_volumes(
        state.claims, state.storage, node.name, node.node.labels, state.matchers
    )


def filter(state: FilterState, node: NodeInfo) -> list[str]:
    if state.skip:
        return []
    found = node_volumes(state, node)
    if found.error is not None:
        return [found.error]
    return list(found.reasons)


PLUGIN = Plugin(
    NAME,
    "volume_binding",
    None,
    0,
    prepare_filter=prepare_filter,
    filter=filter,
    prefilter_result=prefilter_result,
)
