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

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("json", "console")


def _renderer(fmt: str) -> Any:
    if fmt == "console":
        return structlog.dev.ConsoleRenderer(colors=False)
    return structlog.processors.JSONRenderer(sort_keys=False)


def configure(level: str = "info", fmt: str = "json", stream: TextIO | None = None) -> None:
    """Configure structlog (and the stdlib ``logging`` root) for the whole process."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (expected one of {', '.join(LEVELS)})")
    out = stream if stream is not None else sys.stderr
    numeric = getattr(logging, level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="timestamp"),
        structlog.processors.add_log_level,
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            _renderer(fmt),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=_renderer(fmt),
            foreign_pre_chain=[
                *shared,
                structlog.stdlib.add_logger_name,
                structlog.processors.format_exc_info,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # urllib3 warns about every connection it retries; the controller reports the same
    # failure once, with what to do about it (connection.describe), so keep only its errors.
    logging.getLogger("urllib3").setLevel(max(numeric, logging.ERROR))


def get_logger(name: str) -> Any:
    """A structlog logger whose records carry ``logger=name``."""
    return structlog.get_logger().bind(logger=name)
