"""The rule evaluators the planner builds: a compiled rule as one callable per node or per
batch of nodes.

A runtime error never escapes a rule: the evaluators here catch it and turn it into a
``RuleError`` inside the verdict (``runtime``'s vocabulary), so one bad node or one buggy
domain function cannot take a scheduling cycle down. ``NodeBatch`` is one pod's evaluation over
many nodes; the batch evaluators read its columns where a rule allows it and fall back to one
environment per node where it does not. The reference evaluator (``lang.reference``) shares
none of this: it is the independent judge the fast path is tested against.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from itertools import compress
from operator import itemgetter
from typing import Any

import numpy as np

from policyengine.diagnostics import Span
from policyengine.lang.copied import Copied
from policyengine.lang.runtime import (
    NOT_SCORED,
    PASSED,
    ROOTS,
    Closure,
    Env,
    EvalError,
    FilterVerdict,
    RuleError,
    ScoreValue,
    format_float,
    format_value,
    type_name,
)
from policyengine.lang.values import Column, Value

# --- rule evaluators -----------------------------------------------------------------------

# Verdicts of more nodes than this travel as ``Copied`` when fewer are distinct.
_COPIED_FROM = 16


def _failure(rule: str, error: EvalError) -> RuleError:
    return RuleError(rule, error.span, error.message)


def _internal(span: Span, error: Exception) -> EvalError:
    # Only a planner bug lands here; the node still gets a verdict instead of a crash.
    return EvalError(span, f"internal error: {type(error).__name__}: {error}")


def filter_evaluator(
    rule: str,
    span: Span,
    guard: Closure | None,
    body: Closure,
    body_kind: str,
    reason: Closure | None,
    constant_reason: str | None,
) -> Callable[[Env], FilterVerdict]:
    """The ``filter(env)`` of one rule.

    ``body_kind`` is ``bool``, ``list`` (a list of reasons) or ``dyn`` (decided per value).
    ``constant_reason`` is the reason when it needs no evaluation (no template, or one
    without holes); then the rejecting verdict is built once here.
    """
    rejected = FilterVerdict(False, (constant_reason,)) if constant_reason is not None else None

    def failed(error: EvalError) -> FilterVerdict:
        failure = _failure(rule, error)
        return FilterVerdict(False, (str(failure),), failure)

    def reject(env: Env) -> FilterVerdict:
        if rejected is not None:
            return rejected
        assert reason is not None
        return FilterVerdict(False, (reason(env),))

    def from_value(value: Value, env: Env) -> FilterVerdict:
        if value is True:
            return PASSED
        if value is False:
            return reject(env)
        if isinstance(value, list | tuple):
            if not value:
                return PASSED
            return FilterVerdict(
                False, tuple(v if type(v) is str else format_value(v) for v in value)
            )
        raise EvalError(span, f"a filter gives a bool or a list of reasons, not {type_name(value)}")

    if body_kind == "bool":

        def evaluate(env: Env) -> FilterVerdict:
            try:
                if guard is not None and not guard(env):
                    return PASSED
                value = body(env)
                if value is True:
                    return PASSED
                if value is False:
                    return rejected if rejected is not None else reject(env)
                return from_value(value, env)
            except EvalError as error:
                return failed(error)
            except Exception as error:
                return failed(_internal(span, error))

    elif body_kind == "list":

        def evaluate(env: Env) -> FilterVerdict:
            try:
                if guard is not None and not guard(env):
                    return PASSED
                value = body(env)
                if not value and value is not None:
                    return PASSED
                return from_value(value, env)
            except EvalError as error:
                return failed(error)
            except Exception as error:
                return failed(_internal(span, error))

    else:

        def evaluate(env: Env) -> FilterVerdict:
            try:
                if guard is not None and not guard(env):
                    return PASSED
                return from_value(body(env), env)
            except EvalError as error:
                return failed(error)
            except Exception as error:
                return failed(_internal(span, error))

    return evaluate


def _score_of(rule: str, span: Span, value: Value) -> ScoreValue:
    """A score body's value as the rule's ``ScoreValue`` (shared by the single and batch paths)."""
    try:
        if value is None:
            return NOT_SCORED
        kind = type(value)
        if kind is float:
            if math.isfinite(value):
                return ScoreValue(value)
            # NaN ranks nowhere and an infinity normalises to NaN: no node could be chosen.
            raise EvalError(span, f"a score is a finite number, not {format_float(value)}")
        if kind is int or kind is Fraction:
            return ScoreValue(float(value))
        raise EvalError(span, f"a score is a number, not {type_name(value)}")
    except EvalError as error:
        return ScoreValue(0.0, _failure(rule, error))
    except Exception as error:
        return ScoreValue(0.0, _failure(rule, _internal(span, error)))


def score_evaluator(
    rule: str, span: Span, guard: Closure | None, body: Closure
) -> Callable[[Env], ScoreValue]:
    """The ``score(env)`` of one rule: a float, None when the guard or a null body excludes
    the node (it is then not scored by this rule, as kube-scheduler's PreScore Skip does)."""

    def evaluate(env: Env) -> ScoreValue:
        try:
            if guard is not None and not guard(env):
                return NOT_SCORED
            value = body(env)
        except EvalError as error:
            return ScoreValue(0.0, _failure(rule, error))
        except Exception as error:
            return ScoreValue(0.0, _failure(rule, _internal(span, error)))
        return _score_of(rule, span, value)

    return evaluate


def match_evaluator(expr: Closure | None) -> Callable[[Env], bool]:
    """A policy's ``match``: true for every pod when absent; a runtime error means no match."""
    if expr is None:
        return lambda env: True

    def evaluate(env: Env) -> bool:
        try:
            return expr(env) is True
        except Exception:
            return False

    return evaluate


# --- many nodes at once ----------------------------------------------------------------------


class NodeBatch:
    """One pod's evaluation over many nodes: the pod-level env and, for each root that varies
    per node, its values (a column, one value per node).

    Rules that can be evaluated for the whole batch at once read the columns; the others get
    one ``Env`` per node from ``env_at``, built on first use and shared by every rule of the
    batch (so per-node lets are still computed once per node). ``take`` narrows the batch to
    some of its nodes (the ones still feasible) and shares those envs.
    """

    __slots__ = ("_columns", "_envs", "_rows", "_selected", "_taken", "env", "size")

    def __init__(self, env: Env, columns: Mapping[str, Column]):
        self.env = env
        self._columns = {name: values for name, values in columns.items()}
        size = len(next(iter(columns.values()))) if columns else 0
        self.size = size
        # By row, made when first asked (most cycles of a class ask a few rows of thousands).
        self._envs: dict[int, Env] = {}
        self._rows: Sequence[int] | None = None
        self._selected: dict[int, Column] = {}
        self._taken: tuple[list[int], NodeBatch] | None = None

    def take(self, rows: Sequence[int]) -> NodeBatch:
        """The batch of the nodes at ``rows`` (positions in this batch). The rules of a cycle
        mostly ask for the same rows (the feasible nodes): the last batch taken is handed out
        again for equal rows, with the columns it already selected."""
        taken = self._taken
        if taken is not None and type(rows) is list and taken[0] == rows:
            return taken[1]
        batch = _new_batch(NodeBatch)
        batch.env = self.env
        batch._columns = self._columns
        batch._envs = self._envs
        batch._rows = rows if self._rows is None else _pick(self._rows, rows)
        batch._selected = {}
        batch._taken = None
        batch.size = len(rows)
        if type(rows) is list:
            self._taken = (list(rows), batch)  # a copy: the caller's list may change
        return batch

    def column(self, slot: int) -> Column | None:
        """The values of the root in ``slot`` for the nodes of this batch (None: not a column)."""
        selected = self._selected.get(slot)
        if selected is not None:
            return selected
        for name, values in self._columns.items():
            if ROOTS.index.get(name) == slot:
                rows = self._rows
                selected = values if rows is None else _pick(values, rows)
                self._selected[slot] = selected
                return selected
        return None

    def env_at(self, position: int) -> Env:
        row = position if self._rows is None else self._rows[position]
        env = self._envs.get(row)
        if env is None:
            env = self._envs[row] = self.env.derive(
                **{name: values[row] for name, values in self._columns.items()}
            )
        return env


_new_batch = object.__new__


def _pick(values: Column, rows: Sequence[int]) -> list[Value]:
    """``[values[r] for r in rows]``, at C speed. A column that is not a list may offer
    ``pick(rows)`` (the engine's frames share their rows between cycles: ``SharedList``)."""
    if type(values) is not list:
        pick = getattr(values, "pick", None)
        if pick is not None:
            return pick(rows)  # type: ignore[no-any-return]
    if len(rows) > 1:
        return list(itemgetter(*rows)(values))
    return [values[r] for r in rows]


# A batched body: every node's value in one call; raises when the batch cannot be evaluated
# that way (the rule then falls back to its single-node evaluator, which reports errors).
BatchBody = Callable[[NodeBatch], Column]


def filter_batch_evaluator(
    rule: str,
    span: Span,
    single: Callable[[Env], FilterVerdict],
    per_node: bool,
    guard: Closure | None,
    guard_per_node: bool,
    body: BatchBody | None,
    reason: Closure | None,
    constant_reason: str | None,
    guard_body: BatchBody | None = None,
    reason_body: BatchBody | None = None,
) -> Callable[[NodeBatch], list[FilterVerdict]]:
    """The ``filter_many(batch)`` of one rule: the verdicts ``single`` gives, node by node.

    A rule that reads nothing per node runs once. A rule whose body has a whole-batch form
    (a batched call, or a columnar expression: ``lang.vector``) runs it once over the nodes
    its guard admits — the guard once per pod, or as a column (``guard_body``) when it varies
    per node; everything else runs ``single`` on each node's env, and so does a batch whose
    columnar evaluation raised (the single evaluator then reports the error as it would).
    A reason that reads the node is evaluated for the rejected nodes as a column
    (``reason_body``) when it has a form.
    """
    rejected = FilterVerdict(False, (constant_reason,)) if constant_reason is not None else None

    def one_by_one(batch: NodeBatch) -> list[FilterVerdict]:
        env_at = batch.env_at
        return [single(env_at(i)) for i in range(batch.size)]

    if not per_node:

        def once(batch: NodeBatch) -> list[FilterVerdict]:
            return [single(batch.env_at(0))] * batch.size if batch.size else []

        return once
    if body is None or (guard_per_node and guard_body is None):
        return one_by_one

    def settle(value: Value, batch: NodeBatch, position: int) -> FilterVerdict:
        # The single evaluator's reading of a body value, for one node of the batch.
        try:
            if value is True:
                return PASSED
            if value is False:
                if rejected is not None:
                    return rejected
                assert reason is not None
                return FilterVerdict(False, (reason(batch.env_at(position)),))
            if isinstance(value, list | tuple):
                if not value:
                    return PASSED
                return FilterVerdict(
                    False, tuple(v if type(v) is str else format_value(v) for v in value)
                )
            return single(batch.env_at(position))
        except Exception:
            return single(batch.env_at(position))

    def many(batch: NodeBatch) -> list[FilterVerdict]:
        try:
            if guard_body is not None:
                rows = list(compress(range(batch.size), guard_body(batch)))
                if len(rows) < batch.size:
                    return guarded(batch, rows)
            elif guard is not None and not guard(batch.env):
                return [PASSED] * batch.size
            values = body(batch)
            if len(values) != batch.size:
                raise ValueError("one value per node")
        except Exception:
            return one_by_one(batch)
        return read(values, batch)

    def read(values: Column, batch: NodeBatch) -> list[FilterVerdict]:
        if type(values) is Copied:
            # A builtin that told its few distinct results (``lang.copied``): their verdicts
            # travel with its indexes when none reads the node.
            told = [_shared_verdict(value, rejected, {}) for value in values.results]
            if all(verdict is not None for verdict in told):
                return Copied(told, values.inverse)  # type: ignore[return-value]
        # Builtins give thousands of nodes the same (shared) value: each distinct object is
        # read once, and one verdict serves every node with equal reasons.
        ids = list(map(id, values))
        distinct = dict(zip(ids, values, strict=True))
        made: dict[tuple[Any, ...], FilterVerdict] = {}
        verdicts: dict[int, FilterVerdict | None] = {}
        for key, value in distinct.items():
            verdicts[key] = _shared_verdict(value, rejected, made)
        settled = not any(verdict is None for verdict in verdicts.values())
        if settled and len(ids) > _COPIED_FROM and len(verdicts) < len(ids):
            # The distinct verdicts and each node's index (``lang.copied``): a column stores
            # these without another look at each node's.
            index = {key: at for at, key in enumerate(verdicts)}
            return Copied(  # type: ignore[return-value]  # a Sequence of the verdicts
                list(verdicts.values()),
                np.fromiter(map(index.__getitem__, ids), np.int64, len(ids)),
            )
        out: list[FilterVerdict | None] = list(map(verdicts.__getitem__, ids))
        if settled:
            return out  # type: ignore[return-value]  # no None left
        # Values read per node: a false whose reason reads the node (in one columnar pass
        # when the reason has a form), or a value only ``settle`` reads.
        pending = [position for position, key in enumerate(ids) if verdicts[key] is None]
        if reason_body is not None:
            pending = _reasons_at(pending, values, batch, reason_body, out)
        for position in pending:
            out[position] = settle(values[position], batch, position)
        return out  # type: ignore[return-value]  # every None settled

    def guarded(batch: NodeBatch, rows: list[int]) -> list[FilterVerdict]:
        size = batch.size
        if not rows:
            return [PASSED] * size
        values = body(batch.take(rows))
        if len(values) != len(rows):
            raise ValueError("one value per node")
        found = read(values, batch.take(rows))
        if size > _COPIED_FROM:
            # The guard passed the nodes it excluded: those share one verdict (``Copied``).
            inverse = np.zeros(size, np.int64)
            inverse[rows] = np.arange(1, len(rows) + 1)
            return Copied([PASSED, *found], inverse)  # type: ignore[return-value]
        out = [PASSED] * size
        for row, verdict in zip(rows, found, strict=True):
            out[row] = verdict
        return out

    return many


def _guarded_values(
    body: BatchBody, guard: Closure | None, guard_body: BatchBody | None, batch: NodeBatch
) -> tuple[list[int] | None, Column]:
    """A score body's values over the nodes its guard admits, and those nodes' positions
    (None: every node); raises when the batch cannot be evaluated."""
    rows: list[int] | None = None
    if guard_body is not None:
        rows = list(compress(range(batch.size), guard_body(batch)))
        if len(rows) == batch.size:
            rows = None
    elif guard is not None and not guard(batch.env):
        return [], []
    if rows is None:
        values = body(batch)
        wanted = batch.size
    else:
        values = body(batch.take(rows)) if rows else []
        wanted = len(rows)
    if len(values) != wanted:
        raise ValueError("one value per node")
    return rows, values


def _score_many(
    body: BatchBody,
    guard: Closure | None,
    guard_body: BatchBody | None,
    one_by_one: Callable[[NodeBatch], list[Any]],
    convert: Callable[[Column, NodeBatch], list[Any]],
    unscored: Any = NOT_SCORED,
) -> Callable[[NodeBatch], list[Any]]:
    """``score_many`` (or ``score_numbers``) over the batch: ``convert`` reads the body's
    values, a node the guard leaves out gets ``unscored``; ``one_by_one`` when the batch
    cannot be evaluated."""

    def many(batch: NodeBatch) -> list[Any]:
        try:
            rows, values = _guarded_values(body, guard, guard_body, batch)
        except Exception:
            return one_by_one(batch)
        scored = convert(values, batch)
        if rows is None:
            return scored
        out = [unscored] * batch.size
        for row, value in zip(rows, scored, strict=True):
            out[row] = value
        return out

    return many


class _NotPlain(Exception):
    """A score value that is no plain number (an error to report): ``score_many`` reads it."""


def score_numbers_evaluator(
    per_node: bool,
    guard: Closure | None,
    guard_per_node: bool,
    body: BatchBody | None,
    guard_body: BatchBody | None = None,
) -> Callable[[NodeBatch], ScoreArrays | None] | None:
    """The ``score_numbers(batch)`` of one rule: each node's score as ``score_many`` gives
    it (``ScoreValue.value``) as two arrays — the values (0.0 where not scored) and whether
    each node is scored — when every value is a plain number or null and evaluating raised
    nothing; None otherwise (the caller then asks ``score_many``, which reports what went
    wrong). None for a rule without a batch form. The engine stores them as they are, with
    no ``ScoreValue`` per node; a body computed in numpy (``vector.Numbers``) is never read
    value by value."""
    if not per_node or body is None or (guard_per_node and guard_body is None):
        return None

    def numbers(batch: NodeBatch) -> ScoreArrays | None:
        try:
            rows, values = _guarded_values(body, guard, guard_body, batch)
            found = _plain_numbers(values)
        except Exception:  # _NotPlain, or a number no float holds: ``score_many`` tells
            return None
        if rows is None:
            return found
        out = np.zeros(batch.size, np.float64), np.zeros(batch.size, bool)
        if rows:
            out[0][rows] = found[0]
            out[1][rows] = found[1]
        return out

    return numbers


_ARRAY_KINDS = frozenset({"int", "quantity", "float"})  # ``vector.Numbers.kind``

# A score column as the engine stores it: the values (0.0 where not scored) and the mask of
# the scored nodes.
ScoreArrays = tuple[np.ndarray, np.ndarray]


def _all_true(size: int) -> np.ndarray:
    # ``np.ones`` is a Python function around these two C calls: a few changed rows a rule
    # are stored at a time, so its overhead counts.
    out = np.empty(size, bool)
    out.fill(True)
    return out


def _plain_numbers(values: Column) -> ScoreArrays:
    """``values`` as ``ScoreArrays``; raises ``_NotPlain`` for a value that is no finite
    number or null (and OverflowError for one no float holds)."""
    held = getattr(values, "array", None)  # a ``vector.Numbers`` (which imports this module)
    if held is not None and getattr(values, "kind", None) in _ARRAY_KINDS:
        # Ints and whole Fractions become the floats ``float(value)`` gives (round to nearest).
        array = held.astype(np.float64)
        if held.dtype == np.float64 and not np.isfinite(array).all():
            raise _NotPlain
        return array, _all_true(len(array))
    out = np.zeros(len(values), np.float64)
    scored = _all_true(len(values))
    for at, value in enumerate(values):
        kind = type(value)
        if kind is float:
            if not math.isfinite(value):
                raise _NotPlain
            out[at] = value
        elif kind is int or kind is Fraction:
            out[at] = float(value)
        elif value is None:
            scored[at] = False
        else:
            raise _NotPlain
    return out, scored


def _reasons_at(
    pending: list[int],
    values: Column,
    batch: NodeBatch,
    reason_body: BatchBody,
    out: list[FilterVerdict | None],
) -> list[int]:
    """The rejections of the ``pending`` nodes whose body gave false, their reasons computed
    as one column; the positions still pending (an error, or a value that is not false)."""
    rejected = [position for position in pending if values[position] is False]
    if not rejected:
        return pending
    try:
        texts = reason_body(batch if len(rejected) == batch.size else batch.take(rejected))
        if len(texts) != len(rejected):
            raise ValueError("one reason per node")
    except Exception:
        return pending  # the single evaluator reports the error, node by node
    made: dict[str, FilterVerdict] = {}
    for position, text in zip(rejected, texts, strict=True):
        if type(text) is str:
            verdict = made.get(text)
            if verdict is None:
                verdict = made[text] = FilterVerdict(False, (text,))
            out[position] = verdict
    return [position for position in pending if out[position] is None]


_SHORT = 16  # score columns shorter than this convert value by value


def _scores_of_array(rule: str, span: Span, array: Any) -> list[ScoreValue] | None:
    """The ScoreValues of a numeric column held as a numpy array (``vector.Numbers``): one per
    distinct value, as ``convert`` makes them; None for a column this does not cover."""
    if not len(array):
        return []
    floats = array.dtype == np.float64
    if floats:
        if np.isnan(array).any():
            return None
        keys = array.view(np.int64)  # distinct by bit pattern: -0.0 keeps its own ScoreValue
    elif array.dtype == np.int64:
        keys = array
        low, high = int(array.min()), int(array.max())
        if low >= 0 and high < 1 << 16:  # scores (0-100): a table indexed by the value
            table = np.empty(high + 1, object)
            for value in np.flatnonzero(np.bincount(array, minlength=high + 1)).tolist():
                table[value] = _score_of(rule, span, value)
            return table[array].tolist()  # type: ignore[no-any-return]
    else:
        return None
    distinct, inverse = np.unique(keys, return_inverse=True)
    values = distinct.view(np.float64) if floats else distinct
    table = np.empty(len(distinct), object)
    for index, value in enumerate(values.tolist()):
        table[index] = _score_of(rule, span, value)
    return table[inverse.reshape(-1)].tolist()  # type: ignore[no-any-return]


def _shared_verdict(
    value: Value, rejected: FilterVerdict | None, made: dict[tuple[Any, ...], FilterVerdict]
) -> FilterVerdict | None:
    """The verdict of a body value that does not depend on which node gave it; None when the
    node must be consulted (a reason that reads it, or a value only ``settle`` reads)."""
    if value is True or (type(value) is list and not value):
        return PASSED
    if value is False:
        return rejected
    if type(value) is list and all(type(v) is str for v in value):
        reasons = tuple(value)
        verdict = made.get(reasons)
        if verdict is None:
            verdict = made[reasons] = FilterVerdict(False, reasons)
        return verdict
    return None


# Values whose ScoreValue depends on the value alone (equal values, equal ScoreValues: an
# int, the equal float and Fraction all read as that float; null is NOT_SCORED).
_NUMBERS = frozenset({int, float, Fraction, type(None)})


def score_batch_evaluator(
    rule: str,
    span: Span,
    single: Callable[[Env], ScoreValue],
    per_node: bool,
    guard: Closure | None,
    guard_per_node: bool,
    body: BatchBody | None,
    guard_body: BatchBody | None = None,
) -> Callable[[NodeBatch], list[ScoreValue]]:
    """The ``score_many(batch)`` of one rule: the values ``single`` gives, node by node (see
    ``filter_batch_evaluator``)."""

    def one_by_one(batch: NodeBatch) -> list[ScoreValue]:
        env_at = batch.env_at
        return [single(env_at(i)) for i in range(batch.size)]

    if not per_node:

        def once(batch: NodeBatch) -> list[ScoreValue]:
            return [single(batch.env_at(0))] * batch.size if batch.size else []

        return once
    if body is None or (guard_per_node and guard_body is None):
        return one_by_one

    def convert(values: Column, batch: NodeBatch) -> list[ScoreValue]:
        array = getattr(values, "array", None)
        if (
            array is not None
            and len(array) >= _SHORT  # fewer: numpy's calls cost more than the values
            and getattr(values, "kind", None) in ("int", "float")
        ):
            scored = _scores_of_array(rule, span, array)
            if scored is not None:
                return scored
        if set(map(type, values)) <= _NUMBERS:
            # Scores repeat a lot (0–100, null): one ScoreValue per distinct value.
            by_value = {value: _score_of(rule, span, value) for value in set(values)}
            return list(map(by_value.__getitem__, values))
        cache: dict[Value, ScoreValue] = {}
        out = []
        for value in values:
            # Scores repeat a lot (0–100); the same value reads as the same ScoreValue.
            kind = type(value)
            if kind is int or kind is float:
                known = cache.get(value)
                if known is None:
                    known = cache[value] = _score_of(rule, span, value)
                out.append(known)
            else:
                out.append(_score_of(rule, span, value))
        return out

    return _score_many(body, guard, guard_body, one_by_one, convert)
