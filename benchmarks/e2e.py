"""The end-to-end scenario: ``policyengine run`` binding pods through a Kubernetes API.

Everything the per-pod scenarios leave out is in here: list and watch, the queue, the assume
cache, binding over HTTP, events. The cluster (1,000 basic nodes and their pending pods) is
seeded into the loopback API test server (``tests/apiserver``, kube-apiserver v1.28's wire
behaviour) in this process; the scheduler runs as ``policyengine run`` in a process of its
own, with leader election off and the client-side rate limit off (``--kube-api-qps 0``), so
what is measured is the scheduler, not a throttle. Throughput is bound pods per second between
the first and the last binding the server records; startup (compiling, listing, syncing) is
reported separately. Both processes share this machine's cores.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import Measurement, child_env, flag, note, pending, progress, summarise
from benchmarks.workload import POLICY, SEED

ROOT = Path(__file__).resolve().parent.parent
NODES = 1000
PODS = 5000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 0.05  # 250 pods a run
TIMEOUT = 600.0  # seconds a run may take before it is abandoned
IDLE = 10.0  # seconds without a new binding after which the remaining pods are taken as unplaceable


def _missing() -> str | None:
    """What this scenario needs that has not landed, if anything."""
    try:
        import tests.apiserver  # noqa: F401
        from policyengine.cli import run as _run  # noqa: F401
        from policyengine.controller import scheduler as _scheduler  # noqa: F401
    except ImportError as error:
        return f"the scheduler loop and the loopback API server ({error})"
    return None


def _one_run(nodes: int, pods: int, label: str) -> dict[str, float | int]:
    from policyengine.model import synthetic
    from tests.apiserver import LoopbackAPIServer

    objects = synthetic.generate(synthetic.basic(nodes, pods), seed=SEED)
    with LoopbackAPIServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.create_all(objects)
        kubeconfig = server.kubeconfig(Path(tmp) / "kubeconfig")
        command = [
            sys.executable, "-m", "policyengine.cli.main", "run",
            "--kubeconfig", str(kubeconfig),
            "--policy", str(POLICY),
            "--seed", "0",
            "--no-leader-elect",
            "--kube-api-qps", "0",
            "--metrics-addr", "127.0.0.1:0",
            "--log-level", "warning",
        ]  # fmt: skip
        started = time.time()
        process = subprocess.Popen(
            command, cwd=ROOT, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            step, shown, last, changed = max(1, pods // 10), -1, 0, time.monotonic()
            while time.monotonic() < deadline and process.poll() is None:
                bound = len(server.bindings())
                if bound // step != shown:
                    progress(f"{label}: {bound}/{pods} pods bound")
                    shown = bound // step
                if bound != last:
                    last, changed = bound, time.monotonic()
                # Pods that fit nowhere never bind: stop once binding has gone quiet.
                if bound >= pods or (bound and time.monotonic() - changed > IDLE):
                    break
                time.sleep(0.05)
        finally:
            process.terminate()
            try:
                _, errors = process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                _, errors = process.communicate()
        bindings = server.bindings()
    if not bindings:
        tail = errors.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{label}: policyengine run bound no pod; its stderr ends:\n{tail}")
    first, final = bindings[0].time, bindings[-1].time
    span = final - first
    return {
        "bound": len(bindings),
        "pods": pods,
        "rate": (len(bindings) - 1) / span if span > 0 else float("nan"),
        "first_bind_after": first - started,
        "all_bound_after": final - started,
    }


def run(
    runs: int = DEFAULT_RUNS, scale: float = DEFAULT_SCALE, nodes: int = NODES
) -> list[Measurement]:
    missing = _missing()
    if missing is not None:
        return [pending("e2e", missing)]
    pods = max(2, round(PODS * scale))
    results = [_one_run(nodes, pods, f"e2e: run {i + 1}/{runs}") for i in range(runs)]
    head = f"{nodes:,} nodes, {pods:,} pods"
    note("e2e", **{head: results})
    rows = [
        summarise("e2e", f"{head}: bound pods per second", [r["rate"] for r in results], "pods/s"),
        summarise(
            "e2e", f"{head}: start to first binding", [r["first_bind_after"] for r in results], "s"
        ),
        summarise(
            "e2e", f"{head}: start to last binding", [r["all_bound_after"] for r in results], "s"
        ),
    ]
    bound = sorted({int(r["bound"]) for r in results})
    if bound != [pods]:
        rows.append(flag("e2e", f"{head}: pods bound per run {bound}", f"= {pods}"))
    return rows
