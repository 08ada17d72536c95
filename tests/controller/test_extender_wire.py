"""``controller.extender_wire``: kube-scheduler's extender requests read into typed values.

The refusals are asserted over HTTP in ``test_extender.py`` (each verb's 400 and its
message); here, what a well-formed request of each kind reads as.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from policyengine.controller.extender_wire import (
    BadRequest,
    BindingArgs,
    parse_args,
    parse_binding_args,
    parse_preemption_args,
)
from tests.controller.builders import pod_obj

POD = pod_obj("p", uid="u-p")


def body(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def test_extender_args_by_name_and_whole() -> None:
    by_name = parse_args(body(Pod=POD, Nodes=None, NodeNames=["a", "b"]))
    assert (by_name.pod.key, by_name.candidates, by_name.nodes) == ("default/p", ("a", "b"), None)
    node = {"metadata": {"name": "a"}}
    whole = parse_args(body(Pod=POD, Nodes={"items": [node]}, NodeNames=None))
    assert (whole.candidates, whole.nodes, whole.node_names) == (("a",), (node,), None)


@pytest.mark.parametrize(
    ("fields", "uids", "victims", "violations"),
    [
        (
            {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 2}}},
            {"n1": ("u1",)},
            None,
            {"n1": 2},
        ),
        (
            {"NodeNameToVictims": {"n1": {"Pods": [pod_obj("v", uid="u-v")]}}},
            None,
            {"n1": ("default/v",)},
            {"n1": 0},
        ),
        # Both sent: the UIDs are what a node cache resolves (kube sends one or the other).
        (
            {"NodeNameToVictims": {}, "NodeNameToMetaVictims": {"n2": {"Pods": []}}},
            {"n2": ()},
            None,
            {"n2": 0},
        ),
    ],
    ids=["n1=u1", "None", "n2=empty"],
)
def test_preemption_args(
    fields: dict[str, Any], uids: Any, victims: Any, violations: dict[str, int]
) -> None:
    args = parse_preemption_args(body(Pod=POD, **fields))
    assert args.pod.key == "default/p"
    assert args.victim_uids == uids
    got = (
        None
        if args.victims is None
        else {n: tuple(p.key for p in v) for n, v in args.victims.items()}
    )
    assert got == victims
    assert args.pdb_violations == violations


def test_binding_args() -> None:
    args = parse_binding_args(body(PodName="p", PodNamespace="ns", PodUID="u", Node="n1"))
    assert args == BindingArgs("p", "ns", "u", "n1") and args.key == "ns/p"
    # A UID may be absent (the check against a replaced pod is then skipped).
    assert parse_binding_args(body(PodName="p", PodNamespace="ns", Node="n1")).uid == ""
    with pytest.raises(BadRequest) as refused:
        parse_binding_args(body(PodName="p", PodNamespace="", Node="n1"))
    assert str(refused.value) == "ExtenderBindingArgs.PodNamespace must be a non-empty string"
