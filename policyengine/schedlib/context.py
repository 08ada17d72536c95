"""The evaluation context domain builtins receive: one pod's scheduling cycle.

kube-scheduler's plugins do per-pod work once (PreFilter, PreScore) and per-node work many
times. Builtins get the same shape through this context: ``prepared(key, factory)`` computes a
per-pod state on first use and hands the same object to every later node. The engine builds
one context per cycle over one immutable snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.topology import DEFAULT_TOPOLOGY

T = TypeVar("T")


class CycleContext:
    """Per-cycle state shared by the builtins; ``snapshot`` never changes during the cycle."""

    __slots__ = ("_prepared", "config", "feasible", "pod", "snapshot", "topology")

    def __init__(
        self,
        snapshot: Any,
        pod: Any,
        config: Any = DEFAULT_CONFIG,
        topology: Any = DEFAULT_TOPOLOGY,
    ):
        self.snapshot = snapshot
        self.pod = pod
        self.config = config
        self.topology = topology
        self._prepared: dict[Any, Any] = {}
        self.feasible: tuple[Any, ...] = ()  # set by the engine between filtering and scoring

    def prepared(self, key: Any, factory: Callable[[], T]) -> T:
        try:
            return self._prepared[key]
        except KeyError:
            value = self._prepared[key] = factory()
            return value
