"""The shipped policies on a cluster's ordinary pod mix: every decision the reference's.

The property tests draw one rule family at a time; a real queue interleaves every shape at
once under the profile a user runs (``policies/``): soft and hard spread, default spreading
behind Services, required anti-affinity, preferred affinity, GPU pods whole and shared under
learned shapes, CPU pods kept off GPU nodes. Each pending pod of a generated ``mixed`` cluster
is decided through one class cache, as ``simulate`` decides it, compared with the reference
evaluator on the same snapshot and rng, and assumed, so that the later pods meet every kind of
column kept by the earlier ones — down to a cluster too small for its queue.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from policyengine import synthetic
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import compile_paths
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.schedlib import default_schema

POLICIES = Path(__file__).resolve().parents[2] / "policies"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("nodes", "pods", "seed"),
    [
        pytest.param(60, 400, 1, id="room for most pods"),
        pytest.param(60, 400, 2, id="room for most pods, another cluster"),
        pytest.param(30, 400, 3, id="the queue asks more than the cluster holds"),
    ],
)
def test_the_shipped_policies_decide_a_mixed_queue_as_the_reference(
    nodes: int, pods: int, seed: int
) -> None:
    result = compile_paths([POLICIES], default_schema())
    assert result.program is not None, result.diagnostics
    program = result.program
    spec = synthetic.mixed(nodes, pods, running_pods=nodes // 2)
    loaded = parse_objects(synthetic.generate(spec, seed=seed), "mixed")
    snapshot, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, workloads=loaded.workloads
    )
    rng = random.Random(seed)
    classes = ClassCache()
    placed = 0
    for pod in queue_order(pending):
        state = rng.getstate()
        decision = schedule(
            program, pod, snapshot, rng, CycleOptions(all_filters=False, cache=classes)
        )
        replay = random.Random()
        replay.setstate(state)
        reference = reference_decision(program, pod, snapshot, replay)
        assert differences(decision, reference) == [], pod.key
        if decision.node is not None:
            placed += 1
            bound = with_devices(pod, decision.node, decision.gpu_devices)
            snapshot = snapshot.with_pod(bound, decision.node)
    assert placed > 0
    if nodes * 10 < pods:  # the small cluster: some pods stay pending, told why
        assert placed < len(pending)
