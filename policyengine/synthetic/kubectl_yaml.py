"""``to_kubectl_yaml``: API objects written as ``kubectl get -o yaml`` prints them.

PyYAML's representer takes ~20 s for the basic benchmark's 15,000 objects, so the subset of
YAML that API objects need is written here, in kubectl's layout (keys sorted, sequences not
indented under their key, double quotes when needed).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# YAML writing. PyYAML's representer takes ~20 s for the basic benchmark's 15,000 objects, so
# the generator writes the small subset of YAML that API objects need itself, in kubectl's
# layout (keys sorted, sequences not indented under their key, double quotes when needed).
# A string is written plain only when no YAML 1.1 or 1.2 reader could take it for anything but
# a string; everything else is quoted (JSON's escapes are valid YAML escapes).
_PLAIN = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./@+: -]*")
_TYPED = re.compile(
    r"""(?x)
    (?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE
      |on|On|ON|off|Off|OFF|null|Null|NULL)$
    | [-+]?[0-9][0-9_:.]*(?:[eE][-+]?[0-9]+)?$
    | 0[xXoObB][0-9a-fA-F_]+$
    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}
    """
)
# Characters YAML does not allow raw in a double-quoted scalar, or reads as line breaks.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")


def _quote(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        if (
            _PLAIN.fullmatch(value)
            and not _TYPED.match(value)
            and ": " not in value
            and not value.endswith((" ", ":"))
        ):
            return value
        return _quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, Mapping):
        return "{}"  # only empty ones reach here
    if isinstance(value, (list, tuple)):
        return "[]"
    raise TypeError(f"cannot write {type(value).__name__} {value!r} as YAML")


def _mapping(d: Mapping[Any, Any], indent: str, out: list[str], lead: str) -> None:
    pad = lead
    for key in sorted(d, key=str):
        value = d[key]
        k = _scalar(key)
        if isinstance(value, Mapping) and value:
            out.append(f"{pad}{k}:")
            _mapping(value, indent + "  ", out, indent + "  ")
        elif isinstance(value, (list, tuple)) and value:
            out.append(f"{pad}{k}:")
            _sequence(value, indent, out, indent)
        else:
            out.append(f"{pad}{k}: {_scalar(value)}")
        pad = indent


def _sequence(items: Sequence[Any], indent: str, out: list[str], lead: str) -> None:
    pad = lead
    for item in items:
        if isinstance(item, Mapping) and item:
            _mapping(item, indent + "  ", out, pad + "- ")
        elif isinstance(item, (list, tuple)) and item:
            _sequence(item, indent + "  ", out, pad + "- ")
        else:
            out.append(f"{pad}- {_scalar(item)}")
        pad = indent


def to_kubectl_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    """A ``kind: List`` document laid out as ``kubectl get ... -o yaml`` prints it."""
    doc = {
        "apiVersion": "v1",
        "items": list(objects),
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    out: list[str] = []
    _mapping(doc, "", out, "")
    out.append("")
    return "\n".join(out)
