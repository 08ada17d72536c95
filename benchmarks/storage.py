"""The storage scenario: pods with local and zonal claims on a 5,000-node cluster.

The basic cluster (5,000 nodes in 5 zones) with storage: a 100Gi local volume on every node
(class ``local``, no provisioner, WaitForFirstConsumer), a zonal class provisioned by a CSI
driver in two of the zones (``allowedTopologies``), and a CSINode per node allowing 16 of its
volumes. Pending: the basic queue's first pods, each given a claim of its own — half a local
50Gi claim (matched to a node's volume), half a zonal 20Gi claim (provisioned) — placed in
queue order with each pod's volume decisions assumed before the next, as ``simulate`` does;
then the same pods with zonal claims only, and with local claims only.
Beside it, the same number of the queue's pods without claims on the same cluster: what the
storage objects cost the pods that use none (nothing, the filters are idle for them).
"""

from __future__ import annotations

import gc
import random
import time
from dataclasses import replace
from typing import Any

from benchmarks.harness import Measurement, frozen_heap, note, progress, summarise
from benchmarks.workload import Workload, build
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.engine.volumes import assume_volumes
from policyengine.model.objects import Pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.snapshot_io import LoadedObjects, parse_objects
from policyengine.model.volumes import PVC, Volume

NODES = 5000
PODS = 400
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0
DEFAULT_CHECK = 2
DRIVER = "disk.csi.example.com"
ZONAL_ZONES = ["us-east-2a", "us-east-2b"]


def _storage_objects(snapshot: ClusterSnapshot, claims: list[tuple[str, str]]) -> tuple[Any, ...]:
    items: list[dict[str, Any]] = [
        {
            "kind": "StorageClass",
            "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "kind": "StorageClass",
            "metadata": {"name": "zonal"},
            "provisioner": DRIVER,
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {
                    "matchLabelExpressions": [
                        {"key": "topology.kubernetes.io/zone", "values": ZONAL_ZONES}
                    ]
                }
            ],
        },
    ]
    for info in snapshot.nodes:
        host = info.node.labels["kubernetes.io/hostname"]
        items.append(
            {
                "kind": "PersistentVolume",
                "metadata": {"name": f"local-{info.name}"},
                "spec": {
                    "capacity": {"storage": "100Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "local",
                    "local": {"path": "/mnt/disks/ssd0"},
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "kubernetes.io/hostname",
                                            "operator": "In",
                                            "values": [host],
                                        }
                                    ]
                                }
                            ]
                        }
                    },
                },
                "status": {"phase": "Available"},
            }
        )
        items.append(
            {
                "kind": "CSINode",
                "metadata": {"name": info.name},
                "spec": {
                    "drivers": [{"name": DRIVER, "nodeID": info.name, "allocatable": {"count": 16}}]
                },
            }
        )
    for name, cls in claims:
        items.append(
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "50Gi" if cls == "local" else "20Gi"}},
                    "storageClassName": cls,
                },
                "status": {"phase": "Pending"},
            }
        )
    return parse_objects([{"kind": "List", "items": items}], "storage").storage_objects


def _with_claim(pod: Pod, claim: str) -> Pod:
    return replace(pod, namespace="default", volumes=(Volume("data", PVC, claim),))


def _place(
    program: Any, snapshot: ClusterSnapshot, pods: list[Pod], check: int
) -> tuple[list[float], int, int]:
    """CPU seconds per pod, pods placed, reference differences over the first ``check``."""
    rng = random.Random(0)
    options = CycleOptions(all_filters=False, cache=ClassCache())
    cpu: list[float] = []
    placed = differing = 0
    for index, pod in enumerate(pods):
        if index < check:
            state = rng.getstate()
        start = time.process_time()
        decision = schedule(program, pod, snapshot, rng, options)
        if decision.node is not None:
            after = snapshot.with_pod(pod, decision.node)
            if decision.volumes:
                after = assume_volumes(after, decision.node, decision.volumes)
        cpu.append(time.process_time() - start)
        if index < check:
            replay = random.Random()
            replay.setstate(state)
            if differences(decision, reference_decision(program, pod, snapshot, replay)):
                differing += 1
        if decision.node is not None:
            snapshot = after
            placed += 1
    return cpu, placed, differing


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    check: int = DEFAULT_CHECK,
    nodes: int = NODES,
) -> list[Measurement]:
    count = max(2, round(PODS * scale))
    progress(f"storage: building {nodes:,} nodes")
    cluster = build(Workload("basic", nodes, 2 * count))
    pending = list(cluster.pending)
    claimed_pods = pending[:count]
    plain = pending[count : 2 * count]
    claims = [(f"claim-{i}", "local" if i % 2 == 0 else "zonal") for i in range(count)]
    # The same pods with claims of one class only: each kind's own rate.
    alike = {cls: [(f"{cls}-{i}", cls) for i in range(count)] for cls in ("zonal", "local")}
    objects = _storage_objects(cluster.snapshot, claims + alike["zonal"] + alike["local"])
    storage = LoadedObjects((), (), storage_objects=tuple(objects)).storage
    snapshot = cluster.snapshot.with_storage(storage)

    def with_claims(named: list[tuple[str, str]]) -> list[Pod]:
        return [_with_claim(p, name) for p, (name, _) in zip(claimed_pods, named, strict=True)]

    head = f"{nodes:,} nodes, a local volume each"
    rows: list[Measurement] = []
    notes: dict[str, Any] = {}
    with frozen_heap():
        gc.freeze()  # the cluster and its storage: see frozen_heap
        for label, pods, base, checked in (
            (f"{count} pods with a local or zonal claim", with_claims(claims), snapshot, check),
            (f"{count} pods with a zonal claim", with_claims(alike["zonal"]), snapshot, check),
            (f"{count} pods with a local claim", with_claims(alike["local"]), snapshot, check),
            (f"{count} pods without claims (storage objects present)", plain, snapshot, 0),
            (f"{count} pods without claims (no storage objects)", plain, cluster.snapshot, 0),
        ):
            samples: list[float] = []
            for i in range(runs):
                progress(f"storage: {label}, run {i + 1}/{runs}")
                cpu, placed, differing = _place(
                    cluster.program, base, pods, checked if i == 0 else 0
                )
                samples.append(len(cpu) / sum(cpu))
                if i == 0:
                    notes[label] = {"placed": placed, "reference_differences": differing}
            label_row = f"{head}: {label}: CPU throughput"
            rows.append(summarise("storage", label_row, samples, "pods/s"))
    note("storage", **notes)
    return rows
