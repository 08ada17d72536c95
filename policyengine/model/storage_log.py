"""Which storage objects each derivation of a ``StorageObjects`` replaced.

What a node's pods attach (NodeVolumeLimits) depends on a few claims, volumes and classes,
and is kept per node between cycles (``schedlib.volume_rows``). A storage is replaced whole on
any change (an assume replaces a claim and a volume; a watch event one object), so identity
tells only that something changed, not what. A lineage records in order the key each
derivation replaced; every storage knows its lineage and its place on it.

A storage derived a second time (the scheduler's view is the API's truth with the assumed
volume decisions laid over it, laid anew whenever one is added or lifted) starts a lineage of
its own that remembers the place it forked from. ``between`` then finds the last storage two
places share and gives every key replaced on the way from it to either: any other object is
the very same in both. It gives None when they share none within ``HOPS`` forks; a lineage
that reached ``KEPT`` keys is not extended (the next storage starts afresh, forgetting it), so
the keys are not kept for ever. The reader then looks at everything again.
"""

from __future__ import annotations

import threading

# A replaced object: its kind ("pv", "pvc", "class", "csinode", "csidriver", "capacity") and
# its key in that kind's index.
Change = tuple[str, str]
# Past this many keys a lineage is not extended: a reader that far behind looks at
# everything, and the keys are not kept for ever.
KEPT = 4096
# Forks followed back from a place in search of a shared storage.
HOPS = 16


class Lineage:
    """The keys replaced by each derivation of one line of storages, oldest first, and the
    place the line forked from (None: it did not)."""

    __slots__ = ("_lock", "changes", "origin")

    def __init__(self, origin: Place | None = None) -> None:
        self.changes: list[Change] = []
        self.origin = origin
        # Two threads may derive from one storage (a watch event, a scheduler's assume):
        # only one of them extends the line.
        self._lock = threading.Lock()

    def extend(self, at: int, change: Change) -> int | None:
        """The place after ``change`` when ``at`` is the line's end; None otherwise."""
        with self._lock:
            if at != len(self.changes) or at >= KEPT:
                return None
            self.changes.append(change)
            return at + 1


# A storage's lineage and how many of its keys lead to that storage.
Place = tuple[Lineage, int]


def root() -> Place:
    return Lineage(), 0


def step(parent: Place, change: Change) -> Place:
    """The place of a storage derived from the one at ``parent`` by replacing ``change``."""
    lineage, at = parent
    after = lineage.extend(at, change)
    if after is not None:
        return lineage, after
    if at >= KEPT:
        return root()
    fork = Lineage(origin=parent)
    fork.extend(0, change)
    return fork, 1


def _ancestry(place: Place) -> list[Place]:
    """``place`` and each place its lineage forked from, nearest first (``HOPS`` at most)."""
    found = [place]
    while len(found) <= HOPS:
        origin = found[-1][0].origin
        if origin is None:
            break
        found.append(origin)
    return found


def between(older: Place, newer: Place) -> set[Change] | None:
    """Every key replaced since the last storage ``older`` and ``newer`` share, on the way to
    either (a superset of the keys whose objects differ between them); None when they share
    none that is known."""
    if older[0] is newer[0] and older[1] <= newer[1]:
        return set(older[0].changes[older[1] : newer[1]])  # one line: the common case
    theirs = _ancestry(older)
    reached = {id(lineage): at for lineage, at in theirs}
    mine = _ancestry(newer)
    for depth, (lineage, at) in enumerate(mine):
        their_at = reached.get(id(lineage))
        if their_at is None:
            continue
        shared = min(at, their_at)
        out = set(lineage.changes[shared:at]) | set(lineage.changes[shared:their_at])
        for fork, end in mine[:depth]:
            out.update(fork.changes[:end])
        for fork, end in theirs:
            if fork is lineage:
                break
            out.update(fork.changes[:end])
        return out
    return None
