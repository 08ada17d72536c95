"""Measured node load: parsing NodeMetrics and exporter annotations, and deciding staleness.

Load comes from two places. The ``metrics.k8s.io/v1beta1`` NodeMetrics object (metrics-server)
gives cpu and memory *usage* in absolute units with the ``timestamp`` of the sample; the
fraction the language sees is usage over the node's allocatable. An exporter may instead (or
as well) write node annotations, which is also the only place GPU utilisation can come from::

    load.policyengine.io/cpu: "0.73"          # fractions of allocatable, 0..1
    load.policyengine.io/memory: "0.41"
    load.policyengine.io/gpu: "0.58"          # mean utilisation of the node's GPUs
    load.policyengine.io/timestamp: "2026-12-02T20:15:00Z"   # RFC 3339, required

A reading older than the staleness bound (``max_age``) counts as *missing*, never as zero load:
an idle-looking node whose exporter died is not an invitation to pile work onto it. Per field
the freshest reading wins. Everything here is pure and takes "now" explicitly, so snapshot
files decide the same way whenever they are read, and the loop decides with the clock.

Malformed NodeMetrics objects are errors naming the object and field (``ModelError``); a
malformed annotation is ignored with a warning naming the node and the annotation, because an
exporter's typo must not stop scheduling.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from policyengine.model.errors import object_ref
from policyengine.model.objects import Node
from policyengine.model.parse import _map, _metadata, _resources, _str
from policyengine.model.resources import CPU, MEMORY

DEFAULT_MAX_AGE = dt.timedelta(minutes=5)
METRICS_API_GROUP = "metrics.k8s.io"
NODE_METRICS_KIND = "NodeMetrics"

ANNOTATION_PREFIX = "load.policyengine.io/"
TIMESTAMP_ANNOTATION = ANNOTATION_PREFIX + "timestamp"
FIELDS = ("cpu", "memory", "gpu")
ANNOTATIONS = {name: ANNOTATION_PREFIX + name for name in FIELDS}


@dataclass(frozen=True, slots=True)
class NodeMetrics:
    """One ``metrics.k8s.io`` NodeMetrics: usage over ``window`` ending at ``timestamp``."""

    name: str
    timestamp: dt.datetime  # timezone-aware
    window: str  # a Go duration as written ("30s"); informative only
    cpu: Fraction | None  # cores
    memory: Fraction | None  # bytes


@dataclass(frozen=True, slots=True)
class Reading:
    value: float  # a fraction, 0..1
    timestamp: dt.datetime


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """What ``node.load`` shows: fresh fractions (None: missing or stale) and their age.

    ``age`` is the whole seconds, at the snapshot's "now", since the *oldest* reading shown:
    the worst case over the fields that are set; None when none is.
    """

    cpu: float | None = None
    memory: float | None = None
    gpu: float | None = None
    age: int | None = None

    def field(self, name: str) -> float | None:
        value: float | None = getattr(self, name)
        return value


NO_LOAD = NodeLoad()


def parse_time(text: Any) -> dt.datetime | None:
    """An RFC 3339 timestamp (YAML may already have made it a datetime); None if it is not one.

    A timestamp without a zone is read as UTC, as the API server writes them.
    """
    if isinstance(text, dt.datetime):
        value = text
    elif isinstance(text, str) and text:
        try:
            value = dt.datetime.fromisoformat(text.strip().replace("z", "Z"))
        except ValueError:
            return None
    else:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value


def is_node_metrics_object(obj: Mapping[str, Any]) -> bool:
    """A NodeMetrics of ``metrics.k8s.io``; the items of a NodeMetricsList (as ``kubectl get
    --raw /apis/metrics.k8s.io/v1beta1/nodes`` prints it) carry no apiVersion of their own."""
    api = obj.get("apiVersion")
    return obj.get("kind") == NODE_METRICS_KIND and (
        api is None or (isinstance(api, str) and api.split("/", 1)[0] == METRICS_API_GROUP)
    )


def parse_node_metrics(obj: Mapping[str, Any], source: str | None = None) -> NodeMetrics:
    """A ``NodeMetrics`` from its API dict; raises ``ModelError`` naming the object and field."""
    ctx, _ = _metadata(obj, NODE_METRICS_KIND, source)
    raw_time = obj.get("timestamp")
    timestamp = parse_time(raw_time)
    if timestamp is None:
        if raw_time is None:
            raise ctx.fail("timestamp", "is required")
        raise ctx.fail("timestamp", f"{raw_time!r} is not an RFC 3339 time")
    usage = _resources(ctx, _map(ctx, obj.get("usage"), "usage"), "usage")
    return NodeMetrics(
        name=ctx.name or "",
        timestamp=timestamp,
        window=_str(ctx, obj.get("window"), "window"),
        cpu=usage.get(CPU),
        memory=usage.get(MEMORY),
    )


def _fraction(usage: Fraction | None, allocatable: Fraction | None) -> float | None:
    if usage is None or not allocatable or allocatable <= 0 or usage < 0:
        return None
    # Usage can exceed allocatable (system daemons run in the reserved part): that is full.
    return min(float(usage / allocatable), 1.0)


def metrics_readings(node: Node, metrics: NodeMetrics) -> dict[str, Reading]:
    """cpu and memory as fractions of the node's allocatable (absent when it has none)."""
    out: dict[str, Reading] = {}
    for name, usage in (("cpu", metrics.cpu), ("memory", metrics.memory)):
        value = _fraction(usage, node.allocatable.get(name))
        if value is not None:
            out[name] = Reading(value, metrics.timestamp)
    return out


def annotation_readings(node: Node) -> tuple[dict[str, Reading], list[str]]:
    """The exporter's readings and a warning per malformed annotation (which is ignored)."""
    ref = object_ref("Node", None, node.name)
    present = {
        name: node.annotations[key] for name, key in ANNOTATIONS.items() if key in node.annotations
    }
    raw_time = node.annotations.get(TIMESTAMP_ANNOTATION)
    if not present:
        return {}, []
    where = f'{ref}: metadata.annotations["{TIMESTAMP_ANNOTATION}"]'
    if raw_time is None:
        return {}, [f"{where}: missing; the node's load annotations are ignored"]
    timestamp = parse_time(raw_time)
    if timestamp is None:
        return {}, [
            f"{where}: {raw_time!r} is not an RFC 3339 time; the node's load annotations are ignored"
        ]
    readings: dict[str, Reading] = {}
    warnings: list[str] = []
    for name, text in present.items():
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 <= value <= 1:  # also false for nan
            warnings.append(
                f'{ref}: metadata.annotations["{ANNOTATIONS[name]}"]: {text!r} is not a '
                "fraction between 0 and 1; ignored"
            )
            continue
        readings[name] = Reading(value, timestamp)
    return readings, warnings


def fresh(reading: Reading, now: dt.datetime, max_age: dt.timedelta) -> bool:
    """Within the staleness bound. A reading from the future (clock skew) counts as age 0."""
    return now - reading.timestamp <= max_age


def resolve_load(
    node: Node,
    metrics: NodeMetrics | None,
    now: dt.datetime,
    max_age: dt.timedelta = DEFAULT_MAX_AGE,
) -> tuple[NodeLoad, list[str]]:
    """The node's load at ``now``: per field the freshest reading within ``max_age``."""
    annotated, warnings = annotation_readings(node)
    measured = metrics_readings(node, metrics) if metrics is not None else {}
    chosen: dict[str, Reading] = {}
    for name in FIELDS:
        candidates = [
            r
            for r in (measured.get(name), annotated.get(name))
            if r is not None and fresh(r, now, max_age)
        ]
        if candidates:
            chosen[name] = max(candidates, key=lambda r: r.timestamp)
    if not chosen:
        return NO_LOAD, warnings
    oldest = min(r.timestamp for r in chosen.values())
    age = max(0, math.floor((now - oldest).total_seconds()))
    values = {name: (chosen[name].value if name in chosen else None) for name in FIELDS}
    return NodeLoad(values["cpu"], values["memory"], values["gpu"], age), warnings


def newest_reading(nodes: Iterable[Node], metrics: Iterable[NodeMetrics]) -> dt.datetime | None:
    """A snapshot file's "now": the newest load timestamp it holds (None: it holds none).

    Reading a snapshot must decide the same way tomorrow as today, so its staleness is judged
    against its own newest reading rather than the wall clock.
    """
    times = [m.timestamp for m in metrics]
    for node in nodes:
        if any(key in node.annotations for key in ANNOTATIONS.values()):
            stamp = parse_time(node.annotations.get(TIMESTAMP_ANNOTATION))
            if stamp is not None:
                times.append(stamp)
    return max(times, default=None)


def resolve_loads(
    nodes: Iterable[Node],
    metrics: Iterable[NodeMetrics],
    now: dt.datetime | None,
    max_age: dt.timedelta = DEFAULT_MAX_AGE,
) -> tuple[dict[str, NodeLoad], list[str]]:
    """Every node's load (nodes with none are left out) and the warnings, in node order.

    NodeMetrics of nodes not in ``nodes`` are ignored (metrics-server may still report a node
    that was just deleted).
    """
    node_list = list(nodes)
    by_name = {m.name: m for m in metrics}
    if now is None:
        now = newest_reading(node_list, by_name.values())
    loads: dict[str, NodeLoad] = {}
    warnings: list[str] = []
    if now is None:
        for node in node_list:
            warnings.extend(annotation_readings(node)[1])
        return loads, warnings
    for node in node_list:
        load, found = resolve_load(node, by_name.get(node.name), now, max_age)
        warnings.extend(found)
        if load != NO_LOAD:
            loads[node.name] = load
    return loads, warnings
