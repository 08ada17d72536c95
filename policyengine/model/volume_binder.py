"""kube-scheduler's volume binder: which claims of a pod are bound, and what binding the rest
on a node would take.

VolumeBinding (``model.plugins.volume_binding``) asks it, per pod, how the pod's claims
stand (bound, waiting for their first consumer, or bound only by the PV controller), and, per
node, whether every bound claim's volume reaches the node and every waiting claim finds an
available volume there (the smallest that fits, as the PV controller's matcher picks) or can
be provisioned there (the class has a provisioner, its allowed topologies hold the node, and
storage capacity, where the driver tracks it, suffices). The answer per node is a
``PodVolumes``: the decisions the scheduler assumes with the pod when it picks that node
(``assume``) and the binding step carries out.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import operator
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from policyengine.model.labels import SelectorError
from policyengine.model.objects import Pod
from policyengine.model.shared_map import SharedMap
from policyengine.model.storage import (
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    HOSTNAME_LABEL,
    VOLUME_AVAILABLE,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageObjects,
    quantity_value,
)
from policyengine.model.storage_log import Place, between
from policyengine.model.storage_migration import TranslationError
from policyengine.model.volumes import EPHEMERAL, claim_name

# Per-node reasons, in the order kube-scheduler lists them.
NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def claim_problem(pod: Pod, storage: StorageObjects) -> str | None:
    """Why no node can take the pod because of one of its claims (kube's ``podHasPVCs``),
    checked volume by volume: a claim missing (an ephemeral one not created yet), lost, being
    deleted, or an ephemeral claim the pod does not own. None: every claim is usable."""
    for volume in pod.volumes:
        if not volume.uses_claim:
            continue
        name = claim_name(pod.name, volume)
        claim = storage.claim(pod.namespace, name)
        if claim is None:
            if volume.kind == EPHEMERAL:
                return (
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{name}"'
                )
            return not_found(name)
        if claim.phase == CLAIM_LOST:
            return (
                f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                f'"{claim.volume_name}"'
            )
        if claim.deletion_timestamp is not None:
            return f'persistentvolumeclaim "{name}" is being deleted'
        if volume.kind == EPHEMERAL and not owned(pod, claim):
            return not_owned(pod, claim)
    return None


def owned(pod: Pod, claim: PersistentVolumeClaim) -> bool:
    """Whether the pod controls the claim (its controller owner reference names the pod's
    uid), as an ephemeral volume's claim must be."""
    return bool(claim.controller_uid) and claim.controller_uid == pod.uid


def not_owned(pod: Pod, claim: PersistentVolumeClaim) -> str:
    return (
        f"PVC {claim.namespace}/{claim.name} was not created for pod "
        f"{pod.namespace}/{pod.name} (pod is not owner)"
    )


@dataclass(frozen=True, slots=True)
class PodClaims:
    """A pod's claims sorted as kube's ``GetPodVolumeClaims`` sorts them."""

    bound: tuple[PersistentVolumeClaim, ...] = ()
    delayed: tuple[PersistentVolumeClaim, ...] = ()  # WaitForFirstConsumer, no volume named
    immediate: tuple[PersistentVolumeClaim, ...] = ()  # left to the PV controller, unbound
    # What the nodes' checks read, worked out once: each bound claim's volume (None when
    # missing); the waiting claims with a selected node (in volume order) and the others,
    # smallest request first (kube's ``FindPodVolumes`` splits and sorts them per node).
    bound_volumes: tuple[PersistentVolume | None, ...] = ()
    selected: tuple[PersistentVolumeClaim, ...] = ()
    to_match: tuple[PersistentVolumeClaim, ...] = ()


NO_CLAIMS = PodClaims()


def pod_claims(pod: Pod, storage: StorageObjects) -> PodClaims:
    """The pod's existing claims by how they stand (``claim_problem`` reports the others)."""
    bound: list[PersistentVolumeClaim] = []
    delayed: list[PersistentVolumeClaim] = []
    immediate: list[PersistentVolumeClaim] = []
    for volume in pod.volumes:
        if not volume.uses_claim:
            continue
        claim = storage.claim(pod.namespace, claim_name(pod.name, volume))
        if claim is None:
            continue
        if claim.fully_bound:
            bound.append(claim)
        elif storage.is_delay_binding(claim) and not claim.volume_name:
            delayed.append(claim)
        else:
            # A claim naming its volume but not bound yet is the PV controller's to finish.
            immediate.append(claim)
    return PodClaims(
        tuple(bound),
        tuple(delayed),
        tuple(immediate),
        tuple(storage.pvs.get(c.volume_name) for c in bound),
        tuple(c for c in delayed if c.selected_node is not None),
        tuple(
            sorted(
                (c for c in delayed if c.selected_node is None),
                key=lambda c: quantity_value(c.request),
            )
        ),
    )


def eligible_nodes(
    claims: Sequence[PersistentVolumeClaim], storage: StorageObjects
) -> frozenset[str] | None:
    """The only nodes bound local volumes allow (kube's ``GetEligibleNodes``): the
    intersection of each bound volume's hostnames; None when no volume pins the pod, or
    when a bound volume is missing (then every node is looked at)."""
    eligible: frozenset[str] | None = None
    for claim in claims:
        pv = storage.pvs.get(claim.volume_name)
        if pv is None:
            return None
        names = pv.local_node_names
        if names:
            eligible = frozenset(names) if eligible is None else eligible & frozenset(names)
    return eligible


@dataclass(frozen=True, slots=True)
class StaticBinding:
    claim: PersistentVolumeClaim
    pv: PersistentVolume


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What binding the pod's waiting claims on one node takes."""

    static: tuple[StaticBinding, ...] = ()  # claims matched to available volumes
    provision: tuple[PersistentVolumeClaim, ...] = ()  # claims to provision on the node

    def __bool__(self) -> bool:
        return bool(self.static or self.provision)


NO_VOLUMES = PodVolumes()


def _volume_mode_mismatch(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    return claim.volume_mode != pv.volume_mode


def _access_modes_fit(claim: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    return set(claim.access_modes) <= set(pv.access_modes)


def _claim_selector(claim: PersistentVolumeClaim) -> tuple[bool, Any]:
    """The claim's compiled selector (None: it has none), and False when it does not compile
    (then no volume matches the claim)."""
    if claim.selector is None:
        return True, None
    try:
        return True, claim.selector.compile()
    except SelectorError:
        return False, None


def find_matching_volume(
    claim: PersistentVolumeClaim,
    volumes: Sequence[PersistentVolume],
    node_labels: Mapping[str, str],
    excluded: frozenset[str] | set[str],
) -> PersistentVolume | None:
    """The volume a waiting claim gets on a node (kube's ``FindMatchingVolume`` on the
    scheduler's path): a volume already naming the claim if it reaches the node (if it does not,
    none); otherwise the smallest available volume of the claim's class that is large enough,
    of the claim's volume mode, not being deleted, matching the claim's selector and access
    modes, and reaching the node. Equal sizes go to the first by name."""
    requested = quantity_value(claim.request)
    valid, selector = _claim_selector(claim)
    if not valid:
        return None
    best: PersistentVolume | None = None
    best_size = 0
    for pv in volumes:
        if pv.name in excluded:
            continue
        if pv.claim_ref is not None and not pv.bound_to(claim):
            continue
        size = quantity_value(pv.capacity)
        if size < requested or _volume_mode_mismatch(claim, pv):
            continue
        if pv.deletion_timestamp is not None:
            continue
        reaches = pv.reaches(node_labels)
        if pv.bound_to(claim):
            return pv if reaches else None
        if pv.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(pv.labels):
            continue
        if pv.storage_class != claim.storage_class or not reaches:
            continue
        if not _access_modes_fit(claim, pv):
            continue
        if best is None or best_size > size:
            best, best_size = pv, size
    return best


@dataclass(frozen=True)
class ClaimMatcher:
    """``find_matching_volume`` for one claim over many nodes, its node-free part done once.

    The checks that read no node (class, size, volume mode, deletion, phase, selector, access
    modes, claimRef) leave the volumes that can match at all; those naming the claim are kept
    apart (the first reaching the node is the answer), and the available ones are indexed by
    the hostnames their node affinity pins them to, so that a node looks only at the volumes
    pinned to it and those pinned to none. The answer is ``find_matching_volume``'s."""

    prebound: tuple[PersistentVolume, ...] = ()
    pinned: Mapping[str, tuple[tuple[str, int, PersistentVolume], ...]] = field(
        default_factory=dict
    )
    anywhere: tuple[tuple[str, int, PersistentVolume], ...] = ()
    # The hosts none of whose pinned candidates is purely pinned (``purely_pinned``): where
    # a volume's other terms decide; None when not worked out.
    impure: frozenset[str] | None = field(default=None, compare=False)

    @staticmethod
    def of(
        claim: PersistentVolumeClaim, volumes: Sequence[PersistentVolume]
    ) -> ClaimMatcher | None:
        """None when the claim's selector is invalid (then nothing matches)."""
        requested = quantity_value(claim.request)
        valid, selector = _claim_selector(claim)
        if not valid:
            return None
        wanted = frozenset(claim.access_modes)
        prebound: list[PersistentVolume] = []
        pinned: dict[str, list[tuple[str, int, PersistentVolume]]] = {}
        anywhere: list[tuple[str, int, PersistentVolume]] = []
        for pv in volumes:
            if pv.claim_ref is not None and not pv.bound_to(claim):
                continue
            size = pv.size
            if size < requested or pv.volume_mode != claim.volume_mode:
                continue
            if pv.deletion_timestamp is not None:
                continue
            if pv.claim_ref is not None:  # naming this claim (the others were passed over)
                prebound.append(pv)
                continue
            if pv.phase != VOLUME_AVAILABLE:
                continue
            if selector is not None and not selector.matches(pv.labels):
                continue
            if pv.storage_class != claim.storage_class or not wanted <= pv.access_mode_set:
                continue
            hosts = pv.pinned_hosts
            entry = (pv.name, size, pv)
            if hosts is None:
                anywhere.append(entry)
            else:
                for host in hosts:
                    pinned.setdefault(host, []).append(entry)
        return ClaimMatcher(
            tuple(prebound), {h: tuple(v) for h, v in pinned.items()}, tuple(anywhere)
        )

    def impure_hosts(self) -> frozenset[str]:
        """The hosts none of whose pinned candidates is purely pinned: where a candidate's
        other terms, not the hostname alone, decide whether it reaches a node."""
        if self.impure is not None:
            return self.impure
        return frozenset(h for h, entries in self.pinned.items() if _impure(entries))

    def match(
        self, node_labels: Mapping[str, str], excluded: frozenset[str] | set[str]
    ) -> PersistentVolume | None:
        for pv in self.prebound:
            if pv.name not in excluded:
                return pv if pv.reaches(node_labels) else None
        host = node_labels.get(HOSTNAME_LABEL)
        here = self.pinned.get(host, ()) if host is not None else ()
        candidates = heapq.merge(self.anywhere, here) if here else iter(self.anywhere)
        best: PersistentVolume | None = None
        best_size = 0
        for name, size, pv in candidates:
            if name in excluded or (best is not None and best_size <= size):
                continue
            if pv.reaches(node_labels):
                best, best_size = pv, size
        return best


# --- the matchers of claims alike, carried from one set of volumes to the next ------------------
#
# ``ClaimMatcher.of`` looks at every volume of the claim's class: thousands for a class of
# local volumes, for every pod with a claim, every cycle. Yet what it keeps of the volumes no
# claim names depends only on the claim's shape (class, size, volume mode, selector, access
# modes), and between two cycles an assume changes one or two volumes. So the part of each
# shape is kept with the volumes it was built from and patched at the volumes that changed
# (``shared``); the volumes naming the claim are found among the few that name any claim.

Entry = tuple[str, int, PersistentVolume]
_SHAPES_KEPT = 64
_PATCHED_AT_MOST = 16  # more changed volumes than this: built anew


@dataclass(frozen=True, eq=False)
class _Free:
    """What ``ClaimMatcher.of`` keeps of the volumes that name no claim, for one shape, and
    the volumes that name one (in name order, by the claim they name), with the place on its
    lineage of the storage the volumes were read from (``storage_log``; None: not told): the
    place, not the storage, so that a kept part holds no old storage alive."""

    volumes: tuple[PersistentVolume, ...]
    # Shared with the part it was patched from but for the hosts the patch changed.
    pinned: SharedMap[str, tuple[Entry, ...]]
    anywhere: tuple[Entry, ...]
    claimed: SharedMap[tuple[str, str], tuple[PersistentVolume, ...]]
    impure: frozenset[str]
    place: Place | None = None


def _impure(entries: tuple[Entry, ...]) -> bool:
    return not any(pv.purely_pinned for _, _, pv in entries)


def _shape(claim: PersistentVolumeClaim) -> tuple[Any, ...]:
    return (
        claim.storage_class,
        quantity_value(claim.request),
        claim.volume_mode,
        claim.selector,
        frozenset(claim.access_modes),
    )


def _fits(shape: tuple[Any, ...], selector: Any, pv: PersistentVolume) -> bool:
    """``ClaimMatcher.of``'s checks of a volume that names no claim."""
    storage_class, requested, volume_mode, _, wanted = shape
    return (
        pv.size >= requested
        and pv.volume_mode == volume_mode
        and pv.deletion_timestamp is None
        and pv.phase == VOLUME_AVAILABLE
        and (selector is None or selector.matches(pv.labels))
        and pv.storage_class == storage_class
        and wanted <= pv.access_mode_set
    )


def _insert(entries: tuple[Entry, ...], entry: Entry) -> tuple[Entry, ...]:
    at = bisect.bisect_left(entries, entry[0], key=_ENTRY_NAME)
    return (*entries[:at], entry, *entries[at:])


def _remove(entries: tuple[Entry, ...], name: str) -> tuple[Entry, ...]:
    at = bisect.bisect_left(entries, name, key=_ENTRY_NAME)
    assert entries[at][0] == name
    return entries[:at] + entries[at + 1 :]


_ENTRY_NAME = operator.itemgetter(0)
_PV_NAME = operator.attrgetter("name")


def _claim_of(pv: PersistentVolume) -> tuple[str, str]:
    ref = pv.claim_ref
    assert ref is not None
    return ref.namespace, ref.name


def _build(
    shape: tuple[Any, ...],
    selector: Any,
    volumes: tuple[PersistentVolume, ...],
    storage: StorageObjects | None,
) -> _Free:
    pinned: dict[str, list[Entry]] = {}
    anywhere: list[Entry] = []
    claimed: dict[tuple[str, str], tuple[PersistentVolume, ...]] = {}
    for pv in volumes:
        if pv.claim_ref is not None:
            claim = _claim_of(pv)
            claimed[claim] = (*claimed.get(claim, ()), pv)
            continue
        if not _fits(shape, selector, pv):
            continue
        hosts = pv.pinned_hosts
        entry = (pv.name, pv.size, pv)
        if hosts is None:
            anywhere.append(entry)
        else:
            for host in hosts:
                pinned.setdefault(host, []).append(entry)
    kept = {h: tuple(v) for h, v in pinned.items()}
    impure = frozenset(h for h, entries in kept.items() if _impure(entries))
    return _Free(
        volumes, SharedMap(kept), tuple(anywhere), SharedMap(claimed), impure, _place(storage)
    )


def _place(storage: StorageObjects | None) -> Place | None:
    return None if storage is None else storage.place


def _changed_places(
    free: _Free, volumes: tuple[PersistentVolume, ...], storage: StorageObjects | None
) -> list[int] | None:
    """The places where ``volumes`` holds another object than ``free``'s volumes (of the
    same length); None when they differ otherwise, or in more than ``_PATCHED_AT_MOST``.
    Read off the storage's record of the volumes replaced since ``free``'s when it has one,
    else found by comparing every place (at C speed, ``compress`` over ``is not``)."""
    old = free.volumes
    if len(old) != len(volumes):
        return None
    changes = None
    if storage is not None and free.place is not None:
        changes = between(free.place, storage.place)
    if changes is None:
        changed = list(itertools.compress(itertools.count(), map(operator.is_not, old, volumes)))
        return changed if len(changed) <= _PATCHED_AT_MOST else None
    names = sorted(name for kind, name in changes if kind == "pv")
    if len(names) > _PATCHED_AT_MOST:
        return None
    places = []
    for name in names:  # both tuples are in name order
        at = bisect.bisect_left(old, name, key=_PV_NAME)
        here = at < len(old) and old[at].name == name
        there = at < len(volumes) and volumes[at].name == name
        if here != there:
            return None  # a volume came into the class or left it
        if here and old[at] is not volumes[at]:
            places.append(at)
    return places


def _patched(
    free: _Free,
    shape: tuple[Any, ...],
    selector: Any,
    volumes: tuple[PersistentVolume, ...],
    storage: StorageObjects | None,
) -> _Free | None:
    """``free`` carried to ``volumes`` (which differ from its own at a few places, each a
    volume of the same name replaced); None when they differ otherwise."""
    changed = _changed_places(free, volumes, storage)
    if changed is None:
        return None
    old = free.volumes
    pinned = free.pinned
    anywhere = free.anywhere
    claimed = free.claimed
    touched: set[str] = set()
    for at in changed:
        before, after = old[at], volumes[at]
        if before.name != after.name:
            return None
        for pv, add in ((before, False), (after, True)):
            if pv.claim_ref is not None:
                claim = _claim_of(pv)
                named = claimed.get(claim, ())
                if add:
                    named = tuple(sorted((*named, pv), key=_PV_NAME))
                else:
                    named = tuple(c for c in named if c is not pv)
                claimed = claimed.with_item(claim, named) if named else claimed.without(claim)
                continue
            if not _fits(shape, selector, pv):
                continue
            entry = (pv.name, pv.size, pv)
            hosts = pv.pinned_hosts
            if hosts is None:
                anywhere = _insert(anywhere, entry) if add else _remove(anywhere, pv.name)
                continue
            for host in hosts:
                touched.add(host)
                here = pinned.get(host, ())
                here = _insert(here, entry) if add else _remove(here, pv.name)
                pinned = pinned.with_item(host, here) if here else pinned.without(host)
    impure = set(free.impure)
    for host in touched:
        impure.discard(host)
        if host in pinned and _impure(pinned[host]):
            impure.add(host)
    return _Free(volumes, pinned, anywhere, claimed, frozenset(impure), _place(storage))


_SHAPES: OrderedDict[Hashable, _Free] = OrderedDict()
_SHAPES_LOCK = threading.Lock()


def _free_part(
    shape: tuple[Any, ...],
    selector: Any,
    volumes: tuple[PersistentVolume, ...],
    storage: StorageObjects | None,
) -> _Free:
    with _SHAPES_LOCK:
        known = _SHAPES.get(shape)
    found: _Free | None = None
    if known is not None:
        if known.volumes is volumes:
            found = known
        else:
            found = _patched(known, shape, selector, volumes, storage)
    if found is None:
        found = _build(shape, selector, volumes, storage)
    with _SHAPES_LOCK:
        _SHAPES[shape] = found
        _SHAPES.move_to_end(shape)
        while len(_SHAPES) > _SHAPES_KEPT:
            _SHAPES.popitem(last=False)
    return found


def shared_matcher(
    claim: PersistentVolumeClaim,
    volumes: tuple[PersistentVolume, ...],
    storage: StorageObjects | None = None,
) -> ClaimMatcher | None:
    """``ClaimMatcher.of(claim, volumes)``, its shape's part carried from the last volumes
    it was built from (``storage``, when given, is where ``volumes`` were read: it says which
    of them changed since)."""
    valid, selector = _claim_selector(claim)
    if not valid:
        return None
    shape = _shape(claim)
    try:
        hash(shape)
    except TypeError:
        return ClaimMatcher.of(claim, volumes)
    free = _free_part(shape, selector, volumes, storage)
    requested = shape[1]
    prebound = tuple(
        pv
        for pv in free.claimed.get((claim.namespace, claim.name), ())
        if pv.bound_to(claim)
        and pv.size >= requested
        and pv.volume_mode == claim.volume_mode
        and pv.deletion_timestamp is None
    )
    return ClaimMatcher(prebound, free.pinned, free.anywhere, free.impure)


def has_capacity(
    storage: StorageObjects, claim: PersistentVolumeClaim, node_labels: Mapping[str, str]
) -> bool:
    """kube's ``hasEnoughCapacity``: only drivers that track capacity are checked."""
    if claim.request is None:
        return True
    cls = storage.classes[claim.storage_class]
    driver = storage.csi_drivers.get(cls.provisioner)
    if driver is None or not driver.storage_capacity:
        return True
    size = quantity_value(claim.request)
    return any(
        c.storage_class == cls.name and c.fits(size) and c.reaches(node_labels)
        for c in storage.capacities
    )


@dataclass(frozen=True, slots=True)
class NodeVolumes:
    """One node's answer: the reasons it cannot take the pod (empty: it can), the decisions
    it takes otherwise, and an error kube-scheduler would stop the cycle with."""

    reasons: tuple[str, ...] = ()
    volumes: PodVolumes = NO_VOLUMES
    error: str | None = None


def claim_matchers(claims: PodClaims, storage: StorageObjects) -> Mapping[str, ClaimMatcher | None]:
    """A matcher for each waiting claim without a selected node, by its key."""
    return {
        c.key: shared_matcher(c, storage.pvs_by_class.get(c.storage_class, ()), storage)
        for c in claims.delayed
        if c.selected_node is None
    }


def find_pod_volumes(
    claims: PodClaims,
    storage: StorageObjects,
    node_name: str,
    node_labels: Mapping[str, str],
    matchers: Mapping[str, ClaimMatcher | None] | None = None,
) -> NodeVolumes:
    """kube's ``FindPodVolumes`` for one node (``matchers``: ``claim_matchers``' answer,
    which finds the same volumes faster over many nodes)."""
    bound_ok = True
    bound_found = True
    for pv in claims.bound_volumes:
        if pv is None:
            bound_found = False
            break
        if pv.in_tree is None:
            reaches = pv.reaches(node_labels)
        else:
            # An in-tree volume is read as its CSI driver's where the node migrated it.
            try:
                reaches = pv.reaches_on(node_labels, storage.csi_nodes.get(node_name))
            except TranslationError as problem:
                return NodeVolumes(error=f"could not translate pv: {problem}")
        if not reaches:
            bound_ok = False
            break
    unbound_ok = True
    enough_space = True
    static: list[StaticBinding] = []
    provision: list[PersistentVolumeClaim] = []
    if claims.delayed:
        to_provision: list[PersistentVolumeClaim] = []
        for claim in claims.selected:
            if claim.selected_node != node_name:
                return NodeVolumes(_reasons(bound_ok, False, True, bound_found))
            to_provision.append(claim)
        if claims.to_match:
            chosen: set[str] = set()
            # The smallest claims first, so each gets the smallest volume that fits it.
            for claim in claims.to_match:
                if matchers is not None and claim.key in matchers:
                    matcher = matchers[claim.key]
                    pv = matcher.match(node_labels, chosen) if matcher is not None else None
                else:
                    pv = find_matching_volume(
                        claim,
                        storage.pvs_by_class.get(claim.storage_class, ()),
                        node_labels,
                        chosen,
                    )
                if pv is None:
                    to_provision.append(claim)
                    unbound_ok = False
                    continue
                chosen.add(pv.name)
                static.append(StaticBinding(claim, pv))
        if to_provision:
            unbound_ok, enough_space, provision, error = _provisions(
                storage, to_provision, node_labels
            )
            if error is not None:
                return NodeVolumes(error=error)
    return NodeVolumes(
        _reasons(bound_ok, unbound_ok, enough_space, bound_found),
        PodVolumes(tuple(static), tuple(provision)),
    )


def _provisions(
    storage: StorageObjects, claims: Sequence[PersistentVolumeClaim], node_labels: Mapping[str, str]
) -> tuple[bool, bool, list[PersistentVolumeClaim], str | None]:
    """kube's ``checkVolumeProvisions``: (provisionable, enough space, the claims, error)."""
    out: list[PersistentVolumeClaim] = []
    for claim in claims:
        if not claim.storage_class:
            return False, False, [], f'no class for claim "{claim.key}"'
        cls = storage.classes.get(claim.storage_class)
        if cls is None:
            return False, False, [], f'failed to find storage class "{claim.storage_class}"'
        if not cls.can_provision or not cls.allows(node_labels):
            return False, True, [], None
        if not has_capacity(storage, claim, node_labels):
            return True, False, [], None
        out.append(claim)
    return True, True, out, None


def _reasons(
    bound_ok: bool, unbound_ok: bool, enough_space: bool, bound_found: bool
) -> tuple[str, ...]:
    out = []
    if not bound_ok:
        out.append(NODE_CONFLICT)
    if not unbound_ok:
        out.append(BIND_CONFLICT)
    if not enough_space:
        out.append(NOT_ENOUGH_SPACE)
    if not bound_found:
        out.append(PV_NOT_EXIST)
    return tuple(out)


def assume(storage: StorageObjects, node_name: str, volumes: PodVolumes) -> StorageObjects:
    """The storage objects once the decisions are assumed (kube's ``AssumePodVolumes``): each
    matched volume names its claim, each claim to provision names the node."""
    for binding in volumes.static:
        claim = binding.claim
        pv = storage.pvs.get(binding.pv.name, binding.pv)
        ref = ClaimRef(claim.namespace, claim.name, claim.uid)
        if pv.claim_ref != ref:
            storage = storage.with_pv(replace(pv, claim_ref=ref))
    for claim in volumes.provision:
        current = storage.pvcs.get(claim.key, claim)
        if current.annotations.get(ANN_SELECTED_NODE) != node_name:
            annotations = current.annotations.with_item(ANN_SELECTED_NODE, node_name)
            storage = storage.with_pvc(replace(current, annotations=annotations))
    return storage
