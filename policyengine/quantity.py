"""Exact Kubernetes resource quantities (``100m``, ``16Gi``, ``2e3``) as ``Fraction``.

Both the language (quantity literals) and the model (resource lists) need the same notation,
and neither may import the other, so it lives at the bottom of the layering beside
``diagnostics``. Values are ``fractions.Fraction``: ``100m`` is exactly 1/10, never 0.1000001.
"""

from __future__ import annotations

import re
from fractions import Fraction

BINARY_SUFFIXES: dict[str, int] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
}
DECIMAL_SUFFIXES: dict[str, Fraction] = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}

# The grammar of resource.Quantity: a signed decimal number, then a binary or decimal SI
# suffix or a decimal exponent.
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity exactly; ints and floats (as YAML may deliver them) are accepted too."""
    if isinstance(text, bool):
        raise QuantityError(f"quantity {text!r}: a boolean is not a quantity")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(repr(text))
    if not isinstance(text, str):
        raise QuantityError(f"quantity {text!r}: expected a string such as '500m' or '16Gi'")
    match = _QUANTITY.match(text.strip())
    if not match:
        raise QuantityError(
            f"quantity {text!r} is not valid: expected a number with an optional suffix "
            "(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)"
        )
    value = Fraction(match["number"])
    if match["exponent"] is not None:
        return value * Fraction(10) ** int(match["exponent"])
    suffix = match["suffix"] or ""
    if suffix in BINARY_SUFFIXES:
        return value * BINARY_SUFFIXES[suffix]
    return value * DECIMAL_SUFFIXES[suffix]


def is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def format_quantity(value: Fraction | int) -> str:
    """A short exact spelling: binary suffixes for multiples of 1Ki, else decimal SI, else milli or less."""
    value = Fraction(value)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    if magnitude.denominator == 1:
        whole = magnitude.numerator
        candidates = [str(whole)]
        for suffix, factor in BINARY_SUFFIXES.items():
            if whole % factor == 0:
                candidates.append(f"{whole // factor}{suffix}")
        for suffix in ("k", "M", "G", "T", "P", "E"):
            factor = DECIMAL_SUFFIXES[suffix].numerator
            if whole % factor == 0:
                candidates.append(f"{whole // factor}{suffix}")
        return sign + min(candidates, key=len)
    for suffix in ("m", "u", "n"):
        scaled = magnitude / DECIMAL_SUFFIXES[suffix]
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    # Finer than a nanounit: Kubernetes itself would round up; show the exact decimal.
    return f"{sign}{float(magnitude)!r}"
