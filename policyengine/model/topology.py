"""Where a node sits: hostname, zone, region, and the GPU-cluster levels rack, NVLink domain
and network block.

Zone, region and hostname come from Kubernetes' well-known labels (with the deprecated
``failure-domain.beta`` spellings as fallbacks). Rack, NVLink domain and network block have no
standard label, so ``TopologyConfig`` names them; each level takes a list of keys and the first
one present on the node wins. Defaults:

* rack: ``topology.kubernetes.io/rack``
* nvlink_domain: ``nvidia.com/gpu.clique`` (GPU feature discovery on NVLink-switch systems),
  then ``network.topology.nvidia.com/accelerator``
* block: ``network.topology.nvidia.com/block``, then ``cloud.google.com/gce-topology-block``
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyengine.model.objects import Node

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
LEGACY_ZONE = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION = "failure-domain.beta.kubernetes.io/region"

LEVELS = ("hostname", "rack", "nvlink_domain", "block", "zone", "region")


@dataclass(frozen=True, slots=True)
class TopologyConfig:
    hostname_keys: tuple[str, ...] = (HOSTNAME,)
    zone_keys: tuple[str, ...] = (ZONE, LEGACY_ZONE)
    region_keys: tuple[str, ...] = (REGION, LEGACY_REGION)
    rack_keys: tuple[str, ...] = ("topology.kubernetes.io/rack",)
    nvlink_domain_keys: tuple[str, ...] = (
        "nvidia.com/gpu.clique",
        "network.topology.nvidia.com/accelerator",
    )
    block_keys: tuple[str, ...] = (
        "network.topology.nvidia.com/block",
        "cloud.google.com/gce-topology-block",
    )

    def keys(self, level: str) -> tuple[str, ...]:
        if level not in LEVELS:
            raise ValueError(
                f"unknown topology level {level!r}; expected one of {', '.join(LEVELS)}"
            )
        return getattr(self, f"{level}_keys")  # type: ignore[no-any-return]


DEFAULT_TOPOLOGY = TopologyConfig()


def _first(labels: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    for k in keys:
        v = labels.get(k)
        if v is not None:
            return v
    return None


@dataclass(frozen=True, slots=True)
class Topology:
    hostname: str
    zone: str | None = None
    region: str | None = None
    rack: str | None = None
    nvlink_domain: str | None = None
    block: str | None = None

    def domain(self, level: str) -> str | None:
        if level not in LEVELS:
            raise ValueError(
                f"unknown topology level {level!r}; expected one of {', '.join(LEVELS)}"
            )
        return getattr(self, level)  # type: ignore[no-any-return]


def topology_of(node: Node, config: TopologyConfig = DEFAULT_TOPOLOGY) -> Topology:
    labels = node.labels
    return Topology(
        hostname=_first(labels, config.hostname_keys) or node.name,
        zone=_first(labels, config.zone_keys),
        region=_first(labels, config.region_keys),
        rack=_first(labels, config.rack_keys),
        nvlink_domain=_first(labels, config.nvlink_domain_keys),
        block=_first(labels, config.block_keys),
    )
