"""Diagnostics as other tools read them: JSON (our contract), SARIF 2.1.0, GitHub commands.

Each renderer is a pure function from findings to text, so tests compare whole documents and
every command that reports diagnostics (``lint`` today, ``test`` later) prints them alike.
Positions keep the contract's meaning everywhere: lines and columns 1-based, counted in
characters, the end column exclusive — which is exactly SARIF's ``columnKind``
``unicodeCodePoints`` with its exclusive ``endColumn``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from urllib.parse import quote

from policyengine import __version__
from policyengine.diagnostics import Diagnostic, Severity, code_url, render

TOOL_NAME = "policyengine"
INFORMATION_URI = "https://github.com/policyengine/policyengine"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# Descriptions for codes owned by other stages, by family, when no table says more.
_FAMILY_DESCRIPTIONS = {
    "PE0": "A policy file could not be read.",
    "PE1": "A policy file has a syntax error.",
    "PE2": "A policy does not type-check or link.",
    "PE3": "Lint finding.",
}

_SARIF_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_GITHUB_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def relative_path(path: str, base: Path | None = None) -> str:
    """``path`` relative to ``base`` (the working directory), with forward slashes.

    Code scanning and workflow annotations resolve paths against the repository root, where
    CI runs the command; a path that is already relative is kept as given.
    """
    pure = PurePath(path)
    if pure.is_absolute():
        # On another Windows drive nothing relative exists; keep the path as it is.
        with contextlib.suppress(ValueError):
            pure = PurePath(os.path.relpath(pure, base or Path.cwd()))
    return pure.as_posix()


# --- json ----------------------------------------------------------------------------------


def to_json(diagnostics: Sequence[Diagnostic], files: int) -> str:
    """The contract: ``{"diagnostics": [...], "files": N}``, one document."""
    document = {"diagnostics": [d.to_json() for d in diagnostics], "files": files}
    return json.dumps(document, indent=2, ensure_ascii=False)


# --- text ----------------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def summary(diagnostics: Sequence[Diagnostic], files: int, imported: int = 0) -> str:
    """``N errors, M warnings in K files`` (and the infos, when there are any); the files the
    given ones imported are counted apart (``in 1 file and 1 imported``)."""
    counts = {severity: 0 for severity in Severity}
    for diagnostic in diagnostics:
        counts[diagnostic.severity] += 1
    parts = [_plural(counts[Severity.ERROR], "error"), _plural(counts[Severity.WARNING], "warning")]
    if counts[Severity.INFO]:
        parts.append(_plural(counts[Severity.INFO], "info"))
    given = files - imported
    return f"{', '.join(parts)} in {_plural(given, 'file')}" + (
        f" and {imported} imported" if imported else ""
    )


def to_text(
    diagnostics: Sequence[Diagnostic], sources: Mapping[str, str], files: int, imported: int = 0
) -> str:
    # Each finding ends with the link to its code's explanation, as compilers print theirs.
    blocks = [
        f"{render(d, sources.get(d.span.file))}\n    see: {code_url(d.code)}" for d in diagnostics
    ]
    return "\n\n".join([*blocks, summary(diagnostics, files, imported)])


# --- sarif ---------------------------------------------------------------------------------


def _describe(code: str) -> str:
    return _FAMILY_DESCRIPTIONS.get(code[:3], "A policyengine finding.")


def to_sarif(
    diagnostics: Sequence[Diagnostic],
    rules: Mapping[str, tuple[str, str, Severity]],
    base: Path | None = None,
) -> str:
    """A SARIF 2.1.0 log with one run, as GitHub code scanning accepts it.

    ``rules`` maps each known code to (name, short description, default severity); codes met
    in the findings but missing from it get a description by family.
    """
    codes = list(rules)
    codes.extend(sorted({d.code for d in diagnostics} - set(rules)))
    rule_entries = []
    for code in codes:
        name, description, severity = rules.get(code, ("", "", None))
        entry: dict[str, object] = {
            "id": code,
            "shortDescription": {"text": description or _describe(code)},
            "helpUri": code_url(code),
        }
        if name:
            entry["name"] = name
        if severity is not None:
            entry["defaultConfiguration"] = {"level": _SARIF_LEVELS[severity]}
        rule_entries.append(entry)
    index = {code: position for position, code in enumerate(codes)}
    results = []
    for d in diagnostics:
        span = d.span
        region = {
            "startLine": span.line,
            "startColumn": span.column,
            "endLine": max(span.end_line, span.line),
            "endColumn": max(span.end_column, span.column)
            if span.end_line <= span.line
            else span.end_column,
        }
        result: dict[str, object] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _SARIF_LEVELS[d.severity],
            "message": {"text": d.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {
                            "uri": quote(relative_path(span.file, base), safe="/"),
                            "uriBaseId": "%SRCROOT%",
                        },
                        "region": region,
                    }
                }
            ],
        }
        if d.hint:
            result["properties"] = {"hint": d.hint}
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": rule_entries,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)


# --- github --------------------------------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as the GitHub runner expects."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command property value: ``:`` and ``,`` end a value, so they are escaped too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(diagnostics: Sequence[Diagnostic], base: Path | None = None) -> str:
    """One ``::error``/``::warning``/``::notice`` workflow command per finding."""
    lines = []
    for d in diagnostics:
        span = d.span
        properties = (
            ("file", relative_path(span.file, base)),
            ("line", str(span.line)),
            ("col", str(span.column)),
            ("endLine", str(span.end_line)),
            ("endColumn", str(span.end_column)),
            ("title", d.code),
        )
        rendered = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
        lines.append(f"::{_GITHUB_COMMANDS[d.severity]} {rendered}::{escape_data(d.message)}")
    return "\n".join(lines)
