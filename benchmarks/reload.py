"""The reload scenario: time from a policy ConfigMap update to the first decision made by the
new version, in a running scheduler.

Cold compile time is already in ``compile``; what an operator waits for after ``kubectl apply``
is more than that: the watch delivering the update, the debounce (on purpose: a burst of edits
is validated once), compiling and testing the new version, the swap, re-queueing the pods the
old version could not place, and the next cycle. So this is timed from the outside, as e2e is:
the loopback API test server (``loopback/``) in this process holds the cluster and a
ConfigMap with version *a* of a small policy, and ``policyengine run --policy-configmap`` runs
in a process of its own (no leader election, ``--kube-api-qps 0``).

Version *a* sends pods to node group ``a``, which has no node, so the waiting pods stay
pending; version *b* sends them to group ``b``, which every node is in, so any binding after
the update is a decision of *b* (each Scheduled event's version is checked against the
version the ConfigMap's PolicyAccepted event names). Per run, once *a* has rejected the
waiting pods and their first backoff has passed (pods pending for a while, the common case),
the ConfigMap is patched over HTTP and, as soon as the response is back, one more pod is
created. Two figures, from the patch's response to the binding the loopback server records:

* the first binding by the new version (a waiting pod): the reload itself;
* the pod created right after the update: the scheduler sees it before the reload lands, so
  version *a* rejects it first and it waits out its backoff (1 s) after the swap.

Each run is a fresh process. The debounce is part of the delay by design, so it is measured
twice: with a short ``--policy-debounce`` and with ``run``'s default.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import Measurement, child_env, flag, note, pending, progress, summarise

ROOT = Path(__file__).resolve().parent.parent
NODES = 1000
PODS = 1000  # pods waiting when the update lands, at full scale
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.001  # one waiting pod
SHORT_DEBOUNCE = 0.05  # seconds; what the reload tests use
TARGET = "≤ 1 s"
SEED = 1
TIMEOUT = 120.0  # seconds any one wait may take before the run is abandoned

NAMESPACE, CONFIGMAP, KEY = "default", "reload-bench", "reload-bench.sched"
GROUP_LABEL = "reload.policyengine.io/group"
SCHEDULER_NAME = "policyengine"  # the profile of a policy that declares none


def policy(group: str) -> str:
    """One version of the policy: kube-scheduler's defaults, and only nodes of ``group``."""
    return (
        f"# reload benchmark, version {group}: only nodes of group {group}\n"
        'import "kube-default.sched"\n'
        "\n"
        'policy "reload-bench" {\n'
        "  use kube\n"
        "\n"
        "  filter group {\n"
        f'    node.labels["{GROUP_LABEL}"] == "{group}"\n'
        f'  }} reason "node is not in group {group}"\n'
        "}\n"
    )


def _missing() -> str | None:
    """What this scenario needs that has not landed, if anything."""
    try:
        import loopback  # noqa: F401
        from policyengine.cli import run as _run  # noqa: F401
        from policyengine.controller import reload as _reload  # noqa: F401
        from policyengine.controller import scheduler as _scheduler  # noqa: F401
    except ImportError as error:
        return f"hot reload, the scheduler loop and the loopback API server ({error})"
    return None


def default_debounce() -> float:
    """``policyengine run``'s own ``--policy-debounce`` default, in seconds."""
    from policyengine.cli.main import build_parser

    return float(build_parser().parse_args(["run"]).policy_debounce)


def _shown(debounce: float | None) -> str:
    if debounce is None:
        return f"default debounce {default_debounce() * 1000:.0f} ms"
    return f"debounce {debounce * 1000:.0f} ms"


def _configmap(text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
        "data": {KEY: text},
    }


def _pod(name: str) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "64Mi"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "reload-bench"}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "containers": [{"name": "c", "image": "app", "resources": {"requests": requests}}],
        },
    }


def _nodes(count: int) -> list[dict[str, Any]]:
    """The basic benchmark's nodes, every one in group ``b``."""
    from policyengine import synthetic

    objects = synthetic.generate(synthetic.basic(count, 0), seed=SEED)
    nodes = [o for o in objects if o.get("kind") == "Node"]
    for node in nodes:
        node["metadata"].setdefault("labels", {})[GROUP_LABEL] = "b"
    return nodes


_VERSION = re.compile(r"version (\S+?)\)")
_ACTIVE = re.compile(r"policy version (\S+) is active")


def _one_run(
    nodes: list[dict[str, Any]], waiting: int, debounce: float | None, label: str
) -> dict[str, Any]:
    from kubernetes import client

    from loopback import LoopbackAPIServer
    from policyengine.controller.scheduler import SchedulerOptions

    names = [f"waiting-{i}" for i in range(waiting)]
    fresh = "created-after-update"
    with LoopbackAPIServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.create_all(nodes)
        server.create(_configmap(policy("a")))
        for name in names:
            server.create(_pod(name))
        kubeconfig = server.kubeconfig(Path(tmp) / "kubeconfig")
        command = [
            sys.executable, "-m", "policyengine.cli.main", "run",
            "--kubeconfig", str(kubeconfig),
            "--policy-configmap", f"{NAMESPACE}/{CONFIGMAP}",
            "--seed", "0",
            "--no-leader-elect",
            "--kube-api-qps", "0",
            "--metrics-addr", "127.0.0.1:0",
            "--log-level", "warning",
        ]  # fmt: skip
        if debounce is not None:
            command += ["--policy-debounce", f"{debounce * 1000:g}ms"]
        stderr_path = Path(tmp) / "stderr"
        with stderr_path.open("wb") as stderr:
            process = subprocess.Popen(
                command, cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=stderr
            )
        api = client.ApiClient(server.client_configuration())
        try:

            def wait(what: str, done: Callable[[], bool]) -> None:
                deadline = time.monotonic() + TIMEOUT
                while not done():
                    if process.poll() is not None:
                        tail = stderr_path.read_text(errors="replace")[-2000:]
                        raise RuntimeError(
                            f"{label}: policyengine run exited ({process.returncode}) while "
                            f"waiting for {what}; its stderr ends:\n{tail}"
                        )
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{label}: no {what} after {TIMEOUT:.0f} s")
                    time.sleep(0.01)

            def rejected(name: str) -> bool:
                return bool(server.events(reason="FailedScheduling", regarding=name))

            progress(f"{label}: waiting for version a to reject {waiting} pod(s)")
            wait("rejection by version a", lambda: all(rejected(n) for n in names))
            # Pods that have been pending a while: past their first backoff.
            time.sleep(SchedulerOptions().initial_backoff + 0.2)
            before = len(server.bindings())

            progress(f"{label}: updating the ConfigMap to version b")
            core = client.CoreV1Api(api)
            core.patch_namespaced_config_map(CONFIGMAP, NAMESPACE, {"data": {KEY: policy("b")}})
            updated = time.time()
            server.create(_pod(fresh))
            everyone = {f"{NAMESPACE}/{n}" for n in [*names, fresh]}
            wait("binding by version b", lambda: everyone <= server.bound_nodes().keys())

            # Outside the timing: which version decided, by the events (posted asynchronously).
            def accepted() -> list[str]:
                notes = [e["note"] for e in server.events(reason="PolicyAccepted")]
                return [m.group(1) for m in map(_ACTIVE.search, notes) if m]

            wait("PolicyAccepted events", lambda: len(accepted()) >= 2)
            wait("Scheduled events", lambda: all(_scheduled(server, n) for n in everyone))
        finally:
            api.close()
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        bindings = server.bindings()[before:]
        first_version, new_version = accepted()[0], accepted()[-1]
        deciding = sorted({_scheduled(server, n) for n in everyone})
        fresh_rejected = rejected(fresh)
    fresh_bound = next(b for b in bindings if b.name == fresh)
    return {
        "first_binding_after": min(b.time for b in bindings) - updated,
        "created_pod_bound_after": fresh_bound.time - updated,
        "last_waiting_bound_after": max(b.time for b in bindings if b.name != fresh) - updated,
        "bound": len(bindings),
        "version_a": first_version,
        "version_b": new_version,
        "deciding_versions": deciding,
        "created_pod_rejected_by_a_first": fresh_rejected,
    }


def _scheduled(server: Any, key: str) -> str:
    """The policy version named by the pod's Scheduled event ('' until it is there)."""
    name = key.rpartition("/")[2]
    for event in server.events(reason="Scheduled", regarding=name):
        match = _VERSION.search(event.get("note") or "")
        if match:
            return match.group(1)
    return ""


def run(
    runs: int = DEFAULT_RUNS,
    scale: float = DEFAULT_SCALE,
    nodes: int = NODES,
    debounces: Sequence[float | None] = (SHORT_DEBOUNCE, None),
) -> list[Measurement]:
    """``debounces``: the ``--policy-debounce`` values measured, None for ``run``'s default."""
    missing = _missing()
    if missing is not None:
        return [pending("reload", missing)]
    waiting = max(1, round(PODS * scale))
    cluster = _nodes(nodes)
    head = f"{nodes:,} nodes, {waiting:,} waiting pod{'s' if waiting != 1 else ''}"
    rows: list[Measurement] = []
    for debounce in debounces:
        shown = _shown(debounce)
        results = [
            _one_run(cluster, waiting, debounce, f"reload ({shown}): run {i + 1}/{runs}")
            for i in range(runs)
        ]
        note("reload", **{f"{head}, {shown}": results})
        rows.append(
            summarise(
                "reload",
                f"{head}, {shown}: update to first binding by the new version",
                [r["first_binding_after"] for r in results],
                "s",
                target=TARGET,
            )
        )
        rows.append(
            summarise(
                "reload",
                f"{head}, {shown}: update to binding of a pod created just after it",
                [r["created_pod_bound_after"] for r in results],
                "s",
            )
        )
        if waiting > 1:
            rows.append(
                summarise(
                    "reload",
                    f"{head}, {shown}: update to the last waiting pod bound",
                    [r["last_waiting_bound_after"] for r in results],
                    "s",
                )
            )
        wrong = [r for r in results if r["deciding_versions"] != [r["version_b"]]]
        if wrong or any(r["version_a"] == r["version_b"] for r in results):
            seen = sorted({v for r in results for v in r["deciding_versions"]})
            rows.append(
                flag("reload", f"{head}, {shown}: pods decided by versions {seen}", "new version")
            )
    return rows
