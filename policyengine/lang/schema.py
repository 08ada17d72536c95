"""The declaration table: what names a policy may use, with types, implementations and docs.

The language knows nothing of Kubernetes. The scheduling layer (``schedlib``) registers the
roots (``pod``, ``node``), their record types and the domain functions here; tests register a
made-up schema. The checker types rules against this table, the compiler binds the
implementations, lint reads the costs and the resource classes, and the documentation's attribute
reference is generated from the docs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policyengine.lang.types import Type
from policyengine.lang.values import Column, Value


@dataclass(frozen=True, eq=False)
class Root:
    """A name bound for every evaluation, such as ``pod`` or ``node``.

    ``varies_per_node`` says whether its value changes from node to node for one pod; rules
    that read no such root are evaluated once per pod instead of once per node.
    """

    name: str
    type: Type
    doc: str = ""
    varies_per_node: bool = True


@dataclass(frozen=True, eq=False)
class Param:
    name: str
    type: Type


@dataclass(frozen=True, eq=False)
class Function:
    """A domain function such as ``tolerates(pod, node)``.

    ``impl`` is called with the evaluated arguments; when ``needs_context`` is true it first
    receives the evaluation context the engine passes in (the snapshot, per-pod caches).
    ``varies_per_node`` is true when the result may differ between nodes even for arguments
    that do not (it reads the node from the context).

    ``batch`` optionally evaluates the function for many nodes in one call, so the scheduler's
    hot path pays one Python call per rule instead of one per node. It is called as
    ``batch(context, *args)`` (``context`` only when ``needs_context``) where each argument
    that varies per node is a sequence with one value per node and every other argument is a
    single value; it returns one result per node, each exactly what ``impl`` returns for that
    node. It may raise: the caller then falls back to ``impl`` node by node.

    ``cluster_key`` tells caches of per-node results (the engine reuses them for pods alike
    while a node is unchanged) what a context function reads beyond its arguments and the
    pod: ``cluster_key(context)`` returns a value such that, while it compares equal, every
    per-node result stays the same — a constant when the result depends on nothing but the
    pod and the node itself. None (the default) means unknown: never reused across cycles.
    Functions without ``needs_context`` depend on their arguments alone.

    ``pod_key`` lets such caches share results between pods that are not alike: it tells what
    a function reads of the pod being scheduled (through the context or a ``pod`` argument).
    ``pod_key(context)`` returns a hashable value such that two pods with equal keys (and equal
    cluster keys) get the same result on every node for the same other arguments; it may raise
    when it cannot tell. None (the default): unknown, results are shared only by pods alike.

    ``stable_only`` tells such caches that a function reads only the *stable* part of the
    per-node values it is given (what the schema's caller names stable, say a node's own object
    and not what is placed on it): ``stable_only(context)`` true means that, for this context's
    pod and with the same ``cluster_key``, each per-node result stays the same while that part
    does. None (the default): it may read anything of them.

    ``pod_key_alike`` says ``pod_key`` reads nothing but the pod and the engine's
    configuration (not the rest of the context): pods equal but for their names then have
    equal keys under one configuration, and caches may keep the key per such class.

    ``row_determined`` tells such caches that a function whose ``cluster_key`` has a part per
    node row (``schedlib.rowkeys``; a key without one is a single part for every row) decides
    by it: ``row_determined(context)`` true means that, for this context's pod, the results at
    two nodes whose row parts are equal are equal, so a cache may compute one and copy it.
    None (the default): it may read more of the node.

    ``row_values`` goes one step further for a function whose result is its row key itself:
    ``row_values(context, rows)`` gives, for some rows of its row part (one row per node),
    the results at those nodes as two arrays (each value as a float, 0.0 for null; whether it
    is not null), exactly what evaluating the function there gives while ``row_determined``
    holds. A rule whose body is just that call needs no evaluation where a row key moved.
    None (the default): never told.

    ``looked_at`` tells a cache that, for some pods, a function tells only a few nodes apart:
    ``looked_at(context, nodes)`` (``nodes``: every node's value, in order) gives the positions
    of the nodes where the function may give different results for this context's pod; at
    every other node it gives one and the same result (kube-scheduler filters only the nodes a
    DaemonSet's pod names). None from the callable: this pod may see every node apart. None
    (the default): never told.

    ``keys_alike`` says ``cluster_key`` and ``stable_only`` read nothing but the pod and the
    engine's configuration (a constant cluster key): caches may keep their values per class of
    pods equal but for their names, as for ``pod_key_alike``.

    ``idle`` tells the engine that a context function does nothing for some pods:
    ``idle(context)`` true means that, for this context's pod, the function returns its empty
    value (an empty list when it returns a list, otherwise null) at every node, whatever its
    arguments, and raises nothing. A rule that only calls it may then be left out of the
    cycle, as kube-scheduler's plugins skip such pods in PreFilter and PreScore. None (the
    default): never told.

    ``narrowed_key`` lets a rule's cluster key cover only what its own calls read:
    ``(position, key)`` where, when every call of the function in a rule passes a literal at
    argument ``position``, ``key(context, values)`` (``values``: those literals) is a cluster
    key for the rule's calls, as ``cluster_key`` is for any call. ``domain_pod_count`` keyed by
    the label keys its calls count by: a rule counting per hostname is not moved by a zone's
    count. None (the default): ``cluster_key`` for every rule.
    """

    name: str
    params: tuple[Param, ...]
    returns: Type
    impl: Callable[..., Value]
    doc: str = ""
    cost: int = 10
    needs_context: bool = False
    varies_per_node: bool = False
    batch: Callable[..., Column] | None = None
    cluster_key: Callable[[Any], Hashable] | None = None
    pod_key: Callable[[Any], Hashable] | None = None
    stable_only: Callable[[Any], bool] | None = None
    pod_key_alike: bool = False
    row_determined: Callable[[Any], bool] | None = None
    keys_alike: bool = False
    idle: Callable[[Any], bool] | None = None
    narrowed_key: tuple[int, Callable[[Any, frozenset[Value]], Hashable]] | None = None
    row_values: Callable[[Any, Any], tuple[Any, Any]] | None = None
    looked_at: Callable[[Any, Sequence[Any]], Sequence[int] | None] | None = None


@dataclass(frozen=True)
class EssentialCheck:
    """A check every policy that governs pods should make (lint PE311): satisfied by a filter
    that calls one of ``functions`` or reads one of ``reads`` (``(root, attribute)``)."""

    name: str  # as the warning lists it: "resource fit"
    functions: frozenset[str] = frozenset()
    reads: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True, eq=False)
class Schema:
    roots: Mapping[str, Root]
    functions: Mapping[str, Function] = field(default_factory=dict)
    # Score normalisations a rule may name (``normalize max``); the engine implements them.
    normalizers: frozenset[str] = frozenset({"none"})
    # Resources that may be overcommitted (``overcommit cpu 1.5``); others are refused by lint.
    compressible_resources: frozenset[str] = frozenset()
    # Every resource name the schema knows, for "did you mean" hints; others stay allowed.
    known_resources: frozenset[str] = frozenset()
    # Roots visible only inside a ``gang`` block (which sees no root varying per node), and
    # the topology levels its ``within`` may name, lowest first.
    gang_roots: frozenset[str] = frozenset()
    topology_levels: tuple[str, ...] = ()
    # Roots bound only in the body of a ``preempt`` rule (the candidate victim).
    preempt_roots: Mapping[str, Root] = field(default_factory=dict)
    # What lint expects every policy to check before it places a pod (PE311).
    essential_checks: tuple[EssentialCheck, ...] = ()
