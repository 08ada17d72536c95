"""The evaluation context domain builtins receive: one pod's scheduling cycle.

kube-scheduler's plugins do per-pod work once (PreFilter, PreScore) and per-node work many
times. Builtins get the same shape through this context: ``prepared(key, factory)`` computes a
per-pod state on first use and hands the same object to every later node. The engine builds
one context per cycle over one immutable snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from policyengine.model.plugins.config import DEFAULT_CONFIG
from policyengine.model.topology import DEFAULT_TOPOLOGY

T = TypeVar("T")


class CycleContext:
    """Per-cycle state shared by the builtins; ``snapshot`` never changes during the cycle."""

    __slots__ = (
        "_prepared",
        "alike",
        "config",
        "device_choice",
        "feasible",
        "pod",
        "snapshot",
        "topology",
        "views",
        "workload",
    )

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
        # Set by the engine between filtering and scoring (a sequence gathered when read; the
        # engine's also says where its nodes are: ``rows_in(snapshot)``, the rows of
        # ``snapshot.nodes``, or None).
        self.feasible: Sequence[Any] = ()
        # States kept for every pod alike to this one under this config (set by the engine):
        # where ``prepared(..., pod_only=True)`` states live between cycles.
        self.alike: dict[Any, Any] | None = None
        # How the pod gets its GPU devices inside a node (rule, shapes), from the governing
        # policy's ``device`` statement (set by the engine; None: best fit), and the workload
        # learned shapes are drawn from (None: the snapshot's running pods).
        self.device_choice: Any = None
        self.workload: Any = None
        # The cycle's node views, row for row ``snapshot.nodes`` (set by the engine; None:
        # unknown): a batch of some of them says its rows (``node_rows.view_rows``).
        self.views: Any = None

    def prepared(self, key: Any, factory: Callable[[], T], pod_only: bool = False) -> T:
        """``factory()`` once per cycle; ``pod_only``: it reads nothing but the pod and
        ``config``, so pods alike share one."""
        # ``get`` with a marker rather than catching KeyError: most keys are missed once per
        # cycle, and raising costs more than the lookup.
        value = self._prepared.get(key, _MISSING)
        if value is not _MISSING:
            return value
        alike = self.alike
        if pod_only and alike is not None:
            value = alike.get(key, _MISSING)
            if value is _MISSING:
                value = alike[key] = factory()
        else:
            value = factory()
        self._prepared[key] = value
        return value


_MISSING = object()  # no state prepared under the key yet
