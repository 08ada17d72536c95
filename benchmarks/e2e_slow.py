"""The end-to-end scenario against a slower API server: ``e2e``'s cluster and pods, with the
loopback API server answering every write (a binding, an Event, a status patch) only after
20 ms, as a control plane whose etcd commits slowly does. The loop's writes then wait on the
server rather than on the scheduler: HTTP/1.1 carries one request per connection, so the
connections the loop may keep open (``policyengine run --kube-api-connections``) bound the
writes in flight and with them the rate. How it measures is ``benchmarks.e2e``'s."""

from __future__ import annotations

from benchmarks.e2e import DEFAULT_RUNS, DEFAULT_SCALE, NODES, measure
from benchmarks.harness import Measurement
from benchmarks.workload import POLICY

WRITE_DELAY = 0.02  # seconds the server takes to answer each write


def run(
    runs: int = DEFAULT_RUNS, scale: float = DEFAULT_SCALE, nodes: int = NODES
) -> list[Measurement]:
    return measure("e2e_slow", "basic", POLICY, runs, scale, nodes, WRITE_DELAY)
