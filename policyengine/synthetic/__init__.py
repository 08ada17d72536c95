"""Deterministic synthetic clusters, as ``kubectl get nodes,pods -A -o yaml`` would print them.

The demo, the benchmarks and many tests need clusters shaped like the ones policyengine is
for: thousands of nodes, several GPU models behind a ``dedicated=gpu`` taint, NVLink domains,
racks and zones, and a mix of web services, inference replicas, training jobs, gangs and
best-effort batch pods, some already running and some pending. Real snapshots are large,
private and never the same twice; these are generated from a seed, so a benchmark number or a
test expectation refers to exactly one cluster.

Objects are plain dicts in the API's wire shape rather than model objects, on purpose: they go
through the same parser as a real snapshot, tests can edit them before parsing, and
``to_kubectl_yaml`` writes them as a file for ``policyengine simulate --cluster FILE``.

Determinism: every random decision comes from one ``random.Random(seed)`` and only from its
``random()`` method, whose sequence Python guarantees across versions (``choice``, ``shuffle``
and ``randint`` carry no such promise). Nothing iterates a set or depends on string hashing.

Running pods are placed by the generator itself, never beyond a node's allocatable cpu,
memory, ephemeral storage, GPUs or pod count, and respecting their own taints, node
selectors, GPU model and hostname anti-affinity. Pending pods are only described; whether
they fit is the scheduler's question (the ``demo`` preset includes some that fit nowhere).

Use: ``objects = generate(demo(), seed=1)``; ``text = to_kubectl_yaml(objects)``; or
``python -m policyengine.synthetic demo --seed 1 -o demo.yaml``.

The package keeps one job per module: ``spec`` (what a cluster is made of), ``randomness``,
``nodes``, ``pods``, ``placement`` (where running pods go), ``generate``, ``kubectl_yaml``
(the writer), ``presets`` (the named clusters) and ``gpu`` (GPU-sharing arrivals). It is a
fixture generator for the demo, the benchmarks and the tests: no scheduling layer imports it
(an import contract says so).
"""

from policyengine.synthetic.generate import generate
from policyengine.synthetic.kubectl_yaml import to_kubectl_yaml
from policyengine.synthetic.presets import PRESETS, affinity, basic, demo, gang_sizes, gangs, mixed
from policyengine.synthetic.spec import (
    A100,
    BATCH,
    CPU_SHAPES,
    DEFAULT_SCHEDULER,
    GPU_CLIQUE,
    GPU_COUNT,
    GPU_FAMILY,
    GPU_MEMORY,
    GPU_MODEL_ANNOTATION,
    GPU_PRODUCT,
    GPU_TAINT,
    H100,
    HOSTNAME,
    INFERENCE,
    INSTANCE_TYPE,
    KINDS,
    L4,
    L4_X8,
    NVIDIA_GPU,
    POD_GROUP_API,
    POD_GROUP_LABEL,
    RACK,
    REGION,
    SERVICE,
    TRAINING,
    TRAINING_JOB,
    WORKLOAD_KIND,
    ZONE,
    ClusterSpec,
    GpuModel,
    NodeShape,
    PodTemplate,
)

__all__ = [
    "A100",
    "BATCH",
    "CPU_SHAPES",
    "DEFAULT_SCHEDULER",
    "GPU_CLIQUE",
    "GPU_COUNT",
    "GPU_FAMILY",
    "GPU_MEMORY",
    "GPU_MODEL_ANNOTATION",
    "GPU_PRODUCT",
    "GPU_TAINT",
    "H100",
    "HOSTNAME",
    "INFERENCE",
    "INSTANCE_TYPE",
    "KINDS",
    "L4",
    "L4_X8",
    "NVIDIA_GPU",
    "POD_GROUP_API",
    "POD_GROUP_LABEL",
    "PRESETS",
    "RACK",
    "REGION",
    "SERVICE",
    "TRAINING",
    "TRAINING_JOB",
    "WORKLOAD_KIND",
    "ZONE",
    "ClusterSpec",
    "GpuModel",
    "NodeShape",
    "PodTemplate",
    "affinity",
    "basic",
    "demo",
    "gang_sizes",
    "gangs",
    "generate",
    "mixed",
    "to_kubectl_yaml",
]
