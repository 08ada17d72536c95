"""Exact Kubernetes quantities: parsing, the errors people see, and a short exact spelling."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policyengine.quantity import QuantityError, format_quantity, parse_quantity

PARSE = [
    ("0", Fraction(0)),
    ("100m", Fraction(1, 10)),
    ("1500m", Fraction(3, 2)),
    ("0.5", Fraction(1, 2)),
    (".5", Fraction(1, 2)),
    ("1.", Fraction(1)),
    ("+2", Fraction(2)),
    ("-2", Fraction(-2)),
    ("1Ki", Fraction(1024)),
    ("16Gi", Fraction(16 * 1024**3)),
    ("0.5Gi", Fraction(512 * 1024**2)),
    ("1Ei", Fraction(1024**6)),
    ("1k", Fraction(1000)),
    ("1M", Fraction(10**6)),
    ("7E", Fraction(7 * 10**18)),
    ("3n", Fraction(3, 10**9)),
    ("250u", Fraction(1, 4000)),
    ("2e3", Fraction(2000)),
    ("2E3", Fraction(2000)),
    ("1.5e-3", Fraction(3, 2000)),
    ("81559Mi", Fraction(81559 * 1024**2)),
    (" 4 ", Fraction(4)),
    (3, Fraction(3)),  # YAML may hand over numbers
    (0.25, Fraction(1, 4)),
]


@pytest.mark.parametrize(("text", "value"), PARSE, ids=[str(t) for t, _ in PARSE])
def test_parse(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


def test_sums_are_exact() -> None:
    assert parse_quantity("100m") + parse_quantity("200m") == parse_quantity("300m")


BAD = [
    (
        "abc",
        "quantity 'abc' is not valid: expected a number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)",
    ),
    (
        "1KiB",
        "quantity '1KiB' is not valid: expected a number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)",
    ),
    (
        "",
        "quantity '' is not valid: expected a number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (e3)",
    ),
    (True, "quantity True: a boolean is not a quantity"),
    (None, "quantity None: expected a string such as '500m' or '16Gi'"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[repr(t) for t, _ in BAD])
def test_errors(text: object, message: str) -> None:
    with pytest.raises(QuantityError) as error:
        parse_quantity(text)  # type: ignore[arg-type]
    assert str(error.value) == message


FORMAT = [
    (Fraction(0), "0"),
    (Fraction(1, 10), "100m"),
    (Fraction(3, 2), "1500m"),
    (Fraction(16 * 1024**3), "16Gi"),
    (Fraction(2000), "2k"),
    (Fraction(1024), "1Ki"),
    (Fraction(1000), "1k"),
    (Fraction(7), "7"),
    (Fraction(-3, 1000), "-3m"),
    (Fraction(1, 4000), "250u"),
]


@pytest.mark.parametrize(("value", "text"), FORMAT, ids=[t for _, t in FORMAT])
def test_format(value: Fraction, text: str) -> None:
    assert format_quantity(value) == text


@given(st.integers(min_value=-(10**20), max_value=10**20), st.sampled_from([1, 1000, 10**6, 10**9]))
def test_format_then_parse_is_exact(numerator: int, denominator: int) -> None:
    value = Fraction(numerator, denominator)
    assert parse_quantity(format_quantity(value)) == value
