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
    "policyengine.cli.diff",
    "policyengine.cli.run",
    "policyengine.cli.extender",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policyengine",
        description="A Kubernetes scheduler whose placement logic is a policy you can read, "
        "test and change.",
    )
    parser.add_argument("--version", action="version", version=f"policyengine {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
