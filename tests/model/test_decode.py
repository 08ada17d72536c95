"""The fast snapshot decoder reads exactly what ``yaml.safe_load_all``/``json.loads`` read,
item by item where it can (``model/decode.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from policyengine.model import decode
from policyengine.model.errors import ModelError
from policyengine.model.snapshot_io import _whole, parse_snapshot_text
from policyengine.synthetic import to_kubectl_yaml

LISTS = frozenset({"List", "NodeList", "PodList"})


def decoded(text: str) -> list[Any]:
    return _whole(decode.documents(text, "snap.yaml", list_kinds=LISTS))


def streamed(text: str) -> list[str]:
    """What the decoder handed over, by shape: how the text was read."""
    shapes = {decode.ListHead: "head", decode.ListItem: "item"}
    return [
        "restart" if doc is decode.RESTART else shapes.get(type(doc), "document")
        for doc in decode.documents(text, "snap.yaml", list_kinds=LISTS)
    ]


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.sampled_from(["yes", "no", "on", "~", "1e3", "0x1F", "- x", "a: b", "#c", "'", '"']),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_items = st.lists(
    st.dictionaries(st.text(max_size=8), _values, max_size=5).map(lambda d: {"kind": "Pod", **d}),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(items=_items, flow=st.booleans())
def test_a_dumped_list_decodes_as_pyyaml_reads_it(items: list[dict[str, Any]], flow: bool) -> None:
    text = yaml.safe_dump(
        {"apiVersion": "v1", "kind": "List", "items": items},
        default_flow_style=None if flow else False,
        allow_unicode=True,
    )
    assert decoded(text) == list(yaml.safe_load_all(text))


@settings(max_examples=200, deadline=None)
@given(items=_items)
def test_a_kubectl_layout_list_decodes_as_pyyaml_reads_it(items: list[dict[str, Any]]) -> None:
    text = to_kubectl_yaml(items)
    assert decoded(text) == list(yaml.safe_load_all(text))
    if items:
        assert streamed(text) == ["head"] + ["item"] * len(items)


@settings(max_examples=200, deadline=None)
@given(value=_values)
def test_json_decodes_as_json_reads_it(value: Any) -> None:
    text = json.dumps({"kind": "List", "items": [value]})
    assert decoded(text) == [json.loads(text)]


LIST = "apiVersion: v1\nitems:\n- kind: Node\n  metadata:\n    name: n1\n- kind: Namespace\n  metadata:\n    name: p\nkind: List\nmetadata:\n  resourceVersion: ''\n"

# (text, how it is read) — the cut where kubectl's layout is certain, the whole parse otherwise.
CASES = [
    (LIST, ["head", "item", "item"]),
    (LIST.replace("kind: List", "kind: PodList"), ["head", "item", "item"]),
    (LIST.replace("kind: List", "kind: Thing"), ["document"]),
    ("%YAML 1.1\n---\n" + LIST, ["document"]),
    (LIST.replace("name: n1", "name: &a n1").replace("name: p", "name: *a"), ["document"]),
    (LIST.replace("    name: p", "\tname: p").replace("\t", "    "), ["head", "item", "item"]),
    ("apiVersion: v1\nitems: []\nkind: List\n", ["document"]),
    ("apiVersion: v1\nitems:\n  - kind: Node\nkind: List\n", ["document"]),
    (LIST + "---\n" + LIST, ["document", "document"]),
    (
        'apiVersion: v1\nitems:\n- kind: Pod\n  metadata:\n    name: "a\n- b"\nkind: List\n',
        ["head", "restart", "document"],
    ),
    (
        '{"kind": "List", "items": [{"kind": "Node", "n": 123456789012345678901234567890}]}',
        ["document"],
    ),
    ('{"kind": "Node", "load": NaN}', ["document"]),
    ("{kind: Node, metadata: {name: n1}}", ["document"]),
]


@pytest.mark.parametrize(
    ("text", "shapes"),
    CASES,
    ids=[
        "kubectl list",
        "pod list",
        "not a list kind",
        "directive",
        "anchor and alias",
        "indented with spaces",
        "empty items",
        "indented items",
        "two documents",
        "quoted scalar across an entry",
        "json big integer",
        "json NaN",
        "yaml flow mapping",
    ],
)
def test_each_text_is_read_as_pyyaml_reads_it(text: str, shapes: list[str]) -> None:
    assert streamed(text) == shapes
    expected = [json.loads(text)] if text.startswith('{"') else list(yaml.safe_load_all(text))
    assert decoded(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            LIST.replace("    name: p", "    name: [p"),
            "snap.yaml:9:5: not valid YAML or JSON: expected ',' or ']', but got ':'",
        ),
        ("a: b: c\n", "snap.yaml:1:5: not valid YAML or JSON: mapping values are not allowed here"),
        (
            '{"kind": ',
            "snap.yaml:1:10: not valid YAML or JSON: expected the node content, but found '<stream end>'",
        ),
    ],
    ids=["bad item", "bad document", "bad json"],
)
def test_errors_name_the_line_and_column_as_pyyaml_does(text: str, message: str) -> None:
    with pytest.raises(ModelError) as error:
        decoded(text)
    assert str(error.value) == message


def test_progress_reaches_the_whole_text() -> None:
    seen: list[tuple[int, int]] = []
    loaded = parse_snapshot_text(LIST, "snap.yaml", lambda done, total: seen.append((done, total)))
    assert [n.name for n in loaded.nodes] == ["n1"]
    assert seen and seen[-1][1] == len(LIST) and all(a <= b for a, b in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
