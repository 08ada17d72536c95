"""Plugin arguments and the few behaviours that changed between Kubernetes releases.

Defaults are kube-scheduler's default profile in current Kubernetes (1.3x). ``KUBE_1_28``
reproduces v1.28, which produced the reference cases: the two differ only where noted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from policyengine.model.objects import SCHEDULE_ANYWAY, TopologySpreadConstraint
from policyengine.model.overcommit import Overcommits

# PodTopologySpread's system defaults (``defaultingType: System``), for pods that declare no
# constraints: spread by node and by zone, never a reason to reject a node.
SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(3, "kubernetes.io/hostname", SCHEDULE_ANYWAY),
    TopologySpreadConstraint(5, "topology.kubernetes.io/zone", SCHEDULE_ANYWAY),
)


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
    # PodTopologySpread: constraints applied to pods that declare none, with the selector
    # derived from the Services and controllers selecting the pod (``model.workloads``; their
    # own selectors are not read). System defaulting also scores nodes missing a zone label by
    # the hostname constraint alone. Empty constraints = off (``List`` defaulting, none given).
    spread_default_constraints: tuple[TopologySpreadConstraint, ...] = SYSTEM_DEFAULT_CONSTRAINTS
    spread_system_defaulted: bool = True
    # Since 1.31 nodes left out by a PreFilter node-name result count as
    # UnschedulableAndUnresolvable for preemption; v1.28 treated them as candidates.
    prefilter_absent_nodes_unresolvable: bool = True
    # NodeVolumeLimits counts an in-tree volume whose plugin's migration is GA (EBS, GCE PD,
    # Azure Disk, Cinder) as its CSI driver's on any node with a CSINode; the feature-gated
    # code of older releases also wanted the plugin named in the CSINode's migrated-plugins
    # annotation, as the v1.28 setting keeps doing (model.storage_migration).
    limits_migration_needs_annotation: bool = False
    # Since 1.29 VolumeZone matches a volume's beta zone or region label against the node's
    # GA label when the node lacks the beta one (kubernetes#118923); v1.28 did not.
    volume_zone_beta_as_ga: bool = True
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
    balanced_skips_best_effort=False,
    prefilter_absent_nodes_unresolvable=False,
    limits_migration_needs_annotation=True,
    volume_zone_beta_as_ga=False,
)
