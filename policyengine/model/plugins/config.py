"""Plugin arguments and the few behaviours that changed between Kubernetes releases.

Defaults are kube-scheduler's default profile in current Kubernetes (1.3x). ``KUBE_1_28``
reproduces v1.28, which produced the reference cases: the two differ only where noted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from policyengine.model.objects import TopologySpreadConstraint
from policyengine.model.overcommit import Overcommits


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    # NodeResourcesFit: LeastAllocated over these (resource, weight) pairs.
    fit_score_resources: tuple[tuple[str, int], ...] = (("cpu", 1), ("memory", 1))
    # NodeResourcesFit: extended resources (or whole "vendor.com" groups) the filter ignores.
    ignored_extended_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    # NodeResourcesBalancedAllocation resources.
    balanced_resources: tuple[str, ...] = ("cpu", "memory")
    # Since 1.33 BalancedAllocation skips pods that request none of its resources
    # (kubernetes#129138); v1.28 scored them.
    balanced_skips_best_effort: bool = True
    # InterPodAffinity args.
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False
    # PodTopologySpread: constraints applied to pods that declare none. kube derives their
    # selector from the Services/ReplicaSets/StatefulSets selecting the pod; the model has no
    # such objects, so a default constraint applies only when it carries its own labelSelector.
    # Empty = off (kube's "List" defaulting with no constraints).
    spread_default_constraints: tuple[TopologySpreadConstraint, ...] = ()
    spread_system_defaulted: bool = False
    # Since 1.31 nodes left out by a PreFilter node-name result count as
    # UnschedulableAndUnresolvable for preemption; v1.28 treated them as candidates.
    prefilter_absent_nodes_unresolvable: bool = True
    # ImageLocality counts init containers' images (and containers) since 1.26.
    image_locality_init_containers: bool = True
    # Not kube: the governing policy's overcommit for the pod being scheduled (empty for
    # Guaranteed pods and policies without one); NodeResourcesFit and BalancedAllocation count
    # a compressible resource's allocatable times its ratio (model.overcommit).
    overcommit: Overcommits = ()
    # DefaultPreemption args: the dry runs stop once this many candidate nodes are found
    # (max(percentage of the nodes, absolute), at most all nodes), as kube-scheduler does.
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def with_(self, **changes: object) -> SchedulerConfig:
        return replace(self, **changes)  # type: ignore[arg-type]


DEFAULT_CONFIG = SchedulerConfig()
KUBE_1_28 = SchedulerConfig(
    balanced_skips_best_effort=False, prefilter_absent_nodes_unresolvable=False
)
