"""Static cost bounds: the most work a rule can do for one (pod, node) pair, in abstract units.

The language is total, and this is the number that proves it: every construct is bounded, so
lint can refuse rules that would make a scheduling cycle slow before they reach a cluster. The
units are rough (one per node visited), which is enough to compare rules and set a budget.

- every expression node costs 1, plus its sub-expressions;
- an attribute costs its declared ``Field.cost``; a schema function its ``Function.cost``;
- a comprehension costs ``cost(iterable) + bound(iterable) * (cost(element) + cost(if))``,
  the bound coming from the collection's type (a literal list's type has its length as bound);
- an aggregate (any, all, count, sum, min, max) over a collection, and ``in`` over a list,
  add the collection's bound, since they walk it;
- ``if`` costs the dearer of its branches;
- a let costs 1 where it is read; its expression is counted once per rule however often the
  rule (or the lets it reads) reads it, as the compiler evaluates each let once.

Costs are computed from the checker's side tables (types, which ``Name`` reads which let,
which call is a schema function), so this module needs no checker and the checker uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policyengine.lang import nodes as n
from policyengine.lang.nodes import children
from policyengine.lang.schema import Function
from policyengine.lang.types import DYN, ListType, RecordType, Type, bound_of, non_null

# The builtins that walk the whole of a collection argument.
AGGREGATES = frozenset({"any", "all", "count", "sum", "min", "max"})


@dataclass(frozen=True)
class RuleCost:
    """A rule's bound, split by where the work is; ``lets`` counts each let it reads once."""

    guard: int
    body: int
    reason: int
    lets: int

    @property
    def total(self) -> int:
        return self.guard + self.body + self.reason + self.lets


class CostModel:
    """Costs of expressions and rules from the checker's side tables (memoised by node id).

    ``types`` maps ``id(expr)`` to its type, ``let_refs`` maps ``id(name)`` to the ``Let`` a
    name reads, and ``calls`` maps ``id(call)`` to the schema function a call resolved to.
    """

    def __init__(
        self,
        types: Mapping[int, Type],
        let_refs: Mapping[int, n.Let],
        calls: Mapping[int, Function],
    ):
        self._types = types
        self._let_refs = let_refs
        self._calls = calls
        self._memo: dict[int, int] = {}

    def _bound(self, expr: n.Expr) -> int:
        return bound_of(self._types.get(id(expr), DYN))

    def expr(self, expr: n.Expr) -> int:
        """The bound of one expression; the lets it reads cost 1 each here."""
        key = id(expr)
        if key not in self._memo:
            self._memo[key] = self._compute(expr)
        return self._memo[key]

    def _compute(self, expr: n.Expr) -> int:
        match expr:
            case n.Attribute(obj=obj, name=name):
                record = non_null(self._types.get(id(obj), DYN))
                declared = record.fields.get(name) if isinstance(record, RecordType) else None
                return (declared.cost if declared is not None else 1) + self.expr(obj)
            case n.Call(func=func, args=args):
                inner = sum(self.expr(a) for a in args)
                function = self._calls.get(id(expr))
                if function is not None:
                    return function.cost + inner
                walked = (
                    self._bound(args[0])
                    if func in AGGREGATES
                    and len(args) == 1
                    and not isinstance(args[0], n.Comprehension)
                    else 0
                )
                return 1 + inner + walked
            case n.Binary(op=op, left=left, right=right) if op in ("in", "not in"):
                right_type = non_null(self._types.get(id(right), DYN))
                walked = self._bound(right) if isinstance(right_type, ListType) else 0
                return 1 + self.expr(left) + self.expr(right) + walked
            case n.Conditional(cond=cond, then=then, otherwise=otherwise):
                return 1 + self.expr(cond) + max(self.expr(then), self.expr(otherwise))
            case n.Comprehension(element=element, iterable=iterable, condition=condition):
                per_item = self.expr(element) + (
                    self.expr(condition) if condition is not None else 0
                )
                return 1 + self.expr(iterable) + self._bound(iterable) * per_item
            case _:
                return 1 + sum(self.expr(child) for child in children(expr))

    def lets_read(self, *exprs: n.Expr | None) -> tuple[n.Let, ...]:
        """Every let the expressions read, directly or through other lets, each once."""
        found: dict[int, n.Let] = {}
        stack = [e for e in exprs if e is not None]
        while stack:
            expr = stack.pop()
            let = self._let_refs.get(id(expr)) if isinstance(expr, n.Name) else None
            if let is not None and id(let) not in found:
                found[id(let)] = let
                stack.append(let.expr)
            stack.extend(children(expr))
        return tuple(found.values())

    def rule(self, rule: n.Filter | n.Score) -> RuleCost:
        reason = rule.reason if isinstance(rule, n.Filter) else None
        lets = self.lets_read(rule.guard, rule.body, reason)
        return RuleCost(
            guard=self.expr(rule.guard) if rule.guard is not None else 0,
            body=self.expr(rule.body),
            reason=self.expr(reason) if reason is not None else 0,
            lets=sum(self.expr(let.expr) for let in lets),
        )
