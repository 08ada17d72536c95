"""The gang coordinator without the loop: gating (which gang gets a queue entry, and which
member stands for it), membership changes, and the timeout report, driven by hand with a fake
clock. Events and PodGroup status go to the loopback server through the real client."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kubernetes import client

from loopback import LoopbackAPIServer
from policyengine.controller.binder import Binder
from policyengine.controller.cache import ClusterCache
from policyengine.controller.events import EventRecorder
from policyengine.controller.gangs import (
    GangCoordinator,
    crd_missing_message,
    not_found_message,
    timeout_message,
    too_few_message,
    unreadable_message,
)
from policyengine.controller.hooks import SchedulerHooks
from policyengine.controller.podgroups import PodGroupStatusWriter
from policyengine.controller.queue import ACTIVE, SchedulingQueue
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.model.objects import Pod
from policyengine.model.podgroup import POD_GROUP_LABEL
from tests.controller.builders import kube_default, node, pod, podgroup


def member(name: str, gang: str = "g", **kwargs: Any) -> Pod:
    return pod(name, labels={POD_GROUP_LABEL: gang}, **kwargs)  # type: ignore[no-any-return]


@dataclass
class Harness:
    server: LoopbackAPIServer
    api: Any
    cache: ClusterCache
    queue: SchedulingQueue
    events: EventRecorder
    status: PodGroupStatusWriter
    gangs: GangCoordinator
    now: list[float] = field(default_factory=lambda: [0.0])

    def offer(self, *pods: Pod) -> None:
        for p in pods:
            self.gangs.offer(p, p.creation_timestamp)


@pytest.fixture
def h(apiserver: LoopbackAPIServer) -> Iterator[Harness]:
    api = client.ApiClient(apiserver.client_configuration())
    cache, queue = ClusterCache(), SchedulingQueue()
    events, status = EventRecorder(api), PodGroupStatusWriter(api)
    binder = Binder(api)
    events.start()
    status.start()
    now = [0.0]
    program = kube_default()
    gangs = GangCoordinator(
        cache=cache,
        queue=queue,
        binder=binder,
        events=events,
        status=status,
        program_source=lambda: program,
        rng=random.Random(1),
        classes=ClassCache(),
        hooks=SchedulerHooks(),
        raw_pod=lambda key: None,
        default_timeout=60.0,
        clock=lambda: now[0],
    )
    yield Harness(apiserver, api, cache, queue, events, status, gangs, now)
    events.stop()
    status.stop()
    binder.shutdown(timeout=5)
    api.close()


@dataclass(frozen=True)
class GatingCase:
    name: str
    groups: tuple[dict[str, Any], ...]
    pending: tuple[Pod, ...]
    placed: tuple[Pod, ...] = ()
    crd: bool = True
    rep: str | None = None  # the member queued for the gang, None: gated
    reason: str = ""


GATING = [
    GatingCase(
        "no PodGroup (yet)",
        (),
        (member("a"), member("b")),
        reason=not_found_message("default/g"),
    ),
    GatingCase(
        "fewer pods than minMember",
        (podgroup("g", 3),),
        (member("a"), member("b")),
        reason=too_few_message("default/g", 3),
    ),
    GatingCase("minMember pods pending", (podgroup("g", 2),), (member("a"), member("b")), rep="a"),
    GatingCase(
        "placed members count",
        (podgroup("g", 2),),
        (member("b"),),
        placed=(member("a", node="n1"),),
        rep="b",
    ),
    GatingCase(
        "the highest priority stands for the gang",
        (podgroup("g", 2),),
        (member("a"), member("b", priority=10)),
        rep="b",
    ),
    GatingCase(
        "then the oldest",
        (podgroup("g", 2),),
        (member("a", created="2026-01-02T00:00:00Z"), member("b", created="2026-01-01T00:00:00Z")),
        rep="b",
    ),
    GatingCase(
        "no CRD",
        (),
        (member("a"),),
        crd=False,
        reason=crd_missing_message("default/g"),
    ),
    GatingCase(
        "an unreadable PodGroup",
        (podgroup("g", 0),),
        (member("a"),),
        reason=unreadable_message(
            "default/g", "PodGroup default/g: spec.minMember: must be at least 1, got 0"
        ),
    ),
]


@pytest.mark.parametrize("case", GATING, ids=lambda c: c.name)
def test_gating(h: Harness, case: GatingCase) -> None:
    h.cache.set_node(node("n1"))
    h.gangs.crd_changed(case.crd)
    for obj in case.groups:
        h.gangs.group_added(obj)
    for p in case.placed:
        h.cache.set_pod(p)
        h.gangs.assigned(p)
    h.offer(*case.pending)
    rep = h.gangs.representative("default/g")
    assert rep == (f"default/{case.rep}" if case.rep else None)
    assert len(h.queue) == (1 if case.rep else 0)  # one entry for the gang, never one per pod
    if rep is not None:
        assert h.queue.where(rep) == ACTIVE
    assert h.gangs.waiting() == {"default/g": case.reason}


def test_membership_changes_open_and_close_the_gate(h: Harness) -> None:
    h.gangs.crd_changed(True)
    h.offer(member("a"), member("b"))
    assert len(h.queue) == 0
    h.gangs.group_added(podgroup("g", 2))  # the PodGroup after its pods
    assert h.gangs.representative("default/g") == "default/a"
    h.gangs.removed("default/a")  # the caller took it out of the queue
    h.queue.delete("default/a")
    assert h.gangs.representative("default/g") is None and len(h.queue) == 0
    assert h.gangs.waiting() == {"default/g": too_few_message("default/g", 2)}
    h.offer(member("c"))
    assert h.gangs.representative("default/g") == "default/b" and len(h.queue) == 1
    h.gangs.group_deleted(podgroup("g", 2))
    assert len(h.queue) == 0
    assert h.gangs.waiting() == {"default/g": not_found_message("default/g")}


def test_the_timeout_is_reported_once_with_one_text_and_newcomers_get_it_too(h: Harness) -> None:
    h.gangs.crd_changed(True)
    h.server.create(podgroup("g", 4, timeout=5))
    h.gangs.group_added(podgroup("g", 4, timeout=5))
    h.offer(member("a"), member("b"))
    h.now[0] = 4.9
    h.gangs.housekeeping()
    assert h.events.flush()
    assert h.server.events(reason="FailedScheduling") == []
    h.now[0] = 5.0
    h.gangs.housekeeping()
    h.now[0] = 6.0
    h.gangs.housekeeping()  # nothing new to say
    h.offer(member("c"))  # arrives after the report: gets the same text
    h.gangs.housekeeping()
    assert h.events.flush() and h.status.flush()
    text = timeout_message(too_few_message("default/g", 4), 5)
    version = kube_default().version
    notes = sorted(
        (e["regarding"]["name"], e["note"]) for e in h.server.events(reason="FailedScheduling")
    )
    assert notes == [
        (name, f"{text} (policy kube-default version {version})") for name in ("a", "b", "c")
    ]
    patches = h.server.requests(verb="patch", resource="podgroups", subresource="status")
    assert len(patches) == 1
    stored = h.server.get("podgroups", "default", "g")
    assert stored is not None
    assert stored["status"]["phase"] == "Pending" and stored["status"]["scheduled"] == 0
    assert stored["status"]["conditions"][0]["message"] == text
