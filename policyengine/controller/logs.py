"""Structured logs for the long-running scheduler: one JSON object per line on stderr.

A scheduler in a pod is read by log pipelines, not people, so every line is a JSON object with
``timestamp`` (UTC, ISO 8601), ``level``, ``logger``, ``event`` and the call's key-values;
``--log-format console`` gives the same records coloured for a terminal. Records the
``kubernetes`` client and urllib3 write through the standard ``logging`` module go through the
same renderer, so no plain-text line breaks a JSON log stream.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("json", "console")


_FIRST = ("timestamp", "level", "logger", "event")


def _below_level(processors: Any, logger: logging.Logger, level: int) -> bool:
    """Whether ``filter_by_level``, first of ``processors`` as ``configure`` installs it,
    would drop a call at ``level`` to the stdlib ``logger`` (its own test). False with other
    processors first (``structlog.testing.capture_logs``): they see every call."""
    return (
        isinstance(processors, list)
        and bool(processors)
        and processors[0] is structlog.stdlib.filter_by_level
        and not logger.isEnabledFor(level)
    )


class _LevelledLogger(structlog.stdlib.BoundLogger):
    """``structlog.stdlib.BoundLogger`` that drops a ``debug`` or ``info`` call before
    building its event when ``filter_by_level`` (the first processor ``configure`` installs)
    would drop it: the loop logs every bound pod at info, and below the level that call
    still bound a logger, built the event and raised ``DropEvent`` (about 15 µs on this
    machine, twice what is left). The same test as that processor; with other processors
    first (``structlog.testing.capture_logs``) every call goes through them as before."""

    def _dropped(self, level: int) -> bool:
        return _below_level(self._processors, self._logger, level)

    def debug(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if self._dropped(logging.DEBUG):
            return None
        return super().debug(event, *args, **kw)

    def info(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if self._dropped(logging.INFO):
            return None
        return super().info(event, *args, **kw)


def _ordered(_: Any, __: str, event: EventDict) -> EventDict:
    # Readers and grep scan a line from the left: the fixed keys first, then the call's own.
    head = {key: event[key] for key in _FIRST if key in event}
    return {**head, **{k: v for k, v in event.items() if k not in head}}


def _renderer(fmt: str) -> Any:
    if fmt == "console":
        return structlog.dev.ConsoleRenderer(colors=False)
    return structlog.processors.JSONRenderer(ensure_ascii=False)


def configure(level: str = "info", fmt: str = "json", stream: TextIO | None = None) -> None:
    """Configure structlog and the stdlib ``logging`` root for the whole process.

    structlog loggers go through the stdlib ``logging`` machinery (its level filter, its
    logger names), so ``structlog.get_logger(__name__)`` anywhere in the controller gets the
    ``logger`` key, and foreign records are rendered by the same renderer.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (expected one of {', '.join(LEVELS)})")
    numeric = getattr(logging, level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        structlog.processors.StackInfoRenderer(),
    ]
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=_LevelledLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                _ordered,
                _renderer(fmt),
            ],
            foreign_pre_chain=shared,
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # Python warnings (urllib3's InsecureRequestWarning, say) become log records of the
    # ``py.warnings`` logger: a raw line on stderr would break the JSON stream.
    logging.captureWarnings(True)
    # urllib3 warns about every connection it retries; the controller reports the same
    # failure once, with what to do about it (connection.describe), so keep only its errors.
    logging.getLogger("urllib3").setLevel(max(numeric, logging.ERROR))


class _Logger:
    """structlog's lazy logger with the level test in front of ``debug`` and ``info``.

    The lazy proxy binds a new logger on every call (its configuration may have changed
    since): about 10 µs for a call the level then drops, and the loop logs each bound pod at
    info. The same test as ``_LevelledLogger``, made before that binding; any other use of
    the logger is the proxy's own."""

    __slots__ = ("_proxy", "_std")

    def __init__(self, name: str) -> None:
        self._proxy = structlog.get_logger(name)
        self._std = logging.getLogger(name)

    def _dropped(self, level: int) -> bool:
        return _below_level(structlog.get_config()["processors"], self._std, level)

    def debug(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if self._dropped(logging.DEBUG):
            return None
        return self._proxy.debug(event, *args, **kw)

    def info(self, event: str | None = None, *args: Any, **kw: Any) -> Any:
        if self._dropped(logging.INFO):
            return None
        return self._proxy.info(event, *args, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._proxy, name)


def get_logger(name: str) -> Any:
    """A structlog logger named ``name`` (the ``logger`` key of its records) that drops a
    ``debug`` or ``info`` call below the level before structlog builds anything."""
    return _Logger(name)
