"""NodeVolumeLimits' groups of nodes, kept from one cycle to the next.

NodeVolumeLimits' answer at a node reads the node's attach limits, whether (and how) its
CSINode migrates in-tree plugins, and the volumes its pods attach. Nodes alike in the first two
and in how many volumes of each limit's key their pods attach give the same answer to any pod
none of whose own volumes is attached there already (one that is is not counted again). Each
row gets the code of its group: equal codes, equal answers; -1 for a row judged alone (an
inline volume of one of its pods does not translate: an error whatever the pod).

A row's group changes with its ``NodeInfo`` (its node, its pods) and with the claims, volumes
and classes its pods' volumes read. The kept groups follow the snapshots' steps
(``steplog``) and the storages' lineage (``storage_log``), so that a cycle looks again only
at the rows a placement or a storage change touched: with thousands of running pods holding
claims, their nodes are grouped, not each judged alone every cycle. When either cannot say
what changed, every row is looked at again.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from policyengine.model.plugins import node_volume_limits as limits
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import CSINode, StorageObjects
from policyengine.model.storage_log import Change
from policyengine.model.volumes import claim_name
from policyengine.schedlib.rowkeys import RowKeyed
from policyengine.schedlib.steplog import changed_rows

T = TypeVar("T")


def reads(info: NodeInfo, storage: StorageObjects) -> tuple[Change, ...]:
    """The storage keys what ``info``'s pods attach may depend on: each claim they name, the
    volume it is bound to and its class (more than NodeVolumeLimits reads of some, never
    less)."""
    out: list[Change] = []
    for pod_info in info.pods_with_volumes:
        pod = pod_info.pod
        for volume in pod.volumes:
            if not volume.uses_claim:
                continue
            key = f"{pod.namespace}/{claim_name(pod.name, volume)}"
            out.append(("pvc", key))
            claim = storage.pvcs.get(key)
            if claim is None:
                continue
            if claim.volume_name:
                out.append(("pv", claim.volume_name))
            if claim.storage_class:
                out.append(("class", claim.storage_class))
    return tuple(out)


def limit_group(
    info: NodeInfo, csi_node: CSINode | None, counts: tuple[tuple[str, int], ...] = ()
) -> Hashable:
    """What NodeVolumeLimits reads of a node beside the pod: its attach limits, how its
    CSINode migrates in-tree plugins, and how many volumes of each limit's key its pods
    attach (``counts``, by key). Nodes alike in all three answer a pod alike, unless one of
    the pod's own volumes is attached there."""
    found = limits.volume_limits(info, csi_node)
    return tuple(found.items()), limits.migration_key(csi_node), counts


_TABLES = itertools.count()  # numbers each build of the groups


@dataclass(eq=False)
class LimitRows:
    """Each row's group for one snapshot and storage, and the indexes that find the rows a
    change touches (``readers``) and the rows a pod's own volumes are attached at
    (``holders``)."""

    generation: int
    nodes: Sequence[NodeInfo]
    storage: StorageObjects
    needs_annotation: bool
    codes: np.ndarray
    groups: dict[Hashable, int] = field(default_factory=dict)
    # Which build numbered the groups: a code means its group only within one table.
    table: int = field(default_factory=lambda: next(_TABLES))
    # A CSINode (or None) of each migration key met: the pod's own volumes are worked out
    # once per key (``limits.pod_volumes``).
    migrations: dict[limits.MigrationKey, CSINode | None] = field(default_factory=dict)
    row_reads: dict[int, tuple[Change, ...]] = field(default_factory=dict)
    readers: dict[Change, set[int]] = field(default_factory=dict)
    row_volumes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    holders: dict[str, set[int]] = field(default_factory=dict)

    @staticmethod
    def build(
        snapshot: ClusterSnapshot, storage: StorageObjects, needs_annotation: bool
    ) -> LimitRows:
        kept = LimitRows(
            snapshot.generation,
            snapshot.rows,
            storage,
            needs_annotation,
            np.empty(len(snapshot), np.int64),
        )
        for row, info in enumerate(snapshot.nodes):
            kept.look_at(row, info)
        return kept

    def look_at(self, row: int, info: NodeInfo) -> None:
        """Work out ``row``'s group again (``info`` is its ``NodeInfo`` now)."""
        storage = self.storage
        csi_node = storage.csi_nodes.get(info.node.name)
        migration = limits.migration_key(csi_node)
        self.migrations.setdefault(migration, csi_node)
        self._unindex(row)
        attached: limits.Attachable | str = {}
        if info.pods_with_volumes:
            row_reads = self.row_reads[row] = reads(info, storage)
            for change in row_reads:
                self.readers.setdefault(change, set()).add(row)
            attached = limits.node_volumes(info, storage, csi_node, self.needs_annotation)
        if isinstance(attached, str):
            self.codes[row] = -1
            return
        if attached:
            self.row_volumes[row] = tuple(attached)
            for volume in attached:
                self.holders.setdefault(volume, set()).add(row)
        counts = tuple(sorted(limits.attached_counts(attached).items()))
        group = limit_group(info, csi_node, counts)
        self.codes[row] = self.groups.setdefault(group, len(self.groups))

    def _unindex(self, row: int) -> None:
        # Emptied entries go: claims and volumes come and go for as long as a scheduler runs.
        for change in self.row_reads.pop(row, ()):
            _discard(self.readers, change, row)
        for volume in self.row_volumes.pop(row, ()):
            _discard(self.holders, volume, row)

    def follow(self, snapshot: ClusterSnapshot, storage: StorageObjects) -> bool:
        """Bring the rows up to ``snapshot`` and ``storage``; False when what changed is not
        known (then build anew)."""
        nodes = snapshot.rows  # not ``nodes``: a derived snapshot builds that tuple when read
        if len(nodes) != len(self.nodes):
            return False
        if nodes is self.nodes and storage is self.storage:
            return True
        changes = storage.changes_since(self.storage)
        if changes is None:
            return False
        rows: set[int] = set()
        if nodes is not self.nodes:
            moved = changed_rows(snapshot, self.generation, self.nodes)
            if moved is None:
                return False
            rows.update(moved)
        for change in changes:
            if change[0] == "csinode":
                row = snapshot.node_positions.get(change[1])
                if row is not None:
                    rows.add(row)
            rows.update(self.readers.get(change, ()))
        self.generation, self.nodes, self.storage = snapshot.generation, nodes, storage
        for row in rows:
            self.look_at(row, nodes[row])
        return True

    def codes_at(self, state: limits.FilterState, rows: np.ndarray) -> np.ndarray:
        """The group codes of ``rows`` for the pod of ``state``, a negative code of its own
        for each row judged alone: those whose pods' volumes do not translate and those
        attaching one of the pod's own volumes already."""
        codes = self.codes[rows]
        alone = codes < 0
        held = self.held_rows(state)
        if held:
            alone |= np.isin(rows, np.fromiter(held, np.int64, len(held)))
        if alone.any():
            codes[alone] = -1 - np.flatnonzero(alone)
        return codes

    def held_rows(self, state: limits.FilterState) -> set[int]:
        """The rows where one of the pod's own volumes is attached already."""
        held: set[int] = set()
        for csi_node in self.migrations.values():
            own = limits.pod_volumes(state, csi_node)
            if isinstance(own, str):
                continue
            for volume in own:
                held.update(self.holders.get(volume, ()))
        return held


def _discard(index: dict[Any, set[int]], key: Any, row: int) -> None:
    rows = index.get(key)
    if rows is not None:
        rows.discard(row)
        if not rows:
            del index[key]


# The last snapshot's groups, taken by the cycle that reads them and put back after, so that
# a cycle in another thread meanwhile builds its own rather than reading rows being changed.
_KEPT: list[LimitRows] = []
_LOCK = threading.Lock()


def limit_codes(
    snapshot: ClusterSnapshot, state: limits.FilterState, rows: np.ndarray
) -> np.ndarray:
    """The NodeVolumeLimits group of each of ``rows`` of ``snapshot`` for the pod of
    ``state`` (``LimitRows.codes_at``)."""
    return _with_rows(snapshot, state, lambda kept: kept.codes_at(state, rows))


def limit_row_key(snapshot: ClusterSnapshot, state: limits.FilterState) -> RowKeyed | None:
    """A key of NodeVolumeLimits' answers to pods alike (``rowkeys``): equal where the
    groups' table and each row's group are, for a pod none of whose own volumes is attached
    anywhere yet; None for one whose is (its answer at those rows is its own)."""

    def key(kept: LimitRows) -> RowKeyed | None:
        if kept.held_rows(state):
            return None
        # A copy: the kept codes change in place as the rows are looked at again.
        return RowKeyed(("volume-limits", kept.table, kept.needs_annotation), kept.codes.copy())

    return _with_rows(snapshot, state, key)


def _with_rows(
    snapshot: ClusterSnapshot, state: limits.FilterState, read: Callable[[LimitRows], T]
) -> T:
    """``read`` of the kept groups brought up to ``snapshot`` and the pod's storage."""
    storage = state.storage
    assert storage is not None
    with _LOCK:
        kept = _KEPT.pop() if _KEPT else None
    if (
        kept is None
        or kept.needs_annotation != state.needs_annotation
        or not kept.follow(snapshot, storage)
    ):
        kept = LimitRows.build(snapshot, storage, state.needs_annotation)
    try:
        return read(kept)
    finally:
        with _LOCK:
            _KEPT[:] = [kept]
