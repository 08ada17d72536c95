"""What a bind's result does to the cache, the Events and the observer hooks.

A pod placed alone (``scheduler``) and a gang member (``gangs``) are bound the same way and
their results mean the same: bound, the assumption is confirmed and the pod gets its
``Scheduled`` Event; a conflict (already bound, or recreated), the watch will say where it
really is; a failure, the assumption is forgotten and the pod gets a ``FailedScheduling``
Event. The callers differ only in what they do with their queue afterwards, so this part is
written once.
"""

from __future__ import annotations

import time

from policyengine.controller.binder import BindOutcome, BindResult
from policyengine.controller.cache import ClusterCache
from policyengine.controller.events import EventRecorder
from policyengine.controller.hooks import SchedulerHooks, call_hook
from policyengine.controller.logs import get_logger

log = get_logger(__name__)


def settle_bind(
    result: BindResult,
    *,
    cache: ClusterCache,
    events: EventRecorder,
    hooks: SchedulerHooks,
    policy: str | None,
    version: str,
    started: float,
    subject: str = "pod",
    **context: object,
) -> None:
    """Apply ``result`` of binding a ``subject`` ("pod", "gang member") whose cycle began at
    ``started`` (``time.perf_counter``); ``context`` adds fields to the log lines."""
    pod, node, profile = result.pod, result.node, result.pod.scheduler_name
    call_hook(hooks.on_stage, "bind", result.seconds)
    if result.outcome is BindOutcome.BOUND:
        cache.finish_binding(pod.key)
        log.info(
            f"bound {subject}", pod=pod.key, node=node, policy=policy, version=version, **context
        )
        events.scheduled(pod, node, profile, policy, version)
        call_hook(hooks.on_attempt, "scheduled", profile, time.perf_counter() - started)
        return
    if result.outcome is BindOutcome.CONFLICT:
        # Already bound (or recreated): the watch will tell the cache where it really is;
        # until then the assumption holds the capacity, and expires if never confirmed.
        cache.finish_binding(pod.key)
        log.info(f"{subject} already bound; dropping", pod=pod.key, node=node, error=result.message)
    else:
        cache.forget(pod.key)
        log.warning(
            f"{subject} bind failed; will retry",
            pod=pod.key,
            node=node,
            status=result.status,
            error=result.message,
        )
        events.bind_rejected(pod, profile, result.message, policy, version)
    call_hook(hooks.on_attempt, "error", profile, time.perf_counter() - started)
