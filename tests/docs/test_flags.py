"""Every command's flag table in the documentation names exactly the options its ``--help``
lists: a new option cannot go undocumented, and a documented one cannot disappear. A table
marked ``partial`` (a page about some of the options) names only options that exist, and every
table of flags carries a marker."""

from __future__ import annotations

import re

import pytest

from policyengine.cli.main import COMMANDS, _subcommand, build_parser
from tests.docs.pages import ROOT, blocks, pages, tables_after_markers

_OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

MARKED = [
    (value.split()[0], "partial" in value.split()[1:], page, line, cells)
    for page in pages()
    for value, line, cells in tables_after_markers(page, "flags")
]
TABLES = [
    (command, page, line, cells) for command, partial, page, line, cells in MARKED if not partial
]
PARTIAL = [
    (command, page, line, cells) for command, partial, page, line, cells in MARKED if partial
]


def _options(command: str) -> set[str]:
    parser = _subcommand(build_parser(command), command)
    assert parser is not None
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }


def test_every_command_has_one_flag_table() -> None:
    assert sorted(command for command, *_ in TABLES) == sorted(COMMANDS)


@pytest.mark.parametrize(
    ("command", "cells"),
    [(command, cells) for command, _, _, cells in TABLES],
    ids=[f"{page.relative_to(ROOT)}:{line}" for _, page, line, _ in TABLES],
)
def test_a_flag_table_names_exactly_the_commands_options(command: str, cells: list[str]) -> None:
    documented = {option for cell in cells for option in _OPTION.findall(cell)}
    assert documented == _options(command)


@pytest.mark.parametrize(
    ("command", "cells"),
    [(command, cells) for command, _, _, cells in PARTIAL],
    ids=[f"{page.relative_to(ROOT)}:{line}" for _, page, line, _ in PARTIAL],
)
def test_a_partial_flag_table_names_only_options_that_exist(command: str, cells: list[str]) -> None:
    documented = {option for cell in cells for option in _OPTION.findall(cell)}
    assert documented and documented <= _options(command)


def test_every_flag_table_is_marked() -> None:
    marked = {(page, line + 1) for _, _, page, line, _ in MARKED}
    unmarked = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages()
        for number, text in enumerate(page.read_text(encoding="utf-8").split("\n"), 1)
        if text.startswith("| flag |") and (page, number) not in marked
    ]
    assert unmarked == []


def _command_lines() -> list[tuple[str, str]]:
    """``(where, line)`` of every ``policyengine COMMAND …`` line in the pages' shell blocks."""
    found = []
    for block in [b for page in pages() for b in blocks(page) if b.lang == "sh"]:
        text = block.text.replace("\\\n", " ")  # continued lines are one command
        for line in text.splitlines():
            for part in re.split(r"&&|\|\||;|>>?|\|", line.split("  #")[0]):
                words = part.split()
                if words and words[0].endswith("policyengine") and len(words) > 1:
                    found.append((block.where, " ".join(words)))
    return found


COMMAND_LINES = _command_lines()


def test_the_pages_show_commands() -> None:
    assert len(COMMAND_LINES) >= 40


@pytest.mark.parametrize(("where", "line"), COMMAND_LINES, ids=[w for w, _ in COMMAND_LINES])
def test_a_command_line_in_the_pages_uses_a_real_command_and_options(where: str, line: str) -> None:
    words = line.split()
    command = words[1]
    assert command in COMMANDS, f"{where}: {line}"
    options = _options(command)
    used = {word.split("=")[0] for word in words[2:] if word.startswith("--")}
    assert used <= options, f"{where}: {line}"
