"""Gangs in the running scheduler: one queue entry per PodGroup, placed whole or not at all.

A gang member scheduled on its own would hold a node while it waits for siblings that may
never fit, and two half-placed gangs can hold each other's capacity forever. The coordinator
therefore keeps gang members out of the scheduling queue and lets one member, the gang's
*representative*, stand for the whole gang there, so the queue's priority order, backoff and
move-on-cluster-event rules apply to the gang as a unit:

* **Gating.** The representative is queued only once the gang could be placed: its PodGroup is
  known and at least ``minMember`` of its pods exist (pending here, or already on nodes). Until
  then nothing is attempted and nothing is reserved. A pod whose PodGroup does not exist waits,
  as the coscheduling plugin makes it wait ("PodGroup not found"), and so do all labelled pods
  when the PodGroup CRD is not installed.
* **One attempt, the whole gang.** When the representative is popped, ``schedule_gang`` places
  every pending member against the cycle's snapshot, all-or-nothing and inside one topology
  domain (members joining an already placed gang go to its domain). Every placement is assumed
  in the cache before any bind starts, so the next cycle already sees the capacity taken; then
  every member is bound asynchronously. No capacity is held between attempts, so two gangs
  never deadlock: each either gets everything it needs in one cycle or nothing.
* **Failed binds.** A bind cannot be undone (Kubernetes has no unbind), and the coscheduling
  plugin does not try either: members already bound stay bound. The members whose bind
  failed are forgotten in the cache and the gang is retried with backoff; the retry sees the
  bound members as placed, so the rest join their domain. A 409 is handled as for single pods.
* **Timeout.** A gang still waiting ``scheduleTimeoutSeconds`` (the coscheduling default, 60 s,
  when the PodGroup does not say) after its first waiting member was seen is reported once: the same
  ``FailedScheduling`` text on each waiting member (and their ``PodScheduled`` condition), and
  the PodGroup's ``status`` (phase ``Pending``, the ``scheduled`` count and a ``Scheduled=False``
  condition carrying the same text). The gang keeps being retried; a later report is made only
  when the reason changes. A missing CRD is reported at once, since waiting cannot fix it.
* **After binding.** The PodGroup status says ``Scheduled`` with the count of placed members.
  A member deleted later simply stops counting; the rest stay where they are, and a replacement
  pod joins the gang's domain as a late member once ``minMember`` pods exist again.

Thread safety: informer handlers, the loop and bind callbacks all call in; one lock guards the
gang table, and the coordinator only calls leaf components (queue, cache, binder, events)
while holding it — none of them calls back.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policyengine.controller.binder import Binder, BindOutcome, BindResult
from policyengine.controller.bindresults import settle_bind
from policyengine.controller.cache import AssumeError, ClusterCache
from policyengine.controller.events import EventRecorder
from policyengine.controller.hooks import SchedulerHooks, call_hook
from policyengine.controller.informer import object_key
from policyengine.controller.logs import get_logger
from policyengine.controller.podgroups import CRD_NAME, PodGroupStatusWriter
from policyengine.controller.queue import (
    IN_FLIGHT,
    UNSCHEDULABLE,
    QueuedPod,
    SchedulingQueue,
    spec_changed,
)
from policyengine.controller.wirejson import JSON
from policyengine.engine.cycle import CycleOptions
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gangs import Gang, GangDecision, placed_members, schedule_gang
from policyengine.engine.gpu_placement import gpu_annotations, with_devices
from policyengine.engine.profiles import governing_policy, profile_for
from policyengine.lang.compiler import Program
from policyengine.model.errors import ModelError
from policyengine.model.objects import Pod
from policyengine.model.podgroup import PodGroup, parse_pod_group, pod_group_key
from policyengine.model.snapshot import ClusterSnapshot
from policyengine.model.topology import DEFAULT_TOPOLOGY, TopologyConfig
from policyengine.schedlib.context import CycleContext
from policyengine.schedlib.views import PodView

log = get_logger(__name__)


# scheduler-plugins' coscheduling waits this long (PermitWaitingTimeSeconds) when a PodGroup
# has no scheduleTimeoutSeconds.
DEFAULT_GANG_TIMEOUT = 60.0

# Queue event that moves a parked gang: its membership or its PodGroup changed.
GANG_CHANGE = "GangChange"

# Results of a gang attempt (``on_gang_attempt``) and reasons of a report (``on_gang_report``).
SCHEDULED = "scheduled"
UNSCHEDULABLE_RESULT = "unschedulable"
BIND_FAILED = "bind_failed"
ERROR = "error"
REPORT_TIMEOUT = "timeout"
REPORT_CRD_MISSING = "crd_missing"


def crd_missing_message(key: str) -> str:
    return f"gang {key}: the PodGroup CRD {CRD_NAME} is not installed"


def not_found_message(key: str) -> str:
    return f"gang {key}: PodGroup {key} not found"


def unreadable_message(key: str, error: str) -> str:
    return f"gang {key}: PodGroup {key} cannot be read: {error}"


def too_few_message(key: str, min_member: int) -> str:
    # No count: the text stays the same while members arrive, so it is reported once.
    return f"gang {key} has fewer than its {min_member} members (minMember); waiting for the rest"


def timeout_message(reason: str, timeout: float) -> str:
    return f"not placed within {timeout:g}s (scheduleTimeoutSeconds): {reason}"


@dataclass
class _GangState:
    key: str
    pending: dict[str, tuple[Pod, str]] = field(default_factory=dict)  # ours, unassigned
    assigned: set[str] = field(default_factory=set)  # members on nodes, as the watch says
    rep: str | None = None  # the member standing for the gang in the queue
    attempting: bool = False  # an attempt runs (deciding or binding): it requeues the gang
    waiting_since: float | None = None
    reason: str = ""  # why it waits (gating verdict or the last attempt's message)
    gated: bool = False  # the reason is a gating verdict, not an attempt's
    immediate: bool = False  # report the reason at once (nothing but a fix will help)
    policy: str | None = None
    reported: str | None = None  # the message last reported
    reported_to: set[str] = field(default_factory=set)  # members that got it
    condition: tuple[str, str] | None = None  # (status, lastTransitionTime) last written


@dataclass
class _GangBind:
    """The binds of one gang attempt; the last callback to arrive finishes the attempt."""

    item: QueuedPod
    decision: GangDecision
    version: str
    start: float
    expected: int
    results: list[BindResult] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _by_queue_order(entry: tuple[Pod, str]) -> tuple[int, str, str]:
    pod, created = entry
    return (-pod.priority, created, pod.key)


def _now_text() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GangCoordinator:
    """Gang gating, attempts, binds and reports for the scheduler loop (module docstring)."""

    def __init__(
        self,
        *,
        cache: ClusterCache,
        queue: SchedulingQueue,
        binder: Binder,
        events: EventRecorder,
        status: PodGroupStatusWriter,
        program_source: Callable[[], Program],
        rng: random.Random,
        classes: ClassCache,
        hooks: SchedulerHooks,
        raw_pod: Callable[[str], Mapping[str, Any] | None],
        topology: TopologyConfig = DEFAULT_TOPOLOGY,
        default_timeout: float = DEFAULT_GANG_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
        preempt: Callable[[Program, Gang, ClusterSnapshot, str], tuple[str | None, bool]]
        | None = None,
        bind_volumes: Callable[[Pod, str, Any, Callable[[str | None], None]], bool] | None = None,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._binder = binder
        self._events = events
        self._status = status
        self._program_source = program_source
        self._rng = rng
        self._classes = classes
        self._hooks = hooks
        self._raw_pod = raw_pod
        self._topology = topology
        self._default_timeout = default_timeout
        self._clock = clock
        # Gang preemption (controller/preemption.py): called for a gang that fits nowhere;
        # returns what it did (appended to the gang's reason) and whether a victim was refused.
        self._preempt = preempt
        # A member's waiting claims are bound before it (the scheduler's ``bind_volumes``:
        # assumed at once, the continuation called with None once bound, else the error).
        self._bind_volumes = bind_volumes
        self._lock = threading.RLock()
        self._gangs: dict[str, _GangState] = {}
        self._gang_of: dict[str, str] = {}  # pod key -> gang key
        self._groups: dict[str, PodGroup] = {}
        self._unreadable: dict[str, str] = {}  # group key -> parse error
        self._crd: bool | None = None  # None until the CRD check answered

    # ------------------------------------------------------------------ inspection

    def handles(self, item: QueuedPod) -> bool:
        """Whether a popped queue entry stands for a gang."""
        return pod_group_key(item.pod) is not None

    def representative(self, gang: str) -> str | None:
        with self._lock:
            state = self._gangs.get(gang)
            return state.rep if state is not None else None

    def waiting(self) -> dict[str, str]:
        """``{gang: reason}`` of the gangs with members waiting (reason empty while ready)."""
        with self._lock:
            return {k: s.reason for k, s in self._gangs.items() if s.waiting_since is not None}

    # ------------------------------------------------------------------ PodGroups and the CRD

    def crd_changed(self, installed: bool) -> None:
        with self._lock:
            self._crd = installed
            for state in list(self._gangs.values()):
                self._sync(state, moved=True)

    def group_added(self, obj: JSON) -> None:
        self.group_updated(None, obj)

    def group_updated(self, _old: JSON | None, obj: JSON) -> None:
        key = object_key(obj)
        with self._lock:
            self._crd = True  # a PodGroup arrived: the CRD is served
            try:
                group = parse_pod_group(obj)
            except ModelError as exc:
                log.warning("ignoring unreadable PodGroup", podgroup=key, error=str(exc))
                if self._groups.pop(key, None) is not None:
                    self._cache.remove_pod_group(key)
                self._unreadable[key] = str(exc)
            else:
                self._unreadable.pop(key, None)
                old = self._groups.get(key)
                self._groups[key] = group
                if old is not None and old == group:
                    return
                self._cache.set_pod_group(group)
            state = self._gangs.get(key)
            if state is not None:
                self._sync(state, moved=True)

    def group_deleted(self, obj: JSON) -> None:
        key = object_key(obj)
        with self._lock:
            self._groups.pop(key, None)
            self._unreadable.pop(key, None)
            self._cache.remove_pod_group(key)
            self._status.forget(key)
            state = self._gangs.get(key)
            if state is not None:
                state.condition = None
                self._sync(state, moved=True)

    # ------------------------------------------------------------------ pods (informer side)

    def offer(self, pod: Pod, created: str) -> bool:
        """A pending pod of ours: True when it is a gang member (the coordinator owns it now,
        the caller must not queue it)."""
        gang = pod_group_key(pod)
        if gang is None:
            self.removed(pod.key)  # its label was removed: a plain pod from now on
            return False
        with self._lock:
            self._leave_other_gang(pod.key, gang)
            state = self._gangs.setdefault(gang, _GangState(gang))
            self._gang_of[pod.key] = gang
            state.assigned.discard(pod.key)
            old = state.pending.get(pod.key)
            state.pending[pod.key] = (pod, created)
            if pod.key == state.rep:
                self._queue.update(pod, created)  # the queue tracks the rep's spec itself
            changed = old is None or spec_changed(old[0], pod)
            self._sync(state, moved=changed and pod.key != state.rep)
        return True

    def assigned(self, pod: Pod) -> None:
        """A pod on a node (bound by us or anyone): a placed member of its gang, if any."""
        gang = pod_group_key(pod)
        with self._lock:
            if gang is None:
                self._remove_locked(pod.key)
                return
            self._leave_other_gang(pod.key, gang)
            state = self._gangs.setdefault(gang, _GangState(gang))
            self._gang_of[pod.key] = gang
            state.pending.pop(pod.key, None)
            if state.rep == pod.key:
                state.rep = None  # the queue dropped it (the caller deletes it there)
            known = pod.key in state.assigned
            state.assigned.add(pod.key)
            self._sync(state, moved=not known)

    def removed(self, key: str) -> None:
        """A pod left (deleted, finished, being deleted, or no longer ours)."""
        with self._lock:
            self._remove_locked(key)

    def _remove_locked(self, key: str) -> None:
        gang = self._gang_of.pop(key, None)
        if gang is None:
            return
        state = self._gangs.get(gang)
        if state is None:
            return
        state.pending.pop(key, None)
        state.assigned.discard(key)
        if state.rep == key:
            state.rep = None  # the caller removed it from the queue
        self._sync(state, moved=True)

    def _leave_other_gang(self, key: str, gang: str) -> None:
        previous = self._gang_of.get(key)
        if previous is not None and previous != gang:
            self._remove_locked(key)

    # ------------------------------------------------------------------ gating

    def _verdict(self, state: _GangState) -> tuple[bool, str, bool]:
        """(ready, why not, report at once)."""
        key = state.key
        if self._crd is False:
            return False, crd_missing_message(key), True
        if key in self._unreadable:
            return False, unreadable_message(key, self._unreadable[key]), False
        group = self._groups.get(key)
        if group is None:
            return False, not_found_message(key), False
        known = len(state.pending) + len(state.assigned)
        if known < group.min_member:
            return False, too_few_message(key, group.min_member), False
        return True, "", False

    def _unassumed(self, state: _GangState) -> list[tuple[Pod, str]]:
        return sorted(
            (entry for k, entry in state.pending.items() if not self._cache.is_assumed(k)),
            key=_by_queue_order,
        )

    def _sync(
        self, state: _GangState, *, moved: bool, backoff_from: QueuedPod | None = None
    ) -> None:
        """Bring the queue in line with the gang: its representative queued iff it is ready
        and has members to place. ``moved``: the gang changed, so a parked representative is
        worth another attempt. ``backoff_from``: a new representative inherits this one's
        attempts and waits its backoff."""
        rep_where = self._queue.where(state.rep) if state.rep is not None else None
        if state.rep is not None and rep_where is None:
            state.rep = None
        waiting = self._unassumed(state)
        if not waiting:
            if state.rep is not None and rep_where != IN_FLIGHT:
                self._queue.delete(state.rep)
                state.rep = None
            state.waiting_since = None
            state.reason, state.gated, state.immediate, state.reported = "", False, False, None
            if not state.pending and not state.assigned and state.rep is None:
                self._gangs.pop(state.key, None)
            return
        if state.waiting_since is None:
            state.waiting_since = self._clock()
        ready, reason, immediate = self._verdict(state)
        if not ready:
            state.reason, state.gated, state.immediate = reason, True, immediate
            if state.rep is not None and rep_where != IN_FLIGHT:
                self._queue.delete(state.rep)
                state.rep = None
            return
        if state.gated:
            state.reason, state.gated, state.immediate = "", False, False  # no longer holds
        if state.rep is not None:
            if moved and rep_where in (UNSCHEDULABLE, IN_FLIGHT):
                # Parked: back to the queue. In flight: marks the move, so that an attempt
                # failing on the old membership backs off instead of parking (kube's rule).
                rep = state.rep
                self._queue.move_all(GANG_CHANGE, lambda p: p.key == rep)
            return
        if state.attempting:
            return  # the attempt in progress queues the gang again when it ends
        pod, created = waiting[0]
        state.rep = pod.key
        if backoff_from is not None:
            self._queue.add_backoff(QueuedPod(pod, created, attempts=backoff_from.attempts))
        else:
            self._queue.update(pod, created)

    # ------------------------------------------------------------------ the attempt (loop)

    def schedule(self, item: QueuedPod) -> None:
        """One scheduling attempt for the gang ``item`` stands for."""
        start = time.perf_counter()
        gang_key = pod_group_key(item.pod) or ""
        with self._lock:
            state = self._gangs.get(gang_key)
            if state is None or state.rep != item.key:
                # Stale: the gang changed while this entry waited; its current rep stands.
                self._queue.done(item.key)
                return
            ready, reason, immediate = self._verdict(state)
            if not ready:
                self._queue.done(item.key)
                state.rep = None
                state.reason, state.gated, state.immediate = reason, True, immediate
                return
            group = self._groups[gang_key]
            members = [pod for pod, _ in self._unassumed(state)]
            if not members:
                self._queue.done(item.key)
                state.rep = None
                self._sync(state, moved=False)
                return
            state.attempting = True
        try:
            program = self._program_source()
            snapshot = self._cache.snapshot()
            placed = placed_members(snapshot, frozenset({gang_key})).get(gang_key, [])
            gang = Gang(
                gang_key,
                group.min_member,
                group.schedule_timeout_seconds,
                tuple(members),
                tuple(placed),
                min_resources=group.min_resources,
            )
            decision = schedule_gang(
                program,
                gang,
                snapshot,
                self._rng,
                CycleOptions(
                    all_filters=False,
                    scheduler_name=item.pod.scheduler_name,
                    cache=self._classes,
                ),
                self._topology,
            )
        except Exception:
            log.exception("gang scheduling cycle failed", gang=gang_key)
            with self._lock:
                state.attempting = False
            self._queue.add_backoff(item)
            self._call(self._hooks.on_gang_attempt, ERROR, time.perf_counter() - start)
            return
        self._call(self._hooks.on_stage, "filter_score", time.perf_counter() - start)
        placed_now = any(d.node is not None for d in decision.placements)
        if not decision.scheduled or not placed_now:
            # Not scheduled, or scheduled only by members placed before while none of the
            # waiting ones fits: they wait, with the first member's reason.
            reason = decision.message
            if decision.scheduled:
                reason = next((d.message for d in decision.placements if d.message), reason)
            retry = False
            if not decision.scheduled and self._preempt is not None:
                try:
                    preempted, retry = self._preempt(
                        program, gang, snapshot, item.pod.scheduler_name
                    )
                except Exception:
                    log.exception("gang preemption failed", gang=gang_key)
                    preempted = None
                if preempted:
                    reason = f"{reason} preemption: {preempted}"
            with self._lock:
                state.reason, state.gated, state.immediate = reason, False, False
                state.policy = decision.policy
                state.attempting = False
            if retry:  # a victim the API server would not let go: try again after the backoff
                self._queue.add_backoff(item)
            else:
                self._queue.add_unschedulable(item)
            log.info("unable to schedule gang; waiting", gang=gang_key, reason=reason)
            self._call(
                self._hooks.on_gang_attempt, UNSCHEDULABLE_RESULT, time.perf_counter() - start
            )
            return
        self._assume_and_bind(item, decision, members, program.version, start)

    def _assume_and_bind(
        self,
        item: QueuedPod,
        decision: GangDecision,
        members: list[Pod],
        version: str,
        start: float,
    ) -> None:
        by_key = {pod.key: pod for pod in members}
        placements = [(by_key[d.pod], d) for d in decision.placements if d.node is not None]
        assumed: list[str] = []
        try:
            for pod, d in placements:
                assert d.node is not None
                # The GPU devices chosen travel with the assumption and the bind, as for a
                # single pod (scheduler.py).
                self._cache.assume(with_devices(pod, d.node, d.gpu_devices), d.node)
                assumed.append(pod.key)
        except AssumeError as exc:
            for key in assumed:
                self._cache.forget(key)
            log.info("could not assume gang", gang=decision.gang, error=str(exc))
            self._end_attempt(decision.gang)
            self._queue.add_backoff(item)
            self._call(self._hooks.on_gang_attempt, ERROR, time.perf_counter() - start)
            return
        log.info(
            "gang placed; binding",
            gang=decision.gang,
            members=len(placements),
            domain="/".join(decision.domain) if decision.domain else None,
            policy=decision.policy,
            version=version,
        )
        bind = _GangBind(item, decision, version, start, expected=len(placements))
        now = int(time.time())
        for pod, d in placements:
            assert d.node is not None
            callback = functools.partial(self._bound, bind)
            devices = gpu_annotations(d.gpu_devices, d.node, now)
            if d.volumes and self._bind_volumes is not None:
                then = functools.partial(self._volumes_bound, pod, d.node, callback, devices)
                if not self._bind_volumes(pod, d.node, d.volumes, then):
                    then("the volume binder refused")
                continue
            if not self._binder.bind(pod, d.node, callback, devices):
                callback(BindResult(pod, d.node, BindOutcome.FAILED, None, "binder refused", 0.0))

    def _volumes_bound(
        self,
        pod: Pod,
        node: str,
        callback: Callable[[BindResult], None],
        devices: Mapping[str, str],
        error: str | None,
    ) -> None:
        """A member's claims are bound (``error`` None): bind it; else it failed to bind."""
        if error is not None:
            callback(BindResult(pod, node, BindOutcome.FAILED, None, error, 0.0))
        elif not self._binder.bind(pod, node, callback, devices):
            callback(BindResult(pod, node, BindOutcome.FAILED, None, "binder refused", 0.0))

    def _end_attempt(self, gang: str) -> None:
        with self._lock:
            state = self._gangs.get(gang)
            if state is not None:
                state.attempting = False

    # ------------------------------------------------------------------ bind results

    def _bound(self, bind: _GangBind, result: BindResult) -> None:
        settle_bind(
            result,
            cache=self._cache,
            events=self._events,
            hooks=self._hooks,
            policy=bind.decision.policy,
            version=bind.version,
            started=bind.start,
            subject="gang member",
            gang=bind.decision.gang,
        )
        with bind.lock:
            bind.results.append(result)
            finished = len(bind.results) == bind.expected
        if finished:
            self._finish(bind)

    def _finish(self, bind: _GangBind) -> None:
        item = bind.item
        key = bind.decision.gang
        failed = [r for r in bind.results if r.outcome is BindOutcome.FAILED]
        took = [r.pod.key for r in bind.results if r.outcome is not BindOutcome.FAILED]
        seconds = time.perf_counter() - bind.start
        self._call(self._hooks.on_gang_attempt, BIND_FAILED if failed else SCHEDULED, seconds)
        with self._lock:
            state = self._gangs.get(key)
            if state is not None:
                state.attempting = False
            rep_placed = item.key in took
            if failed and not rep_placed:
                self._queue.add_backoff(item)  # stays the representative, retried later
                return
            self._queue.done(item.key)
            if state is None:
                return
            if state.rep == item.key:
                state.rep = None
            if not failed:
                # Placed: members still waiting are late ones, with a clock of their own.
                state.reason, state.reported, state.waiting_since = "", None, None
            self._sync(state, moved=False, backoff_from=item if failed else None)
            if not failed:
                self._write_status(state, scheduled=True, message=bind.decision.message)

    # ------------------------------------------------------------------ reports (housekeeping)

    def housekeeping(self) -> None:
        """Report the gangs whose timeout passed (each reason once)."""
        now = self._clock()
        reports: list[tuple[_GangState, str, list[Pod], str]] = []
        with self._lock:
            for state in self._gangs.values():
                if state.waiting_since is None or not state.reason:
                    continue
                group = self._groups.get(state.key)
                timeout = (
                    float(group.schedule_timeout_seconds)
                    if group is not None and group.schedule_timeout_seconds is not None
                    else self._default_timeout
                )
                if state.immediate:
                    message, why = state.reason, REPORT_CRD_MISSING
                elif now >= state.waiting_since + timeout:
                    message, why = timeout_message(state.reason, timeout), REPORT_TIMEOUT
                else:
                    continue
                members = [pod for pod, _ in self._unassumed(state)]
                if message != state.reported:
                    state.reported, state.reported_to = message, set()
                    if why == REPORT_TIMEOUT and group is not None:
                        self._write_status(state, scheduled=False, message=message)
                    self._call(self._hooks.on_gang_report, why)
                    log.info("gang not placed; reporting", gang=state.key, reason=message)
                # Members that arrived after the report get the same text.
                members = [pod for pod in members if pod.key not in state.reported_to]
                state.reported_to.update(pod.key for pod in members)
                if members:
                    reports.append((state, message, members, why))
            waiting = sum(1 for s in self._gangs.values() if s.waiting_since is not None)
        self._call(self._hooks.on_gangs_waiting, waiting)
        if not reports:
            return
        program = self._program_source()
        for state, message, members, _ in reports:
            policy = state.policy or self._policy_of(program, members[0])
            for pod in members:
                self._events.failed_scheduling(
                    pod,
                    pod.scheduler_name,
                    message,
                    policy,
                    program.version,
                    current_condition=_pod_scheduled_condition(self._raw_pod(pod.key)),
                )

    def _policy_of(self, program: Program, pod: Pod) -> str | None:
        """The policy that governs the gang's members (no attempt named it yet)."""
        try:
            view = PodView(pod)
            context = CycleContext(self._cache.snapshot(), view, topology=self._topology)
            policy = governing_policy(program, view, context, profile_for(program, pod))
        except Exception:  # a report must not fail on a rule's error
            log.exception("could not find the governing policy", pod=pod.key)
            return None
        return policy.name if policy is not None else None

    def _write_status(self, state: _GangState, *, scheduled: bool, message: str) -> None:
        """The PodGroup's status as the scheduler sees it (locked)."""
        namespace, _, name = state.key.partition("/")
        if self._crd is False or state.key not in self._groups:
            return
        count = len(
            placed_members(self._cache.snapshot(), frozenset({state.key})).get(state.key, [])
        )
        status_text = "True" if scheduled else "False"
        if state.condition is None or state.condition[0] != status_text:
            state.condition = (status_text, _now_text())
        condition = {
            "type": "Scheduled",
            "status": status_text,
            "reason": "Scheduled" if scheduled else "Unschedulable",
            "message": message,
            "lastTransitionTime": state.condition[1],
        }
        self._status.patch(
            namespace,
            name,
            {
                "phase": "Scheduled" if scheduled else "Pending",
                "scheduled": count,
                "conditions": [condition],
            },
        )

    _call = staticmethod(call_hook)


def _pod_scheduled_condition(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if not obj:
        return None
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == "PodScheduled":
            return condition
    return None
