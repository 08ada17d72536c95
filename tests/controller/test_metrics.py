"""``controller.metrics``: the collectors, their names and labels, and the scheduler hooks.

Values are read back from the metrics' own registry (and from the exposition text, as
Prometheus would parse it), so a renamed metric or label fails here before a dashboard breaks.
"""

from __future__ import annotations

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families

from policyengine.controller.hooks import SchedulerHooks
from policyengine.controller.metrics import ATTEMPT_BUCKETS, STAGE_BUCKETS, Metrics


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def families(metrics: Metrics) -> dict[str, str]:
    text = metrics.render().decode()
    return {family.name: family.type for family in text_string_to_metric_families(text)}


def test_every_metric_is_exposed_with_its_type(metrics: Metrics) -> None:
    assert families(metrics) == {
        "policyengine_schedule_attempts": "counter",
        "policyengine_scheduling_attempt_duration_seconds": "histogram",
        "policyengine_scheduling_stage_duration_seconds": "histogram",
        "policyengine_scheduling_cycle_cpu_seconds": "counter",
        # An unlabelled counter's creation time, which the client library always exposes.
        "policyengine_scheduling_cycle_cpu_seconds_created": "gauge",
        "policyengine_pending_pods": "gauge",
        "policyengine_binds_in_flight": "gauge",
        "policyengine_policy_info": "gauge",
        "policyengine_leader": "gauge",
        "policyengine_gang_attempts": "counter",
        "policyengine_gang_reports": "counter",
        "policyengine_gangs_waiting": "gauge",
        "policyengine_preemption_attempts": "counter",
        "policyengine_preemption_victims": "histogram",
    }


def test_preemption_attempts_and_victims_are_counted(metrics: Metrics) -> None:
    hooks = metrics.hooks()
    hooks.on_preemption("pod", "preempted", 3)
    hooks.on_preemption("pod", "waiting", 0)
    hooks.on_preemption("gang", "preempted", 16)
    hooks.on_preemption("gang", "unhelpful", 0)
    attempts = "policyengine_preemption_attempts_total"
    for preemptor, result in (("pod", "preempted"), ("pod", "waiting"), ("gang", "unhelpful")):
        assert value(metrics, attempts, preemptor=preemptor, result=result) == 1
    victims = "policyengine_preemption_victims"
    assert value(metrics, f"{victims}_sum", preemptor="pod") == 3
    assert value(metrics, f"{victims}_count", preemptor="gang") == 1
    assert value(metrics, f"{victims}_bucket", preemptor="gang", le="16.0") == 1
    assert value(metrics, f"{victims}_bucket", preemptor="gang", le="8.0") == 0


def test_hooks_feed_the_collectors(metrics: Metrics) -> None:
    hooks = metrics.hooks()
    assert isinstance(hooks, SchedulerHooks)
    hooks.on_attempt("scheduled", "policyengine", 0.003)
    hooks.on_attempt("scheduled", "policyengine", 0.2)
    hooks.on_attempt("unschedulable", "gpu", 0.01)
    hooks.on_stage("bind", 0.02)
    hooks.on_cycle_cpu(0.004)
    hooks.on_cycle_cpu(0.001)
    hooks.on_queue({"active": 3, "backoff": 1, "unschedulable": 2})
    hooks.on_bind(4)

    attempts = "policyengine_schedule_attempts_total"
    assert value(metrics, attempts, result="scheduled", profile="policyengine") == 2
    assert value(metrics, attempts, result="unschedulable", profile="gpu") == 1
    e2e = "policyengine_scheduling_attempt_duration_seconds"
    labels = {"result": "scheduled", "profile": "policyengine"}
    assert value(metrics, f"{e2e}_count", **labels) == 2
    assert value(metrics, f"{e2e}_sum", **labels) == pytest.approx(0.203)
    assert value(metrics, f"{e2e}_bucket", le="0.004", **labels) == 1
    stage = "policyengine_scheduling_stage_duration_seconds"
    assert value(metrics, f"{stage}_count", stage="bind") == 1
    assert value(metrics, "policyengine_scheduling_cycle_cpu_seconds_total") == pytest.approx(0.005)
    assert value(metrics, "policyengine_pending_pods", queue="active") == 3
    assert value(metrics, "policyengine_pending_pods", queue="unschedulable") == 2
    assert value(metrics, "policyengine_binds_in_flight") == 4


def test_gang_hooks_feed_the_gang_collectors(metrics: Metrics) -> None:
    hooks = metrics.hooks()
    hooks.on_gang_attempt("unschedulable", 0.01)
    hooks.on_gang_attempt("unschedulable", 0.01)
    hooks.on_gang_attempt("scheduled", 0.02)
    hooks.on_gang_report("timeout")
    hooks.on_gangs_waiting(3)
    attempts = "policyengine_gang_attempts_total"
    assert value(metrics, attempts, result="unschedulable") == 2
    assert value(metrics, attempts, result="scheduled") == 1
    assert value(metrics, "policyengine_gang_reports_total", reason="timeout") == 1
    assert value(metrics, "policyengine_gangs_waiting") == 3


def test_a_sub_queue_missing_from_a_report_reads_zero(metrics: Metrics) -> None:
    metrics.set_queue_depths({"active": 3, "gated": 2})
    metrics.set_queue_depths({"active": 1})
    assert value(metrics, "policyengine_pending_pods", queue="active") == 1
    assert value(metrics, "policyengine_pending_pods", queue="gated") == 0


def test_policy_info_is_replaced_on_reload(metrics: Metrics) -> None:
    metrics.set_policy(["kube-default", "gpu-binpack"], "aaa111")
    metrics.set_policy(["kube-default"], "bbb222")
    info = "policyengine_policy_info"
    assert value(metrics, info, policy="kube-default", version="bbb222") == 1
    assert value(metrics, info, policy="kube-default", version="aaa111") is None
    assert value(metrics, info, policy="gpu-binpack", version="aaa111") is None


def test_leader_gauge(metrics: Metrics) -> None:
    assert value(metrics, "policyengine_leader") == 0
    metrics.set_leader(True)
    assert value(metrics, "policyengine_leader") == 1
    metrics.set_leader(False)
    assert value(metrics, "policyengine_leader") == 0


def test_registries_are_separate(metrics: Metrics) -> None:
    other = Metrics()  # a second one in the same process must not clash
    metrics.set_leader(True)
    assert value(other, "policyengine_leader") == 0
    assert prometheus_client.REGISTRY.get_sample_value("policyengine_leader") is None
    assert "process_cpu_seconds_total" not in metrics.render().decode()


def test_buckets_are_kube_schedulers() -> None:
    assert ATTEMPT_BUCKETS[0] == 0.001 and len(ATTEMPT_BUCKETS) == 15
    assert ATTEMPT_BUCKETS[-1] == pytest.approx(16.384)
    assert STAGE_BUCKETS[0] == 0.0001 and len(STAGE_BUCKETS) == 12
