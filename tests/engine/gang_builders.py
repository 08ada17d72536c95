"""Builders for the gang tests: a one-policy program around a ``gang`` block, 8-GPU nodes
labelled with their NVLink clique and rack, and gangs of alike members.

The gang placement tests and the ``assume_gang`` agreement tests build their clusters and
gangs alike; they take them from here.
"""

from __future__ import annotations

from policyengine.engine.gangs import Gang
from policyengine.lang.compiler import Program, compile_texts
from policyengine.model.objects import Node, Pod
from policyengine.model.podgroup import POD_GROUP_LABEL
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.schedlib import default_schema
from tests.model.builders import make_node, make_pod

CLIQUE = "nvidia.com/gpu.clique"
RACK = "topology.kubernetes.io/rack"
GPU = "nvidia.com/gpu"

FITS = """
  filter fits {
    node.free["nvidia.com/gpu"] >= pod.requests["nvidia.com/gpu"]
  } reason "Insufficient nvidia.com/gpu"
"""


def program(gang_block: str, rules: str = FITS) -> Program:
    text = f'policy "t" {{\n{rules}\n  {gang_block}\n}}\n'
    result = compile_texts({"t.sched": text}, default_schema())
    assert result.ok, result.diagnostics
    assert result.program is not None
    return result.program


def gpu_node(name: str, clique: str | None = None, rack: str | None = None, gpus: int = 8) -> Node:
    labels = {}
    if clique is not None:
        labels[CLIQUE] = clique
    if rack is not None:
        labels[RACK] = rack
    return make_node(name, labels=labels, cpu="64", memory="512Gi", extra={GPU: str(gpus)})


def member(group: str, index: int, gpus: int = 8, node: str = "") -> Pod:
    return make_pod(
        f"{group}-{index}",
        labels={POD_GROUP_LABEL: group},
        requests={GPU: str(gpus)},
        node_name=node,
    )


def gang(group: str, size: int, gpus: int = 8, min_member: int | None = None) -> Gang:
    pods = tuple(member(group, i, gpus) for i in range(size))
    return Gang(f"default/{group}", size if min_member is None else min_member, None, pods)


def cluster(*layout: tuple[str, str, int]) -> ClusterSnapshot:
    """Nodes from (clique, rack, count): ``<clique>-<i>``, 8 GPUs each."""
    nodes = [
        gpu_node(f"{clique}-{i}", clique, rack)
        for clique, rack, count in layout
        for i in range(count)
    ]
    return ClusterSnapshot.build(nodes)
