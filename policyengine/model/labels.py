"""Label selectors with exactly apimachinery's semantics.

Two selector dialects share one matcher here. ``metav1.LabelSelector`` (pod affinity terms,
topology spread, namespace selectors) has ``matchLabels`` plus ``In/NotIn/Exists/DoesNotExist``;
a *nil* selector matches nothing and an *empty* one matches everything. Node selector
requirements add ``Gt``/``Lt``, whose operands are parsed like Go's
``strconv.ParseInt(s, 10, 64)``: optional sign, ASCII digits only, 64-bit range, no spaces or
underscores. A label value that does not parse never matches; a requirement value that does not
parse makes the requirement invalid (``SelectorError``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from policyengine.model.frozen import EMPTY, FrozenDict

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

LABEL_SELECTOR_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
NODE_SELECTOR_OPERATORS = LABEL_SELECTOR_OPERATORS | {GT, LT}

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_GO_INT = re.compile(r"[+-]?[0-9]+")
_NAME = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)")
_DNS_SUBDOMAIN = re.compile(
    r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
)


class SelectorError(ValueError):
    """A requirement that apimachinery would refuse to build."""


def parse_go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the integer, or ``None`` where Go returns an error."""
    if not isinstance(text, str) or not _GO_INT.fullmatch(text):
        return None
    value = int(text, 10)
    if value < _INT64_MIN or value > _INT64_MAX:
        return None
    return value


def is_qualified_name(key: str) -> bool:
    """A label key: ``[prefix/]name``, name ≤ 63 chars, prefix a DNS subdomain ≤ 253 chars."""
    if not isinstance(key, str) or not key:
        return False
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.fullmatch(name))


def is_label_value(value: str) -> bool:
    """A label value: empty, or ≤ 63 alphanumerics with ``-_.`` inside."""
    if not isinstance(value, str):
        return False
    return value == "" or (len(value) <= 63 and bool(_NAME.fullmatch(value)))


@dataclass(frozen=True, slots=True)
class Requirement:
    """One compiled requirement: ``key operator values``."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()
    number: int | None = None  # the operand of Gt/Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        parsed = parse_go_int(value)
        if parsed is None or self.number is None:
            return False
        return parsed > self.number if op == GT else parsed < self.number


def make_requirement(
    key: str, operator: str, values: tuple[str, ...] | list[str], *, allow_gt_lt: bool
) -> Requirement:
    """Build a requirement with ``labels.NewRequirement``'s validation; raise ``SelectorError``."""
    allowed = NODE_SELECTOR_OPERATORS if allow_gt_lt else LABEL_SELECTOR_OPERATORS
    if operator not in allowed:
        raise SelectorError(f"{operator!r} is not a valid label selector operator")
    if not is_qualified_name(key):
        raise SelectorError(f"invalid label key {key!r}")
    values = tuple(values)
    if operator in (IN, NOT_IN):
        if not values:
            raise SelectorError(
                f"for 'in', 'notin' operators, values set can't be empty (key {key!r})"
            )
        for value in values:
            if not is_label_value(value):
                raise SelectorError(f"invalid label value {value!r} for key {key!r}")
        return Requirement(key, operator, frozenset(values))
    if operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            raise SelectorError(
                f"values set must be empty for exists and does not exist (key {key!r})"
            )
        return Requirement(key, operator)
    if len(values) != 1:
        raise SelectorError(
            f"for 'Gt', 'Lt' operators, exactly one value is required (key {key!r})"
        )
    number = parse_go_int(values[0])
    if number is None:
        raise SelectorError(
            f"for 'Gt', 'Lt' operators, the value must be an integer (key {key!r}, value {values[0]!r})"
        )
    return Requirement(key, operator, frozenset(values), number)


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector: all requirements ANDed; ``nothing`` matches no label set."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def is_everything(self) -> bool:
        return not self.nothing and not self.requirements

    def with_requirements(self, extra: tuple[Requirement, ...]) -> Selector:
        if self.nothing or not extra:
            return self
        return Selector(self.requirements + extra)


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


@dataclass(frozen=True, slots=True)
class LabelSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``metav1.LabelSelector`` as written in the object (``None`` stands for a nil selector)."""

    match_labels: FrozenDict[str, str] = field(default=EMPTY)
    match_expressions: tuple[LabelSelectorRequirement, ...] = ()

    def compile(self) -> Selector:
        """``metav1.LabelSelectorAsSelector``; raises ``SelectorError`` when invalid."""
        if not self.match_labels and not self.match_expressions:
            return EVERYTHING
        reqs = [
            make_requirement(k, IN, (v,), allow_gt_lt=False)
            for k, v in sorted(self.match_labels.items())
        ]
        reqs.extend(
            make_requirement(e.key, e.operator, e.values, allow_gt_lt=False)
            for e in self.match_expressions
        )
        return Selector(tuple(reqs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.compile().matches(labels)


def compile_selector(selector: LabelSelector | None) -> Selector:
    """A nil selector matches nothing; an empty one matches everything."""
    if selector is None:
        return NOTHING
    return selector.compile()


def compile_selector_or_nothing(selector: LabelSelector | None) -> Selector:
    """Like ``compile_selector`` but an invalid selector matches nothing instead of raising."""
    try:
        return compile_selector(selector)
    except SelectorError:
        return NOTHING


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet``: equality on every pair (empty set = everything)."""
    return Selector(tuple(Requirement(k, IN, frozenset((v,))) for k, v in sorted(labels.items())))


def label_set_requirements(
    labels: Mapping[str, str], operator: str = IN
) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, operator, frozenset((v,))) for k, v in sorted(labels.items()))
