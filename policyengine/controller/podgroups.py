"""PodGroups from the API server: watched when their CRD is installed, absent cleanly when not.

Gangs are defined by ``scheduling.x-k8s.io/v1alpha1`` PodGroup objects, a custom resource that
only exists on clusters where scheduler-plugins' CRD was installed. An informer on a resource
the server does not serve would log a failed list every few seconds forever, so this module
first asks once (a list with ``limit=1``): a 404 means "not installed", reported by one log line
and handed to the gang logic (``on_crd(False)``), which then holds labelled pods with a clear
event instead of guessing what their group would be. The question is asked again every
``recheck`` seconds without logging, so installing the CRD later turns gangs on without a
restart. Any other answer (403, 5xx, a connection error) is retried with the informer's backoff:
it says nothing about whether the CRD exists.

Once the CRD answers, an ordinary ``Informer`` lists and watches PodGroups in every namespace.
``has_synced`` is true once the informer has delivered its first list, or the CRD is known to
be missing, so the scheduler never reports a labelled pod's PodGroup as missing merely because
the list had not arrived yet.

``PodGroupStatusWriter`` patches the ``status`` subresource (JSON merge patch: custom resources
refuse strategic merge) from a background thread, skipping a patch equal to the last one.
"""

from __future__ import annotations

import functools
import json
import random
import threading
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.connection import describe
from policyengine.controller.informer import EventHandler, Informer, InformerOptions
from policyengine.controller.jobs import JobThread
from policyengine.controller.logs import get_logger
from policyengine.controller.wirejson import JSON

log = get_logger(__name__)


# The coscheduling API as scheduler-plugins serves it.
GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"
CRD_NAME = f"{PLURAL}.{GROUP}"
DEFAULT_CRD_RECHECK = 60.0


class PodGroupSource:
    """The PodGroup informer behind a check that the CRD exists (module docstring)."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        handler: EventHandler,
        on_crd: Callable[[bool], None],
        *,
        options: InformerOptions | None = None,
        rng: random.Random | None = None,
        recheck: float = DEFAULT_CRD_RECHECK,
    ) -> None:
        # Typed as Any: called on the raw wire (_preload_content=False), not with models. The
        # group, version and plural are spelled out at each call so that the RBAC test
        # (tests/deploy/test_rbac.py) can read which resource is used.
        self._custom: Any = k8s.CustomObjectsApi(api_client)
        self._options = options or InformerOptions()
        self._rng = rng or random.Random()
        self._on_crd = on_crd
        self._recheck = recheck
        self.informer = Informer(
            PLURAL,
            functools.partial(
                self._custom.list_cluster_custom_object,
                "scheduling.x-k8s.io",
                "v1alpha1",
                "podgroups",
            ),
            handler,
            options=self._options,
            rng=self._rng,
        )
        self._stopping = threading.Event()
        self._absent = threading.Event()
        self._thread: threading.Thread | None = None
        self.installed: bool | None = None  # None until the server answered

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="podgroup-crd", daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stopping.set()
        self.informer.stop(timeout)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def has_synced(self) -> bool:
        return self._absent.is_set() or self.informer.has_synced()

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                response = self._custom.list_cluster_custom_object(
                    "scheduling.x-k8s.io",
                    "v1alpha1",
                    "podgroups",
                    limit=1,
                    _preload_content=False,
                    _request_timeout=(self._options.connect_timeout, 30.0),
                )
                _ = response.data
                response.release_conn()
            except ApiException as exc:
                if exc.status == 404:
                    failures = 0
                    if self.installed is not False:
                        log.warning(
                            "PodGroup CRD not installed; gang scheduling is off and pods "
                            "labelled scheduling.x-k8s.io/pod-group wait",
                            crd=CRD_NAME,
                            recheck_seconds=self._recheck,
                        )
                        self.installed = False
                        self._notify(False)
                    self._absent.set()
                    self._stopping.wait(self._recheck)
                    continue
                failures += 1
                self._retry(failures, describe(exc))
                continue
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                failures += 1
                self._retry(failures, describe(exc))
                continue
            if self.installed is False:
                log.info("PodGroup CRD installed; gang scheduling is on", crd=CRD_NAME)
            self.installed = True
            self._notify(True)
            self.informer.start()
            self._absent.clear()
            return

    def _notify(self, installed: bool) -> None:
        try:
            self._on_crd(installed)
        except Exception:
            log.exception("PodGroup CRD handler failed")

    def _retry(self, failures: int, error: str) -> None:
        delay = min(self._options.backoff_initial * 2 ** (failures - 1), self._options.backoff_max)
        log.warning("PodGroup CRD check failed; retrying", error=error, retry_in=round(delay, 3))
        self._stopping.wait(delay * (1 + 0.1 * self._rng.random()))


class PodGroupStatusWriter:
    """Patches PodGroup status in the background; identical consecutive patches are skipped."""

    def __init__(self, api_client: k8s.ApiClient, *, request_timeout: float = 10.0) -> None:
        # Typed as Any: called on the raw wire (_preload_content=False), not with models.
        self._custom: Any = k8s.CustomObjectsApi(api_client)
        self._timeout = request_timeout
        self._lock = threading.Lock()
        self._last: dict[str, str] = {}  # group key -> the status we last sent (JSON text)
        self._jobs = JobThread("podgroup-status", "podgroup status job failed")
        self.patched = 0

    def start(self) -> None:
        self._jobs.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._jobs.stop(timeout)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every patch queued so far was sent (for tests)."""
        return self._jobs.flush(timeout)

    def patch(self, namespace: str, name: str, status: JSON) -> bool:
        """Queue a merge patch of ``status``; False when it equals the last one sent."""
        key = f"{namespace}/{name}"
        text = json.dumps(status, sort_keys=True)
        with self._lock:
            if self._last.get(key) == text:
                return False
            self._last[key] = text
        self._jobs.submit(lambda: self._send(namespace, name, key, text, status))
        return True

    def forget(self, key: str) -> None:
        """The PodGroup was deleted (or recreated): the next patch is sent whatever it says."""
        with self._lock:
            self._last.pop(key, None)

    def _send(self, namespace: str, name: str, key: str, text: str, status: JSON) -> None:
        try:
            response = self._custom.patch_namespaced_custom_object_status(
                "scheduling.x-k8s.io",
                "v1alpha1",
                namespace,
                "podgroups",
                name,
                {"status": status},
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            _ = response.data
            response.release_conn()
            self.patched += 1
        except Exception as exc:  # best effort, like events: the next change tries again
            with self._lock:
                if self._last.get(key) == text:
                    del self._last[key]
            status_code = getattr(exc, "status", None)
            if status_code != 404:
                log.warning(
                    "could not update PodGroup status",
                    podgroup=key,
                    status=status_code,
                    error=str(getattr(exc, "reason", None) or exc),
                )
