"""The big-snapshot scenario: ``simulate`` and ``filter`` on a real-size ``kubectl`` dump.

A production cluster's ``kubectl get nodes,pods -A -o yaml`` is not the lean YAML the other
scenarios generate: the API returns every object with its ``managedFields``, owner references,
container statuses, node images with their digests, and the finished pods Jobs leave behind.
This scenario writes such a dump — 2,000 nodes, 17,400 running pods, 600 pending, 1,000
Succeeded Job pods, about 85 MB as the API returns them — and times exactly what a user runs
on it, each command in a process of its own: ``policyengine simulate --cluster DUMP`` (all 600
pending pods) and ``policyengine filter --cluster DUMP POD``, wall time and peak RSS.

Targets: ``simulate`` ≤ 30 s and ≤ 1 GiB, ``filter`` ≤ 15 s.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.harness import Measurement, child_env, note, progress, summarise

ROOT = Path(__file__).resolve().parent.parent
NODES = 2000
RUNNING = 17_400
PENDING = 600
FINISHED = 1000
DEFAULT_RUNS = 3
IMAGES_PER_NODE = 40


def _spec(scale: float, nodes: int) -> Any:
    from policyengine import synthetic
    from policyengine.quantity import parse_quantity

    spec = synthetic.basic(nodes, round(PENDING * scale))
    small = tuple(t for t in spec.running_mix if t.gpus == 0 and parse_quantity(t.cpu or "0") <= 1)
    return replace(spec, running_pods=round(RUNNING * scale), running_mix=small)


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _managed(manager: str, operation: str, stamp: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": operation,
        "time": stamp,
    }


def _pod_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``managedFields`` shaped as the API server records them for a controller's pod."""
    containers: dict[str, Any] = {
        f'k:{{"name":"{c["name"]}"}}': {
            ".": {},
            "f:image": {},
            "f:imagePullPolicy": {},
            "f:name": {},
            "f:resources": {".": {}, "f:limits": {}, "f:requests": {}},
            "f:terminationMessagePath": {},
            "f:terminationMessagePolicy": {},
        }
        for c in obj["spec"].get("containers", [])
    }
    return {
        "f:metadata": {
            "f:generateName": {},
            "f:labels": {".": {}, **{f"f:{k}": {} for k in obj["metadata"].get("labels", {})}},
            "f:ownerReferences": {".": {}, 'k:{"uid":"owner"}': {}},
        },
        "f:spec": {
            "f:containers": containers,
            "f:dnsPolicy": {},
            "f:enableServiceLinks": {},
            "f:restartPolicy": {},
            "f:schedulerName": {},
            "f:securityContext": {},
            "f:terminationGracePeriodSeconds": {},
        },
    }


def as_the_api_returns(obj: dict[str, Any], index: int) -> dict[str, Any]:
    """``obj`` with what the API adds that the engine never reads."""
    meta = obj["metadata"]
    stamp = meta.get("creationTimestamp", "2025-01-06T08:00:00Z")
    meta["resourceVersion"] = str(100_000 + index)
    if obj["kind"] == "Node":
        name = meta["name"]
        status = obj.setdefault("status", {})
        status["images"] = [
            {
                "names": [
                    f"registry.example.com/team-{i % 7}/image-{i}@{_digest(f'{name}-{i}')}",
                    f"registry.example.com/team-{i % 7}/image-{i}:v{i % 5}",
                ],
                "sizeBytes": 50_000_000 + 1_000_003 * i,
            }
            for i in range(IMAGES_PER_NODE)
        ]
        status["nodeInfo"] = {
            "architecture": "amd64",
            "bootID": _digest(name)[7:43],
            "containerRuntimeVersion": "containerd://1.7.11",
            "kernelVersion": "6.1.0-18-cloud-amd64",
            "kubeProxyVersion": "v1.28.7",
            "kubeletVersion": "v1.28.7",
            "machineID": _digest(name + "m")[7:39],
            "operatingSystem": "linux",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "systemUUID": _digest(name + "u")[7:43],
        }
        meta["managedFields"] = [
            _managed("kubelet", "Update", stamp, {"f:status": {"f:images": {}, "f:nodeInfo": {}}}),
            _managed("kube-controller-manager", "Update", stamp, {"f:spec": {"f:podCIDR": {}}}),
        ]
        return obj
    meta["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "blockOwnerDeletion": True,
            "controller": True,
            "kind": "ReplicaSet",
            "name": meta["name"].rsplit("-", 1)[0],
            "uid": _digest(meta["name"])[7:43],
        }
    ]
    meta["managedFields"] = [_managed("kube-controller-manager", "Update", stamp, _pod_fields(obj))]
    if obj["spec"].get("nodeName"):
        status = obj.setdefault("status", {})
        status["containerStatuses"] = [
            {
                "containerID": "containerd://" + _digest(meta["name"] + c["name"])[7:],
                "image": c.get("image", ""),
                "imageID": f"{c.get('image', '').split(':')[0]}@{_digest(c.get('image', ''))}",
                "lastState": {},
                "name": c["name"],
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": stamp}},
            }
            for c in obj["spec"].get("containers", [])
        ]
    return obj


def _finished(index: int, nodes: int) -> dict[str, Any]:
    name = f"nightly-report-{index // 10}-{index % 10:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "batch",
            "labels": {"job-name": f"nightly-report-{index // 10}"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": _digest(name)[7:43]}
            ],
        },
        "spec": {
            "nodeName": f"cpu-{index % max(1, round(nodes * 0.8)) + 1:04d}",
            "containers": [
                {
                    "name": "report",
                    "image": "registry.example.com/report:v3",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        },
        "status": {"phase": "Succeeded"},
    }


def write_dump(path: Path, scale: float = 1.0, nodes: int = NODES) -> tuple[int, str]:
    """The dump at ``path``; its size in bytes and a pending pod's ``ns/name``."""
    from policyengine import synthetic

    objects = synthetic.generate(_spec(scale, nodes), seed=1)
    objects += [_finished(i, nodes) for i in range(round(FINISHED * scale))]
    objects = [as_the_api_returns(obj, i) for i, obj in enumerate(objects)]
    pending = next(o for o in objects if o["kind"] == "Pod" and not o["spec"].get("nodeName"))
    path.write_text(synthetic.to_kubectl_yaml(objects), encoding="utf-8")
    meta = pending["metadata"]
    return path.stat().st_size, f"{meta.get('namespace', 'default')}/{meta['name']}"


def _timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one command in a process of its own, the peak as
    that program reports it (``benchmarks.peak``)."""
    with tempfile.TemporaryDirectory(prefix="bench-peak-") as tmp:
        report = Path(tmp) / "peak"
        start = time.perf_counter()
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.peak", str(report), "policyengine.cli.main", *argv],
            cwd=ROOT,
            env=child_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        wall = time.perf_counter() - start
        if child.returncode != 0:
            raise RuntimeError(
                f"policyengine {' '.join(argv)} failed: {child.stderr[-2000:].decode()}"
            )
        return wall, int(report.read_text(encoding="ascii")) / 1024


def run(runs: int = DEFAULT_RUNS, scale: float = 1.0, nodes: int = NODES) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="bench-bigsnapshot-") as tmp:
        dump = Path(tmp) / "cluster.yaml"
        progress("bigsnapshot: writing the dump")
        size, pod = _write_apart(dump, scale, nodes)
        what = f"{nodes:,} nodes, {round((RUNNING + PENDING + FINISHED) * scale):,} pods, {size / 1e6:.0f} MB"
        note("bigsnapshot", **{what: {"bytes": size, "pod": pod}})
        simulate: list[tuple[float, float]] = []
        filtered: list[tuple[float, float]] = []
        for i in range(runs):
            progress(f"bigsnapshot: filter, run {i + 1}/{runs}")
            filtered.append(
                _timed(["filter", "--cluster", str(dump), "--pod", pod, "--format", "json"])
            )
        for i in range(runs):
            progress(f"bigsnapshot: simulate, run {i + 1}/{runs}")
            simulate.append(_timed(["simulate", "--cluster", str(dump), "--format", "json"]))
    whole = nodes == NODES and scale == 1.0  # the targets are for the full size only

    def target(text: str) -> str:
        return text if whole else ""

    return [
        summarise(
            "bigsnapshot",
            f"{what}: simulate (wall)",
            [w for w, _ in simulate],
            "s",
            target=target("<= 30"),
        ),
        summarise(
            "bigsnapshot",
            f"{what}: simulate peak RSS",
            [m for _, m in simulate],
            "MiB",
            target=target("<= 1024"),
        ),
        summarise(
            "bigsnapshot",
            f"{what}: filter one pod (wall)",
            [w for w, _ in filtered],
            "s",
            target=target("<= 15"),
        ),
    ]


def _write_apart(path: Path, scale: float, nodes: int) -> tuple[int, str]:
    """``write_dump`` in a process of its own: Linux carries a parent's peak RSS into its
    children's ``ru_maxrss``, so this process must never hold the generator's objects."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bigsnapshot", str(path), str(scale), str(nodes)],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    size, pod = done.stdout.split()
    return int(size), pod


if __name__ == "__main__":  # python -m benchmarks.bigsnapshot PATH [SCALE [NODES]]
    arguments = sys.argv[1:]
    written = write_dump(
        Path(arguments[0]) if arguments else Path("cluster.yaml"),
        float(arguments[1]) if len(arguments) > 1 else 1.0,
        int(arguments[2]) if len(arguments) > 2 else NODES,
    )
    print(*written)
    sys.stdout.flush()
    os._exit(0)
