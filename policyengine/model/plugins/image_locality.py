"""ImageLocality: favour nodes that already hold the pod's images, scaled down for images
present on many nodes (so one popular image does not pull every pod to the same node)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policyengine.model.normalize import MAX_NODE_SCORE, go_div
from policyengine.model.objects import Pod
from policyengine.model.plugins.base import Plugin
from policyengine.model.plugins.config import DEFAULT_CONFIG, SchedulerConfig
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo, normalized_image_name

NAME = "ImageLocality"
WEIGHT = 1
MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


@dataclass(frozen=True, slots=True)
class ScoreState:
    images: tuple[str, ...]  # normalised, one per container
    num_containers: int
    total_nodes: int
    spread: dict[str, int]  # image name -> number of nodes holding it


def prepare_score(
    pod: Pod,
    snapshot: ClusterSnapshot,
    feasible: Sequence[NodeInfo],
    config: SchedulerConfig = DEFAULT_CONFIG,
) -> ScoreState:
    containers = (
        (*pod.init_containers, *pod.containers)
        if config.image_locality_init_containers
        else pod.containers
    )
    images = tuple(normalized_image_name(c.image) for c in containers)
    return ScoreState(
        images=images,
        num_containers=len(containers),
        total_nodes=snapshot.num_nodes,
        spread={i: snapshot.image_num_nodes(i) for i in images},
    )


def scaled_image_score(size: int, num_nodes: int, total_nodes: int) -> int:
    spread = float(num_nodes) / float(total_nodes)
    return int(float(size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    if max_threshold == MIN_THRESHOLD:
        return 0
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


def score(state: ScoreState, node: NodeInfo) -> int:
    if state.num_containers == 0:
        return 0
    sizes = node.image_sizes
    total = 0
    for image in state.images:
        size = sizes.get(image)
        if size is not None:
            total += scaled_image_score(size, state.spread.get(image, 0), state.total_nodes)
    return calculate_priority(total, state.num_containers)


PLUGIN = Plugin(NAME, None, "image_locality", WEIGHT, prepare_score=prepare_score, score=score)
