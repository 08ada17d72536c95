"""The names, suffixes and keys of policy test files, and the error every problem with one is."""

from __future__ import annotations

TEST_SUFFIXES = (".test.yaml", ".test.yml", "_test.yaml", "_test.yml")
EXPECTATIONS = (
    "feasible",
    "infeasible",
    "filter",
    "chosen",
    "chosen_one_of",
    "score_order",
    "unschedulable",
    "policy",
    "gang",
)
DEFAULT_NAMESPACE = "default"
FILE_KEYS = ("policy", "cluster", "cases")
CASE_KEYS = ("name", "pod", "scheduler_name", "seed", "cluster", *EXPECTATIONS)
KIND_OF = {
    "nodes": "Node",
    "pods": "Pod",
    "namespaces": "Namespace",
    "pod_groups": "PodGroup",
    # What default topology spreading derives a pod's selector from.
    "services": "Service",
    "replica_sets": "ReplicaSet",
    "stateful_sets": "StatefulSet",
    "replication_controllers": "ReplicationController",
}
CLUSTER_KEYS = ("snapshot", *KIND_OF)
# Inline objects may leave these out (a PodGroup is known by its API group too).
DEFAULT_FIELDS = {"pod_groups": {"apiVersion": "scheduling.x-k8s.io/v1alpha1"}}
GANG_KEYS = ("placed", "domain", "message")
SHOWN = 5  # names listed in a "did you mean" or "known names" hint


class PolicyTestError(Exception):
    """A test file that cannot be run; ``str(error)`` names file, line, case and field."""
