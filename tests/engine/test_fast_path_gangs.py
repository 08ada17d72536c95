"""Gang member cycles on the fast path decide exactly as the reference evaluator.

``schedule_gang`` tries a gang's members one after another inside one topology domain
(``CycleOptions.candidates``), each on the snapshot the members before it were assumed into,
and starts again from the gang's snapshot in the next domain when one falls short. Those
cycles start from their class's last one (``engine.cycle``'s whole-cycle state): the rows a
placement changed, the rows a change of candidates took in or out, and score columns that are
the member's own (a rule reading ``pod.name``: members of one gang differ there alone) are
looked at again, the rest is reused. Hypothesis generates clusters, policies (the fast-path
property test's random rules, plus rules reading the member's name) and gangs of alike
members, replays domain tries as ``schedule_gang`` makes them, and holds every member's
decision equal to the reference evaluator's under the same candidates (``reference_decision``
with ``candidates``): feasible set, first rejections and their reasons, raw, normalised and
total scores, and the chosen node from the same rng state.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policyengine.engine import classcache
from policyengine.engine.classcache import ClassCache, policy_plan
from policyengine.engine.cycle import CycleOptions, schedule
from policyengine.model.frozen import FrozenDict
from tests.engine.agreement import decide_as_the_reference
from tests.engine.strategies import (
    FILTER_BODIES,
    NORMALIZE,
    SCORE_BODIES,
    compiled,
    nodes,
    pods,
)
from tests.model.builders import make_node, make_pod, snapshot

# Score rules keyed by the member's own name: each member checks out a column of its own.
OWN_BODIES = [
    'domain_pod_count(pod, node, "zone", {"job": pod.labels["job"] ?? pod.name}) * 10',
    'if pod.name == "m0" then 40 else node.pod_count * 10',
    'domain_pod_count(pod, node, "kubernetes.io/hostname", {"job": pod.labels["job"] ?? "x"})',
]


@st.composite
def gang_policies(draw: st.DrawFn) -> str:
    rules = []
    for index in range(draw(st.integers(0, 2))):
        rules.append(f"filter extra{index} {{ {draw(st.sampled_from(FILTER_BODIES))} }}")
    bodies = draw(st.lists(st.sampled_from(SCORE_BODIES + OWN_BODIES), min_size=1, max_size=3))
    for index, body in enumerate(bodies):
        weight = draw(st.integers(1, 3))
        rules.append(
            f"score bonus{index} weight {weight}{draw(st.sampled_from(NORMALIZE))} {{ {body} }}"
        )
    inner = "\n  ".join(rules)
    return (
        f'import "kube-default.sched"\npolicy "p" {{\n  use kube\n  {inner}\n}}\n'
        'profile "policyengine" {\n  policies "p"\n}\n'
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_member_cycles_decide_as_the_reference(data: st.DataObject) -> None:
    program = compiled(data.draw(gang_policies()))
    cluster_nodes = data.draw(nodes(data.draw(st.integers(2, 7))))
    names = [n.name for n in cluster_nodes]
    running = [
        data.draw(pods(f"run{i}", names, on=data.draw(st.sampled_from(names))))
        for i in range(data.draw(st.integers(0, 4)))
    ]
    base = snapshot(cluster_nodes, running)
    template = data.draw(pods("m", names))
    labels = FrozenDict({**template.labels, "job": data.draw(st.sampled_from(["j1", "j2"]))})
    members = [
        replace(template, name=f"m{i}", uid=f"uid-m{i}", labels=labels)
        for i in range(data.draw(st.integers(2, 5)))
    ]
    rng = random.Random(data.draw(st.integers(0, 5)))
    classes = ClassCache()
    # Domain tries as schedule_gang makes them: each from the gang's snapshot, the members
    # one after another; None: no topology constraint.
    for _ in range(data.draw(st.integers(1, 3))):
        subset = data.draw(st.none() | st.sets(st.sampled_from(names), max_size=len(names)))
        candidates = None if subset is None else frozenset(subset)
        options = CycleOptions(all_filters=False, candidates=candidates, cache=classes)
        snap = base
        for pod in members[: data.draw(st.integers(1, len(members)))]:
            decision = decide_as_the_reference(program, pod, snap, rng, options)
            if decision.node is not None:
                snap = snap.with_pod(pod, decision.node)


def test_a_member_tried_again_in_another_domain_scores_with_its_own_column() -> None:
    # Member m0's own column (it reads pod.name) is still valid from the first domain when the
    # second is tried, after more members than the class keeps states for: the totals must
    # come from m0's values, not from the last member's.
    program = compiled(
        'import "kube-default.sched"\npolicy "p" {\n  use kube\n'
        '  score own weight 2 { if pod.name == "m0" then 40 else node.pod_count * 10 }\n}\n'
        'profile "policyengine" {\n  policies "p"\n}\n'
    )
    cluster = [make_node(f"n{i}", cpu="8", memory="8Gi", pods=20) for i in range(4)]
    base = snapshot(cluster, [])
    members = [make_pod(f"m{i}", labels={"job": "j"}) for i in range(7)]
    rng = random.Random(0)
    classes = ClassCache()
    for domain in (frozenset({"n0", "n1"}), frozenset({"n2", "n3"}), frozenset({"n0", "n2"})):
        options = CycleOptions(all_filters=False, candidates=domain, cache=classes)
        snap = base
        for pod in members:
            decision = decide_as_the_reference(program, pod, snap, rng, options)
            assert decision.node is not None
            snap = snap.with_pod(pod, decision.node)


@pytest.mark.parametrize(
    ("body", "own"),
    [
        ('domain_pod_count(pod, node, "zone", {"job": pod.labels["job"] ?? pod.name})', True),
        ('if pod.name == "m0" then 40 else 10', True),
        ('domain_pod_count(pod, node, "zone", {"job": pod.labels["job"] ?? "x"})', False),
        ("node.pod_count * 10", False),
    ],
)
def test_columns_keyed_by_the_member_s_own_name_are_marked_own(body: str, own: bool) -> None:
    policy = next(p for p in _program(body).policies if p.name == "p")
    plan = next(r for r in policy_plan(policy).scores if r.rule.name == "own")
    assert plan.own == own


def test_a_full_cache_drops_the_members_own_columns_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each member leaves a column of its own behind, never read again once it is placed: a
    # full cache must drop those before the columns of other classes (the next gang's), even
    # when those were used longer ago.
    program = _program('if pod.name == "m0" then 40 else node.pod_count * 10')
    policy = next(p for p in program.policies if p.name == "p")
    own = {plan.index for plan in policy_plan(policy).scores if plan.own}
    cluster = [make_node(f"n{i}", cpu="8", memory="8Gi", pods=20) for i in range(4)]
    classes = ClassCache()
    options = CycleOptions(all_filters=False, cache=classes)
    snap = snapshot(cluster, [])
    rng = random.Random(0)
    other = make_pod("other", labels={"job": "k"}, requests={"cpu": "2"})
    members = [make_pod(f"m{i}", labels={"job": "j"}, requests={"cpu": "1"}) for i in range(5)]

    def place(pod: Any) -> None:
        nonlocal snap
        decision = schedule(program, pod, snap, rng, options)
        assert decision.node is not None
        snap = snap.with_pod(pod, decision.node)

    def own_column(key: Any) -> bool:
        return bool(key.value[-3] == "score" and key.value[-2] in own)

    place(other)
    place(members[0])
    shared = {key for key in classes._columns if not own_column(key)}
    # Room for every shared column and one of the members' own.
    monkeypatch.setattr(classcache, "_CELLS", len(cluster) * (len(shared) + 1))
    for pod in members[1:]:
        place(pod)
    assert {key for key in classes._columns if not own_column(key)} == shared
    assert sum(1 for key in classes._columns if own_column(key)) == 1


def _program(body: str) -> Any:
    return compiled(
        'import "kube-default.sched"\npolicy "p" {\n  use kube\n'
        f"  score own weight 2 {{ {body} }}\n}}\n"
        'profile "policyengine" {\n  policies "p"\n}\n'
    )
