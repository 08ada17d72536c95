"""What one scheduling cycle decided, as plain data every command renders its own way.

``filter``, ``score``, ``explain``, ``simulate`` and the scheduler loop all read a
``Decision``; the JSON contracts other tools rely on (README, ARCHITECTURE.md) are views of
it (``render`` in the CLI), so every output agrees with every other.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field, replace
from typing import Any

from policyengine.model.gpu_devices import Grant


@dataclass(frozen=True)
class Rejection:
    """A filter rule that rejected a node, with its reasons (kube's strings for kube rules)."""

    rule: str
    reasons: tuple[str, ...]
    error: str | None = None


@dataclass(frozen=True)
class NodeScore:
    total: float
    rules: Mapping[str, float]  # each rule's normalised score, 0–100
    raw: Mapping[str, float | None] = field(default_factory=dict)  # before normalisation


@dataclass(frozen=True)
class Decision:
    pod: str  # namespace/name
    policy: str | None
    version: str
    node: str | None
    num_nodes: int
    feasible: Sequence[str] = ()  # a tuple, or a ``Names`` (equal to the tuple it holds)
    infeasible: Mapping[str, tuple[Rejection, ...]] = field(default_factory=dict)
    scores: Mapping[str, NodeScore] = field(default_factory=dict)
    ranking: Sequence[str] = ()  # best first; ties in name order
    message: str = ""  # why the pod is unschedulable (the histogram line), or how it was placed
    errors: tuple[str, ...] = ()  # runtime errors of rules, each with its rule and position
    gpu_devices: tuple[Grant, ...] = ()  # the GPU device(s) the pod gets on ``node``
    # What binding the pod's waiting claims on ``node`` takes (``engine.volumes``): a
    # ``model.volume_binder.PodVolumes``, None when there is nothing to bind.
    volumes: Any = None

    @property
    def scheduled(self) -> bool:
        return self.node is not None

    def settled(self) -> Decision:
        """This decision as a finished run reports it: everything but the per-node detail
        (feasible, infeasible and ranked nodes), with the chosen node's score kept.

        A cycle's decision builds that detail when read, from the cycle's columns and
        snapshot, so it keeps them alive: about a quarter of a megabyte per pod at 5,000
        nodes. A simulation of thousands of pods keeps settled decisions instead."""
        chosen: dict[str, NodeScore] = {}
        if self.node is not None and self.node in self.scores:
            chosen[self.node] = self.scores[self.node]
        return replace(self, feasible=(), infeasible={}, scores=chosen, ranking=())


class Names(Sequence[str]):
    """A tuple of node names built on first read (its length is known at once). A cycle's
    feasible list and ranking are thousands of names; sorting the ranking alone cost a tenth
    of a cycle, and the scheduler loop reads neither. Compares equal to the tuple it holds."""

    __slots__ = ("_build", "_items", "_size")

    def __init__(self, build: Callable[[], tuple[str, ...]], size: int):
        self._build: Callable[[], tuple[str, ...]] | None = build
        self._items: tuple[str, ...] | None = None
        self._size = size

    def _get(self) -> tuple[str, ...]:
        if self._items is None:
            assert self._build is not None
            self._items = self._build()
            self._build = None
        return self._items

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        return self._get()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __contains__(self, name: object) -> bool:
        return name in self._get()

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        return self._get().index(value, start, len(self) if stop is None else stop)

    def count(self, value: Any) -> int:
        return self._get().count(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Names):
            other = other._get()
        return isinstance(other, tuple) and self._get() == other

    def __hash__(self) -> int:
        return hash(self._get())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self._get(),))

    def __repr__(self) -> str:
        return repr(self._get())


class ScoreTable(Mapping[str, NodeScore]):
    """``Decision.scores`` for a cycle that kept its scores as columns: a node's ``NodeScore``
    is built when first read. Building 5,000 of them (two dicts each) per pod cost more than
    choosing the node; most consumers read one or a few (the chosen node, a top-N).

    ``nodes`` are the feasible nodes and ``rows`` their rows in the columns (or a function
    giving them, called when a node is first read): ``totals`` has one
    float per row, ``raw``/``scored`` one column per rule (``scored`` False where the raw value
    is null), and ``normalised[r](rows)`` gives rule ``r``'s normalised values at some rows.
    """

    def __init__(
        self,
        nodes: Sequence[str],
        rows: Any,  # the feasible nodes' rows in the columns (a numpy int array)
        totals: Any,  # a float per row
        rules: Sequence[str],
        normalised: Sequence[Callable[[Any], Any]],
        raw: Sequence[Any],
        scored: Sequence[Any],
        empty_total: float = 0,
    ):
        self._nodes = nodes
        self._rows = rows  # an array, or a function giving it (``_row_array``)
        self._totals = totals
        self._rules = rules
        self._normalised = normalised
        self._raw = raw
        self._scored = scored
        self._empty_total = empty_total
        self._index: dict[str, int] | None = None
        self._built: dict[int, NodeScore] = {}

    def _position(self, node: str) -> int | None:
        if self._index is None:
            self._index = {name: i for i, name in enumerate(self._nodes)}
        return self._index.get(node)

    def __getitem__(self, node: str) -> NodeScore:
        i = self._position(node)
        if i is None:
            raise KeyError(node)
        score = self._built.get(i)
        if score is None:
            rules = self._rules
            rows = self._row_array()
            row = int(rows[i])
            at = rows[i : i + 1]
            score = self._built[i] = NodeScore(
                total=float(self._totals[row]) if rules else self._empty_total,
                rules={
                    r: float(norm(at)[0]) for r, norm in zip(rules, self._normalised, strict=True)
                },
                raw={
                    r: float(c[row]) if s[row] else None
                    for r, c, s in zip(rules, self._raw, self._scored, strict=True)
                },
            )
        return score

    def _row_array(self) -> Any:
        if callable(self._rows):
            self._rows = self._rows()
        return self._rows

    def __contains__(self, node: object) -> bool:
        return isinstance(node, str) and self._position(node) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __repr__(self) -> str:
        return f"ScoreTable({len(self)} nodes)"


class RejectionTable(Mapping[str, tuple[Rejection, ...]]):
    """``Decision.infeasible`` built on first read: an unschedulable GPU pod has thousands of
    infeasible nodes and nearly every consumer only counts them or reads a few."""

    def __init__(
        self,
        build: Callable[[], dict[str, tuple[Rejection, ...]]],
        size: int,
        groups: Callable[[], list[RejectionGroup]] | None = None,
    ):
        self._build = build
        self._size = size
        self._groups = groups
        self._grouped: list[RejectionGroup] | None = None
        self._table: dict[str, tuple[Rejection, ...]] | None = None

    def grouped(self) -> list[RejectionGroup]:
        """The nodes by their first rejection (``first_rejection_groups``), without the
        per-node table when the cycle can group them itself; built once (the failed cycle's
        message and preemption both read them)."""
        if self._grouped is None:
            if self._groups is None or self._table is not None:
                self._grouped = _group_nodes(self._get())
            else:
                self._grouped = self._groups()
        return self._grouped

    def _get(self) -> dict[str, tuple[Rejection, ...]]:
        if self._table is None:
            self._table = self._build()
        return self._table

    def __getitem__(self, node: str) -> tuple[Rejection, ...]:
        return self._get()[node]

    def __contains__(self, node: object) -> bool:
        return node in self._get()

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return self._size

    # The built dict's own views: the Mapping mixins would look every node up again
    # (the histogram of a pod that fits nowhere reads every value).
    def keys(self) -> KeysView[str]:
        return self._get().keys()

    def values(self) -> ValuesView[tuple[Rejection, ...]]:
        return self._get().values()

    def items(self) -> ItemsView[str, tuple[Rejection, ...]]:
        return self._get().items()

    def __repr__(self) -> str:
        return f"RejectionTable({self._size} nodes)"


# A first rejection and the nodes it rejected first.
RejectionGroup = tuple[Rejection, list[str]]


def first_rejection_groups(infeasible: Mapping[str, Sequence[Rejection]]) -> list[RejectionGroup]:
    """The infeasible nodes grouped by their first rejection (nodes without one left out):
    the histogram and preemption read a few hundred groups' worth where a pod fits nowhere,
    not thousands of nodes."""
    if isinstance(infeasible, RejectionTable):
        return infeasible.grouped()
    return _group_nodes(infeasible)


def _group_nodes(infeasible: Mapping[str, Sequence[Rejection]]) -> list[RejectionGroup]:
    groups: dict[Rejection, list[str]] = {}
    for name, rejections in infeasible.items():
        if rejections:
            groups.setdefault(rejections[0], []).append(name)
    return list(groups.items())
