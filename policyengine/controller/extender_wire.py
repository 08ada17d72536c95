"""kube-scheduler's extender requests as it sends them, read into typed values.

The JSON is ``k8s.io/kube-scheduler/extender/v1``'s, with Go's field names (capitalised, no
JSON tags): ``ExtenderArgs`` for filter and prioritize, ``ExtenderPreemptionArgs`` for preempt,
``ExtenderBindingArgs`` for bind. Each reader checks what it reads and raises
:class:`BadRequest` naming the field (the 400's message), so ``controller.extender`` works on
values it can trust.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from policyengine.controller.wirejson import JSON
from policyengine.model.errors import ModelError
from policyengine.model.objects import Pod
from policyengine.model.parse import parse_pod


class BadRequest(ValueError):
    """The request is not ExtenderArgs; ``str(error)`` is the 400's message."""


@dataclass(frozen=True)
class ExtenderArgs:
    """One request: the pod, and the candidate nodes whole (``nodes``) or by name."""

    pod: Pod
    nodes: tuple[JSON, ...] | None  # the NodeList's items, as sent
    node_names: tuple[str, ...] | None

    @property
    def candidates(self) -> tuple[str, ...]:
        if self.node_names is not None:
            return self.node_names
        return tuple(str((n.get("metadata") or {}).get("name") or "") for n in self.nodes or ())


def parse_args(body: bytes) -> ExtenderArgs:
    """``ExtenderArgs`` from a request body; raises :class:`BadRequest` saying what is wrong."""
    data = _json_object(body, "ExtenderArgs")
    pod = _pod(data, "ExtenderArgs")
    nodes = data.get("Nodes")
    names = data.get("NodeNames")
    if nodes is None and names is None:
        raise BadRequest("ExtenderArgs has neither Nodes nor NodeNames")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadRequest("ExtenderArgs.NodeNames must be a list of node names")
        return ExtenderArgs(pod, None, tuple(names))
    if not isinstance(nodes, dict) or not isinstance(nodes.get("items") or [], list):
        raise BadRequest('ExtenderArgs.Nodes must be a NodeList ({"items": [...]})')
    items = tuple(nodes.get("items") or ())
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not (item.get("metadata") or {}).get("name"):
            raise BadRequest(f"ExtenderArgs.Nodes.items[{index}] is not a node with a name")
    return ExtenderArgs(pod, items, None)


@dataclass(frozen=True)
class PreemptionArgs:
    """``ExtenderPreemptionArgs``: the preemptor, and per candidate node the victims
    kube-scheduler chose there — whole pods (``NodeNameToVictims``, ``nodeCacheCapable: false``)
    or their UIDs (``NodeNameToMetaVictims``) — and the budget violations it counted."""

    pod: Pod
    victims: dict[str, tuple[Pod, ...]] | None
    victim_uids: dict[str, tuple[str, ...]] | None
    pdb_violations: dict[str, int]


def parse_preemption_args(body: bytes) -> PreemptionArgs:
    """``ExtenderPreemptionArgs`` from a request body; raises :class:`BadRequest`."""
    data = _json_object(body, "ExtenderPreemptionArgs")
    pod = _pod(data, "ExtenderPreemptionArgs")
    whole = data.get("NodeNameToVictims")
    meta = data.get("NodeNameToMetaVictims")
    if whole is None and meta is None:
        raise BadRequest(
            "ExtenderPreemptionArgs has neither NodeNameToVictims nor NodeNameToMetaVictims"
        )
    field_ = "NodeNameToMetaVictims" if meta is not None else "NodeNameToVictims"
    given = meta if meta is not None else whole
    if not isinstance(given, dict):
        raise BadRequest(f"ExtenderPreemptionArgs.{field_} must be an object (node -> victims)")
    victims: dict[str, tuple[Pod, ...]] = {}
    uids: dict[str, tuple[str, ...]] = {}
    violations: dict[str, int] = {}
    for node, entry in given.items():
        where = f"ExtenderPreemptionArgs.{field_}[{node}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("Pods") or [], list):
            raise BadRequest(f'{where} must be {{"Pods": [...], "NumPDBViolations": n}}')
        count = entry.get("NumPDBViolations") or 0
        if type(count) is not int:
            raise BadRequest(f"{where}.NumPDBViolations must be an integer")
        violations[node] = count
        pods = entry.get("Pods") or []
        if meta is not None:
            if not all(isinstance(p, dict) and isinstance(p.get("UID"), str) for p in pods):
                raise BadRequest(f'{where}.Pods must be [{{"UID": "..."}}, ...]')
            uids[node] = tuple(p["UID"] for p in pods)
            continue
        parsed = []
        for index, raw in enumerate(pods):
            if not isinstance(raw, dict):
                raise BadRequest(f"{where}.Pods[{index}] is not a pod")
            try:
                parsed.append(parse_pod(raw))
            except ModelError as error:
                raise BadRequest(f"{where}.Pods[{index}]: {error}") from None
        victims[node] = tuple(parsed)
    if meta is not None:
        return PreemptionArgs(pod, None, uids, violations)
    return PreemptionArgs(pod, victims, None, violations)


@dataclass(frozen=True)
class BindingArgs:
    """``ExtenderBindingArgs``: which pod (name, namespace, UID) goes to which node."""

    name: str
    namespace: str
    uid: str
    node: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def parse_binding_args(body: bytes) -> BindingArgs:
    """``ExtenderBindingArgs`` from a request body; raises :class:`BadRequest`."""
    data = _json_object(body, "ExtenderBindingArgs")
    values = []
    for field_ in ("PodName", "PodNamespace", "PodUID", "Node"):
        value = data.get(field_, "")
        if not isinstance(value, str) or (not value and field_ != "PodUID"):
            raise BadRequest(f"ExtenderBindingArgs.{field_} must be a non-empty string")
        values.append(value)
    return BindingArgs(*values)


def _json_object(body: bytes, kind: str) -> JSON:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequest(f"the body is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"the body must be a JSON object ({kind})")
    return data


def _pod(data: JSON, kind: str) -> Pod:
    raw_pod = data.get("Pod")
    if not isinstance(raw_pod, dict):
        raise BadRequest(f"{kind}.Pod is missing or not an object")
    try:
        return parse_pod(raw_pod)
    except ModelError as error:
        raise BadRequest(f"{kind}.Pod: {error}") from None
