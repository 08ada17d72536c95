"""A storage's derivations tell which objects they replaced (``model.storage_log``): from the
last storage two share, the keys replaced on the way to either; nothing when they share none."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    # Going back tells the same keys: they are what differs between the two.
    assert base.changes_since(derived) == (set() if change is None else {change})


def test_the_keys_along_a_line_add_up() -> None:
    base = _base()
    middle = base.with_pv(PV).with_pvc(CLAIM)
    last = middle.without_pv("pv0")
    assert last.changes_since(base) == {("pv", "pv1"), ("pvc", "default/data"), ("pv", "pv0")}
    assert last.changes_since(middle) == {("pv", "pv0")}


def test_a_second_child_forks_and_the_keys_since_the_fork_are_told() -> None:
    """As the scheduler's view is laid anew over the same truth for every assumption."""
    base = _base()
    first = base.with_pv(PV)
    second = base.with_pvc(CLAIM)
    assert first.changes_since(base) == {("pv", "pv1")}
    assert second.changes_since(base) == {("pvc", "default/data")}
    # Siblings differ in what either replaced since their parent.
    assert second.changes_since(first) == {("pv", "pv1"), ("pvc", "default/data")}
    assert second.with_pv(PV).changes_since(second) == {("pv", "pv1")}
    third = base.without_pvc("default/c0").with_class(StorageClass("fast", "x"))
    assert third.changes_since(second) == {
        ("pvc", "default/data"),
        ("pvc", "default/c0"),
        ("class", "fast"),
    }


def test_forks_of_forks_meet_at_their_last_shared_storage() -> None:
    truth = _base().with_pv(PV)
    view = truth.with_pvc(CLAIM)
    again = truth.with_pvc(CLAIM).without_pv("pv0")  # a fork of the truth
    later = truth.with_pvc(PersistentVolumeClaim("other", "default")).with_pvc(CLAIM)
    assert again.changes_since(view) == {("pvc", "default/data"), ("pv", "pv0")}
    assert later.changes_since(again) == {
        ("pvc", "default/data"),
        ("pv", "pv0"),
        ("pvc", "default/other"),
    }
    assert later.changes_since(_base()) is None  # built apart


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


@st.composite
def derivations(draw: st.DrawFn) -> list[StorageObjects]:
    """Storages derived one from another at random: many children of one storage (forks),
    chains, and forks of forks, each replacing or removing a volume, a claim or a class."""
    made = [_base()]
    for index in range(draw(st.integers(1, 14))):
        parent = made[draw(st.integers(0, len(made) - 1))]
        name = draw(st.sampled_from(["a", "b", "pv0"]))
        change = draw(st.sampled_from(["pv", "no pv", "pvc", "no pvc", "class"]))
        if change == "pv":
            child = parent.with_pv(PersistentVolume(name, uid=f"u{index}"))
        elif change == "no pv":
            child = parent.without_pv(name)
        elif change == "pvc":
            child = parent.with_pvc(PersistentVolumeClaim(name, "default", uid=f"u{index}"))
        elif change == "no pvc":
            child = parent.without_pvc(f"default/{name}")
        else:
            child = parent.with_class(StorageClass(name, f"p{index}"))
        made.append(child)
    return made


def _differing(a: StorageObjects, b: StorageObjects) -> set[tuple[str, str]]:
    out = set()
    for kind, x, y in (
        ("pv", a.pvs, b.pvs),
        ("pvc", a.pvcs, b.pvcs),
        ("class", a.classes, b.classes),
    ):
        out.update((kind, key) for key in {*x, *y} if x.get(key) is not y.get(key))
    return out


@settings(max_examples=300, deadline=None)
@given(made=derivations(), data=st.data())
def test_the_keys_told_cover_every_object_that_differs(
    made: list[StorageObjects], data: st.DataObject
) -> None:
    older = data.draw(st.sampled_from(made))
    newer = data.draw(st.sampled_from(made))
    told = newer.changes_since(older)
    assert told is not None  # every one derives from the first
    assert _differing(older, newer) <= told
