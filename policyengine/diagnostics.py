"""Diagnostics shared by every layer: a source span and a finding anchored to it.

Errors are values here, not exceptions: stages return lists of ``Diagnostic`` so that a tool
can report every problem in a file at once, sorted by position, each with a stable code.
Rendering (the ``file:line:col`` header, the source line and a caret) lives in one place so
that every message looks the same wherever it is printed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# Where the documentation site is published. Every diagnostic code has its own anchor on the
# lint page (``lint/#pe311``), which ``lint``'s text output and SARIF's ``helpUri`` point at;
# ``mkdocs.yml``'s ``site_url`` is held equal to it by a test.
DOCS_URL = "https://policyengine.github.io/policyengine/"


def code_url(code: str) -> str:
    """The documentation of one diagnostic code: ``…/lint/#pe311``."""
    return f"{DOCS_URL}lint/#{code.lower()}"


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A region of one source file; lines and columns are 1-based, ``end_column`` exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def point(file: str, line: int, column: int) -> Span:
        return Span(file, line, column, line, column + 1)

    def cover(self, other: Span) -> Span:
        """The smallest span holding both ``self`` and ``other`` (same file)."""
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.file, start[0], start[1], end[0], end[1])

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NO_SPAN = Span("<unknown>", 1, 1, 1, 2)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    hint: str | None = None
    related: tuple[tuple[str, Span], ...] = field(default=())

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.span.file, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.span.file,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "severity": str(self.severity),
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
        }


class DiagnosticError(Exception):
    """Raised at a boundary (a CLI command, a reload) when diagnostics make going on pointless."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics, key=Diagnostic.sort_key)
        super().__init__("\n".join(f"{d.span}: {d.message}" for d in self.diagnostics))


def sorted_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=Diagnostic.sort_key)


# The most of a source line a diagnostic shows: a generated policy may hold a line of a
# megabyte, and a terminal (or a log line) wants the part around the caret.
SHOWN_COLUMNS = 120
_LEAD = 30  # columns shown before the caret when the line is cut


def _window(text: str, start: int, end: int) -> tuple[str, int, int]:
    """``text`` cut to ``SHOWN_COLUMNS`` around columns ``start``..``end`` (1-based, end
    exclusive), with an ellipsis where it was cut, and the columns moved to match."""
    if len(text) <= SHOWN_COLUMNS:
        return text, start, end
    first = max(0, min(start - 1 - _LEAD, len(text) - SHOWN_COLUMNS))
    shown = text[first : first + SHOWN_COLUMNS]
    before = "…" if first > 0 else ""
    after = "…" if first + SHOWN_COLUMNS < len(text) else ""
    new_start = start - first + len(before)
    new_end = min(end - first, len(shown) + 1) + len(before)
    return before + shown + after, new_start, max(new_end, new_start + 1)


def render(diagnostic: Diagnostic, source: str | None = None) -> str:
    """``file:line:col: severity code: message``, then the source line and a caret under the span."""
    d = diagnostic
    lines = [f"{d.span}: {d.severity} {d.code}: {d.message}"]
    if source is not None:
        text_lines = source.split("\n")
        if 1 <= d.span.line <= len(text_lines):
            text = text_lines[d.span.line - 1].expandtabs(1)
            start = max(d.span.column, 1)
            if d.span.end_line == d.span.line:
                end = max(d.span.end_column, start + 1)
            else:
                end = len(text) + 1
            end = min(end, max(len(text) + 1, start + 1))
            text, start, end = _window(text, start, end)
            lines.append(f"    {text}")
            lines.append("    " + " " * (start - 1) + "^" * (end - start))
    if d.hint:
        lines.append(f"    hint: {d.hint}")
    for note, span in d.related:
        lines.append(f"    note: {span}: {note}")
    return "\n".join(lines)
