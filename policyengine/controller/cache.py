"""The cluster cache: the nodes and assigned pods the watches report, plus our assumptions.

Every scheduling cycle must read a consistent, immutable picture of the cluster, and the
picture must already contain the pods this scheduler has just placed but whose bind has not
come back through the watch yet — otherwise two cycles in a row would both see the same free
capacity and overcommit a node. This module is that picture and the one mutable link
between the watches and the cycles:

* Node and assigned-pod events update a ``ClusterSnapshot`` incrementally (only the touched
  ``NodeInfo`` is rebuilt, the rest is shared), so no event costs a rebuild.
* ``assume(pod, node)`` puts a pod on a node at once; the bind runs later. When the watch
  shows the pod assigned, the real object *replaces* the assumption (confirmation) — on the
  node the watch says, even if someone else bound it elsewhere. ``forget`` undoes a failed
  bind. After ``finish_binding`` an assumption that the watch never confirms expires after a
  TTL, so a lost event cannot pin capacity forever.
* Pods assigned to a node the cache does not know yet (pod event before node event, or the
  node was deleted and comes back) are remembered and appear with their node.
* Pods in a terminal phase hold no resources; the caller removes them with ``remove_pod``.

Thread-safe: writers serialise on one lock and publish a new snapshot with a single
reference assignment, so ``snapshot()`` never sees a half-applied update and never blocks on
anything but that assignment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from policyengine.controller.logs import get_logger
from policyengine.controller.samefields import equal_except
from policyengine.model.load import NodeLoad
from policyengine.model.objects import Node, Pod
from policyengine.model.podgroup import PodGroup
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.storage import StorageObjects
from policyengine.model.workloads import Workload

log = get_logger(__name__)

DEFAULT_ASSUME_TTL = 30.0

NODE_ADDED = "added"
NODE_CHANGED = "changed"
NODE_UNCHANGED = "unchanged"


class AssumeError(Exception):
    """The pod cannot be assumed: it is already placed, or the node is gone."""


@dataclass
class _Assumption:
    pod: Pod  # with nodeName set to the chosen node
    node: str
    deadline: float | None = None  # set once the bind finished


_VERSION = frozenset({"resource_version"})


def _same_placement(assumed: Pod, confirmed: Pod) -> bool:
    """Whether the watch's pod is the one we assumed, but for its resourceVersion."""
    return equal_except(assumed, confirmed, _VERSION)


def _node_changed(old: Node, new: Node) -> bool:
    return not equal_except(old, new, _VERSION)


class ClusterCache:
    """Nodes, assigned pods and assumed pods as one immutable snapshot (module docstring)."""

    def __init__(
        self,
        *,
        assume_ttl: float = DEFAULT_ASSUME_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._snapshot = ClusterSnapshot()
        self._nodes: dict[str, Node] = {}
        self._pods: dict[str, Pod] = {}  # every assigned pod the watch reported
        self._by_node: dict[str, set[str]] = {}  # node name -> keys of its assigned pods
        self._assumed: dict[str, _Assumption] = {}
        self._ttl = assume_ttl
        self._clock = clock

    # ------------------------------------------------------------------ reading

    def snapshot(self) -> ClusterSnapshot:
        """The current immutable snapshot, assumed pods included."""
        return self._snapshot

    def is_assumed(self, key: str, uid: str | None = None) -> bool:
        """Whether the pod (with this uid, when given) is assumed and not yet confirmed."""
        with self._lock:
            assumption = self._assumed.get(key)
            if assumption is None:
                return False
            return not uid or not assumption.pod.uid or assumption.pod.uid == uid

    def assumed(self) -> dict[str, str]:
        """``{pod key: node}`` of the unconfirmed assumptions."""
        with self._lock:
            return {key: a.node for key, a in self._assumed.items()}

    def node(self, name: str) -> Node | None:
        with self._lock:
            return self._nodes.get(name)

    def pod(self, key: str) -> Pod | None:
        """An assigned pod as the watch reported it (assumptions excluded)."""
        with self._lock:
            return self._pods.get(key)

    # ------------------------------------------------------------------ node events

    def set_node(self, node: Node) -> str:
        """A node was added or updated; says whether it is new, changed, or unchanged."""
        with self._lock:
            old = self._nodes.get(node.name)
            self._nodes[node.name] = node
            snap = self._snapshot.with_node(node)
            if old is None:
                # Pods that arrived before their node (or outlived its deletion) join it now.
                for key in sorted(self._by_node.get(node.name, ())):
                    if key not in snap.pod_nodes:
                        snap = snap.with_pod(self._pods[key])
                self._snapshot = snap
                return NODE_ADDED
            self._snapshot = snap
            return NODE_CHANGED if _node_changed(old, node) else NODE_UNCHANGED

    def set_loads(self, loads: Mapping[str, NodeLoad]) -> bool:
        """Every node's measured load (``controller.load``; a node left out has none); True
        when some node's load changed. Only those nodes get a new ``NodeInfo``."""
        with self._lock:
            snap = self._snapshot.with_loads(loads)
            changed = snap is not self._snapshot
            self._snapshot = snap
            return changed

    def remove_node(self, name: str) -> bool:
        with self._lock:
            if self._nodes.pop(name, None) is None:
                return False
            # Its assumptions die with it (the bind will fail); its real pods stay remembered.
            for key in [k for k, a in self._assumed.items() if a.node == name]:
                del self._assumed[key]
            self._snapshot = self._snapshot.without_node(name)
            return True

    # ------------------------------------------------------------------ pod events

    def set_pod(self, pod: Pod) -> bool:
        """An assigned pod was added or updated. Replaces an assumption of it (confirmation,
        or a bind by someone else). True when the pod is new to the cache (not a confirmation
        of our own assumption, not an update)."""
        if not pod.node_name:
            raise ValueError(f"pod {pod.key} is not assigned")
        key = pod.key
        with self._lock:
            snap = self._snapshot
            assumption = self._assumed.pop(key, None)
            if (
                assumption is not None
                and key not in self._pods
                and snap.pod_nodes.get(key) == pod.node_name
                and _same_placement(assumption.pod, pod)
            ):
                # The watch confirms our bind with the pod we assumed (only its
                # resourceVersion moved): the snapshot already holds it, so it stays as it is
                # rather than rebuilding the node for an equal pod, and the next cycles do
                # not see the node as changed.
                self._pods[key] = pod
                self._by_node.setdefault(pod.node_name, set()).add(key)
                return False
            if assumption is not None:
                if assumption.node != pod.node_name:
                    log.info(
                        "assumed pod bound elsewhere",
                        pod=key,
                        assumed=assumption.node,
                        node=pod.node_name,
                    )
                if key in snap.pod_nodes:
                    snap = snap.without_pod(key)
            old = self._pods.get(key)
            if old is not None:
                if key in snap.pod_nodes:
                    snap = snap.without_pod(key)
                self._by_node.get(old.node_name, set()).discard(key)
            self._pods[key] = pod
            self._by_node.setdefault(pod.node_name, set()).add(key)
            if pod.node_name in snap:
                snap = snap.with_pod(pod)
            self._snapshot = snap
            return old is None and assumption is None

    def remove_pod(self, key: str) -> bool:
        """A pod was deleted (or finished): drop it and any assumption of it. True when an
        assigned pod left (capacity was freed)."""
        with self._lock:
            snap = self._snapshot
            assumption = self._assumed.pop(key, None)
            old = self._pods.pop(key, None)
            if (assumption is not None or old is not None) and key in snap.pod_nodes:
                snap = snap.without_pod(key)
            if old is not None:
                keys = self._by_node.get(old.node_name)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._by_node[old.node_name]
            self._snapshot = snap
            return old is not None

    # ------------------------------------------------------------------ PodGroups

    def set_pod_group(self, group: PodGroup) -> None:
        """A PodGroup was added or changed: the snapshot carries gang definitions too."""
        with self._lock:
            self._snapshot = self._snapshot.with_pod_group(group)

    def remove_pod_group(self, key: str) -> None:
        with self._lock:
            self._snapshot = self._snapshot.without_pod_group(key)

    # ------------------------------------------------------------------ Services, controllers

    def set_workload(self, workload: Workload) -> None:
        """A Service or controller was added or changed (default spreading reads them)."""
        with self._lock:
            self._snapshot = self._snapshot.with_workload(workload)

    def remove_workload(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            self._snapshot = self._snapshot.without_workload(kind, namespace, name)

    # ------------------------------------------------------------------ assumptions

    def set_storage(self, storage: StorageObjects) -> None:
        """The storage objects the cycles read (``controller.storagecache``'s view)."""
        with self._lock:
            if self._snapshot.storage is not storage:
                self._snapshot = self._snapshot.with_storage(storage)

    def assume(self, pod: Pod, node: str) -> None:
        """Place ``pod`` on ``node`` in the snapshot now, before its bind."""
        key = pod.key
        with self._lock:
            snap = self._snapshot
            if key in snap.pod_nodes:
                raise AssumeError(f"pod {key} is already on node {snap.pod_nodes[key]}")
            if node not in snap:
                raise AssumeError(f"node {node} is not in the cache")
            placed = pod.with_node_name(node)
            self._snapshot = snap.with_pod(placed, node)
            self._assumed[key] = _Assumption(placed, node)

    def finish_binding(self, key: str) -> None:
        """The bind returned: from now on the assumption expires unless the watch confirms."""
        with self._lock:
            assumption = self._assumed.get(key)
            if assumption is not None and assumption.deadline is None:
                assumption.deadline = self._clock() + self._ttl

    def forget(self, key: str) -> bool:
        """Undo an assumption (its bind failed). False when there was none."""
        with self._lock:
            return self._forget_locked(key)

    def cleanup_expired(self) -> list[str]:
        """Drop assumptions whose bind finished more than the TTL ago without confirmation."""
        now = self._clock()
        with self._lock:
            expired = [
                key
                for key, a in self._assumed.items()
                if a.deadline is not None and a.deadline <= now
            ]
            for key in expired:
                log.warning("assumed pod expired without confirmation", pod=key)
                self._forget_locked(key)
            return expired

    def _forget_locked(self, key: str) -> bool:
        if self._assumed.pop(key, None) is None:
            return False
        if key in self._snapshot.pod_nodes:
            self._snapshot = self._snapshot.without_pod(key)
        return True
