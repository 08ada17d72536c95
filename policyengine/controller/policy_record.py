"""The last good policy version, kept in the cluster, so that a restarted replica can schedule.

A bad edit of the policy never takes effect in a running scheduler: it keeps its last good
version. A replica that *starts* while the source holds the bad edit (a node drain, an OOM kill,
a rollout) has no last good version of its own, and without one every restart would be a
crash loop, and once the leader goes too nothing would schedule. So the leader records each
version it accepts in a ConfigMap of its own beside its Lease (``<lease>-policy-record``): the
sources by name (``lang.loader.RecordedSources``, shipped policies included, gzip-compressed)
and the version. A replica whose source fails validation at start compiles the record instead
and schedules with it, reporting the broken source as any rejected reload.

A ConfigMap holds at most 1 MiB; a policy whose compressed sources exceed that is not recorded
(a warning says so), and replicas then wait for a valid source as they would with no record.
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.connection import classify
from policyengine.controller.logs import get_logger
from policyengine.controller.wirejson import JSON
from policyengine.lang.compiler import CompileResult, Program
from policyengine.lang.loader import RecordedSources, load_recorded
from policyengine.lang.schema import Schema

log = get_logger(__name__)

SUFFIX = "-policy-record"
SOURCES_KEY = "sources.json.gz"
# What the API server accepts in one ConfigMap's data and binaryData, with room for the rest.
MAX_BYTES = 1024 * 1024 - 16 * 1024
_TIMEOUT = 10.0
_LABELS = {
    "app.kubernetes.io/managed-by": "policyengine",
    "app.kubernetes.io/component": "policy-record",
}


def record_name(lease_name: str) -> str:
    return f"{lease_name}{SUFFIX}"


@dataclass(frozen=True)
class Recorded:
    """A version as the record holds it."""

    sources: RecordedSources
    version: str
    digest: str
    origin: str  # where the recording scheduler read it from
    recorded_at: str  # RFC 3339
    where: str  # the record itself: "configmap NS/NAME"

    def compile(self, schema: Schema) -> CompileResult:
        from policyengine.lang.cache import shared_cache

        return shared_cache.compile_unit(load_recorded(self.sources), schema)


def encode(sources: RecordedSources) -> str:
    """The sources as the record's binaryData value: base64 of gzipped JSON."""
    document = {"entries": dict(sources.entries), "imported": dict(sources.imported)}
    packed = gzip.compress(json.dumps(document, sort_keys=True).encode(), mtime=0)
    return base64.b64encode(packed).decode("ascii")


def decode(value: str) -> RecordedSources:
    """The inverse of ``encode``; ``ValueError`` for anything else."""
    try:
        document: Any = json.loads(gzip.decompress(base64.b64decode(value, validate=True)))
    except (OSError, EOFError, ValueError) as error:
        raise ValueError(f"{SOURCES_KEY} is not gzipped JSON in base64: {error}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{SOURCES_KEY} is not a JSON object")
    entries: Any = document.get("entries")
    imported: Any = document.get("imported")
    if not _texts(entries) or not _texts(imported, allow_empty=True):
        raise ValueError(f"{SOURCES_KEY} has no entries and imported maps of texts")
    return RecordedSources(dict(entries), dict(imported))


def _texts(value: Any, allow_empty: bool = False) -> bool:
    return (
        isinstance(value, Mapping)
        and (allow_empty or bool(value))
        and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    )


class PolicyRecord:
    """The record ConfigMap: read by any replica, written by the leader."""

    def __init__(self, api_client: k8s.ApiClient, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name
        self._lock = threading.Lock()  # one write at a time: the reloader's and the leader's
        # Typed loosely, as the leader's client: bodies are plain JSON, answers raw bytes.
        self._core: Any = k8s.CoreV1Api(api_client)
        self._written: str | None = None  # digest of the last version known to be recorded

    @property
    def where(self) -> str:
        return f"configmap {self.namespace}/{self.name}"

    def read(self) -> Recorded | None:
        """The recorded version; None when there is none, or it cannot be read (logged)."""
        try:
            obj = self._get()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as error:
            if isinstance(error, ApiException) and error.status == 404:
                return None
            log.warning(
                "cannot read the recorded policy version", record=self.where, error=_why(error)
            )
            return None
        data = obj.get("data") or {}
        try:
            sources = decode(str((obj.get("binaryData") or {}).get(SOURCES_KEY) or ""))
        except ValueError as error:
            log.warning(
                "the recorded policy version is unreadable", record=self.where, error=str(error)
            )
            return None
        digest = str(data.get("digest") or "")
        self._written = self._written or digest or None  # what the record holds: no rewrite
        return Recorded(
            sources,
            version=str(data.get("version") or ""),
            digest=digest,
            origin=str(data.get("origin") or ""),
            recorded_at=str(data.get("recorded") or ""),
            where=self.where,
        )

    def write(self, program: Program, origin: str) -> bool:
        """Record ``program`` unless it is recorded already; False when it could not be."""
        with self._lock:
            return self._write(program, origin)

    def _write(self, program: Program, origin: str) -> bool:
        if program.recorded is None or program.digest == self._written:
            return program.recorded is not None
        value = encode(program.recorded)
        if len(value) > MAX_BYTES:
            log.warning(
                "the policy is too large to record; a replica that starts while its source is "
                "broken will wait for a valid one",
                version=program.version,
                bytes=len(value),
                limit=MAX_BYTES,
            )
            return False
        body: JSON = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": self.namespace, "labels": _LABELS},
            "data": {
                "version": program.version,
                "digest": program.digest,
                "origin": origin,
                "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            "binaryData": {SOURCES_KEY: value},
        }
        try:
            self._put(body)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as error:
            log.warning(
                "cannot record the active policy version",
                record=self.where,
                version=program.version,
                error=_why(error),
            )
            return False
        self._written = program.digest
        log.info("policy version recorded", record=self.where, version=program.version)
        return True

    def _get(self) -> JSON:
        response = self._core.read_namespaced_config_map(
            self.name, self.namespace, _preload_content=False, _request_timeout=_TIMEOUT
        )
        found: JSON = json.loads(response.data)
        return found

    def _put(self, body: JSON) -> None:
        """Create the record, or replace it with the resourceVersion just read (two leaders
        one after the other may race: the later write wins, as it should)."""
        for _ in range(3):
            try:
                current = self._get()
            except ApiException as error:
                if error.status != 404:
                    raise
                try:
                    self._core.create_namespaced_config_map(
                        self.namespace, body, _request_timeout=_TIMEOUT
                    )
                    return
                except ApiException as created:
                    if created.status != 409:
                        raise
                    continue
            meta = body["metadata"]
            meta["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
            try:
                self._core.replace_namespaced_config_map(
                    self.name, self.namespace, body, _request_timeout=_TIMEOUT
                )
                return
            except ApiException as error:
                if error.status != 409:
                    raise
        raise ApiException(status=409, reason="the record kept changing while it was written")


def _why(error: BaseException) -> str:
    return classify(error).message
