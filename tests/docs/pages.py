"""The documentation's pages read as data: their fenced blocks and the markers that say how a
block is checked.

A marker is an HTML comment on the line before a fence (invisible on the site and on GitHub):

- ``<!-- sched: fragment -->``: the ``sched`` block is the inside of a policy, checked wrapped
  in one that uses ``kube``;
- ``<!-- sched: expect PE202 -->``: the block is wrong on purpose and must produce that code;
- ``<!-- output: ARGS [| /json/pointer] -->``: the block is exactly what ``policyengine ARGS``
  prints, run from the repository root (a ``json`` block compared as data, or the part of it
  the pointer names; any other block as text, or its last N lines with ``| tail N``);
- ``<!-- flags: COMMAND -->`` before a table: its first column names exactly the options of
  ``policyengine COMMAND --help``;
- ``<!-- illustrative: WHY -->``: a ``json`` block no command prints (an HTTP body, say).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
_INCLUDE = re.compile(r'^--8<-- "(?P<path>[^"]+)"$')
_MARKER = re.compile(r"^\s*<!--\s*(?P<kind>[\w-]+):\s*(?P<value>.*?)\s*-->\s*$")


def pages() -> list[Path]:
    """Every page a reader sees: the README and the site's Markdown."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str  # dedented by the fence's indentation
    marker: tuple[str, str] | None  # (kind, value) of the comment just before the fence

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _marker_before(lines: list[str], index: int) -> tuple[str, str] | None:
    before = index - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    if before >= 0 and (found := _MARKER.match(lines[before])):
        return found["kind"], found["value"]
    return None


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [line[indent:] for line in lines[index + 1 : end]]
        text = "\n".join(body) + "\n"
        if len(body) == 1 and (include := _INCLUDE.match(body[0])):
            # A block that includes a file (pymdownx.snippets) shows that file: check it.
            text = (ROOT / include["path"]).read_text(encoding="utf-8")
        found.append(Block(page, index + 1, opening["lang"], text, _marker_before(lines, index)))
        index = end + 1
    return found


def all_blocks(lang: str) -> list[Block]:
    return [block for page in pages() for block in blocks(page) if block.lang == lang]


def tables_after_markers(page: Path, kind: str) -> list[tuple[str, int, list[str]]]:
    """``(marker value, line, first-column cells)`` of each table right after a marker."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found = []
    for index, line in enumerate(lines):
        marker = _MARKER.match(line)
        if not marker or marker["kind"] != kind:
            continue
        row = index + 1
        while row < len(lines) and not lines[row].strip():
            row += 1
        cells = []
        while row < len(lines) and lines[row].lstrip().startswith("|"):
            cell = lines[row].strip().strip("|").split(" | ")[0].strip()
            cells.append(cell)
            row += 1
        found.append((marker["value"], index + 1, cells[2:]))  # past the header and the rule
    return found
