"""The storage builtins decide alike in the fast path and in the reference evaluator.

Every pending pod has volumes here (claims that may be missing, bound, waiting for their first
consumer, being deleted or used by running pods; in-tree disks; ephemeral volumes), over
random volumes, classes and CSINode attach limits, under ``kube-default.sched``. Pods are
placed one after another with their volume decisions assumed, so the class cache meets
changed claims and volumes.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.engine.volumes import assume_volumes
from policyengine.model.volume_binder import ClaimMatcher, find_matching_volume
from tests.engine.storage_strategies import storage, volumes
from tests.engine.strategies import compiled, nodes, volume_cluster
from tests.model.builders import make_pod, snapshot

POLICY = 'import "kube-default.sched"\n'


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_storage_builtins_decide_as_the_reference(data: st.DataObject) -> None:
    program = compiled(POLICY)
    cluster_nodes, running = data.draw(volume_cluster(5, 4))
    names = [n.name for n in cluster_nodes]
    snap = snapshot(cluster_nodes, running).with_storage(data.draw(storage(names)))
    rng = random.Random(data.draw(st.integers(0, 5)))
    options = CycleOptions(all_filters=data.draw(st.booleans()), cache=ClassCache())
    for index in range(data.draw(st.integers(1, 3))):
        pod = make_pod(
            f"pending{index}",
            volumes=data.draw(volumes(always=True)),
        )
        state = rng.getstate()
        decision = schedule(program, pod, snap, rng, options)
        replay = random.Random()
        replay.setstate(state)
        reference = reference_decision(program, pod, snap, replay)
        assert differences(decision, reference) == []
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)
            if decision.volumes and data.draw(st.booleans()):
                # The decisions assumed: a snapshot of the same nodes with other storage.
                snap = assume_volumes(snap, decision.node, decision.volumes)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_claim_matcher_finds_what_the_scan_finds(data: st.DataObject) -> None:
    cluster_nodes = data.draw(nodes(data.draw(st.integers(1, 4))))
    objects = data.draw(storage([n.name for n in cluster_nodes]))
    for claim in objects.pvcs.values():
        volumes = objects.pvs_by_class.get(claim.storage_class, ())
        matcher = ClaimMatcher.of(claim, volumes)
        assert matcher is not None
        excluded = set(data.draw(st.lists(st.sampled_from(sorted(objects.pvs) or ["x"]))))
        for node in cluster_nodes:
            assert matcher.match(node.labels, excluded) == find_matching_volume(
                claim, volumes, node.labels, excluded
            )
