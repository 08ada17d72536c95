"""Calling the loop's observer hooks so that a failing one never breaks scheduling.

The scheduler and the gang coordinator report every stage and attempt to hooks (metrics,
tests). Those are observers: an exception in one is logged and the loop carries on, in both
places alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)


def call_hook(hook: Callable[..., None], *args: Any) -> None:
    try:
        hook(*args)
    except Exception:
        log.exception("scheduler hook failed")
