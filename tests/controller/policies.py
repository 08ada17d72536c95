"""Policies and policy volumes the controller's tests share: a zone policy, a broken one, and a
directory updated the way the kubelet updates a mounted ConfigMap."""

from __future__ import annotations

import os
from pathlib import Path


def zone_policy(zone: str, name: str = "zone") -> str:
    return (
        f'policy "{name}" {{\n'
        f'  filter in_zone {{ node.labels["zone"] == "{zone}" }} reason "node(s) not in {zone}"\n'
        "}\n"
    )


BROKEN = 'policy "zone" {\n  filter in_zone { node.labels["zone"] == } reason "x"\n}\n'


def kubelet_volume(root: Path, files: dict[str, str], stamp: str) -> None:
    """Write ``files`` the way the kubelet updates a ConfigMap volume: a new timestamped
    directory, then ``..data`` re-pointed at it with one rename (atomic)."""
    target = root / f"..{stamp}"
    target.mkdir()
    for name, text in files.items():
        (target / name).write_text(text)
    link = root / "..data_tmp"
    link.symlink_to(target.name)
    os.replace(link, root / "..data")
    for name in files:
        visible = root / name
        if not visible.is_symlink():
            visible.symlink_to(Path("..data") / name)
