"""``gpu_info`` is shared between nodes that read alike (``model.gpu`` keeps one ``GpuInfo``
per distinct set of the labels and allocatable entries it reads): whatever order nodes come
in, each gets exactly what computing its own would give."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model import gpu
from tests.model.builders import make_node

LABELS = {
    gpu.PRODUCT: ["NVIDIA-H100-80GB-HBM3", "NVIDIA-L4", ""],
    gpu.MEMORY: ["81559", "23034", "lots"],
    gpu.COUNT: ["8", "4", "-1"],
    gpu.REPLICAS: ["1", "4"],
    gpu.DRIVER_MAJOR: ["550"],
    gpu.DRIVER_MINOR: ["54"],
    gpu.MIG_CAPABLE: ["true", "false"],
    gpu.MIG_STRATEGY: ["mixed", ""],
    "zone": ["a", "b"],  # read by no GPU attribute
}
ALLOCATABLE = {
    "nvidia.com/gpu": ["8", "6", "0"],
    "nvidia.com/mig-1g.10gb": ["7", "2"],
    "nvidia.com/mig-3g.40gb": ["1"],
}

nodes = st.builds(
    lambda index, labels, extra: make_node(f"n{index}", labels=labels, extra=extra),
    st.integers(0, 1000),
    st.dictionaries(st.sampled_from(sorted(LABELS)), st.just("")).flatmap(
        lambda keys: st.fixed_dictionaries({k: st.sampled_from(LABELS[k]) for k in keys})
    ),
    st.dictionaries(st.sampled_from(sorted(ALLOCATABLE)), st.just("")).flatmap(
        lambda keys: st.fixed_dictionaries({k: st.sampled_from(ALLOCATABLE[k]) for k in keys})
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(nodes, min_size=1, max_size=8))
def test_shared_gpu_info_equals_each_nodes_own(drawn: list) -> None:  # type: ignore[type-arg]
    for node in drawn:
        assert gpu.gpu_info(node) == gpu._gpu_info(node)


def test_nodes_reading_alike_share_one_gpu_info() -> None:
    labels = {gpu.PRODUCT: "NVIDIA-L4", "kubernetes.io/hostname": "a"}
    first = gpu.gpu_info(make_node("a", labels=labels, extra={"nvidia.com/gpu": "4"}))
    other = {**labels, "kubernetes.io/hostname": "b"}
    assert gpu.gpu_info(make_node("b", labels=other, extra={"nvidia.com/gpu": "4"})) is first
    assert gpu.gpu_info(make_node("c", labels=other, extra={"nvidia.com/gpu": "2"})) is not first
