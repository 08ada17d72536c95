"""Every parametrize table whose rows pytest cannot name readably names them itself.

pytest names a row by its values only when they are strings, numbers, booleans or ``None``;
any other value (a dict, a tuple, an object) becomes ``argname<index>``, so a failure reads
``test_x[case3]``, and a multi-line policy or a string longer than a line becomes an id no one
reads. Such tables pass ``ids=`` or give each row ``pytest.param(..., id=...)``.

The check reads the source: a table is a literal list or tuple in the decorator, or a module
constant bound to one, or a comprehension of ``pytest.param(..., id=...)``; a table it cannot
see (any other comprehension, a call, an imported name) counts as unreadable, so it needs ids
too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
LONGEST_READABLE = 80


def _is_parametrize(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Attribute) and node.func.attr == "parametrize"


def _is_param(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "param"
    )


def _readable(value: ast.expr, constants: dict[str, ast.expr]) -> bool:
    """Whether pytest's own id for ``value`` reads well: a short one-line string or a number,
    boolean or ``None`` (a module constant bound to one counts as one)."""
    if isinstance(value, ast.Name) and value.id in constants:
        value = constants[value.id]
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        value = value.operand
    if not isinstance(value, ast.Constant):
        return False
    if isinstance(value.value, str):
        return len(value.value) <= LONGEST_READABLE and "\n" not in value.value
    return value.value is None or isinstance(value.value, bool | int | float)


def _row_readable(row: ast.expr, several: bool, constants: dict[str, ast.expr]) -> bool:
    if _is_param(row):
        assert isinstance(row, ast.Call)
        if any(k.arg == "id" for k in row.keywords):
            return True
        values = row.args
    elif several:
        if not isinstance(row, ast.Tuple | ast.List):
            return False
        values = row.elts
    else:
        values = [row]
    return all(_readable(v, constants) for v in values)


def _argument(call: ast.Call, index: int, name: str) -> ast.expr | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return call.args[index] if len(call.args) > index else None


def _several(names: ast.expr | None) -> bool:
    """Whether each row holds several values (a tuple), not one."""
    if isinstance(names, ast.Constant) and isinstance(names.value, str):
        return "," in names.value
    if isinstance(names, ast.Tuple | ast.List):
        return len(names.elts) > 1
    return True


def unnamed_tables(source: str) -> list[int]:
    """The lines of the parametrize tables in ``source`` that need ids and have none."""
    tree = ast.parse(source)
    constants: dict[str, ast.expr] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            constants[target.id] = value
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not _is_parametrize(node):
            continue
        if any(k.arg == "ids" for k in node.keywords):
            continue
        several = _several(_argument(node, 0, "argnames"))
        table = _argument(node, 1, "argvalues")
        if isinstance(table, ast.Name) and table.id in constants:
            table = constants[table.id]
        if isinstance(table, ast.ListComp | ast.GeneratorExp):
            readable = _is_param(table.elt) and _row_readable(table.elt, several, {})
        else:
            readable = isinstance(table, ast.List | ast.Tuple) and all(
                _row_readable(row, several, constants) for row in table.elts
            )
        if not readable:
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize(
    ("source", "unnamed"),
    [
        pytest.param('@p.parametrize("x", ["a", "b", 1, -2, 0.5, None, True])', [], id="scalars"),
        pytest.param('@p.parametrize("x", [{"a": 1}])', [1], id="dict"),
        pytest.param('@p.parametrize("x", [{"a": 1}], ids=["a"])', [], id="dict-named"),
        pytest.param('@p.parametrize("x", ["""a\nb"""])', [1], id="multi-line"),
        pytest.param('@p.parametrize("x", ["' + "x" * 81 + '"])', [1], id="long-string"),
        pytest.param('@p.parametrize("x,y", [("a", 1), ("b", 2)])', [], id="scalar-rows"),
        pytest.param('@p.parametrize(("x", "y"), [("a", (1,))])', [1], id="tuple-value"),
        pytest.param('@p.parametrize(("x",), [("a", "b")])', [1], id="one-name-tuple-value"),
        pytest.param('@p.parametrize("x", [p.param({}, id="e")])', [], id="param-named"),
        pytest.param('@p.parametrize("x", [p.param({})])', [1], id="param-unnamed"),
        pytest.param('T = [{"a": 1}]\n@p.parametrize("x", T)', [2], id="constant-table"),
        pytest.param('@p.parametrize("x", [c for c in "ab"])', [1], id="unseen-table"),
        pytest.param('@p.parametrize("x", [p.param(c, id=c) for c in "ab"])', [], id="param-rows"),
    ],
)
def test_unnamed_tables_are_found(source: str, unnamed: list[int]) -> None:
    assert unnamed_tables(source + "\ndef f(x, y=None): pass\n") == unnamed


def test_every_table_pytest_cannot_name_readably_has_ids() -> None:
    missing = {
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in unnamed_tables(path.read_text())
    }
    assert sorted(missing) == []
