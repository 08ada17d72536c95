"""``metadata.managedFields`` bookkeeping, close enough to server-side apply's to match the captures.

Nothing in a scheduler reads managedFields, but every object the real apiserver returns carries
them, and the capture replays compare whole bodies.  The rules here reproduce what the captures
show: an *Update* entry per (manager, subresource) owning the fields it changed, compared with
the Go zero object of the kind (so ``spec``, ``status`` and ``null`` slices are never "added");
an *Apply* entry owning the leaves of the applied configuration; ``time`` refreshed only when a
manager's set changes; entries sorted as apimachinery sorts them.

Every write of the end-to-end benchmark (an Event created, a pod's status patched) records
managedFields, so the flattening is kept lean: a list's element keys are worked out once, and
a top-level field no path of the scope can lie under (the spec of a status write, kind and
apiVersion) is not flattened at all.
"""

from __future__ import annotations

import json
from typing import Any

from .patch import MERGE_KEYS, PRIMITIVE_MERGE
from .store import clone

JSON = dict[str, Any]
Path = tuple[str, ...]

ATOMIC = frozenset({"regarding", "involvedObject", "related"})
METADATA_FIELDS = frozenset({"labels", "annotations", "finalizers", "ownerReferences"})

# The JSON of the empty Go object per kind: what a create is compared with.
ZERO: dict[str, JSON] = {
    "Pod": {"metadata": {}, "spec": {"containers": None}, "status": {}},
    "Node": {"metadata": {}, "spec": {}, "status": {}},
    "Event@v1": {
        "metadata": {},
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    },
    "Event@events.k8s.io/v1": {
        "metadata": {},
        "eventTime": None,
        "regarding": {},
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    },
    "Lease": {"metadata": {}, "spec": {}},
    "ConfigMap": {"metadata": {}},
    "Namespace": {"metadata": {}, "spec": {}, "status": {}},
    "PodDisruptionBudget": {"metadata": {}, "spec": {}, "status": {}},
}


def zero_object(kind: str, api_version: str, custom: bool) -> JSON:
    if custom:
        return {"metadata": {}}
    found = ZERO.get(f"{kind}@{api_version}") or ZERO.get(kind)
    if found is None:
        return {"metadata": {}, "spec": {}, "status": {}}
    result: JSON = clone(found)
    return result


def _elem_key(field: str, item: Any) -> str | None:
    if field in PRIMITIVE_MERGE:
        return "v:" + json.dumps(item, separators=(",", ":"))
    mk = MERGE_KEYS.get(field)
    if mk and isinstance(item, dict) and mk in item:
        key = {mk: item[mk]}
        if field == "ports" and "protocol" in item:
            key["protocol"] = item["protocol"]
        return "k:" + json.dumps(key, sort_keys=True, separators=(",", ":"))
    return None


def _in_scope(top: str, child: str | None, subresource: str, has_status: bool) -> bool:
    if top in ("apiVersion", "kind"):
        return False
    if subresource == "status":
        return top == "status"
    if top == "status" and has_status:
        return False
    if top == "metadata":
        return child is None or child in METADATA_FIELDS
    return True


def _flatten(value: Any, field: str, prefix: Path, out: dict[Path, Any]) -> None:
    """Every path under ``value`` with its value (containers map to a marker)."""
    if isinstance(value, dict) and field not in ATOMIC:
        for key, child in value.items():
            _flatten_child(child, key, (*prefix, f"f:{key}"), out)
    elif isinstance(value, list):
        _flatten_items(value, _list_keys(field, value), field, prefix, out)


def _flatten_child(child: Any, key: str, path: Path, out: dict[Path, Any]) -> None:
    """``child`` at ``path`` (a map or keyed list as the container marker) and every path
    under it."""
    if isinstance(child, dict):
        out[path] = _CONTAINER if child and key not in ATOMIC else child
        if key not in ATOMIC:
            for sub, grandchild in child.items():
                _flatten_child(grandchild, sub, (*path, f"f:{sub}"), out)
    elif isinstance(child, list):
        keys = _list_keys(key, child)
        out[path] = _CONTAINER if keys is not None else child
        _flatten_items(child, keys, key, path, out)
    else:
        out[path] = child


def _list_keys(field: str, items: list[Any]) -> list[str] | None:
    """The element keys of a non-empty list whose every element has one, else None."""
    if not items:
        return None
    keys = []
    for item in items:
        key = _elem_key(field, item)
        if key is None:
            return None
        keys.append(key)
    return keys


def _flatten_items(
    items: list[Any], keys: list[str] | None, field: str, prefix: Path, out: dict[Path, Any]
) -> None:
    if keys is None:
        return
    for key, item in zip(keys, items, strict=True):
        path = (*prefix, key)
        if key.startswith("v:"):
            out[path] = item
        else:
            _flatten_child(item, field, path, out)


class _Container:
    """Placeholder for a map or associative list in a flattened object."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Container)

    def __hash__(self) -> int:
        return 1


_CONTAINER = _Container()


def _outside(top: str, subresource: str, has_status: bool) -> bool:
    """Whether no path under the top-level field ``top`` is in the scope."""
    if top in ("apiVersion", "kind"):
        return True
    if subresource == "status":
        return top != "status"
    return top == "status" and has_status


def _scoped(obj: JSON, subresource: str, has_status: bool) -> dict[Path, Any]:
    """The flattened paths of ``obj`` that ``_in_scope`` keeps.  Past ``_outside``, only
    metadata has paths out of scope (itself, and its fields but labels & co)."""
    if not isinstance(obj, dict):
        return _scoped_any(obj, subresource, has_status)
    out: dict[Path, Any] = {}
    for key, child in obj.items():
        if _outside(key, subresource, has_status):
            continue
        if key != "metadata":
            _flatten_child(child, key, (f"f:{key}",), out)
        elif isinstance(child, dict):  # a metadata that is no map has no paths under it
            for field, value in child.items():
                if field in METADATA_FIELDS:
                    _flatten_child(value, field, ("f:metadata", f"f:{field}"), out)
    return out


def _scoped_any(obj: Any, subresource: str, has_status: bool) -> dict[Path, Any]:
    flat: dict[Path, Any] = {}
    _flatten(obj, "", (), flat)
    result = {}
    for path, value in flat.items():
        top = path[0][2:]
        child = path[1][2:] if len(path) > 1 else None
        if _in_scope(top, child, subresource, has_status):
            if top == "metadata" and len(path) == 1:
                continue
            result[path] = value
    return result


def changed_paths(
    old: JSON, new: JSON, subresource: str, has_status: bool
) -> tuple[set[Path], set[Path]]:
    """(paths added or modified in ``new``, paths present in ``new``)."""
    before = _scoped(old, subresource, has_status)
    after = _scoped(new, subresource, has_status)
    changed = set()
    for path, value in after.items():
        if path not in before or (not isinstance(value, _Container) and value != before[path]):
            changed.add(path)
    return changed, set(after)


def applied_paths(config: JSON, subresource: str, has_status: bool) -> set[Path]:
    """The set an Apply manager owns: leaves and list elements, not the maps around them."""
    flat = _scoped(config, subresource, has_status)
    return {
        p for p, v in flat.items() if not isinstance(v, _Container) or p[-1][:2] in ("k:", "v:")
    }


# frozenset of paths -> its fieldsV1 tree: objects of one shape (a scheduler's Events) share it
_trees: dict[frozenset[Path], JSON] = {}
_TREES_KEPT = 1024


def to_fields_v1(paths: set[Path]) -> JSON:
    key = frozenset(paths)
    tree = _trees.get(key)
    if tree is None:
        tree = _build_fields_v1(paths)
        if len(_trees) >= _TREES_KEPT:
            _trees.clear()
        _trees[key] = tree
    built: JSON = clone(tree)  # the caller's to keep (and change)
    return built


def _build_fields_v1(paths: set[Path]) -> JSON:
    tree: JSON = {}
    for path in paths:
        node = tree
        for part in path:
            node = node.setdefault(part, {})
    for path in paths:
        node = tree
        for part in path:
            node = node[part]
        if node and "." not in node:
            node["."] = {}
    return _sorted(tree)


def _sorted(tree: JSON) -> JSON:
    return {k: _sorted(tree[k]) for k in sorted(tree)}


def from_fields_v1(tree: JSON, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, child in (tree or {}).items():
        if key == ".":
            out.add(prefix)
            continue
        path = (*prefix, key)
        if not child:
            out.add(path)
        else:
            out |= from_fields_v1(child, path)
    return out


def _sort(entries: list[JSON]) -> list[JSON]:
    def key(e: JSON) -> tuple[str, str, str, str, str]:
        return (
            e.get("operation", ""),
            e.get("time") or "",
            e.get("manager", ""),
            e.get("apiVersion", ""),
            e.get("subresource", ""),
        )

    return sorted(entries, key=key)


def record(
    entries: list[JSON] | None,
    *,
    old: JSON,
    new: JSON,
    manager: str,
    api_version: str,
    subresource: str,
    has_status: bool,
    now: str,
    apply_config: JSON | None = None,
) -> list[JSON]:
    """The managedFields after ``manager`` turned ``old`` into ``new``."""
    changed, present = changed_paths(old, new, subresource, has_status)
    operation = "Apply" if apply_config is not None else "Update"
    owned = (
        applied_paths(apply_config, subresource, has_status) if apply_config is not None else set()
    )
    result: list[JSON] = []
    mine: JSON | None = None
    scopes: dict[str, set[Path]] = {subresource: present}
    for entry in clone(entries or []):
        scope = entry.get("subresource", "")
        if scope not in scopes:
            scopes[scope] = set(_scoped(new, scope, has_status))
        paths = from_fields_v1(entry.get("fieldsV1") or {}) & scopes[scope]
        same = (
            entry.get("manager") == manager
            and entry.get("operation") == operation
            and scope == subresource
        )
        if same:
            mine = entry
            mine["_paths"] = paths
            continue
        paths -= changed
        if paths:
            if paths != from_fields_v1(entry.get("fieldsV1") or {}):
                entry["fieldsV1"] = to_fields_v1(paths)
            result.append(entry)
    if operation == "Apply":
        new_paths = owned & present
    else:
        previous = mine["_paths"] if mine is not None else set()
        new_paths = (previous | changed) & present
    if new_paths:
        entry = {"manager": manager, "operation": operation, "apiVersion": api_version}
        if operation == "Update":
            keep_time = mine is not None and mine["_paths"] == new_paths and mine.get("time")
            entry["time"] = mine["time"] if keep_time and mine is not None else now
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = to_fields_v1(new_paths)
        if subresource:
            entry["subresource"] = subresource
        result.append(entry)
    return _sort(result)
