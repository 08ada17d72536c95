"""Preemption in the loop: carrying out what ``engine.preemption`` decided, as kube-scheduler's
DefaultPreemption does after its PostFilter chose a node.

For a pod that fits nowhere: run preemption against the cycle's snapshot; set the pod's
``status.nominatedNodeName`` to the chosen node; clear the nomination of lower-priority pods
nominated to that node (they may no longer fit there); and for each victim, as kube's
preemption executor does: nothing for a victim already terminating (it is going anyway);
otherwise set its ``DisruptionTarget`` condition (status True, reason
``PreemptionByScheduler``, "<schedulerName>: preempting to accommodate a higher priority
pod"; a status patch, skipped when the condition already says so), delete it gracefully (a
plain DELETE: its own ``terminationGracePeriodSeconds`` applies), and post a ``Preempted``
event on it (``Preempted by pod <uid> on node <node>``). A victim already gone (404) is what
we wanted. Any other refusal leaves that victim and the ones after it alone and forgets the
preemption, and ``take_failure`` tells the loop to retry the preemptor (or gang) after its
backoff: it searches again instead of waiting for a victim that is not going.
The condition is what makes a nominated preemptor wait (``engine.preemption``: a pod
terminating *by preemption* on its nominated node), and tells the victim's owner why it went.
The preemptor stays in the unschedulable queue; when a victim is finally gone, the deletion
moves it back and the next cycle binds it.

PodDisruptionBudgets come from their own watch (``pdb_*`` handlers) and are laid over the
cycle's snapshot for preemption only. Nominations are remembered here (from our own patches at once, and from the watch), so that
every cycle can count the nominated pods of equal or higher priority as already on their
nodes (``engine.preemption.with_nominated``): the space a preemptor paid for is not taken
by a lower-priority pod in the meantime. A preemptor whose victims are still in the cache
(their deletion is not visible yet) does not preempt again.

A gang that fits nowhere (``run_gang``, called by the gang coordinator) preempts for a whole
topology domain: each pending member is nominated to the node the dry run placed it on, the
victims get ``Preempted by pod group <ns/name> in <level/value>`` and are deleted; the gang's
next attempt, once they are gone, places it.
"""

from __future__ import annotations

import datetime as dt
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kubernetes import client as k8s

from policyengine.controller.events import EventRecorder
from policyengine.controller.logs import get_logger
from policyengine.controller.rawapi import RawAPI
from policyengine.engine.cycle import CycleOptions
from policyengine.engine.decision import Decision
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gang_preemption import GangPreemption, preempt_gang
from policyengine.engine.gangs import Gang
from policyengine.engine.preemption import PreemptionDecision, preempt
from policyengine.lang.compiler import Program
from policyengine.model.errors import ModelError
from policyengine.model.frozen import FrozenDict
from policyengine.model.objects import Pod
from policyengine.model.parse import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from policyengine.model.pdb import PodDisruptionBudget, parse_pdb
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

log = get_logger(__name__)


def pod_reference(pod: Pod) -> dict[str, str]:
    """An events.k8s.io ObjectReference to ``pod``."""
    return {
        "kind": "Pod",
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "apiVersion": "v1",
    }


def preempted_message(preemptor: Pod, node: str) -> str:
    return f"Preempted by pod {preemptor.uid} on node {node}"


def disruption_condition(
    scheduler_name: str, current: Mapping[str, Any] | None, now: dt.datetime
) -> dict[str, Any] | None:
    """The ``DisruptionTarget`` condition a victim of ``scheduler_name``'s preemption gets,
    given the victim as the watch last showed it (``current``); None when its conditions
    already say so. The transition time moves only when the status does, and the condition
    records the pod's ``metadata.generation`` when the pod has one (``observedGeneration``)."""
    status = (current or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    old = next(
        (
            c
            for c in conditions or ()
            if isinstance(c, Mapping) and c.get("type") == DISRUPTION_TARGET
        ),
        None,
    )
    condition: dict[str, Any] = {
        "type": DISRUPTION_TARGET,
        "status": "True",
        "reason": PREEMPTION_BY_SCHEDULER,
        "message": f"{scheduler_name}: preempting to accommodate a higher priority pod",
        "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    meta = (current or {}).get("metadata")
    generation = meta.get("generation") if isinstance(meta, Mapping) else None
    if type(generation) is int:
        condition["observedGeneration"] = generation
    if old is not None and old.get("status") == "True":
        condition["lastTransitionTime"] = old.get("lastTransitionTime")
        if all(old.get(k) == v for k, v in condition.items()):
            return None
    return condition


class Preemptor:
    """Nominations and in-flight preemptions of one scheduler (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        events: EventRecorder,
        *,
        classes: ClassCache | None = None,
        topology: TopologyConfig = DEFAULT_TOPOLOGY,
        request_timeout: float = 10.0,
        on_preempt: Callable[[PreemptionDecision], None] | None = None,
        raw_pod: Callable[[str], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self._core = RawAPI(api_client)
        self._raw_pod = raw_pod  # a pod as the watch last showed it, by key
        self._events = events
        self._topology = topology
        self._classes = classes if classes is not None else ClassCache()
        self._timeout = request_timeout
        self._on_preempt = on_preempt
        self._lock = threading.Lock()
        self._nominated: dict[str, Pod] = {}  # pending pod key -> pod with its nominated node
        self._victims: dict[str, frozenset[str]] = {}  # preemptor key -> victim keys
        self._failed: set[str] = set()  # preemptors a victim's API call failed for
        self._pdbs: dict[str, PodDisruptionBudget] = {}  # "ns/name" -> budget, from the watch

    # ------------------------------------------------------------------ budgets (informer)

    def pdb_added(self, obj: dict[str, Any]) -> None:
        self.pdb_updated(None, obj)

    def pdb_updated(self, _old: dict[str, Any] | None, obj: dict[str, Any]) -> None:
        try:
            budget = parse_pdb(obj)
        except ModelError as exc:
            log.warning("ignoring unreadable PodDisruptionBudget", error=str(exc))
            return
        with self._lock:
            self._pdbs[budget.key] = budget

    def pdb_deleted(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        with self._lock:
            self._pdbs.pop(f"{meta.get('namespace') or 'default'}/{meta.get('name')}", None)

    # ------------------------------------------------------------------ nominations

    def nominated(self) -> Sequence[Pod]:
        with self._lock:
            return tuple(self._nominated.values())

    def nomination(self, key: str) -> str:
        with self._lock:
            pod = self._nominated.get(key)
            return pod.nominated_node_name if pod is not None else ""

    def observe(self, pod: Pod) -> None:
        """A pod as the watch shows it: assigned or terminating pods hold no nomination."""
        with self._lock:
            if pod.node_name or pod.is_terminating:
                self._nominated.pop(pod.key, None)
                self._victims.pop(pod.key, None)
            elif pod.nominated_node_name:
                self._nominated[pod.key] = pod

    def forget(self, key: str) -> None:
        with self._lock:
            self._nominated.pop(key, None)
            self._victims.pop(key, None)
            self._failed.discard(key)

    # ------------------------------------------------------------------ preemption

    def run(
        self,
        program: Program,
        pod: Pod,
        snapshot: ClusterSnapshot,
        decision: Decision,
        controller: str,
        rng: random.Random | None = None,
    ) -> PreemptionDecision | None:
        """Preempt for ``pod`` if it may; None while its earlier victims are still going.
        ``rng``: the loop's seeded rng, for where the bounded candidate search starts."""
        with self._lock:
            waiting = self._victims.get(pod.key, frozenset())
            known = self._nominated.get(pod.key)
        if any(key in snapshot.pod_nodes for key in waiting):
            return None
        with self._lock:
            budgets = FrozenDict(self._pdbs)
        if budgets:
            snapshot = replace(snapshot, pdbs=budgets)
        if known is not None and not pod.nominated_node_name:
            pod = replace(pod, nominated_node_name=known.nominated_node_name)
        others = [p for p in self.nominated() if p.key != pod.key]
        outcome = preempt(
            program,
            pod,
            snapshot,
            decision,
            others,
            self._topology,
            scheduler_name=controller,
            rng=rng,
        )
        if outcome.node is None:
            return outcome
        node = outcome.node
        log.info(
            "preempting",
            pod=pod.key,
            node=node,
            victims=[v.key for v in outcome.victims],
            pdb_violations=outcome.pdb_violations,
        )
        with self._lock:
            self._victims[pod.key] = frozenset(v.key for v in outcome.victims)
            self._nominated[pod.key] = replace(pod, nominated_node_name=node)
            lower = [
                p
                for p in self._nominated.values()
                if p.nominated_node_name == node and p.priority < pod.priority
            ]
            for other in lower:
                del self._nominated[other.key]
        self._patch_nomination(pod, node)
        for other in lower:
            self._patch_nomination(other, None)
        note = preempted_message(pod, node)
        related = pod_reference(pod)
        if not all(
            self._preempt_victim(victim, pod.scheduler_name, controller, note, related)
            for victim in outcome.victims
        ):
            self._forget_victims(pod.key)
        if self._on_preempt is not None:
            self._on_preempt(outcome)
        return outcome

    def run_gang(
        self,
        program: Program,
        gang: Gang,
        snapshot: ClusterSnapshot,
        controller: str | None,
        rng: random.Random | None = None,
    ) -> GangPreemption | None:
        """Preempt for a gang that fits nowhere (``engine.gang_preemption``): each pending
        member is nominated to the node the dry run gave it, and the victims get a
        ``Preempted`` event and are deleted. None while earlier victims are still going."""
        with self._lock:
            waiting = self._victims.get(gang.key, frozenset())
            budgets = FrozenDict(self._pdbs)
        if any(key in snapshot.pod_nodes for key in waiting):
            return None
        if budgets:
            snapshot = replace(snapshot, pdbs=budgets)
        options = CycleOptions(all_filters=False, scheduler_name=controller, cache=self._classes)
        outcome = preempt_gang(program, gang, snapshot, rng, options, self._topology)
        if outcome.placement is None:
            return outcome
        members = {pod.key: pod for pod in gang.pending}
        nominations = [
            (members[d.pod], d.node)
            for d in outcome.placement.placements
            if d.node is not None and d.pod in members
        ]
        log.info(
            "preempting for gang",
            gang=gang.key,
            domain=outcome.label,
            victims=[v.key for v in outcome.victims],
            pdb_violations=outcome.pdb_violations,
        )
        with self._lock:
            self._victims[gang.key] = frozenset(v.key for v in outcome.victims)
            for pod, node in nominations:
                self._nominated[pod.key] = replace(pod, nominated_node_name=node)
        for pod, node in nominations:
            self._patch_nomination(pod, node)
        note = f"Preempted by pod group {gang.key} in {outcome.label}"
        first = gang.pending[0] if gang.pending else None
        related = pod_reference(first) if first is not None else None
        scheduler_name = first.scheduler_name if first is not None else controller or ""
        if not all(
            self._preempt_victim(victim, scheduler_name, controller or "", note, related)
            for victim in outcome.victims
        ):
            self._forget_victims(gang.key)
        if self._on_preempt is not None:
            self._on_preempt(outcome.as_preemption())
        return outcome

    def _patch_nomination(self, pod: Pod, node: str | None) -> None:
        body = {"status": {"nominatedNodeName": node}}
        try:
            response = self._core.patch_namespaced_pod_status(
                pod.name,
                pod.namespace,
                body,
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            _ = response.data  # read the body, or the pooled connection is unusable
            response.release_conn()
        except Exception as exc:
            log.warning(
                "could not set nominatedNodeName",
                pod=pod.key,
                node=node,
                status=getattr(exc, "status", None),
                error=str(getattr(exc, "reason", None) or exc),
            )

    def _forget_victims(self, key: str) -> None:
        """A victim could not be preempted: the next attempt for ``key`` searches afresh, and
        ``take_failure`` says so once."""
        with self._lock:
            self._victims.pop(key, None)
            self._failed.add(key)

    def take_failure(self, key: str) -> bool:
        """Whether the last preemption for ``key`` failed on a victim (asked once: the answer
        is cleared)."""
        with self._lock:
            if key not in self._failed:
                return False
            self._failed.discard(key)
            return True

    def _preempt_victim(
        self,
        victim: Pod,
        scheduler_name: str,
        controller: str,
        note: str,
        related: dict[str, str] | None,
    ) -> bool:
        """One victim, as kube's executor preempts it (module docstring); False when the API
        server refused something other than "not found"."""
        if victim.is_terminating:
            return True  # its deletion has started: nothing to send
        current = self._raw_pod(victim.key) if self._raw_pod is not None else None
        condition = disruption_condition(scheduler_name, current, dt.datetime.now(dt.UTC))
        if condition is not None:
            body = {"status": {"conditions": [condition]}}
            done = self._call(
                "could not set the DisruptionTarget condition",
                victim,
                self._core.patch_namespaced_pod_status,
                victim.name,
                victim.namespace,
                body,
            )
            if done is not True:
                return done is None  # gone already: nothing more to do
        done = self._call(
            "could not delete victim",
            victim,
            self._core.delete_namespaced_pod,
            victim.name,
            victim.namespace,
        )
        if done is not True:
            return done is None
        self._events.object_event(
            pod_reference(victim),
            controller,
            "Normal",
            "Preempted",
            "Preempting",
            note,
            related=related,
        )
        return True

    def _call(self, failure: str, victim: Pod, call: Callable[..., Any], *args: Any) -> bool | None:
        """True when the request succeeded, None when the victim is gone (404), False when
        refused otherwise (logged)."""
        try:
            response = call(*args, _preload_content=False, _request_timeout=self._timeout)
            _ = response.data  # read the body, or the pooled connection is unusable
            response.release_conn()
            return True
        except Exception as exc:
            status = getattr(exc, "status", None)
            if status == 404:
                return None
            log.warning(
                failure,
                pod=victim.key,
                status=status,
                error=str(getattr(exc, "reason", None) or exc),
            )
            return False
