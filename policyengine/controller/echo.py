"""The watch's echo of our own binding, recognised without parsing the pod again.

Every pod this scheduler binds comes back through the pod watch once more, now with
``spec.nodeName`` set: the confirmation the cache waits for. Parsing that object
(``model.parse.parse_pod``: containers, resources, affinity, tolerations, each checked) costs
about as much as the rest of the watch event, although the informer hands us the object it
replaces — the one the pending pod was parsed from.

A binding changes only ``metadata.resourceVersion``, ``metadata.managedFields``,
``spec.nodeName`` and ``status.conditions`` (the ``PodScheduled`` condition), and
``metadata.annotations`` when the Binding carries some (a GPU pod's HAMi device assignment,
``binder``). When the new object differs from the old one *only there* (compared value and
type alike), its parse is the old parse with the new node name, resource version and
annotations: ``parse_pod`` does not read ``managedFields``, reads of the ``conditions`` only
whether a scheduler preempted the pod (``DisruptionTarget``) and whether a resize is
infeasible (``PodResizePending``), both compared on their own, reads the node
name and resource version as plain strings (``None`` is ``""``) and the annotations as a map
of strings, which is taken as it stands when every value is a string (``None`` or ``{}``:
none), and otherwise left to ``parse_pod``. ``kind`` and
``apiVersion`` are left out of the comparison too: ``parse_pod`` reads neither, and a pod
that was listed (a list's items carry neither) comes back from the watch with both. Anything else — another field
changed, a key added or removed, a value of the wrong type — answers ``None`` and the caller
parses as before. ``tests/controller/test_echo.py`` holds the answer equal to
``parse_pod(new)`` over generated objects and changes.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping
from typing import Any

from policyengine.model.frozen import EMPTY, FrozenDict
from policyengine.model.objects import Pod
from policyengine.model.parse import preempted_by_scheduler, resize_infeasible

# Per top-level key, the fields a binding writes that parse_pod does not read as structure.
_WRITTEN = {
    "metadata": frozenset({"resourceVersion", "managedFields", "annotations"}),
    "spec": frozenset({"nodeName"}),
    "status": frozenset({"conditions"}),
}
# Top-level keys parse_pod does not read: a list's items come without them, the watch's
# objects with them, so the echo of a listed pod differs there.
_UNREAD = frozenset({"kind", "apiVersion"})


def _stripped(obj: Mapping[str, Any]) -> dict[str, Any]:
    # Copies with the keys popped (C calls, and the remaining keys keep their order), not
    # comprehensions: this runs twice for every watch event of a pending pod.
    out = dict(obj)
    for key in _UNREAD:
        out.pop(key, None)
    for key, skip in _WRITTEN.items():
        part = out.get(key)
        if isinstance(part, dict):
            part = dict(part)
            for name in skip:
                part.pop(name, None)
            out[key] = part
    return out


def reparsed(old: Mapping[str, Any], old_pod: Pod, new: Mapping[str, Any]) -> Pod | None:
    """``parse_pod(new)`` from ``old_pod = parse_pod(old)`` when ``new`` is ``old`` changed
    only where a binding writes (module docstring); None when it must be parsed."""
    try:
        # Compared as marshal bytes, not with ==, which takes True for 1 and 1 for 1.0
        # where parse_pod does not. Version 2 writes no back-references, so equal values of
        # equal types in the same key order give equal bytes whatever objects they share; a
        # key order that differs only costs the parse.
        if marshal.dumps(_stripped(old), 2) != marshal.dumps(_stripped(new), 2):
            return None
    except ValueError:  # not plain JSON values (a YAML datetime): parse it
        return None
    node = (new.get("spec") or {}).get("nodeName")
    version = (new.get("metadata") or {}).get("resourceVersion")
    if not (node is None or isinstance(node, str)):
        return None
    if not (version is None or isinstance(version, str)):
        return None
    status = new.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if (
        preempted_by_scheduler(conditions) != old_pod.preempted_by_scheduler
        or resize_infeasible(conditions) != old_pod.resize_infeasible
    ):
        return None  # what parse_pod reads of the conditions moved
    annotations = _annotations(old, new)
    if annotations is _PARSE:
        return None
    return old_pod.with_binding(node or "", version or "", annotations)


# ``_annotations``' answer when only ``parse_pod`` can read the new annotations.
_PARSE: Any = object()


def _annotations(old: Mapping[str, Any], new: Mapping[str, Any]) -> Any:
    """The new annotations as ``parse_pod`` reads them: None when they did not change (the
    old parse's stand), a ``FrozenDict`` when all are strings, ``_PARSE`` otherwise."""
    # Both metadata are mappings here: the stripped objects compared equal, and old parsed.
    before = (old.get("metadata") or {}).get("annotations")
    after = (new.get("metadata") or {}).get("annotations")
    if before is after:
        return None
    try:
        if marshal.dumps(before, 2) == marshal.dumps(after, 2):
            return None  # the same text as before (value and type): the old parse stands
    except ValueError:
        return _PARSE
    if after is None or (isinstance(after, dict) and not after):
        return EMPTY
    if isinstance(after, dict) and all(
        type(key) is str and type(value) is str for key, value in after.items()
    ):
        return FrozenDict(after)
    return _PARSE
