"""The named clusters: the demo a newcomer sees, and the benchmarks' ``basic``, ``affinity``
and ``gangs`` workloads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from policyengine.synthetic.spec import (
    A100,
    BATCH,
    GPU_PRODUCT,
    H100,
    HOSTNAME,
    INFERENCE,
    L4,
    L4_X8,
    SERVICE,
    TRAINING,
    ZONE,
    ClusterSpec,
    PodTemplate,
)

# ---------------------------------------------------------------------------- presets


def demo() -> ClusterSpec:
    """A mid-size GPU cluster for the demo: 240 CPU and 60 GPU nodes in 3 zones.

    60 GPU nodes: 24 H100 and 18 A100 (8 GPUs, NVLink domains of 8) and 18 L4 (4 GPUs), all
    tainted ``dedicated=gpu:NoSchedule``; 6 nodes under a maintenance PreferNoSchedule taint,
    2 cordoned, 1 not ready. 400 running pods use about 70% of the GPUs, scattered so that
    whole nodes are scarce; 150 pending pods, among them pods no node can ever host (16 GPUs
    per pod, a GPU model the cluster lacks, 600Gi of memory).
    """
    web, serving, training, batch = "web", "ml-serving", "ml-training", "batch"
    frontend = PodTemplate(
        "frontend",
        SERVICE,
        namespace=web,
        cpu="500m",
        memory="512Mi",
        sidecar=True,
        zone_spread=True,
        priority=100,
        priority_class="service",
    )
    api = PodTemplate(
        "api",
        SERVICE,
        namespace=web,
        cpu="1",
        memory="2Gi",
        sidecar=True,
        hostname_anti_affinity=True,
        priority=100,
        priority_class="service",
    )
    checkout = PodTemplate(
        "checkout",
        SERVICE,
        namespace=web,
        cpu="2",
        memory="4Gi",
        zone_spread=True,
        priority=100,
        priority_class="service",
    )
    cache = PodTemplate(
        "cache",
        SERVICE,
        namespace=web,
        cpu="4",
        memory="16Gi",
        guaranteed=True,
        hostname_anti_affinity=True,
        priority=100,
        priority_class="service",
    )
    search = PodTemplate(
        "search",
        SERVICE,
        namespace=web,
        cpu="8",
        memory="32Gi",
        ephemeral_storage="20Gi",
        priority=100,
        priority_class="service",
    )
    etl = PodTemplate("etl", BATCH, namespace=batch, priority=-10, priority_class="batch-low")
    report = PodTemplate(
        "report",
        BATCH,
        namespace=batch,
        cpu="1",
        memory="1Gi",
        priority=-10,
        priority_class="batch-low",
    )
    analytics = PodTemplate(
        "analytics-bigmem",
        BATCH,
        namespace=batch,
        cpu="16",
        memory="600Gi",
        priority=-10,
        priority_class="batch-low",
    )
    llm_chat = PodTemplate(
        "llm-chat",
        INFERENCE,
        namespace=serving,
        cpu="12",
        memory="96Gi",
        gpus=1,
        gpu_model=H100.product,
        zone_spread=True,
        priority=500,
        priority_class="inference",
    )
    embed = PodTemplate(
        "embed",
        INFERENCE,
        namespace=serving,
        cpu="4",
        memory="16Gi",
        gpus=1,
        node_selector=((GPU_PRODUCT, L4.product),),
        priority=500,
        priority_class="inference",
    )
    rerank = PodTemplate(
        "rerank",
        INFERENCE,
        namespace=serving,
        cpu="4",
        memory="32Gi",
        gpus=1,
        priority=500,
        priority_class="inference",
    )
    llm_b200 = PodTemplate(
        "llm-b200",
        INFERENCE,
        namespace=serving,
        cpu="12",
        memory="96Gi",
        gpus=1,
        gpu_model="NVIDIA-B200",  # a model the cluster lacks, asked for both ways
        node_selector=((GPU_PRODUCT, "NVIDIA-B200"),),
        priority=500,
        priority_class="inference",
    )
    pretrain = PodTemplate(
        "pretrain-h100",
        TRAINING,
        namespace=training,
        cpu="96",
        memory="1000Gi",
        ephemeral_storage="500Gi",
        gpus=8,
        guaranteed=True,
        gpu_model=H100.product,
        group_sizes=(4, 8),
        priority=1000,
        priority_class="training",
    )
    finetune = PodTemplate(
        "finetune-a100",
        TRAINING,
        namespace=training,
        cpu="40",
        memory="480Gi",
        gpus=4,
        guaranteed=True,
        gpu_model=A100.product,
        group_sizes=(2, 4),
        priority=1000,
        priority_class="training",
    )
    huge = PodTemplate(
        "train-16gpu",
        TRAINING,
        namespace=training,
        cpu="96",
        memory="1000Gi",
        gpus=16,
        guaranteed=True,
        group_sizes=(2,),
        priority=1000,
        priority_class="training",
    )
    return ClusterSpec(
        cpu_nodes=240,
        gpu_nodes=60,
        gpu_models=(replace(H100, share=0.4), replace(A100, share=0.3), replace(L4, share=0.3)),
        zones=("us-east-1a", "us-east-1b", "us-east-1c"),
        racks=30,
        nvlink_domain_size=8,
        maintenance_fraction=0.02,
        cordoned=2,
        not_ready=1,
        running_pods=400,
        pending_pods=150,
        running_mix=(
            replace(frontend, weight=90),
            replace(api, weight=44),
            replace(checkout, weight=30),
            replace(cache, weight=20),
            replace(search, weight=16),
            replace(etl, weight=50),
            replace(report, weight=26),
            replace(llm_chat, weight=30),
            replace(embed, weight=40),
            replace(rerank, weight=20),
            replace(pretrain, weight=16),
            replace(finetune, weight=18),
        ),
        pending_mix=(
            replace(frontend, weight=24),
            replace(api, weight=12),
            replace(checkout, weight=10),
            replace(search, weight=6),
            replace(etl, weight=12),
            replace(report, weight=6),
            replace(analytics, weight=2),
            replace(llm_chat, weight=14),
            replace(embed, weight=14),
            replace(rerank, weight=8),
            replace(llm_b200, weight=2),
            replace(pretrain, weight=24),
            replace(finetune, weight=12),
            replace(huge, weight=4),
        ),
    )


def _benchmark_templates() -> tuple[PodTemplate, ...]:
    """The 20 templates of the basic and affinity benchmarks: 70% CPU-only, 30% GPU pods.

    GPU weights keep the expected GPU demand of 10,000 pods (about 6,600) under the 8,000 GPUs
    of the 1,000 GPU nodes, so that most pods fit and the benchmark measures placement.
    """
    ns = "bench"
    cpu = [
        ("svc-tiny", "100m", "128Mi"),
        ("svc-small", "250m", "256Mi"),
        ("svc-medium", "500m", "512Mi"),
        ("svc-1c", "1", "1Gi"),
        ("svc-1c4g", "1", "4Gi"),
        ("svc-2c", "2", "2Gi"),
        ("svc-2c8g", "2", "8Gi"),
        ("svc-4c", "4", "8Gi"),
        ("svc-4c16g", "4", "16Gi"),
        ("worker-8c", "8", "16Gi"),
    ]
    out = [PodTemplate(n, SERVICE, weight=5, namespace=ns, cpu=c, memory=m) for n, c, m in cpu]
    out += [
        PodTemplate(
            "db-2c", SERVICE, weight=5, namespace=ns, cpu="2", memory="8Gi", guaranteed=True
        ),
        PodTemplate(
            "cache-1c", SERVICE, weight=5, namespace=ns, cpu="1", memory="2Gi", guaranteed=True
        ),
        PodTemplate("batch-small", BATCH, weight=5, namespace=ns, cpu="500m", memory="1Gi"),
        PodTemplate("batch-besteffort", BATCH, weight=5, namespace=ns),
        PodTemplate("gpu-1", INFERENCE, weight=11, namespace=ns, cpu="4", memory="16Gi", gpus=1),
        PodTemplate(
            "gpu-1-l4",
            INFERENCE,
            weight=7,
            namespace=ns,
            cpu="4",
            memory="16Gi",
            gpus=1,
            node_selector=((GPU_PRODUCT, L4.product),),
        ),
        PodTemplate(
            "gpu-2-a100",
            INFERENCE,
            weight=6,
            namespace=ns,
            cpu="8",
            memory="64Gi",
            gpus=2,
            gpu_model=A100.product,
        ),
        PodTemplate(
            "gpu-4",
            TRAINING,
            weight=3,
            namespace=ns,
            cpu="32",
            memory="256Gi",
            gpus=4,
            priority=1000,
        ),
        PodTemplate(
            "gpu-8-h100",
            TRAINING,
            weight=2,
            namespace=ns,
            cpu="64",
            memory="512Gi",
            gpus=8,
            gpu_model=H100.product,
            priority=1000,
        ),
        PodTemplate(
            "gpu-8",
            TRAINING,
            weight=1,
            namespace=ns,
            cpu="64",
            memory="512Gi",
            gpus=8,
            priority=1000,
        ),
    ]
    return tuple(out)


def basic(num_nodes: int = 5000, num_pods: int = 10_000, *, running_pods: int = 0) -> ClusterSpec:
    """The basic benchmark: 80% CPU nodes, 20% GPU nodes (8 GPUs: H100, A100, L4), 5 zones,
    a rack per 50 nodes, a few tainted nodes; ``num_pods`` pending pods from 20 templates."""
    templates = _benchmark_templates()
    return ClusterSpec(
        cpu_nodes=round(num_nodes * 0.8),
        gpu_nodes=num_nodes - round(num_nodes * 0.8),
        gpu_models=(
            replace(H100, share=0.4),
            replace(A100, share=0.35),
            replace(L4_X8, share=0.25),
        ),
        region="us-east-2",
        zones=tuple(f"us-east-2{c}" for c in "abcde"),
        racks=max(5, num_nodes // 50),
        gpu_taint_fraction=0.0,
        maintenance_fraction=0.01,
        cordoned=max(1, num_nodes // 1000),
        running_pods=running_pods,
        pending_pods=num_pods,
        running_mix=templates,
        pending_mix=templates,
    )


def _mixed_templates() -> tuple[PodTemplate, ...]:
    """24 templates shaped as a cluster runs them: Deployments with soft and hard spread by
    zone and hostname, StatefulSet-like replicas one per node, an app preferring its cache's
    zone, Jobs, a priority class, whole-GPU and shared-GPU pods."""
    ns = "mix"
    soft_zone = ((ZONE, 5, "ScheduleAnyway"),)
    soft_host = ((HOSTNAME, 3, "ScheduleAnyway"),)
    out = [
        PodTemplate("web", SERVICE, 8, ns, "250m", "512Mi", apps=10, spread=soft_zone),
        PodTemplate("api", SERVICE, 8, ns, "500m", "1Gi", apps=10, spread=soft_zone + soft_host),
        PodTemplate("frontend", SERVICE, 6, ns, "100m", "256Mi", apps=10, spread=soft_host),
        PodTemplate("auth", SERVICE, 4, ns, "500m", "512Mi", apps=5, zone_spread=True),
        PodTemplate(
            "ingest", SERVICE, 4, ns, "1", "2Gi", apps=5, spread=((HOSTNAME, 2, "DoNotSchedule"),)
        ),
        PodTemplate(
            "kafka",
            SERVICE,
            3,
            ns,
            "2",
            "8Gi",
            guaranteed=True,
            apps=5,
            hostname_anti_affinity=True,
        ),
        PodTemplate(
            "etcd",
            SERVICE,
            2,
            ns,
            "1",
            "2Gi",
            guaranteed=True,
            apps=10,
            hostname_anti_affinity=True,
        ),
        PodTemplate("cache", SERVICE, 3, ns, "1", "4Gi", guaranteed=True, apps=2),
        PodTemplate("login", SERVICE, 4, ns, "250m", "512Mi", apps=2, near_app="cache-1"),
        PodTemplate("worker", SERVICE, 6, ns, "1", "1Gi"),
        PodTemplate("worker-large", SERVICE, 3, ns, "4", "8Gi"),
        PodTemplate(
            "critical",
            SERVICE,
            2,
            ns,
            "500m",
            "1Gi",
            priority=100_000,
            priority_class="business-critical",
        ),
        PodTemplate("etl", BATCH, 5, ns, "1", "2Gi", group_sizes=(4, 8, 16)),
        PodTemplate("report", BATCH, 4, ns, "500m", "1Gi", group_sizes=(1, 2)),
        PodTemplate("scratch", BATCH, 4, ns),
        PodTemplate("gpu-infer", INFERENCE, 6, ns, "4", "16Gi", gpus=1),
        PodTemplate(
            "gpu-infer-l4",
            INFERENCE,
            3,
            ns,
            "4",
            "16Gi",
            gpus=1,
            node_selector=((GPU_PRODUCT, L4.product),),
        ),
        PodTemplate("gpu-a100x2", INFERENCE, 2, ns, "8", "64Gi", gpus=2, gpu_model=A100.product),
        PodTemplate("gpu-train-4", TRAINING, 1, ns, "32", "256Gi", gpus=4, priority=1000),
        PodTemplate(
            "gpu-train-8",
            TRAINING,
            1,
            ns,
            "64",
            "512Gi",
            gpus=8,
            gpu_model=H100.product,
            priority=1000,
        ),
        PodTemplate(
            "gpu-share-quarter",
            INFERENCE,
            5,
            ns,
            "2",
            "8Gi",
            gpu_share="cores=25,memory=25%",
            tolerate_gpu_taint=True,
        ),
        PodTemplate(
            "gpu-share-half",
            INFERENCE,
            3,
            ns,
            "2",
            "8Gi",
            gpu_share="cores=50,memory=50%",
            tolerate_gpu_taint=True,
        ),
        PodTemplate(
            "notebook",
            INFERENCE,
            2,
            ns,
            "1",
            "4Gi",
            gpu_share="cores=10,memory=4Gi",
            tolerate_gpu_taint=True,
        ),
        PodTemplate("canary", SERVICE, 1, ns, "100m", "128Mi", spread=soft_zone, near_app="web-1"),
    ]
    return tuple(out)


def mixed(
    num_nodes: int = 5000, num_pods: int = 10_000, *, running_pods: int | None = None
) -> ClusterSpec:
    """The mixed benchmark: the basic cluster with its GPU nodes tainted ``dedicated=gpu``,
    running pods of the mix's CPU templates (default: 0.6 per node, 3,000 on 5,000 nodes), and
    pending pods of all 24 templates, interleaved; Deployments behind Services (so default
    spreading applies to their pods)."""
    if running_pods is None:
        running_pods = round(num_nodes * 0.6)
    templates = _mixed_templates()
    cpu_only = tuple(t for t in templates if not t.gpus and not t.gpu_share)
    return replace(
        basic(num_nodes, num_pods, running_pods=running_pods),
        gpu_taint_fraction=1.0,
        running_mix=cpu_only,
        pending_mix=templates,
        workload_objects=True,
    )


# Which benchmark templates carry which constraint in the affinity scenario: 6 x 5% spread,
# 4 x 5% anti-affinity, all CPU-only services so that the two sets do not overlap.
_SPREAD = ("svc-tiny", "svc-small", "svc-medium", "svc-1c", "svc-2c", "svc-4c")
_ANTI_AFFINITY = ("svc-1c4g", "svc-2c8g", "db-2c", "cache-1c")


def affinity(
    num_nodes: int = 5000, num_pods: int = 10_000, *, running_pods: int = 0, apps: int = 10
) -> ClusterSpec:
    """The basic cluster, with 30% of pods under zone spread and 20% under required hostname
    anti-affinity; each such template is split over ``apps`` deployments."""
    templates = tuple(
        replace(t, zone_spread=True, apps=apps)
        if t.name in _SPREAD
        else replace(t, hostname_anti_affinity=True, apps=apps)
        if t.name in _ANTI_AFFINITY
        else t
        for t in _benchmark_templates()
    )
    return replace(
        basic(num_nodes, num_pods, running_pods=running_pods),
        running_mix=templates,
        pending_mix=templates,
    )


def gang_sizes(min_gang: int, max_gang: int) -> tuple[int, ...]:
    """Sizes from ``min_gang`` doubling up to ``max_gang`` (and ``max_gang`` itself)."""
    if not 1 <= min_gang <= max_gang:
        raise ValueError("gang sizes need 1 <= min_gang <= max_gang")
    sizes = []
    s = min_gang
    while s < max_gang:
        sizes.append(s)
        s *= 2
    sizes.append(max_gang)
    return tuple(sizes)


def gangs(
    num_nodes: int = 1000,
    num_pods: int = 2000,
    *,
    min_gang: int = 8,
    max_gang: int = 64,
    domain_size: int = 8,
) -> ClusterSpec:
    """The gang benchmark: GPU nodes only (60% H100, 40% A100, 8 GPUs each) in NVLink domains
    of ``domain_size`` nodes, and ``num_pods`` pending pods in gangs of ``min_gang`` to
    ``max_gang`` pods, each gang with its PodGroup. Pods ask for 8, 4, 2 or 1 GPUs (10%, 20%,
    30%, 40% of pods): about 65% of the GPUs at the defaults."""
    sizes = gang_sizes(min_gang, max_gang)
    mix = tuple(
        PodTemplate(
            name,
            TRAINING,
            weight=w,
            namespace="training",
            cpu=str(10 * g),
            memory=f"{120 * g}Gi",
            gpus=g,
            guaranteed=True,
            gpu_model=model,
            group_sizes=sizes,
            gang=True,
            priority=1000,
            priority_class="training",
        )
        for name, g, model, w in (
            ("gang-h100-8gpu", 8, H100.product, 10),
            ("gang-a100-4gpu", 4, A100.product, 20),
            ("gang-2gpu", 2, None, 30),
            ("gang-1gpu", 1, None, 40),
        )
    )
    return ClusterSpec(
        cpu_nodes=0,
        gpu_nodes=num_nodes,
        gpu_models=(replace(H100, share=0.6), replace(A100, share=0.4)),
        region="us-west-2",
        zones=tuple(f"us-west-2{c}" for c in "abcde"),
        racks=max(5, num_nodes // (4 * domain_size)),  # four NVLink domains a rack
        nvlink_domain_size=domain_size,
        maintenance_fraction=0.0,
        cordoned=0,
        pending_pods=num_pods,
        pending_mix=mix,
    )


PRESETS: dict[str, Callable[[], ClusterSpec]] = {
    "demo": demo,
    "basic": basic,
    "affinity": affinity,
    "gangs": gangs,
    "mixed": mixed,
}
