"""The watch's echo of our own binding, recognised without parsing the pod again.

Every pod this scheduler binds comes back through the pod watch once more, now with
``spec.nodeName`` set: the confirmation the cache waits for. Parsing that object
(``model.parse.parse_pod``: containers, resources, affinity, tolerations, each checked) costs
about as much as the rest of the watch event, although the informer hands us the object it
replaces — the one the pending pod was parsed from.

A binding changes only ``metadata.resourceVersion``, ``metadata.managedFields``,
``spec.nodeName`` and ``status.conditions`` (the ``PodScheduled`` condition). When the new
object differs from the old one *only there* (compared value and type alike), its parse is the old parse with the new node
name and resource version: ``parse_pod`` does not read ``managedFields`` or ``conditions``,
and reads the other two as plain strings (``None`` is ``""``). ``kind`` and
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

from policyengine.model.objects import Pod

# Per top-level key, the fields a binding writes that parse_pod does not read as structure.
_WRITTEN = {
    "metadata": frozenset({"resourceVersion", "managedFields"}),
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
    return old_pod.with_binding(node or "", version or "")
