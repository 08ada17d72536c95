"""pytest fixtures for the loopback API server, importable as a plugin.

``tests/apiserver/conftest.py`` re-exports them for the tests in this folder; other test
packages get them by listing ``tests.apiserver.fixtures`` in the top-level conftest's
``pytest_plugins``.  The defaults are test-friendly: bookmarks every second and 0.2 s before a
watch times out, and a short wait before the "too large resource version" 504.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopback.server import LoopbackAPIServer

FAST = {
    "bookmark_interval": 1.0,
    "bookmark_lead": 0.2,
    "too_large_rv_wait": 0.2,
    "default_watch_timeout": 60.0,
}


@pytest.fixture
def apiserver_factory() -> Iterator[Callable[..., LoopbackAPIServer]]:
    """Start servers with custom settings; all are stopped at teardown."""
    started: list[LoopbackAPIServer] = []

    def make(**kwargs: Any) -> LoopbackAPIServer:
        server = LoopbackAPIServer(**{**FAST, **kwargs}).start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def apiserver(apiserver_factory: Callable[..., LoopbackAPIServer]) -> LoopbackAPIServer:
    """A running loopback API server with test-friendly timings."""
    return apiserver_factory()


@pytest.fixture
def kube_api_client(apiserver: LoopbackAPIServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` connected to :func:`apiserver`."""
    client = apiserver.api_client()
    yield client
    client.close()


@pytest.fixture
def kubeconfig_path(apiserver: LoopbackAPIServer, tmp_path: Path) -> Path:
    """A kubeconfig file for :func:`apiserver`."""
    return apiserver.kubeconfig(tmp_path / "kubeconfig")
