"""Where the generator puts its running pods: never beyond a node's allocatable resources,
GPUs or pod count, respecting taints, node selectors, GPU models and hostname anti-affinity.
"""

from __future__ import annotations

from collections.abc import Callable

from policyengine.synthetic.nodes import NodeState
from policyengine.synthetic.pods import Shape
from policyengine.synthetic.randomness import Rand
from policyengine.synthetic.spec import PROXY_IMAGE, ClusterSpec, PodTemplate

# -------------------------------------------------------------------------- placement


class Placer:
    """Puts running pods on nodes without ever exceeding what a node has left."""

    _PROBES = 12

    def __init__(self, spec: ClusterSpec, nodes: list[NodeState], rand: Rand) -> None:
        self.spec = spec
        self.nodes = nodes
        self.rand = rand
        self.by_zone: dict[PodTemplate, list[list[int]]] = {}  # eligible nodes per zone
        self.flat: dict[PodTemplate, list[int]] = {}  # eligible nodes
        self.zone_counts: dict[str, list[int]] = {}  # app -> its pods per zone
        self.hosts: dict[str, set[int]] = {}  # app -> nodes holding one (anti-affinity)
        self.has_cpu_nodes = any(n.gpus == 0 for n in nodes)

    def _eligible(self, t: PodTemplate, n: NodeState) -> bool:
        gpu_taint = self.spec.gpu_taint
        for key, value in n.blocking_taints:
            tolerated = (
                t.tolerates_gpu_taint
                and gpu_taint is not None
                and (key, value) == (gpu_taint.key, gpu_taint.value)
            )
            if not tolerated:
                return False
        if any(n.labels.get(k) != v for k, v in t.node_selector):
            return False
        if t.gpus:
            return n.gpus >= t.gpus and (t.gpu_model is None or n.gpu_product == t.gpu_model)
        # CPU-only pods stay off GPU nodes while there are other nodes, as operators intend.
        return n.gpus == 0 or not self.has_cpu_nodes

    def _pools(self, t: PodTemplate) -> list[list[int]]:
        if t not in self.by_zone:
            zones: list[list[int]] = [[] for _ in self.spec.zones]
            for i, n in enumerate(self.nodes):
                if self._eligible(t, n):
                    zones[n.zone].append(i)
            self.by_zone[t] = zones
            self.flat[t] = [i for z in zones for i in z]
        return self.by_zone[t] if t.zone_spread else [self.flat[t]]

    def place(self, shape: Shape, app: str) -> NodeState | None:
        t = shape.template
        need = shape.need
        nodes = self.nodes
        taken = self.hosts.setdefault(app, set()) if t.hostname_anti_affinity else set()

        def fits(i: int) -> bool:
            free = nodes[i].free
            return i not in taken and all(free[k] >= need[k] for k in range(5))

        counts = self.zone_counts.setdefault(app, [0] * len(self.spec.zones))
        pools = self._pools(t)
        if t.zone_spread:
            # Fill the zone with the fewest replicas first: running pods start out spread.
            pools = [pools[z] for z in sorted(range(len(pools)), key=lambda z: (counts[z], z))]
        for pool in pools:
            chosen = self._probe(pool, fits)
            if chosen is None:
                continue
            node = nodes[chosen]
            for k in range(5):
                node.free[k] -= need[k]
            counts[node.zone] += 1
            if t.hostname_anti_affinity:
                taken.add(chosen)
            node.images[shape.image] = t.image_mb * 1_000_000
            if len(shape.containers) > 1:
                node.images[PROXY_IMAGE] = 52_000_000
            return node
        return None

    def _probe(self, pool: list[int], fits: Callable[[int], bool]) -> int | None:
        """A random node with room: a few random probes, then a scan from a random start."""
        n = len(pool)
        if n == 0:
            return None
        for _ in range(min(n, self._PROBES)):
            i = pool[self.rand.below(n)]
            if fits(i):
                return i
        start = self.rand.below(n)
        for k in range(n):
            i = pool[(start + k) % n]
            if fits(i):
                return i
        return None
