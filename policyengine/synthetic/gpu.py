"""Synthetic GPU-sharing workloads: a cluster of mixed GPU models and an arrival list of whole
and fractional GPU pods, deterministic for a seed.

Used by the fragmentation tests, the ``gpushare`` benchmark and ``simulate --arrivals`` demos.
Objects are plain Kubernetes dicts (nodes with GPU feature discovery labels; pods asking
``nvidia.com/gpu`` for whole GPUs or carrying the ``policyengine.io/gpu-share`` annotation for a
share), so they can be written out as a snapshot or parsed with ``model.parse``.
"""

from __future__ import annotations

import random
from typing import Any

from policyengine.model.gpu_share import SHARE_ANNOTATION

# (product, GPUs per node, MiB per GPU, how common)
MODELS: tuple[tuple[str, int, int, int], ...] = (
    ("NVIDIA-A100-SXM4-80GB", 8, 81920, 3),
    ("NVIDIA-A100-SXM4-40GB", 8, 40960, 3),
    ("NVIDIA-L4", 4, 23034, 2),
    ("Tesla-T4", 4, 15360, 2),
)

# (kind, cores or GPUs, memory percent, how common): a share asks "cores=C,memory=M%" (some
# memory-heavy, some compute-heavy, so devices fill unevenly in two dimensions), a whole pod
# asks C GPUs.
SHAPES: tuple[tuple[str, int, int, int], ...] = (
    ("share", 25, 25, 15),
    ("share", 50, 50, 10),
    ("share", 30, 30, 5),
    ("share", 20, 60, 10),
    ("share", 70, 20, 10),
    ("whole", 1, 0, 15),
    ("whole", 2, 0, 8),
    ("whole", 4, 0, 5),
    ("whole", 8, 0, 3),
)


def gpu_nodes(count: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    weights = [m[3] for m in MODELS]
    nodes = []
    for i in range(count):
        product, gpus, memory, _ = rng.choices(MODELS, weights)[0]
        nodes.append(
            {
                "kind": "Node",
                "metadata": {
                    "name": f"gpu-{i:05d}",
                    "labels": {
                        "kubernetes.io/hostname": f"gpu-{i:05d}",
                        "nvidia.com/gpu.product": product,
                        "nvidia.com/gpu.count": str(gpus),
                        "nvidia.com/gpu.memory": str(memory),
                        "sim.policyengine.io/index": str(i),
                    },
                },
                "status": {
                    "allocatable": {
                        "cpu": "128",
                        "memory": "1Ti",
                        "pods": "250",
                        "nvidia.com/gpu": str(gpus),
                    },
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return nodes


def gpu_arrivals(count: int, seed: int = 0, namespace: str = "jobs") -> list[dict[str, Any]]:
    rng = random.Random(seed + 1)
    weights = [s[3] for s in SHAPES]
    pods = []
    for i in range(count):
        kind, size, memory, _ = rng.choices(SHAPES, weights)[0]
        annotations: dict[str, str] = {}
        resources: dict[str, Any] = {"requests": {"cpu": "1", "memory": "2Gi"}}
        if kind == "share":
            annotations[SHARE_ANNOTATION] = f"cores={size},memory={memory}%"
        else:
            resources["limits"] = {"nvidia.com/gpu": str(size)}
        pods.append(
            {
                "kind": "Pod",
                "metadata": {
                    "name": f"job-{i:06d}",
                    "namespace": namespace,
                    "annotations": annotations,
                },
                "spec": {"containers": [{"name": "c", "image": "worker", "resources": resources}]},
            }
        )
    return pods
