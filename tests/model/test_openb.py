"""The openb CSV reader: each row becomes the node or pod the GPU model reads, and every
malformed row is one message naming the file, the line and the column."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.gpu_devices import share, whole
from policyengine.model.gpu_share import node_devices, pod_demand
from policyengine.model.openb import find_files, load_trace, read_nodes, read_pods
from policyengine.model.resources import pod_requests

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


@pytest.mark.parametrize(
    ("row", "demand", "cpu_milli", "gpu_milli"),
    [
        ("p,12000,16384,1,1000,,LS,Running,0,1,0", whole(1), 12000, 1000),
        ("p,6000,12288,1,460,,LS,Running,0,1,0", share(cores=46, memory_percent=46), 6000, 460),
        ("p,8000,30000,8,1000,,LS,Running,0,1,0", whole(8), 8000, 8000),
        ("p,4000,8192,0,0,,BE,Running,0,1,0", whole(0), 4000, 0),
        # rounded up to a whole percent: the model counts compute in percent
        ("p,1000,1024,1,125,,BE,Running,0,1,0", share(cores=13, memory_percent=13), 1000, 125),
    ],
    ids=["whole", "share", "eight-gpus", "cpu-only", "share-rounded-up"],
)
def test_a_pod_row_becomes_its_demand(row, demand, cpu_milli, gpu_milli) -> None:
    (trace_pod,) = read_pods(POD_HEADER + row + "\n", "pods.csv")
    assert pod_demand(trace_pod.pod) == demand
    assert trace_pod.gpu_milli == gpu_milli
    assert pod_requests(trace_pod.pod)["cpu"] * 1000 == cpu_milli
    assert trace_pod.pod.key == "openb/p"


def test_gpu_spec_becomes_required_node_affinity_on_the_product_label() -> None:
    (trace_pod,) = read_pods(POD_HEADER + "p,1000,1024,1,1000,V100M16|V100M32,LS,,0,1,0\n")
    affinity = trace_pod.pod.affinity
    assert affinity is not None and affinity.node_affinity is not None
    (term,) = affinity.node_affinity.required.terms  # type: ignore[union-attr]
    (requirement,) = term.match_expressions
    assert (requirement.key, requirement.operator, tuple(requirement.values)) == (
        "nvidia.com/gpu.product",
        "In",
        ("V100M16", "V100M32"),
    )


def test_a_node_row_becomes_its_devices_and_labels() -> None:
    (node,) = read_nodes(NODE_HEADER + "n1,96000,393216,8,G2\n")
    devices = node_devices(node)
    assert [d.uuid for d in devices] == [f"n1-gpu{i}" for i in range(8)]
    assert {d.model for d in devices} == {"G2"}
    assert {d.slots for d in devices} == {100}
    assert node.labels["nvidia.com/gpu.product"] == "G2"
    assert node.allocatable["cpu"] == 96
    assert node.allocatable["nvidia.com/gpu"] == 8


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            NODE_HEADER + "n1,lots,1,1,T4\n",
            "nodes.csv:2: cpu_milli 'lots': expected a whole number",
        ),
        (NODE_HEADER + "n1,1,1,-1,T4\n", "nodes.csv:2: gpu -1: must be at least 0"),
        (NODE_HEADER + "n1,1,1,1,T4\nn1,1,1,1,T4\n", "nodes.csv:3: sn 'n1': defined twice"),
        (NODE_HEADER + ",1,1,1,T4\n", "nodes.csv:2: sn: a node needs a name"),
        ("sn,cpu_milli\nn1,1\n", "nodes.csv: missing column(s) memory_mib, gpu, model"),
    ],
    ids=["not-a-number", "negative", "twice", "no-name", "missing-columns"],
)
def test_a_bad_node_row_is_named(text: str, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        read_nodes(text, "nodes.csv")
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("p,1,1,1,1500,,,,,,", "pods.csv:2: gpu_milli 1500: at most 1000 (one GPU)"),
        (
            "p,1,1,2,500,,,,,,",
            "pods.csv:2: gpu_milli 500: a share of a GPU is for one-GPU pods (num_gpu 2)",
        ),
        ("p,1,1,x,0,,,,,,", "pods.csv:2: num_gpu 'x': expected a whole number"),
    ],
    ids=["share-above-one", "multi-gpu-share", "not-a-number"],
)
def test_a_bad_pod_row_is_named(row: str, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        read_pods(POD_HEADER + row + "\n", "pods.csv")
    assert str(caught.value) == message


def test_the_two_lists_are_found_by_their_headers(tmp_path: Path) -> None:
    (tmp_path / "b.csv").write_text(NODE_HEADER + "n1,1000,1024,1,T4\n")
    (tmp_path / "a.csv").write_text(POD_HEADER + "p,1,1,1,125,,,,,,\n")
    (tmp_path / "notes.txt").write_text("not a list")
    assert find_files([tmp_path]) == (tmp_path / "b.csv", tmp_path / "a.csv")
    trace = load_trace([tmp_path])
    assert (len(trace.nodes), len(trace.pods), trace.total_gpus) == (1, 1, 1)
    assert trace.warnings == (
        f"{tmp_path / 'a.csv'}: 1 pod(s) ask a share that is not a whole percent of a GPU; "
        "it is rounded up to the next percent",
    )


def test_a_missing_list_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text(POD_HEADER)
    with pytest.raises(ModelError) as caught:
        find_files([tmp_path])
    assert str(caught.value) == (
        "expected one node list (a CSV with header sn,cpu_milli,…), found none"
    )
