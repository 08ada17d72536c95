"""The loop's observer hooks, and calling them so that a failing one never breaks scheduling.

The scheduler, the gang coordinator and the preemptor report every stage and attempt to
hooks (metrics, tests). Those are observers: an exception in one is logged and the loop
carries on, in every place alike. The hooks live here, below the loop, so that what
observes it (metrics) and what it drives (gangs) need not import the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from policyengine.controller.logs import get_logger

log = get_logger(__name__)


def call_hook(hook: Callable[..., None], *args: Any) -> None:
    try:
        hook(*args)
    except Exception:
        log.exception("scheduler hook failed")


def _noop(*_args: Any) -> None:
    return None


@dataclass
class SchedulerHooks:
    """Callbacks for observers (metrics); each defaults to doing nothing. They run on the
    loop's or a binder's thread and must be quick."""

    # result: "scheduled" | "unschedulable" | "error"; profile; seconds of the attempt
    on_attempt: Callable[[str, str, float], None] = _noop
    # stage: "filter_score" | "bind" | "e2e"; seconds
    on_stage: Callable[[str, float], None] = _noop
    # CPU seconds the loop's thread spent in one scheduling cycle (filter, score, select)
    on_cycle_cpu: Callable[[float], None] = _noop
    # {"active": n, "backoff": n, "unschedulable": n}
    on_queue: Callable[[dict[str, int]], None] = _noop
    # binds in flight
    on_bind: Callable[[int], None] = _noop
    # gang attempt result: "scheduled" | "unschedulable" | "bind_failed" | "error"; seconds
    on_gang_attempt: Callable[[str, float], None] = _noop
    # a gang reported as not placed: "timeout" | "crd_missing"
    on_gang_report: Callable[[str], None] = _noop
    # gangs with members waiting
    on_gangs_waiting: Callable[[int], None] = _noop
    # a preemption attempt for a "pod" or "gang" that fits nowhere: "preempted" |
    # "unhelpful" | "waiting" (its earlier victims are still going); the victims it evicted
    on_preemption: Callable[[str, str, int], None] = _noop
