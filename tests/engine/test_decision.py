"""``engine.decision``: the lazily built parts of a decision read as the plain values they stand
for (a ``Names`` is the tuple it holds; built once, only when read)."""

from __future__ import annotations

import pickle

import pytest

from policyengine.engine.decision import (
    Names,
    Rejection,
    RejectionGroup,
    RejectionTable,
    first_rejection_groups,
)


def _names(items: tuple[str, ...], built: list[int]) -> Names:
    def build() -> tuple[str, ...]:
        built.append(1)
        return items

    return Names(build, len(items))


def test_names_know_their_length_without_building() -> None:
    built: list[int] = []
    names = _names(("b", "a"), built)
    assert len(names) == 2
    assert bool(names)
    assert built == []


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        (lambda n: n == ("b", "a", "c"), True),
        (lambda n: n == ("a", "b", "c"), False),
        (lambda n: n == ["b", "a", "c"], False),  # a tuple is not a list either
        (lambda n: tuple(n), ("b", "a", "c")),
        (lambda n: list(n[:2]), ["b", "a"]),
        (lambda n: n[-1], "c"),
        (lambda n: "a" in n, True),
        (lambda n: n.index("c"), 2),
        (lambda n: n.count("a"), 1),
        (lambda n: hash(n) == hash(("b", "a", "c")), True),
        (lambda n: repr(n), "('b', 'a', 'c')"),
        (lambda n: pickle.loads(pickle.dumps(n)), ("b", "a", "c")),
    ],
    ids=[
        "equals-its-tuple",
        "not-another-order",
        "not-a-list",
        "tuple",
        "slice",
        "last",
        "contains",
        "index",
        "count",
        "hash",
        "repr",
        "pickle",
    ],
)
def test_names_read_as_their_tuple(read: object, expected: object) -> None:
    built: list[int] = []
    names = _names(("b", "a", "c"), built)
    assert read(names) == expected  # type: ignore[operator]
    read(names)  # type: ignore[operator]
    assert len(built) <= 1  # built at most once


def test_a_rejection_table_reads_as_its_dict_built_once() -> None:
    table = {"n1": (Rejection("p/fit", ("Insufficient cpu",)),), "n2": ()}
    built: list[int] = []

    def build() -> dict[str, tuple[Rejection, ...]]:
        built.append(1)
        return dict(table)

    rejections = RejectionTable(build, 2)
    assert len(rejections) == 2 and built == []
    assert list(rejections.keys()) == ["n1", "n2"]
    assert list(rejections.values()) == list(table.values())
    assert list(rejections.items()) == list(table.items())
    assert dict(rejections) == table and rejections["n1"] == table["n1"] and "n2" in rejections
    assert built == [1]


_FIT = Rejection("p/fit", ("Insufficient cpu",))
_TAINT = Rejection("p/taint", ("node(s) had untolerated taint {a: b}",))


@pytest.mark.parametrize(
    ("infeasible", "groups"),
    [
        ({}, []),
        ({"n1": ()}, []),
        (
            {"n1": (_FIT,), "n2": (_TAINT, _FIT), "n3": (_FIT,)},
            [(_FIT, ["n1", "n3"]), (_TAINT, ["n2"])],
        ),
        # equal rejections group together whatever object holds them
        (
            {"n1": (_FIT,), "n2": (Rejection("p/fit", ("Insufficient cpu",)),)},
            [(_FIT, ["n1", "n2"])],
        ),
    ],
    ids=[
        "empty",
        "n1=empty",
        "n1=_FIT n2=_TAINT,_FIT n3=_FIT",
        "n1=_FIT n2=Rejection(p/fit,Insufficient cpu)",
    ],
)
def test_first_rejection_groups_of_a_plain_table(
    infeasible: dict[str, tuple[Rejection, ...]], groups: list[RejectionGroup]
) -> None:
    assert first_rejection_groups(infeasible) == groups
    assert (
        first_rejection_groups(RejectionTable(lambda: dict(infeasible), len(infeasible))) == groups
    )


def test_a_rejection_table_groups_itself_once_without_building_its_table() -> None:
    table = {"n1": (_FIT,), "n2": (_TAINT,)}
    own = [(_TAINT, ["n2"]), (_FIT, ["n1"])]
    calls: list[str] = []

    def build() -> dict[str, tuple[Rejection, ...]]:
        calls.append("table")
        return dict(table)

    def groups() -> list[RejectionGroup]:
        calls.append("groups")
        return own

    rejections = RejectionTable(build, 2, groups)
    assert first_rejection_groups(rejections) == own
    assert first_rejection_groups(rejections) == own
    assert calls == ["groups"]
    assert dict(rejections) == table and calls == ["groups", "table"]


def test_a_rejection_table_built_first_groups_its_table() -> None:
    table = {"n1": (_FIT,), "n2": (_TAINT,), "n3": (_FIT,)}
    rejections = RejectionTable(lambda: dict(table), 3, lambda: [])
    assert dict(rejections) == table
    assert first_rejection_groups(rejections) == [(_FIT, ["n1", "n3"]), (_TAINT, ["n2"])]
