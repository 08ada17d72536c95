"""Static types of the language: what the checker proves about every expression.

Types are small frozen values. ``Nullable(T)`` marks what may be missing (a map lookup, an
optional attribute); the checker refuses to do arithmetic or attribute access on it until
``??`` gives a default, which is how "a missing label is never a crash" is enforced before a
policy runs. ``DYN`` is the escape hatch for declarations that cannot say more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from policyengine.lang.values import Value


class Type:
    """Base of all types."""

    def __str__(self) -> str:  # pragma: no cover - every subclass overrides
        return type(self).__name__


@dataclass(frozen=True)
class Prim(Type):
    name: str

    def __str__(self) -> str:
        return self.name


BOOL = Prim("bool")
INT = Prim("int")
FLOAT = Prim("float")
QUANTITY = Prim("quantity")
STRING = Prim("string")
NULL = Prim("null")
DYN = Prim("dyn")
NUMERIC = frozenset({INT, FLOAT, QUANTITY})

# A collection whose declaration gives no bound is assumed to hold at most this many items
# when lint computes a rule's static cost bound.
DEFAULT_COLLECTION_BOUND = 64


@dataclass(frozen=True)
class ListType(Type):
    element: Type
    bound: int = DEFAULT_COLLECTION_BOUND

    def __str__(self) -> str:
        return f"list<{self.element}>"


@dataclass(frozen=True)
class SetType(Type):
    element: Type
    bound: int = DEFAULT_COLLECTION_BOUND

    def __str__(self) -> str:
        return f"set<{self.element}>"


@dataclass(frozen=True)
class MapType(Type):
    """``default`` makes the map total: a missing key reads as that value instead of null.

    Resource maps are total with a default of 0 (``node.free["nvidia.com/gpu"]`` is 0 on a
    node without GPUs), so arithmetic on them needs no ``??``.
    """

    key: Type
    value: Type
    bound: int = DEFAULT_COLLECTION_BOUND
    default: object = None

    def __str__(self) -> str:
        return f"map<{self.key}, {self.value}>"


@dataclass(frozen=True)
class Nullable(Type):
    inner: Type

    def __str__(self) -> str:
        return f"{self.inner}?"


@dataclass(frozen=True, eq=False)
class Field:
    """One attribute of a record: its type, how to read it from the runtime object, its docs.

    ``getter`` receives the runtime object the record describes and returns the value (or
    None when the field is nullable and missing). ``cost`` is its static evaluation cost.
    """

    name: str
    type: Type
    getter: Callable[[Value], Value]
    doc: str = ""
    cost: int = 1


@dataclass(frozen=True, eq=False)
class RecordType(Type):
    """A named structure declared by the schema (``Pod``, ``Node``, ``Taint`` …)."""

    name: str
    fields: Mapping[str, Field] = field(default_factory=dict)
    doc: str = ""

    def __str__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RecordType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("record", self.name))


def non_null(t: Type) -> Type:
    return t.inner if isinstance(t, Nullable) else t


def nullable(t: Type) -> Type:
    return t if isinstance(t, Nullable) or t in (NULL, DYN) else Nullable(t)


def is_numeric(t: Type) -> bool:
    return t in NUMERIC or t == DYN


def bound_of(t: Type) -> int:
    t = non_null(t)
    return getattr(t, "bound", DEFAULT_COLLECTION_BOUND)


def assignable(source: Type, target: Type) -> bool:
    """Can a value of ``source`` stand where ``target`` is expected?"""
    if source == target or DYN in (source, target):
        return True
    if isinstance(target, Nullable):
        return source == NULL or assignable(non_null(source), target.inner)
    if isinstance(source, Nullable):
        return False
    if source == INT and target in (FLOAT, QUANTITY):
        return True
    if isinstance(source, ListType) and isinstance(target, ListType):
        return assignable(source.element, target.element)
    if isinstance(source, SetType) and isinstance(target, SetType):
        return assignable(source.element, target.element)
    if isinstance(source, MapType) and isinstance(target, MapType):
        return assignable(source.key, target.key) and assignable(source.value, target.value)
    return False


def join(a: Type, b: Type) -> Type | None:
    """The least type both fit in (for ``if``/``??`` branches and list literals), or None."""
    if a == b:
        return a
    if DYN in (a, b):
        return DYN
    if a == NULL:
        return nullable(b)
    if b == NULL:
        return nullable(a)
    if isinstance(a, Nullable) or isinstance(b, Nullable):
        inner = join(non_null(a), non_null(b))
        return nullable(inner) if inner is not None else None
    if {a, b} <= NUMERIC:
        if QUANTITY in (a, b) and FLOAT not in (a, b):
            return QUANTITY
        if INT in (a, b) and FLOAT in (a, b):
            return FLOAT
        return None
    for kind in (ListType, SetType):
        if isinstance(a, kind) and isinstance(b, kind):
            element = join(a.element, b.element)
            return kind(element, max(a.bound, b.bound)) if element is not None else None
    if isinstance(a, MapType) and isinstance(b, MapType):
        key, value = join(a.key, b.key), join(a.value, b.value)
        if key is not None and value is not None:
            return MapType(key, value, max(a.bound, b.bound))
    return None
