"""``engine.fastpath.governors``: the governing policy chosen once per pod class, only where
every ``match`` of the profile reads what the pods of a class share."""

from __future__ import annotations

import pytest

from policyengine.engine.fastpath.classes import ClassCache
from policyengine.engine.fastpath.governors import decided_by_class, governing_policy
from policyengine.engine.fastpath.sharekeys import pod_class
from policyengine.lang.compiler import Program, compile_texts
from policyengine.lang.runtime import Env
from policyengine.schedlib import default_schema
from policyengine.schedlib.views import PodView
from tests.model.builders import make_pod


def _program(first_match: str, lets: str = "") -> Program:
    source = (
        f'policy "first" {{\n  {lets}\n  {first_match}\n'
        "  score one weight 1 { 1 }\n}\n"
        'policy "rest" {\n  score one weight 1 { 1 }\n}\n'
        'profile "policyengine" {\n  policies "first", "rest"\n}\n'
    )
    result = compile_texts({"p.sched": source}, default_schema())
    assert result.program is not None, result.diagnostics
    return result.program


@pytest.mark.parametrize(
    ("match", "lets", "by_class"),
    [
        pytest.param("", "", True, id="no match: every pod"),
        pytest.param('match pod.labels["tier"] == "web"', "", True, id="a label"),
        pytest.param("match pod.gpu_request.devices == 0", "", True, id="a derived attribute"),
        pytest.param('match pod.name == "web-0"', "", False, id="the name"),
        pytest.param(
            'match pod.labels["tier"] == "web" or pod.name == "x"', "", False, id="the name, or"
        ),
        pytest.param('match who == "web-0"', "let who = pod.name", False, id="the name by a let"),
    ],
)
def test_a_profile_is_decided_by_class_when_every_match_reads_what_a_class_shares(
    match: str, lets: str, by_class: bool
) -> None:
    assert decided_by_class(_program(match, lets), "policyengine") is by_class


@pytest.mark.parametrize(
    "match",
    ['match pod.labels["tier"] == "web"', 'match pod.name == "web-0"'],
    ids=["decided by class", "decided per pod"],
)
def test_each_pod_gets_the_policy_its_own_match_gives(match: str) -> None:
    program = _program(match)
    classes = ClassCache()
    for name in ["web-0", "web-1", "web-0"]:  # one class: only the names differ
        for tier in ["web", "db"]:
            pod = make_pod(name, labels={"tier": tier})
            env = Env({"pod": PodView(pod)})
            expected = program.governing_policy("policyengine", env)
            chosen = governing_policy(program, "policyengine", env, classes, pod_class(pod))
            assert chosen is expected
