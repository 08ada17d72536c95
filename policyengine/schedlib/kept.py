"""What the builtins keep from one cycle to the next, and cycles that keep nothing.

The builtins keep sums per topology key, row maps, label columns, matched pods and learned
GPU shapes across cycles: the fast path's incremental work rests on them. The reference
evaluator calls the same builtins, so an agreement check sharing those caches would not see a
kept sum gone wrong: both sides would read it. ``nothing_kept()`` runs a block with every
such cache replaced by a fresh, empty one wherever a module holds it, and puts the originals
back after, so that a reference decision is made from its snapshot alone. Shared stay the
pure memos (parsed shapes, compiled terms, interned terms), the log of how snapshots derive
from one another (``steplog``: a record of what happened, not a result) and the GPU shapes
learned from the running pods (``gpu``'s workload: relearned only once the GPU pods grew or
shrank by 5%, so what it holds is part of what a cycle decides, not a copy of the snapshot).

Cycles of the fast path must not run in other threads during the block: they would fill the
fresh caches and find their own gone. The reference evaluator's callers (tests, benchmarks)
run it alone.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

# Each cache by the module that makes it and its name there. By name, not imported: the
# reference cycle, which uses this, imports nothing of the builtins' columnar forms, and a
# module not loaded keeps nothing.
CACHES: tuple[tuple[str, str], ...] = (
    ("policyengine.schedlib.domains", "_COLUMNS"),
    ("policyengine.schedlib.node_rows", "_ROWS"),
    ("policyengine.schedlib.node_rows", "_PAIRS"),
    ("policyengine.schedlib.topology_filters", "SPREAD_SUMS"),
    ("policyengine.schedlib.topology_filters", "TERM_SUMS"),
    ("policyengine.schedlib.topology_filters", "EXISTING_SUMS"),
    ("policyengine.schedlib.topology_filters", "_SPREAD_INPUTS"),
    ("policyengine.schedlib.topology_filters", "_MATCHED"),
    ("policyengine.schedlib.topology_filters", "_EXISTING"),
    ("policyengine.schedlib.spread_score", "_COUNTS"),
    ("policyengine.schedlib.spread_score", "_LAST_DOMAINS"),
    ("policyengine.schedlib.domain_counts", "_indexes"),
    ("policyengine.schedlib.gpu", "_CAPACITY_SUMS"),
    ("policyengine.schedlib.volume_rows", "_KEPT"),
    ("policyengine.schedlib.resource_facts", "STORE"),
)


def fresh(cache: Any) -> Any:
    """An empty cache of the same kind and size as ``cache``: kept sums and row columns
    (``domains``) by how many they keep, resource facts by their spare rows."""
    kind = type(cache)
    if hasattr(cache, "_kept"):
        return kind(cache._kept)
    if hasattr(cache, "_spare"):
        return kind(cache._spare)
    return kind()


def _swap_fresh() -> list[tuple[Any, str, Any]]:
    """Put a fresh cache in place of each kept one, wherever a module holds it; each
    (holder, attribute, the kept cache) swapped."""
    swapped: list[tuple[Any, str, Any]] = []
    holders = [m for name, m in list(sys.modules.items()) if name.startswith("policyengine.")]
    for module_name, name in CACHES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        kept = getattr(module, name)
        empty = fresh(kept)
        for holder in holders:
            for attribute, value in list(vars(holder).items()):
                if value is kept:
                    swapped.append((holder, attribute, kept))
                    setattr(holder, attribute, empty)
    return swapped


@contextlib.contextmanager
def nothing_kept() -> Iterator[None]:
    """The block's cycles start from empty caches, and leave the kept ones as they were."""
    swapped: list[tuple[Any, str, Any]] = []
    try:
        swapped = _swap_fresh()
        yield
    finally:
        for holder, attribute, kept in reversed(swapped):
            setattr(holder, attribute, kept)


def forget() -> None:
    """Drop every kept cache for good: the next cycles start as a new process's would (but
    for the learned GPU shapes and the step log, which ``gpu.clear`` and ``steplog.clear``
    forget)."""
    _swap_fresh()
