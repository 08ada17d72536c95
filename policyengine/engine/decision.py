"""What one scheduling cycle decided, as plain data every command renders its own way.

``filter``, ``score``, ``explain``, ``simulate`` and the scheduler loop all read a
``Decision``; the JSON contracts of DESIGN.md section 4 are views of it (``render`` in the CLI),
so every output agrees with every other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rejection:
    """A filter rule that rejected a node, with its reasons (kube's strings for kube rules)."""

    rule: str
    reasons: tuple[str, ...]
    error: str | None = None


@dataclass(frozen=True)
class NodeScore:
    total: float
    rules: Mapping[str, float]  # each rule's normalised score, 0–100
    raw: Mapping[str, float | None] = field(default_factory=dict)  # before normalisation


@dataclass(frozen=True)
class Decision:
    pod: str  # namespace/name
    policy: str | None
    version: str
    node: str | None
    num_nodes: int
    feasible: tuple[str, ...] = ()
    infeasible: Mapping[str, tuple[Rejection, ...]] = field(default_factory=dict)
    scores: Mapping[str, NodeScore] = field(default_factory=dict)
    ranking: tuple[str, ...] = ()
    message: str = ""  # why the pod is unschedulable (the histogram line), or how it was placed
    errors: tuple[str, ...] = ()  # runtime errors of rules, each with its rule and position

    @property
    def scheduled(self) -> bool:
        return self.node is not None
