"""``policyengine fmt``: rewrite .sched files in their canonical layout, or check that they are.

The layout itself lives in ``policyengine.lang.fmt``; this module is the file handling around
it. Files are rewritten only when their text changes, through a temporary file beside them and
an atomic rename (an interrupted run never leaves half a policy behind), with the original
permission bits. A file that does not parse is reported and left alone while the others are
still formatted; the run then exits 2.

Exit codes: 0 nothing to do or all written, 1 ``--check`` found files that would change,
2 a syntax, input/output or usage error (whatever else happened). ``--diff`` alone shows and
exits 0, as ``black --diff`` does; ``--check --diff`` shows and exits 1. ``--check`` lists the
files on stdout (``would reformat PATH``), the summary goes to stderr, and stdin mode prints
no summary, so that editors can pipe through it.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from policyengine.diagnostics import render
from policyengine.lang.fmt import format_source
from policyengine.lang.loader import expand_paths

STDIN = "-"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fmt",
        help="rewrite .sched files in the canonical layout",
        description="Rewrite .sched files in the canonical layout (files changed only when "
        "their text changes). Directories are searched recursively; hidden entries are "
        "skipped. Exit 0 done, 1 --check found files to reformat, 2 syntax or I/O error.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a .sched file or a directory of them; '-' reads stdin and writes stdout",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the files that would change and exit 1 if there are any",
    )
    parser.add_argument(
        "--diff", action="store_true", help="write nothing; print a unified diff of the changes"
    )
    parser.add_argument(
        "--stdin", action="store_true", help="read the source from stdin, write it to stdout"
    )
    parser.add_argument(
        "--stdin-filename",
        default="<stdin>",
        metavar="NAME",
        help="the name stdin's diagnostics and diff carry (default: %(default)s)",
    )
    parser.set_defaults(run=run)


@dataclass
class _Tally:
    changed: int = 0
    unchanged: int = 0
    failed: int = 0

    def summary(self, dry_run: bool) -> str:
        noun = "file" if self.changed == 1 else "files"
        verb = "would be reformatted" if dry_run else "reformatted"
        text = f"{self.changed} {noun} {verb}, {self.unchanged} unchanged"
        return text + (f", {self.failed} failed" if self.failed else "")


def run(args: argparse.Namespace) -> int:
    paths: list[str] = list(args.paths)
    use_stdin = args.stdin or STDIN in paths
    if use_stdin and [p for p in paths if p != STDIN]:
        _error("'-' (or --stdin) cannot be combined with file paths")
        return 2
    if use_stdin:
        return _run_stdin(args)
    if not paths:
        _error("nothing to format: give files or directories, or '-' to read stdin")
        return 2
    return _run_files(paths, args)


def _error(message: str) -> None:
    print(f"policyengine fmt: {message}", file=sys.stderr)


def _reason(error: OSError | UnicodeDecodeError) -> str:
    if isinstance(error, UnicodeDecodeError):
        return f"not UTF-8 text ({error.reason} at byte {error.start})"
    return error.strerror or str(error)


def _run_files(paths: list[str], args: argparse.Namespace) -> int:
    dry_run = args.check or args.diff
    files, problems = expand_paths(paths)
    tally = _Tally(failed=len(problems))
    for problem in problems:
        print(render(problem), file=sys.stderr)
    for path in files:
        try:
            # newline="" keeps CRLF visible, so such a file counts as changed and is rewritten.
            with open(path, encoding="utf-8", newline="") as handle:
                source = handle.read()
        except (OSError, UnicodeDecodeError) as error:
            _error(f"cannot read {path}: {_reason(error)}")
            tally.failed += 1
            continue
        result = format_source(source, str(path))
        if result.text is None:
            for diagnostic in result.diagnostics:
                print(render(diagnostic, source), file=sys.stderr)
            tally.failed += 1
            continue
        if result.text == source:
            tally.unchanged += 1
            continue
        if args.diff:
            sys.stdout.write(unified_diff(source, result.text, str(path)))
        elif args.check:
            print(f"would reformat {path}")
        if not dry_run:
            try:
                write_preserving_mode(path, result.text)
            except OSError as error:
                _error(f"cannot write {path}: {_reason(error)}")
                tally.failed += 1
                continue
        tally.changed += 1
    sys.stdout.flush()
    print(tally.summary(dry_run), file=sys.stderr)
    if tally.failed:
        return 2
    return 1 if args.check and tally.changed else 0


def _run_stdin(args: argparse.Namespace) -> int:
    name = args.stdin_filename
    try:
        buffer = getattr(sys.stdin, "buffer", None)
        source = buffer.read().decode("utf-8") if buffer is not None else sys.stdin.read()
    except (OSError, UnicodeDecodeError) as error:
        _error(f"cannot read stdin: {_reason(error)}")
        return 2
    result = format_source(source, name)
    if result.text is None:
        for diagnostic in result.diagnostics:
            print(render(diagnostic, source), file=sys.stderr)
        return 2
    changed = result.text != source
    if args.diff:
        if changed:
            sys.stdout.write(unified_diff(source, result.text, name))
    elif args.check:
        if changed:
            print(f"would reformat {name}")
    else:
        sys.stdout.write(result.text)
    return 1 if args.check and changed else 0


def write_preserving_mode(path: Path, text: str) -> None:
    """Replace ``path``'s content atomically, keeping its permission bits (and any symlink)."""
    target = path.resolve()
    mode = stat.S_IMODE(target.stat().st_mode)
    try:
        # A hidden name, so that a concurrent `fmt DIR` never picks the temporary file up.
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
        )
    except PermissionError:
        # The directory is not ours to write in, but the file may be: rewrite it in place.
        with open(target, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _lines(text: str) -> list[str]:
    # Split on "\n" only: str.splitlines would also break at \r, \f or U+2028 inside a line.
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def unified_diff(old: str, new: str, name: str) -> str:
    """A unified diff that ``patch -p0`` applies, marking a missing final newline as git does."""
    out: list[str] = []
    diff: Iterable[str] = difflib.unified_diff(_lines(old), _lines(new), name, name)
    for line in diff:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
