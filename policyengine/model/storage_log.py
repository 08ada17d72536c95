"""Which storage objects each derivation of a ``StorageObjects`` replaced.

What a node's pods attach (NodeVolumeLimits) depends on a few claims, volumes and classes,
and is kept per node between cycles (``schedlib.volume_rows``). A storage is replaced whole on
any change (an assume replaces a claim and a volume; a watch event one object), so identity
tells only that something changed, not what. A lineage records in order the key each
derivation replaced; every storage knows its lineage and its place on it, and ``between``
gives the keys replaced from an older storage of a lineage to a newer one. It gives None when
they are not on one line: a storage derived twice starts a new lineage with its second
child, as does a lineage grown to ``KEPT`` keys; the reader then looks at everything again.
"""

from __future__ import annotations

import threading

# A replaced object: its kind ("pv", "pvc", "class", "csinode", "csidriver", "capacity") and
# its key in that kind's index.
Change = tuple[str, str]
# Past this many keys a lineage is not followed: a reader that far behind looks at
# everything, and the keys are not kept for ever.
KEPT = 4096


class Lineage:
    """The keys replaced by each derivation of one line of storages, oldest first."""

    __slots__ = ("_lock", "changes")

    def __init__(self) -> None:
        self.changes: list[Change] = []
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
    return root() if after is None else (lineage, after)


def between(older: Place, newer: Place) -> set[Change] | None:
    """The keys replaced on the way from ``older`` to ``newer``; None when ``newer`` does not
    descend from ``older`` on one lineage."""
    lineage, start = older
    if newer[0] is not lineage or newer[1] < start:
        return None
    return set(lineage.changes[start : newer[1]])
