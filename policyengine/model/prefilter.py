"""kube-scheduler's whole-pod PreFilter rejections, told from per-node reasons.

When a PreFilter plugin rejects a pod outright, kube-scheduler filters no node and its
FailedScheduling line carries the message alone, without a node count:
``0/7 nodes are available: persistentvolumeclaim "data" not found.`` The policy engine
evaluates filters per node, so such a message reaches it as every node's one reason;
``is_pod_rejection`` recognises the storage plugins' messages (and the one of PreFilters whose
node names have none in common) so the line can be printed as kube-scheduler prints it.
"""

from __future__ import annotations

import re

_PATTERNS = (
    r'persistentvolumeclaim "[^"]*" not found',
    r'persistentvolumeclaim "[^"]*" is being deleted',
    r'persistentvolumeclaim "[^"]*" bound to non-existent persistentvolume "[^"]*"',
    r'waiting for ephemeral volume controller to create the persistentvolumeclaim "[^"]*"',
    r"PVC \S+ was not created for pod \S+ \(pod is not owner\)",
    r"pod has unbound immediate PersistentVolumeClaims",
    r'nodeinfo not found for node name "[^"]*"',
    r"node\(s\) didn't satisfy plugin \S+",
    r"node\(s\) didn't satisfy plugin\(s\) \[[^\]]*\] simultaneously",
    r"PersistentVolumeClaim had no pv name and storageClass name",
    r"PersistentVolume had no name",
    r'storageclass\.storage\.k8s\.io "[^"]*" not found',
    r'persistentvolume "[^"]*" not found',
)
_POD_REJECTION = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))


def is_pod_rejection(reason: str) -> bool:
    """Whether ``reason`` is one of the storage plugins' whole-pod PreFilter messages."""
    return _POD_REJECTION.fullmatch(reason) is not None
