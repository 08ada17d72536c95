from __future__ import annotations

from policyengine.model.gpu import gpu_info
from policyengine.model.topology import TopologyConfig, topology_of
from tests.model.builders import make_node


def test_gpu_feature_discovery_labels() -> None:
    node = make_node(
        "g",
        labels={
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.family": "hopper",
            "nvidia.com/gpu.compute.major": "9",
            "nvidia.com/cuda.driver.major": "550",
            "nvidia.com/cuda.driver.minor": "54",
            "nvidia.com/cuda.driver.rev": "15",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig.capable": "true",
        },
        extra={"nvidia.com/gpu": "6", "nvidia.com/mig-1g.10gb": "7"},
    )
    info = gpu_info(node)
    assert info.product == "NVIDIA-H100-80GB-HBM3"
    assert (info.memory_mib, info.count, info.allocatable) == (81559, 8, 6)
    assert info.total_memory_mib == 8 * 81559
    assert info.family == "hopper" and info.compute_major == 9
    assert info.driver_version == "550.54.15"
    assert info.mig_strategy == "mixed" and info.mig_capable
    assert info.mig_devices == {"1g.10gb": 7}


def test_gpu_defaults_when_labels_are_absent_or_bad() -> None:
    plain = gpu_info(make_node("cpu-only"))
    assert (plain.product, plain.memory_mib, plain.count, plain.mig_strategy, plain.has_gpu) == (
        "",
        0,
        0,
        "none",
        False,
    )
    guessed = gpu_info(
        make_node("g", labels={"nvidia.com/gpu.memory": "lots"}, extra={"nvidia.com/gpu": "4"})
    )
    assert (guessed.memory_mib, guessed.count, guessed.has_gpu) == (0, 4, True)


def test_topology_levels_and_config() -> None:
    node = make_node(
        "n1",
        labels={
            "topology.kubernetes.io/zone": "z1",
            "example.com/rack": "r7",
            "nvidia.com/gpu.clique": "c1",
        },
    )
    topo = topology_of(node)
    assert (topo.hostname, topo.zone, topo.region, topo.rack, topo.nvlink_domain) == (
        "n1",
        "z1",
        None,
        None,
        "c1",
    )
    custom = topology_of(node, TopologyConfig(rack_keys=("example.com/rack",)))
    assert custom.domain("rack") == "r7"
    legacy = topology_of(make_node("n2", labels={"failure-domain.beta.kubernetes.io/zone": "old"}))
    assert legacy.zone == "old"
