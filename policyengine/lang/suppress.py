"""Inline suppression: ``# lint: ignore[PE301, PE302]`` comments, and which of them are used.

A suppression at the end of a line covers findings that start on that line; on a line of its
own it covers the next line holding code (so several can be stacked above one statement).
Without codes it covers every suppressible finding. This module is mechanism only: it says
which findings are silenced and which suppressions silenced nothing; ``lint`` turns the latter
into PE310 findings, since every message is written there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from policyengine.diagnostics import Diagnostic, Span
from policyengine.lang import nodes as n
from policyengine.lang.lint_config import CODE_PATTERN, is_fixed

_DIRECTIVE = re.compile(r"(?:^|#)\s*lint\s*:\s*ignore\b(?P<rest>.*)$")
_CODES = re.compile(r"\s*\[(?P<codes>[^\]]*)\]")


@dataclass
class Suppression:
    comment: n.Comment
    line: int  # the line whose findings it covers
    codes: frozenset[str] | None  # None: every suppressible code
    used: set[str] = field(default_factory=set)  # codes it silenced ("*" for a bare one)

    @property
    def span(self) -> Span:
        return self.comment.span

    def unused_codes(self) -> list[str]:
        if self.codes is None:
            return [] if self.used else ["*"]
        return sorted(self.codes - self.used)


@dataclass(frozen=True)
class Malformed:
    """A ``# lint: ignore`` comment whose code list cannot be read."""

    comment: n.Comment
    text: str


def _code_lines(source: str) -> list[int]:
    """Line numbers holding something other than blanks or a comment."""
    return [
        number
        for number, line in enumerate(source.splitlines(), start=1)
        if line.strip() and not line.lstrip().startswith("#")
    ]


def parse_suppressions(file: n.SourceFile) -> tuple[list[Suppression], list[Malformed]]:
    found: list[Suppression] = []
    malformed: list[Malformed] = []
    code_lines = _code_lines(file.source)
    for comment in file.comments:
        directive = _DIRECTIVE.search(comment.text.lstrip("#"))
        if directive is None:
            continue
        rest = directive.group("rest")
        codes: frozenset[str] | None = None
        listed = _CODES.match(rest)
        if listed:
            names = [c.strip() for c in listed.group("codes").split(",") if c.strip()]
            if not names or not all(CODE_PATTERN.fullmatch(c) for c in names):
                malformed.append(Malformed(comment, listed.group("codes")))
                continue
            codes = frozenset(names)
        elif rest.strip().startswith("[") or CODE_PATTERN.match(rest.strip()):
            # ``ignore PE301`` without brackets must not silently become "ignore everything".
            malformed.append(Malformed(comment, rest.strip().strip("[]")))
            continue
        line = comment.span.line
        if comment.own_line:
            following = [number for number in code_lines if number > line]
            if not following:
                # Nothing left to cover: it can only ever be unused.
                found.append(Suppression(comment, 0, codes))
                continue
            line = following[0]
        found.append(Suppression(comment, line, codes))
    return found, malformed


def apply_suppressions(
    diagnostics: Iterable[Diagnostic], files: Iterable[n.SourceFile]
) -> tuple[list[Diagnostic], list[Suppression], list[Malformed]]:
    """The findings left after suppression, every suppression (with what it used), bad comments."""
    by_place: dict[tuple[str, int], list[Suppression]] = {}
    everything: list[Suppression] = []
    malformed: list[Malformed] = []
    for file in files:
        found, bad = parse_suppressions(file)
        everything.extend(found)
        malformed.extend(bad)
        for suppression in found:
            by_place.setdefault((file.path, suppression.line), []).append(suppression)
    kept: list[Diagnostic] = []
    for diagnostic in diagnostics:
        if is_fixed(diagnostic.code):
            kept.append(diagnostic)
            continue
        silenced = False
        for suppression in by_place.get((diagnostic.span.file, diagnostic.span.line), ()):
            if suppression.codes is None:
                suppression.used.add("*")
                silenced = True
            elif diagnostic.code in suppression.codes:
                suppression.used.add(diagnostic.code)
                silenced = True
        if not silenced:
            kept.append(diagnostic)
    return kept, everything, malformed
