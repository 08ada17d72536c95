"""Lint settings: ``[tool.policyengine.lint]`` in ``pyproject.toml``, read with ``tomllib``.

Kept apart from the rules so that the rules stay pure functions of a tree and a config value,
and so that a bad config can be reported as a usage error (naming the file and key) before any
policy is read. A policy repository usually already has a ``pyproject.toml``; putting the
settings there spares it one more dotfile.

Keys (all optional)::

    [tool.policyengine.lint]
    cost-budget = 10000            # PE305 fires for a rule whose static cost bound exceeds it
    strict = false                 # warnings make ``policyengine lint`` exit 1
    disable = ["PE301"]            # codes never reported
    severity = { PE304 = "error" } # per-code severity: error, warning or info

Syntax (PE1xx) and input/output (PE0xx) errors cannot be disabled or re-graded: a file that
cannot be read or parsed is never clean.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policyengine.diagnostics import Severity

DEFAULT_COST_BUDGET = 10_000
SECTION = "[tool.policyengine.lint]"
CODE_PATTERN = re.compile(r"PE\d{3}")
_KEYS = ("cost-budget", "strict", "disable", "severity")


def is_fixed(code: str) -> bool:
    """Codes a config may not touch: I/O (PE0xx) and syntax (PE1xx) errors."""
    return code.startswith(("PE0", "PE1"))


@dataclass(frozen=True)
class LintConfig:
    cost_budget: int = DEFAULT_COST_BUDGET
    strict: bool = False
    disable: frozenset[str] = frozenset()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    # Where the settings came from (None: built-in defaults), for messages and ``--verbose``.
    source: Path | None = None


class ConfigError(Exception):
    """A malformed config: the CLI prints it and exits 2."""

    def __init__(self, path: Path, key: str | None, problem: str):
        self.path = path
        self.key = key
        self.problem = problem
        where = f"{SECTION} {key}" if key else SECTION
        super().__init__(f"{path}: {where}: {problem}")


def _table(document: Mapping[str, Any], path: Path) -> Mapping[str, Any] | None:
    node: Any = document
    for part in ("tool", "policyengine", "lint"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if not isinstance(node, Mapping):
        raise ConfigError(path, None, "must be a table")
    return node


def _read(path: Path) -> Mapping[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(path, None, f"cannot read the file: {error.strerror or error}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, None, f"not valid TOML: {error}") from error


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a lint table.

    Like ruff, files without the table are passed over, so a sub-project's own
    ``pyproject.toml`` does not hide the repository's lint settings.
    """
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and _table(_read(candidate), candidate) is not None:
            return candidate
    return None


def load_config(path: Path | None = None, start: Path | None = None) -> LintConfig:
    """Settings from ``path`` (``--config``), else from the nearest ``pyproject.toml``.

    Raises ``ConfigError`` for an unreadable file, invalid TOML, or a bad key or value.
    """
    if path is None:
        path = find_config(start or Path.cwd())
        if path is None:
            return LintConfig()
    table = _table(_read(path), path)
    if table is None:
        return LintConfig(source=path)
    return parse_config(table, path)


def parse_config(table: Mapping[str, Any], path: Path) -> LintConfig:
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(path, unknown[0], f"unknown key; the keys are {', '.join(_KEYS)}")
    budget = table.get("cost-budget", DEFAULT_COST_BUDGET)
    # bool is an int in Python; ``cost-budget = true`` is a mistake, not 1.
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise ConfigError(path, "cost-budget", f"must be a whole number >= 0, not {budget!r}")
    strict = table.get("strict", False)
    if not isinstance(strict, bool):
        raise ConfigError(path, "strict", f"must be true or false, not {strict!r}")
    disable = table.get("disable", [])
    if not isinstance(disable, list):
        raise ConfigError(path, "disable", f"must be a list of codes, not {disable!r}")
    for code in disable:
        _check_code(code, path, "disable")
    raw_severity = table.get("severity", {})
    if not isinstance(raw_severity, Mapping):
        raise ConfigError(path, "severity", "must be a table of code = severity")
    severity: dict[str, Severity] = {}
    for code, level in raw_severity.items():
        _check_code(code, path, f"severity.{code}")
        try:
            severity[code] = Severity(level)
        except ValueError:
            raise ConfigError(
                path, f"severity.{code}", f"must be error, warning or info, not {level!r}"
            ) from None
    return LintConfig(budget, strict, frozenset(disable), severity, path)


def _check_code(code: object, path: Path, key: str) -> None:
    if not isinstance(code, str) or not CODE_PATTERN.fullmatch(code):
        raise ConfigError(path, key, f"{code!r} is not a code such as PE301")
    if is_fixed(code):
        raise ConfigError(
            path, key, f"{code} is a syntax or input/output error and is always reported"
        )
