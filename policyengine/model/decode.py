"""Snapshot text into documents, fast and one object at a time, reading exactly what PyYAML's
``safe_load_all`` and ``json.loads`` read.

A real cluster's ``kubectl get nodes,pods -A -o yaml`` is tens of megabytes: node images,
``managedFields``, owner references, container statuses. Read whole by PyYAML's pure-Python
loader it takes about a minute and gigabytes, nearly all of it for fields the engine never
reads. So:

- **YAML** goes through libyaml (``yaml.CSafeLoader``, PyYAML's own C binding: the same
  constructors, so the same values). Where the binding is missing, or libyaml refuses a
  text, the pure-Python loader decides, so an error reads as PyYAML's.
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
import yaml

from policyengine.model.errors import ModelError

Progress = Callable[[int, int], None]

_FAST_LOADER: type[Any] | None = getattr(yaml, "CSafeLoader", None)
# ``items:`` at the left margin followed by a block sequence whose entries start at the margin.
_ITEMS = re.compile(r"^items:[ \t]*\n(?=- )", re.MULTILINE)
# The start of each entry: "- " at the left margin.
_ENTRY = re.compile(r"^- ", re.MULTILINE)
# The first line after the sequence: anything at the left margin that is not an entry, a
# comment or blank (``kind: List``, ``metadata:``).
_AFTER = re.compile(r"^(?!- |#|\s|$)", re.MULTILINE)
# What the cut cannot follow: directives and document markers at the margin, and anchors,
# aliases or tags — an indicator where a node starts (at a line's start, after "- ", ": ",
# "? " or a flow indicator). Inside a plain or quoted scalar the same characters are text;
# seen where a continuation line starts, they only cost the whole parse.
_UNSAFE = re.compile(r"^(?:%|---|\.\.\.)|(?:^[ \t]*(?:[-?] +)*|: +|[\[{,] *)[&*!]", re.MULTILINE)


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
    if not isinstance(head, dict) or head.get("kind") not in list_kinds:
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
    if _FAST_LOADER is not None:
        try:
            return yaml.load(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            pass  # the pure-Python loader decides, and words the error
    return yaml.safe_load(text)


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


def _cut(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """The List's text without its items (``items: []``) and each item's span, or None when
    the text is not a kubectl List the cut can follow."""
    if _UNSAFE.search(text) is not None:
        return None
    found = _ITEMS.search(text)
    if found is None:
        return None
    begin = found.end()
    after = _AFTER.search(text, begin)
    end = after.start() if after is not None else len(text)
    starts = [m.start() for m in _ENTRY.finditer(text, begin, end)]
    if not starts or starts[0] != begin:
        return None
    spans = list(zip(starts, [*starts[1:], end], strict=True))
    header = text[: found.start()] + "items: []\n" + text[end:]
    return header, spans
