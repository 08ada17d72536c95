"""Node load for the loop: polls metrics.k8s.io and puts each node's fresh load in the cache.

metrics-server serves ``metrics.k8s.io/v1beta1`` NodeMetrics as an aggregated API with no
watch, so this module lists it every ``interval`` seconds (30 by default; metrics-server itself
scrapes every 15 to 60). Each poll also reads the exporter annotations of the nodes the cache
holds and judges every reading against the wall clock and the staleness bound
(``model.load``): the cache's snapshot then carries each node's load, and ``node.load`` in a
policy reads it. A node's load is therefore at most one interval older than the poll that
judged it. When a poll changes some node's load, ``on_change`` runs (the scheduler moves its
unschedulable pods back to be tried: a node that just went quiet may now take them).

Clusters without metrics-server answer 404 (no such group) or 503 (the APIService exists but
its backend is down). Then load comes from annotations only; that is said once in the log, not
every poll, and said again when the API comes back. On any other failure the last NodeMetrics
received are kept: they age out through the staleness bound rather than vanishing at once, so
a blip of the metrics API does not change placements, and a long outage does not leave old
numbers in force.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.cache import ClusterCache
from policyengine.controller.logs import get_logger
from policyengine.model.errors import ModelError
from policyengine.model.load import (
    DEFAULT_MAX_AGE,
    NODE_METRICS_KIND,
    NodeMetrics,
    parse_node_metrics,
    resolve_loads,
)

log = get_logger(__name__)

DEFAULT_POLL_INTERVAL = 30.0
_ABSENT = (404, 503)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class LoadPoller:
    """Lists NodeMetrics every ``interval`` seconds and stores every node's load in ``cache``."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        cache: ClusterCache,
        *,
        interval: float = DEFAULT_POLL_INTERVAL,
        max_age: dt.timedelta = DEFAULT_MAX_AGE,
        clock: Callable[[], dt.datetime] = _utcnow,
        request_timeout: float = 10.0,
        on_change: Callable[[], object] = lambda: None,
    ) -> None:
        # Typed as Any: the generated client returns plain dicts for custom objects. Group,
        # version and plural are literals at the call for tests/deploy/test_rbac.py.
        self._custom: Any = k8s.CustomObjectsApi(api_client)
        self._cache = cache
        self._interval = interval
        self._max_age = max_age
        self._clock = clock
        self._timeout = request_timeout
        self._on_change = on_change
        self._metrics: dict[str, NodeMetrics] = {}
        self.metrics_available: bool | None = None  # None until the API answered
        self._warned: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="node-load", daemon=True)
            self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.poll():
                    self._on_change()
            except Exception:  # the loop must outlive any one poll
                log.exception("node load poll failed")
            self._stop.wait(self._interval)

    def poll(self) -> bool:
        """One poll: list NodeMetrics, judge every node's load now; True when a load changed."""
        self._fetch()
        nodes = [info.node for info in self._cache.snapshot().nodes]
        loads, warnings = resolve_loads(nodes, self._metrics.values(), self._clock(), self._max_age)
        for warning in warnings:
            self._warn_once(warning)
        return self._cache.set_loads(loads)

    def _fetch(self) -> None:
        try:
            listed = self._custom.list_cluster_custom_object(
                "metrics.k8s.io", "v1beta1", "nodes", _request_timeout=self._timeout
            )
        except ApiException as exc:
            if exc.status in _ABSENT:
                if self.metrics_available is not False:
                    log.info(
                        "metrics.k8s.io is not served; node load comes from annotations only",
                        status=exc.status,
                    )
                self.metrics_available = False
                self._metrics = {}
            else:
                log.warning("listing node metrics failed; keeping the last", status=exc.status)
            return
        except Exception as exc:  # connection errors: keep the last, let them age out
            log.warning("listing node metrics failed; keeping the last", error=str(exc))
            return
        if self.metrics_available is not True:
            log.info("reading node load from metrics.k8s.io")
        self.metrics_available = True
        metrics: dict[str, NodeMetrics] = {}
        for item in listed.get("items") or ():
            try:
                parsed = parse_node_metrics({"kind": NODE_METRICS_KIND, **item})
            except ModelError as exc:
                self._warn_once(str(exc))
                continue
            metrics[parsed.name] = parsed
        self._metrics = metrics

    def _warn_once(self, message: str) -> None:
        # An exporter's bad annotation would otherwise be logged every poll.
        if message not in self._warned:
            self._warned.add(message)
            log.warning("ignoring bad node load", detail=message)
