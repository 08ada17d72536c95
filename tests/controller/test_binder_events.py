"""The binder and the event recorder, each on its own against the loopback server."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackAPIServer
from policyengine.controller import events
from policyengine.controller.binder import Binder, BindOutcome, binding_body
from policyengine.controller.events import PRUNE_AT, EventRecorder
from policyengine.model.parse import parse_pod
from tests.controller.builders import Results, node_obj, pod, pod_obj

WIRE = Path(__file__).resolve().parents[1] / "data" / "k8s-wire"


def captured_bodies(prefix: str) -> list[dict[str, Any]]:
    """Bodies kube-scheduler sent, from the capture, for requests whose line starts so."""
    lines = (WIRE / "06-kube-scheduler-client-requests.txt").read_text().splitlines()
    return [json.loads(lines[i + 1]) for i, line in enumerate(lines) if line.startswith(prefix)]


def seeded_pod(server: LoopbackAPIServer, name: str, **kwargs: Any):  # type: ignore[no-untyped-def]
    return parse_pod(server.create(pod_obj(name, **kwargs)))


def test_binding_body_is_kube_schedulers() -> None:
    captured = captured_bodies("> POST /api/v1/namespaces/default/pods/pod-1/binding")[0]
    pod = parse_pod(
        pod_obj("pod-1", uid=captured["metadata"]["uid"]) | {"kind": "Pod", "apiVersion": "v1"}
    )
    assert binding_body(pod, "node-b") == captured


@pytest.mark.parametrize(
    ("fault", "outcome", "bound"),
    [
        (None, BindOutcome.BOUND, True),
        (409, BindOutcome.CONFLICT, False),
        (500, BindOutcome.FAILED, False),
        (429, BindOutcome.FAILED, False),
        (403, BindOutcome.FAILED, False),
    ],
    ids=["None", "409", "500", "429", "403"],
)
def test_bind_outcomes(
    apiserver: LoopbackAPIServer,
    kube_api_client: Any,
    fault: int | None,
    outcome: BindOutcome,
    bound: bool,
) -> None:
    apiserver.create(node_obj("n1"))
    pod = seeded_pod(apiserver, "p")
    if fault is not None:
        apiserver.fail_next(1, code=fault, subresource="binding")
    binder = Binder(kube_api_client)
    results = Results()
    assert binder.bind(pod, "n1", results)
    (result,) = results.wait(1)
    binder.shutdown()
    assert result.outcome is outcome
    assert result.status == (fault or 201)
    assert ("default/p" in apiserver.bound_nodes()) is bound
    sent = apiserver.binding_requests()[0].body
    assert sent["metadata"]["uid"] == pod.uid and sent["target"] == {"kind": "Node", "name": "n1"}


def test_never_two_binds_in_flight_for_one_pod(
    apiserver: LoopbackAPIServer, kube_api_client: Any
) -> None:
    apiserver.create(node_obj("n1"))
    pod = seeded_pod(apiserver, "p")
    apiserver.delay_binds(0.3)
    binder = Binder(kube_api_client)
    results = Results()
    assert binder.bind(pod, "n1", results)
    assert not binder.bind(pod, "n1", results)
    assert binder.shutdown(timeout=5)
    assert len(results.items) == 1 and len(apiserver.binding_requests()) == 1
    assert not binder.bind(pod, "n1", results)  # shut down


def test_events_and_condition(apiserver: LoopbackAPIServer, kube_api_client: Any) -> None:
    pod = seeded_pod(apiserver, "p")
    recorder = EventRecorder(kube_api_client, hostname="host")
    recorder.start()
    try:
        message = "0/3 nodes are available: 3 Insufficient cpu."
        recorder.failed_scheduling(pod, "sched", message, "pol", "v1")
        recorder.failed_scheduling(pod, "sched", message, "pol", "v1")  # de-duplicated
        recorder.scheduled(pod, "n1", "sched", "pol", "v1")
        assert recorder.flush()
    finally:
        recorder.stop()
    failed = apiserver.events(reason="FailedScheduling")
    assert len(failed) == 1
    event = failed[0]
    assert event["note"] == f"{message} (policy pol version v1)"
    assert (event["type"], event["action"]) == ("Warning", "Scheduling")
    assert (event["reportingController"], event["reportingInstance"]) == ("sched", "sched-host")
    assert event["regarding"]["uid"] == pod.uid and event["regarding"]["kind"] == "Pod"
    (scheduled,) = apiserver.events(reason="Scheduled")
    assert scheduled["note"] == "Successfully assigned default/p to n1 (policy pol version v1)"
    assert (scheduled["type"], scheduled["action"]) == ("Normal", "Binding")
    patches = apiserver.requests(name="p", subresource="status", method="PATCH")
    assert len(patches) == 1
    headers = {k.lower(): v for k, v in patches[0].headers.items()}
    assert headers["content-type"] == "application/strategic-merge-patch+json"
    (cond,) = apiserver.get("pods", "default", "p")["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == (
        "PodScheduled",
        "False",
        "Unschedulable",
        f"{message} (policy pol version v1)",
    )


SHOWN = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "m (policy p version v)",
}


@pytest.mark.parametrize(
    ("shown", "patched"),
    [
        (None, True),
        (SHOWN, False),
        ({**SHOWN, "message": "older"}, True),
        ({**SHOWN, "status": "True", "reason": ""}, True),
    ],
    ids=["none-shown", "same-shown", "older-message", "other-status"],
)
def test_condition_patched_only_when_it_changes(
    apiserver: LoopbackAPIServer, kube_api_client: Any, shown: dict | None, patched: bool
) -> None:
    pod = seeded_pod(apiserver, "p")
    recorder = EventRecorder(kube_api_client)
    recorder.start()
    recorder.failed_scheduling(pod, "s", "m", "p", "v", current_condition=shown)
    assert recorder.flush()
    recorder.stop()
    assert bool(apiserver.requests(subresource="status")) is patched


def test_dedup_window_expires(apiserver: LoopbackAPIServer, kube_api_client: Any) -> None:
    now = [0.0]
    pod = seeded_pod(apiserver, "p")
    recorder = EventRecorder(kube_api_client, dedup_window=60, clock=lambda: now[0])
    recorder.start()
    for t in (0.0, 30.0, 61.0):
        now[0] = t
        recorder.failed_scheduling(pod, "s", "m", "p", "v", patch_condition=False)
    assert recorder.flush()
    recorder.stop()
    assert len(apiserver.events(reason="FailedScheduling")) == 2


@pytest.mark.parametrize(
    ("steps", "remembered"),
    [
        # (clock, distinct pods) per step; how many keys stay remembered after each step
        ([(0.0, PRUNE_AT)], [PRUNE_AT]),  # at the limit: nothing dropped
        ([(0.0, PRUNE_AT), (1.0, 1)], [PRUNE_AT, PRUNE_AT + 1]),  # all live: all kept
        ([(0.0, PRUNE_AT), (1.0, 2), (2.0, PRUNE_AT)], [PRUNE_AT, PRUNE_AT + 2, 2 * PRUNE_AT + 2]),
        ([(0.0, PRUNE_AT), (61.0, 1)], [PRUNE_AT, 1]),  # the expired ones go
        # expired keys wait for the doubled limit: then only the live ones stay
        ([(0.0, PRUNE_AT), (1.0, 1), (62.0, PRUNE_AT + 2)], [PRUNE_AT, PRUNE_AT + 1, PRUNE_AT + 2]),
    ],
    ids=[
        "at-the-limit",
        "all-live",
        "over-the-limit-all-live",
        "expired-go",
        "expired-wait-for-doubled-limit",
    ],
)
def test_remembered_events_are_pruned_by_halves(
    kube_api_client: Any, steps: list[tuple[float, int]], remembered: list[int]
) -> None:
    # Never started: the posts stay queued. Once over the limit with every key still inside
    # the window, the map is kept (not copied again on each event) until it has doubled.
    now = [0.0]
    recorder = EventRecorder(kube_api_client, dedup_window=60, clock=lambda: now[0])
    pods = iter(range(10**6))
    seen = []
    for (clock, count), expected in zip(steps, remembered, strict=True):
        now[0] = clock
        before = recorder._recent
        for i in itertools.islice(pods, count):
            recorder.failed_scheduling(pod(f"p{i}"), "s", "m", "p", "v", patch_condition=False)
        seen.append(len(recorder._recent))
        assert seen[-1] == expected
        if len(before) > PRUNE_AT and expected == len(before) + count:
            assert recorder._recent is before  # not copied while it grows to double
    # Every event still inside the window is suppressed when repeated.
    posted = recorder.suppressed
    recorder.failed_scheduling(pod("p0"), "s", "m", "p", "v", patch_condition=False)
    assert recorder.suppressed == posted + (now[0] - steps[0][0] < 60)


# Times an Event carries, as the API's MicroTime and Time print them.
TIMES = {
    "a whole second": (
        dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "2026-01-02T03:04:05.000000Z",
    ),
    "microseconds": (
        dt.datetime(2026, 12, 31, 23, 59, 59, 7, tzinfo=dt.UTC),
        "2026-12-31T23:59:59.000007Z",
    ),
}


@pytest.mark.parametrize(("now", "micro"), TIMES.values(), ids=TIMES)
def test_event_times_print_as_the_api_prints_them(now: dt.datetime, micro: str) -> None:
    assert events._event_time(now) == micro == now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert events._timestamp(now) == micro[:19] + "Z" == now.strftime("%Y-%m-%dT%H:%M:%SZ")
