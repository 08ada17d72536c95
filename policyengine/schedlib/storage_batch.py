"""Columnar forms of the storage filters: one plugin step per group of nodes alike.

Run per node, VolumeBinding, NodeVolumeLimits and VolumeZone cost a pod with a claim tens of
milliseconds on a few thousand nodes, yet most nodes give one of a few answers. Each form here
groups the nodes by exactly what the plugin's per-node step reads of them and runs that step
once per group, so every node gets the very reasons the plugin gives it. Many nodes are
grouped by integer codes (``_by_codes``: the snapshot's label columns, a code per hostname, a
kept column of attach-limit groups), the few a class's later cycles ask about in Python
(``_grouped``). What each reads:

- VolumeZone reads the node's four zone and region labels.
- NodeVolumeLimits reads the node's attach limits (its allocatable and its CSINode), whether
  it has a CSINode and which in-tree plugins that names as migrated, and the volumes of its
  pods: nodes alike in those limits and migration and in how many volumes of each limit's key
  their pods attach share an answer, unless one of the pod's own volumes is attached there
  (kept between cycles and followed through placements and storage changes:
  ``schedlib.volume_rows``).
- VolumeBinding, for a pod whose waiting claims have no selected node (one claim to match at
  most, so no volume chosen for one claim is kept from another), reads the node's values of
  the label keys its bound volumes, the claim's candidate volumes pinned to no host and the
  class's allowed topologies name, and whether a candidate volume is pinned to the node's
  hostname; a bound in-tree volume, read as its CSI driver's where the node's CSINode
  migrated it, has every node judged alone. A candidate pinned only by
  ``kubernetes.io/hostname In`` terms reaches every node of its hosts, so such a node finds a
  volume whatever else it has; a node with another candidate of its own is judged alone. Anything else (selected nodes, volumes already naming
  the claim, storage capacity) runs node by node.

VolumeRestrictions reads the node's pods' disks only for a pod with an in-tree disk, and
passes every node otherwise (``passes_everywhere``); it has no form. Each form returns exactly
the plugin's ``filter`` at each node: ``tests/schedlib/test_storage_batch.py`` compares them
node for node, and the fast-path property tests hold whole decisions equal to the reference.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from policyengine.lang.copied import Copied
from policyengine.model.node_selectors import NodeSelector
from policyengine.model.plugins import node_volume_limits as limits
from policyengine.model.plugins import volume_binding as binding
from policyengine.model.plugins import volume_zone as zone
from policyengine.model.shared_map import SharedMap
from policyengine.model.snapshot import ClusterSnapshot, NodeInfo
from policyengine.model.storage import HOSTNAME_LABEL, PersistentVolume
from policyengine.model.volume_binder import ClaimMatcher
from policyengine.schedlib.domains import label_column
from policyengine.schedlib.node_rows import rows_at
from policyengine.schedlib.volume_rows import limit_codes, limit_group

Form = Callable[[Any, Sequence[NodeInfo], ClusterSnapshot], list[list[str]]]
Run = Callable[[Any, NodeInfo], list[str]]
# Tags the key of a node judged alone (with its id: ``infos`` holds every node during a call).
_ALONE = object()
# Fewer nodes (the incremental pass's changed rows) are keyed in Python: numpy's fixed cost
# per call is more than that loop's.
_FEW = 64
PASS: list[str] = []  # every passing node shares it: callers never change a reasons list


def _grouped(
    run: Run, state: Any, infos: Sequence[NodeInfo], keys: Iterable[Hashable]
) -> list[list[str]]:
    """``run`` once per distinct key; nodes of one key share the list."""
    seen: dict[Hashable, list[str]] = {}
    out = []
    for info, key in zip(infos, keys, strict=True):
        found = seen.get(key)
        if found is None:
            found = seen[key] = run(state, info)
        out.append(found)
    return out


def _by_codes(
    run: Run, state: Any, infos: Sequence[NodeInfo], codes: list[np.ndarray]
) -> list[list[str]]:
    """``run`` once per distinct row of ``codes`` (one int64 column per thing read, each row's
    codes naming what the node has there): the nodes of one row of codes share the result."""
    key = _folded(codes)
    if key is None:
        table = np.stack(codes, axis=1)
        _, first, inverse = np.unique(table, axis=0, return_index=True, return_inverse=True)
    else:
        first, inverse = _distinct_keys(key)
    results = [run(state, infos[i]) for i in first.tolist()]
    return Copied(results, inverse.reshape(-1))  # type: ignore[return-value]  # a Sequence


def _distinct_keys(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A row holding each distinct value of ``key`` (non-negative), in increasing order of
    the values, and each row's index among them. Values within a few times the rows' count
    are tallied in a table the size of their range (no sort); wider ones are sorted."""
    size = len(key)
    reach = int(key.max()) + 1 if size else 0
    if reach > 4 * size + 4096:
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return first, inverse
    present = np.zeros(reach, bool)
    present[key] = True
    member = np.empty(reach, np.int64)
    member[key] = np.arange(size)  # any row of a value serves: its rows share the result
    return member[present], (np.cumsum(present) - 1)[key]


def _folded(codes: list[np.ndarray]) -> np.ndarray | None:
    """The columns of ``codes`` as one int64 per row, equal exactly where the rows are
    (each column shifted to start at 0, times the spans of the columns after it); None when
    the spans multiplied pass int64."""
    key = np.zeros(len(codes[0]), np.int64)
    reach = 1
    for column in codes:
        if not len(column):
            return key
        low = int(column.min())
        span = int(column.max()) - low + 1
        reach *= span
        if reach >= 1 << 62:
            return None
        key = key * span + (column.astype(np.int64) - low)
    return key


def _label_codes(
    snapshot: ClusterSnapshot, infos: Sequence[NodeInfo], keys: Sequence[str]
) -> list[np.ndarray] | None:
    """Each key's label column at the rows of ``infos`` (None when they are not the
    snapshot's nodes)."""
    rows = rows_at(snapshot, infos)
    if rows is None:
        return None
    return [label_column(snapshot, key).codes[rows] for key in keys]


def _each(run: Run, state: Any, infos: Sequence[NodeInfo]) -> list[list[str]]:
    return [run(state, info) for info in infos]


# --- VolumeZone ----------------------------------------------------------------------------


def _zone(
    state: zone.FilterState, infos: Sequence[NodeInfo], snapshot: ClusterSnapshot
) -> list[list[str]]:
    if not state.topologies:  # ``conflict`` finds nothing to object to
        return [PASS] * len(infos)
    names = zone.TOPOLOGY_LABELS
    codes = _label_codes(snapshot, infos, names) if len(infos) > _FEW else None
    if codes is not None:
        return _by_codes(zone.filter, state, infos, codes)
    keys = (tuple([info.node.labels.get(k) for k in names]) for info in infos)
    return _grouped(zone.filter, state, infos, keys)


# --- NodeVolumeLimits ----------------------------------------------------------------------


def _limits(
    state: limits.FilterState, infos: Sequence[NodeInfo], snapshot: ClusterSnapshot
) -> list[list[str]]:
    if state.skip or state.storage is None:
        return [PASS] * len(infos)
    rows = rows_at(snapshot, infos) if len(infos) > _FEW else None
    if rows is not None:
        return _by_codes(limits.filter, state, infos, [limit_codes(snapshot, state, rows)])
    csi_nodes = state.storage.csi_nodes

    def key(info: NodeInfo) -> Hashable:
        # A few nodes: those whose pods use volumes are judged alone.
        if info.pods_with_volumes:
            return _ALONE, id(info)
        return limit_group(info, csi_nodes.get(info.node.name))

    return _grouped(limits.filter, state, infos, map(key, infos))


# --- VolumeBinding -------------------------------------------------------------------------


def _selector_keys(selector: NodeSelector | None, out: set[str]) -> None:
    if selector is None:
        return
    for term in selector.terms:
        out.update(r.key for r in term.match_expressions)


def _volume_keys(pv: PersistentVolume, out: set[str]) -> None:
    _selector_keys(pv.node_affinity, out)


def _binding_keys(state: binding.FilterState) -> tuple[tuple[str, ...], ClaimMatcher | None] | None:
    """The label keys the binder reads of a node for this pod, and the matcher of its claim
    to match (if any); None when the nodes must be judged one by one."""
    claims = state.claims
    storage = state.storage
    assert storage is not None
    if claims.selected or len(claims.to_match) > 1:
        return None
    keys: set[str] = set()
    for pv in claims.bound_volumes:
        if pv is not None:
            if pv.in_tree is not None:
                return None  # read as translated where the node's CSINode migrated it
            _volume_keys(pv, keys)
    matcher: ClaimMatcher | None = None
    for claim in claims.to_match:
        if claim.key not in state.matchers:
            return None
        matcher = state.matchers[claim.key]
        if matcher is not None:
            if matcher.prebound:
                return None
            for _, _, pv in matcher.anywhere:
                _volume_keys(pv, keys)
        cls = storage.classes.get(claim.storage_class) if claim.storage_class else None
        if cls is not None:
            for term in cls.allowed_topologies:
                keys.update(k for k, _ in term.requirements)
            if claim.request is not None:
                driver = storage.csi_drivers.get(cls.provisioner)
                if driver is not None and driver.storage_capacity:
                    return None  # capacities' topology: node by node
    return tuple(sorted(keys)), matcher


def _binding(
    state: binding.FilterState, infos: Sequence[NodeInfo], snapshot: ClusterSnapshot
) -> list[list[str]]:
    run = binding.filter
    if state.skip or state.storage is None:
        return [PASS] * len(infos)
    found = _binding_keys(state)
    if found is None:
        return _each(run, state, infos)
    names, matcher = found
    pinned = matcher.pinned if matcher is not None else {}
    if state.eligible is None and len(infos) > _FEW:
        codes = _label_codes(snapshot, infos, (HOSTNAME_LABEL, *names))
        if codes is not None:
            codes[0] = _pinned_codes(snapshot, matcher, codes[0])
            return _by_codes(run, state, infos, codes)
    reached: dict[str, bool] = {}  # hostname -> a purely pinned candidate is there
    eligible = state.eligible

    def key(info: NodeInfo) -> Hashable:
        labels = info.node.labels
        host = labels.get(HOSTNAME_LABEL)
        here: Hashable = None
        if host is not None and host in pinned:
            hit = reached.get(host)
            if hit is None:
                hit = reached[host] = any(pv.purely_pinned for _, _, pv in pinned[host])
            if not hit:
                return _ALONE, id(info)  # a candidate of its own that reads more: alone
            here = True
        inside = eligible is None or info.node.name in eligible
        return here, inside, tuple([labels.get(k) for k in names])

    return _grouped(run, state, infos, map(key, infos))


def pinned_rows(snapshot: ClusterSnapshot, matcher: ClaimMatcher) -> np.ndarray | None:
    """Per row of ``snapshot``, 1 where a candidate of ``matcher`` pinned to the node's
    hostname alone is found (the claim is matched there whatever else the node has), else 0;
    None when some host's candidates read more of a node than its hostname."""
    if matcher.impure_hosts():
        return None
    return _pinned_codes(snapshot, matcher, label_column(snapshot, HOSTNAME_LABEL).codes)


def _pinned_codes(
    snapshot: ClusterSnapshot, matcher: ClaimMatcher | None, hosts: np.ndarray
) -> np.ndarray:
    """Per row, what the claim's candidates pinned to the node's hostname decide: 0 none, 1
    a purely pinned one (a volume is found there), else a code of the row's own (judged
    alone)."""
    if matcher is None or not matcher.pinned:
        return np.zeros(len(hosts), np.int64)
    pinned = matcher.pinned
    impure = matcher.impure_hosts()
    values = label_column(snapshot, HOSTNAME_LABEL).values
    if isinstance(pinned, SharedMap):
        # The hosts of the part this one was patched from, tallied once; the hosts the
        # patches set or removed since, looked at again.
        base, changed = pinned.since_base()
        table = _hosts_table(base, values).copy()
        for host in changed:
            code = values.get(host)
            if code is not None:
                table[code] = 1 if host in pinned else 0
    else:
        table = _hosts_table(pinned, values, keep=False)
    alone = [values[h] for h in impure if h in values]
    table[alone] = -1
    out = table[hosts]
    if alone:
        mine = out < 0
        out[mine] = 2 + np.flatnonzero(mine)
    return out


# Per hostname-code table (1: a candidate is pinned there), the tables of the last few bases
# of claim shapes' pinned candidates, by the identity of the base and of the label codes.
_HOSTS: dict[tuple[int, int], tuple[Any, Any, np.ndarray]] = {}
_HOSTS_KEPT = 16


def _hosts_table(
    pinned: Mapping[str, Any], values: Mapping[str, int], keep: bool = True
) -> np.ndarray:
    """Per hostname code (and one more: no hostname label), 1 where a candidate of
    ``pinned`` is pinned, else 0 (read only when kept)."""
    key = (id(pinned), id(values))
    found = _HOSTS.get(key) if keep else None
    if found is not None and found[0] is pinned and found[1] is values:
        return found[2]
    table = np.zeros(len(values) + 1, np.int64)  # the last: no hostname label
    # Each pinned host's code (-1: no node has it), at C speed.
    codes = np.fromiter(map(values.get, pinned, itertools.repeat(-1)), np.int64, len(pinned))
    table[codes[codes >= 0]] = 1
    if keep:
        if len(_HOSTS) >= _HOSTS_KEPT:
            _HOSTS.clear()
        _HOSTS[key] = (pinned, values, table)
    return table


FORMS: dict[str, Form] = {
    "VolumeZone": _zone,
    "NodeVolumeLimits": _limits,
    "VolumeBinding": _binding,
}
