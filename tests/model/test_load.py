"""Measured node load: NodeMetrics and annotations, freshness, and what counts as missing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from policyengine.model.errors import ModelError
from policyengine.model.load import (
    DEFAULT_MAX_AGE,
    NO_LOAD,
    NodeLoad,
    NodeMetrics,
    is_node_metrics_object,
    newest_reading,
    parse_node_metrics,
    resolve_load,
    resolve_loads,
)
from policyengine.model.parse import parse_node
from policyengine.model.snapshot import snapshot_from_objects
from policyengine.model.snapshot_io import parse_snapshot_text
from tests.model.builders import make_pod, node_dict

NOW = dt.datetime(2026, 12, 2, 20, 0, 0, tzinfo=dt.UTC)


def at(seconds_ago: int) -> str:
    return (NOW - dt.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name: str = "n1", annotations: dict[str, str] | None = None, cpu: str = "4") -> Any:
    raw = node_dict(name, cpu=cpu, memory="16Gi")
    raw["metadata"]["annotations"] = annotations or {}
    return parse_node(raw)


def metrics(
    name: str = "n1", seconds_ago: int = 0, cpu: str = "1", memory: str = "4Gi"
) -> NodeMetrics:
    return parse_node_metrics(
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": name},
            "timestamp": at(seconds_ago),
            "window": "20s",
            "usage": {"cpu": cpu, "memory": memory},
        }
    )


def load_annotations(seconds_ago: int | None, **values: str) -> dict[str, str]:
    out = {f"load.policyengine.io/{k}": v for k, v in values.items()}
    if seconds_ago is not None:
        out["load.policyengine.io/timestamp"] = at(seconds_ago)
    return out


@pytest.mark.parametrize(
    ("annotations", "measured", "expected", "warnings"),
    [
        pytest.param({}, None, NO_LOAD, [], id="nothing-known"),
        pytest.param(
            {}, metrics(seconds_ago=30), NodeLoad(0.25, 0.25, None, 30), [], id="fresh-metrics"
        ),
        pytest.param({}, metrics(seconds_ago=301), NO_LOAD, [], id="stale-metrics-are-missing"),
        pytest.param(
            {}, metrics(seconds_ago=300), NodeLoad(0.25, 0.25, None, 300), [], id="at-the-bound"
        ),
        pytest.param(
            {}, metrics(seconds_ago=-60), NodeLoad(0.25, 0.25, None, 0), [], id="future-is-age-0"
        ),
        pytest.param(
            load_annotations(10, cpu="0.9", gpu="0.41"),
            None,
            NodeLoad(0.9, None, 0.41, 10),
            [],
            id="fresh-annotations",
        ),
        pytest.param(
            load_annotations(600, cpu="0.9", gpu="0.41"), None, NO_LOAD, [], id="stale-annotations"
        ),
        pytest.param(
            load_annotations(100, cpu="0.9", gpu="0.5"),
            metrics(seconds_ago=20),
            NodeLoad(0.25, 0.25, 0.5, 100),
            [],
            id="freshest-per-field-age-is-the-oldest-shown",
        ),
        pytest.param(
            load_annotations(10, cpu="0.9"),
            metrics(seconds_ago=20),
            NodeLoad(0.9, 0.25, None, 20),
            [],
            id="newer-annotation-wins",
        ),
        pytest.param(
            load_annotations(10, gpu="0.5"),
            metrics(seconds_ago=400),
            NodeLoad(None, None, 0.5, 10),
            [],
            id="stale-metrics-fresh-gpu",
        ),
        pytest.param(
            {},
            metrics(cpu="9", memory="0"),
            NodeLoad(1.0, 0.0, None, 0),
            [],
            id="usage-above-allocatable-is-full",
        ),
        pytest.param(
            load_annotations(10, cpu="abc", gpu="0.5"),
            None,
            NodeLoad(None, None, 0.5, 10),
            [
                "Node n1: metadata.annotations[\"load.policyengine.io/cpu\"]: 'abc' is not a "
                "fraction between 0 and 1; ignored"
            ],
            id="malformed-value",
        ),
        pytest.param(
            load_annotations(10, memory="1.5"),
            None,
            NO_LOAD,
            [
                "Node n1: metadata.annotations[\"load.policyengine.io/memory\"]: '1.5' is not a "
                "fraction between 0 and 1; ignored"
            ],
            id="out-of-range",
        ),
        pytest.param(
            load_annotations(10, gpu="nan"),
            None,
            NO_LOAD,
            [
                "Node n1: metadata.annotations[\"load.policyengine.io/gpu\"]: 'nan' is not a "
                "fraction between 0 and 1; ignored"
            ],
            id="nan",
        ),
        pytest.param(
            load_annotations(None, cpu="0.5"),
            None,
            NO_LOAD,
            [
                'Node n1: metadata.annotations["load.policyengine.io/timestamp"]: missing; '
                "the node's load annotations are ignored"
            ],
            id="no-timestamp",
        ),
        pytest.param(
            {"load.policyengine.io/cpu": "0.5", "load.policyengine.io/timestamp": "yesterday"},
            metrics(seconds_ago=5),
            NodeLoad(0.25, 0.25, None, 5),
            [
                "Node n1: metadata.annotations[\"load.policyengine.io/timestamp\"]: 'yesterday' "
                "is not an RFC 3339 time; the node's load annotations are ignored"
            ],
            id="bad-timestamp-metrics-still-count",
        ),
    ],
)
def test_resolve_load(
    annotations: dict[str, str],
    measured: NodeMetrics | None,
    expected: NodeLoad,
    warnings: list[str],
) -> None:
    assert resolve_load(node(annotations=annotations), measured, NOW) == (expected, warnings)


def test_max_age_is_configurable() -> None:
    short = dt.timedelta(seconds=10)
    assert resolve_load(node(), metrics(seconds_ago=11), NOW, short)[0] == NO_LOAD
    assert resolve_load(node(), metrics(seconds_ago=10), NOW, short)[0].cpu == 0.25
    assert dt.timedelta(minutes=5) == DEFAULT_MAX_AGE


def test_node_without_allocatable_cpu_has_no_cpu_fraction() -> None:
    assert resolve_load(node(cpu="0"), metrics(), NOW)[0] == NodeLoad(None, 0.25, None, 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"timestamp": None}, "NodeMetrics n1: timestamp: is required"),
        ({"timestamp": "noon"}, "NodeMetrics n1: timestamp: 'noon' is not an RFC 3339 time"),
        ({"usage": "x"}, "NodeMetrics n1: usage: expected a mapping, got string"),
        ({"metadata": {}}, "NodeMetrics <unnamed>: metadata.name: is required"),
    ],
    ids=["timestamp=None", "timestamp=noon", "usage=x", "metadata=empty"],
)
def test_malformed_node_metrics(change: dict[str, Any], message: str) -> None:
    raw: dict[str, Any] = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": "n1"},
        "timestamp": at(0),
        "usage": {"cpu": "1"},
    }
    raw.update(change)
    if raw["timestamp"] is None:
        del raw["timestamp"]
    with pytest.raises(ModelError) as error:
        parse_node_metrics(raw)
    assert str(error.value) == message


def test_node_metrics_kind_needs_the_metrics_group() -> None:
    assert is_node_metrics_object({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics"})
    assert not is_node_metrics_object({"apiVersion": "example.com/v1", "kind": "NodeMetrics"})


def test_snapshot_now_is_its_newest_reading() -> None:
    nodes = [node("n1", load_annotations(50, gpu="0.5")), node("n2")]
    assert newest_reading(nodes, [metrics("n2", seconds_ago=400)]) == NOW - dt.timedelta(seconds=50)
    assert newest_reading([node("n2")], []) is None
    # Relative to the snapshot's own newest reading, n2's metrics are 350 s old: stale.
    loads, warnings = resolve_loads(nodes, [metrics("n2", seconds_ago=400)], None)
    assert loads == {"n1": NodeLoad(None, None, 0.5, 0)} and warnings == []


def test_snapshot_file_with_node_metrics() -> None:
    text = f"""
apiVersion: v1
kind: List
items:
- kind: Node
  metadata: {{name: a}}
  status: {{allocatable: {{cpu: "8", memory: 8Gi, pods: "10"}}}}
- kind: Node
  metadata: {{name: b}}
  status: {{allocatable: {{cpu: "8", memory: 8Gi, pods: "10"}}}}
- apiVersion: metrics.k8s.io/v1beta1
  kind: NodeMetricsList
  items:
  - metadata: {{name: a}}
    timestamp: "{at(0)}"
    window: 30s
    usage: {{cpu: 2, memory: 2Gi}}
  - metadata: {{name: gone}}
    timestamp: "{at(0)}"
    usage: {{cpu: 2, memory: 2Gi}}
"""
    loaded = parse_snapshot_text(text)
    assert [m.name for m in loaded.node_metrics] == ["a", "gone"]
    assert loaded.warnings == ()
    snapshot, _, warnings = snapshot_from_objects(
        loaded.nodes, loaded.pods, node_metrics=loaded.node_metrics
    )
    assert warnings == ()
    assert snapshot.node("a").load == NodeLoad(0.25, 0.25, None, 0)
    assert snapshot.node("b").load == NO_LOAD


def test_load_survives_pod_changes_and_only_changed_nodes_are_replaced() -> None:
    loaded = parse_snapshot_text(
        "{"
        '"kind": "List", "items": ['
        '{"kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "4", "pods": "9"}}},'
        '{"kind": "Node", "metadata": {"name": "b"}, "status": {"allocatable": {"cpu": "4", "pods": "9"}}}'
        "]}"
    )
    snapshot, _, _ = snapshot_from_objects(loaded.nodes, loaded.pods)
    busy = NodeLoad(0.5, None, None, 3)
    loaded_snapshot = snapshot.with_loads({"a": busy})
    assert loaded_snapshot.node("b") is snapshot.node("b")
    assert loaded_snapshot.node("a").load == busy
    assert loaded_snapshot.with_loads({"a": busy}) is loaded_snapshot
    moved = loaded_snapshot.with_pod(make_pod("p"), "a")
    assert moved.node("a").load == busy
    assert moved.without_pod("default/p").node("a").load == busy
