"""Every example output in the documentation is what the command prints for its fixture, and
every JSON example is such an output (or says why it cannot be: an HTTP body, a fragment of a
Kubernetes object)."""

from __future__ import annotations

import json

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
