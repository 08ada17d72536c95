"""One run of a per-pod scenario, in a process of its own: ``python -m benchmarks.worker JSON``.

Each run gets a fresh interpreter so that its peak RSS is its own (not the sum of every
scenario before it) and no cache survives from one run to the next. The peak is reset once the
cluster is built (``/proc/self/clear_refs``), so it measures a process holding the cluster
and placing pods, not the generator's throw-away dicts; where the reset is not allowed, the
peak includes them and the result says so. Asked for templates (``alone``), the run then
places each template's pods again with no other pod in the queue (``place_alone``). The result
is one JSON object on stdout.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from dataclasses import asdict

from benchmarks.agreement import Agreement, check
from benchmarks.harness import peak_rss_kb, progress
from benchmarks.workload import Workload, build, evenly, place_all, place_alone, warm_up
from policyengine.engine import heap
from policyengine.engine.decision import Decision
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS; Linux >= 4.0
        return True
    except OSError:
        return False


def _settled_heap() -> None:
    """What the queue's run (and every template before) left on the heap collected and the
    rest frozen, as it was frozen for the queue: a template placed on its own starts from the
    collector's state a scheduler seeing only that workload would have, instead of paying
    for a full collection of the queue's leftovers (a tenth of a second, a third of a small
    template's run)."""
    gc.collect()
    heap.keep_for_long_run()


def run(
    workload: Workload, check_pods: int, label: str, alone: list[str] | None = None
) -> dict[str, object]:
    start = time.perf_counter()
    cluster = build(workload)
    warm_up(cluster)
    # As ``simulate`` does once its snapshot is loaded (and ``run`` once its caches synced):
    # the long-lived cluster and program frozen, the young generation collected less often.
    heap.keep_for_long_run()
    built = time.perf_counter() - start
    reset = _reset_peak_rss()
    agreement = Agreement()
    checking = 0.0
    total = len(cluster.pending)
    step = max(1, total // 10)

    def inspect(pod: Pod, decision: Decision, snapshot: ClusterSnapshot, state: object) -> None:
        nonlocal checking
        began = time.perf_counter()
        check(agreement, cluster.program, pod, decision, snapshot, state)
        checking += time.perf_counter() - began

    def report(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            progress(f"{label}: pod {done}/{total}")

    placed = place_all(cluster, inspect=inspect, sample=evenly(check_pods, total), report=report)
    peak = peak_rss_kb()  # the queue's, before any template is placed on its own
    by_template: dict[str, dict[str, float]] = {}
    if alone is not None:
        progress(f"{label}: each template's pods on their own")
        by_template = {
            name: {"pods": len(own.cpu), "cpu": sum(own.cpu)}
            for name, own in place_alone(cluster, alone, before=_settled_heap).items()
        }
    return {
        "workload": asdict(workload),
        "nodes": len(cluster.snapshot.nodes),
        "pods": total,
        "scheduled": placed.scheduled,
        "latencies": placed.latencies,
        "apps": [pod.labels.get("app", "") for pod in cluster.pending],
        "cpu": placed.cpu,
        "peak_rss_kb": peak,
        "peak_rss_reset": reset,
        "build_seconds": built,
        "check_seconds": checking,
        "checked": agreement.checked,
        "agreed": agreement.agreed,
        "differences": agreement.differences,
        "alone": by_template,
    }


def main(argv: list[str]) -> int:
    request = json.loads(argv[0])
    workload = Workload(**request["workload"])
    result = run(
        workload,
        int(request.get("check", 0)),
        str(request.get("label", "worker")),
        request.get("alone"),
    )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
