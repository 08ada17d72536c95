"""One small threaded HTTP server on a daemon thread, for the endpoints the scheduler serves.

Health and metrics (``health``) and the extender's verbs (``extender``) need the same thing:
the standard library's threading server, bound to ``HOST:PORT``, ``:PORT`` or
``[IPv6]:PORT``, serving until closed, and telling its real address (port 0 picks a free one).
They share this one so that an address that works for one works for the other.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Generic, TypeVar

State = TypeVar("State")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (all interfaces) or ``[IPv6]:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ValueError(f"{text!r} is not HOST:PORT")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


class StateServer(ThreadingHTTPServer, Generic[State]):
    """The server a handler sees as ``self.server``; ``state`` is what it serves from."""

    daemon_threads = True
    state: State


class _StateServer6(StateServer[State]):
    address_family = socket.AF_INET6


class BackgroundHTTPServer(Generic[State]):
    """Serves ``handler`` at ``address`` on a daemon thread named ``name`` until :meth:`close`;
    handlers read ``state`` as ``self.server.state`` (annotate ``server: StateServer[…]``)."""

    def __init__(
        self,
        address: str,
        handler: type[BaseHTTPRequestHandler],
        name: str,
        state: State,
    ) -> None:
        host, port = parse_address(address)
        server_class = _StateServer6 if ":" in host else StateServer
        self._server: StateServer[State] = server_class((host, port), handler)
        self._server.state = state
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=name,
            daemon=True,
        )
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """Where a client on this machine reaches it (all interfaces: the loopback address)."""
        host, port = self.address
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
