"""A made-up schema for language tests: the language must work with no Kubernetes in sight.

Runtime objects are plain dicts; every field reads its key. ``widget`` is per-evaluation (like
a node), ``order`` stays fixed (like a pod).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from policyengine.lang.schema import Function, Param, Root, Schema
from policyengine.lang.types import (
    BOOL,
    DYN,
    FLOAT,
    INT,
    QUANTITY,
    STRING,
    Field,
    ListType,
    MapType,
    Nullable,
    RecordType,
)


def _key(name: str):
    return lambda obj: obj.get(name)


def record(name: str, /, **fields: Any) -> RecordType:
    return RecordType(
        name, {k: Field(k, t, _key(k), doc=f"the {k} of a {name}") for k, t in fields.items()}
    )


PART = record("Part", name=STRING, size=QUANTITY, spare=BOOL)
WIDGET = record(
    "Widget",
    name=STRING,
    labels=MapType(STRING, STRING, bound=32),
    capacity=MapType(STRING, QUANTITY, bound=16),
    parts=ListType(PART, bound=8),
    weight=FLOAT,
    count=INT,
    colour=Nullable(STRING),
)
ORDER = record(
    "Order",
    name=STRING,
    labels=MapType(STRING, STRING, bound=32),
    wants=MapType(STRING, QUANTITY, bound=16),
    priority=INT,
    tags=ListType(STRING, bound=16),
)


def _fits(order: dict, widget: dict) -> bool:
    return all(widget["capacity"].get(k, 0) >= v for k, v in order["wants"].items())


def _shortfall(order: dict, widget: dict) -> list[str]:
    return [f"short of {k}" for k, v in order["wants"].items() if widget["capacity"].get(k, 0) < v]


def _score_of(context: dict, name: str) -> int:
    return context.get("scores", {}).get(name, 0)


SCHEMA = Schema(
    roots={
        "order": Root("order", ORDER, "the order being placed", varies_per_node=False),
        "widget": Root("widget", WIDGET, "the widget being considered"),
    },
    functions={
        "fits": Function(
            "fits",
            (Param("order", ORDER), Param("widget", WIDGET)),
            BOOL,
            _fits,
            "whether the widget's capacity covers the order",
            cost=5,
        ),
        "shortfall": Function(
            "shortfall",
            (Param("order", ORDER), Param("widget", WIDGET)),
            ListType(STRING, bound=16),
            _shortfall,
            "what the widget lacks",
        ),
        "score_of": Function(
            "score_of",
            (Param("name", STRING),),
            INT,
            _score_of,
            "a score from the context",
            needs_context=True,
            varies_per_node=True,
        ),
    },
    normalizers=frozenset({"none", "max", "reverse", "minmax"}),
    compressible_resources=frozenset({"cpu"}),
    known_resources=frozenset({"cpu", "memory", "gpu"}),
)


# --- probes for the planner's and the compiler's tests -------------------------------------
# ``explode()`` raises, to prove that short-circuiting operators never evaluate it;
# ``probe(x)`` returns x and records it in ``context["probe"]``, to count evaluations;
# ``broken()`` returns null although it declares a string.


def _explode() -> Any:
    raise RuntimeError("boom")


def _probe(context: dict, value: Any) -> Any:
    context.setdefault("probe", []).append(value)
    return value


PROBING_SCHEMA = Schema(
    roots=SCHEMA.roots,
    functions={
        **SCHEMA.functions,
        "explode": Function("explode", (), DYN, _explode, "raises RuntimeError"),
        "probe": Function(
            "probe",
            (Param("value", DYN),),
            DYN,
            _probe,
            "returns its argument and records it",
            needs_context=True,
        ),
        "broken": Function("broken", (), STRING, lambda: None, "returns null, declared string"),
    },
    normalizers=SCHEMA.normalizers,
    compressible_resources=SCHEMA.compressible_resources,
    known_resources=SCHEMA.known_resources,
)


# --- a total map, for the reference and equivalence tests -----------------------------------
# ``stock.free`` declares a default, as resource maps do: a missing key reads 0, not null.
# A separate schema, so that the field and root lists other tests print stay as they are.

STOCK = record("Stock", free=MapType(STRING, QUANTITY, bound=16, default=Fraction(0)))

TOTAL_SCHEMA = Schema(
    roots={**SCHEMA.roots, "stock": Root("stock", STOCK, "what is left", varies_per_node=True)},
    functions=SCHEMA.functions,
    normalizers=SCHEMA.normalizers,
    compressible_resources=SCHEMA.compressible_resources,
    known_resources=SCHEMA.known_resources,
)
