"""What a value of the language is at run time, named once so that signatures can say so.

A root an ``Env`` holds, what a planned closure returns, an argument a domain function
receives, a field a record's getter reads: all are language values, and their signatures say
``Value`` where they would otherwise say a bare ``Any``.

This module imports nothing of the language: ``types`` and ``schema`` (whose field getters
and domain functions take and give values) sit below ``runtime``, so the name lives beneath
all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

Value: TypeAlias = Any
"""One runtime value of the language. Each of its types is one or more Python types:

========  ==============================================================================
null      ``None``
bool      ``bool``
int       ``int``
float     ``float``
quantity  ``fractions.Fraction`` (``16Gi``, ``500m``: exact, parsed by ``quantity``)
string    ``str``
list      ``list`` (a ``tuple`` reads as one too)
set       ``frozenset`` (a ``set`` reads as one too)
map       ``dict``, or any other ``Mapping`` a getter or a domain function returns
record    any other object: what the schema's field getters read (a pod's or a node's
          view, a taint, a toleration...)
========  ==============================================================================

``runtime.type_name`` and ``runtime.format_value`` name and print exactly these.

Records make the set open-ended: honestly written, the union is ``object``. It is ``Any``
instead because the language's checker, not mypy, tells what each value is: a closure is
planned for the types the checker proved, and one that meets a value it cannot use raises
``EvalError``. Typed ``object``, every operation a closure does on a value would need a cast
or an ``isinstance`` check in the scheduler's hot path to tell mypy what the checker already
knows. So the alias says "a language value" where a bare ``Any`` said nothing; what stays a
bare ``Any`` means something else (a lark token, a JSON document, the engine's evaluation
context, a plugin's state).
"""

Column: TypeAlias = Sequence[Value]
"""The values of one expression for the nodes of a batch, in the batch's order: a ``list``,
or a column the engine shares between cycles, or ``vector.Numbers`` (an int64 array read as
the Python values it holds)."""
