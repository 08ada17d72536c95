from __future__ import annotations

import pytest

from policyengine.model.node_selectors import (
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
    compile_preferred,
    node_names_from_required,
    required_node_affinity,
)

R = NodeSelectorRequirement


def term(*exprs: R, fields: tuple[R, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(tuple(exprs), fields)


LABELS = {"zone": "a", "gen": "4", "disk": "ssd"}


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ((term(R("zone", "In", ("a",))),), True),
        ((term(R("zone", "In", ("b",))),), False),
        # terms are ORed
        ((term(R("zone", "In", ("b",))), term(R("disk", "Exists"))), True),
        # expressions inside one term are ANDed
        ((term(R("zone", "In", ("a",)), R("disk", "DoesNotExist")),), False),
        # an empty term matches nothing, even alongside nothing else
        ((term(),), False),
        ((term(), term(R("zone", "Exists"))), True),
        # an empty list of terms matches nothing
        ((), False),
        # Gt/Lt
        ((term(R("gen", "Gt", ("3",))),), True),
        ((term(R("gen", "Lt", ("4",))),), False),
        # an invalid term is skipped, the others still count
        ((term(R("gen", "Gt", ("three",))), term(R("zone", "In", ("a",)))), True),
        ((term(R("gen", "Gt", ("three",))),), False),
        # matchFields on metadata.name
        ((term(fields=(R("metadata.name", "In", ("n1",)),)),), True),
        ((term(fields=(R("metadata.name", "In", ("n2",)),)),), False),
        ((term(fields=(R("metadata.name", "NotIn", ("n2",)),)),), True),
        ((term(fields=(R("metadata.name", "In", ("n1", "n2")),)),), False),  # exactly one value
        ((term(fields=(R("metadata.uid", "In", ("n1",)),)),), False),
        ((term(R("zone", "In", ("b",)), fields=(R("metadata.name", "In", ("n1",)),)),), False),
    ],
    ids=[
        "zone-in-a",
        "zone-in-b",
        "terms-ored",
        "expressions-anded",
        "empty-term",
        "empty-term-or-exists",
        "no-terms",
        "gt",
        "lt",
        "invalid-term-skipped",
        "only-an-invalid-term",
        "name-in-n1",
        "name-in-n2",
        "name-not-in-n2",
        "name-in-two-values",
        "uid-field",
        "zone-and-name",
    ],
)
def test_required_terms(terms: tuple[NodeSelectorTerm, ...], expected: bool) -> None:
    req = required_node_affinity(None, NodeSelector(terms))
    assert req.matches(LABELS, "n1") is expected


def test_node_selector_and_affinity_are_anded() -> None:
    req = required_node_affinity({"disk": "ssd"}, NodeSelector((term(R("zone", "In", ("a",))),)))
    assert req.matches(LABELS, "n1")
    assert not req.matches({**LABELS, "disk": "hdd"}, "n1")
    assert not required_node_affinity({"zone": "b"}, None).matches(LABELS, "n1")
    assert required_node_affinity(None, None).matches({}, "n1")
    assert required_node_affinity({}, None).matches({}, "n1")


def test_preferred_terms_sum_weights_and_drop_empty_or_zero() -> None:
    prefs = compile_preferred(
        (
            PreferredSchedulingTerm(5, term(R("zone", "In", ("a",)))),
            PreferredSchedulingTerm(7, term(R("gen", "Gt", ("2",)))),
            PreferredSchedulingTerm(0, term(R("zone", "Exists"))),
            PreferredSchedulingTerm(9, term()),
            PreferredSchedulingTerm(11, term(R("zone", "In", ("b",)))),
        )
    )
    assert prefs.score(LABELS, "n1") == 12


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ((term(fields=(R("metadata.name", "In", ("a", "b")),)),), frozenset({"a", "b"})),
        (
            (
                term(fields=(R("metadata.name", "In", ("a",)),)),
                term(fields=(R("metadata.name", "In", ("c",)),)),
            ),
            frozenset({"a", "c"}),
        ),
        # a term without a name restriction allows every node
        ((term(fields=(R("metadata.name", "In", ("a",)),)), term(R("zone", "Exists"))), None),
        # ANDed name requirements intersect; disjoint ones conflict
        (
            (term(fields=(R("metadata.name", "In", ("a",)), R("metadata.name", "In", ("b",)))),),
            frozenset(),
        ),
        ((), None),
    ],
    ids=["one-term", "two-terms", "a-term-without-names", "disjoint-names", "no-terms"],
)
def test_prefilter_node_names(
    terms: tuple[NodeSelectorTerm, ...], expected: frozenset[str] | None
) -> None:
    assert node_names_from_required(NodeSelector(terms)) == expected


@pytest.mark.parametrize(
    ("node_selector", "terms", "keys"),
    [
        pytest.param(None, None, (), id="nothing"),
        pytest.param({"zone": "a", "disk": "ssd"}, None, ("disk", "zone"), id="selector"),
        pytest.param(
            {"zone": "a"},
            (term(R("gen", "Gt", ("3",)), R("disk", "DoesNotExist")), term(R("rack", "Exists"))),
            ("disk", "gen", "rack", "zone"),
            id="selector-and-terms",
        ),
        pytest.param(
            None,
            (term(R("zone", "In", ("a",)), fields=(R("metadata.name", "NotIn", ("n",)),)),),
            None,
            id="a-name-read",
        ),
        pytest.param(
            None, (term(fields=(R("metadata.name", "In", ("n",)),)),), None, id="a-name-picked"
        ),
        # A term that can never match reads nothing: the others decide.
        pytest.param(None, (term(), term(R("zone", "Exists"))), ("zone",), id="an-empty-term"),
        pytest.param(None, (term(R("gen", "Gt", ("x",))),), (), id="a-broken-term"),
    ],
)
def test_the_labels_a_required_affinity_reads(
    node_selector: dict[str, str] | None,
    terms: tuple[NodeSelectorTerm, ...] | None,
    keys: tuple[str, ...] | None,
) -> None:
    required = required_node_affinity(node_selector, None if terms is None else NodeSelector(terms))
    assert required.label_keys == keys


def test_the_labels_preferred_terms_read() -> None:
    # The empty and zero-weight terms are dropped: what they name is never read.
    preferred = compile_preferred(
        (
            PreferredSchedulingTerm(2, term(R("zone", "In", ("a",)), R("gen", "Gt", ("3",)))),
            PreferredSchedulingTerm(0, term(R("disk", "Exists"))),
            PreferredSchedulingTerm(4, term()),
        )
    )
    assert preferred.label_keys == ("gen", "zone")
    named = term(fields=(R("metadata.name", "In", ("n",)),))
    assert compile_preferred((PreferredSchedulingTerm(1, named),)).label_keys is None
