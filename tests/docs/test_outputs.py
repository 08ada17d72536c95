"""Every example output in the documentation is what the command prints for its fixture, and
every JSON example is such an output (or says why it cannot be: an HTTP body, a fragment of a
Kubernetes object)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.docs.outputs import at, expected, output_blocks, run, split
from tests.docs.pages import Block, all_blocks, pages

BLOCKS = [block for page in pages() for block in output_blocks(page)]


def test_there_are_outputs_to_check() -> None:
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_an_example_output_is_what_the_command_prints(block: Block) -> None:
    assert block.marker is not None
    if block.lang == "json":
        argv, pointer = split(block.marker[1])
        assert json.loads(block.text) == at(json.loads(run(argv)), pointer), (
            f"{block.where} is out of date: python -m tests.docs.outputs rewrites it"
        )
    else:
        assert block.text == expected(block), (
            f"{block.where} is out of date: python -m tests.docs.outputs rewrites it"
        )


JSON = all_blocks("json")


@pytest.mark.parametrize("block", JSON, ids=[b.where for b in JSON])
def test_every_json_example_is_checked_or_says_why_not(block: Block) -> None:
    assert block.marker is not None and block.marker[0] in {"output", "illustrative"}, (
        f"{block.where}: mark the block <!-- output: ARGS --> (or <!-- illustrative: WHY -->)"
    )
    if block.marker[0] == "illustrative":
        json.loads(block.text)  # still valid JSON


def _readyz_policy(document: dict[str, Any]) -> None:
    """The ``policy`` detail of ``/readyz``: the keys the policy holder reports."""
    from policyengine.controller.policy_source import PolicyHolder, Problem

    shown = document["policy"]
    assert set(shown) == set(PolicyHolder().status())
    full = Problem("rejected", "m", 0.0, version="v", stage="compile", errors=("e",))
    assert set(shown["error"]) == set(full.as_json())


# An illustrative block names what it stands for; these check its shape against the code.
ILLUSTRATIVE = {"readyz policy": _readyz_policy}

ILLUSTRATED = [b for b in JSON if b.marker and b.marker[0] == "illustrative"]


@pytest.mark.parametrize("block", ILLUSTRATED, ids=[b.where for b in ILLUSTRATED])
def test_an_illustrative_json_example_has_the_codes_shape(block: Block) -> None:
    assert block.marker is not None
    check = ILLUSTRATIVE.get(block.marker[1])
    assert check is not None, f"{block.where}: no shape check for {block.marker[1]!r}"
    check(json.loads(block.text))
