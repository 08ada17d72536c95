"""A storage's derivations tell which objects they replaced (``model.storage_log``): along one
line, the keys from an older storage to a newer; nothing when the two are not on one line."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from policyengine.model import storage_log
from policyengine.model.storage import (
    ClaimRef,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    StorageObjects,
)

Step = Callable[[StorageObjects], StorageObjects]

PV = PersistentVolume("pv1")
CLAIM = PersistentVolumeClaim("data", "default")
STEPS: dict[str, tuple[Step, tuple[str, str] | None]] = {
    "a volume added": (lambda s: s.with_pv(PV), ("pv", "pv1")),
    "a volume replaced": (
        lambda s: s.with_pv(PersistentVolume("pv0", claim_ref=ClaimRef("default", "c", ""))),
        ("pv", "pv0"),
    ),
    "a volume removed": (lambda s: s.without_pv("pv0"), ("pv", "pv0")),
    "a volume not there removed": (lambda s: s.without_pv("ghost"), None),
    "a claim added": (lambda s: s.with_pvc(CLAIM), ("pvc", "default/data")),
    "a claim removed": (lambda s: s.without_pvc("default/c0"), ("pvc", "default/c0")),
    "a class added": (lambda s: s.with_class(StorageClass("fast", "x")), ("class", "fast")),
    "a CSINode added": (lambda s: s.with_csi_node(CSINode("n1")), ("csinode", "n1")),
}


def _base() -> StorageObjects:
    return StorageObjects.build(
        pvs=[PersistentVolume("pv0")], pvcs=[PersistentVolumeClaim("c0", "default")]
    )


@pytest.mark.parametrize(("step", "change"), STEPS.values(), ids=STEPS)
def test_a_derivation_tells_the_key_it_replaced(step: Step, change: tuple[str, str] | None) -> None:
    base = _base()
    derived = step(base)
    assert derived.changes_since(base) == (set() if change is None else {change})
    assert derived.changes_since(derived) == set()
    if change is not None:
        assert base.changes_since(derived) is None  # an older one is not reached going back


def test_the_keys_along_a_line_add_up() -> None:
    base = _base()
    middle = base.with_pv(PV).with_pvc(CLAIM)
    last = middle.without_pv("pv0")
    assert last.changes_since(base) == {("pv", "pv1"), ("pvc", "default/data"), ("pv", "pv0")}
    assert last.changes_since(middle) == {("pv", "pv0")}


def test_a_second_child_starts_a_line_of_its_own() -> None:
    base = _base()
    first = base.with_pv(PV)
    second = base.with_pvc(CLAIM)
    assert first.changes_since(base) == {("pv", "pv1")}
    assert second.changes_since(base) is None
    assert second.changes_since(first) is None
    assert second.with_pv(PV).changes_since(second) == {("pv", "pv1")}


def test_storages_built_apart_are_not_on_one_line() -> None:
    assert _base().changes_since(_base()) is None


def test_a_line_grown_past_its_keep_starts_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_log, "KEPT", 2)
    base = _base()
    second = base.with_pv(PV).with_pvc(CLAIM)
    third = second.without_pv("pv0")
    assert second.changes_since(base) == {("pv", "pv1"), ("pvc", "default/data")}
    assert third.changes_since(base) is None
    assert third.without_pvc("default/c0").changes_since(third) == {("pvc", "default/c0")}
