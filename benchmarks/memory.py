"""The memory scenario: what holding a 5,000-node, 50,000-pod cluster costs.

The scheduler keeps the whole cluster in memory (the controller cache is a ``ClusterSnapshot``
of every node and assigned pod), so its RSS grows with the cluster. Measured in processes of
their own so nothing else is counted: one writes the generated cluster to a file, one object a
line; each measuring process reads it line by line, turning each object into a model object
at once (the generator's dicts never pile up), builds the snapshot, and reports its RSS before
and after and its peak (``VmHWM``). A second variant also keeps every raw API
object, as the controller's informers do beside the cache, decoded as they decode it
(``controller.wirejson``: orjson, whose key cache lets every object share one string per
key, where ``json.loads`` gives each object its own: about 200 MB more at this size).

The running pods are the small CPU-only benchmark templates (up to 2 cores each): 50,000 of
the full mix do not fit on 5,000 nodes.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    Measurement,
    child_env,
    note,
    peak_rss_kb,
    progress,
    status_kb,
    summarise,
)

ROOT = Path(__file__).resolve().parent.parent
NODES = 5000
RUNNING_PODS = 50_000
DEFAULT_RUNS = 2  # RSS barely varies between runs, and each run parses 55,000 objects
VARIANTS = ("snapshot", "snapshot+objects")


def _spec(nodes: int, running: int) -> Any:
    from policyengine import synthetic
    from policyengine.quantity import parse_quantity

    spec = synthetic.basic(nodes, 0)
    small = tuple(t for t in spec.running_mix if t.gpus == 0 and parse_quantity(t.cpu or "0") <= 2)
    return replace(spec, running_pods=running, running_mix=small)


def write(path: str, nodes: int, running: int) -> None:
    from policyengine import synthetic

    with open(path, "w", encoding="utf-8") as f:
        for obj in synthetic.generate(_spec(nodes, running), seed=1):
            f.write(json.dumps(obj, separators=(",", ":")))
            f.write("\n")


def _rss_kb() -> int:
    return status_kb("VmRSS") or 0  # not Linux: only the peak is known


def measure(path: str, variant: str) -> dict[str, Any]:
    from policyengine.controller import wirejson
    from policyengine.model.parse import parse_node, parse_pod
    from policyengine.model.snapshot import snapshot_from_objects

    gc.collect()
    baseline = _rss_kb()
    nodes, pods, raw = [], [], []
    with open(path, "rb") as f:  # the wire's bytes, as the informers read them
        for line in f:
            obj = wirejson.loads(line)
            if obj["kind"] == "Node":
                nodes.append(parse_node(obj, path))
            elif obj["kind"] == "Pod":
                pods.append(parse_pod(obj, path))
            if variant == "snapshot+objects":
                raw.append(obj)
    snapshot, pending, _ = snapshot_from_objects(nodes, pods)
    del nodes, pods
    gc.collect()
    holding = _rss_kb()
    return {
        "variant": variant,
        "nodes": len(snapshot.nodes),
        "running_pods": len(snapshot.pod_nodes),
        "pending_pods": len(pending),
        "raw_objects": len(raw),
        "baseline_kb": baseline,
        "holding_kb": holding,
        "peak_kb": peak_rss_kb(),
    }


def _child(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", *args],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory: {' '.join(args[:1])} failed (exit status {done.returncode})")
    out = done.stdout.strip()
    return json.loads(out.splitlines()[-1]) if out else {}


def run(
    runs: int = DEFAULT_RUNS, scale: float = 1.0, nodes: int = NODES, running: int = RUNNING_PODS
) -> list[Measurement]:
    # The node count is the scenario; ``scale`` only shrinks the pods (the smoke test uses it).
    running = max(1, round(running * scale))
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="policyengine-bench-") as tmp:
        path = os.path.join(tmp, "cluster.jsonl")
        progress(f"memory: generating {nodes:,} nodes and {running:,} running pods")
        _child("write", path, str(nodes), str(running))
        for variant in VARIANTS:
            results = []
            for i in range(runs):
                progress(f"memory: {variant}, run {i + 1}/{runs}")
                results.append(_child("measure", path, variant))
            first = results[0]
            head = f"{first['nodes']:,} nodes, {first['running_pods']:,} running pods, {variant}"
            note("memory", **{head: results})
            mb = 1 / 1024
            rows.append(
                summarise(
                    "memory",
                    f"{head}: peak RSS",
                    [r["peak_kb"] for r in results],
                    "MB",
                    mb,
                    target="<= 1024 MB",
                )
            )
            rows.append(
                summarise(
                    "memory",
                    f"{head}: RSS above an idle interpreter",
                    [r["holding_kb"] - r["baseline_kb"] for r in results],
                    "MB",
                    mb,
                )
            )
    return rows


def main(argv: list[str]) -> int:
    if argv[0] == "write":
        write(argv[1], int(argv[2]), int(argv[3]))
    else:
        print(json.dumps(measure(argv[1], argv[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
