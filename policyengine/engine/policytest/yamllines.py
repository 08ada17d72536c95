"""YAML read with the line of every mapping and key, so that every problem with a test file
names its line, and the helpers that word those problems (``Where``).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from policyengine.engine.policytest.constants import PolicyTestError

# --- reading YAML with line numbers --------------------------------------------------------


class _Map(dict[Any, Any]):
    """A YAML mapping that remembers its line and the line of each key, for messages."""

    line: int = 0
    lines: dict[Any, int]


class Loader(yaml.SafeLoader):
    pass


def _construct_map(loader: Loader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    mapping = _Map()
    mapping.line = node.start_mark.line + 1
    mapping.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str | int | float | bool | None):
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.lines[key] = key_node.start_mark.line + 1
    return mapping


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)


def line_of(mapping: Any, key: str | None = None) -> int | None:
    if not isinstance(mapping, _Map):
        return None
    if key is not None:
        return mapping.lines.get(key)
    return mapping.line or None


@dataclass(frozen=True)
class Where:
    """Where a problem is: the prefix every message about a file starts with."""

    path: str
    case: str | None = None
    line: int | None = None
    # Under ``run``, the directories every file the test names must lie in: the policy sources.
    roots: tuple[Path, ...] | None = None

    def at(self, line: int | None) -> Where:
        return replace(self, line=line or self.line)

    def inside(self, field_name: str, written: str, path: Path) -> Path:
        """``path`` (resolved from ``written``), when it is a file the test may name."""
        real = Path(os.path.realpath(path))
        if self.roots is not None and not any(
            real.is_relative_to(os.path.realpath(root)) for root in self.roots
        ):
            raise self.error(
                field_name,
                f"{written}: outside the policy sources; a test the scheduler runs names only "
                "files beside it",
            )
        return path

    def error(self, field_name: str | None, problem: str) -> PolicyTestError:
        parts = [f"{self.path}:{self.line}" if self.line else self.path]
        if self.case is not None:
            parts.append(f"case {self.case}")
        if field_name:
            parts.append(field_name)
        return PolicyTestError(": ".join([*parts, problem]))


def type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def unknown_keys(mapping: Mapping[str, Any], known: Sequence[str], where: Where, what: str) -> None:
    for key in mapping:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, 1, 0.6)
        hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(known)}"
        raise where.at(line_of(mapping, key)).error(None, f"unknown {what} key {key!r}; {hint}")
