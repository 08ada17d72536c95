"""Timing that survives a noisy shared machine: repeats, medians, and a printed table.

Every scenario returns ``Measurement`` rows; ``measure`` runs a callable several times and
keeps the median (and the spread, so a reader can tell a quiet run from a noisy one). Progress
goes to stderr, the table to stdout.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    scenario: str
    metric: str
    median: float
    unit: str
    runs: int
    low: float
    high: float
    target: str = ""


def measure(fn: Callable[[], object], runs: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def summarise(
    scenario: str,
    metric: str,
    samples: Sequence[float],
    unit: str,
    scale: float = 1.0,
    target: str = "",
) -> Measurement:
    scaled = [s * scale for s in samples]
    return Measurement(
        scenario,
        metric,
        statistics.median(scaled),
        unit,
        len(scaled),
        min(scaled),
        max(scaled),
        target,
    )


def progress(message: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{message}\033[K", end="", file=sys.stderr, flush=True)
    else:
        print(message, file=sys.stderr, flush=True)


def table(rows: Sequence[Measurement]) -> str:
    header = ("scenario", "metric", "median", "unit", "min", "max", "runs", "target")
    body = [
        (
            r.scenario,
            r.metric,
            f"{r.median:.3f}",
            r.unit,
            f"{r.low:.3f}",
            f"{r.high:.3f}",
            str(r.runs),
            r.target,
        )
        for r in rows
    ]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body, strict=False)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *body)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
