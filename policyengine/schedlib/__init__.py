"""schedlib: the scheduling environment the language sees — ``pod``, ``node`` and builtins.

``default_schema()`` is the declaration table every command checks and compiles policies
against: the roots ``pod`` (fixed for a cycle) and ``node`` (one per node), their records
(``records``), the builtins (``functions``), the score normalisations the engine implements and
which resources are compressible.
"""

from __future__ import annotations

from functools import cache

from policyengine.lang.schema import EssentialCheck, Root, Schema
from policyengine.model.topology import LEVELS
from policyengine.schedlib.functions import FUNCTIONS
from policyengine.schedlib.gangs import DOMAIN, GANG
from policyengine.schedlib.records import NODE, POD

NORMALIZERS = frozenset({"none", "max", "reverse", "minmax", "pod_topology_spread"})
COMPRESSIBLE_RESOURCES = frozenset({"cpu"})
KNOWN_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "pods",
        "nvidia.com/gpu",
        "nvidia.com/gpumem",
        "nvidia.com/gpumem-percentage",
        "nvidia.com/gpucores",
        "amd.com/gpu",
        "hugepages-2Mi",
        "hugepages-1Gi",
    }
)


# What a policy placing pods must not forget (lint PE311): kube-scheduler's filters that keep a
# pod off a node that cannot hold it, or where it is not allowed. ``use kube`` brings all three.
ESSENTIAL_CHECKS = (
    EssentialCheck(
        "resource fit",
        functions=frozenset({"resources_fit_reasons"}),
        reads=frozenset({("node", "free"), ("node", "allocatable"), ("node", "allocated")}),
    ),
    EssentialCheck(
        "taints and tolerations",
        functions=frozenset({"taint_toleration_reasons"}),
        reads=frozenset({("node", "taints"), ("pod", "tolerations")}),
    ),
    EssentialCheck(
        "node selector and affinity",
        functions=frozenset({"node_affinity_reasons"}),
        reads=frozenset({("pod", "node_selector"), ("pod", "affinity")}),
    ),
)


@cache
def default_schema() -> Schema:
    return Schema(
        roots={
            "pod": Root("pod", POD, "The pod being scheduled.", varies_per_node=False),
            "node": Root("node", NODE, "The node being considered."),
            "gang": Root("gang", GANG, "The gang being placed.", varies_per_node=False),
            "domain": Root("domain", DOMAIN, "The topology domain being considered."),
        },
        functions={f.name: f for f in FUNCTIONS},
        normalizers=NORMALIZERS,
        compressible_resources=COMPRESSIBLE_RESOURCES,
        known_resources=KNOWN_RESOURCES,
        gang_roots=frozenset({"gang", "domain"}),
        topology_levels=LEVELS,
        preempt_roots={
            "victim": Root("victim", POD, "A running pod the pod may evict (preempt rules only).")
        },
        essential_checks=ESSENTIAL_CHECKS,
    )


__all__ = ["default_schema"]
