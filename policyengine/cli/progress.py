"""A progress line on stderr for long work — loading a big snapshot, scheduling many pods —
redrawn in place (``\\r``) at most ten times a second, and only when stderr is a terminal, so
logs and pipes never see it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

INTERVAL = 0.1  # seconds between redraws

Report = Callable[[int, int], None]


def terminal_progress(
    describe: Callable[[int, int], str], stream: TextIO | None = None
) -> tuple[Report | None, Callable[[], None]]:
    """``(report, finish)``: ``report(done, total)`` redraws ``describe(done, total)``;
    ``finish()`` wipes the line. ``report`` is None when the stream is not a terminal."""
    out = stream if stream is not None else sys.stderr
    if not out.isatty():
        return None, lambda: None
    last = [0.0]
    width = [0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < INTERVAL:
            return
        last[0] = now
        text = describe(done, total)
        width[0] = max(width[0], len(text))
        out.write("\r" + text.ljust(width[0]))
        out.flush()

    def finish() -> None:
        if width[0]:
            out.write("\r" + " " * width[0] + "\r")
            out.flush()

    return report, finish


def reading(name: str) -> Callable[[int, int], str]:
    """How loading a file reads: ``reading cluster.yaml: 45.2 of 90.3 MB (50%)``."""

    def describe(done: int, total: int) -> str:
        percent = 100 * done // total if total else 100
        return f"reading {name}: {done / 1e6:.1f} of {total / 1e6:.1f} MB ({percent}%)"

    return describe
