"""What each bind result does to the assume cache, the Events and the hooks, the same for a pod
placed alone and for a gang member (``controller/bindresults.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from loopback import LoopbackAPIServer
from policyengine.controller.binder import BindOutcome, BindResult
from policyengine.controller.bindresults import settle_bind
from policyengine.controller.cache import ClusterCache
from policyengine.controller.events import EventRecorder
from policyengine.controller.hooks import SchedulerHooks
from policyengine.model.parse import parse_node, parse_pod
from tests.controller.builders import node_obj, pod_obj


@pytest.mark.parametrize("subject", ["pod", "gang member"])
@pytest.mark.parametrize(
    ("outcome", "still_assumed", "event", "attempt"),
    [
        (BindOutcome.BOUND, True, "Scheduled", "scheduled"),
        (BindOutcome.CONFLICT, True, None, "error"),
        (BindOutcome.FAILED, False, "FailedScheduling", "error"),
    ],
    ids=["bound", "conflict", "failed"],
)
def test_a_bind_result_settles_alike_for_pods_and_members(
    apiserver: LoopbackAPIServer,
    kube_api_client: Any,
    subject: str,
    outcome: BindOutcome,
    still_assumed: bool,
    event: str | None,
    attempt: str,
) -> None:
    pod = parse_pod(apiserver.create(pod_obj("p")))
    cache = ClusterCache()
    cache.set_node(parse_node(node_obj("n1")))
    cache.assume(pod, "n1")
    attempts: list[str] = []
    stages: list[str] = []
    hooks = SchedulerHooks(
        on_attempt=lambda result, _profile, _seconds: attempts.append(result),
        on_stage=lambda stage, _seconds: stages.append(stage),
    )
    events = EventRecorder(kube_api_client, hostname="host")
    events.start()
    try:
        settle_bind(
            BindResult(pod, "n1", outcome, 500, "boom", 0.01),
            cache=cache,
            events=events,
            hooks=hooks,
            policy="pol",
            version="v1",
            started=0.0,
            subject=subject,
        )
        assert events.flush()
    finally:
        events.stop()
    assert cache.is_assumed(pod.key) is still_assumed
    assert (attempts, stages) == ([attempt], ["bind"])
    reasons = [e["reason"] for e in apiserver.events()]
    assert reasons == ([event] if event else [])
