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

from dataclasses import dataclass
from typing import Any

from policyengine.lang import nodes as n
from policyengine.lang.checker import CheckResult
from policyengine.lang.schema import Function
from policyengine.lang.values import Value


@dataclass(frozen=True)
class RuleReads:
    """``functions`` called (each once, in first-seen order); ``attributes`` as (root, name)
    pairs such as ``("pod", "name")`` for every attribute read directly off a root.

    ``entries`` holds (root, name, key) for reads of one constant key of a root's attribute
    (``pod.requests["nvidia.com/gpu"]``) where the rule reads nothing else of that attribute;
    such an attribute is not in ``attributes``.

    A root used whole is in ``root_args`` as (function, root) when it is passed straight to a
    domain function (``resources_fit(pod, node)``), and in ``bare_roots`` when it is used any
    other way (compared, put in a list, passed to a builtin): then what the rule reads of it
    cannot be told from its attributes.
    """

    functions: tuple[Function, ...]
    attributes: frozenset[tuple[str, str]]
    root_args: tuple[tuple[Function, str], ...] = ()
    bare_roots: frozenset[str] = frozenset()
    entries: frozenset[tuple[str, str, Value]] = frozenset()
    # Every chain of attributes read off a root, longest first-seen: ``node.gpu.product`` is
    # ("node", "gpu", "product"); ``node.allocatable["cpu"]`` is ("node", "allocatable").
    paths: frozenset[tuple[str, ...]] = frozenset()
    # The lets named in ``rule_reads``' ``opaque`` that the rule refers to (first-seen order):
    # what they read is left out of the fields above.
    lets: tuple[n.Let, ...] = ()
    # The lets the walk followed into (first-seen order): with no ``opaque``, every let the
    # rule's evaluation can reach.
    followed: tuple[n.Let, ...] = ()
    # For each function declaring ``narrowed_key`` (by id): the literals its calls pass at
    # that argument, or None when some call passes anything else.
    literals: tuple[tuple[int, frozenset[Value] | None], ...] = ()


def rule_reads(
    source: n.Filter | n.Score | None,
    checked: CheckResult | None,
    opaque: frozenset[int] = frozenset(),
) -> RuleReads | None:
    """What ``source`` (guard, body and reason) reads; None when it cannot be told (a rule
    built by hand, or one the checker has not seen). The lets whose ids are in ``opaque`` are
    not followed: they are listed in ``lets`` instead (a caller keying results by such a
    let's value need not know what it reads)."""
    if source is None or checked is None:
        return None
    walker = _Walker(checked, opaque)
    for part in (source.guard, source.body, getattr(source, "reason", None)):
        if part is not None and not walker.walk(part):
            return None
    return walker.reads()


def expression_reads(expr: n.Expr, checked: CheckResult) -> RuleReads | None:
    """What one expression reads (following its lets), as ``rule_reads``."""
    walker = _Walker(checked)
    return walker.reads() if walker.walk(expr) else None


class _Walker:
    def __init__(self, checked: CheckResult, opaque: frozenset[int] = frozenset()):
        self.checked = checked
        self.opaque = opaque
        self.functions: dict[int, Function] = {}
        self.attributes: set[tuple[str, str]] = set()
        self.root_args: dict[tuple[int, str], tuple[Function, str]] = {}
        self.bare_roots: set[str] = set()
        self.entries: set[tuple[str, str, Value]] = set()
        self.paths: set[tuple[str, ...]] = set()
        self.followed: dict[int, n.Let] = {}  # the lets walked into
        self.literals: dict[int, frozenset[Value] | None] = {}
        self.skipped: dict[int, n.Let] = {}  # the opaque lets referred to
        self._inner: set[int] = set()  # attributes inside a longer chain already recorded
        self._keyed: set[int] = set()  # attributes read only through a constant key
        # Names of roots already accounted for by their parent (an attribute read or a
        # domain call's argument).
        self._seen_whole: set[int] = set()

    def reads(self) -> RuleReads:
        whole = self.attributes
        entries = {e for e in self.entries if (e[0], e[1]) not in whole}
        return RuleReads(
            tuple(self.functions.values()),
            frozenset(whole),
            tuple(self.root_args.values()),
            frozenset(self.bare_roots),
            frozenset(entries),
            frozenset(self.paths),
            tuple(self.skipped.values()),
            tuple(self.followed.values()),
            tuple(self.literals.items()),
        )

    def walk(self, root: Any) -> bool:
        stack = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, n.Attribute) and id(node) not in self._inner:
                self._path(node)
            if isinstance(node, n.Call):
                function = self.checked.calls.get(id(node))
                if function is not None:
                    self.functions.setdefault(id(function), function)
                    if function.narrowed_key is not None:
                        self._literal(function, node)
                    for arg in node.args:
                        root = self._root_name(arg)
                        if root is not None:
                            self._seen_whole.add(id(arg))
                            self.root_args.setdefault((id(function), root), (function, root))
            elif (
                isinstance(node, n.Index)
                and isinstance(node.index, n.Literal)
                and isinstance(node.obj, n.Attribute)
                and self._root_name(node.obj.obj) is not None
            ):
                root = self._root_name(node.obj.obj)
                self._keyed.add(id(node.obj))
                self.entries.add((root, node.obj.name, node.index.value))
            elif isinstance(node, n.Attribute) and isinstance(node.obj, n.Name):
                root = self._root_name(node.obj)
                if root is not None:
                    self._seen_whole.add(id(node.obj))
                    if id(node) not in self._keyed:
                        self.attributes.add((root, node.name))
            elif isinstance(node, n.Name):
                binding = self.checked.bindings.get(id(node))
                if binding is None:
                    return False  # unresolved: the checker did not see this tree
                if binding.kind == "root" and id(node) not in self._seen_whole:
                    self.bare_roots.add(binding.name)
                if binding.kind == "let":
                    let = binding.let
                    if let is None:
                        return False
                    if id(let) in self.opaque:
                        self.skipped.setdefault(id(let), let)
                    elif id(let) not in self.followed:
                        self.followed[id(let)] = let
                        stack.append(let.expr)
            stack.extend(n.children(node))
        return True

    def _literal(self, function: Function, call: n.Call) -> None:
        """Note the literal ``call`` passes where ``function`` narrows its key (None from
        the first call passing anything else on)."""
        assert function.narrowed_key is not None
        position = function.narrowed_key[0]
        key = id(function)
        if key in self.literals and self.literals[key] is None:
            return
        arg = call.args[position] if position < len(call.args) else None
        if not isinstance(arg, n.Literal):
            self.literals[key] = None
            return
        self.literals[key] = (self.literals.get(key) or frozenset()) | {arg.value}

    def _path(self, node: n.Attribute) -> None:
        """Record the chain of attributes ``node`` ends (parents are walked before their
        children, so the outermost attribute of a chain is seen first)."""
        names = [node.name]
        inner: Any = node.obj
        while isinstance(inner, n.Attribute):
            self._inner.add(id(inner))
            names.append(inner.name)
            inner = inner.obj
        root = self._root_name(inner)
        if root is not None:
            self.paths.add((root, *reversed(names)))

    def _root_name(self, expr: Any) -> str | None:
        if not isinstance(expr, n.Name):
            return None
        binding = self.checked.bindings.get(id(expr))
        return binding.name if binding is not None and binding.kind == "root" else None
