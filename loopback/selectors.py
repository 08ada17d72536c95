"""Label and field selectors, parsed and matched as the apiserver does.

Informers filter server-side (kube-scheduler's pod informer lists
``status.phase!=Succeeded,status.phase!=Failed``; a node-local informer uses
``spec.nodeName=``), so the loopback server must accept the same syntax, reject unsupported
field labels with the real 400, and apply both to lists and watches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import APIError, bad_request

JSON = dict[str, Any]


@dataclass(frozen=True)
class LabelRequirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "=":
            return present and value == self.values[0]
        if self.op == "!=":
            return not present or value != self.values[0]
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("gt", "lt"):
            if not present:
                return False
            try:
                have, want = int(str(value)), int(self.values[0])
            except ValueError:
                return False
            return have > want if self.op == "gt" else have < want
        return False


_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_CMP_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=|>|<)\s*([A-Za-z0-9_.-]*)\s*$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_label_selector(text: str | None) -> list[LabelRequirement]:
    if not text:
        return []
    reqs: list[LabelRequirement] = []
    for raw in _split_top(text):
        if not raw.strip():
            raise bad_request(
                f"unable to parse requirement: found '', expected: identifier in {text!r}"
            )
        m = _CMP_RE.match(raw)
        if m:
            key, op, value = m.groups()
            op = {"==": "=", ">": "gt", "<": "lt"}.get(op, op)
            reqs.append(LabelRequirement(key, op, (value,)))
            continue
        m = _SET_RE.match(raw)
        if m:
            neg, key, setop, values = m.groups()
            if setop:
                if neg:
                    raise bad_request(f"unable to parse requirement: {raw.strip()}")
                vals = tuple(v.strip() for v in values.split(",") if v.strip())
                reqs.append(LabelRequirement(key, setop, vals))
            else:
                reqs.append(LabelRequirement(key, "!" if neg else "exists"))
            continue
        raise bad_request(f"unable to parse requirement: {raw.strip()}")
    return reqs


def labels_match(reqs: list[LabelRequirement], obj: JSON) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str

    def matches(self, fields: Mapping[str, str]) -> bool:
        have = fields.get(self.field, "")
        return have == self.value if self.op == "=" else have != self.value


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str | None, supported: set[str]) -> list[FieldRequirement]:
    if not text:
        return []
    reqs: list[FieldRequirement] = []
    for raw in re.split(r"(?<!\\),", text):
        if not raw:
            continue
        m = re.match(r"^([^=!]+?)(!=|==|=)(.*)$", raw)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{raw}'")
        field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3))
        if field not in supported:
            raise bad_request(f"field label not supported: {field}")
        reqs.append(FieldRequirement(field, "!=" if op == "!=" else "=", value))
    return reqs


def fields_match(reqs: list[FieldRequirement], fields: Mapping[str, str]) -> bool:
    return all(r.matches(fields) for r in reqs)


def object_fields_match(reqs: list[FieldRequirement], resource_id: str, obj: JSON) -> bool:
    """``fields_match(reqs, extract_fields(resource_id, obj))``, reading only the fields the
    requirements name (a watch tests every change against its selector, twice)."""
    return all(r.matches({r.field: field_value(resource_id, obj, r.field)}) for r in reqs)


def _get(obj: JSON, dotted: str) -> Any:
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _extractor(*paths: str) -> Callable[[JSON], dict[str, str]]:
    def extract(obj: JSON) -> dict[str, str]:
        out = {"metadata.name": _str(_get(obj, "metadata.name"))}
        if (obj.get("metadata") or {}).get("namespace") is not None:
            out["metadata.namespace"] = _str(_get(obj, "metadata.namespace"))
        for path in paths:
            out[path] = _str(_get(obj, path))
        return out

    return extract


_POD_FIELDS = (
    "spec.nodeName",
    "spec.schedulerName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_CORE_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
_V1_EVENT_FIELDS = (
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
)

FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "pods": _POD_FIELDS,
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "events": _CORE_EVENT_FIELDS,
    "events.events.k8s.io": _V1_EVENT_FIELDS,
}


def field_labels(resource_id: str) -> tuple[str, ...]:
    return FIELD_LABELS.get(resource_id, ())


def field_value(resource_id: str, obj: JSON, name: str) -> str:
    """The value ``extract_fields(resource_id, obj)`` has for ``name`` ("" when it has none,
    which is what a requirement compares an absent field as)."""
    if resource_id == "events" and name == "source":
        return _str(_get(obj, "source.component"))
    if name in ("metadata.name", "metadata.namespace") or name in field_labels(resource_id):
        return _str(_get(obj, name))
    return ""


def extract_fields(resource_id: str, obj: JSON) -> dict[str, str]:
    fields = _extractor(*field_labels(resource_id))(obj)
    if resource_id == "events":
        fields["source"] = _str(_get(obj, "source.component"))
    return fields


def supported_fields(resource_id: str, namespaced: bool) -> set[str]:
    base = {"metadata.name"}
    if namespaced:
        base.add("metadata.namespace")
    return base | set(field_labels(resource_id))


def check_selectors(
    label_selector: str | None, field_selector: str | None, resource_id: str, namespaced: bool
) -> tuple[list[LabelRequirement], list[FieldRequirement]]:
    try:
        labels = parse_label_selector(label_selector)
    except APIError:
        raise
    fields = parse_field_selector(field_selector, supported_fields(resource_id, namespaced))
    return labels, fields
