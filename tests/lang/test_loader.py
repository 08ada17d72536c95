"""The loader's names and digest: one version for one tree of sources wherever it was read
from, and a recorded unit that builds again to the very same version."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from policyengine.lang.loader import (
    SHIPPED_PREFIX,
    Unit,
    load,
    load_recorded,
    load_texts,
    shipped_policies_dir,
)

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"


def _git_tree(tmp_path: Path) -> Unit:
    """The shipped tree as ``diff git:REV:PATH`` reads it: checked out into a new directory."""
    target = tmp_path / "git"
    subprocess.run(["git", "init", "-q", str(target)], check=True)
    shutil.copytree(POLICIES, target / "policies")
    return load([target / "policies"])


WHERE: list[tuple[str, Callable[[Path], Unit]]] = [
    ("relative", lambda _tmp: load([Path("policies")])),
    ("absolute", lambda _tmp: load([POLICIES])),
    ("copy", lambda tmp: load([shutil.copytree(POLICIES, tmp / "elsewhere")])),
    ("shipped default", lambda _tmp: load([shipped_policies_dir()])),
    ("git checkout", _git_tree),
]


@pytest.mark.parametrize("read", [w[1] for w in WHERE], ids=[w[0] for w in WHERE])
def test_a_tree_has_one_version_wherever_it_is_read_from(
    read: Callable[[Path], Unit], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert read(tmp_path).digest == load([POLICIES]).digest


def test_the_version_follows_content_names_and_roles(tmp_path: Path) -> None:
    (tmp_path / "a.sched").write_text('policy "a" { }\n')
    (tmp_path / "lib.sched").write_text("library lib { filter f { true } }\n")
    both = load([tmp_path])
    alone = load([tmp_path / "a.sched"])
    assert both.digest != alone.digest  # lib.sched is an entry file or not there at all
    (tmp_path / "a.sched").write_text('import "lib.sched"\npolicy "a" { use lib }\n')
    importing = load([tmp_path / "a.sched"])
    assert importing.names == {str(tmp_path / n): n for n in ("a.sched", "lib.sched")}
    entries = load([tmp_path])
    # The same two files, lib.sched an entry in one and imported in the other.
    assert importing.digest != entries.digest
    (tmp_path / "a.sched").write_text('import "lib.sched"\npolicy "a" { use lib }  \n')
    assert load([tmp_path / "a.sched"]).digest != importing.digest  # any byte counts


@pytest.mark.parametrize(
    "read",
    [
        lambda: load([POLICIES]),
        lambda: load([POLICIES / "gpu-share-binpack.sched"]),
        lambda: load_texts(
            {"ns/cm/p.sched": 'import "kube-default.sched"\npolicy "p" { use kube }'}
        ),
    ],
    ids=["directory", "file importing beside it", "configmap importing a shipped policy"],
)
def test_a_recorded_unit_builds_again_to_the_same_version(read: Callable[[], Unit]) -> None:
    unit = read()
    assert unit.ok
    again = load_recorded(unit.recorded())
    assert again.ok and again.digest == unit.digest
    assert [f.path for f in again.entry_files] == sorted(unit.recorded().entries)
    assert {lib.name for lib in again.libraries} == {lib.name for lib in unit.libraries}


def test_a_recorded_shipped_import_is_read_from_the_record() -> None:
    unit = load_texts({"cm/p.sched": 'import "kube-default.sched"\npolicy "p" { use kube }'})
    recorded = unit.recorded()
    assert sorted(recorded.imported) == [SHIPPED_PREFIX + "kube-default.sched"]
    changed = {k: v.replace("library kube", "library kube  ") for k, v in recorded.imported.items()}
    again = load_recorded(type(recorded)(recorded.entries, changed))
    assert again.ok and again.digest != unit.digest  # the record's text, not the disk's
