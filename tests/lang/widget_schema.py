"""Runtime objects of ``fake_schema``'s roots, for the language tests that evaluate: an
``order`` (fixed per evaluation, like a pod), a ``widget`` (per evaluation, like a node) and a
widget's ``part``, each a plain dict built from defaults that a test overrides field by field.

There are two sets of defaults. ``order`` and ``widget`` are bare: no labels, no parts, one cpu
wanted, two held, four counted; the compiler, idle-rule and runtime-error tests write their
policies against them. ``sample_order`` and ``sample_widget`` are populated (labels, tags,
three parts, a memory capacity): the planner's value tables are written against them, and
``env_for`` evaluates in them unless told otherwise.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from policyengine.lang.runtime import Env
from policyengine.quantity import parse_quantity


def part(name: str, size: str = "1", spare: bool = False) -> dict[str, Any]:
    return {"name": name, "size": parse_quantity(size), "spare": spare}


def order(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "o1",
        "labels": {},
        "wants": {"cpu": Fraction(1)},
        "priority": 1,
        "tags": [],
    }
    return {**base, **fields}


def widget(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "w1",
        "labels": {},
        "capacity": {"cpu": Fraction(2)},
        "parts": [],
        "weight": 1.0,
        "count": 4,
        "colour": None,
    }
    return {**base, **fields}


def sample_order(**fields: Any) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "name": "o1",
        "labels": {"team": "ml"},
        "wants": {"cpu": Fraction(2)},
        "priority": 5,
        "tags": ["fast", "gpu"],
    }
    return order(**{**sample, **fields})


def sample_widget(**fields: Any) -> dict[str, Any]:
    sample: dict[str, Any] = {
        "name": "w-7",
        "labels": {"zone": "eu-1", "rack": "r2"},
        "capacity": {"cpu": Fraction(4), "memory": parse_quantity("16Gi")},
        "parts": [part("a", "500m", True), part("b", "2"), part("c", "250m", True)],
        "weight": 2.5,
        "count": 3,
        "colour": None,
    }
    return widget(**{**sample, **fields})


def env_for(context: Any = None, **roots: Any) -> Env:
    """An env over the sample objects (``roots`` replace them by name) and ``context``."""
    roots.setdefault("order", sample_order())
    roots.setdefault("widget", sample_widget())
    return Env(roots, context if context is not None else {})
