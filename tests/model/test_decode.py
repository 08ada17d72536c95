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
    if items and not any(c in text for c in "&*!"):  # else the cut may (safely) decline
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
    (LIST.replace("kind: List", "kind: [List]"), ["document"]),
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
        "a kind that is not a string",
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


# Plain scalars as a person or a tool might write them: numbers in every YAML 1.1 and 1.2 form,
# the words each version reads as booleans or nulls, timestamps, and ordinary text.
_plain = st.one_of(
    st.text(alphabet="0123456789+-._:eExXoObB", min_size=1, max_size=10),
    st.sampled_from(
        [
            "yes",
            "No",
            "ON",
            "off",
            "y",
            "n",
            "True",
            "FALSE",
            "null",
            "Null",
            "~",
            ".inf",
            "-.Inf",
            ".NaN",
            "2025-01-06",
            "2025-01-06T08:00:00Z",
            "1:30",
            "190:20:30",
            "0o17",
            "0x1F",
            "0b11",
            "010",
            "1_000",
            "1e3",
            "1.5e+3",
            "<<",
            "=",
            "nginx",
            "on-call",
            "12345678901234567890",
            "-Xmx4g",
            "v1.28.7",
            "100m",
            "1Gi",
            "[]",
            "{}",
            "[1, yes]",
        ]
    ),
    st.from_regex(r"[a-z][a-z0-9.\-]{0,12}", fullmatch=True),
)


@settings(max_examples=500, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), _plain),
        max_size=6,
        unique_by=lambda p: p[0],
    ),
    entries=st.lists(_plain, max_size=4),
)
def test_plain_scalars_resolve_as_pyyaml_resolves_them(
    pairs: list[tuple[str, str]], entries: list[str]
) -> None:
    lines = ["apiVersion: v1", "items:", "- kind: Pod"]
    lines += [f"  {key}: {value}" for key, value in pairs]
    if entries:
        lines.append("  list:")
        lines += [f"  - {value}" for value in entries]
    lines.append("kind: List")
    text = "\n".join(lines) + "\n"
    try:
        expected = list(yaml.safe_load_all(text))
    except yaml.YAMLError:
        with pytest.raises(ModelError):
            decoded(text)
        return
    assert decoded(text) == expected


@pytest.mark.parametrize(
    ("token", "ambiguous"),
    [
        ("yes", True),
        ("Off", True),
        ("010", True),
        ("0o17", True),
        ("1:30", True),
        ("1_000", True),
        ("1e3", True),
        ("2025-01-06", True),
        ("<<", True),
        ("=", True),
        ("[1, 2]", True),
        ("12345678901234567890", True),
        (".inf", True),
        ("0", False),
        ("-17", False),
        ("2.5", False),
        ("nginx", False),
        ("[]", False),
        ("{}", False),
        ('"010"', False),
        ("'yes'", False),
        ("-Xmx4g", False),
        ("v1", False),
    ],
    ids=str,
)
def test_which_plain_scalars_go_to_pyyaml(token: str, ambiguous: bool) -> None:
    assert decode._ambiguous(f"a: {token}\n") is ambiguous
    assert decode._ambiguous(f"- {token}\n") is ambiguous


def test_loading_reports_each_file_by_name(tmp_path: Any) -> None:
    from policyengine.model.snapshot_io import load_snapshot

    (tmp_path / "a.yaml").write_text(LIST)
    (tmp_path / "b.yaml").write_text(LIST.replace("n1", "n2"))
    seen: dict[str, int] = {}

    def progress(name: str) -> decode.Progress:
        return lambda done, total: seen.__setitem__(name, done)

    loaded = load_snapshot(tmp_path, progress=progress)
    assert [n.name for n in loaded.nodes] == ["n1", "n2"]
    assert seen == {"a.yaml": len(LIST), "b.yaml": len(LIST)}


def test_a_list_whose_kind_is_not_a_string_is_a_model_error() -> None:
    with pytest.raises(ModelError) as error:
        parse_snapshot_text(LIST.replace("kind: List", "kind: [List]"), "snap.yaml")
    assert str(error.value) == "snap.yaml: object <unnamed>: kind: expected a string, got list"
