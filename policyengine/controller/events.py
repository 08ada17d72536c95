"""What users see of a scheduling decision: Events and the pod's ``PodScheduled`` condition.

``kubectl describe pod`` is where an operator looks first; it must say where the pod went or
why it is still pending, and which policy (and version) decided. kube-scheduler's feedback is
reproduced as its v1.28 client sends it (``k8s-wire/06-kube-scheduler-client-requests.txt``):

* ``Scheduled`` (Normal, action ``Binding``): ``Successfully assigned NS/NAME to NODE``;
* ``FailedScheduling`` (Warning, action ``Scheduling``): the reason histogram line;
* both through ``events.k8s.io/v1`` with ``reportingController`` = the scheduler name and
  ``reportingInstance`` = ``NAME-HOSTNAME``, each message followed by
  ``(policy P version V)``;
* on failure the pod's ``PodScheduled`` condition set to ``False``/``Unschedulable`` with the
  same message, by a strategic-merge PATCH of the ``status`` subresource — only when the
  message differs from what the pod already shows.

De-duplication: a pending pod is retried on every cluster event, and each retry would
otherwise post the same warning. The same (pod, reason, message) is posted at most once per
window (10 minutes by default). Everything is posted through an outbox (``outbox``): the
scheduler's, which its loop pumps between cycles, or one of the recorder's own on a thread of
its own; so the scheduling loop never waits on the API server. Failures are logged and
dropped (events are best effort).
"""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client as k8s

from policyengine.controller.logs import get_logger
from policyengine.controller.outbox import Answer, Outbox
from policyengine.controller.rawapi import RawAPI
from policyengine.model.objects import Pod

log = get_logger(__name__)

DEFAULT_DEDUP_WINDOW = 600.0
PRUNE_AT = 10_000  # remembered (pod, reason, message) keys before expired ones are dropped


def policy_suffix(policy: str | None, version: str) -> str:
    return f"(policy {policy or 'none'} version {version})"


def scheduled_message(pod: Pod, node: str, policy: str | None, version: str) -> str:
    return f"Successfully assigned {pod.key} to {node} {policy_suffix(policy, version)}"


def failed_message(histogram: str, policy: str | None, version: str) -> str:
    return f"{histogram} {policy_suffix(policy, version)}"


# ``isoformat`` rather than ``strftime``: the same text for a UTC time, without the C
# library's formatting (which cost the loop as much as the rest of an Event's body).


def _event_time(now: dt.datetime) -> str:
    """MicroTime: ``2026-01-02T03:04:05.000006Z``."""
    return now.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _timestamp(now: dt.datetime) -> str:
    """Time: ``2026-01-02T03:04:05Z``."""
    return now.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


class EventRecorder:
    """Posts Events and condition patches in the background (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        hostname: str | None = None,
        dedup_window: float = DEFAULT_DEDUP_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        request_timeout: float = 10.0,
        outbox: Outbox | None = None,
    ) -> None:
        self._own = outbox is None  # then the recorder's own, pumped on its own thread
        self._outbox = outbox if outbox is not None else Outbox(api_client, connections=2)
        self._api = RawAPI(api_client, outbox=self._outbox)
        self._hostname = hostname or socket.gethostname()
        self._window = dedup_window
        self._clock = clock
        self._timeout = request_timeout
        self._lock = threading.Lock()
        self._recent: dict[tuple[str, str, str], float] = {}
        self._prune_at = PRUNE_AT  # size of _recent that makes _emit drop expired entries
        self._conditions: dict[str, str] = {}  # pod uid/key -> message we last patched
        self._sent = 0  # requests submitted ...
        self._answered = 0  # ... and answered
        self.posted = 0
        self.suppressed = 0

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self._own:
            self._outbox.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Post what is queued (up to ``timeout``), then stop."""
        self.flush(5.0 if timeout is None else timeout)
        if self._own:
            self._outbox.close()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything submitted so far was answered (pumping the outbox when no
        thread does)."""
        return self._outbox.drain(timeout, until=lambda: self._answered >= self._sent)

    # ------------------------------------------------------------------ recording

    def scheduled(
        self, pod: Pod, node: str, controller: str, policy: str | None, version: str
    ) -> None:
        note = scheduled_message(pod, node, policy, version)
        self._emit(pod, controller, "Normal", "Scheduled", "Binding", note)
        with self._lock:
            self._conditions.pop(pod.uid or pod.key, None)

    def failed_scheduling(
        self,
        pod: Pod,
        controller: str,
        message: str,
        policy: str | None,
        version: str,
        *,
        current_condition: Mapping[str, Any] | None = None,
        patch_condition: bool = True,
    ) -> None:
        """A FailedScheduling event, and the PodScheduled=False condition with the same
        message unless the pod (``current_condition``, as the watch shows it) already has it."""
        note = failed_message(message, policy, version)
        self._emit(pod, controller, "Warning", "FailedScheduling", "Scheduling", note)
        if patch_condition:
            self._patch_condition(pod, note, current_condition)

    def bind_rejected(
        self, pod: Pod, controller: str, error: str, policy: str | None, version: str
    ) -> None:
        """A FailedScheduling event for a bind the API server refused. The condition is left
        alone: the pod was schedulable, and the retry will say otherwise if it is not."""
        self.failed_scheduling(
            pod, controller, f"Binding rejected: {error}", policy, version, patch_condition=False
        )

    def _emit(
        self, pod: Pod, controller: str, type_: str, reason: str, action: str, note: str
    ) -> None:
        if not self._first_in_window((pod.uid or pod.key, reason, note)):
            return
        wall = dt.datetime.now(dt.UTC)
        body = {
            "kind": "Event",
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": f"{pod.name}.{time.time_ns():x}", "namespace": pod.namespace},
            "eventTime": _event_time(wall),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self._hostname}",
            "action": action,
            "reason": reason,
            "regarding": {
                "kind": "Pod",
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
                "apiVersion": "v1",
                "resourceVersion": pod.resource_version,
            },
            "note": note,
            "type": type_,
        }
        self._post_event(pod.namespace, body, pod=pod.key)

    def object_event(
        self,
        regarding: Mapping[str, Any],
        controller: str,
        type_: str,
        reason: str,
        action: str,
        note: str,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        """An Event about any namespaced object (``regarding`` as events.k8s.io spells it):
        the policy reloader's verdicts on the ConfigMap that holds the policy, a preemption
        victim's ``Preempted`` (``related``: the preemptor, as kube-scheduler records it).
        De-duplicated like the pods' events."""
        namespace = str(regarding.get("namespace") or "default")
        name = str(regarding.get("name") or "")
        if not self._first_in_window(
            (str(regarding.get("uid") or f"{namespace}/{name}"), reason, note)
        ):
            return
        body = {
            "kind": "Event",
            "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": namespace},
            "eventTime": _event_time(dt.datetime.now(dt.UTC)),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self._hostname}",
            "action": action,
            "reason": reason,
            "regarding": dict(regarding),
            **({"related": dict(related)} if related is not None else {}),
            "note": note,
            "type": type_,
        }
        self._post_event(namespace, body, object=f"{namespace}/{name}")

    def _first_in_window(self, dedup_key: tuple[str, str, str]) -> bool:
        """Whether an event of ``dedup_key`` (subject, reason, note) goes out now: not when
        the same went out within the window (then it is counted as suppressed)."""
        now = self._clock()
        with self._lock:
            last = self._recent.get(dedup_key)
            if last is not None and now - last < self._window:
                self.suppressed += 1
                return False
            self._recent[dedup_key] = now
            if len(self._recent) > self._prune_at:
                self._recent = {k: t for k, t in self._recent.items() if now - t < self._window}
                # What is still inside the window stays; the next pass waits until as many
                # again have arrived, or a busy scheduler (a Scheduled event per pod, each
                # kept for the window) would copy the whole map on every event.
                self._prune_at = max(PRUNE_AT, 2 * len(self._recent))
        return True

    def _post_event(self, namespace: str, body: Mapping[str, Any], **subject: str) -> None:
        """Create the Event ``body``; an answer other than success is logged with
        ``subject`` (the pod or object it is about)."""
        self._send(
            lambda then: self._api.create_namespaced_event(
                namespace, body, _request_timeout=self._timeout, _then=then
            ),
            lambda answer: self._event_posted(answer, body, **subject),
        )

    def _patch_condition(self, pod: Pod, message: str, current: Mapping[str, Any] | None) -> None:
        ident = pod.uid or pod.key
        shown = (
            current is not None
            and current.get("status") == "False"
            and current.get("reason") == "Unschedulable"
            and current.get("message") == message
        )
        with self._lock:
            if shown or self._conditions.get(ident) == message:
                return
            self._conditions[ident] = message
            if len(self._conditions) > 10_000:
                self._conditions.clear()
        now = _timestamp(dt.datetime.now(dt.UTC))
        transition = now
        if current is not None and current.get("status") == "False":
            transition = current.get("lastTransitionTime") or now  # status did not flip
        body = {
            "status": {
                "conditions": [
                    {
                        "lastProbeTime": None,
                        "lastTransitionTime": transition,
                        "message": message,
                        "reason": "Unschedulable",
                        "status": "False",
                        "type": "PodScheduled",
                    }
                ]
            }
        }
        self._send(
            lambda then: self._api.patch_namespaced_pod_status(
                pod.name, pod.namespace, body, _request_timeout=self._timeout, _then=then
            ),
            lambda answer: self._condition_patched(answer, pod, ident, message),
        )

    # ------------------------------------------------------------------ the answers

    def _send(
        self, write: Callable[[Callable[[Answer], None]], Any], answered: Callable[[Answer], None]
    ) -> None:
        """``write(then)`` one request; ``answered`` gets its answer where the outbox is
        pumped."""
        with self._lock:
            self._sent += 1

        def then(answer: Answer) -> None:
            try:
                answered(answer)
            finally:
                with self._lock:
                    self._answered += 1

        write(then)

    def _event_posted(self, answer: Answer, body: Mapping[str, Any], **subject: str) -> None:
        if not isinstance(answer, BaseException):
            self.posted += 1
            return
        # Events are best effort: log and move on.
        log.warning(
            "could not post event",
            **subject,
            reason=body["reason"],
            status=getattr(answer, "status", None),
            error=str(getattr(answer, "reason", None) or answer),
        )

    def _condition_patched(self, answer: Answer, pod: Pod, ident: str, message: str) -> None:
        if not isinstance(answer, BaseException):
            log.debug("updated pod condition", pod=pod.key, condition="PodScheduled=False")
            return
        # Let the next failure try again; a 404 means the pod is gone, which is fine.
        with self._lock:
            if self._conditions.get(ident) == message:
                del self._conditions[ident]
        status = getattr(answer, "status", None)
        if status != 404:
            log.warning(
                "could not update pod condition",
                pod=pod.key,
                status=status,
                error=str(getattr(answer, "reason", None) or answer),
            )
