"""Columnar forms of expressions (``lang.vector``) give every node its single answer.

Each case is one rule over the fake schema's widgets; ``filter_many``/``score_many`` over a
batch of widgets must equal the rule's single evaluator on each widget's env, and, for the
cases marked columnar, must get there without building a per-node env (the columnar form ran
and did not fall back). The short circuits are the point of several cases: a division that
the guard, ``and``, ``or``, ``??`` or ``if`` keeps away from a zero must not be evaluated
there (it would raise and send the whole batch node by node).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from policyengine.diagnostics import Span
from policyengine.lang import evaluators, runtime, vector
from policyengine.lang.compiler import compile_texts
from policyengine.lang.evaluators import NodeBatch
from policyengine.lang.planner import _ARITHMETIC
from policyengine.lang.runtime import format_value
from tests.lang.fake_schema import TOTAL_SCHEMA as SCHEMA

# Widgets alike share one parts list, as a builtin hands nodes alike one shared value; the
# others hold equal lists that are not the same object.
SHARED_PARTS = [
    {"name": "p", "size": Fraction(2), "spare": True},
    {"name": "q", "size": Fraction(0), "spare": False},
]
WIDGETS: list[dict[str, Any]] = [
    {
        "name": name,
        "labels": labels,
        "capacity": capacity,
        "parts": parts,
        "weight": weight,
        "count": count,
        "colour": colour,
    }
    for name, labels, capacity, weight, count, colour, parts in [
        ("a", {"k": "abc"}, {"cpu": Fraction(2)}, 0.5, 0, None, SHARED_PARTS),
        ("x,y", {}, {}, 2.5, 3, "red", []),
        ("abc", {"k": "A1"}, {"cpu": Fraction(1, 2)}, -1.0, -2, "", SHARED_PARTS),
        ("", {"k": ""}, {"mem": Fraction(8)}, 3.0, 10, "red", [dict(SHARED_PARTS[0])]),
        ("fast", {}, {"cpu": Fraction(0)}, 0.0, 1, None, [dict(p) for p in SHARED_PARTS]),
    ]
]
ORDER = {"name": "o", "labels": {"k": "abc"}, "wants": {}, "priority": 5, "tags": ["a"]}

# (rule, whether the batch must be evaluated without a per-node env)
CASES = [
    ('filter f { (widget.colour ?? "none") == "red" }', True),
    ("filter f when widget.count > 0 { 10 / widget.count > 2 }", True),
    ("filter f { widget.count == 0 or 10 / widget.count > 2 }", True),
    ("filter f { widget.count != 0 and 10 / widget.count > 2 }", True),
    ("filter f { not (widget.count > 1) }", True),
    ('filter f { widget.name in ["a", "x,y", "fast"] }', True),
    ('filter f { widget.name not in ["a"] and widget.name.startswith("a") }', True),
    ('filter f { (widget.labels["k"] ?? "").matches("^[a-z]+$") }', True),
    ('filter f { widget.labels["k"] ?? order.name == "o" }', True),
    ("filter f { widget.count > order.priority }", True),
    ("filter f when order.priority > 0 { widget.weight >= 0.5 }", True),
    # A reason reading the node: formatted for the rejected nodes as one column.
    ('filter f { widget.count > 0 } reason "{widget.name} has {widget.count}"', True),
    ('filter f when order.priority > 0 { widget.count > 1 } reason "{widget.capacity}"', True),
    ("score s { if widget.count > 0 then 100 / widget.count else widget.weight }", True),
    ("score s when widget.count != 0 { 30 / widget.count }", True),
    ('score s { widget.capacity["cpu"] ?? 1 }', True),
    ("score s { -widget.count + order.priority }", True),
    ("score s { len(widget.labels) * 2 }", True),
    ("score s { if order.priority > 1 then widget.count else widget.weight }", True),
    # Loops over a per-node collection whose element and condition read only the item and
    # the pod: once per distinct collection (widgets alike share theirs).
    ("filter f { [p.name for p in widget.parts if not p.spare] }", True),
    ('filter f { [p.name + "!" for p in widget.parts if p.name in order.tags] }', True),
    ("filter f { [k for k, v in widget.labels if v != order.name] }", True),
    ("filter f { all(p.size > 0 for p in widget.parts) }", True),
    ("filter f { any(p.spare for p in widget.parts) or order.priority > 9 }", True),
    ("score s { count(p.spare for p in widget.parts) + order.priority }", True),
    ("score s { len([p for p in widget.parts if p.size > 1]) }", True),
    # ... and node by node when the element or condition reads the node otherwise.
    ("filter f { [p.name for p in widget.parts if widget.count > 0] }", False),
    ("score s { count(p.spare and widget.count > 0 for p in widget.parts) }", False),
    ("score s { count(any(q.spare for q in widget.parts) for p in widget.parts) }", False),
    # Errors on some nodes: the batch falls back and reports them node by node.
    ("filter f { 10 / widget.count > 2 }", False),
    ("score s { 100 / widget.count }", False),
    ("score s { len(widget.labels) / widget.weight }", False),
]


def _rule(source: str) -> Any:
    text = f'policy "p" {{\n  {source}\n}}\n'
    result = compile_texts({"t.sched": text}, SCHEMA)
    assert result.program is not None, [d.message for d in result.diagnostics]
    return result.program, result.program.policies[0].rules[0]


@pytest.mark.parametrize(("source", "columnar"), CASES)
def test_the_batch_gives_each_node_its_single_answer(
    source: str, columnar: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, rule = _rule(source)
    pod_env = program.env(order=ORDER)
    want = [
        (rule.filter if rule.kind == "filter" else rule.score)(pod_env.derive(widget=w))
        for w in WIDGETS
    ]
    many = rule.filter_many if rule.kind == "filter" else rule.score_many
    assert many is not None
    envs: list[int] = []
    original = NodeBatch.env_at

    def counted(self: NodeBatch, position: int) -> Any:
        envs.append(position)
        return original(self, position)

    monkeypatch.setattr(NodeBatch, "env_at", counted)
    got = many(NodeBatch(pod_env, {"widget": WIDGETS}))
    assert got == want
    if columnar:
        assert envs == []
    else:
        assert envs  # fell back to the single evaluator, which reports the errors
    narrowed = many(NodeBatch(pod_env, {"widget": WIDGETS}).take([4, 0, 2]))
    assert narrowed == [want[4], want[0], want[2]]


# --- exact integer columns through numpy (``vector.Numbers``) ------------------------------
#
# An arithmetic or comparison form over columns of ints or whole Fractions computes in int64;
# every value it gives must be the one the operator gives node by node, of the same type, and
# floats to the bit (a Fraction quotient of 0 is +0.0, an int one may be -0.0). Where the
# operator raises on some node, the form must raise too (the rule then falls back).

BIG = 1 << 62
NUMBERS = st.one_of(
    st.integers(-20, 20),
    st.sampled_from([BIG, -BIG, 1 << 53, (1 << 53) + 1, 1 << 64, 3 << 60]),
    st.integers(-20, 20).map(Fraction),
    st.sampled_from([Fraction(BIG), Fraction(1 << 53), Fraction(1, 2), Fraction(-7, 3)]),
    st.sampled_from([0.0, -0.0, 1.5, float("inf"), True, False, None]),
)
# Columns mostly of one kind, as real columns are: all ints, or all whole Fractions.
COLUMNS = st.one_of(
    st.lists(st.integers(-(1 << 20), 1 << 20), min_size=1, max_size=6),
    st.lists(st.integers(-(1 << 20), 1 << 20).map(Fraction), min_size=1, max_size=6),
    st.lists(st.integers(-3, 3).map(Fraction), min_size=1, max_size=6),
    st.lists(NUMBERS, min_size=1, max_size=6),
)
SYMBOLS = ["+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!="]


def _operator(symbol: str) -> Any:
    if symbol in ("==", "!="):
        return operator.eq if symbol == "==" else operator.ne
    return _ARITHMETIC[symbol]


def _exactly(values: Sequence[Any]) -> list[tuple[str, str]]:
    # repr tells -0.0 from 0.0 and Fraction(2) from 2 and 2.0.
    return [(type(v).__name__, repr(v)) for v in values]


SPAN = Span("t.sched", 1, 1, 1, 2)


@contextmanager
def _numpy_always() -> Iterator[None]:
    """Columns of any length through numpy (short ones normally go value by value)."""
    short = vector._SHORT, evaluators._SHORT
    vector._SHORT = evaluators._SHORT = 0
    try:
        yield
    finally:
        vector._SHORT, evaluators._SHORT = short


class _Batch:
    env = None

    def __init__(self, size: int = 0):
        self.size = size


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(SYMBOLS),
    COLUMNS,
    st.one_of(COLUMNS, NUMBERS),
    st.booleans(),
)
@example("/", [Fraction(0), Fraction(3)], Fraction(-2), True)  # +0.0, not -0.0
@example("/", [0, 3], -2, True)  # int / int: -0.0
@example("/", [0, 3], [Fraction(-2)], True)
@example("/", [Fraction(4)], 2, True)  # a Fraction halved stays exact
@example("*", [1 << 40], 1 << 40, True)  # beyond int64: Python ints
@example("+", [BIG, 1], BIG, False)
def test_numeric_columns_give_the_operators_values(
    symbol: str, column: list[Any], other: Any, column_on_left: bool
) -> None:
    op = _operator(symbol)
    if isinstance(other, list):
        other = (other * len(column))[: len(column)]
        left, right = (column, other) if column_on_left else (other, column)
        form = vector.binary(
            vector.Side(lambda b: left, lambda e: None),
            vector.Side(lambda b: right, lambda e: None),
            op,
            symbol,
        )
        pairs = list(zip(left, right, strict=True))
    elif column_on_left:
        form = vector.binary(
            vector.Side(lambda b: column, lambda e: None),
            vector.Side(None, lambda e: other),
            op,
            symbol,
        )
        pairs = [(a, other) for a in column]
    else:
        form = vector.binary(
            vector.Side(None, lambda e: other),
            vector.Side(lambda b: column, lambda e: None),
            op,
            symbol,
        )
        pairs = [(other, b) for b in column]
    assert form is not None
    try:
        want = [op(a, b) for a, b in pairs]
    except Exception:
        with pytest.raises(Exception), _numpy_always():  # noqa: B017 (whatever it raised)
            form(_Batch())  # type: ignore[arg-type]
        return
    with _numpy_always():
        got = form(_Batch())  # type: ignore[arg-type]
    assert len(got) == len(want)
    assert _exactly(list(got)) == _exactly(want)


def test_whole_quantities_chain_through_numpy_without_per_node_values() -> None:
    # The bin-packing score's shape: (allocated + wanted) * 100 / allocatable, over whole
    # quantities, stays in int64 until the float quotient.
    allocated = [Fraction(n) for n in (0, 3, 8, 5)]
    allocatable = [Fraction(8)] * 4
    plus = vector.binary(
        vector.Side(lambda b: allocated, lambda e: None),
        vector.Side(None, lambda e: Fraction(2)),
        operator.add,
        "+",
    )
    assert plus is not None
    times = vector.binary(
        vector.Side(None, lambda e: 100), vector.Side(plus, lambda e: None), operator.mul, "*"
    )
    assert times is not None
    ratio = vector.binary(
        vector.Side(times, lambda e: None),
        vector.Side(lambda b: allocatable, lambda e: None),
        _ARITHMETIC["/"],
        "/",
    )
    assert ratio is not None
    with _numpy_always():
        summed = plus(_Batch())  # type: ignore[arg-type]
        got = ratio(_Batch())  # type: ignore[arg-type]
    assert isinstance(summed, vector.Numbers) and summed.kind == "quantity"
    assert isinstance(got, vector.Numbers) and got.kind == "float"
    assert _exactly(list(got)) == _exactly([25.0, 62.5, 125.0, 87.5])
    assert list(summed) == [Fraction(2), Fraction(5), Fraction(10), Fraction(7)]
    assert all(type(v) is Fraction for v in summed)


@given(st.lists(st.tuples(NUMBERS, st.text(max_size=3)), min_size=1, max_size=5), NUMBERS)
def test_a_reason_template_column_formats_each_node_as_the_closure(
    rows: list[tuple[Any, str]], fixed: Any
) -> None:
    numbers = [n for n, _ in rows]
    texts = [t for _, t in rows]
    form = vector.template(
        vector.Side(None, lambda e: "saw "),
        vector.Side(lambda b: numbers, lambda e: None),
        vector.Side(None, lambda e: fixed),
        vector.Side(lambda b: texts, lambda e: None),
    )
    want = [
        "".join(format_value(v) for v in ("saw ", n, fixed, t))
        for n, t in zip(numbers, texts, strict=True)
    ]
    assert form(_Batch(len(rows))) == want  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.lists(st.integers(0, 120), max_size=40),
        st.lists(st.integers(-(1 << 62), 1 << 62), max_size=8),
        st.lists(
            st.one_of(st.sampled_from([0.0, -0.0, 0.5, 1e300]), st.floats(allow_nan=False)),
            max_size=8,
        ),
    )
)
def test_numeric_score_columns_convert_as_each_value(values: list[Any]) -> None:
    # A score form's numpy column becomes one ScoreValue per node, each what the rule's
    # single path makes of that node's value (-0.0 stays -0.0).
    array = np.array(values, np.float64 if values and type(values[0]) is float else np.int64)
    got = evaluators._scores_of_array("r", SPAN, array)  # any length: the caller checks
    want = [evaluators._score_of("r", SPAN, v) for v in array.tolist()]
    assert got is not None
    assert [repr(v) for v in got] == [repr(v) for v in want]


def test_a_float_score_column_with_nan_takes_the_per_value_path() -> None:
    assert evaluators._scores_of_array("r", SPAN, np.array([1.0, float("nan")])) is None


def test_taking_the_same_rows_again_reuses_the_narrowed_batch() -> None:
    batch = NodeBatch(runtime.Env({}, None), {"widget": WIDGETS})
    first = batch.take([0, 2])
    assert batch.take([0, 2]) is first
    other = batch.take([2, 0])
    assert other is not first and other.column(runtime.ROOTS.slot("widget")) == [
        WIDGETS[2],
        WIDGETS[0],
    ]


def test_a_loop_runs_once_per_distinct_collection_object() -> None:
    # Nodes sharing one collection object get one loop between them; an equal collection
    # that is another object gets its own (identity, not equality: values need not hash).
    shared, equal = ["a", "b"], ["a", "b"]
    calls: list[list[str]] = []

    def over(env: Any, value: list[str]) -> int:
        calls.append(value)
        return len(value)

    form = vector.per_distinct(vector.root(runtime.ROOTS.slot("widget")), over)
    column = [shared, equal, shared, [], shared]
    batch = NodeBatch(runtime.Env({}), {"widget": column})
    assert form(batch) == [2, 2, 2, 0, 2]
    assert [id(value) for value in calls] == [id(shared), id(equal), id(column[3])]
