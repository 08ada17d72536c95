"""``engine.fastpath.sharekeys``: what a rule's plan says of it — its cluster key narrowed by the
literals its calls pass, scores read off row keys, guarded scores keeping rows
(``tests/engine/test_guarded_keys.py`` holds the last in cycles).

``domain_pod_count`` declares its label key argument as narrowing (``Function.narrowed_key``):
a rule whose every call passes a literal there is keyed by the counts asked by those label
keys alone; a call passing anything else keys the rule by every count its pod's class asked.
"""

from __future__ import annotations

import pytest

from policyengine.engine.fastpath.sharekeys import policy_plan
from tests.engine.strategies import compiled

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


@pytest.mark.parametrize(
    ("body", "narrowed"),
    [
        pytest.param(f'domain_pod_count(pod, node, "{HOST}", {{}})', {HOST}, id="one literal"),
        pytest.param(
            f'domain_pod_count(pod, node, "{ZONE}", {{}}) + domain_pod_count(pod, node, "{HOST}", {{}})',
            {ZONE, HOST},
            id="two calls, two literals",
        ),
        pytest.param(
            f'domain_pod_count(pod, node, "{ZONE}", {{"app": app}})', {ZONE}, id="labels by a let"
        ),
        pytest.param(
            'domain_pod_count(pod, node, key, {"app": app})', None, id="a let: not narrowed"
        ),
        pytest.param(
            'domain_pod_count(pod, node, pod.labels["spread-by"] ?? "zone", {})',
            None,
            id="a key the pod names: not narrowed",
        ),
        pytest.param(
            f'domain_pod_count(pod, node, "{ZONE}", {{}}) + '
            'domain_pod_count(pod, node, node.labels["by"] ?? "zone", {})',
            None,
            id="one call of two passes no literal: not narrowed",
        ),
        pytest.param("node.pod_count", None, id="no call"),
    ],
)
def test_a_rule_s_key_is_narrowed_by_the_literals_its_calls_pass(
    body: str, narrowed: set[str] | None
) -> None:
    program = compiled(
        'policy "p" {\n'
        '  let app = pod.labels["app"] ?? pod.name\n'
        f'  let key = "{ZONE}"\n'
        f"  score s {{ {body} }}\n"
        "}\n"
    )
    (policy,) = [p for p in program.policies if p.name == "p"]
    (plan,) = policy_plan(policy).scores
    found = {frozenset(literals) for _, literals in plan.narrowed}
    assert found == (set() if narrowed is None else {frozenset(narrowed)})


@pytest.mark.parametrize(
    ("rule", "reads_row_keys"),
    [
        pytest.param("score s { topology_spread_score(pod, node) }", True, id="the bare call"),
        pytest.param("score s { topology_spread_score(pod, node) ?? 0 }", False, id="a default"),
        pytest.param(
            "score s { 2 * (topology_spread_score(pod, node) ?? 0) }", False, id="arithmetic"
        ),
        pytest.param(
            "score s when pod.priority > 0 { topology_spread_score(pod, node) }",
            False,
            id="a guard",
        ),
        pytest.param(
            "score s { inter_pod_affinity_weight(pod, node) }", False, id="no row values told"
        ),
    ],
)
def test_a_score_is_read_off_its_row_keys_only_when_its_body_is_the_bare_call(
    rule: str, reads_row_keys: bool
) -> None:
    program = compiled(f'policy "p" {{\n  {rule}\n}}\n')
    (policy,) = [p for p in program.policies if p.name == "p"]
    (plan,) = policy_plan(policy).scores
    assert (plan.row_values is not None) is reads_row_keys


@pytest.mark.parametrize(
    ("score", "keeps"),
    [
        pytest.param(
            "score s when node.gpu.count > 0 { gpu_placement_score(pod, node, shapes, []) ?? 0 }",
            True,
            id="a node guard, a number",
        ),
        pytest.param(
            "score s { gpu_placement_score(pod, node, shapes, []) ?? 0 }", False, id="no guard"
        ),
        pytest.param(
            "score s when node.gpu.count > 0 { gpu_placement_score(pod, node, shapes, []) }",
            False,
            id="a body that may be null",
        ),
        pytest.param(
            'score s when domain_pod_count(pod, node, "zone", {}) > 0 { node.pod_count }',
            False,
            id="a guard reading the cycle's context",
        ),
    ],
)
def test_a_guarded_score_keeps_its_unscored_rows_when_a_key_moves_only_if_they_are_its_guard_s(
    score: str, keeps: bool
) -> None:
    program = compiled(f'policy "p" {{\n  let shapes = learned_gpu_shapes(1.0)\n  {score}\n}}\n')
    (policy,) = [p for p in program.policies if p.name == "p"]
    (plan,) = policy_plan(policy).scores
    assert plan.guard_keeps is keeps
