"""Node selectors and node affinity, as component-helpers' ``nodeaffinity`` evaluates them.

``requiredDuringScheduling...nodeSelectorTerms`` are ORed, the requirements inside one term
ANDed. A term with neither ``matchExpressions`` nor ``matchFields`` matches nothing, and so does
an empty list of terms. ``matchFields`` supports only ``metadata.name`` with ``In``/``NotIn`` and
exactly one value. A term with an invalid requirement (unknown operator, ``Gt`` on a
non-integer, ...) is skipped as a non-match, the way kube-scheduler ignores parse errors.
``spec.nodeSelector`` is ANDed with the required affinity. Preferred terms add their weight
when they match; weight-0 and empty terms are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.labels import (
    IN,
    NOT_IN,
    Requirement,
    SelectorError,
    make_requirement,
)

METADATA_NAME = "metadata.name"


@dataclass(frozen=True, slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_expressions and not self.match_fields


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class CompiledTerm:
    """A parsed term; ``error`` set means the term can never match."""

    labels: tuple[Requirement, ...] = ()
    name_in: str | None = None
    name_not_in: tuple[str, ...] = ()
    error: str | None = None

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None:
            return False
        if self.name_in is not None and node_name != self.name_in:
            return False
        if node_name in self.name_not_in:
            return False
        return all(r.matches(node_labels) for r in self.labels)


def compile_term(term: NodeSelectorTerm) -> CompiledTerm:
    if term.is_empty:
        return CompiledTerm(error="empty node selector term matches nothing")
    try:
        labels = tuple(
            make_requirement(r.key, r.operator, r.values, allow_gt_lt=True)
            for r in term.match_expressions
        )
    except SelectorError as exc:
        return CompiledTerm(error=str(exc))
    name_in: str | None = None
    name_not_in: list[str] = []
    conflict = False
    for r in term.match_fields:
        if r.key != METADATA_NAME:
            return CompiledTerm(error=f"{r.key!r} is not a valid field selector key")
        if r.operator not in (IN, NOT_IN):
            return CompiledTerm(error=f"{r.operator!r} is not a valid field selector operator")
        if len(r.values) != 1:
            return CompiledTerm(
                error=f"unexpected number of value ({len(r.values)}) for node field selector operator {r.operator!r}"
            )
        if r.operator == IN:
            if name_in is not None and name_in != r.values[0]:
                conflict = True
            name_in = r.values[0]
        else:
            name_not_in.append(r.values[0])
    if conflict:
        return CompiledTerm(
            labels=labels, name_in=name_in, error="conflicting metadata.name fields"
        )
    return CompiledTerm(labels=labels, name_in=name_in, name_not_in=tuple(name_not_in))


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """``requiredDuringSchedulingIgnoredDuringExecution``: terms ORed."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    def compile(self) -> tuple[CompiledTerm, ...]:
        return tuple(compile_term(t) for t in self.terms)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``spec.nodeSelector`` AND the required node affinity of one pod, compiled once."""

    node_selector: FrozenDict[str, str] = field(default=EMPTY)
    has_node_selector: bool = False
    terms: tuple[CompiledTerm, ...] | None = None  # None: no required node affinity
    # The only nodes it can match when every term names them (``node_names_from_required``:
    # NodeAffinity's PreFilter, a DaemonSet's pods); None when it may match others.
    named_nodes: frozenset[str] | None = field(default=None, compare=False)
    # The node labels ``matches`` reads, sorted: nodes alike in their values match alike.
    # None when it reads the node's name too (a ``matchFields`` term), or is not told.
    label_keys: tuple[str, ...] | None = field(default=None, compare=False)

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        if self.has_node_selector:
            for key, value in self.node_selector.items():
                if node_labels.get(key) != value:
                    return False
        if self.terms is None:
            return True
        return any(t.matches(node_labels, node_name) for t in self.terms)

    @property
    def is_trivial(self) -> bool:
        return not self.has_node_selector and self.terms is None


def required_node_affinity(
    node_selector: Mapping[str, str] | None, required: NodeSelector | None
) -> RequiredNodeAffinity:
    terms = None if required is None else required.compile()
    return RequiredNodeAffinity(
        node_selector=FrozenDict(node_selector or {}),
        has_node_selector=node_selector is not None,
        terms=terms,
        named_nodes=node_names_from_required(required),
        label_keys=_label_keys(node_selector or {}, terms or ()),
    )


def _label_keys(
    node_selector: Mapping[str, str], terms: tuple[CompiledTerm, ...]
) -> tuple[str, ...] | None:
    """The labels ``RequiredNodeAffinity.matches`` reads; None when a term reads the node's
    name (a term that can never match reads nothing)."""
    keys = set(node_selector)
    for term in terms:
        if term.error is not None:
            continue
        if term.name_in is not None or term.name_not_in:
            return None
        keys.update(r.key for r in term.labels)
    return tuple(sorted(keys))


@dataclass(frozen=True, slots=True)
class CompiledPreferredTerms:
    terms: tuple[tuple[int, CompiledTerm], ...] = ()
    # The node labels ``score`` reads, sorted; None when a term reads the node's name too, or
    # when not told.
    label_keys: tuple[str, ...] | None = field(default=None, compare=False)

    def score(self, node_labels: Mapping[str, str], node_name: str) -> int:
        return sum(w for w, t in self.terms if t.matches(node_labels, node_name))


def compile_preferred(terms: tuple[PreferredSchedulingTerm, ...]) -> CompiledPreferredTerms:
    kept = tuple(
        (t.weight, compile_term(t.preference))
        for t in terms
        if t.weight != 0 and not t.preference.is_empty
    )
    return CompiledPreferredTerms(kept, _label_keys({}, tuple(term for _, term in kept)))


def node_names_from_required(required: NodeSelector | None) -> frozenset[str] | None:
    """The nodes a required affinity pins by ``metadata.name In`` in every term, else ``None``.

    kube-scheduler's NodeAffinity PreFilter: when every term names nodes through
    ``matchFields``, only the union of those names is looked at.  An empty result means the terms
    conflict and no node can match.
    """
    if required is None or not required.terms:
        return None
    union: set[str] = set()
    for term in required.terms:
        names: set[str] | None = None
        for r in term.match_fields:
            if r.key == METADATA_NAME and r.operator == IN:
                values = set(r.values)
                names = values if names is None else names & values
        if names is None:
            return None
        union |= names
    return frozenset(union)
