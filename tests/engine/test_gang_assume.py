"""``assume_gang``: a placed gang's members assumed into the snapshot, as placing them one by
one would, and the gangs after it decided alike.

``schedule_gang`` keeps the snapshot its member cycles derived; ``assume_gang`` gives it back
when asked for the same snapshot, gang and placements, and otherwise derives one member by one
(``with_devices`` then ``with_pod``, as ``simulate`` did). Hypothesis places the gangs of small
synthetic gang clusters (``policies/llm-training.sched``: GPU models, whole GPUs, gang levels,
a score over domain pod counts) in queue order both ways, each from cleared caches, and holds
every gang's decision (domain outcomes, every member's node, message, GPU grants, feasible and
infeasible nodes and scores) and the final snapshots equal; and the alike-members floor of
``_lower_bound`` equal to the least ``needed`` requests summed.
"""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine import synthetic
from policyengine.engine import gang_domains
from policyengine.engine.cycle import CycleOptions
from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.gangs import (
    Gang,
    GangDecision,
    _lower_bound,
    assume_gang,
    gangs_of,
    schedule_gang,
)
from policyengine.engine.gpu_placement import with_devices
from policyengine.engine.simulate import queue_order
from policyengine.lang.compiler import Program, compile_paths
from policyengine.model.snapshot import ClusterSnapshot, snapshot_from_objects
from policyengine.model.snapshot_io import parse_objects
from policyengine.schedlib import default_schema, domain_counts
from policyengine.schedlib.views import ResourceMap
from tests.engine.gang_builders import cluster, gang, program

POLICY = Path(__file__).resolve().parents[2] / "policies" / "llm-training.sched"
GPU = "nvidia.com/gpu"


def llm_training() -> Program:
    result = compile_paths([POLICY], default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


def synthetic_gangs(nodes: int, pods: int, seed: int) -> tuple[ClusterSnapshot, list[Gang]]:
    spec = synthetic.gangs(nodes, pods, min_gang=2, max_gang=8, domain_size=4)
    loaded = parse_objects(synthetic.generate(spec, seed=seed))
    snap, pending, _ = snapshot_from_objects(
        loaded.nodes, loaded.pods, loaded.namespaces, loaded.pod_groups
    )
    units = gangs_of(queue_order(pending), snap)
    return snap, [u for u in units if isinstance(u, Gang)]


def by_hand(snap: ClusterSnapshot, g: Gang, decision: GangDecision) -> ClusterSnapshot:
    """The placements assumed one by one, as ``simulate`` assumed them before."""
    members = {pod.key: pod for pod in g.pending}
    for d in decision.placements:
        if decision.scheduled and d.node is not None:
            snap = snap.with_pod(with_devices(members[d.pod], d.node, d.gpu_devices), d.node)
    return snap


def seen(decision: GangDecision) -> tuple[Any, ...]:
    """Everything a caller may read of a gang decision."""
    members = tuple(
        (
            d.pod,
            d.node,
            d.message,
            d.gpu_devices,
            tuple(d.feasible),
            tuple(sorted(d.infeasible.items())),
            tuple(d.ranking),
            tuple((name, d.scores[name]) for name in d.feasible),
        )
        for d in decision.placements
    )
    return (
        decision.scheduled,
        decision.domain,
        decision.message,
        decision.policy,
        decision.domains,
        members,
    )


def content(snap: ClusterSnapshot) -> tuple[Any, ...]:
    return tuple(
        (info.name, tuple((p.key, p.pod.annotations, p.pod.node_name) for p in info.pods))
        for info in snap.nodes
    )


def clear() -> None:
    gang_domains.clear()
    domain_counts.clear()


def place_all(
    prog: Program, snap: ClusterSnapshot, gangs: list[Gang], kept: bool
) -> tuple[list[tuple[Any, ...]], ClusterSnapshot]:
    clear()
    rng = random.Random(7)
    options = CycleOptions(all_filters=False, cache=ClassCache())
    out = []
    for g in gangs:
        decision = schedule_gang(prog, g, snap, rng, options)
        out.append(seen(decision))
        snap = assume_gang(snap, g, decision) if kept else by_hand(snap, g, decision)
    return out, snap


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(8, 24),
    pods=st.integers(8, 60),
    seed=st.integers(0, 10_000),
)
def test_kept_snapshots_decide_as_snapshots_derived_by_hand(
    nodes: int, pods: int, seed: int
) -> None:
    prog = llm_training()
    snap, gangs = synthetic_gangs(nodes, pods, seed)
    kept, kept_end = place_all(prog, snap, gangs, kept=True)
    fresh, fresh_end = place_all(prog, snap, gangs, kept=False)
    assert kept == fresh
    assert content(kept_end) == content(fresh_end)


def test_the_kept_snapshot_is_given_back_only_for_its_own_snapshot_gang_and_placements() -> None:
    prog = program("gang { within nvlink_domain required }")
    snap = cluster(("c1", "r1", 2), ("c2", "r1", 2))
    g = gang("job", 2)
    decision = schedule_gang(prog, g, snap, random.Random(0))
    assert decision.scheduled
    kept = assume_gang(snap, g, decision)
    assert kept is assume_gang(snap, g, decision)  # the member cycles' own snapshot
    assert content(kept) == content(by_hand(snap, g, decision))
    # Another snapshot with the same nodes: derived afresh, alike.
    other = cluster(("c1", "r1", 2), ("c2", "r1", 2))
    again = assume_gang(other, g, decision)
    assert again is not kept
    assert content(again) == content(kept)
    # A gang of other pods with the same keys: derived afresh.
    twin = gang("job", 2)
    assert assume_gang(snap, twin, decision) is not kept
    # Nothing placed: the snapshot itself.
    big = gang("big", 9)
    refused = schedule_gang(prog, big, snap, random.Random(0))
    assert not refused.scheduled
    assert assume_gang(snap, big, refused) is snap


REQUESTS = st.builds(
    lambda gpus, cpu: ResourceMap({GPU: Fraction(gpus), "cpu": Fraction(cpu, 4)}),
    st.integers(0, 8),
    st.integers(0, 9),
)


@settings(max_examples=200, deadline=None)
@given(requests=st.lists(REQUESTS, min_size=1, max_size=6), data=st.data())
def test_the_floor_is_the_least_needed_requests_summed(
    requests: list[ResourceMap], data: st.DataObject
) -> None:
    if data.draw(st.booleans()):
        requests = [requests[0]] * len(requests)  # alike members: the multiplied floor
    needed = data.draw(st.integers(0, len(requests)))
    expected: dict[str, Fraction] = {}
    if needed:
        for name in {n for r in requests for n, v in r.items() if v > 0}:
            expected[name] = sum(sorted(r[name] for r in requests)[:needed], Fraction(0))
    assert _lower_bound(requests, needed) == expected
