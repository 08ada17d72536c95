"""Every ``sched`` block of the README and the site lints clean and is in canonical layout, so a
reader who copies one gets a policy that works. A block marked ``fragment`` is checked inside a
policy that uses ``kube``; one marked ``expect PE…`` is wrong on purpose and must say so with
that code."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from policyengine.cli.lint import lint_paths
from policyengine.lang.fmt import format_source
from policyengine.lang.lint_config import LintConfig
from policyengine.schedlib import default_schema
from tests.docs.pages import Block, all_blocks

BLOCKS = all_blocks("sched")
# ``fragment``, ``expect PE202``, or both: ``fragment expect PE202``.
_MARKER = re.compile(r"^(?P<fragment>fragment)?\s*(?:expect (?P<code>PE\d{3}))?$")


def _parts(block: Block) -> tuple[bool, str | None]:
    """(is a fragment, the code it must produce) from the block's ``sched`` marker."""
    if not block.marker or block.marker[0] != "sched":
        return False, None
    found = _MARKER.match(block.marker[1])
    assert found and block.marker[1], f"{block.where}: unknown marker {block.marker}"
    return bool(found["fragment"]), found["code"]


def _source(block: Block) -> str:
    """The file the block stands for: itself, or a fragment inside a policy using kube."""
    if _parts(block)[0]:
        body = textwrap.indent(block.text, "  ")
        return f'import "kube-default.sched"\n\npolicy "snippet" {{\n  use kube\n\n{body}}}\n'
    return block.text


def _expected(block: Block) -> str | None:
    return _parts(block)[1]


def _findings(block: Block, tmp_path: Path) -> list[str]:
    path = tmp_path / "snippet.sched"
    path.write_text(_source(block), encoding="utf-8")
    report = lint_paths([str(path)], default_schema(), LintConfig())
    return [f"{d.code}: {d.message}" for d in report.diagnostics]


def test_there_are_snippets_to_check() -> None:
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_a_snippet_lints_as_its_marker_says(block: Block, tmp_path: Path) -> None:
    findings = _findings(block, tmp_path)
    code = _expected(block)
    if code is None:
        assert findings == [], block.where
    else:
        assert any(f.startswith(f"{code}:") for f in findings), (block.where, findings)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_a_snippet_is_in_canonical_layout(block: Block) -> None:
    code = _expected(block)
    if code is not None and code < "PE200":  # a syntax or input error cannot be laid out
        return
    source = _source(block)
    assert format_source(source, "snippet.sched").text == source, block.where
