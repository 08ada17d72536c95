"""Hot reload end to end, against the loopback API server.

In process: a ``Scheduler`` whose program comes from a ``PolicyHolder`` fed by a
``ConfigMapSource`` through a ``Reloader`` — a ConfigMap update changes decisions, a broken
update leaves the old behaviour in force with the error surfaced (Warning event on the
ConfigMap, metric), a burst ends on the last version, a deleted ConfigMap keeps the last good
policy, and unschedulable pods are re-queued by a swap.

As processes: ``policyengine run --policy-configmap`` with ``/readyz`` and ``/metrics`` after
a broken update, and ``policyengine run --policy DIR`` picking up the kubelet's ``..data``
swap and re-reading on SIGHUP.

Every wait is on a condition with a timeout; nothing asserts on elapsed time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from loopback import LoopbackAPIServer
from policyengine.controller.events import EventRecorder
from policyengine.controller.metrics import Metrics
from policyengine.controller.policy_source import ConfigMapSource, PolicyHolder
from policyengine.controller.reload import (
    POLICY_ACCEPTED,
    POLICY_REJECTED,
    POLICY_SOURCE_UNAVAILABLE,
    Reloader,
    ReloadHooks,
    ReloadOptions,
)
from tests.controller.builders import FAST_INFORMER, SCHEDULER, RunningScheduler, node_obj, pod_obj
from tests.controller.policies import BROKEN, kubelet_volume, zone_policy
from tests.controller.processes import Run, http_get

NS, NAME = "default", "policies"
pytestmark = pytest.mark.slow  # processes, servers or seconds of work

KEY = "zone.sched"
# Where run records the last good version by default: beside the Lease (--lease-namespace),
# named after it (no --lease-name, no --scheduler-name).
RECORD_NS, RECORD = "kube-system", "policyengine-policy-record"
WAIT = 30.0


def configmap(data: dict[str, str], name: str = NAME, labels: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS, "labels": dict(labels or {})},
        "data": data,
    }


def zones(server: LoopbackAPIServer, *names: str) -> None:
    for zone in names:
        server.create(node_obj(f"node-{zone}", labels={"zone": zone}))


class Reloading:
    """A scheduler whose policy lives in ConfigMaps, as ``run --policy-configmap`` wires it."""

    def __init__(
        self,
        server: LoopbackAPIServer,
        *,
        names: list[tuple[str, str]] | None = None,
        selector: str | None = None,
        debounce: float = 0.05,
    ) -> None:
        self.server = server
        self.api = client.ApiClient(server.client_configuration())
        self.holder = PolicyHolder()
        self.metrics = Metrics()
        self.metrics.track_policy(self.holder.stale_seconds, lambda: self.holder.since)
        self.events = EventRecorder(self.api)
        self.source = ConfigMapSource(
            self.api,
            names=names if names is not None else ([] if selector else [(NS, NAME)]),
            selector=selector,
            namespace=NS,
            options=FAST_INFORMER,
        )
        self.running: RunningScheduler | None = None
        self.reloader = Reloader(
            self.holder,
            self.source,
            scheduler_names=[SCHEDULER],
            hooks=ReloadHooks(on_accepted=self._accepted, on_rejected=self._rejected),
            events=self.events,
            controller=SCHEDULER,
            options=ReloadOptions(debounce=debounce, max_delay=2.0),
        )

    def _accepted(self, active: Any, _previous: Any) -> None:
        self.metrics.observe_reload("accepted")
        program = active.program
        self.metrics.set_policy((p.name for p in program.policies), program.version)
        if self.running is not None:
            self.running.scheduler.policy_changed()

    def _rejected(self, _problem: Any) -> None:
        self.metrics.observe_reload("rejected")

    def __enter__(self) -> Reloading:
        self.events.start()
        self.reloader.start()
        assert self.holder.wait_ready(WAIT), self.holder.status()
        self.running = RunningScheduler(
            self.server, self.holder.current, scheduler_names=[SCHEDULER]
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.running is not None:
            self.running.stop()
        self.reloader.stop()
        self.events.stop()
        self.api.close()

    def metric(self, line_start: str) -> float:
        for line in self.metrics.render().decode().splitlines():
            if line.startswith(line_start + " "):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no metric {line_start}")

    def bound(self, name: str) -> str:
        key = f"{NS}/{name}"
        return str(self.server.wait_for(lambda: self.server.bound_nodes().get(key), timeout=WAIT))

    def update(self, text: str) -> str | None:
        """Change the policy key and wait until the reloader has looked at it."""
        before = self.reloader.checks
        self.server.update(configmap({KEY: text}))
        self.server.wait_for(lambda: self.reloader.checks > before, timeout=WAIT)
        return self.holder.version


def test_a_configmap_update_changes_decisions(apiserver: LoopbackAPIServer) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    with Reloading(apiserver) as rl:
        first = rl.holder.version
        apiserver.create(pod_obj("before"))
        assert rl.bound("before") == "node-a"
        apiserver.update(configmap({KEY: zone_policy("b")}))
        # The swap comes first, then its event and count: wait for the last of them.
        accepted = 'policyengine_policy_reload_total{result="accepted"}'
        apiserver.wait_for(lambda: rl.metric(accepted) == 2.0, timeout=WAIT)
        assert rl.holder.version != first
        apiserver.create(pod_obj("after"))
        assert rl.bound("after") == "node-b"
        assert rl.running is not None and rl.running.scheduler.events.flush()
        assert rl.events.flush()
    (scheduled,) = apiserver.events(reason="Scheduled", regarding="after")
    assert f"version {rl.holder.version})" in scheduled["note"]
    accepted = apiserver.events(reason=POLICY_ACCEPTED, regarding=NAME)
    assert any(f"(was {first})" in e["note"] for e in accepted)
    assert (
        rl.metric(f'policyengine_policy_info{{policy="zone",version="{rl.holder.version}"}}') == 1
    )


def test_a_broken_update_keeps_the_old_behaviour_and_surfaces_the_error(
    apiserver: LoopbackAPIServer,
) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    with Reloading(apiserver) as rl:
        good = rl.holder.version
        apiserver.update(configmap({KEY: BROKEN}))
        apiserver.wait_for(lambda: rl.holder.problem is not None, timeout=WAIT)
        apiserver.create(pod_obj("after-broken"))
        assert rl.bound("after-broken") == "node-a"  # the old policy still decides
        assert rl.holder.version == good
        assert rl.events.flush()
        assert rl.metric('policyengine_policy_reload_total{result="rejected"}') == 1.0
        assert rl.metric("policyengine_policy_stale_seconds") >= 0.0
        status = rl.holder.status()
    (warning,) = apiserver.events(reason=POLICY_REJECTED, regarding=NAME)
    assert warning["type"] == "Warning"
    assert warning["regarding"]["kind"] == "ConfigMap"
    # file:line:col of the error, as the ConfigMap key names it
    assert f"{NS}/{NAME}/{KEY}:2:" in warning["note"]
    assert f"still scheduling with version {good}" in warning["note"]
    assert status["version"] == good
    assert status["stale_since"] is not None
    assert status["error"]["stage"] == "compile"
    assert status["error"]["message"].startswith(f"{NS}/{NAME}/{KEY}:2:")


def test_a_configmap_edit_cannot_read_the_schedulers_disk(
    apiserver: LoopbackAPIServer, tmp_path: Path
) -> None:
    """Importing a file of the scheduler's own (its token, say) is refused unread: neither the
    Event, nor the log, nor /readyz quotes a line of it."""
    secret = "eyJhbGciOiJSUzI1NiJ9.the-service-account-token"
    token = tmp_path / "token"
    token.write_text(secret + "\n")
    (tmp_path / "secret.sched").write_text(secret + "\n")
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    with Reloading(apiserver) as rl:
        good = rl.holder.version
        for written in (str(token), str(tmp_path / "secret.sched"), "../../../../etc/x.sched"):
            apiserver.update(configmap({KEY: f'import "{written}"\n' + zone_policy("b")}))

            def refused(written: str = written) -> bool:
                found = rl.holder.problem
                return found is not None and f'"{written}"' in found.message

            apiserver.wait_for(refused, timeout=WAIT)
            assert rl.holder.version == good
            status = json.dumps(rl.holder.status())
            assert "PE002" in status and secret not in status
        assert rl.events.flush()
    notes = [e["note"] for e in apiserver.events(reason=POLICY_REJECTED, regarding=NAME)]
    assert len(notes) == 3
    assert all("error PE002: import" in note and secret not in note for note in notes)


def test_a_burst_of_updates_ends_on_the_last(apiserver: LoopbackAPIServer) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    with Reloading(apiserver, debounce=0.2) as rl:
        for i in range(15):
            apiserver.update(configmap({KEY: zone_policy(f"z{i}")}))
        apiserver.update(configmap({KEY: BROKEN}))  # a bad one in the middle of the burst
        apiserver.update(configmap({KEY: zone_policy("b")}))
        last = f"{NS}/{NAME}/{KEY}"
        apiserver.wait_for(
            lambda: rl.holder.current().sources.get(last) == zone_policy("b"), timeout=WAIT
        )
        apiserver.create(pod_obj("after-burst"))
        assert rl.bound("after-burst") == "node-b"
        assert rl.holder.problem is None


def test_a_deleted_configmap_keeps_the_last_good_policy_and_warns(
    apiserver: LoopbackAPIServer,
) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    with Reloading(apiserver) as rl:
        good = rl.holder.version
        apiserver.delete("configmaps", NS, NAME)
        apiserver.wait_for(lambda: rl.holder.problem is not None, timeout=WAIT)
        assert rl.holder.problem.kind == "unavailable"
        apiserver.create(pod_obj("orphaned"))
        assert rl.bound("orphaned") == "node-a"
        assert rl.holder.version == good
        assert rl.events.flush()
        (warning,) = apiserver.events(reason=POLICY_SOURCE_UNAVAILABLE, regarding=NAME)
        assert "not found" in warning["note"] and good in warning["note"]
        # Recreated with a new policy: it takes effect.
        apiserver.create(configmap({KEY: zone_policy("b")}))
        apiserver.wait_for(lambda: rl.holder.version != good, timeout=WAIT)
        assert rl.holder.problem is None
        apiserver.create(pod_obj("recreated"))
        assert rl.bound("recreated") == "node-b"


def test_unschedulable_pods_are_requeued_by_a_swap(apiserver: LoopbackAPIServer) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("c")}))  # no such zone: nothing fits
    with Reloading(apiserver) as rl:
        assert rl.running is not None
        queue = rl.running.scheduler.queue
        apiserver.create(pod_obj("waiting"))
        apiserver.wait_for(lambda: queue.where(f"{NS}/waiting") == "unschedulable", timeout=WAIT)
        # No cluster event follows, and the 5-minute retry is far away: only the swap moves it.
        apiserver.update(configmap({KEY: zone_policy("b")}))
        assert rl.bound("waiting") == "node-b"


def test_a_label_selector_compiles_every_matching_configmap_as_one_policy(
    apiserver: LoopbackAPIServer,
) -> None:
    zones(apiserver, "a", "b")
    selected = {"policyengine.io/policy": "true"}
    apiserver.create(configmap({"lib.sched": "# no rules yet\n"}, name="base", labels=selected))
    apiserver.create(configmap({KEY: zone_policy("a")}, name="zone", labels=selected))
    apiserver.create(configmap({KEY: zone_policy("b")}, name="ignored"))
    with Reloading(apiserver, selector="policyengine.io/policy=true") as rl:
        assert set(rl.holder.current().sources) == {f"{NS}/base/lib.sched", f"{NS}/zone/{KEY}"}
        apiserver.create(pod_obj("selected"))
        assert rl.bound("selected") == "node-a"


# --- policyengine run as a process -------------------------------------------------------------


@pytest.fixture
def launch(kubeconfig_path: Path, tmp_path: Path) -> Iterator[Callable[..., Run]]:
    runs: list[Run] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "POLICYENGINE"))}

    def start(name: str, *args: str) -> Run:
        run = Run(
            tmp_path,
            name,
            [
                "--kubeconfig",
                str(kubeconfig_path),
                "--metrics-addr",
                "127.0.0.1:0",
                "--no-leader-elect",
                "--policy-debounce",
                "50ms",
                *args,
            ],
            env,
        )
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.close()


def readyz(run: Run) -> tuple[int, dict[str, Any]]:
    status, text = http_get(run.metrics_url() + "/readyz")
    return status, json.loads(text)


def test_run_with_a_configmap_surfaces_a_broken_update_in_readyz_and_metrics(
    apiserver: LoopbackAPIServer, launch: Callable[..., Run]
) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    run = launch("cm", "--policy-configmap", f"{NS}/{NAME}")
    apiserver.create(pod_obj("first"))
    apiserver.wait_for(lambda: "default/first" in apiserver.bound_nodes(), timeout=WAIT)
    status, body = readyz(run)
    good = body["policy"]["version"]
    assert status == 200 and body["checks"]["scheduler"] == "ok"
    assert body["policy_version"] == good and body["policy"]["error"] is None

    apiserver.update(configmap({KEY: BROKEN}))
    run.wait_for_log(lambda r: r["event"].startswith("policy version rejected"))
    status, body = readyz(run)
    assert status == 200  # the old version keeps scheduling: still ready
    assert body["policy"]["version"] == good
    assert body["policy"]["stale_since"] is not None
    assert body["policy"]["error"]["message"].startswith(f"{NS}/{NAME}/{KEY}:2:")
    metrics = http_get(run.metrics_url() + "/metrics")[1]
    assert 'policyengine_policy_reload_total{result="rejected"} 1.0' in metrics
    assert f'policyengine_policy_info{{policy="zone",version="{good}"}} 1.0' in metrics
    apiserver.wait_for(lambda: apiserver.events(reason=POLICY_REJECTED), timeout=WAIT)

    apiserver.create(pod_obj("second"))
    apiserver.wait_for(lambda: "default/second" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/second"] == "node-a"
    assert run.terminate() == 0


def test_run_waits_for_a_first_valid_configmap_version_and_is_not_ready_meanwhile(
    apiserver: LoopbackAPIServer, launch: Callable[..., Run]
) -> None:
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: BROKEN}))
    apiserver.create(pod_obj("early"))
    run = launch("broken-first", "--policy-configmap", NAME, "--policy-namespace", NS)
    run.wait_for_log(lambda r: r["event"].startswith("policy version rejected"))
    status, body = readyz(run)
    assert status == 503
    assert body["checks"]["scheduler"].startswith(f"no valid policy yet: {NS}/{NAME}/{KEY}:2:")
    assert body["policy"]["version"] is None
    assert apiserver.binding_requests() == []

    apiserver.update(configmap({KEY: zone_policy("b")}))
    apiserver.wait_for(lambda: "default/early" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/early"] == "node-b"
    apiserver.wait_for(lambda: readyz(run)[0] == 200, timeout=WAIT)
    assert run.terminate() == 0


def test_a_replica_restarted_on_a_broken_configmap_schedules_with_the_recorded_version(
    apiserver: LoopbackAPIServer, launch: Callable[..., Run]
) -> None:
    """A bad edit, then a restart: the new process has no last good version of its own, so
    it takes the one its predecessor recorded, schedules, and reports the broken source as
    a rejected reload — until the ConfigMap is fixed, which it picks up as any reload."""
    zones(apiserver, "a", "b")
    apiserver.create(configmap({KEY: zone_policy("a")}))
    first = launch("first", "--policy-configmap", f"{NS}/{NAME}")
    apiserver.create(pod_obj("before"))
    apiserver.wait_for(lambda: "default/before" in apiserver.bound_nodes(), timeout=WAIT)
    good = readyz(first)[1]["policy"]["version"]
    record = apiserver.wait_for(
        lambda: apiserver.get("configmaps", RECORD_NS, RECORD), timeout=WAIT
    )
    assert record["data"]["version"] == good
    apiserver.update(configmap({KEY: BROKEN}))
    first.wait_for_log(lambda r: r["event"].startswith("policy version rejected"))
    assert first.terminate() == 0

    second = launch("second", "--policy-configmap", f"{NS}/{NAME}")
    restored = second.wait_for_log(lambda r: r["event"].startswith("scheduling with the recorded"))
    assert restored["version"] == good
    assert restored["source_error"].startswith(f"{NS}/{NAME}/{KEY}:2:")
    apiserver.create(pod_obj("after-restart"))
    apiserver.wait_for(lambda: "default/after-restart" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/after-restart"] == "node-a"  # the recorded rule
    status, body = readyz(second)
    assert status == 200
    assert body["policy"]["version"] == good
    assert body["policy"]["origin"].startswith(f"recorded version (configmap {RECORD_NS}/{RECORD}")
    assert body["policy"]["stale_since"] is not None
    assert body["policy"]["error"]["stage"] == "compile"
    metrics = http_get(second.metrics_url() + "/metrics")[1]
    assert 'policyengine_policy_reload_total{result="rejected"} 1.0' in metrics
    assert "policyengine_policy_stale_seconds 0.0" not in metrics
    assert f'policyengine_policy_info{{policy="zone",version="{good}"}} 1.0' in metrics
    apiserver.wait_for(lambda: len(apiserver.events(reason=POLICY_REJECTED)) == 2, timeout=WAIT)

    apiserver.update(configmap({KEY: zone_policy("b")}))
    fixed = second.wait_for_log(lambda r: r["event"] == "policy version active")
    apiserver.wait_for(lambda: readyz(second)[1]["policy"]["error"] is None, timeout=WAIT)
    apiserver.create(pod_obj("fixed"))
    apiserver.wait_for(lambda: "default/fixed" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/fixed"] == "node-b"
    recorded = apiserver.wait_for(
        lambda: (
            (cm := apiserver.get("configmaps", RECORD_NS, RECORD))
            and cm["data"]["version"] == fixed["version"]
            and cm
        ),
        timeout=WAIT,
    )
    assert recorded["data"]["origin"] == f"configmap {NS}/{NAME}"
    assert second.terminate() == 0


def test_a_replica_started_on_a_broken_directory_with_no_record_waits_not_ready(
    apiserver: LoopbackAPIServer, launch: Callable[..., Run], tmp_path: Path
) -> None:
    zones(apiserver, "a", "b")
    policy = tmp_path / "zone.sched"
    policy.write_text(BROKEN)
    apiserver.create(pod_obj("waiting"))
    run = launch("no-record", "--policy", str(policy), "--policy-poll-interval", "100ms")
    rejected = run.wait_for_log(lambda r: r["event"].startswith("policy version rejected"))
    assert rejected["errors"][0].startswith(f"{policy}:2:")
    assert "^" in rejected["errors"][0]  # rendered with the source line and a caret
    status, body = readyz(run)
    assert status == 503
    assert body["checks"]["scheduler"].startswith(f"no valid policy yet: {policy}:2:")
    assert apiserver.binding_requests() == []
    assert run.process.poll() is None  # up, not crash-looping
    policy.write_text(zone_policy("b"))
    apiserver.wait_for(lambda: "default/waiting" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/waiting"] == "node-b"
    assert run.terminate() == 0
    assert "Traceback" not in run.text()


def test_run_with_a_directory_follows_the_data_swap_and_sighup(
    apiserver: LoopbackAPIServer, launch: Callable[..., Run], tmp_path: Path
) -> None:
    zones(apiserver, "a", "b")
    volume = tmp_path / "volume"
    volume.mkdir()
    kubelet_volume(volume, {KEY: zone_policy("a")}, "2026_01_01_00_00_00.1")
    # Polling far apart: the swap below is seen only because of SIGHUP.
    run = launch("dir", "--policy", str(volume), "--policy-poll-interval", "1h")
    apiserver.create(pod_obj("first"))
    apiserver.wait_for(lambda: "default/first" in apiserver.bound_nodes(), timeout=WAIT)
    first = readyz(run)[1]["policy"]["version"]

    kubelet_volume(volume, {KEY: zone_policy("b")}, "2026_01_01_00_00_01.2")
    run.process.send_signal(signal.SIGHUP)
    record = run.wait_for_log(
        lambda r: r["event"] == "policy version active" and r.get("previous") == first
    )
    apiserver.create(pod_obj("second"))
    apiserver.wait_for(lambda: "default/second" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/second"] == "node-b"
    assert readyz(run)[1]["policy"]["version"] == record["version"]
    assert run.terminate() == 0


def test_run_polls_a_directory_for_the_data_swap(
    apiserver: LoopbackAPIServer, launch: Callable[..., Run], tmp_path: Path
) -> None:
    zones(apiserver, "a", "b")
    volume = tmp_path / "volume"
    volume.mkdir()
    kubelet_volume(volume, {KEY: zone_policy("a")}, "2026_01_01_00_00_00.1")
    run = launch("poll", "--policy", str(volume), "--policy-poll-interval", "100ms")
    run.metrics_url()
    kubelet_volume(volume, {KEY: zone_policy("b")}, "2026_01_01_00_00_01.2")
    run.wait_for_log(lambda r: r["event"] == "policy version active" and r.get("previous"))
    apiserver.create(pod_obj("polled"))
    apiserver.wait_for(lambda: "default/polled" in apiserver.bound_nodes(), timeout=WAIT)
    assert apiserver.bound_nodes()["default/polled"] == "node-b"
    assert run.terminate() == 0


def test_policy_and_configmap_flags_are_exclusive(kubeconfig_path: Path, tmp_path: Path) -> None:
    policy = tmp_path / "p.sched"
    policy.write_text(zone_policy("a"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "policyengine.cli.main",
            "run",
            "--kubeconfig",
            str(kubeconfig_path),
            "--policy",
            str(policy),
            "--policy-configmap",
            "default/policies",
        ],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2
    assert "exclusive" in done.stderr
