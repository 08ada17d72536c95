"""The scheduler loop: watch the cluster, take pending pods in order, decide, assume, bind.

This is where the controller pieces meet; each of them exists for one reason and this module
only wires them the way kube-scheduler does:

* two informers (``informer``) keep the cluster cache (``cache``) and the scheduling queue
  (``queue``) in step with the API server: nodes, and *all* pods (pods placed by other
  schedulers use capacity too), with kube-scheduler's field selector that leaves out finished
  pods; once they have synced, a poller (``load``) puts each node's measured load in the cache;
* the loop pops one pod at a time, reads the program (``program_source()``, once per cycle, so
  a reload takes effect between cycles), reads one immutable snapshot, runs the engine with the
  pod's profile (its ``spec.schedulerName``), and either assumes the chosen node and hands the
  bind to the binder (``binder``), or parks the pod as unschedulable and tells the user
  (``events``); bindings, Events and condition patches are written on connections the loop
  itself pumps between cycles (``outbox``), so no write waits and none needs a thread;
* bind results come back when the loop next pumps the outbox: success confirms and emits
  ``Scheduled``, a 409 drops the pod, anything else forgets the assumption and requeues it
  with backoff;
* a pod that fits nowhere goes through preemption (``preemption``): victims are deleted
  gracefully, the pod is nominated to their node and bound there once they are gone; nominated
  pods of equal or higher priority count as placed in every cycle;
* pods labelled into a coscheduling PodGroup never enter the queue themselves: the gang
  coordinator (``gangs``, fed by a PodGroup watch from ``podgroups``) queues one entry per
  gang once it could be placed, and places, assumes and binds the whole gang in one attempt.

A pod is ours when its ``spec.schedulerName`` is one of ``scheduler_names`` (by default the
program's profile names, read when the scheduler is built). The tie-break rng is seeded, so a
run over the same event order is reproducible.

``SchedulerHooks`` lets metrics observe the loop without the loop knowing Prometheus.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from kubernetes import client as k8s

from policyengine.controller.binder import Binder, BindOutcome, BindResult
from policyengine.controller.bindresults import settle_bind
from policyengine.controller.cache import NODE_ADDED, NODE_CHANGED, AssumeError, ClusterCache
from policyengine.controller.echo import reparsed
from policyengine.controller.events import EventRecorder
from policyengine.controller.gangs import DEFAULT_GANG_TIMEOUT, GangCoordinator
from policyengine.controller.hooks import SchedulerHooks, call_hook
from policyengine.controller.informer import Informer, InformerOptions, object_key
from policyengine.controller.load import DEFAULT_POLL_INTERVAL, LoadPoller
from policyengine.controller.logs import get_logger
from policyengine.controller.outbox import DEFAULT_CONNECTIONS, Outbox
from policyengine.controller.podgroups import (
    DEFAULT_CRD_RECHECK,
    PodGroupSource,
    PodGroupStatusWriter,
)
from policyengine.controller.preemption import Preemptor
from policyengine.controller.queue import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_UPDATE,
    QueuedPod,
    SchedulingQueue,
)
from policyengine.controller.rawapi import RawAPI
from policyengine.controller.storagecache import StorageCache
from policyengine.controller.volumebinding import DEFAULT_BIND_TIMEOUT, VolumeBinder
from policyengine.controller.wirejson import JSON
from policyengine.controller.workloads import WorkloadWatch
from policyengine.engine import heap
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Decision
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gang_preemption import GangPreemption
from policyengine.engine.gangs import Gang
from policyengine.engine.gpu_placement import gpu_annotations, with_devices
from policyengine.engine.preemption import (
    PreemptionDecision,
    failed_scheduling_message,
    with_nominated,
)
from policyengine.lang.compiler import Program
from policyengine.model.errors import ModelError
from policyengine.model.load import DEFAULT_MAX_AGE
from policyengine.model.objects import Pod
from policyengine.model.parse import parse_node, parse_pod
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.storage import StorageObjects
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig

log = get_logger(__name__)


# The queue event a policy swap raises: a new policy may place any unschedulable pod.
POLICY_CHANGE = "PolicyChange"

# kube-scheduler's pod informer leaves out pods that can never hold resources again.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


# The queue's event for a change of a storage object (a claim bound, a volume created, ...).
STORAGE_CHANGE = "StorageChange"
# Seconds an idle loop waits on the queue before looking for answers to its writes, while some
# are awaited: a bind's answer is handled at most this late when no pod is waiting.
OUTBOX_POLL = 0.002


@dataclass(frozen=True)
class SchedulerOptions:
    """Timings; the defaults are kube-scheduler's, tests shorten them."""

    informer: InformerOptions = field(default_factory=InformerOptions)
    initial_backoff: float = 1.0
    max_backoff: float = 10.0
    max_unschedulable: float = 300.0
    assume_ttl: float = 30.0
    event_dedup_window: float = 600.0
    bind_timeout: float = 30.0
    housekeeping_interval: float = 1.0
    shutdown_timeout: float = 30.0  # how long binds in flight may take to finish on stop
    # Which node labels name the rack, NVLink domain, … (``run --topology LEVEL=LABEL``).
    topology: TopologyConfig = DEFAULT_TOPOLOGY
    # Gangs: the wait before reporting a PodGroup without scheduleTimeoutSeconds, and how
    # often a missing PodGroup CRD is looked for again.
    gang_timeout: float = DEFAULT_GANG_TIMEOUT
    podgroup_crd_recheck: float = DEFAULT_CRD_RECHECK
    # Node load (controller/load.py): how often metrics.k8s.io is polled, and the age after
    # which a reading counts as missing.
    load_poll_interval: float = DEFAULT_POLL_INTERVAL
    load_max_age: float = DEFAULT_MAX_AGE.total_seconds()
    # On start and once the caches have synced, move every object alive into the collector's
    # permanent generation (``gc.freeze``): the modules, the compiled program and the listed
    # cluster are long-lived, and each full collection otherwise walks all of them (over
    # 100 ms with 1,000 nodes, a stall of the sync or the loop each time). Reference
    # counting still frees them. The young generation is collected less often too
    # (``engine.heap``). Process-wide, so only ``policyengine run`` turns it on.
    freeze_heap: bool = False
    # How long a pod's claims may take to be bound by the PV controller before the pod is
    # tried again (kube-scheduler's VolumeBinding bindTimeoutSeconds).
    volume_bind_timeout: float = DEFAULT_BIND_TIMEOUT


class Scheduler:
    """The scheduling loop (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        program_source: Callable[[], Program],
        *,
        scheduler_names: Sequence[str] | None = None,
        seed: int | None = None,
        bind_connections: int = DEFAULT_CONNECTIONS,
        hooks: SchedulerHooks | None = None,
        options: SchedulerOptions | None = None,
    ) -> None:
        self._program_source = program_source
        if scheduler_names is None:
            scheduler_names = tuple(program_source().profiles)
        self.scheduler_names = tuple(scheduler_names)
        self._names = frozenset(self.scheduler_names)
        self._hooks = hooks or SchedulerHooks()
        self._options = options or SchedulerOptions()
        opts = self._options
        self._rng = random.Random(seed)
        # The class cache every cycle of this scheduler shares: pods, gangs and preemption.
        self.classes = ClassCache()
        # pending pods of ours: key -> (the object as the watch gave it, its parse)
        self._parsed: dict[str, tuple[JSON, Pod]] = {}
        self.cache = ClusterCache(assume_ttl=opts.assume_ttl)
        self.queue = SchedulingQueue(
            initial_backoff=opts.initial_backoff,
            max_backoff=opts.max_backoff,
            max_unschedulable=opts.max_unschedulable,
        )
        # The loop's writes go out on non-blocking connections the loop pumps between its
        # cycles (controller/outbox.py); a write from another thread wakes the loop.
        self.outbox = Outbox(api_client, connections=bind_connections, on_submit=self.queue.wake)
        self.binder = Binder(
            api_client,
            outbox=self.outbox,
            request_timeout=opts.bind_timeout,
            on_in_flight=self._on_bind_count,
        )
        self.events = EventRecorder(
            api_client, dedup_window=opts.event_dedup_window, outbox=self.outbox
        )
        # Preemption (controller/preemption.py): nominations, victims' deletion.
        self.preemptor = Preemptor(
            api_client,
            self.events,
            classes=self.classes,
            topology=opts.topology,
            raw_pod=lambda key: self.pod_informer.get(key),
        )
        core = RawAPI(api_client)
        informer_rng = random.Random(seed)
        self.node_informer = Informer(
            "nodes",
            core.list_node,
            _Handler(self._node_added, self._node_updated, self._node_deleted),
            options=opts.informer,
            rng=informer_rng,
        )
        self.pod_informer = Informer(
            "pods",
            core.list_pod_for_all_namespaces,
            _Handler(self._pod_added, self._pod_updated, self._pod_deleted),
            field_selector=POD_FIELD_SELECTOR,
            options=opts.informer,
            rng=informer_rng,
        )
        self.load = LoadPoller(
            api_client,
            self.cache,
            interval=opts.load_poll_interval,
            max_age=timedelta(seconds=opts.load_max_age),
            on_change=lambda: self.queue.move_all(NODE_UPDATE),
        )
        # PodDisruptionBudgets, which preemption respects; synced before the first cycle, as
        # kube-scheduler waits for its PDB informer.
        self.pdb_informer = Informer(
            "poddisruptionbudgets",
            core.list_pod_disruption_budget_for_all_namespaces,
            _Handler(
                self.preemptor.pdb_added, self.preemptor.pdb_updated, self.preemptor.pdb_deleted
            ),
            options=opts.informer,
            rng=informer_rng,
        )
        # Storage (controller/storagecache.py, volumebinding.py): the six storage kinds, the
        # volume decisions assumed with their pods, and the binding of claims before pods.
        self.storage = StorageCache(on_change=self._storage_changed)
        self.volume_binder = VolumeBinder(
            api_client, self.storage, timeout=opts.volume_bind_timeout
        )
        self.storage_informers = [
            Informer(
                resource,
                list_func,
                self.storage.handler(resource),
                options=opts.informer,
                rng=informer_rng,
            )
            for resource, list_func in (
                ("persistentvolumes", core.list_persistent_volume),
                ("persistentvolumeclaims", core.list_persistent_volume_claim_for_all_namespaces),
                ("storageclasses", core.list_storage_class),
                ("csinodes", core.list_csi_node),
                ("csidrivers", core.list_csi_driver),
                ("csistoragecapacities", core.list_csi_storage_capacity_for_all_namespaces),
            )
        ]
        # Services and controllers, which default topology spreading derives selectors from.
        self.workloads = WorkloadWatch(
            api_client, self.cache, options=opts.informer, rng=informer_rng
        )
        # Gangs (controller/gangs.py): PodGroups, their status, and the members' queue entry.
        self.podgroup_status = PodGroupStatusWriter(api_client)
        self.gangs = GangCoordinator(
            classes=self.classes,
            cache=self.cache,
            queue=self.queue,
            binder=self.binder,
            events=self.events,
            status=self.podgroup_status,
            program_source=program_source,
            rng=self._rng,
            hooks=self._hooks,
            raw_pod=self.pod_informer.get,
            topology=opts.topology,
            default_timeout=opts.gang_timeout,
            preempt=self._preempt_gang,
            bind_volumes=self._bind_member_volumes,
        )
        self.podgroups = PodGroupSource(
            api_client,
            _Handler(self.gangs.group_added, self.gangs.group_updated, self.gangs.group_deleted),
            self.gangs.crd_changed,
            options=opts.informer,
            rng=informer_rng,
            recheck=opts.podgroup_crd_recheck,
        )

    # ------------------------------------------------------------------ public API

    def run(self, stop: threading.Event) -> None:
        """Schedule until ``stop`` is set; then finish binds in flight and return."""
        log.info("scheduler starting", scheduler_names=list(self.scheduler_names))
        if self._options.freeze_heap:
            heap.keep_for_long_run()
        self.events.start()
        self.podgroup_status.start()
        self.podgroups.start()
        self.node_informer.start()
        self.pod_informer.start()
        self.pdb_informer.start()
        for informer in self.storage_informers:
            informer.start()
        self.workloads.start()
        try:
            while not stop.is_set() and not self.has_synced():
                stop.wait(0.05)
            if not stop.is_set():
                # Listed, the storage is known, even when there is none.
                self.cache.set_storage(self.storage.objects())
                log.info("caches synced", **self.stats())
                if self._options.freeze_heap:
                    gc.freeze()
                self.load.start()  # its first poll judges the nodes just listed
            next_housekeeping = 0.0
            self.outbox.own()
            while not stop.is_set():
                now = time.monotonic()
                if now >= next_housekeeping:
                    self._housekeeping()
                    next_housekeeping = now + self._options.housekeeping_interval
                outbox = self.outbox
                outbox.pump()
                # While answers are awaited, an idle loop looks at the sockets every
                # OUTBOX_POLL seconds rather than sleeping the whole wait on the queue.
                wait = min(0.2, self._options.housekeeping_interval)
                item = self.queue.pop(timeout=OUTBOX_POLL if outbox.busy() else wait)
                if item is None:
                    continue
                if stop.is_set():
                    # Not scheduled: leave it for whoever runs next (a new leader).
                    self.queue.done(item.key)
                    break
                if self.gangs.handles(item):
                    self.gangs.schedule(item)
                else:
                    self._schedule_one(item)
        finally:
            self._shutdown()

    def has_synced(self) -> bool:
        return (
            self.node_informer.has_synced()
            and self.pod_informer.has_synced()
            and self.pdb_informer.has_synced()
            and all(informer.has_synced() for informer in self.storage_informers)
            and self.workloads.has_synced()
            and self.podgroups.has_synced()
        )

    def stats(self) -> dict[str, int]:
        """Queue depths by sub-queue, pods in a scheduling or binding cycle, binds in flight."""
        return {
            **self.queue.depths(),
            "in_flight": self.queue.in_flight(),
            "binds_in_flight": self.binder.in_flight(),
        }

    def policy_changed(self) -> int:
        """A new policy version is active: every unschedulable or backing-off pod is tried
        again at once, since the verdict it waits under came from the old one. Returns how
        many moved."""
        moved = self.queue.retry_all_now(POLICY_CHANGE)
        log.info("policy changed; unschedulable pods re-queued", moved=moved)
        return moved

    # ------------------------------------------------------------------ the loop

    def _shutdown(self) -> None:
        log.info("scheduler stopping", **self.stats())
        self.queue.close()
        if not self.binder.shutdown(timeout=self._options.shutdown_timeout):
            log.warning("binds still in flight at shutdown", binds=self.binder.in_flight())
        self.events.stop(timeout=5.0)
        self.outbox.close()
        self.podgroup_status.stop(timeout=5.0)
        self.podgroups.stop()
        self.load.stop()
        self.volume_binder.shutdown()
        for informer in self.storage_informers:
            informer.stop()
        self.pdb_informer.stop()
        self.workloads.stop()
        self.pod_informer.stop()
        self.node_informer.stop()
        log.info("scheduler stopped")

    def _housekeeping(self) -> None:
        for key in self.cache.cleanup_expired():
            # The bind finished long ago but the watch never showed the pod: ask again.
            pod_obj = self.pod_informer.get(key)
            if pod_obj is not None:
                self._pod_added(pod_obj)
        self.gangs.housekeeping()
        self._call(self._hooks.on_queue, self.queue.depths())

    def _schedule_one(self, item: QueuedPod) -> None:
        start = time.perf_counter()
        cpu_start = time.thread_time()
        pod = item.pod
        profile = pod.scheduler_name
        if self.cache.is_assumed(pod.key) or pod.key in self.cache.snapshot().pod_nodes:
            # Placed while it waited (our earlier bind, or someone else's): nothing to do.
            self.queue.done(pod.key)
            return
        try:
            program = self._program_source()
            cached = self.cache.snapshot()
            # Preemptors of equal or higher priority hold the nodes they were nominated to.
            snapshot = with_nominated(cached, pod, self.preemptor.nominated())
            decision = schedule(
                program,
                pod,
                snapshot,
                self._rng,
                CycleOptions(all_filters=False, scheduler_name=profile, cache=self.classes),
                self._options.topology,
            )
        except Exception:
            log.exception("scheduling cycle failed", pod=pod.key)
            self.queue.add_backoff(item)
            self._call(self._hooks.on_attempt, "error", profile, time.perf_counter() - start)
            return
        self._call(self._hooks.on_stage, "filter_score", time.perf_counter() - start)
        self._call(self._hooks.on_cycle_cpu, time.thread_time() - cpu_start)
        if decision.node is None:
            try:
                outcome = self.preemptor.run(program, pod, cached, decision, profile, self._rng)
            except Exception:
                log.exception("preemption failed", pod=pod.key)
                outcome = None
            else:
                self._observe_preemption("pod", outcome)
            message = failed_scheduling_message(decision, outcome)
            # A victim the API server would not let go: retry after the backoff (as kube
            # activates such a preemptor) instead of waiting for an event that may not come.
            retry = self.preemptor.take_failure(pod.key)
            self._unschedulable(item, replace(decision, message=message), start, retry=retry)
            return
        now = int(time.time())
        devices = gpu_annotations(decision.gpu_devices, decision.node, now)
        try:
            placed = with_devices(pod, decision.node, decision.gpu_devices, now)
            self.cache.assume(placed, decision.node)
        except AssumeError as exc:
            log.info("could not assume pod", pod=pod.key, node=decision.node, error=str(exc))
            self.queue.add_backoff(item)
            self._call(self._hooks.on_attempt, "error", profile, time.perf_counter() - start)
            return
        if decision.volumes:
            # The claims are bound first (kube-scheduler's PreBind); the pod after them.
            node = decision.node
            self.storage.assume(pod.key, node, decision.volumes)
            if not self.volume_binder.bind(
                pod,
                node,
                decision.volumes,
                lambda error: self._volumes_bound(item, decision, start, devices, error),
            ):
                self.storage.forget(pod.key)
                self.cache.forget(pod.key)
                self.queue.add_backoff(item)
            return
        self._bind(item, decision, start, devices)

    def _bind(
        self, item: QueuedPod, decision: Decision, start: float, devices: Mapping[str, str]
    ) -> None:
        pod = item.pod
        assert decision.node is not None
        started = self.binder.bind(
            pod,
            decision.node,
            lambda result: self._bound(item, decision, start, result),
            devices,
        )
        if not started:
            self.cache.forget(pod.key)
            self.queue.add_backoff(item)

    def _volumes_bound(
        self,
        item: QueuedPod,
        decision: Decision,
        start: float,
        devices: Mapping[str, str],
        error: str | None,
    ) -> None:
        """The pod's claims are bound (``error`` None): bind the pod. Otherwise forget what
        was assumed and try the pod again after its backoff."""
        pod = item.pod
        # Bound or not, the watches now hold what the API server has: no assumption is left.
        self.storage.forget(pod.key)
        if error is None:
            self._bind(item, decision, start, devices)
            return
        self.cache.forget(pod.key)
        self.queue.add_backoff(item)
        message = f'running PreBind plugin "VolumeBinding": {error}'
        self.events.failed_scheduling(
            pod,
            pod.scheduler_name,
            message,
            decision.policy,
            decision.version,
            current_condition=_pod_scheduled_condition(self.pod_informer.get(pod.key)),
        )
        self._call(self._hooks.on_attempt, "error", pod.scheduler_name, time.perf_counter() - start)

    def _unschedulable(
        self, item: QueuedPod, decision: Decision, start: float, *, retry: bool = False
    ) -> None:
        pod = item.pod
        if retry:
            self.queue.add_backoff(item)
        else:
            self.queue.add_unschedulable(item)
        log.info(
            "unable to schedule pod; waiting",
            pod=pod.key,
            reason=decision.message,
            policy=decision.policy,
            version=decision.version,
        )
        raw = self.pod_informer.get(pod.key)
        self.events.failed_scheduling(
            pod,
            pod.scheduler_name,
            decision.message,
            decision.policy,
            decision.version,
            current_condition=_pod_scheduled_condition(raw),
        )
        self._call(
            self._hooks.on_attempt, "unschedulable", pod.scheduler_name, time.perf_counter() - start
        )

    def _bound(self, item: QueuedPod, decision: Decision, start: float, result: BindResult) -> None:
        settle_bind(
            result,
            cache=self.cache,
            events=self.events,
            hooks=self._hooks,
            policy=decision.policy,
            version=decision.version,
            started=start,
            feasible=len(decision.feasible),
            evaluated=decision.num_nodes,
        )
        if result.outcome is BindOutcome.FAILED:
            self.queue.add_backoff(item)
            return
        self.queue.done(item.pod.key)
        if result.outcome is BindOutcome.BOUND and item.first_popped_at is not None:
            self._call(self._hooks.on_stage, "e2e", time.monotonic() - item.first_popped_at)

    # ------------------------------------------------------------------ informer handlers

    def _node_added(self, obj: JSON) -> None:
        self._node_updated(None, obj)

    def _node_updated(self, _old: JSON | None, obj: JSON) -> None:
        try:
            node = parse_node(obj)
        except ModelError as exc:
            log.warning("ignoring unreadable node", node=object_key(obj), error=str(exc))
            return
        change = self.cache.set_node(node)
        if change == NODE_ADDED:
            self.queue.move_all(NODE_ADD)
        elif change == NODE_CHANGED:
            self.queue.move_all(NODE_UPDATE)

    def _bind_member_volumes(
        self, pod: Pod, node: str, volumes: Any, then: Callable[[str | None], None]
    ) -> bool:
        """A gang member's waiting claims: assumed, then bound; ``then`` gets the outcome
        once the assumption is lifted."""
        self.storage.assume(pod.key, node, volumes)

        def done(error: str | None) -> None:
            self.storage.forget(pod.key)
            then(error)

        started = self.volume_binder.bind(pod, node, volumes, done)
        if not started:
            self.storage.forget(pod.key)
        return started

    def _storage_changed(self, view: StorageObjects, from_api: bool) -> None:
        self.cache.set_storage(view)
        if from_api:  # a claim, volume, class ... changed: pods waiting on one may fit now
            self.queue.move_all(STORAGE_CHANGE)

    def _node_deleted(self, obj: JSON) -> None:
        self.cache.remove_node(object_key(obj))

    def _pod_added(self, obj: JSON) -> None:
        self._pod_updated(None, obj)

    def _pod_updated(self, old: JSON | None, obj: JSON) -> None:
        key = object_key(obj)
        # The pending pod's last parse, reused when this event is only the echo of a
        # binding (controller/echo.py); any other event parses the object.
        known = self._parsed.pop(key, None)
        pod = None
        if known is not None and known[0] is old and old is not None:
            pod = reparsed(old, known[1], obj)
        if pod is None:
            try:
                pod = parse_pod(obj)
            except ModelError as exc:
                log.warning("ignoring unreadable pod", pod=key, error=str(exc))
                self.queue.delete(key)
                return
        if pod.phase in TERMINAL_PHASES:
            self._pod_deleted(obj)
            return
        self.preemptor.observe(pod)
        if pod.node_name:
            # Assigned (by us — a confirmation — or by anyone else): capacity, not queue.
            new = self.cache.set_pod(pod)
            self.queue.delete(key)
            self.gangs.assigned(pod)
            if new:
                self.queue.move_all(ASSIGNED_POD_ADD, _has_pod_affinity)
            return
        if pod.scheduler_name not in self._names:
            self.gangs.removed(key)
            return
        if pod.deletion_timestamp:
            self.queue.delete(key)
            self.gangs.removed(key)
            return
        self._parsed[key] = (obj, pod)
        if self.cache.is_assumed(key, pod.uid):
            return  # our bind is in flight or awaits the watch; not pending any more
        created = str((obj.get("metadata") or {}).get("creationTimestamp") or "")
        if pod.scheduling_gates:  # held in the queue's gated pool, outside its gang too
            self.gangs.removed(key)
            self.queue.update(pod, created)
            return
        if self.gangs.offer(pod, created):
            return  # a gang member: its gang enters the queue as one entry
        self.queue.update(pod, created)

    def _preempt_gang(
        self, program: Program, gang: Gang, snapshot: ClusterSnapshot, profile: str
    ) -> tuple[str | None, bool]:
        """Gang preemption for the coordinator: what it did when it evicted pods (None when it
        could not help, the gang's own reason standing, or while earlier victims go), and
        whether a victim was refused (the gang is then retried after its backoff)."""
        outcome = self.preemptor.run_gang(program, gang, snapshot, profile, self._rng)
        self._observe_preemption("gang", outcome)
        message = outcome.message if outcome is not None and outcome.preempts else None
        return message, self.preemptor.take_failure(gang.key)

    def _pod_deleted(self, obj: JSON) -> None:
        key = object_key(obj)
        self._parsed.pop(key, None)
        self.preemptor.forget(key)
        self.queue.delete(key)
        self.gangs.removed(key)
        if self.cache.remove_pod(key):
            self.queue.move_all(ASSIGNED_POD_DELETE)

    # ------------------------------------------------------------------ helpers

    def _observe_preemption(
        self, kind: str, outcome: PreemptionDecision | GangPreemption | None
    ) -> None:
        if outcome is None:
            self._call(self._hooks.on_preemption, kind, "waiting", 0)
        elif outcome.preempts:
            self._call(self._hooks.on_preemption, kind, "preempted", len(outcome.victims))
        else:
            self._call(self._hooks.on_preemption, kind, "unhelpful", 0)

    def _on_bind_count(self, count: int) -> None:
        self._call(self._hooks.on_bind, count)

    _call = staticmethod(call_hook)


class _Handler:
    def __init__(
        self,
        on_add: Callable[[JSON], None],
        on_update: Callable[[JSON, JSON], None],
        on_delete: Callable[[JSON], None],
    ) -> None:
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete


def _has_pod_affinity(pod: Pod) -> bool:
    return pod.has_pod_affinity_constraints


def _pod_scheduled_condition(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not obj:
        return None
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            return condition
    return None
