"""Fixtures shared by the controller's tests: logging restored, and small HTTP servers for
the write paths (``keepalive``, ``outbox``) to meet what API servers and proxies do."""

from __future__ import annotations

import http.server
import logging
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from kubernetes import client as k8s


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


class OneShot(http.server.BaseHTTPRequestHandler):
    """Answers each connection's first request and then closes it without saying so (as an
    API server or proxy closing an idle keep-alive connection does)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"kind":"Event"}'
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def one_shot() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OneShot)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A port that refuses connections for the whole test: bound and never listening, so no
    other test (another worker's server) can take it meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server (a self-signed certificate for 127.0.0.1) answering like ``OneShot``
    but keeping connections open; yields its URL and the certificate (the client's CA)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip

    class KeepOpen(OneShot):
        def do_POST(self) -> None:
            super().do_POST()
            self.close_connection = False

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), KeepOpen)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}", cert
    server.shutdown()
    server.server_close()


def tls_client(tls_server: tuple[str, Path], trusted: bool) -> k8s.ApiClient:
    """A client of ``tls_server`` that trusts its certificate, or trusts nothing given."""
    url, cert = tls_server
    cfg = k8s.Configuration(host=url)
    cfg.ssl_ca_cert = str(cert) if trusted else None
    return k8s.ApiClient(cfg)
