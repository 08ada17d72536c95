"""``policyengine run`` as real processes against the loopback API server.

Each test starts ``python -m policyengine.cli.main run`` with a kubeconfig for the loopback
server, waits (with generous timeouts, never asserting on elapsed time) for what the server
or the logs show, and checks the recorded traffic: who bound which pod, how often, and what
the Lease looked like. Processes are told apart by the pid in their User-Agent.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackAPIServer
from tests.controller.processes import Run, http_get

pytestmark = pytest.mark.slow  # processes, servers or seconds of work

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies" / "kube-default.sched"
NS, LEASE = "kube-system", "policyengine"
# Short lease timings so a takeover after kill -9 happens within the test's timeouts.
QUICK_LEASE = ["--lease-duration", "2s", "--renew-deadline", "1500ms", "--retry-period", "200ms"]
WAIT = 30.0  # upper bound for anything to happen; tests never assert how long it took


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, scheduler: str = "policyengine") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


@pytest.fixture
def start(
    apiserver: LoopbackAPIServer, kubeconfig_path: Path, tmp_path: Path
) -> Iterator[Callable[..., Run]]:
    runs: list[Run] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "POLICYENGINE"))}

    def launch(name: str, *extra: str, kubeconfig: Path | None = None) -> Run:
        args = [
            "--kubeconfig",
            str(kubeconfig or kubeconfig_path),
            "--policy",
            str(POLICY),
            "--metrics-addr",
            "127.0.0.1:0",
            "--seed",
            "1",
            *extra,
        ]
        run = Run(tmp_path, name, args, env)
        runs.append(run)
        return run

    yield launch
    for run in runs:
        run.close()


def binders(server: LoopbackAPIServer) -> Counter[str]:
    """Binding requests that succeeded, by the pid in the sender's User-Agent."""
    out: Counter[str] = Counter()
    for request in server.binding_requests():
        if request.status == 201:
            agent = request.headers.get("user-agent", "")
            out[agent.rsplit("pid ", 1)[-1].rstrip(")")] += 1
    return out


def bound_once(server: LoopbackAPIServer) -> Counter[str]:
    counts = Counter(f"{b.namespace}/{b.name}" for b in server.bindings())
    assert [key for key, n in counts.items() if n != 1] == []
    return counts


def lease_spec(server: LoopbackAPIServer) -> dict[str, Any]:
    lease = server.get("leases", NS, LEASE)
    return dict(lease["spec"]) if lease else {}


# --- tests ---------------------------------------------------------------------------------


def test_binds_pods_then_stops_on_sigterm_and_releases_the_lease(
    apiserver: LoopbackAPIServer, start: Callable[..., Run]
) -> None:
    for i in range(3):
        apiserver.create(node(f"n{i}"))
    for i in range(6):
        apiserver.create(pod(f"p{i}"))
    apiserver.create(pod("other", scheduler="default-scheduler"))  # not ours
    run = start("a", *QUICK_LEASE)
    apiserver.wait_for(lambda: len(apiserver.bindings()) == 6, timeout=WAIT)
    assert set(bound_once(apiserver)) == {f"default/p{i}" for i in range(6)}
    assert lease_spec(apiserver)["holderIdentity"] != ""

    url = run.metrics_url()
    status, text = http_get(url + "/readyz")
    assert status == 200
    ready = json.loads(text)
    assert (ready["role"], ready["scheduler_names"]) == ("leader", ["policyengine"])
    assert ready["checks"] == {"loop": "ok", "lease": "ok", "api": "ok", "scheduler": "ok"}
    assert http_get(url + "/healthz")[0] == 200
    metrics = http_get(url + "/metrics")[1].splitlines()
    assert (
        'policyengine_schedule_attempts_total{profile="policyengine",result="scheduled"} 6.0'
        in (metrics)
    )
    assert "policyengine_leader 1.0" in metrics
    assert any(
        line.startswith('policyengine_policy_info{policy="kube-default"') for line in metrics
    )

    assert run.terminate() == 0
    released = lease_spec(apiserver)
    assert (released["holderIdentity"], released["leaseDurationSeconds"]) == ("", 1)
    events = run.events()
    assert events.index("scheduler stopped") < events.index("released the lease")
    assert events[-1] == "policyengine run stopped"
    assert "Traceback" not in run.text()
    # Every stderr line is one JSON object (records() parses each) with the fixed keys.
    assert {tuple(r)[:4] for r in run.records()} == {("timestamp", "level", "logger", "event")}


def test_only_the_leader_binds_and_the_standby_takes_over_after_kill_9(
    apiserver: LoopbackAPIServer, start: Callable[..., Run]
) -> None:
    for i in range(3):
        apiserver.create(node(f"n{i}"))
    first = {f"default/a{i}" for i in range(5)}
    for key in sorted(first):
        apiserver.create(pod(key.split("/")[1]))
    leader = start("leader", *QUICK_LEASE)
    apiserver.wait_for(lambda: len(apiserver.bindings()) == 5, timeout=WAIT)
    standby = start("standby", *QUICK_LEASE)
    standby.wait_for_log(lambda r: r["event"].startswith("the lease is held by another"))
    held = lease_spec(apiserver)
    assert binders(apiserver) == {str(leader.pid): 5}

    status, text = http_get(standby.metrics_url() + "/readyz")
    assert status == 200 and json.loads(text)["role"] == "standby"  # ready, standing by

    leader.process.kill()  # SIGKILL: no release; the standby must wait for expiry
    leader.process.wait(WAIT)
    second = {f"default/b{i}" for i in range(5)}
    for key in sorted(second):
        apiserver.create(pod(key.split("/")[1]))
    apiserver.wait_for(lambda: len(apiserver.bindings()) == 10, timeout=WAIT)

    assert set(bound_once(apiserver)) == first | second
    assert binders(apiserver) == {str(leader.pid): 5, str(standby.pid): 5}
    taken = lease_spec(apiserver)
    assert taken["holderIdentity"] not in ("", held["holderIdentity"])
    assert taken["leaseTransitions"] == held["leaseTransitions"] + 1
    assert standby.terminate() == 0
    assert len(apiserver.bindings()) == 10


def test_binds_in_flight_finish_before_the_lease_is_released(
    apiserver: LoopbackAPIServer, start: Callable[..., Run]
) -> None:
    apiserver.create(node("n0"))
    for i in range(4):
        apiserver.create(pod(f"p{i}"))
    apiserver.delay_binds(1.0)
    run = start("a", *QUICK_LEASE)
    apiserver.wait_for(lambda: apiserver.binding_requests(), timeout=WAIT)
    assert run.terminate() == 0
    sent = apiserver.binding_requests()
    assert sent and all(r.status == 201 for r in sent)  # none cut off
    assert len(apiserver.bindings()) == len(sent)
    assert lease_spec(apiserver)["holderIdentity"] == ""
    events = run.events()
    assert events.index("scheduler stopped") < events.index("released the lease")


def test_without_leader_election_it_schedules_at_once_and_writes_no_lease(
    apiserver: LoopbackAPIServer, start: Callable[..., Run]
) -> None:
    apiserver.create(node("n0"))
    apiserver.create(pod("p0"))
    run = start("a", "--no-leader-elect")
    apiserver.wait_for(lambda: len(apiserver.bindings()) == 1, timeout=WAIT)
    assert run.terminate() == 0
    assert apiserver.count(resource="leases") == 0


def test_an_unreachable_api_server_is_reported_and_retried(
    start: Callable[..., Run], tmp_path: Path
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kubeconfig = LoopbackAPIServer(port=port).kubeconfig(tmp_path / "unreachable")
    run = start("a", "--no-leader-elect", kubeconfig=kubeconfig)
    first = run.wait_for_log(lambda r: r["level"] == "warning")
    assert first["event"].startswith(
        f"API server http://127.0.0.1:{port} unreachable: connection refused — retrying in "
    )
    assert first["kind"] == "unreachable"
    run.wait_for_log(lambda r: r["level"] == "warning" and r["attempt"] == 2)
    status, text = http_get(run.metrics_url() + "/readyz")
    assert status == 503
    assert json.loads(text)["checks"]["api"] == "the API server has not answered yet"
    assert run.terminate() == 0
    assert "Traceback" not in run.text()


class _NotKubernetes(http.server.BaseHTTPRequestHandler):
    """Something that answers HTTP, but is no API server: a wrong port, a proxy, a web page."""

    answer: tuple[int, str, bytes] = (404, "text/plain", b"404 page not found\n")

    def do_GET(self) -> None:
        status, kind, body = self.answer
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


NOT_KUBERNETES = [
    (
        "404",
        "http",
        (404, "text/plain", b"404 page not found\n"),
        "answered GET /version with 404 Not Found: not a Kubernetes API server — check the "
        "server address and port in the kubeconfig (a proxy? another service?)",
    ),
    (
        "html",
        "http",
        (200, "text/html", b"<html><body>It works!</body></html>"),
        "answered GET /version with text/html, not the API server's version document: not a "
        "Kubernetes API server — check the server address and port in the kubeconfig (a proxy? "
        "another service?)",
    ),
    ("tls to plain http", "https", (404, "text/plain", b""), "TLS error"),
]


@pytest.mark.parametrize(
    ("scheme", "answer", "says"),
    [row[1:] for row in NOT_KUBERNETES],
    ids=[row[0] for row in NOT_KUBERNETES],
)
def test_an_answer_that_is_not_the_kubernetes_api_is_reported_and_retried(
    scheme: str,
    answer: tuple[int, str, bytes],
    says: str,
    start: Callable[..., Run],
    tmp_path: Path,
) -> None:
    handler = type("Handler", (_NotKubernetes,), {"answer": answer})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    kubeconfig = tmp_path / "not-kubernetes"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"{scheme}://127.0.0.1:{port}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    try:
        run = start("a", "--no-leader-elect", kubeconfig=kubeconfig)
        first = run.wait_for_log(lambda r: r["level"] == "warning")
        assert first["event"].startswith(f"API server {scheme}://127.0.0.1:{port} ")
        assert says in first["event"] and " — retrying in " in first["event"]
        assert "resource" not in first and "verb" not in first  # nothing unknown is logged
        run.wait_for_log(lambda r: r["level"] == "warning" and r["attempt"] == 2)
        status, body = http_get(run.metrics_url() + "/readyz")
        assert status == 503
        assert json.loads(body)["checks"]["api"] == "the API server has not answered yet"
        assert run.terminate() == 0
        assert "Traceback" not in run.text()
        assert all(line.startswith("{") for line in run.text().splitlines())  # JSON lines only
    finally:
        server.shutdown()
        server.server_close()


def test_sigterm_while_a_server_hangs_stops_at_once_and_logs_nothing_after(
    start: Callable[..., Run], tmp_path: Path
) -> None:
    """A server that accepts and never answers: the stop does not wait out the request, and
    "stopped" is the last line (no retry warning for a request abandoned on purpose)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    kubeconfig = LoopbackAPIServer(port=port).kubeconfig(tmp_path / "hanging")
    try:
        run = start("a", "--no-leader-elect", kubeconfig=kubeconfig)
        run.metrics_url()  # started, its first /version request hanging
        assert run.terminate() == 0
        events = run.events()
        assert events[-1] == "policyengine run stopped"
        after = events[events.index(next(e for e in events if e.startswith("SIGTERM"))) :]
        assert not any("retrying" in e for e in after)
    finally:
        listener.close()


def test_a_forbidding_api_server_names_the_verb_and_resource(
    apiserver: LoopbackAPIServer, start: Callable[..., Run]
) -> None:
    apiserver.forbid(resource="leases")
    run = start("a", *QUICK_LEASE)
    record = run.wait_for_log(lambda r: r["level"] == "warning" and "forbidden" in r["event"])
    assert record["event"] == (
        'forbidden: User "system:serviceaccount:kube-system:policyengine" cannot get resource '
        '"leases" in API group "coordination.k8s.io" in the namespace "kube-system" — grant it '
        "in the ClusterRole (see deploy/)"
    )
    apiserver.clear_faults()  # RBAC fixed while it runs: it carries on
    apiserver.wait_for(lambda: lease_spec(apiserver).get("holderIdentity"), timeout=WAIT)
    assert run.terminate() == 0


def test_no_connection_settings_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    result = subprocess.run(
        [sys.executable, "-m", "policyengine.cli.main", "run", "--policy", str(POLICY)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "policyengine run: no Kubernetes API server configured: --kubeconfig was not given, "
        "KUBECONFIG is not set, and this is not a pod (KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT are not set); pass --kubeconfig PATH"
    )


# Flags ``run`` refuses before it connects: each exits 2 with its message as the last line.
BAD_FLAGS = {
    "a lease shorter than the renew deadline": (
        ["--lease-duration", "5s", "--renew-deadline", "10s"],
        "leader election: the lease duration (5s) must be longer than the renew deadline "
        "(10s), or two leaders could overlap",
    ),
    "no burst above the rate limit": (
        ["--kube-api-burst", "0"],
        "--kube-api-burst must be at least 1",
    ),
    "no connections for the writes": (
        ["--kube-api-connections", "0"],
        "--kube-api-connections must be at least 1",
    ),
}


@pytest.mark.parametrize(("flags", "message"), BAD_FLAGS.values(), ids=BAD_FLAGS)
def test_bad_flags_exit_2(kubeconfig_path: Path, flags: list[str], message: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "policyengine.cli.main",
            "run",
            "--kubeconfig",
            str(kubeconfig_path),
            "--policy",
            str(POLICY),
            *flags,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"policyengine run: {message}"


# --- the log format, in-process ------------------------------------------------------------


@pytest.mark.usefixtures("restore_logging")
def test_json_log_lines_put_the_fixed_keys_first() -> None:
    import io
    import logging

    from policyengine.controller import logs

    out = io.StringIO()
    logs.configure("info", "json", stream=out)
    logs.get_logger("policyengine.test").info("bound pod", pod="default/p", node="n1")
    logs.get_logger("policyengine.test").debug("not shown")
    logging.getLogger("kubernetes.client").warning("a %s record", "stdlib")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert list(first)[:4] == ["timestamp", "level", "logger", "event"]
    assert {k: first[k] for k in ("level", "logger", "event", "pod", "node")} == {
        "level": "info",
        "logger": "policyengine.test",
        "event": "bound pod",
        "pod": "default/p",
        "node": "n1",
    }
    assert first["timestamp"].endswith("Z")
    assert (second["logger"], second["level"], second["event"]) == (
        "kubernetes.client",
        "warning",
        "a stdlib record",
    )


@pytest.mark.usefixtures("restore_logging")
def test_console_logs_and_levels() -> None:
    import io

    from policyengine.controller import logs

    out = io.StringIO()
    logs.configure("debug", "console", stream=out)
    logs.get_logger("policyengine.test").debug("detail", key="value")
    line = out.getvalue().strip()
    assert "[debug" in line and "detail" in line and "[policyengine.test]" in line
    assert "key=value" in line
    with pytest.raises(ValueError) as error:
        logs.configure("loud", "json")
    assert str(error.value) == (
        "unknown log level 'loud' (expected one of debug, info, warning, error)"
    )


def test_the_cli_defaults_are_the_controllers() -> None:
    """The parser states the controller's defaults without importing it (and the client)."""
    from policyengine.cli import run
    from policyengine.controller import health, outbox

    assert run.DEFAULT_CONNECTIONS == outbox.DEFAULT_CONNECTIONS
    assert run.DEFAULT_METRICS_ADDR == health.DEFAULT_ADDRESS
