"""Timing that survives a noisy shared machine: repeats, medians, and a printed table.

Every scenario returns ``Measurement`` rows; ``measure`` runs a callable several times and
keeps the median (and the spread, so a reader can tell a quiet run from a noisy one). Progress
goes to stderr, the table to stdout.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from policyengine.engine import heap


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


# --- additions for the per-pod scenarios: pending rows, percentiles, JSON -------------------


def pending(scenario: str, needs: str) -> Measurement:
    """A row for a scenario that cannot run yet: no number at all rather than a made-up one."""
    return Measurement(scenario, f"pending: needs {needs}", math.nan, "", 0, math.nan, math.nan)


def percentile(samples: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (no interpolation: with few samples p99 is the maximum)."""
    ordered = sorted(samples)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def render(rows: Sequence[Measurement]) -> str:
    """``table``, but a pending row shows blanks where ``table`` would print ``nan``."""

    def number(value: float) -> str:
        return "" if math.isnan(value) else f"{value:.3f}"

    header = ("scenario", "metric", "median", "unit", "min", "max", "runs", "target")
    body = [
        (
            r.scenario,
            r.metric,
            number(r.median),
            r.unit,
            number(r.low),
            number(r.high),
            str(r.runs) if r.runs else "",
            r.target,
        )
        for r in rows
    ]
    widths = [max(len(c) for c in col) for col in zip(header, *body, strict=False)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in (header, *body)
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def to_json(rows: Sequence[Measurement], **context: object) -> str:
    """Every row as a JSON object (pending rows with nulls), plus what the run was."""

    def clean(value: object) -> object:
        return None if isinstance(value, float) and math.isnan(value) else value

    document = {
        **context,
        "rows": [{k: clean(v) for k, v in asdict(r).items()} for r in rows],
    }
    return json.dumps(document, indent=2, sort_keys=False)


_NOTES: dict[str, dict[str, object]] = {}


def note(scenario: str, **values: object) -> None:
    """Keep facts about a scenario that are not timings (counts, disagreements) for ``--json``."""
    _NOTES.setdefault(scenario, {}).update(values)


def notes() -> dict[str, dict[str, object]]:
    return {k: dict(v) for k, v in _NOTES.items()}


def full_size(target: str, measured: int, full: int) -> str:
    """``target`` when the run measured the scenario whole, at its full size (``measured == full``),
    otherwise none: a scaled-down run weighs the first pods of each class, which evaluate
    every node, far more than the full queue does, so its figures are not the target's."""
    return target if measured == full else ""


def flag(scenario: str, text: str, target: str = "") -> Measurement:
    """A row that states a fact instead of a timing (a check that failed, a count that
    differs between runs); like ``pending``, it has no number."""
    return Measurement(scenario, text, math.nan, "", 0, math.nan, math.nan, target)


def status_kb(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``); None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def peak_rss_kb() -> int:
    """This program's peak RSS. Not ``ru_maxrss`` where ``VmHWM`` is known: Linux carries
    ``ru_maxrss`` over ``exec`` from the process that forked this one, so a benchmark child
    started by a large parent reported the parent's size (466 MB for a 313 MB snapshot);
    ``VmHWM`` belongs to this program's address space alone."""
    found = status_kb("VmHWM")
    return found if found is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child_env() -> dict[str, str]:
    """The environment for a scenario's child process: this checkout first on the path."""
    root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Objects built before the timed part (the cluster, the caches a warm-up filled, a
    seeded API server's store), frozen by ``gc.freeze()`` inside, stay out of the collector's
    full passes while the scenario runs, as ``policyengine run`` keeps its own after syncing
    and ``worker.py`` the per-pod scenarios'; they are handed back to it on leaving, so later
    scenarios in this process start from an ordinary heap. Inside, the young generation is
    collected as a long run collects it (``engine.heap``)."""
    with heap.young_collected_less_often():
        try:
            yield
        finally:
            gc.unfreeze()
