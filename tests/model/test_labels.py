from __future__ import annotations

import pytest

from policyengine.model.frozen import FrozenDict
from policyengine.model.labels import (
    LabelSelector,
    LabelSelectorRequirement,
    SelectorError,
    compile_selector,
    is_label_value,
    is_qualified_name,
    make_requirement,
    parse_go_int,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3),
        ("+3", 3),
        ("-3", -3),
        ("007", 7),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("9223372036854775808", None),  # overflows int64
        ("", None),
        (" 3", None),
        ("3 ", None),
        ("1_000", None),  # Go's base-10 ParseInt has no underscores
        ("1.0", None),
        ("1e3", None),
        ("0x10", None),
        ("٣", None),  # non-ASCII digit
        ("+", None),
    ],
    ids=[
        "3",
        "+3",
        "-3",
        "007",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "''",
        " 3",
        "3 ",
        "1_000",
        "1.0",
        "1e3",
        "0x10",
        "٣",
        "+",
    ],
)
def test_parse_go_int(text: str, expected: int | None) -> None:
    assert parse_go_int(text) == expected


@pytest.mark.parametrize(
    ("op", "values", "labels", "expected"),
    [
        ("In", ["a", "b"], {"k": "a"}, True),
        ("In", ["a"], {"k": "c"}, False),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("NotIn", ["a"], {"k": "b"}, True),
        ("Exists", [], {"k": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
        ("Gt", ["3"], {"k": "4"}, True),
        ("Gt", ["3"], {"k": "3"}, False),
        ("Gt", ["3"], {"k": "04"}, True),
        ("Gt", ["-1"], {"k": "0"}, True),
        ("Gt", ["3"], {"k": "abc"}, False),  # unparsable label value never matches
        ("Gt", ["3"], {}, False),
        ("Lt", ["3"], {"k": "2"}, True),
        ("Lt", ["3"], {"k": "3"}, False),
        ("Lt", ["3"], {"k": "2.5"}, False),
        ("Lt", ["0"], {"k": "-5"}, True),
    ],
    ids=[
        "In-a,b-k=a",
        "In-a-k=c",
        "In-a-empty",
        "NotIn-a-empty",
        "NotIn-a-k=a",
        "NotIn-a-k=b",
        "Exists-empty-k=''",
        "Exists-empty-empty",
        "DoesNotExist-empty-empty",
        "DoesNotExist-empty-k=x",
        "Gt-3-k=4",
        "Gt-3-k=3",
        "Gt-3-k=04",
        "Gt--1-k=0",
        "Gt-3-k=abc",
        "Gt-3-empty",
        "Lt-3-k=2",
        "Lt-3-k=3",
        "Lt-3-k=2.5",
        "Lt-0-k=-5",
    ],
)
def test_requirement_matches(
    op: str, values: list[str], labels: dict[str, str], expected: bool
) -> None:
    assert make_requirement("k", op, values, allow_gt_lt=True).matches(labels) is expected


@pytest.mark.parametrize(
    ("op", "values", "allow"),
    [
        ("Gt", ["x"], True),
        ("Gt", ["1", "2"], True),
        ("Lt", [], True),
        ("In", [], True),
        ("Exists", ["a"], True),
        ("Gt", ["1"], False),  # label selectors have no Gt
        ("Bogus", ["1"], True),
        ("In", ["bad value!"], True),
    ],
    ids=["Gt-x", "Gt-1,2", "Lt-empty", "In-empty", "Exists-a", "Gt-1", "Bogus-1", "In-bad value!"],
)
def test_invalid_requirements(op: str, values: list[str], allow: bool) -> None:
    with pytest.raises(SelectorError):
        make_requirement("k", op, values, allow_gt_lt=allow)


def test_nil_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert not compile_selector(None).matches({"a": "b"})
    assert compile_selector(LabelSelector()).matches({})
    assert compile_selector(LabelSelector()).matches({"a": "b"})


def test_match_labels_and_expressions_are_anded() -> None:
    sel = LabelSelector(
        FrozenDict({"app": "web"}),
        (LabelSelectorRequirement("tier", "NotIn", ("db",)),),
    ).compile()
    assert sel.matches({"app": "web"})
    assert sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "tier": "db"})
    assert not sel.matches({"tier": "fe"})


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app", True),
        ("example.com/rack", True),
        ("nvidia.com/gpu.product", True),
        ("", False),
        ("/x", False),
        ("a/b/c", False),
        ("-x", False),
        ("x" * 64, False),
        ("Example.com/x", False),
    ],
    ids=[
        "plain",
        "prefixed",
        "dotted",
        "empty",
        "empty-prefix",
        "two-slashes",
        "leading-dash",
        "64-characters",
        "uppercase-prefix",
    ],
)
def test_qualified_names(key: str, ok: bool) -> None:
    assert is_qualified_name(key) is ok


def test_label_values() -> None:
    assert is_label_value("")
    assert is_label_value("a.b-c_d")
    assert not is_label_value("-a")
    assert not is_label_value("a" * 64)
