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


def _replay_document(document: dict[str, Any]) -> None:
    """``replay --format json``: its keys and each seed's, as a replay of a tiny trace prints."""
    import contextlib
    import io
    import tempfile
    from pathlib import Path

    from policyengine.cli.main import main

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp)
        (trace / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,8000,65536,2,T4\n")
        (trace / "pods.csv").write_text(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
            "deletion_time,scheduled_time\na,1000,1024,1,1000,,LS,Running,0,1,0\n"
        )
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(["replay", "--trace", tmp, "--seeds", "0", "--format", "json"]) == 0
    printed = json.loads(out.getvalue())
    assert list(document) == list(printed)
    for key in ("trace", "policy", "unallocated_at_100"):
        assert set(document[key]) == set(printed[key]), key
    assert set(document["seeds"][0]) == set(printed["seeds"][0])


# An illustrative block names what it stands for; these check its shape against the code.
ILLUSTRATIVE = {"readyz policy": _readyz_policy, "replay document": _replay_document}

ILLUSTRATED = [b for b in JSON if b.marker and b.marker[0] == "illustrative"]


@pytest.mark.parametrize("block", ILLUSTRATED, ids=[b.where for b in ILLUSTRATED])
def test_an_illustrative_json_example_has_the_codes_shape(block: Block) -> None:
    assert block.marker is not None
    check = ILLUSTRATIVE.get(block.marker[1])
    assert check is not None, f"{block.where}: no shape check for {block.marker[1]!r}"
    check(json.loads(block.text))
