"""Columnar forms of the hot kube-scheduler plugins: one call for many nodes.

``functions`` runs a plugin's per-node step once per node; for the plugins every pod pays for
on every node, the forms here compute the same results with far less Python per node: nodes
are grouped by what the plugin reads of them (a taint list is shared by thousands of nodes,
so it is judged once per distinct list), and per-node facts the plugin derives from a
``NodeInfo`` are kept as long as that ``NodeInfo`` lives (it is immutable). Each form returns
exactly what the plugin's own ``filter``/``score`` returns for each node; the property test in
``tests/engine/test_fast_path.py`` holds them equal.

``FILTERS`` and ``SCORES`` map a plugin name to ``form(state, infos, ctx) -> list``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from policyengine.model.plugins import PLUGINS_BY_NAME
from policyengine.model.snapshot import NodeInfo

Form = Callable[[Any, Sequence[NodeInfo], Any], list[Any]]


def _grouped(run: Callable[[Any, NodeInfo], Any], key: Callable[[NodeInfo], Any]) -> Form:
    """The plugin's per-node step, run once per distinct ``key(node)`` (what it reads)."""

    def form(state: Any, infos: Sequence[NodeInfo], ctx: Any) -> list[Any]:
        seen: dict[Any, Any] = {}
        out = []
        for info in infos:
            k = key(info)
            try:
                out.append(seen[k])
            except KeyError:
                value = seen[k] = run(state, info)
                out.append(value)
        return out

    return form


def _taints(info: NodeInfo) -> Any:
    return info.node.taints


_TAINTS = PLUGINS_BY_NAME["TaintToleration"]

FILTERS: dict[str, Form] = {}
SCORES: dict[str, Form] = {}

# TaintToleration reads only the node's taints (and the pod's tolerations, in the state);
# the reasons list is shared between nodes, which is safe: callers never mutate it.
if _TAINTS.filter is not None and _TAINTS.score is not None:
    FILTERS["TaintToleration"] = _grouped(_TAINTS.filter, _taints)
    SCORES["TaintToleration"] = _grouped(_TAINTS.score, _taints)
