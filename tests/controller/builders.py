"""Builders and a harness for the controller tests.

The builders write API objects as a user would (dicts the loopback server stores and the
model parses); ``RunningScheduler`` runs a ``Scheduler`` on a thread against a loopback API
server and stops it at the end, so loop tests read as: seed, start, wait for a condition,
assert on what the server saw.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackAPIServer
from policyengine.controller.binder import BindResult
from policyengine.controller.hooks import SchedulerHooks
from policyengine.controller.informer import InformerOptions
from policyengine.controller.scheduler import Scheduler, SchedulerOptions
from policyengine.lang.cache import shared_cache
from policyengine.lang.compiler import Program, compile_texts
from policyengine.model.parse import parse_node, parse_pod
from policyengine.quantity import parse_quantity
from policyengine.schedlib import default_schema

ROOT = Path(__file__).resolve().parents[2]
KUBE_DEFAULT = ROOT / "policies" / "kube-default.sched"
SCHEDULER = "policyengine"

FAST_INFORMER = InformerOptions(
    watch_timeout=(3, 5), read_slack=5.0, backoff_initial=0.05, backoff_max=0.5
)
FAST = SchedulerOptions(
    informer=FAST_INFORMER,
    initial_backoff=0.2,
    max_backoff=1.0,
    housekeeping_interval=0.2,
    shutdown_timeout=10.0,
)


def node_obj(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_obj(
    name: str,
    *,
    namespace: str = "default",
    cpu: str = "100m",
    memory: str = "64Mi",
    scheduler: str = SCHEDULER,
    priority: int | None = None,
    node: str | None = None,
    labels: Mapping[str, str] | None = None,
    uid: str | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    if node is not None:
        spec["nodeName"] = node
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if uid is not None:
        metadata["uid"] = uid
    if created is not None:
        metadata["creationTimestamp"] = created
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def podgroup(name: str, min_member: int, timeout: int | None = None) -> dict[str, Any]:
    """A PodGroup in ``default`` as the API server stores it."""
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def scheduled_event(i: int) -> dict[str, Any]:
    """A ``Scheduled`` Event as the scheduler posts one, named by ``i``."""
    return {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": f"p.{i:x}", "namespace": "default"},
        "eventTime": "2026-12-02T12:48:10.898647Z",
        "reportingController": "policyengine",
        "reportingInstance": "policyengine-host",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1"},
        "note": "Successfully assigned default/p to n1",
        "type": "Normal",
    }


def node(name: str, **kwargs: Any):  # type: ignore[no-untyped-def]
    return parse_node(node_obj(name, **kwargs))


def pod(name: str, **kwargs: Any):  # type: ignore[no-untyped-def]
    return parse_pod(pod_obj(name, **kwargs))


def kube_default() -> Program:
    result = shared_cache.compile_paths([KUBE_DEFAULT], default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


def program_from(source: str) -> Program:
    result = compile_texts({"test.sched": source}, default_schema())
    assert result.program is not None, [str(d) for d in result.diagnostics]
    return result.program


def over_allocated(server: LoopbackAPIServer) -> dict[str, str]:
    """Nodes whose bound pods request more cpu or memory than the node has (pods left
    behind on a deleted node are not counted)."""
    nodes = {n["metadata"]["name"]: n for n in server.list("nodes")}
    used: dict[str, dict[str, Fraction]] = {name: {} for name in nodes}
    for p in server.list("pods"):
        where = p["spec"].get("nodeName")
        if where not in used:
            continue
        for c in p["spec"]["containers"]:
            for res, value in ((c.get("resources") or {}).get("requests") or {}).items():
                used[where][res] = used[where].get(res, Fraction(0)) + parse_quantity(value)
    out = {}
    for name, requested in used.items():
        alloc = nodes[name]["status"]["allocatable"]
        for res, value in requested.items():
            if value > parse_quantity(alloc[res]):
                out[name] = f"{res}: {value} > {alloc[res]}"
    return out


class Results:
    """A bind callback that collects the results and lets a test wait for them."""

    def __init__(self) -> None:
        self.items: list[BindResult] = []
        self.cond = threading.Condition()

    def __call__(self, result: BindResult) -> None:
        with self.cond:
            self.items.append(result)
            self.cond.notify_all()

    def wait(self, n: int, timeout: float = 5.0) -> list[BindResult]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.items) >= n, timeout)
            return list(self.items)


class RunningScheduler:
    """A ``Scheduler`` running ``run(stop)`` on a thread; ``stop()`` joins it."""

    def __init__(
        self,
        server: LoopbackAPIServer,
        program: Program | Callable[[], Program] | None = None,
        *,
        options: SchedulerOptions = FAST,
        hooks: SchedulerHooks | None = None,
        **kwargs: Any,
    ) -> None:
        config = server.client_configuration()
        config.connection_pool_maxsize = 32  # watches + volume binds + the tests' own requests
        from kubernetes import client

        self.api = client.ApiClient(config)
        program = program if program is not None else kube_default()
        source = program if callable(program) else (lambda: program)
        self.scheduler = Scheduler(
            self.api, source, seed=1, hooks=hooks, options=options, bind_connections=8, **kwargs
        )
        self.stop_event = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="scheduler-under-test", daemon=True)

    def _run(self) -> None:
        try:
            self.scheduler.run(self.stop_event)
        except BaseException as exc:  # surfaced by stop()
            self.errors.append(exc)

    def start(self) -> RunningScheduler:
        self.thread.start()
        return self

    def stop(self, timeout: float = 20.0) -> None:
        self.stop_event.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "scheduler did not stop"
        self.api.close()
        assert not self.errors, self.errors

    def __enter__(self) -> RunningScheduler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until(
    what: str,
    condition: Callable[[], Any],
    seen: Callable[[], Any] = lambda: None,
    timeout: float = 15.0,
) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` and what was ``seen`` if it
    never does within ``timeout`` seconds (an upper bound: no test asserts how long it took)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}; saw {seen()!r}")
