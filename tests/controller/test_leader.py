"""``controller.leader``: the Lease as client-go's leader election reads and writes it.

Single attempts (``try_acquire_or_renew``) are driven by hand, with a fake clock where a lease
must look expired, and checked on the Lease the loopback server stores and the requests it
recorded. The campaign (``run``) is checked for what matters in a cluster: a standby waits,
the leader finishes its work before it releases the lease, a standby then takes over long
before the lease could have expired, and a leader that cannot renew stops leading.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from loopback import LoopbackAPIServer
from policyengine.controller.leader import LeaderElectionConfig, LeaderElector, micro_time

NS, NAME = "kube-system", "policyengine"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
# Long enough that a takeover within the test's timeouts can only come from a release.
SLOW = {"lease_duration": 60.0, "renew_deadline": 40.0, "retry_period": 0.05}
FAST = {"lease_duration": 1.0, "renew_deadline": 0.5, "retry_period": 0.05}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def make(apiserver: LoopbackAPIServer) -> Iterator[Callable[..., LeaderElector]]:
    clients: list[Any] = []

    def build(identity: str, clock: Callable[[], float] | None = None, **settings: Any) -> Any:
        client = apiserver.api_client()
        clients.append(client)
        config = LeaderElectionConfig(NS, NAME, identity, **(settings or SLOW))
        kwargs: dict[str, Any] = {"on_started_leading": lambda stop: stop.wait()}
        if clock is not None:
            kwargs["clock"] = clock
        return LeaderElector(client, config, **kwargs)

    yield build
    for client in clients:
        client.close()


def spec(apiserver: LoopbackAPIServer) -> dict[str, Any]:
    lease = apiserver.get("leases", NS, NAME)
    assert lease is not None
    return dict(lease["spec"])


def lease_writes(apiserver: LoopbackAPIServer) -> list[tuple[str, int]]:
    return [
        (r.verb, r.status)
        for r in apiserver.requests(resource="leases")
        if r.verb in ("create", "update")
    ]


# --- one attempt ---------------------------------------------------------------------------


def test_a_missing_lease_is_created_as_client_go_writes_it(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a = make("a")
    assert a.try_acquire_or_renew()
    got = spec(apiserver)
    assert got["holderIdentity"] == "a"
    assert got["leaseDurationSeconds"] == 60
    assert got["leaseTransitions"] == 0
    assert got["acquireTime"] == got["renewTime"]
    assert MICRO_TIME.match(got["renewTime"])
    assert [(r.verb, r.status) for r in apiserver.requests(resource="leases")] == [
        ("get", 404),
        ("create", 201),
    ]
    assert a.observed.is_set() and a.holder() == "a"


def test_renewal_keeps_acquire_time_and_writes_with_the_resource_version(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a = make("a")
    assert a.try_acquire_or_renew()
    a._leading = True  # as run() marks it once acquired
    first = spec(apiserver)
    rv = apiserver.get("leases", NS, NAME)["metadata"]["resourceVersion"]  # type: ignore[index]
    apiserver.clear_requests()
    assert a.try_acquire_or_renew()
    renewed = spec(apiserver)
    assert renewed["acquireTime"] == first["acquireTime"]
    assert renewed["renewTime"] >= first["renewTime"]
    assert renewed["leaseTransitions"] == 0
    # A valid leader writes straight away (no read first), conditioned on what it wrote last.
    (put,) = apiserver.requests(resource="leases")
    assert (put.verb, put.status) == ("update", 200)
    assert put.body["metadata"]["resourceVersion"] == rv


def test_a_standby_waits_while_the_lease_is_held(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a, b = make("a"), make("b")
    assert a.try_acquire_or_renew()
    apiserver.clear_requests()
    assert not b.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert lease_writes(apiserver) == []  # a standby only reads
    assert b.holder() == "a" and b.observed.is_set() and not b.is_leader()
    assert spec(apiserver)["holderIdentity"] == "a"


def test_an_expired_lease_is_taken_over(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    clock = Clock()
    a, b = make("a"), make("b", clock=clock)
    assert a.try_acquire_or_renew()
    held = spec(apiserver)
    assert not b.try_acquire_or_renew()
    # Expiry is measured on b's clock from when b saw the record change, not from renewTime.
    clock.now += 59.9
    assert not b.try_acquire_or_renew()
    clock.now += 0.1
    assert b.try_acquire_or_renew()
    taken = spec(apiserver)
    assert taken["holderIdentity"] == "b"
    assert taken["leaseTransitions"] == held["leaseTransitions"] + 1
    assert taken["acquireTime"] == taken["renewTime"] != held["acquireTime"]


def test_a_renewal_that_sees_the_lease_changed_hands_fails(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    clock = Clock()
    a, b = make("a"), make("b", clock=clock)
    assert a.try_acquire_or_renew()
    a._leading = True
    assert not b.try_acquire_or_renew()
    clock.now += 60
    assert b.try_acquire_or_renew()
    apiserver.clear_requests()
    # a's fast-path write carries a stale resourceVersion: 409, then it reads and sees b.
    assert not a.try_acquire_or_renew()
    assert [(r.verb, r.status) for r in apiserver.requests(resource="leases")] == [
        ("update", 409),
        ("get", 200),
    ]
    assert a.holder() == "b"
    assert spec(apiserver)["holderIdentity"] == "b"


def test_a_conflict_means_someone_else_wrote_first(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    clock = Clock()
    a, b = make("a"), make("b", clock=clock)
    assert a.try_acquire_or_renew()
    a._leading = True
    assert not b.try_acquire_or_renew()
    clock.now += 60
    read = b._read

    def read_then_lose_the_race(timeout: float | None) -> dict[str, Any]:
        lease = read(timeout)
        assert a.try_acquire_or_renew()  # a renews between b's read and b's write
        return lease

    b._read = read_then_lose_the_race  # type: ignore[method-assign]
    with structlog.testing.capture_logs() as logs:
        assert not b.try_acquire_or_renew()
    assert lease_writes(apiserver)[-1] == ("update", 409)
    assert spec(apiserver)["holderIdentity"] == "a"
    assert [e for e in logs if e["log_level"] == "warning"] == []  # a race is not a problem


def test_an_injected_conflict_is_retried_at_the_next_try(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a = make("a")
    apiserver.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": NAME, "namespace": NS},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "leaseTransitions": 4},
        }
    )
    apiserver.fail_next(1, code=409, verb="update", resource="leases")
    assert not a.try_acquire_or_renew()
    assert a.try_acquire_or_renew()
    assert spec(apiserver)["leaseTransitions"] == 5


def test_two_candidates_creating_at_once(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a, b = make("a"), make("b")
    read = b._read

    def read_missing_then_lose_the_race(timeout: float | None) -> dict[str, Any]:
        try:
            return read(timeout)
        finally:
            assert a.try_acquire_or_renew()  # a creates the lease after b found none

    b._read = read_missing_then_lose_the_race  # type: ignore[method-assign]
    assert not b.try_acquire_or_renew()
    assert lease_writes(apiserver) == [("create", 201), ("create", 409)]
    assert spec(apiserver)["holderIdentity"] == "a"


def test_release_lets_a_standby_take_over_at_once(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a, b = make("a"), make("b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.release()
    released = spec(apiserver)
    assert released["holderIdentity"] == ""
    assert released["leaseDurationSeconds"] == 1
    assert released["leaseTransitions"] == 0
    assert MICRO_TIME.match(released["renewTime"])
    assert b.try_acquire_or_renew()  # no waiting for the 60 s lease to expire
    taken = spec(apiserver)
    assert (taken["holderIdentity"], taken["leaseTransitions"]) == ("b", 1)


def test_release_by_a_non_holder_writes_nothing(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    a, b = make("a"), make("b")
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    apiserver.clear_requests()
    assert b.release()
    assert lease_writes(apiserver) == []


def test_rbac_denial_is_reported_not_raised(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    apiserver.forbid(resource="leases")
    a = make("a")
    with structlog.testing.capture_logs() as logs:
        assert not a.try_acquire_or_renew()
    assert not a.observed.is_set()
    (warning,) = logs
    assert warning["event"] == (
        'forbidden: User "system:serviceaccount:kube-system:policyengine" cannot get resource '
        '"leases" in API group "coordination.k8s.io" in the namespace "kube-system" — grant it '
        "in the ClusterRole (see deploy/)"
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"lease_duration": 10, "renew_deadline": 10, "retry_period": 2},
            "the lease duration (10s) must be longer than the renew deadline (10s), or two "
            "leaders could overlap",
        ),
        (
            {"lease_duration": 15, "renew_deadline": 2, "retry_period": 2},
            "the renew deadline (2s) must be longer than 1.2 × the retry period (2s)",
        ),
        (
            {"lease_duration": 15, "renew_deadline": 10, "retry_period": 0},
            "lease duration, renew deadline and retry period must be positive",
        ),
    ],
    ids=["lease-not-longer-than-deadline", "deadline-too-short-for-retries", "retry-not-positive"],
)
def test_timings_are_checked(settings: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as error:
        LeaderElectionConfig(NS, NAME, "a", **settings)
    assert str(error.value) == message


def test_lease_seconds_round_up() -> None:
    assert LeaderElectionConfig(NS, NAME, "a", 1.5, 1.0, 0.1).lease_seconds == 2
    assert micro_time().endswith("Z")


# --- the campaign --------------------------------------------------------------------------


class Candidate:
    """A LeaderElector running in a thread, recording what happened to it, in order."""

    def __init__(self, apiserver: LoopbackAPIServer, identity: str, **settings: Any) -> None:
        self.apiserver = apiserver
        self.client = apiserver.api_client()
        self.events: list[str] = []
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.stop = threading.Event()
        self.elector = LeaderElector(
            self.client,
            LeaderElectionConfig(NS, NAME, identity, **(settings or SLOW)),
            on_started_leading=self._lead,
            on_stopped_leading=self._stopped,
        )
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)

    def _lead(self, stop_leading: threading.Event) -> None:
        self.events.append("started")
        self.started.set()
        stop_leading.wait()
        # Work winding down (binds in flight): the lease must still be ours meanwhile.
        self.events.append(f"finishing; holder={spec(self.apiserver)['holderIdentity']}")

    def _stopped(self) -> None:
        self.events.append("stopped")
        self.stopped.set()

    def __enter__(self) -> Candidate:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.client.close()


def test_standby_takes_over_when_the_leader_shuts_down(apiserver: LoopbackAPIServer) -> None:
    with Candidate(apiserver, "a") as a:
        assert a.started.wait(5)
        with Candidate(apiserver, "b") as b:
            apiserver.wait_for(lambda: b.elector.holder() == "a", timeout=5)
            assert not b.started.is_set() and not b.elector.is_leader()
            a.stop.set()
            a.thread.join(timeout=5)
            assert a.events == ["started", "finishing; holder=a", "stopped"]
            # The lease lasts 60 s; b leads within the 5 s only because a released it.
            assert b.started.wait(5)
            assert spec(apiserver)["holderIdentity"] == "b"
            assert spec(apiserver)["leaseTransitions"] == 1


def test_a_leader_that_cannot_renew_stops_and_campaigns_again(
    apiserver: LoopbackAPIServer,
) -> None:
    with Candidate(apiserver, "a", **FAST) as a:
        assert a.started.wait(5)
        apiserver.fail_always(code=503, resource="leases")
        assert a.stopped.wait(5)  # the renew deadline passed without a renewal
        assert a.events == ["started", "finishing; holder=a", "stopped"]
        assert not a.elector.is_leader()
        apiserver.clear_faults()
        apiserver.wait_for(lambda: a.events.count("started") == 2, timeout=5)
        assert a.elector.is_leader()
        # It held the lease all along as far as the server knows: no transition.
        assert spec(apiserver)["leaseTransitions"] == 0


def test_a_leader_whose_work_ends_releases_the_lease(apiserver: LoopbackAPIServer) -> None:
    client = apiserver.api_client()
    elector = LeaderElector(
        client,
        LeaderElectionConfig(NS, NAME, "a", **SLOW),
        on_started_leading=lambda stop: None,  # returns at once, as a crashed loop would
    )
    elector.run(threading.Event())  # returns by itself
    assert spec(apiserver)["holderIdentity"] == ""
    assert elector.failed is None and not elector.is_leader()
    client.close()


def test_what_the_work_raises_is_kept(apiserver: LoopbackAPIServer) -> None:
    client = apiserver.api_client()

    def crash(stop: threading.Event) -> None:
        raise RuntimeError("boom")

    elector = LeaderElector(
        client, LeaderElectionConfig(NS, NAME, "a", **SLOW), on_started_leading=crash
    )
    with structlog.testing.capture_logs():
        elector.run(threading.Event())
    assert isinstance(elector.failed, RuntimeError)
    assert spec(apiserver)["holderIdentity"] == ""
    client.close()


def test_health_check_flags_a_leader_that_stopped_renewing(
    apiserver: LoopbackAPIServer, make: Callable[..., LeaderElector]
) -> None:
    clock = Clock()
    a = make("a", clock=clock)
    assert a.check() is None
    a._leading, a._last_renew = True, clock.now
    clock.now += 60 + 20
    assert a.check() is None
    clock.now += 1
    assert a.check() == "leader has not renewed the lease for 21s past its duration"
