"""Held-out pod lists for GPU placement: the openb cluster with other workloads of its kind.

A policy judged on one trace file gets tuned to that file. These pod lists keep the cluster
(the node list, unchanged) and derive other workloads from the trace's own rows, so every pod
is one a production cluster ran, only the mix differs:

* ``share``: most GPU pods share a device (60% of the pods are shares, 25% one whole GPU);
* ``multi``: many pods ask 2, 4 or 8 whole GPUs (6% of the pods instead of 0.9%);
* ``spec``: 40% of the GPU pods require a GPU model (one model, or two), drawn in proportion
  to the GPUs of the models that have nodes large enough for the pod;
* ``cpu``: CPU-heavy — 30% of the pods ask no GPU and every pod asks 1.5 times the CPU (up to
  what the largest node has);
* ``mixed``: all four at once, each halfway.

Rows are drawn (with replacement) from the trace's rows of each class — CPU-only, a share of
one GPU, one whole GPU, several whole GPUs — in the variant's proportions, with a fixed seed,
so a variant is the same file every time. ``compare`` replays each variant with each policy
directory given (``policyengine replay``, the paper's method) and prints the unallocated GPU %
at 100% arrived demand, mean over the seeds::

    python -m benchmarks.gpu_variants compare --trace ../shared/traces/openb \\
        --policy policies/ --policy benchmarks/policies/fgd --seeds 0-2

``write`` only writes the variants' CSV files (``--out DIR``), for ``policyengine replay``.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

VARIANTS = ("share", "multi", "spec", "cpu", "mixed")
CLASSES = ("cpu", "share", "one", "multi")
SEED = 20230710  # fixed: a variant is one file, the same on every run


def _class(row: dict[str, str]) -> str:
    gpus, milli = int(row["num_gpu"]), int(row["gpu_milli"])
    if gpus == 0 or milli == 0:
        return "cpu"
    if gpus == 1 and milli < 1000:
        return "share"
    return "one" if gpus == 1 else "multi"


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or ()), list(reader)


def _files(trace: Path) -> tuple[Path, Path]:
    nodes = pods = None
    for path in sorted(trace.glob("*.csv")):
        header = path.open(encoding="utf-8").readline()
        if header.startswith("sn,"):
            nodes = path
        elif "num_gpu" in header:
            pods = path
    if nodes is None or pods is None:
        raise SystemExit(f"{trace}: expected a node list and a pod list (*.csv)")
    return nodes, pods


def _mix(rows: list[dict[str, str]], shares: dict[str, float], rng: random.Random) -> list[dict]:
    """``len(rows)`` rows drawn from ``rows`` by class, in the proportions ``shares`` (classes
    not named keep the trace's proportion, the named ones taking from them evenly)."""
    by_class: dict[str, list[dict[str, str]]] = {c: [] for c in CLASSES}
    for row in rows:
        by_class[_class(row)].append(row)
    base = {c: len(v) / len(rows) for c, v in by_class.items()}
    rest = [c for c in CLASSES if c not in shares]
    left = 1 - sum(shares.values())
    weights = {**{c: base[c] * left / sum(base[c] for c in rest) for c in rest}, **shares}
    out = []
    for _ in rows:
        c = rng.choices(CLASSES, [weights[c] for c in CLASSES])[0]
        out.append(dict(rng.choice(by_class[c])))
    return out


def _add_specs(
    rows: list[dict[str, str]], nodes: list[dict[str, str]], fraction: float, rng: random.Random
) -> None:
    """Give ``fraction`` of the GPU pods a required model (one, or two joined by ``|``), drawn
    in proportion to the GPUs of the models with a node that can hold the pod alone."""
    for row in rows:
        if _class(row) == "cpu" or rng.random() >= fraction:
            continue
        gpus, cpu = int(row["num_gpu"]), int(row["cpu_milli"])
        capacity: dict[str, int] = {}
        for n in nodes:
            if int(n["gpu"]) >= gpus and int(n["cpu_milli"]) >= cpu:
                capacity[n["model"]] = capacity.get(n["model"], 0) + int(n["gpu"])
        if not capacity:
            continue
        models = list(capacity)
        first = rng.choices(models, [capacity[m] for m in models])[0]
        chosen = [first]
        others = [m for m in models if m != first]
        if others and rng.random() < 0.5:
            chosen.append(rng.choices(others, [capacity[m] for m in others])[0])
        row["gpu_spec"] = "|".join(sorted(chosen))


def _scale_cpu(rows: list[dict[str, str]], factor: float, largest: int) -> None:
    for row in rows:
        row["cpu_milli"] = str(min(largest, round(int(row["cpu_milli"]) * factor)))


def derive(variant: str, trace: Path, out: Path) -> Path:
    """Write ``variant`` of ``trace`` to the directory ``out`` (the node list copied, the
    pod list derived); returns ``out``."""
    nodes_file, pods_file = _files(trace)
    _, nodes = _read(nodes_file)
    header, rows = _read(pods_file)
    rng = random.Random(f"{SEED}-{variant}")
    largest = max(int(n["cpu_milli"]) for n in nodes)
    if variant == "share":
        rows = _mix(rows, {"share": 0.60, "one": 0.25}, rng)
    elif variant == "multi":
        rows = _mix(rows, {"multi": 0.06}, rng)
    elif variant == "spec":
        rows = [dict(r) for r in rows]
        _add_specs(rows, nodes, 0.4, rng)
    elif variant == "cpu":
        rows = _mix(rows, {"cpu": 0.30}, rng)
        _scale_cpu(rows, 1.5, largest)
    elif variant == "mixed":
        rows = _mix(rows, {"share": 0.45, "multi": 0.035, "cpu": 0.2}, rng)
        _add_specs(rows, nodes, 0.2, rng)
        _scale_cpu(rows, 1.25, largest)
    else:
        raise SystemExit(f"unknown variant {variant!r} (one of {', '.join(VARIANTS)})")
    for i, row in enumerate(rows):
        row["name"] = f"{variant}-pod-{i:05d}"
    out.mkdir(parents=True, exist_ok=True)
    (out / nodes_file.name).write_bytes(nodes_file.read_bytes())
    with (out / f"{variant}_pod_list.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return out


_MAIN = "import sys; from policyengine.cli.main import main; sys.exit(main(sys.argv[1:]))"


def replay(trace: Path, policy: str, seeds: str) -> dict:
    """``policyengine replay`` of ``trace`` with ``policy``, its JSON document."""
    command = ["replay", "--trace", str(trace), "--policy", policy, "--seeds", seeds]
    done = subprocess.run(
        [sys.executable, "-c", _MAIN, *command, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict = json.loads(done.stdout)
    return result


def above(curve: Sequence[Sequence[float]], baseline: Sequence[Sequence[float]]) -> float:
    """The most ``curve`` (mean unallocated % against arrived %) lies above ``baseline`` at
    the arrived demands both reach; negative when it is below everywhere."""
    base = {round(x, 4): y for x, y in baseline}
    gaps = [y - base[round(x, 4)] for x, y in curve if round(x, 4) in base]
    return max(gaps, default=0.0)


def compare(trace: Path, policies: Sequence[str], variants: Sequence[str], seeds: str) -> None:
    """Each variant replayed with each policy: the mean figure at 100% arrived, each seed's,
    and for every policy after the first the most its mean curve lies above the first's."""
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for variant in variants:
            path = trace if variant == "openb" else derive(variant, trace, Path(tmp) / variant)
            cells = []
            first: list[list[float]] | None = None
            for policy in policies:
                result = replay(path, policy, seeds)
                figure = result["unallocated_at_100"]
                per_seed = [s["unallocated_at_100"] for s in result["seeds"]]
                cell = f"{figure['mean']:.2f} {per_seed}"
                if first is None:
                    first = result["curve"]
                else:
                    cell += (
                        f" (curve above the first by at most {above(result['curve'], first):.2f})"
                    )
                cells.append(cell)
                print(f"{variant} {policy}: {cell}", file=sys.stderr)
            rows.append((variant, cells))
    print("| pod list | " + " | ".join(policies) + " |")
    print("|---|" + "---|" * len(policies))
    for variant, cells in rows:
        print(f"| {variant} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_variants", description=__doc__)
    parser.add_argument("command", choices=("compare", "write"))
    parser.add_argument("--trace", type=Path, required=True, help="the openb trace directory")
    parser.add_argument("--policy", action="append", default=[], help="a policy directory")
    parser.add_argument(
        "--variant",
        action="append",
        choices=("openb", *VARIANTS),
        help="pod lists to use (default: the trace itself and every variant)",
    )
    parser.add_argument("--seeds", default="0-2", help="seeds per replay (default 0-2)")
    parser.add_argument("--out", type=Path, help="write: the directory to write variants to")
    args = parser.parse_args(argv)
    variants = args.variant or ["openb", *VARIANTS]
    if args.command == "write":
        if args.out is None:
            parser.error("write needs --out")
        for variant in variants:
            if variant != "openb":
                print(derive(variant, args.trace, args.out / variant))
        return 0
    if not args.policy:
        parser.error("compare needs at least one --policy")
    compare(args.trace, args.policy, variants, args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
