"""Every ``sched`` block of the README and the site lints clean and is in canonical layout, so a
reader who copies one gets a policy that works. A block marked ``fragment`` is checked inside a
policy that uses ``kube``; one marked ``expect PE…`` is wrong on purpose and must say so with
that code."""

from __future__ import annotations

import pytest

from policyengine.lang.fmt import format_source
from tests.docs import snippets
from tests.docs.pages import Block, all_blocks, pages

BLOCKS = all_blocks("sched")


def test_there_are_snippets_to_check() -> None:
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_a_snippet_lints_as_its_marker_says(block: Block) -> None:
    findings = [f"{d.code}: {d.message}" for d in snippets.findings(block)]
    code = snippets.parts(block)[1]
    if code is None:
        assert findings == [], block.where
    else:
        assert any(f.startswith(f"{code}:") for f in findings), (block.where, findings)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_a_snippet_is_in_canonical_layout(block: Block) -> None:
    code = snippets.parts(block)[1]
    if code is not None and code < "PE200":  # a syntax or input error cannot be laid out
        return
    source = snippets.source(block)
    assert format_source(source, "snippet.sched").text == source, block.where


MESSAGES = [pair for page in pages() for pair in snippets.message_blocks(page)]


def test_the_lint_codes_show_their_messages() -> None:
    assert len(MESSAGES) >= 40


@pytest.mark.parametrize(("example", "shown"), MESSAGES, ids=[s.where for _, s in MESSAGES])
def test_a_shown_message_is_what_lint_says(example: Block, shown: Block) -> None:
    assert shown.text == snippets.messages(example), (
        f"{shown.where} is out of date: python -m tests.docs.outputs rewrites it"
    )
