"""The GPU parts of ``simulate``'s output: device-level allocation and fragmentation, and the
arrival replay's figures, as JSON keys under ``summary`` and as lines under the table.

``summary.gpu`` (when the cluster has GPU devices): ``total_gpus``, ``allocated_gpus`` (GPU
compute allocated after the run; a 25% share counts 0.25), ``allocation_ratio``, ``free_gpus``,
``fragmented_gpus`` (free compute no shape could use, averaged over the shapes by weight),
``fragmentation_ratio`` (fragmented over free) and ``shapes`` (the distribution used).

``summary.arrivals`` (``--arrivals``): ``arrived``, ``placed``, ``dropped``, ``arrived_gpus``
and ``placed_gpus`` (GPU compute asked and placed), ``allocation_ratio`` (placed over arrived
GPU demand), ``first_drop`` (1-based position of the first GPU pod dropped, or null) and
``allocation_at_first_drop`` (the cluster's GPU allocation ratio then, or null).
"""

from __future__ import annotations

from typing import Any

from policyengine.engine.arrivals import ArrivalReport
from policyengine.engine.gpu_report import GpuReport, describe


def _round(value: float) -> float:
    return round(value, 4)


def gpu_summary(report: GpuReport) -> dict[str, Any]:
    return {
        "total_gpus": report.total_gpus,
        "allocated_gpus": _round(report.allocated_gpus),
        "allocation_ratio": _round(report.allocation_ratio),
        "free_gpus": _round(report.free_gpus),
        "fragmented_gpus": _round(report.fragmented_gpus),
        "fragmentation_ratio": _round(report.fragmentation_ratio),
        "shapes": describe(report.shapes),
    }


def arrivals_summary(report: ArrivalReport) -> dict[str, Any]:
    at_drop = report.allocation_at_first_drop
    return {
        "arrived": report.arrived,
        "placed": report.placed,
        "dropped": report.dropped,
        "arrived_gpus": _round(report.arrived_gpus),
        "placed_gpus": _round(report.placed_gpus),
        "allocation_ratio": _round(report.allocation_ratio),
        "first_drop": report.first_drop,
        "allocation_at_first_drop": None if at_drop is None else _round(at_drop),
    }


def _pct(ratio: float) -> str:
    return f"{100 * ratio:.1f}%"


def gpu_lines(gpu: GpuReport | None, arrivals: ArrivalReport | None) -> str:
    lines = []
    if gpu is not None:
        lines.append(
            f"GPU devices: {gpu.allocated_gpus:.2f} of {gpu.total_gpus} GPUs allocated "
            f"({_pct(gpu.allocation_ratio)}); fragmentation (FGD, against "
            f"{len(gpu.shapes)} pod shape(s)): {gpu.fragmented_gpus:.2f} of "
            f"{gpu.free_gpus:.2f} free GPUs ({_pct(gpu.fragmentation_ratio)}) no typical pod can use"
        )
    if arrivals is not None:
        drop = (
            "no GPU pod dropped"
            if arrivals.first_drop is None
            else f"first GPU pod dropped at arrival {arrivals.first_drop}, with "
            f"{_pct(arrivals.allocation_at_first_drop or 0.0)} of the GPUs allocated"
        )
        lines.append(
            f"Arrivals: {arrivals.placed} of {arrivals.arrived} placed, {arrivals.dropped} "
            f"dropped; {arrivals.placed_gpus:.2f} of {arrivals.arrived_gpus:.2f} GPUs of demand "
            f"placed ({_pct(arrivals.allocation_ratio)}); {drop}"
        )
    return "\n".join(lines)
