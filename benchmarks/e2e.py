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
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _scheduler_metrics(port: int) -> dict[str, float]:
    """The scheduler's cycle CPU seconds and filter-and-score stages so far, from its
    ``/metrics`` (NaN when it does not answer)."""
    found = {CYCLE_CPU: float("nan"), STAGES: float("nan")}
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    except OSError:
        return found
    for line in text.splitlines():
        name, _, value = line.rpartition(" ")
        if name in (CYCLE_CPU, STAGES):
            found[name] = float(value)
    return found


CYCLE_CPU = "policyengine_scheduling_cycle_cpu_seconds_total"
STAGES = 'policyengine_scheduling_stage_duration_seconds_count{stage="filter_score"}'


def _one_run(
    nodes: int,
    pods: int,
    label: str,
    preset: str = "basic",
    policy: Path = POLICY,
    write_delay: float = 0.0,
) -> dict[str, float | int]:
    from loopback import LoopbackAPIServer
    from loopback.faults import Match
    from policyengine import synthetic

    objects = synthetic.generate(getattr(synthetic, preset)(nodes, pods), seed=SEED)
    port = _free_port()
    with LoopbackAPIServer() as server, tempfile.TemporaryDirectory() as tmp, frozen_heap():
        server.create_all(objects)
        gc.freeze()  # the seeded cluster: see frozen_heap
        if write_delay:
            # Every write the loop makes (bindings and Events are creates, the PodScheduled
            # condition a patch) answered only after ``write_delay`` seconds.
            for verb in ("create", "patch"):
                server.faults.delay(Match(verb=verb), write_delay, None)
        kubeconfig = server.kubeconfig(Path(tmp) / "kubeconfig")
        command = [
            sys.executable, "-m", "policyengine.cli.main", "run",
            "--kubeconfig", str(kubeconfig),
            "--policy", str(policy),
            "--seed", "0",
            "--no-leader-elect",
            "--kube-api-qps", "0",
            "--metrics-addr", f"127.0.0.1:{port}",
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
        # The scheduler's metrics when binding was first seen to move, and at the end.
        first_metrics: dict[str, float] = {}
        last_metrics: dict[str, float] = {}
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
                    if begin is None:
                        begin = end
                        first_metrics = _scheduler_metrics(port)
                # Pods that fit nowhere never bind: stop once binding has gone quiet.
                if bound >= pods or (bound and time.monotonic() - changed > IDLE):
                    break
                time.sleep(0.05)
            if process.poll() is None:
                last_metrics = _scheduler_metrics(port)
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
    nan = float("nan")
    per_pod = {"scheduler_cpu_ms": nan, "server_cpu_ms": nan, "cycle_cpu_ms": nan}
    per_pod |= {"outside_cpu_ms": nan, "outside_share": nan}
    if begin is not None and end is not None and end[0] > begin[0]:
        count = end[0] - begin[0]
        per_pod["scheduler_cpu_ms"] = (end[1] - begin[1]) / count * 1e3
        per_pod["server_cpu_ms"] = (end[2] - begin[2]) / count * 1e3
        if first_metrics and last_metrics:
            cycles = last_metrics[STAGES] - first_metrics[STAGES]
            cycle_cpu = last_metrics[CYCLE_CPU] - first_metrics[CYCLE_CPU]
            if cycles > 0:
                per_pod["cycle_cpu_ms"] = cycle_cpu / cycles * 1e3
            # What a bound pod costs the scheduler outside its scheduling cycles: watches,
            # queue, assume, the bind request, the event.
            cycles_per_pod = cycle_cpu / count * 1e3
            per_pod["outside_cpu_ms"] = per_pod["scheduler_cpu_ms"] - cycles_per_pod
            # Both per bound pod: the cycles of pods that fit nowhere count on the cycles'
            # side as their events and condition patches count on the loop's.
            if cycles_per_pod > 0:
                per_pod["outside_share"] = per_pod["outside_cpu_ms"] / cycles_per_pod
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
    return measure("e2e", "basic", POLICY, runs, scale, nodes)


# The rows beside the rate: (what, the run's field, unit).
ROWS = (
    ("start to first binding", "first_bind_after", "s"),
    ("start to last binding", "all_bound_after", "s"),
    ("scheduler CPU per bound pod", "scheduler_cpu_ms", "ms"),
    ("scheduler CPU per scheduling cycle", "cycle_cpu_ms", "ms"),
    ("scheduler CPU per bound pod outside its cycles", "outside_cpu_ms", "ms"),
    ("API server CPU per bound pod", "server_cpu_ms", "ms"),
    ("pods bound (the others told FailedScheduling)", "bound", "pods"),
)


def measure(
    scenario: str,
    preset: str,
    policy: Path,
    runs: int,
    scale: float,
    nodes: int,
    write_delay: float = 0.0,
    overhead_target: str = "",
) -> list[Measurement]:
    """The scenario's rows: ``runs`` runs of ``preset``'s cluster under ``policy``, the API
    server answering each write after ``write_delay`` seconds; ``overhead_target`` bounds the
    loop's own work (outside the cycles) as a share of the cycles'."""
    missing = _missing()
    if missing is not None:
        return [pending(scenario, missing)]
    pods = max(2, round(PODS * scale))
    compileall.compile_dir(ROOT / "policyengine", quiet=1)
    results = [
        _one_run(nodes, pods, f"{scenario}: run {i + 1}/{runs}", preset, policy, write_delay)
        for i in range(runs)
    ]
    head = f"{nodes:,} nodes, {pods:,} pods"
    note(scenario, **{head: results})
    rows = [
        summarise(
            scenario,
            f"{head}: bound pods per second",
            [r["rate"] for r in results],
            "pods/s",
            target=full_size(">= 300 pods/s", pods, PODS),
        )
    ]
    rows += [
        summarise(scenario, f"{head}: {what}", [r[field] for r in results], unit)
        for what, field, unit in ROWS
    ]
    rows.append(
        summarise(
            scenario,
            f"{head}: the loop's own CPU over its cycles' CPU, per bound pod",
            [r["outside_share"] for r in results],
            "x",
            target=full_size(overhead_target, pods, PODS) if overhead_target else "",
        )
    )
    untold = [int(r["unbound_untold"]) for r in results]
    if any(untold):
        rows.append(
            flag(scenario, f"{head}: pods neither bound nor told why, per run {untold}", "= 0")
        )
    return rows
