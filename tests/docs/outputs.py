"""What the documentation's ``output`` blocks show, produced by running the command.

``python -m tests.docs.outputs`` rewrites every such block from a fresh run (after a change to
an output, or to add an example), and every ``lint: messages`` block from lint; the tests hold
each block equal to a fresh run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from policyengine.cli.main import main
from tests.docs.pages import ROOT, Block, blocks, pages
from tests.docs.snippets import message_blocks, messages


@contextlib.contextmanager
def _at_root() -> Iterator[None]:
    before = Path.cwd()
    os.chdir(ROOT)  # the examples name fixtures relative to the repository root
    try:
        yield
    finally:
        os.chdir(before)


def split(marker: str) -> tuple[list[str], str | None]:
    """``ARGS | /pointer`` → (argv, pointer)."""
    command, _, pointer = marker.partition("|")
    return shlex.split(command), (pointer.strip() or None)


def run(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with _at_root(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(argv)
    return out.getvalue()


def at(document: Any, pointer: str | None) -> Any:
    """The part of a JSON document a pointer (``/summary/gangs``, ``/placements/0``) names."""
    if pointer:
        for step in pointer.strip("/").split("/"):
            document = document[int(step)] if isinstance(document, list) else document[step]
    return document


def expected(block: Block) -> str:
    """The block's text as a fresh run gives it."""
    assert block.marker is not None
    argv, pointer = split(block.marker[1])
    text = run(argv)
    if block.lang == "json":
        return json.dumps(at(json.loads(text), pointer), indent=2, ensure_ascii=False) + "\n"
    if pointer is not None:
        # A text block may show the end of the output only: ``| tail N``.
        assert pointer.startswith("tail "), f"{block.where}: a text block takes | tail N"
        return "\n".join(text.rstrip("\n").split("\n")[-int(pointer.split()[1]) :]) + "\n"
    return text


def output_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.marker is not None and b.marker[0] == "output"]


def _rewrite(page: Path) -> None:
    fresh_texts = {block.line: expected(block) for block in output_blocks(page)}
    for example, shown in message_blocks(page):
        fresh_texts[shown.line] = messages(example)
    lines = page.read_text(encoding="utf-8").split("\n")
    for line_number in sorted(fresh_texts, reverse=True):
        block = next(b for b in blocks(page) if b.line == line_number)
        opening = lines[block.line - 1]
        indent = opening[: len(opening) - len(opening.lstrip())]
        end = block.line
        while lines[end].strip() != "```":
            end += 1
        fresh = fresh_texts[line_number].rstrip("\n").split("\n")
        lines[block.line : end] = [f"{indent}{line}" if line else line for line in fresh]
    page.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    for page in pages():
        _rewrite(page)
