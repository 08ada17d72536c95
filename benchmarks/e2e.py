"""The end-to-end scenario: ``policyengine run`` binding pods through a Kubernetes API.

Everything the per-pod scenarios leave out is in here: list and watch, the queue, the assume
cache, binding over HTTP, events. The cluster (1,000 basic nodes and their pending pods) is
seeded into the loopback API test server (``loopback/``, kube-apiserver v1.28's wire
behaviour) in this process; the scheduler runs as ``policyengine run`` in a process of its
own, with leader election off and the client-side rate limit off (``--kube-api-qps 0``), so
what is measured is the scheduler, not a throttle. Throughput is bound pods per second between
the first and the last binding the server records; startup (compiling, listing, syncing) is
reported separately. Both processes share this machine's cores, and so does any other work
on the machine, which moves the wall-clock figures a lot; the CPU time each process spends
per bound pod (read between the first and the last binding: the scheduler's from
``/proc/PID/stat``, the API server's as this process's) hardly moves, so compare those.

The scheduler starts as an installed one does, from compiled bytecode: the package is
byte-compiled before the runs and the child may use (and write) ``__pycache__`` even where
the environment sets ``PYTHONDONTWRITEBYTECODE`` — otherwise every start compiles the whole
package from source again (about 0.8 s on this machine), which no deployment pays.
"""

from __future__ import annotations

import compileall
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import (
    Measurement,
    child_env,
    flag,
    frozen_heap,
    full_size,
    note,
    pending,
    progress,
    summarise,
)
from benchmarks.workload import POLICY, SEED

ROOT = Path(__file__).resolve().parent.parent
NODES = 1000
PODS = 5000
DEFAULT_RUNS = 3
DEFAULT_SCALE = 1.0  # the full 5,000 pods
TIMEOUT = 600.0  # seconds a run may take before it is abandoned
IDLE = 10.0  # seconds without a new binding after which the remaining pods are taken as unplaceable


def _missing() -> str | None:
    """What this scenario needs that has not landed, if anything."""
    try:
        import loopback  # noqa: F401
        from policyengine.cli import run as _run  # noqa: F401
        from policyengine.controller import scheduler as _scheduler  # noqa: F401
    except ImportError as error:
        return f"the scheduler loop and the loopback API server ({error})"
    return None


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    # utime and stime are fields 14 and 15 of stat(5), counted after the command's ")"
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _one_run(nodes: int, pods: int, label: str) -> dict[str, float | int]:
    from loopback import LoopbackAPIServer
    from policyengine import synthetic

    objects = synthetic.generate(synthetic.basic(nodes, pods), seed=SEED)
    with LoopbackAPIServer() as server, tempfile.TemporaryDirectory() as tmp, frozen_heap():
        server.create_all(objects)
        gc.freeze()  # the seeded cluster: see frozen_heap
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
        env = child_env()
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # see the module docstring
        started = time.time()
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        # (pods bound, scheduler CPU s, this process's CPU s) when binding was first and
        # last seen to move
        begin: tuple[int, float, float] | None = None
        end: tuple[int, float, float] | None = None
        try:
            deadline = time.monotonic() + TIMEOUT
            step, shown, last, changed = max(1, pods // 10), -1, 0, time.monotonic()
            while time.monotonic() < deadline and process.poll() is None:
                bound = server.binding_count()  # not a copy of the growing list, 20 times a second
                if bound // step != shown:
                    progress(f"{label}: {bound}/{pods} pods bound")
                    shown = bound // step
                if bound != last:
                    last, changed = bound, time.monotonic()
                    end = (bound, _cpu_seconds(process.pid), time.process_time())
                    begin = begin or end
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
        # Every pod is either bound or was told why not (a FailedScheduling event): the basic
        # templates ask more GPUs than the cluster's GPU nodes hold.
        told = {
            (str(e["regarding"].get("namespace")), str(e["regarding"]["name"]))
            for e in server.events(reason="FailedScheduling")
        }
        unbound = {
            (str(o["metadata"].get("namespace", "default")), str(o["metadata"]["name"]))
            for o in objects
            if o.get("kind") == "Pod" and not o.get("spec", {}).get("nodeName")
        }
        unbound -= {(b.namespace, b.name) for b in bindings}
    if not bindings:
        tail = errors.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{label}: policyengine run bound no pod; its stderr ends:\n{tail}")
    first, final = bindings[0].time, bindings[-1].time
    span = final - first
    per_pod = {"scheduler_cpu_ms": float("nan"), "server_cpu_ms": float("nan")}
    if begin is not None and end is not None and end[0] > begin[0]:
        count = end[0] - begin[0]
        per_pod["scheduler_cpu_ms"] = (end[1] - begin[1]) / count * 1e3
        per_pod["server_cpu_ms"] = (end[2] - begin[2]) / count * 1e3
    return {
        **per_pod,
        "bound": len(bindings),
        "unbound_untold": len(unbound - told),
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
    compileall.compile_dir(ROOT / "policyengine", quiet=1)
    results = [_one_run(nodes, pods, f"e2e: run {i + 1}/{runs}") for i in range(runs)]
    head = f"{nodes:,} nodes, {pods:,} pods"
    note("e2e", **{head: results})
    rows = [
        summarise(
            "e2e",
            f"{head}: bound pods per second",
            [r["rate"] for r in results],
            "pods/s",
            target=full_size(">= 300 pods/s", pods, PODS),
        ),
        summarise(
            "e2e", f"{head}: start to first binding", [r["first_bind_after"] for r in results], "s"
        ),
        summarise(
            "e2e", f"{head}: start to last binding", [r["all_bound_after"] for r in results], "s"
        ),
        summarise(
            "e2e",
            f"{head}: scheduler CPU per bound pod",
            [r["scheduler_cpu_ms"] for r in results],
            "ms",
        ),
        summarise(
            "e2e",
            f"{head}: API server CPU per bound pod",
            [r["server_cpu_ms"] for r in results],
            "ms",
        ),
    ]
    rows.append(
        summarise(
            "e2e",
            f"{head}: pods bound (the others told FailedScheduling)",
            [r["bound"] for r in results],
            "pods",
        )
    )
    untold = [int(r["unbound_untold"]) for r in results]
    if any(untold):
        rows.append(
            flag("e2e", f"{head}: pods neither bound nor told why, per run {untold}", "= 0")
        )
    return rows
