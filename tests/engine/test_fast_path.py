"""The engine's batched fast path decides exactly as the reference evaluator.

The engine evaluates each rule over all the nodes of a cycle at once (``NodeBatch``), calls
the batch forms of the kube builtins (``schedlib.batch``) and reuses node views between
cycles. Hypothesis generates small clusters (nodes with random labels, taints, resources and
running pods), pending pods (requests, tolerations, node selectors, host ports, preferred
affinity, node names, volumes of claims that may be missing, bound, waiting or being deleted,
over random volumes, classes and CSINode limits) and policies (``kube-default.sched`` plus random simple filter and score
rules over node attributes, node load included, some guarded so that pods leave them idle, and
maybe an ``overcommit``), places a few pods one after another (so views and caches are
reused across changed snapshots), and asserts every decision equals one made by the
reference evaluator alone (``engine.reference_cycle``): feasible set, first rejection and its
reasons, raw, normalised and total scores, and the chosen node from the same rng state.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.engine.decision import Rejection, RejectionGroup, first_rejection_groups
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.reference_cycle import differences, reference_decision
from policyengine.model.load import NodeLoad
from tests.engine.storage_strategies import storage
from tests.engine.strategies import compiled, nodes, pods, policies
from tests.model.builders import snapshot


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_path_decides_as_the_reference(data: st.DataObject) -> None:
    program = compiled(data.draw(policies()))
    cluster_nodes = data.draw(nodes(data.draw(st.integers(1, 6))))
    names = [n.name for n in cluster_nodes]
    running = [
        data.draw(pods(f"run{i}", names, on=data.draw(st.sampled_from(names)), with_volumes=True))
        for i in range(data.draw(st.integers(0, 4)))
    ]
    load = st.one_of(
        st.none(), st.builds(NodeLoad, st.sampled_from([None, 0.2, 0.5, 0.9]), gpu=st.just(0.3))
    )
    loads = {name: found for name in names if (found := data.draw(load)) is not None}
    snap = snapshot(cluster_nodes, running).with_loads(loads)
    snap = snap.with_storage(data.draw(storage(names)))
    all_filters = data.draw(st.booleans())
    rng = random.Random(data.draw(st.integers(0, 5)))
    options = CycleOptions(all_filters=all_filters, cache=ClassCache())
    for index in range(data.draw(st.integers(1, 3))):
        pod = data.draw(pods(f"pending{index}", names, with_volumes=True))
        state = rng.getstate()
        decision = schedule(program, pod, snap, rng, options)
        replay = random.Random()
        replay.setstate(state)
        reference = reference_decision(program, pod, snap, replay)
        # Read before the per-node table exists: the cycle groups its rows itself.
        assert _by_rejection(first_rejection_groups(decision.infeasible)) == _by_rejection(
            [
                (Rejection(rule, reference.first_reasons[name]), [name])
                for name, rule in reference.first_rejection.items()
            ]
        )
        assert differences(decision, reference) == []
        if decision.node is not None:
            snap = snap.with_pod(pod, decision.node)


def _by_rejection(groups: list[RejectionGroup]) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    merged: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for rejection, names in groups:
        merged.setdefault((rejection.rule, rejection.reasons), []).extend(names)
    return {key: sorted(names) for key, names in merged.items()}
