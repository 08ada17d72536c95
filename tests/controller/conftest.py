"""Fixtures shared by the controller's tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """Whatever a test configures (``logs.configure``), the root logger's handlers and level,
    structlog's defaults and urllib3's level are as they were after it."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    logging.captureWarnings(False)
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("urllib3").setLevel(logging.NOTSET)
