"""The four PATCH flavours, with the list semantics the captures show.

kube-scheduler patches pod status with a *strategic merge patch* whose conditions merge by
``type`` (05-patch-status-strategic-second-condition: the new condition goes first, the old
one is kept), while a JSON merge patch replaces the whole list (05-...-merge-second-condition).
Getting that difference right is what lets a test see a scheduler clobber conditions.

Every flavour returns a new document and leaves its target alone.  The strategic merge copies
the target once (``store.clone``) and then merges into that copy in place, rather than copying
each map again on the way down: a scheduler's status patch of a pod did that four times.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from .store import clone

JSON = dict[str, Any]

# Strategic-merge keys of the lists a scheduler touches, by field name (the Go struct tags
# ``patchStrategy:"merge" patchMergeKey:"..."`` of core/v1, policy/v1 and meta/v1).
MERGE_KEYS: dict[str, str] = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "addresses": "type",
    "podIPs": "ip",
    "hostIPs": "ip",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
# Lists of scalars merged as sets.
PRIMITIVE_MERGE: frozenset[str] = frozenset({"finalizers"})


class PatchError(Exception):
    """A patch that cannot be applied; ``code`` is the HTTP status the apiserver uses."""

    def __init__(self, message: str, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- JSON merge patch (RFC 7386)


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------- strategic merge patch


def strategic_merge_patch(target: Any, patch: Any, keyed: bool = True) -> Any:
    """Apply ``patch`` with strategic-merge rules.  ``keyed=False`` treats every list as
    atomic (used for server-side apply on custom resources)."""
    if not isinstance(patch, dict):
        raise PatchError("invalid JSON document for a strategic merge patch", 400)
    return _smp_map(target if isinstance(target, dict) else {}, patch, keyed, owned=False)


def _strip(value: Any) -> Any:
    """A patch value inserted where nothing existed: drop directives and nulls."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v is not None and not k.startswith("$")}
    if isinstance(value, list):
        return [
            _strip(v) for v in value if not (isinstance(v, dict) and v.get("$patch") == "delete")
        ]
    return value


def _smp_map(original: JSON, patch: JSON, keyed: bool, *, owned: bool = True) -> Any:
    """``original`` merged with ``patch``; merged into in place when ``owned`` (a part of
    the copy the top-level call made), else into a copy."""
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != "$patch"})
    result = original if owned else clone(original)
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    removals: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value or []
        elif key.startswith("$deleteFromPrimitiveList/"):
            removals[key.split("/", 1)[1]] = value or []
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value, keyed)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _smp_list(
                key, current if isinstance(current, list) else [], value, keyed, orders.get(key)
            )
        else:
            result[key] = copy.deepcopy(value)
    for key, values in removals.items():
        if isinstance(result.get(key), list):
            result[key] = [v for v in result[key] if v not in values]
    for key, order in orders.items():
        if key not in patch and isinstance(result.get(key), list):
            result[key] = _apply_order(key, result[key], order)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _apply_order(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    mk = MERGE_KEYS.get(field)

    def ident(item: Any) -> Any:
        if mk and isinstance(item, dict):
            return json.dumps(item.get(mk), sort_keys=True)
        return json.dumps(item, sort_keys=True)

    wanted = [ident(o) for o in order]
    ranked = sorted(
        enumerate(items),
        key=lambda p: (wanted.index(ident(p[1])) if ident(p[1]) in wanted else len(wanted), p[0]),
    )
    return [item for _, item in ranked]


def _smp_list(
    field: str, original: list[Any], patch: list[Any], keyed: bool, order: list[Any] | None
) -> list[Any]:
    if not keyed:
        return _strip(patch)
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [
            _strip(p) for p in patch if not (isinstance(p, dict) and p.get("$patch") == "replace")
        ]
    if field in PRIMITIVE_MERGE:
        merged = list(original)
        for item in patch:
            if item not in merged:
                merged.append(item)
        return merged if order is None else _apply_order(field, merged, order)
    key = MERGE_KEYS.get(field)
    if key is None or not all(isinstance(p, dict) for p in patch):
        return _strip(patch)
    deleted = {json.dumps(p.get(key)) for p in patch if p.get("$patch") == "delete"}
    server_order = [json.dumps(o.get(key)) for o in original if isinstance(o, dict)]
    by_key = {json.dumps(o.get(key)): o for o in original if isinstance(o, dict)}
    from_patch: list[tuple[str, Any]] = []
    for item in patch:
        if item.get("$patch") == "delete":
            continue
        ident = json.dumps(item.get(key))
        base = by_key.get(ident)
        merged = _smp_map(base, item, keyed) if base is not None else _strip(item)
        from_patch.append((ident, merged))
    in_patch = {ident for ident, _ in from_patch}
    server_only = [
        (json.dumps(o.get(key)), o)
        for o in original
        if isinstance(o, dict) and json.dumps(o.get(key)) not in in_patch | deleted
    ]
    result = _merge_sorted(server_only, from_patch, server_order)
    if order is not None:
        result = _apply_order(field, result, order)
    return result


def _merge_sorted(
    left: list[tuple[str, Any]], right: list[tuple[str, Any]], server_order: list[str]
) -> list[Any]:
    """apimachinery's ``mergeSortedSlice``: server-only items keep their place relative to
    patched items that already existed; new patch items come first when in doubt."""
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j][1])
            j += 1
        elif j >= len(right):
            out.append(left[i][1])
            i += 1
        else:
            li = server_order.index(left[i][0]) if left[i][0] in server_order else -1
            ri = server_order.index(right[j][0]) if right[j][0] in server_order else -1
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i][1])
                i += 1
            else:
                out.append(right[j][1])
                j += 1
    return out


# ---------------------------------------------------------------- JSON patch (RFC 6902)


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _parent(doc: Any, pointer: str) -> tuple[Any, str]:
    tokens = _tokens(pointer)
    if not tokens:
        raise PatchError("cannot address the document root")
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchError(f"doc is missing path: {pointer!r}")
            cur = cur[tok]
        elif isinstance(cur, list):
            try:
                cur = cur[int(tok)]
            except (ValueError, IndexError):
                raise PatchError(f"doc is missing path: {pointer!r}") from None
        else:
            raise PatchError(f"doc is missing path: {pointer!r}")
    return cur, tokens[-1]


def _get_ptr(doc: Any, pointer: str) -> Any:
    if pointer == "":
        return doc
    parent, last = _parent(doc, pointer)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"doc is missing path: {pointer!r}")
        return parent[last]
    if isinstance(parent, list):
        try:
            return parent[int(last)]
        except (ValueError, IndexError):
            raise PatchError(f"doc is missing path: {pointer!r}") from None
    raise PatchError(f"doc is missing path: {pointer!r}")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    if pointer == "":
        return copy.deepcopy(value)
    parent, last = _parent(doc, pointer)
    if isinstance(parent, dict):
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        if last == "-":
            parent.append(copy.deepcopy(value))
        else:
            try:
                idx = int(last)
            except ValueError:
                raise PatchError(f"invalid index {last!r}") from None
            if idx < 0 or idx > len(parent):
                raise PatchError(f"insert index out of bounds: {idx}")
            parent.insert(idx, copy.deepcopy(value))
    else:
        raise PatchError(f"doc is missing path: {pointer!r}")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    parent, last = _parent(doc, pointer)
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"unable to remove nonexistent key: {last}: missing value")
        del parent[last]
    elif isinstance(parent, list):
        try:
            del parent[int(last)]
        except (ValueError, IndexError):
            raise PatchError(f"unable to remove index {last}: out of bounds") from None
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("json: cannot unmarshal object into Go value of type jsonpatch.Patch", 400)
    result = clone(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("Unexpected kind: <nil>", 422)
        kind, path = op.get("op"), op.get("path", "")
        if kind == "add":
            result = _add(result, path, op.get("value"))
        elif kind == "remove":
            result = _remove(result, path)
        elif kind == "replace":
            _get_ptr(result, path)
            result = _remove(result, path) if path else result
            result = _add(result, path, op.get("value"))
        elif kind == "move":
            value = _get_ptr(result, op.get("from", ""))
            result = _remove(result, op.get("from", ""))
            result = _add(result, path, value)
        elif kind == "copy":
            result = _add(result, path, _get_ptr(result, op.get("from", "")))
        elif kind == "test":
            if _get_ptr(result, path) != op.get("value"):
                raise PatchError(f"testing value {path} failed: test failed")
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return result
