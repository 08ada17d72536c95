"""The ``policyengine`` command: one sub-command per module, dispatched from here.

Each command module exposes ``register(subparsers)`` (adding its parser, with
``set_defaults(run=...)``) and a ``run(args) -> int`` returning the exit code. Exit codes follow
one rule everywhere: 0 success, 1 findings or failures the user asked about, 2 usage or
input/output errors. Nothing escapes as a traceback: an unexpected error is reported as such,
with what to do next.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from policyengine import __version__

# Order is the order of ``policyengine --help``.
COMMAND_MODULES = (
    "policyengine.cli.lint",
    "policyengine.cli.fmt",
    "policyengine.cli.test",
    "policyengine.cli.filter",
    "policyengine.cli.score",
    "policyengine.cli.explain",
    "policyengine.cli.simulate",
    "policyengine.cli.replay",
    "policyengine.cli.diff",
    "policyengine.cli.run",
    "policyengine.cli.extender",
)


def _name(module_name: str) -> str:
    return module_name.rsplit(".", 1)[1]


# Each module registers the command named as the module.
COMMANDS = frozenset(_name(m) for m in COMMAND_MODULES)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with ``command``, one that registers only that sub-command.

    Importing every command module costs seconds (the language, the engine, the Kubernetes
    client, the renderers), which ``policyengine run`` would pay on every start for commands
    it never uses. Parsing ``COMMAND ARGS...`` reads only that command's sub-parser, so the
    one-command parser gives the same result, help and errors for such an ``argv``."""
    parser = argparse.ArgumentParser(
        prog="policyengine",
        description="A Kubernetes scheduler whose placement logic is a policy you can read, "
        "test and change.",
    )
    parser.add_argument("--version", action="version", version=f"policyengine {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        if command is None or _name(module_name) == command:
            importlib.import_module(module_name).register(subparsers)
    return parser


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: only its command's when ``argv`` starts with a command name
    (what follows is then that sub-parser's alone), else the whole one (``--help``, no
    command, an unknown one, a top-level option first)."""
    first = argv[0] if argv else None
    return build_parser(first if first in COMMANDS else None)


def _subcommand(
    parser: argparse.ArgumentParser, name: str | None
) -> argparse.ArgumentParser | None:
    for action in parser._actions:  # argparse keeps sub-parsers on its subparsers action only
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return None


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = parser_for(argv)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse would report these with the top-level usage; the command's own is the one
        # that says what it takes.
        owner = _subcommand(parser, getattr(args, "command", None)) or parser
        owner.error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # the last line of defence: never a traceback for a user
        print(
            f"policyengine {args.command}: internal error: {type(error).__name__}: {error}\n"
            "This is a bug in policyengine; please report it with the command you ran "
            "(set POLICYENGINE_DEBUG=1 to see the traceback).",
            file=sys.stderr,
        )
        import os

        if os.environ.get("POLICYENGINE_DEBUG"):
            raise
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
