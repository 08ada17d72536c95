"""The fuzz targets: one input each, and everything it may reach, with no exception allowed
but the documented ones.

``policy``: the bytes as a ``.sched`` file — parse, link, check, plan (``compile_texts``), lint,
fmt (and the formatted text parsed again), and, when it compiles, one scheduling cycle of a pod
on a small cluster. ``snapshot``: the bytes as a ``kubectl get -o yaml`` (or JSON) snapshot —
read, split into a cluster, and every pending pod decided by ``kube-default.sched``. An input
may be refused (a diagnostic, a ``ModelError``); it may not raise anything else.
"""

from __future__ import annotations

import random
from functools import cache

from policyengine.cli.common import cluster_from
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.lang.checker import check
from policyengine.lang.compiler import Program, compile_paths, compile_texts
from policyengine.lang.fmt import format_source
from policyengine.lang.link import link
from policyengine.lang.lint import lint
from policyengine.lang.loader import shipped_policies_dir
from policyengine.lang.parser import parse
from policyengine.model.errors import ModelError
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_snapshot_text
from policyengine.schedlib import default_schema

NAME = "fuzz.sched"
_CLUSTER = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-1, labels: {kubernetes.io/hostname: gpu-1, topology.kubernetes.io/zone: a, nvidia.com/gpu.product: A100}}
  spec: {taints: [{key: gpu, value: "true", effect: NoSchedule}]}
  status: {allocatable: {cpu: "32", memory: 256Gi, pods: "110", nvidia.com/gpu: "8"}}
- apiVersion: v1
  kind: Node
  metadata: {name: cpu-1, labels: {kubernetes.io/hostname: cpu-1, topology.kubernetes.io/zone: b}}
  status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: running, namespace: default, labels: {app: web}}
  spec: {nodeName: cpu-1, containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: pending, namespace: default, labels: {app: train}}
  spec:
    tolerations: [{key: gpu, operator: Exists}]
    containers: [{name: c, image: trainer, resources: {limits: {nvidia.com/gpu: "2"}}}]
"""


@cache
def _cluster() -> tuple[ClusterSnapshot, tuple[object, ...]]:
    loaded = parse_snapshot_text(_CLUSTER, "fuzz-cluster.yaml")
    snapshot, pending, _ = snapshot_from_objects(loaded.nodes, loaded.pods)
    return snapshot, pending


@cache
def _kube_default() -> Program:
    result = compile_paths([shipped_policies_dir() / "kube-default.sched"], default_schema())
    assert result.program is not None
    return result.program


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def policy(data: bytes) -> None:
    """Every stage a policy source goes through; only diagnostics may come out of it."""
    source = _text(data)
    schema = default_schema()
    result = compile_texts({NAME: source}, schema)
    unit = result.unit
    assert unit is not None
    if result.program is None:
        assert any(d.is_error for d in result.diagnostics), "no program and no error"
    if not unit.entry_files:
        return  # a syntax error: the later stages never see such a file
    checked = check(unit, schema, link(unit))
    lint(unit, checked, schema)
    formatted = format_source(source, NAME)
    if formatted.text is not None:
        assert parse(formatted.text, NAME).ok, "fmt printed a file that does not parse"
    if result.program is None:
        return
    snapshot, pending = _cluster()
    for name in result.program.profiles or ("policyengine",):
        for pod in pending:
            schedule(
                result.program,
                pod,  # type: ignore[arg-type]
                snapshot,
                random.Random(0),
                CycleOptions(scheduler_name=name),
            )


def snapshot(data: bytes) -> None:
    """A snapshot read and decided; only ``ModelError`` may come out of it."""
    try:
        # The commands' own path from objects to a cluster (the split, the GPU warnings).
        cluster = cluster_from(parse_snapshot_text(_text(data), "fuzz.yaml"))
    except ModelError:
        return
    program = _kube_default()
    for pod in cluster.pending[:4]:
        schedule(program, pod, cluster.snapshot, random.Random(0), CycleOptions(all_filters=True))
