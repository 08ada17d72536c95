"""The CLI fixture cluster with one pending pod's spec changed, written where a test asks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CLUSTER = Path(__file__).resolve().parent / "fixtures" / "snapshots" / "gpu-cluster.yaml"


def with_pod_spec(directory: Path, pod: str, **spec: Any) -> str:
    """``gpu-cluster.yaml`` with ``spec`` set on the pod named ``pod``; the new file's path."""
    cluster = yaml.safe_load(CLUSTER.read_text())
    (found,) = [p for p in cluster["items"] if p["metadata"]["name"] == pod]
    found["spec"].update(spec)
    path = directory / f"{pod}-changed.yaml"
    path.write_text(yaml.safe_dump(cluster))
    return str(path)
