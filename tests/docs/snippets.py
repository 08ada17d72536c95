"""The ``sched`` blocks of the pages as policy files, and what lint says of them.

A block's ``sched`` marker says how it is read: ``fragment`` (the inside of a policy, checked
wrapped in one that uses ``kube``), ``expect PE202`` (wrong on purpose: it must produce that
code), or both, ``fragment expect PE202``. A ``text`` block marked ``<!-- lint: messages -->``
right after an ``expect`` block shows what lint says of it: each finding with the expected code,
as ``severity code: message`` and its hint.
"""

from __future__ import annotations

import re
import tempfile
import textwrap
from dataclasses import replace
from pathlib import Path

from policyengine.cli.lint import lint_paths
from policyengine.diagnostics import Diagnostic
from policyengine.lang.lint_config import LintConfig
from policyengine.schedlib import default_schema
from tests.docs.pages import Block, blocks

_MARKER = re.compile(r"^(?P<fragment>fragment)?\s*(?:expect (?P<code>PE\d{3}))?$")


def parts(block: Block) -> tuple[bool, str | None]:
    """(is a fragment, the code it must produce) from the block's ``sched`` marker."""
    if not block.marker or block.marker[0] != "sched":
        return False, None
    found = _MARKER.match(block.marker[1])
    assert found and block.marker[1], f"{block.where}: unknown marker {block.marker}"
    return bool(found["fragment"]), found["code"]


def source(block: Block) -> str:
    """The file the block stands for: itself, or a fragment inside a policy using kube."""
    if parts(block)[0]:
        body = textwrap.indent(block.text, "  ")
        return f'import "kube-default.sched"\n\npolicy "snippet" {{\n  use kube\n\n{body}}}\n'
    return block.text


def findings(block: Block) -> list[Diagnostic]:
    """What lint reports for the block, with the default configuration."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "snippet.sched"
        path.write_text(source(block), encoding="utf-8")
        found = lint_paths([str(path)], default_schema(), LintConfig()).diagnostics
        # Messages that name the file name it as the reader would: snippet.sched.
        prefix = f"{directory}/"
        return [
            replace(
                d,
                message=d.message.replace(prefix, ""),
                hint=d.hint.replace(prefix, "") if d.hint else d.hint,
            )
            for d in found
        ]


def messages(block: Block) -> str:
    """The ``lint: messages`` text of an ``expect`` block."""
    code = parts(block)[1]
    lines = []
    for finding in findings(block):
        if finding.code == code:
            lines.append(f"{finding.severity} {finding.code}: {finding.message}")
            if finding.hint:
                lines.append(f"  hint: {finding.hint}")
    return "\n".join(lines) + "\n"


def message_blocks(page: Path) -> list[tuple[Block, Block]]:
    """Each ``lint: messages`` block of the page with the ``sched`` block it describes."""
    found = []
    previous: Block | None = None
    for block in blocks(page):
        if block.marker == ("lint", "messages"):
            assert previous is not None and previous.lang == "sched", block.where
            found.append((previous, block))
        previous = block
    return found
