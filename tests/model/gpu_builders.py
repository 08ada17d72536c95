"""Builders for GPU-sharing tests: GPU nodes (GFD labels or HAMi registration) and pods asking
whole GPUs, HAMi shares or ``policyengine.io/gpu-share`` shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policyengine.model.objects import Node, Pod
from policyengine.model.parse import parse_node, parse_pod


def gpu_node(
    name: str,
    count: int = 4,
    memory_mib: int = 40960,
    product: str = "NVIDIA-A100-SXM4-40GB",
    annotations: Mapping[str, str] | None = None,
) -> Node:
    return parse_node(
        {
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "nvidia.com/gpu.product": product,
                    "nvidia.com/gpu.count": str(count),
                    "nvidia.com/gpu.memory": str(memory_mib),
                },
                "annotations": dict(annotations or {}),
            },
            "status": {
                "allocatable": {
                    "cpu": "64",
                    "memory": "512Gi",
                    "pods": "110",
                    "nvidia.com/gpu": str(count * 10),
                },
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )


def gpu_pod(
    name: str,
    *,
    gpus: int = 0,
    share: str | None = None,
    resources: Mapping[str, str] | None = None,
    node: str = "",
    annotations: Mapping[str, str] | None = None,
) -> Pod:
    limits: dict[str, Any] = dict(resources or {})
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    meta_annotations = dict(annotations or {})
    if share is not None:
        meta_annotations["policyengine.io/gpu-share"] = share
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "app", "resources": {"limits": limits}}]
    }
    if node:
        spec["nodeName"] = node
    return parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": meta_annotations},
            "spec": spec,
        }
    )
