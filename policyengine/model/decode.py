"""Snapshot text into documents, fast and one object at a time, reading exactly what PyYAML's
``safe_load_all`` and ``json.loads`` read.

A real cluster's ``kubectl get nodes,pods -A -o yaml`` is tens of megabytes: node images,
``managedFields``, owner references, container statuses. Read whole by PyYAML's pure-Python
loader it takes about a minute and gigabytes, nearly all of it for fields the engine never
reads. So:

- **YAML** goes through ryaml (a Rust parser) where its values are certain to be PyYAML's:
  YAML 1.2 and PyYAML's 1.1 differ only in how some plain scalars resolve (``yes``/``on``,
  ``010``, ``1_000``, ``1:30``, ``1e3``, timestamps, ``<<``), so a text holding any plain
  scalar that could (``_ambiguous``) goes through libyaml (``yaml.CSafeLoader``, PyYAML's own
  C binding with PyYAML's constructors) instead, and where ryaml refuses a text (a duplicate
  key) PyYAML decides. Errors are always PyYAML's, worded by its pure-Python loader.
- **A kubectl List** (``items:`` as a block sequence at the left margin, as kubectl writes
  it) is cut into its items, each parsed on its own and handed over before the next is read:
  the caller turns it into the model's compact form and its dict is freed. Anything the cut
  cannot be sure of — directives, document markers, anchors, aliases or tags, an item that
  does not parse alone — is parsed whole instead, so the values are always the whole parse's.
- **JSON** goes through orjson, and through ``json`` where the two could differ (integers of
  19 digits or more, which orjson reads as floats) or orjson refuses (``NaN``), so both read
  the same.

``progress(done, total)`` is told the characters read so far.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import ryaml
import yaml

from policyengine.model.errors import ModelError

Progress = Callable[[int, int], None]

_FAST_LOADER: type[Any] | None = getattr(yaml, "CSafeLoader", None)
# ``items:`` at the left margin followed by a block sequence whose entries start at the margin.
_ITEMS = re.compile(r"^items:[ \t]*\n(?=- )", re.MULTILINE)
# The start of each entry: "- " at the left margin.
_ENTRY = re.compile(r"\n- ")
# The first line after the sequence: anything at the left margin that is not an entry, a
# comment or blank (``kind: List``, ``metadata:``).
_AFTER = re.compile(r"\n[^\s#-]")
# What the cut cannot follow: directives and document markers at the margin, and anchors,
# aliases or tags — an indicator where a node starts (at a line's start, after "- ", ": ",
# "? " or a flow indicator). Inside a plain or quoted scalar the same characters are text;
# seen where a continuation line starts, they only cost the whole parse.
_MARKER = re.compile(r"\n(?:%|---|\.\.\.)")
_INDICATOR = re.compile(r"[&*!]")
_NODE_START = re.compile(r"(?:[ \t]*(?:[-?] +)*|.*: +|.*[\[{,] *)")


def documents(
    text: str,
    source: str,
    progress: Progress | None = None,
    list_kinds: frozenset[str] = frozenset({"List"}),
) -> Iterator[Any]:
    """The top-level documents of a snapshot text, or a kubectl List as its ``ListHead`` and
    then its items one by one as ``ListItem``s (``RESTART`` before the whole parse's documents
    if the cut had to be abandoned); a List is one whose ``kind`` is in ``list_kinds``. Raises ``ModelError`` naming the source (and the line and
    column of a YAML error)."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        decoded = _json(text)
        if decoded is not _NOT_JSON:
            if progress is not None:
                progress(len(text), len(text))
            yield decoded
            return
    cut = _cut(text)
    if cut is None:
        yield from _whole_yaml(text, source)
        if progress is not None:
            progress(len(text), len(text))
        return
    header, entries = cut
    try:
        head = _load(header)
    except yaml.YAMLError:
        head = None
    kind = head.get("kind") if isinstance(head, dict) else None
    if not isinstance(kind, str) or kind not in list_kinds:
        yield from _whole_yaml(text, source)
        return
    head["items"] = None
    yield ListHead(head)
    for start, end in entries:
        chunk = "  " + text[start + 2 : end]
        try:
            item = _load(chunk)
        except yaml.YAMLError:
            # An item that does not parse alone: the whole text decides (its error, with the
            # line and column, or its values, which replace everything yielded so far).
            whole = list(_whole_yaml(text, source))
            yield RESTART
            yield from whole
            return
        if progress is not None:
            progress(end, len(text))
        yield ListItem(item)
    if progress is not None:
        progress(len(text), len(text))


# Told to a consumer when what came before is to be forgotten: the documents start over.
RESTART = object()


class ListHead:
    """A kubectl List's own fields (its ``items`` follow as ``ListItem``s)."""

    __slots__ = ("value",)

    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value


class ListItem:
    """One item of the List whose ``ListHead`` came before it."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


_NOT_JSON = object()
# A digit run as long as the largest 64-bit integers (or longer): ``json`` keeps it exact.
_LONG_NUMBER = re.compile(r"\d{19}")


def _json(text: str) -> Any:
    if _LONG_NUMBER.search(text) is None:  # orjson reads such integers as floats
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return _NOT_JSON  # YAML flow style may start with a brace too


def _load(text: str) -> Any:
    if not _ambiguous(text):
        try:
            return ryaml.loads(text)
        except Exception:
            pass
    if _FAST_LOADER is not None:
        try:
            return yaml.load(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            pass  # the pure-Python loader decides, and words the error
    return yaml.safe_load(text)


# Where a plain scalar that might be ambiguous starts — as a value (after ": ") or at a
# line's start (a key, or a sequence entry after its "- "): with a digit, a sign, a dot, a flow
# bracket, "<", "=", "?", or as one of YAML 1.1's boolean words. Each candidate is then looked
# at whole (``_ambiguous_scalar``); most tokens of a dump are never candidates.
_VALUE = re.compile(
    r": +([-+.0-9][0-9a-fA-FxXoObB_:.eE+\-tTzZ ]*(?=\n|$)|[\[{](?![\]}] *(?:\n|$))[^\n]*"
    r"|[-+]?\.(?i:inf|nan) *(?=\n|$)|[<=?][^\n]*|(?i:yes|no|on|off|y|n) *(?=\n|$))"
)
_LINE_START = re.compile(
    r"\n[ -]*([+.0-9\[{<=?][^\n]*|(?i:yes|no|on|off|y|n)(?= *\n| *$|:[ \n]|:$))"
)
_SAFE_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]+)?")
# What either version may read as a number or a timestamp (PyYAML's int, float and timestamp
# resolvers, and YAML 1.2's core schema): a plain scalar matching one of these and not
# ``_SAFE_NUMBER`` may resolve differently. Other tokens starting with a digit (``7850m``,
# ``10.64.0.0/24``, a uid) are strings in both.
_NUMBERISH = re.compile(
    r"""[-+]?(?:
        0b[0-1_]+ | 0o[0-7_]+ | 0x[0-9a-fA-F_]+
      | [0-9][0-9_]*(?::[0-5]?[0-9])*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?
      | \.[0-9_]+(?:[eE][-+]?[0-9]+)?
      | \.(?:inf|Inf|INF|nan|NaN|NAN)
    )
    | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]|[ \t]+)[0-9:.+\-Zz \t]*)?""",
    re.VERBOSE,
)
_YAML11_WORDS = frozenset({"y", "n", "yes", "no", "on", "off"})
_SPECIAL = frozenset({"<<", "=", ".inf", "-.inf", "+.inf", ".nan", "-.nan", "+.nan"})


def _ambiguous(text: str) -> bool:
    """Whether a plain scalar of ``text`` might resolve differently under YAML 1.1 (PyYAML)
    and 1.2 (ryaml). Conservative: a false alarm only costs the slower parser."""
    for found in _VALUE.finditer(text):
        if _ambiguous_scalar(found.group(1).strip()):
            return True
    for found in _LINE_START.finditer("\n" + text if text[:1] != "\n" else text):
        token = found.group(1)
        key, colon, _ = token.partition(": ")
        if _ambiguous_scalar((key if colon else token.removesuffix(":")).strip()):
            return True
    return False


def _ambiguous_scalar(token: str) -> bool:
    first = token[0]
    if first in "\"'|>":
        return False
    if first in "[{":
        return token not in ("[]", "{}")
    if first in "<=?":
        return True
    lowered = token.lower()
    if lowered in _YAML11_WORDS or lowered in _SPECIAL:
        return True
    if first.isdigit() or first in "+-.":
        return _NUMBERISH.fullmatch(token) is not None and _SAFE_NUMBER.fullmatch(token) is None
    return False


def _whole_yaml(text: str, source: str) -> Iterator[Any]:
    try:
        if _FAST_LOADER is not None:
            try:
                loaded = list(yaml.load_all(text, Loader=_FAST_LOADER))
            except yaml.YAMLError:
                loaded = list(yaml.safe_load_all(text))
        else:
            loaded = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ModelError(
            f"{source}{where}: not valid YAML or JSON: {problem}", source=source
        ) from None
    yield from (d for d in loaded if d is not None)


def _indicator_at_node_start(text: str) -> bool:
    for found in _INDICATOR.finditer(text):
        at = found.start()
        line_start = text.rfind("\n", 0, at) + 1
        if _NODE_START.fullmatch(text, line_start, at) is not None:
            return True
    return False


def _cut(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """The List's text without its items (``items: []``) and each item's span, or None when
    the text is not a kubectl List the cut can follow."""
    if (
        text.startswith(("%", "---", "..."))
        or _MARKER.search(text) is not None
        or _indicator_at_node_start(text)
    ):
        return None
    found = _ITEMS.search(text)
    if found is None:
        return None
    begin = found.end()
    after = _AFTER.search(text, begin - 1)
    end = after.start() + 1 if after is not None else len(text)
    starts = [m.start() + 1 for m in _ENTRY.finditer(text, begin - 1, end)]
    if not starts or starts[0] != begin:
        return None
    spans = list(zip(starts, [*starts[1:], end], strict=True))
    header = text[: found.start()] + "items: []\n" + text[end:]
    return header, spans
