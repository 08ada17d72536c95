"""The command dispatcher: a command's own parser answers exactly as the whole one would,
and starting a command imports no other command's module."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from policyengine.cli.main import COMMAND_MODULES, COMMANDS, build_parser, parser_for


def _outcome(parser_argv: Sequence[str], lazy: bool) -> tuple[Any, str, str]:
    """(exit status or the parsed namespace, stdout, stderr) of parsing ``parser_argv``."""
    parser = parser_for(parser_argv) if lazy else build_parser()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            result: Any = vars(parser.parse_args(parser_argv))
        except SystemExit as stop:
            result = ("exit", stop.code)
    return result, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["--version"],
        ["nope"],
        ["run", "--help"],
        ["run", "--policy", "p.sched", "--no-leader-elect", "--kube-api-qps", "0"],
        ["run", "--bogus"],
        ["run", "--kube-api-qps", "fast"],
        ["run", "--policy-debounce", "-1s"],
        ["run", "stray"],
        ["lint", "--help"],
        ["lint", "a.sched", "--strict"],
        ["fmt", "--check", "a.sched"],
        ["simulate"],
        ["explain", "--help"],
        ["extender", "--help"],
        ["diff", "a.sched"],
        ["-h", "run"],
    ],
    ids=lambda argv: " ".join(argv) or "no-arguments",
)
def test_a_commands_own_parser_answers_as_the_whole_one(argv: list[str]) -> None:
    assert _outcome(argv, lazy=True) == _outcome(argv, lazy=False)


@pytest.mark.parametrize("module_name", COMMAND_MODULES, ids=str)
def test_every_module_registers_the_command_named_after_it(module_name: str) -> None:
    name = module_name.rsplit(".", 1)[1]
    assert name in COMMANDS
    assert _outcome([name, "--help"], lazy=True) == _outcome([name, "--help"], lazy=False)


def test_starting_a_command_imports_no_other_command() -> None:
    code = (
        "import sys\n"
        "from policyengine.cli.main import parser_for\n"
        "parser_for(['run', '--no-leader-elect']).parse_args(['run', '--no-leader-elect'])\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('policyengine.cli.'))))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    others = {m for m in COMMAND_MODULES if not m.endswith(".run")}
    assert "policyengine.cli.run" in shown
    assert others.isdisjoint(shown), sorted(others & set(shown))
