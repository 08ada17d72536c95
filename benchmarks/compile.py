"""Compile and cache speed: a 200-rule policy compiled cold and served from the program cache.

Cold means new sources (a cache miss) with the grammar's parse table already loaded, which is
what a policy reload costs in a running scheduler. The policy mixes the constructs real policies
use: the rule shapes of the shipped policies (guards, reasons with holes, builtins, lets), and a
heavy variant where every rule has a comprehension and several conditions.
"""

from __future__ import annotations

from benchmarks.harness import Measurement, measure, progress, summarise
from policyengine.lang.cache import ProgramCache
from policyengine.schedlib import default_schema

RULES = 200


# Rule shapes taken from the shipped policies, cycled through to make a policy of any size.
_TYPICAL = (
    'filter f{i} when model != "any" {{ node.gpu.product == model }} '
    'reason "node has {{node.gpu.product}}, pod needs {{model}}"',
    "filter t{i} {{ taint_toleration_reasons(pod, node) }}",
    'filter r{i} {{ node.ready and not node.unschedulable }} reason "node {{node.name}} is not usable"',
    'score b{i} weight 3 when node.allocatable["nvidia.com/gpu"] > 0 {{ '
    '100 * (node.allocated["nvidia.com/gpu"] + gpus) / node.allocatable["nvidia.com/gpu"] }}',
    "score n{i} weight 2 normalize max {{ preferred_node_affinity_weight(pod, node) }}",
    'filter z{i} {{ node.topology.zone != null }} reason "node has no zone label"',
    'score s{i} normalize reverse {{ domain_pod_count(pod, node, "topology.kubernetes.io/zone", {{"app": app}}) }}',
    'filter g{i} when gpus > 0 {{ node.gpu.count >= gpus }} reason "node has {{node.gpu.count}} GPUs, pod needs {{gpus}}"',
)
_HEAVY = (
    'filter f{i} when model != "any" {{ node.gpu.product == model and '
    'node.free["cpu"] >= pod.requests["cpu"] and '
    'not any(t.effect == "NoSchedule" and t.key == "k{i}" for t in node.taints) }} '
    'reason "rule {i}: node has {{node.gpu.product}}, pod needs {{model}}"',
    'score s{i} weight 3 normalize max when node.allocatable["nvidia.com/gpu"] > 0 {{ '
    '100 * (node.allocated["nvidia.com/gpu"] + gpus) / node.allocatable["nvidia.com/gpu"] '
    '+ count(l.startswith("team-{i}") for l in node.labels.values()) }}',
)


def policy_source(rules: int = RULES, salt: int = 0, heavy: bool = False) -> str:
    shapes = _HEAVY if heavy else _TYPICAL
    lines = [
        f"# generated benchmark policy {salt}",
        'policy "bench" {',
        '  let model = pod.annotations["gpu.ai/model"] ?? "any"',
        '  let gpus = pod.requests["nvidia.com/gpu"]',
        '  let app = pod.labels["app"] ?? pod.name',
    ]
    lines.extend("  " + shapes[i % len(shapes)].format(i=i) for i in range(rules))
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(runs: int = 7) -> list[Measurement]:
    schema = default_schema()
    cache = ProgramCache(maxsize=64)
    salt = iter(range(1, 10_000))

    def cold(heavy: bool = False) -> None:
        source = policy_source(salt=next(salt), heavy=heavy)
        result = cache.compile_texts({"bench.sched": source}, schema)
        assert result.ok, result.diagnostics

    progress("compile: cold")
    cold_samples = measure(cold, runs)
    progress("compile: cold, heavy rules")
    heavy_samples = measure(lambda: cold(heavy=True), runs)
    warm_source = {"bench.sched": policy_source(salt=0)}
    cache.compile_texts(warm_source, schema)

    def cached() -> None:
        cache.compile_texts(warm_source, schema)

    progress("compile: cached")
    cached_samples = measure(cached, runs * 20)
    return [
        summarise("compile", f"{RULES}-rule policy, cold", cold_samples, "ms", 1000, "< 200 ms"),
        summarise("compile", f"{RULES} heavy rules, cold", heavy_samples, "ms", 1000),
        summarise(
            "compile", f"{RULES}-rule policy, from cache", cached_samples, "ms", 1000, "< 1 ms"
        ),
    ]
