"""Prometheus metrics of the running scheduler, fed by the scheduler's hooks.

Operators need to see whether pods are being placed, how long it takes and where it queues,
without reading logs. The collectors live in their own ``CollectorRegistry`` (not the global
one) so that tests and several schedulers in one process do not share counts, and
``/metrics`` shows exactly these plus nothing the client library adds by default.

| metric | type | labels | meaning |
|---|---|---|---|
| ``policyengine_schedule_attempts_total`` | counter | result, profile | attempts by result (scheduled, unschedulable, error) |
| ``policyengine_scheduling_attempt_duration_seconds`` | histogram | result, profile | one attempt, end to end (kube-scheduler's scheduling_attempt_duration_seconds) |
| ``policyengine_scheduling_stage_duration_seconds`` | histogram | stage | one stage of an attempt (filter, score, select, bind, …) |
| ``policyengine_scheduling_cycle_cpu_seconds_total`` | counter | | CPU time of the loop's thread in scheduling cycles (filter, score, select): beside the process's CPU time, what the loop spends outside them (watches, queue, binding, events) |
| ``policyengine_preemption_attempts_total`` | counter | preemptor, result | preemption tried for a pod or gang (``preemptor``) that fits nowhere: preempted, unhelpful (no candidate, or not eligible), waiting (its earlier victims are still going) — kube-scheduler's preemption_attempts_total |
| ``policyengine_preemption_victims`` | histogram | preemptor | pods evicted by one preemption (kube-scheduler's preemption_victims) |
| ``policyengine_pending_pods`` | gauge | queue | pods waiting, by sub-queue (active, backoff, unschedulable, gated) |
| ``policyengine_binds_in_flight`` | gauge | | binds sent and not yet answered |
| ``policyengine_policy_info`` | gauge (1) | policy, version | the policies loaded and the version of the program |
| ``policyengine_leader`` | gauge (0/1) | | whether this replica holds the lease and schedules |
| ``policyengine_gang_attempts_total`` | counter | result | gang attempts by result (scheduled, unschedulable, bind_failed, error) |
| ``policyengine_gang_reports_total`` | counter | reason | gangs reported as not placed (timeout, crd_missing) |
| ``policyengine_gangs_waiting`` | gauge | | gangs with members waiting to be placed |
| ``policyengine_policy_reload_total`` | counter | result | new policy versions accepted or rejected by hot reload |
| ``policyengine_policy_stale_seconds`` | gauge | | how long the policy source has differed from the active version (0 in step) |
| ``policyengine_policy_active_since_timestamp_seconds`` | gauge | | when the active version took effect (Unix time) |

The last three exist only once hot reload is wired (``track_policy``, as ``policyengine run``
does). The histograms use kube-scheduler's buckets: 1 ms doubling to 16 s for an attempt, 0.1 ms
doubling to 0.2 s for a stage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from policyengine.controller.hooks import SchedulerHooks

ATTEMPT_BUCKETS = tuple(0.001 * 2**i for i in range(15))
STAGE_BUCKETS = tuple(0.0001 * 2**i for i in range(12))
VICTIM_BUCKETS = tuple(float(2**i) for i in range(10))  # 1 to 512 pods
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The scheduler's collectors, in a registry of their own."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.attempts = Counter(
            "policyengine_schedule_attempts",
            "Scheduling attempts, by result (scheduled, unschedulable, error) and profile.",
            ("result", "profile"),
            registry=self.registry,
        )
        self.attempt_duration = Histogram(
            "policyengine_scheduling_attempt_duration_seconds",
            "Duration of one scheduling attempt, end to end, in seconds.",
            ("result", "profile"),
            buckets=ATTEMPT_BUCKETS,
            registry=self.registry,
        )
        self.stage_duration = Histogram(
            "policyengine_scheduling_stage_duration_seconds",
            "Duration of one stage of a scheduling attempt, in seconds.",
            ("stage",),
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.cycle_cpu = Counter(
            "policyengine_scheduling_cycle_cpu_seconds",
            "CPU time of the scheduling loop's thread in scheduling cycles, in seconds.",
            registry=self.registry,
        )
        self.pending = Gauge(
            "policyengine_pending_pods",
            "Pods waiting to be scheduled, by sub-queue.",
            ("queue",),
            registry=self.registry,
        )
        self.binds_in_flight = Gauge(
            "policyengine_binds_in_flight",
            "Binding requests sent and not yet answered.",
            registry=self.registry,
        )
        self.policy_info = Gauge(
            "policyengine_policy_info",
            "The loaded policies (value 1) and the version of the compiled program.",
            ("policy", "version"),
            registry=self.registry,
        )
        self.leader = Gauge(
            "policyengine_leader",
            "1 while this replica holds the lease and schedules, else 0.",
            registry=self.registry,
        )
        self.gang_attempts = Counter(
            "policyengine_gang_attempts",
            "Gang scheduling attempts, by result (scheduled, unschedulable, bind_failed, error).",
            ("result",),
            registry=self.registry,
        )
        self.gang_reports = Counter(
            "policyengine_gang_reports",
            "Gangs reported as not placed (events and PodGroup status), by reason "
            "(timeout, crd_missing).",
            ("reason",),
            registry=self.registry,
        )
        self.preemption_attempts = Counter(
            "policyengine_preemption_attempts",
            "Preemption tried for a pod or gang that fits nowhere, by preemptor (pod, gang) and "
            "result (preempted, unhelpful, waiting).",
            ("preemptor", "result"),
            registry=self.registry,
        )
        self.preemption_victims = Histogram(
            "policyengine_preemption_victims",
            "Pods evicted by one preemption, by preemptor (pod, gang).",
            ("preemptor",),
            buckets=VICTIM_BUCKETS,
            registry=self.registry,
        )
        self.gangs_waiting = Gauge(
            "policyengine_gangs_waiting",
            "Gangs (PodGroups) with members waiting to be placed.",
            registry=self.registry,
        )
        # Hot reload's collectors exist once a reloader is wired (``track_policy``).
        self.policy_reloads: Counter | None = None
        self.policy_stale: Gauge | None = None
        self.policy_active_since: Gauge | None = None
        self._reload_lock = threading.Lock()
        self._queues: set[str] = set()
        # Labelled children of the per-pod collectors (never removed, so safe to keep).
        self._attempt_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._stage_children: dict[str, Any] = {}

    # --- what the scheduler reports ----------------------------------------------------------

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        children = self._attempt_children.get((result, profile))
        if children is None:
            # ``labels()`` validates and locks on every call; a pod's hooks call it three
            # times, so the few (result, profile) children are looked up once and kept.
            children = (
                self.attempts.labels(result=result, profile=profile),
                self.attempt_duration.labels(result=result, profile=profile),
            )
            self._attempt_children[(result, profile)] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_stage(self, stage: str, seconds: float) -> None:
        child = self._stage_children.get(stage)
        if child is None:
            child = self._stage_children[stage] = self.stage_duration.labels(stage=stage)
        child.observe(seconds)

    def set_queue_depths(self, depths: Mapping[str, int]) -> None:
        # A sub-queue missing from a report is empty now; leaving its last value would lie.
        for queue in self._queues - set(depths):
            self.pending.labels(queue=queue).set(0)
        for queue, depth in depths.items():
            self.pending.labels(queue=queue).set(depth)
        self._queues |= set(depths)

    def set_binds_in_flight(self, in_flight: int) -> None:
        self.binds_in_flight.set(in_flight)

    def observe_gang_attempt(self, result: str, seconds: float) -> None:
        self.gang_attempts.labels(result=result).inc()

    def observe_gang_report(self, reason: str) -> None:
        self.gang_reports.labels(reason=reason).inc()

    def set_gangs_waiting(self, count: int) -> None:
        self.gangs_waiting.set(count)

    def observe_preemption(self, preemptor: str, result: str, victims: int) -> None:
        self.preemption_attempts.labels(preemptor=preemptor, result=result).inc()
        if result == "preempted":
            self.preemption_victims.labels(preemptor=preemptor).observe(victims)

    def hooks(self) -> SchedulerHooks:
        """``SchedulerHooks`` that feed these collectors."""
        return SchedulerHooks(
            on_attempt=self.observe_attempt,
            on_stage=self.observe_stage,
            on_cycle_cpu=self.cycle_cpu.inc,
            on_queue=self.set_queue_depths,
            on_bind=self.set_binds_in_flight,
            on_gang_attempt=self.observe_gang_attempt,
            on_gang_report=self.observe_gang_report,
            on_gangs_waiting=self.set_gangs_waiting,
            on_preemption=self.observe_preemption,
        )

    # --- what the process reports ------------------------------------------------------------

    def set_policy(self, policies: Iterable[str], version: str) -> None:
        """One ``policyengine_policy_info`` series per loaded policy (replacing the old ones)."""
        self.policy_info.clear()
        for name in policies:
            self.policy_info.labels(policy=name, version=version).set(1)

    def observe_reload(self, result: str) -> None:
        """A new policy version was accepted or rejected by hot reload."""
        reloads, _, _ = self._reload_collectors()
        reloads.labels(result=result).inc()

    def track_policy(
        self, stale_seconds: Callable[[], float], active_since: Callable[[], float | None]
    ) -> None:
        """Expose hot reload's metrics; staleness and activation time are read at scrape
        time, so they never lag."""
        _, stale, since = self._reload_collectors()
        stale.set_function(stale_seconds)
        since.set_function(lambda: active_since() or 0.0)

    def _reload_collectors(self) -> tuple[Counter, Gauge, Gauge]:
        with self._reload_lock:
            if self.policy_reloads is None:
                self.policy_reloads = Counter(
                    "policyengine_policy_reload",
                    "New policy versions seen by hot reload, by result (accepted, rejected).",
                    ("result",),
                    registry=self.registry,
                )
                for result in ("accepted", "rejected"):
                    self.policy_reloads.labels(result=result)  # shown at 0 from the start
                self.policy_stale = Gauge(
                    "policyengine_policy_stale_seconds",
                    "Seconds since the policy source stopped matching the active version "
                    "(a rejected or missing version); 0 while they match.",
                    registry=self.registry,
                )
                self.policy_active_since = Gauge(
                    "policyengine_policy_active_since_timestamp_seconds",
                    "When the active policy version took effect, in Unix time.",
                    registry=self.registry,
                )
            assert self.policy_stale is not None and self.policy_active_since is not None
            return self.policy_reloads, self.policy_stale, self.policy_active_since

    def set_leader(self, leading: bool) -> None:
        self.leader.set(1 if leading else 0)

    def render(self) -> bytes:
        """The Prometheus text exposition of every collector."""
        return generate_latest(self.registry)
