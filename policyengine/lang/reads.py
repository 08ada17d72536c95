"""What a compiled rule reads: the schema functions it calls and the root attributes it names.

Caches of rule results need to know what a result depends on. The engine reuses a rule's
per-node verdicts for pods that are alike (same spec but for their names) while the node is
unchanged; that is only sound when the rule reads no per-pod-unique attribute (``pod.name``)
and calls no function whose result depends on other nodes. This module answers from the
checker's side tables, following ``let`` references, so every expression the rule's
evaluation can reach is seen. It knows nothing of Kubernetes: the caller decides which
attributes and functions matter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from policyengine.lang import nodes as n
from policyengine.lang.checker import CheckResult
from policyengine.lang.schema import Function


@dataclass(frozen=True)
class RuleReads:
    """``functions`` called (each once, in first-seen order); ``attributes`` as (root, name)
    pairs such as ``("pod", "name")`` for every attribute read directly off a root."""

    functions: tuple[Function, ...]
    attributes: frozenset[tuple[str, str]]


def rule_reads(source: n.Filter | n.Score | None, checked: CheckResult | None) -> RuleReads | None:
    """What ``source`` (guard, body and reason) reads; None when it cannot be told (a rule
    built by hand, or one the checker has not seen)."""
    if source is None or checked is None:
        return None
    walker = _Walker(checked)
    for part in (source.guard, source.body, getattr(source, "reason", None)):
        if part is not None and not walker.walk(part):
            return None
    return RuleReads(tuple(walker.functions.values()), frozenset(walker.attributes))


class _Walker:
    def __init__(self, checked: CheckResult):
        self.checked = checked
        self.functions: dict[int, Function] = {}
        self.attributes: set[tuple[str, str]] = set()
        self._lets: set[int] = set()

    def walk(self, root: Any) -> bool:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, n.Call):
                function = self.checked.calls.get(id(node))
                if function is not None:
                    self.functions.setdefault(id(function), function)
            elif isinstance(node, n.Attribute) and isinstance(node.obj, n.Name):
                binding = self.checked.bindings.get(id(node.obj))
                if binding is not None and binding.kind == "root":
                    self.attributes.add((binding.name, node.name))
            elif isinstance(node, n.Name):
                binding = self.checked.bindings.get(id(node))
                if binding is None:
                    return False  # unresolved: the checker did not see this tree
                if binding.kind == "let":
                    if binding.let is None:
                        return False
                    if id(binding.let) not in self._lets:
                        self._lets.add(id(binding.let))
                        stack.append(binding.let.expr)
            stack.extend(_children(node))
        return True


def _children(node: Any) -> Iterator[Any]:
    for item in dataclasses.fields(node):
        if item.name.endswith("span") or item.name.endswith("spans"):
            continue
        value = getattr(node, item.name)
        yield from _expressions(value)


def _expressions(value: Any) -> Iterator[Any]:
    if isinstance(value, n.Expr):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _expressions(item)
