"""Leader election on a ``coordination.k8s.io/v1`` Lease, so that only one replica schedules.

Two schedulers binding the same pods would double-book nodes; running one replica means no
scheduling while it restarts. So every replica runs, and they agree through a Lease which one
schedules. The behaviour is client-go's ``leaderelection`` (its LeaseLock), reimplemented:

* A candidate reads the Lease (creating it if missing) and takes it when nobody holds it or the
  holder has not renewed it for ``leaseDurationSeconds`` — measured on the candidate's own clock
  from the moment *it* last saw the record change, so clock skew between nodes does not matter.
* Every write carries the ``resourceVersion`` that was read: a 409 means someone else wrote
  first, and the candidate simply reads again at its next try.
* The leader renews every ``retry_period``; if it cannot renew for ``renew_deadline`` (shorter
  than the lease duration, so it stops before anyone else may start) it stops leading.
* Fields as client-go writes them: ``holderIdentity``, ``leaseDurationSeconds``,
  ``acquireTime`` (kept across renewals), ``renewTime``, ``leaseTransitions`` (+1 whenever the
  holder changes).
* On shutdown the leader first waits for its work to finish (binds in flight), renewing
  meanwhile, then releases the Lease like client-go's ``ReleaseOnCancel``: empty
  ``holderIdentity``, ``leaseDurationSeconds: 1``, so a standby takes over at its next try
  instead of waiting for the lease to expire.

``on_started_leading(stop_leading)`` runs in its own thread and must return soon after
``stop_leading`` is set; ``on_stopped_leading()`` is called after it has returned, and only if
leadership was held. After losing the lease (not after a shutdown) the elector goes back to
being a candidate.
"""

from __future__ import annotations

import json
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from policyengine.controller.connection import RequestInfo, classify
from policyengine.controller.logs import get_logger
from policyengine.controller.wirejson import JSON

JITTER_FACTOR = 1.2  # client-go's: a candidate waits retry_period × (1 + up to 1.2)
_POLL = 0.05  # how often waits look at the stop events


def default_identity() -> str:
    """``<hostname>_<uuid>``, as kube-scheduler names itself in the Lease."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def micro_time(moment: datetime | None = None) -> str:
    """A ``metav1.MicroTime``: RFC 3339 in UTC with six fractional digits."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Where the Lease lives and how it is timed (kube-scheduler's defaults)."""

    namespace: str = "kube-system"
    name: str = "policyengine"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if min(self.lease_duration, self.renew_deadline, self.retry_period) <= 0:
            raise ValueError("lease duration, renew deadline and retry period must be positive")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"the lease duration ({self.lease_duration:g}s) must be longer than the renew "
                f"deadline ({self.renew_deadline:g}s), or two leaders could overlap"
            )
        if self.renew_deadline <= self.retry_period * JITTER_FACTOR:
            raise ValueError(
                f"the renew deadline ({self.renew_deadline:g}s) must be longer than "
                f"{JITTER_FACTOR:g} × the retry period ({self.retry_period:g}s)"
            )
        if not self.identity:
            raise ValueError("the leader election identity must not be empty")

    @property
    def lease_seconds(self) -> int:
        """``leaseDurationSeconds`` is whole seconds; never round a lease down."""
        return max(1, math.ceil(self.lease_duration))


class LeaderElector:
    """Campaigns for the Lease and runs ``on_started_leading`` while holding it."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        config: LeaderElectionConfig,
        *,
        on_started_leading: Callable[[threading.Event], None],
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        log: Any = None,
    ) -> None:
        self.config = config
        # Typed as Any: called on the raw wire (_preload_content=False) with plain dict bodies,
        # not with models.
        self._leases: Any = k8s.CoordinationV1Api(api_client)
        self._server = str(getattr(api_client.configuration, "host", "") or "")
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock = clock
        self._rng = rng or random.Random()
        self._log = (log or get_logger("policyengine.leader")).bind(
            lease=f"{config.namespace}/{config.name}", identity=config.identity
        )
        self._lock = threading.Lock()
        self._lease: JSON | None = None  # the Lease as last read or written
        self._observed_spec: JSON | None = None
        self._observed_at = 0.0
        self._reported_holder: str | None = None
        self._last_error: str | None = None
        self._leading = False
        self._last_renew: float | None = None
        self.observed = threading.Event()  # the API server has answered at least once
        self.failed: BaseException | None = None  # what on_started_leading raised, if anything

    # --- state, for health checks and metrics ------------------------------------------------

    @property
    def identity(self) -> str:
        return self.config.identity

    def is_leader(self) -> bool:
        with self._lock:
            return self._leading

    def holder(self) -> str:
        """The holder of the Lease as last seen ("" when nobody holds it)."""
        with self._lock:
            return str((self._observed_spec or {}).get("holderIdentity") or "")

    def check(self, tolerance: float = 20.0) -> str | None:
        """client-go's healthz adaptor: a problem when leading on a lease long unrenewed."""
        with self._lock:
            if not self._leading or self._last_renew is None:
                return None
            overdue = self._clock() - self._last_renew - self.config.lease_duration
        if overdue > tolerance:
            return f"leader has not renewed the lease for {overdue:.0f}s past its duration"
        return None

    # --- the campaign ------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Campaign, lead, and campaign again after losing the lease, until ``stop`` is set.

        Returns early (after releasing the lease) when ``on_started_leading`` returns or
        raises on its own; :attr:`failed` then holds what it raised.
        """
        self._log.info("campaigning for the lease")
        while not stop.is_set():
            if not self._acquire(stop):
                return
            if self._lead(stop) != "lost":
                return

    def _acquire(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            if self.try_acquire_or_renew(timeout=self.config.renew_deadline):
                self._log.info("acquired the lease; leading")
                return True
            period = self.config.retry_period
            wait = period + self._rng.random() * JITTER_FACTOR * period
            if _wait(wait, stop):
                break
        return False

    def _lead(self, stop: threading.Event) -> str:
        """Lead until stopped, lost, or the work ends; say which."""
        with self._lock:
            self._leading = True
            self._last_renew = self._clock()
        stop_leading = threading.Event()
        done = threading.Event()
        worker = threading.Thread(
            target=self._work, args=(stop_leading, done), name="policyengine-leading", daemon=True
        )
        worker.start()
        outcome = "done"
        while True:
            if _wait(self.config.retry_period, stop, done):
                outcome = "stopped" if stop.is_set() else "done"
                break
            if not self._renew():
                outcome = "lost"
                break
        stop_leading.set()
        # The work finishes its binds in flight; keep the lease meanwhile so nobody else
        # starts binding before it is done.
        while not done.is_set():
            if _wait(self.config.retry_period, done):
                break
            if outcome != "lost" and not self._renew():
                outcome = "lost"
        worker.join()
        if outcome == "lost":
            self._log.error(
                "lost the lease: stopped scheduling",
                holder=self.holder() or None,
                error=self._last_error,
            )
        elif self.config.release_on_cancel:
            self.release()
        with self._lock:
            self._leading = False
        if self._on_stopped is not None:
            self._on_stopped()
        return outcome

    def _work(self, stop_leading: threading.Event, done: threading.Event) -> None:
        try:
            self._on_started(stop_leading)
        except BaseException as error:  # reported by the caller of run(), through .failed
            self.failed = error
            self._log.exception("the leader's work failed")
        finally:
            done.set()

    def _renew(self) -> bool:
        """One renewal; False once renewing has failed for the renew deadline."""
        with self._lock:
            last = self._last_renew or self._clock()
        remaining = self.config.renew_deadline - (self._clock() - last)
        if remaining > 0 and self.try_acquire_or_renew(timeout=remaining):
            with self._lock:
                self._last_renew = self._clock()
            return True
        holder = self.holder()
        if holder and holder != self.identity:
            return False  # someone else holds it: stop at once, the deadline is moot
        return self._clock() - last < self.config.renew_deadline

    # --- one attempt -------------------------------------------------------------------------

    def try_acquire_or_renew(self, timeout: float | None = None) -> bool:
        """Read the Lease, and take or renew it if this candidate may; True when it holds it."""
        now = micro_time()
        desired: JSON = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.config.lease_seconds,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        # Fast path, as client-go: a leader whose lease is still valid writes straight away
        # with the resourceVersion it holds; a 409 sends it the long way round.
        if self.is_leader():
            fast = self._renew_known(desired, timeout)
            if fast != "conflict":
                return fast == "ok"
        try:
            lease = self._read(timeout)
        except ApiException as error:
            if error.status != 404:
                self._report(error, "get")
                return False
            self.observed.set()
            return self._create(desired, timeout)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            self._report(error, "get")
            return False
        self.observed.set()
        spec = dict(lease.get("spec") or {})
        self._observe(lease, spec)
        holder = str(spec.get("holderIdentity") or "")
        if holder and holder != self.identity and not self._expired(spec):
            return False
        if holder == self.identity:
            desired["acquireTime"] = spec.get("acquireTime") or now
            desired["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
        else:
            desired["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        return self._write(lease, desired, timeout) == "ok"

    def _renew_known(self, desired: JSON, timeout: float | None) -> str:
        with self._lock:
            lease = self._lease
            spec = dict(self._observed_spec or {})
        if lease is None or spec.get("holderIdentity") != self.identity:
            return "conflict"
        desired["acquireTime"] = spec.get("acquireTime") or desired["acquireTime"]
        desired["leaseTransitions"] = int(spec.get("leaseTransitions") or 0)
        return self._write(lease, desired, timeout, quiet_conflict=True)

    def _expired(self, spec: JSON) -> bool:
        duration = float(spec.get("leaseDurationSeconds") or 0)
        with self._lock:
            return self._observed_at + duration <= self._clock()

    def _observe(self, lease: JSON, spec: JSON) -> None:
        holder = str(spec.get("holderIdentity") or "")
        with self._lock:
            self._lease = lease
            if spec != self._observed_spec:
                self._observed_spec = spec
                self._observed_at = self._clock()
            changed = holder != self._reported_holder
            self._reported_holder = holder
        if changed:
            if holder and holder != self.identity:
                self._log.info("the lease is held by another replica; standing by", holder=holder)
            if self._on_new_leader is not None:
                self._on_new_leader(holder)

    def _read(self, timeout: float | None) -> JSON:
        response = self._leases.read_namespaced_lease(
            self.config.name,
            self.config.namespace,
            _preload_content=False,
            _request_timeout=timeout,
        )
        return dict(json.loads(response.data))

    def _create(self, desired: JSON, timeout: float | None) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.config.name, "namespace": self.config.namespace},
            "spec": desired,
        }
        try:
            response = self._leases.create_namespaced_lease(
                self.config.namespace, body, _preload_content=False, _request_timeout=timeout
            )
        except ApiException as error:
            if error.status == 409:  # created by another candidate between our read and write
                self._log.debug("another replica created the lease first")
                return False
            self._report(error, "create")
            return False
        except (urllib3.exceptions.HTTPError, OSError) as error:
            self._report(error, "create")
            return False
        written = dict(json.loads(response.data))
        self._observe(written, dict(written.get("spec") or {}))
        return True

    def _write(
        self, lease: JSON, spec: JSON, timeout: float | None, *, quiet_conflict: bool = False
    ) -> str:
        """PUT ``spec`` with the resourceVersion of ``lease``: "ok", "conflict" or "error"."""
        body = {**lease, "metadata": dict(lease.get("metadata") or {}), "spec": spec}
        body.setdefault("apiVersion", "coordination.k8s.io/v1")
        body.setdefault("kind", "Lease")
        try:
            response = self._leases.replace_namespaced_lease(
                self.config.name,
                self.config.namespace,
                body,
                _preload_content=False,
                _request_timeout=timeout,
            )
        except ApiException as error:
            if error.status == 409:
                if not quiet_conflict:
                    self._log.debug("another replica wrote the lease first")
                return "conflict"
            self._report(error, "update")
            return "error"
        except (urllib3.exceptions.HTTPError, OSError) as error:
            self._report(error, "update")
            return "error"
        written = dict(json.loads(response.data))
        self._observe(written, dict(written.get("spec") or {}))
        return "ok"

    def _report(self, error: BaseException, verb: str) -> None:
        info = RequestInfo(
            verb,
            "leases",
            namespace=self.config.namespace,
            name=self.config.name,
            group="coordination.k8s.io",
            server=self._server,
        )
        failure = classify(error, info=info, server=self._server)
        self._last_error = failure.message
        self._log.warning(failure.message, kind=failure.kind, verb=verb, resource="leases")

    # --- shutdown ----------------------------------------------------------------------------

    def release(self, timeout: float = 5.0) -> bool:
        """Give the lease up so a standby takes over at its next try (client-go's release)."""
        with self._lock:
            lease = self._lease
            spec = dict(self._observed_spec or {})
        if lease is None or spec.get("holderIdentity") != self.identity:
            return True
        now = micro_time()
        released = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": int(spec.get("leaseTransitions") or 0),
        }
        if self._write(lease, released, timeout) == "ok":
            self._log.info("released the lease")
            return True
        self._log.warning("could not release the lease; a standby takes over when it expires")
        return False


def _wait(timeout: float, *events: threading.Event) -> bool:
    """Wait up to ``timeout`` for any of ``events``; True when one is set."""
    deadline = time.monotonic() + timeout
    while True:
        if any(event.is_set() for event in events):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        events[0].wait(min(left, _POLL))
