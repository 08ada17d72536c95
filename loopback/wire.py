"""Helpers for replaying the ``k8s-wire/`` captures against the loopback server.

A capture holds the exact request a real kube-apiserver v1.28.7 received and its exact
answer.  Replaying means sending the same bytes over a raw HTTP connection and comparing the
status, the framing and the body once the parts no two runs share (uids, resourceVersions,
creation times, continue tokens) are masked.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JSON = dict[str, Any]

_CANDIDATES = (Path(__file__).resolve().parents[1] / "tests" / "data" / "k8s-wire",)


def capture_dir() -> Path | None:
    """Where the captures are: ``$POLICYENGINE_K8S_WIRE``, else ``tests/data/k8s-wire``."""
    env = os.environ.get("POLICYENGINE_K8S_WIRE")
    if env:
        return Path(env)
    for candidate in _CANDIDATES:
        if (candidate / "README.md").exists():
            return candidate
    return None


def load(name: str) -> JSON:
    root = capture_dir()
    if root is None:
        raise FileNotFoundError("k8s-wire captures not found")
    data: JSON = json.loads((root / name).read_text())
    return data


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    chunked: bool

    def json(self) -> Any:
        return json.loads(self.body)

    def lines(self) -> list[JSON]:
        return [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]


@dataclass
class RawClient:
    """Sends one request per connection, like the capture client (``Connection: close``)."""

    host: str
    port: int
    timeout: float = 10.0
    extra_headers: dict[str, str] = field(default_factory=dict)

    def send(
        self,
        method: str,
        path: str,
        headers: list[list[str]] | dict[str, str] | None = None,
        body: str | bytes | None = None,
    ) -> Reply:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            hdrs = (
                dict(headers or {})
                if not isinstance(headers, list)
                else dict((k, v) for k, v in headers)
            )
            hdrs.update(self.extra_headers)
            hdrs.setdefault("Connection", "close")
            payload = body.encode() if isinstance(body, str) else body
            conn.request(method, path, body=payload, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            headers_out = {k: v for k, v in resp.getheaders()}
            chunked = headers_out.get("Transfer-Encoding", "").lower() == "chunked"
            return Reply(resp.status, headers_out, data, chunked)
        finally:
            conn.close()

    def replay(
        self, capture: JSON, subs: dict[str, str] | None = None, path: str | None = None
    ) -> Reply:
        req = capture["request"]
        body = req.get("body")
        target = path or req["path"]
        for old, new in (subs or {}).items():
            target = target.replace(old, new)
            if body is not None:
                body = body.replace(old, new)
        return self.send(req["method"], target, req.get("headers"), body)


VOLATILE = frozenset({"uid", "resourceVersion", "creationTimestamp", "time", "deletionTimestamp"})


def mask(value: Any, extra: frozenset[str] = frozenset(), key: str = "") -> Any:
    """Replace what differs between runs with placeholders."""
    if isinstance(value, dict):
        return {k: mask(v, extra, k) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, extra, key) for v in value]
    if key == "continue" and isinstance(value, str) and value:
        return mask(decode_continue(value), extra)
    if key == "rv" and isinstance(value, int) and value >= 0:
        return "<rv>"
    if (key in VOLATILE or key in extra) and isinstance(value, str) and value:
        return f"<{key}>"
    return value


def decode_continue(token: str) -> JSON:
    padded = token + "=" * (-len(token) % 4)
    data: JSON = json.loads(base64.urlsafe_b64decode(padded))
    return data


def expected_body(capture: JSON, subs: dict[str, str] | None = None) -> Any:
    text = capture["response"]["body"]
    for old, new in (subs or {}).items():
        text = text.replace(old, new)
    return json.loads(text)


def same_framing(capture: JSON, reply: Reply, margin: int = 64) -> bool:
    """Content-Length below 2048 bytes, chunked above (only checked away from the edge)."""
    body = capture["response"].get("body")
    if body is None:
        return True
    size = len(body.encode())
    if abs(size - 2048) <= margin:
        return True
    return reply.chunked == (size >= 2048)


def header_names(capture: JSON) -> list[str]:
    return [
        name
        for name, _ in capture["response"]["headers"]
        if name not in ("Connection", "Content-Length", "Transfer-Encoding")
    ]
