"""``samefields.equal_except`` answers as blanking the left-out fields with
``dataclasses.replace`` and comparing the copies with ``==`` does.

Pods (and a small dataclass with a field left out of comparison and a float that may be NaN)
are changed in generated fields to values taken from other objects; the two answers must
agree for every set of left-out fields. The cache's and the queue's own questions are asked
in a table.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.controller.cache import _node_changed, _same_placement
from policyengine.controller.queue import spec_changed
from policyengine.controller.samefields import equal_except
from policyengine.model.objects import Pod
from tests.controller.builders import node, pod

NAN = math.nan


@dataclasses.dataclass(frozen=True)
class _Small:
    a: int = 0
    b: float = 0.0
    note: str = dataclasses.field(default="", compare=False)


@dataclasses.dataclass(frozen=True)
class _Other:
    a: int = 0
    b: float = 0.0
    note: str = ""


_LEFT_OUT = object()  # what a left-out field without a default is blanked to


def _blanked(obj: Any, skip: frozenset[str]) -> Any:
    required = _required(obj)
    blank = {
        f.name: _LEFT_OUT if f.name in required else getattr(type(obj)(**required), f.name)
        for f in dataclasses.fields(obj)
        if f.name in skip
    }
    return dataclasses.replace(obj, **blank)


def _required(obj: Any) -> dict[str, Any]:
    # Fields without a default (a Pod's name) keep their value in the blank.
    return {
        f.name: getattr(obj, f.name)
        for f in dataclasses.fields(obj)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }


def _reference(a: Any, b: Any, skip: frozenset[str]) -> bool:
    return bool(_blanked(a, skip) == _blanked(b, skip))


_PODS = [
    pod("p", uid="u1"),
    pod("p", uid="u1", node="n1"),
    pod("p", uid="u2", cpu="2", labels={"app": "a"}),
    pod("q", priority=5, memory="1Gi"),
    dataclasses.replace(pod("p", uid="u1"), resource_version="9", phase="Pending"),
    dataclasses.replace(pod("p", uid="u1"), nominated_node_name="n2", status_qos_class="X"),
]
_POD_FIELDS = [f.name for f in dataclasses.fields(Pod)]


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(_PODS),
    donors=st.lists(st.tuples(st.sampled_from(_POD_FIELDS), st.sampled_from(_PODS)), max_size=4),
    skip=st.frozensets(st.sampled_from(_POD_FIELDS), max_size=5),
)
def test_pods_compare_as_their_blanked_copies(
    base: Pod, donors: list[tuple[str, Pod]], skip: frozenset[str]
) -> None:
    changed = dataclasses.replace(base, **{name: getattr(d, name) for name, d in donors})
    assert equal_except(base, changed, skip) == _reference(base, changed, skip)
    assert equal_except(changed, base, skip) == _reference(changed, base, skip)


_SMALL = st.builds(
    _Small,
    a=st.integers(0, 2),
    b=st.sampled_from([0.0, -0.0, 1.0, NAN]),
    note=st.sampled_from(["", "x"]),
)


@settings(max_examples=200, deadline=None)
@given(x=_SMALL, y=_SMALL, skip=st.frozensets(st.sampled_from(["a", "b", "note"])))
def test_small_dataclasses_compare_as_their_blanked_copies(
    x: _Small, y: _Small, skip: frozenset[str]
) -> None:
    assert equal_except(x, y, skip) == _reference(x, y, skip)
    assert equal_except(x, x, skip) == _reference(x, x, skip)  # a NaN field equals itself


@pytest.mark.parametrize(
    ("a", "b", "skip", "expected"),
    [
        (_Small(1, 2.0), _Other(1, 2.0), frozenset(), False),  # another class: never equal
        (_Small(1, 2.0, "x"), _Small(1, 2.0, "y"), frozenset(), True),  # note not compared
        (_Small(1, 2.0), _Small(1, 3.0), frozenset({"b"}), True),
        (_Small(1, 2.0), _Small(2, 3.0), frozenset({"b"}), False),
        (_Small(1, 2.0), _Small(2, 3.0), frozenset({"a", "b"}), True),  # nothing left to compare
        (_Small(1, NAN), _Small(1, NAN), frozenset(), True),  # one NaN object: itself
        (_Small(1, float("nan")), _Small(1, float("nan")), frozenset(), False),  # two differ
    ],
    ids=[
        "another-class",
        "note-not-compared",
        "skipped-field-differs",
        "unskipped-field-differs",
        "all-fields-skipped",
        "one-nan-object",
        "two-nans",
    ],
)
def test_equal_except(a: Any, b: Any, skip: frozenset[str], expected: bool) -> None:
    assert equal_except(a, b, skip) is expected


_ASSUMED = pod("p", uid="u1", node="n1")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (lambda: _same_placement(_ASSUMED, dataclasses.replace(_ASSUMED, resource_version="8")), True),
        (lambda: _same_placement(_ASSUMED, dataclasses.replace(_ASSUMED, node_name="n2")), False),
        (lambda: _same_placement(_ASSUMED, dataclasses.replace(_ASSUMED, labels=_PODS[2].labels)), False),
        (lambda: _node_changed(node("n1"), dataclasses.replace(node("n1"), resource_version="3")), False),
        (lambda: _node_changed(node("n1"), node("n1", cpu="9")), True),
        (lambda: spec_changed(_PODS[0], _PODS[4]), False),  # status and resourceVersion only
        (lambda: spec_changed(_PODS[0], _PODS[5]), False),
        (lambda: spec_changed(_PODS[0], _PODS[1]), True),  # bound elsewhere
        (lambda: spec_changed(_PODS[0], _PODS[2]), True),
    ],
    ids=[
        "placement-only-version", "placement-other-node", "placement-other-labels",
        "node-only-version", "node-other-cpu",
        "spec-status-and-version", "spec-status-only", "spec-bound-elsewhere", "spec-another-pod",
    ],
)  # fmt: skip
def test_the_callers_questions(question: Any, expected: bool) -> None:
    assert question() is expected
