"""Source text to syntax tree, with every syntax error reported as a diagnostic.

``lalr.Driver`` runs lark's LALR table and calls ``_Builder`` at each reduction, so the frozen
nodes of ``nodes`` are made while parsing, with spans taken from the tokens (no parse tree, no
second pass). LALR stops at the first error, so to report every error in a file we blank out the
statement that failed (keeping newlines, so later positions stay true) and parse again.
Common mistakes (``=`` for ``==``, ``&&``, single quotes) get messages of their own.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from policyengine.diagnostics import Diagnostic, Severity, Span
from policyengine.lang import nodes as n
from policyengine.lang.grammar import parser as lark_parser
from policyengine.lang.lalr import Driver, Position, TreeDriver
from policyengine.quantity import QuantityError, parse_quantity

MAX_SYNTAX_ERRORS = 50
# How deep an expression may nest. Every later stage (checker, planner, the evaluators it
# builds, fmt, lint) walks trees by recursion, so a deeper tree is refused here with a
# diagnostic rather than met there as a crash. Runs of ``and``/``or`` are balanced and do
# not count their length; this bounds real nesting (parentheses aside), far beyond what a
# person writes (a chain of 100 ``else if``, or of ``+``, is accepted) and a third of what the
# deepest-walking stage survives under Python's default recursion limit.
MAX_NESTING = 100

_STATEMENT_KEYWORDS = frozenset(
    {
        "import",
        "policy",
        "library",
        "profile",
        "match",
        "use",
        "let",
        "filter",
        "score",
        "overcommit",
        "max_load",
        "gang",
        "within",
        "preempt",
        "select",
        "device",
    }
)
_TERMINAL_NAMES = {
    "NAME": "a name",
    "STRING": "a string",
    "INT": "an integer",
    "FLOAT": "a number",
    "QUANTITY": "a quantity",
    "COMPARE": "a comparison",
    "ADD_OP": "'+' or '-'",
    "MUL_OP": "'*', '/' or '%'",
    "$END": "end of file",
}


@dataclass(frozen=True)
class ParseResult:
    file: n.SourceFile | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return self.file is not None and not any(d.is_error for d in self.diagnostics)


def parse(source: str, path: str = "<input>") -> ParseResult:
    """Parse a whole file; on syntax errors ``file`` is None and every error is reported."""
    diagnostics: list[Diagnostic] = []
    text = source
    for _ in range(MAX_SYNTAX_ERRORS):
        try:
            builder = _Builder(path)
            file = _driver().parse(text, "start", builder)
            diagnostics.extend(builder.problems)
        except UnexpectedInput as error:
            diagnostics.append(_describe(error, text, path))
            blanked = _blank_failed_statement(text, error)
            if blanked == text:
                break
            text = blanked
            continue
        if diagnostics:
            return ParseResult(None, tuple(_dedupe(diagnostics)))
        comments = _comments(source, path)
        return ParseResult(
            n.SourceFile(path=path, items=tuple(file), comments=comments, source=source), ()
        )
    return ParseResult(None, tuple(_dedupe(diagnostics)))


def parse_expression(source: str, path: str = "<expr>") -> n.Expr:
    """Parse one expression (tests and tools); raises ``ValueError`` with the diagnostic."""
    builder = _Builder(path)
    try:
        expr: n.Expr = _driver().parse(source, "expr", builder)
    except UnexpectedInput as error:
        raise ValueError(_describe(error, source, path).message) from error
    builder._shallow(expr)
    if builder.problems:
        raise ValueError(builder.problems[0].message)
    return expr


def _dedupe(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[int, int]] = set()
    unique = []
    for d in diagnostics:
        if (d.span.line, d.span.column) not in seen:
            seen.add((d.span.line, d.span.column))
            unique.append(d)
    return sorted(unique, key=Diagnostic.sort_key)


# --- comments ------------------------------------------------------------------------------

_COMMENT_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*')


def _comments(source: str, path: str) -> tuple[n.Comment, ...]:
    comments = []
    for line_no, line in enumerate(source.split("\n"), start=1):
        for match in _COMMENT_SCAN.finditer(line):
            if match.group().startswith("#"):
                column = match.start() + 1
                span = Span(path, line_no, column, line_no, match.end() + 1)
                own_line = not line[: match.start()].strip()
                comments.append(n.Comment(match.group().rstrip(), span, own_line))
    return tuple(comments)


# --- errors --------------------------------------------------------------------------------


def _expected_phrase(expected: set[str]) -> str:
    names = []
    patterns = {t.name: t.pattern for t in lark_parser().terminals}
    for name in expected:
        if name in _TERMINAL_NAMES:
            names.append(_TERMINAL_NAMES[name])
        elif name in patterns and patterns[name].type == "str":
            names.append(f"'{patterns[name].value}'")
        else:
            names.append(name.lower())
    names = sorted(set(names), key=lambda s: (s.startswith("'"), s))
    if len(names) > 8:
        names = [*names[:8], "…"]
    return ", ".join(names)


def _token_text(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    return f"'{token.value}'"


def _describe(error: UnexpectedInput, text: str, path: str) -> Diagnostic:
    line = max(getattr(error, "line", 1) or 1, 1)
    column = max(getattr(error, "column", 1) or 1, 1)
    if isinstance(error, UnexpectedCharacters):
        # lark declares ``pos_in_stream = None`` on the base class; UnexpectedCharacters always
        # sets it to the lexer's position, an int.
        pos: int = error.pos_in_stream  # type: ignore[assignment]  # lark stub gap (see above)
        char = text[pos] if pos < len(text) else ""
        span = Span(path, line, column, line, column + 1)
        two = text[pos : pos + 2]
        if two in ("&&", "||"):
            word = "and" if two == "&&" else "or"
            return Diagnostic(
                "PE104",
                Severity.ERROR,
                f"'{two}' is not an operator here",
                Span(path, line, column, line, column + 2),
                f"write '{word}'",
            )
        if char == "!":
            return Diagnostic(
                "PE104",
                Severity.ERROR,
                "'!' is not an operator here",
                span,
                "write 'not', or '!=' to compare",
            )
        if char == "'":
            return Diagnostic(
                "PE105",
                Severity.ERROR,
                "strings are written in double quotes",
                span,
                "write \"text\" instead of 'text'",
            )
        if char == '"':
            return Diagnostic(
                "PE107",
                Severity.ERROR,
                "this string is not closed on its line",
                span,
                'close it with a double quote; write \\" for a quote inside a string',
            )
        return Diagnostic(
            "PE100",
            Severity.ERROR,
            f"unexpected character {char!r}",
            span,
            "remove it, or see the documentation for the language's operators",
        )
    assert isinstance(error, UnexpectedToken)
    token = error.token
    expected = set(error.accepts or error.expected or ())
    if token.type == "$END":
        lines = text.rstrip("\n").split("\n")
        line, column = len(lines), len(lines[-1]) + 1
        return Diagnostic(
            "PE102",
            Severity.ERROR,
            f"unexpected end of file; expected {_expected_phrase(expected)}",
            Span(path, line, column, line, column + 1),
            "a block may be missing its closing '}'" if "RBRACE" in expected else None,
        )
    end_column = getattr(token, "end_column", None) or column + len(str(token.value))
    span = Span(path, line, column, getattr(token, "end_line", None) or line, end_column)
    if token.value == "=" and any(e in expected for e in ("COMPARE", "RBRACE", "$END", "RPAR")):
        return Diagnostic(
            "PE103", Severity.ERROR, "'=' is not a comparison", span, "write '==' to compare values"
        )
    if token.type == "NAME" and _preceding_keyword(text, error) == "policy":
        return Diagnostic(
            "PE106",
            Severity.ERROR,
            "a policy name is a string",
            span,
            f'write policy "{token.value}"',
        )
    return Diagnostic(
        "PE101",
        Severity.ERROR,
        f"unexpected {_token_text(token)}; expected {_expected_phrase(expected)}",
        span,
    )


def _preceding_keyword(text: str, error: UnexpectedInput) -> str | None:
    before = text[: error.pos_in_stream].rstrip()
    match = re.search(r"([A-Za-z_]+)$", before)
    return match.group(1) if match else None


# --- recovery ------------------------------------------------------------------------------

_TOKEN_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|[{}]|[A-Za-z_][A-Za-z0-9_]*|\S')


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _first_word(line: str) -> str:
    match = re.match(r"\s*([A-Za-z_]+)", line)
    return match.group(1) if match else ""


def _blank_failed_statement(text: str, error: UnexpectedInput) -> str:
    """Replace the statement holding the error with spaces, up to the next statement or ``}``.

    The statement's end is found by brace balance from its first line, so a multi-line rule
    is removed whole and the enclosing block's ``}`` survives.
    """
    position = min(getattr(error, "pos_in_stream", None) or 0, len(text))
    starts = _line_starts(text)
    lines = text.split("\n")
    error_line = max(text.count("\n", 0, position), 0)
    start_line = error_line
    while start_line > 0 and _first_word(lines[start_line]) not in _STATEMENT_KEYWORDS:
        start_line -= 1
    begin = starts[start_line]
    depth = 0
    end = len(text)
    first = True
    for match in _TOKEN_SCAN.finditer(text, begin):
        token = match.group()
        if token.startswith("#") or token.startswith('"'):
            continue
        at_line_start = not text[text.rfind("\n", 0, match.start()) + 1 : match.start()].strip()
        if token == "{":
            depth += 1
        elif token == "}":
            if depth == 0:
                end = match.start()
                break
            depth -= 1
        elif (
            not first
            and depth == 0
            and at_line_start
            and token in _STATEMENT_KEYWORDS
            and match.start() > position
        ):
            end = match.start()
            break
        first = False
    if end <= position:
        # The error sits on the closing brace itself: drop that brace so parsing can go on.
        end = min(position + 1, len(text))
    blanked = "".join(c if c == "\n" else " " for c in text[begin:end])
    return text[:begin] + blanked + text[end:]


# --- tree building -------------------------------------------------------------------------


_TEMPLATE_SPECIAL = re.compile(r"[{}\\]")


def _hole_end(raw: str, start: int) -> int:
    """Where the hole opened just before ``start`` closes in a reason's raw text: the first
    ``}`` outside the hole's string literals (``\\"…\\"``) and nested braces; -1 if none."""
    depth = 0
    quoted = False
    index = start
    while index < len(raw):
        if raw.startswith('\\"', index):
            quoted = not quoted
            index += 2
            continue
        if raw[index] == "\\":
            index += 2
            continue
        if not quoted:
            if raw[index] == "{":
                depth += 1
            elif raw[index] == "}":
                if not depth:
                    return index
                depth -= 1
        index += 1
    return -1


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "{": "{", "}": "}"}


def _unescape(raw: str, span: Span, problems: list[Diagnostic]) -> str:
    """The value of a string literal (without its quotes); bad escapes are reported and kept."""
    if "\\" not in raw:
        return raw  # nothing to decode: the loop below would copy it character by character
    out = []
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\":
            following = raw[index + 1 : index + 2]
            if following in _ESCAPES:
                out.append(_ESCAPES[following])
                index += 2
                continue
            if following == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", raw[index + 2 : index + 6]):
                out.append(chr(int(raw[index + 2 : index + 6], 16)))
                index += 6
                continue
            column = span.column + 1 + index
            problems.append(
                Diagnostic(
                    "PE107",
                    Severity.ERROR,
                    f"unknown escape '\\{following}' in string",
                    Span(span.file, span.line, column, span.line, column + 2),
                    'valid escapes are \\" \\\\ \\n \\t \\r \\{ \\} and \\uXXXX',
                )
            )
        out.append(char)
        index += 1
    return "".join(out)


def _span_of(
    path: str, meta: Position | None, line_offset: int = 0, column_offset: int = 0
) -> Span:
    assert meta is not None  # only the (unused) extent of an empty file is None
    first_line, first_column, last_line, last_column = meta
    line = first_line + line_offset
    end_line = last_line + line_offset
    column = first_column + (column_offset if first_line == 1 else 0)
    end_column = last_column + (column_offset if last_line == 1 else 0)
    return Span(path, line, column, end_line, end_column)


def _token_span(path: str, token: Token, line_offset: int = 0, column_offset: int = 0) -> Span:
    line = (token.line or 1) + line_offset
    column = (token.column or 1) + (column_offset if token.line == 1 else 0)
    end_line = (token.end_line or token.line or 1) + line_offset
    end_column = (token.end_column or column + len(token)) + (
        column_offset if token.end_line == 1 else 0
    )
    return Span(path, line, column, end_line, end_column)


class _Builder:
    """Reductions → ``nodes``; each callback gets its rule's extent and kept children.

    Offsets place expressions parsed out of a reason string.
    """

    def __init__(self, path: str, line_offset: int = 0, column_offset: int = 0):
        self.path = path
        self.line_offset = line_offset
        self.column_offset = column_offset
        self.problems: list[Diagnostic] = []

    def _problem(self, code: str, message: str, span: Span, hint: str | None = None) -> None:
        self.problems.append(Diagnostic(code, Severity.ERROR, message, span, hint))

    def _span(self, meta: Any) -> Span:
        return _span_of(self.path, meta, self.line_offset, self.column_offset)

    def _tspan(self, token: Token) -> Span:
        return _token_span(self.path, token, self.line_offset, self.column_offset)

    def _string(self, token: Token) -> str:
        return _unescape(token.value[1:-1], self._tspan(token), self.problems)

    # items
    def start(self, meta: Any, items: list[Any]) -> list[Any]:
        return items

    def import_stmt(self, meta: Any, children: list[Any]) -> n.Import:
        return n.Import(self._string(children[0]), self._span(meta))

    def policy(self, meta: Any, children: list[Any]) -> n.Policy:
        name, *body = children
        return n.Policy(self._string(name), tuple(body), self._span(meta), self._tspan(name))

    def library(self, meta: Any, children: list[Any]) -> n.Library:
        name, *body = children
        return n.Library(str(name), tuple(body), self._span(meta), self._tspan(name))

    def profile(self, meta: Any, children: list[Any]) -> n.Profile:
        name, *lists = children
        tokens = [token for group in lists for token in group]
        return n.Profile(
            self._string(name),
            tuple(self._string(t) for t in tokens),
            self._span(meta),
            tuple(self._tspan(t) for t in tokens),
        )

    def profile_policies(self, meta: Any, children: list[Token]) -> list[Token]:
        return children

    def _shallow(self, expr: n.Expr | None) -> None:
        """Report ``expr`` when it nests deeper than ``MAX_NESTING``."""
        if expr is None:
            return
        depth = n.nesting_depth(expr)
        if depth > MAX_NESTING:
            self._problem(
                "PE109",
                f"this expression nests {depth} levels deep; at most {MAX_NESTING} are allowed",
                expr.span,  # type: ignore[attr-defined]
                "split it with let bindings, or use a list, set or map with 'in' or an "
                "aggregate (any, all, sum, …) instead of a long chain",
            )

    # statements
    def match_stmt(self, meta: Any, children: list[Any]) -> n.Match:
        self._shallow(children[0])
        return n.Match(children[0], self._span(meta))

    def use_stmt(self, meta: Any, children: list[Any]) -> n.Use:
        name, body = children
        return n.Use(str(name), tuple(body or ()), self._span(meta), self._tspan(name))

    def use_body(self, meta: Any, children: list[Any]) -> list[Any]:
        return children

    def disable_item(self, meta: Any, children: list[Any]) -> n.Disable:
        kind, name = children
        return n.Disable(str(name), self._span(meta), kind)

    def kind_filter(self, meta: Any, children: list[Token]) -> str:
        return "filter"

    def kind_score(self, meta: Any, children: list[Token]) -> str:
        return "score"

    def reweight_item(self, meta: Any, children: list[Token]) -> n.Reweight:
        return n.Reweight(str(children[0]), self._whole(children[1]), self._span(meta))

    def _whole(self, token: Token) -> int:
        if token.type != "INT":
            self._problem(
                "PE108",
                f"a weight is a whole number, not '{token}'",
                self._tspan(token),
                "weights are integers from 0 to 100",
            )
            return 1
        return int(token)

    def let_stmt(self, meta: Any, children: list[Any]) -> n.Let:
        name, expr = children
        self._shallow(expr)
        return n.Let(str(name), expr, self._span(meta), self._tspan(name))

    def filter_rule(self, meta: Any, children: list[Any]) -> n.Filter:
        name, guard, body, reason = children
        for expr in (guard, body, reason):
            self._shallow(expr)
        return n.Filter(str(name), guard, body, reason, self._span(meta), self._tspan(name))

    def score_rule(self, meta: Any, children: list[Any]) -> n.Score:
        name, weight, normalize, guard, body = children
        self._shallow(guard)
        self._shallow(body)
        return n.Score(
            str(name),
            self._whole(weight) if weight is not None else None,
            str(normalize) if normalize is not None else None,
            guard,
            body,
            self._span(meta),
            self._tspan(name),
            self._tspan(weight) if weight is not None else None,
            self._tspan(normalize) if normalize is not None else None,
        )

    def preempt_rule(self, meta: Any, children: list[Any]) -> n.Preempt:
        guard, body = children
        self._shallow(guard)
        self._shallow(body)
        return n.Preempt(guard, body, self._span(meta))

    def select_stmt(self, meta: Any, children: list[Any]) -> n.Select:
        mode, key = children
        if key is not None:
            self._shallow(key)
        return n.Select(str(mode), key, self._span(meta), self._tspan(mode))

    def device_stmt(self, meta: Any, children: list[Any]) -> n.Device:
        mode, shapes = children
        if shapes is not None:
            self._shallow(shapes)
        return n.Device(str(mode), shapes, self._span(meta), self._tspan(mode))

    def overcommit_stmt(self, meta: Any, children: list[Any]) -> n.Overcommit:
        (resource, resource_span), (ratio, ratio_text, ratio_span), max_load = children
        limit, limit_text = (None, "") if max_load is None else max_load[:2]
        return n.Overcommit(
            resource,
            ratio,
            self._span(meta),
            ratio_text,
            limit,
            limit_text,
            resource_span=resource_span,
            ratio_span=ratio_span,
        )

    def max_load(self, meta: Any, children: list[Any]) -> tuple[int | float, str, Span]:
        ratio: tuple[int | float, str, Span] = children[0]
        return ratio

    def gang_block(self, meta: Any, children: list[Any]) -> n.GangBlock:
        return n.GangBlock(tuple(children), self._span(meta))

    def within_stmt(self, meta: Any, children: list[Any]) -> n.Within:
        *levels, required = children
        return n.Within(
            tuple(str(t) for t in levels),
            required is not None,
            self._span(meta),
            tuple(self._tspan(t) for t in levels),
        )

    def required(self, meta: Any, children: list[Token]) -> bool:
        return True

    def resource_name(self, meta: Any, children: list[Token]) -> tuple[str, Span]:
        token = children[0]
        name = self._string(token) if token.type == "STRING" else str(token)
        return name, self._tspan(token)

    def ratio(self, meta: Any, children: list[Token]) -> tuple[int | float, str, Span]:
        token = children[0]
        value = int(token) if token.type == "INT" else float(token)
        return value, str(token), self._tspan(token)

    def weight(self, meta: Any, children: list[Token]) -> Token:
        return children[0]

    def normalize(self, meta: Any, children: list[Token]) -> Token:
        return children[0]

    def guard(self, meta: Any, children: list[n.Expr]) -> n.Expr:
        return children[0]

    def block(self, meta: Any, children: list[n.Expr]) -> n.Expr:
        return children[0]

    def reason(self, meta: Any, children: list[Token]) -> n.Template:
        return self._template(children[0])

    def _template(self, token: Token) -> n.Template:
        """Split a reason string into text and ``{expr}`` holes; ``{{`` and ``}}`` are braces."""
        raw = token.value[1:-1]
        span = self._tspan(token)
        _unescape(raw, span, self.problems)  # report bad escapes at their true columns once
        quiet: list[Diagnostic] = []
        parts: list[str | n.Expr] = []
        text: list[str] = []
        index = 0
        while index < len(raw):
            char = raw[index]
            if raw.startswith("{{", index) or raw.startswith("}}", index):
                text.append(char)
                index += 2
                continue
            if char == "\\" and index + 1 < len(raw):
                text.append(raw[index : index + 2])
                index += 2
                continue
            if char == "}":
                column = span.column + 1 + index
                self._problem(
                    "PE107",
                    "unmatched '}' in reason",
                    Span(span.file, span.line, column, span.line, column + 1),
                    "write '}}' for a literal brace",
                )
                index += 1
                continue
            if char != "{":
                # Copy the run of plain characters up to the next brace or backslash at once.
                special = _TEMPLATE_SPECIAL.search(raw, index + 1)
                following = special.start() if special is not None else len(raw)
                text.append(raw[index:following])
                index = following
                continue
            close = _hole_end(raw, index + 1)
            column = span.column + 1 + index
            if close < 0:
                self._problem(
                    "PE107",
                    "'{' in reason is not closed",
                    Span(span.file, span.line, column, span.line, column + 1),
                    "close the hole with '}', or write '{{' for a literal brace",
                )
                break
            if text:
                parts.append(_unescape("".join(text), span, quiet))
                text = []
            # Inside a hole, \" stands for a quote so that holes may hold string literals.
            hole = raw[index + 1 : close].replace('\\"', '"')
            parts.append(self._hole(hole, span.line, column + 1))
            index = close + 1
        if text:
            parts.append(_unescape("".join(text), span, quiet))
        return n.Template(tuple(parts), span)

    def _hole(self, source: str, line: int, column: int) -> n.Expr:
        builder = _Builder(self.path, line - 1, column - 1)
        try:
            expr: n.Expr = _driver().parse(source, "expr", builder)
        except UnexpectedInput as error:
            at = column + max((getattr(error, "column", 1) or 1) - 1, 0)
            self._problem(
                "PE107",
                f"the expression {{{source}}} in this reason is not valid",
                Span(self.path, line, at, line, at + 1),
                "a reason hole holds one expression, such as {node.name}",
            )
            return n.Literal(
                "string", source, source, Span(self.path, line, column, line, column + 1)
            )
        self.problems.extend(builder.problems)
        return expr

    # expressions
    def conditional(self, meta: Any, children: list[Any]) -> n.Conditional:
        return n.Conditional(children[0], children[1], children[2], self._span(meta))

    def _binary(
        self, meta: Any, op: str, left: Any, right: Any, op_token: Token | None = None
    ) -> n.Binary:
        op_span = self._tspan(op_token) if op_token is not None else self._span(meta)
        return n.Binary(op, left, right, self._span(meta), op_span)

    def or_op(self, meta: Any, children: list[Any]) -> n.Binary:
        return self._chain(meta, "or", children)

    def and_op(self, meta: Any, children: list[Any]) -> n.Binary:
        return self._chain(meta, "and", children)

    def _chain(self, meta: Any, op: str, operands: list[n.Expr]) -> n.Binary:
        """A run of ``and`` (or ``or``) as ``nodes.run_of`` balances it, spanning the text."""
        built = n.run_of(op, operands)
        assert isinstance(built, n.Binary)
        span = self._span(meta)
        return n.Binary(op, built.left, built.right, span, span)

    def not_op(self, meta: Any, children: list[Any]) -> n.Unary:
        return n.Unary("not", children[0], self._span(meta))

    def compare(self, meta: Any, children: list[Any]) -> n.Binary:
        left, op, right = children
        return self._binary(meta, str(op), left, right, op)

    def in_op(self, meta: Any, children: list[Any]) -> n.Binary:
        return self._binary(meta, "in", children[0], children[1])

    def not_in_op(self, meta: Any, children: list[Any]) -> n.Binary:
        return self._binary(meta, "not in", children[0], children[1])

    def coalesce_op(self, meta: Any, children: list[Any]) -> n.Binary:
        return self._binary(meta, "??", children[0], children[1])

    def arith(self, meta: Any, children: list[Any]) -> n.Binary:
        left, op, right = children
        return self._binary(meta, str(op), left, right, op)

    def negate(self, meta: Any, children: list[Any]) -> n.Unary:
        return n.Unary("-", children[0], self._span(meta))

    def attribute(self, meta: Any, children: list[Any]) -> n.Attribute:
        obj, name = children
        return n.Attribute(obj, str(name), self._span(meta), self._tspan(name))

    def method_call(self, meta: Any, children: list[Any]) -> n.MethodCall:
        obj, name, args = children
        return n.MethodCall(obj, str(name), tuple(args or ()), self._span(meta), self._tspan(name))

    def index(self, meta: Any, children: list[Any]) -> n.Index:
        return n.Index(children[0], children[1], self._span(meta))

    def int_lit(self, meta: Any, children: list[Token]) -> n.Literal:
        return n.Literal("int", int(children[0]), str(children[0]), self._span(meta))

    def float_lit(self, meta: Any, children: list[Token]) -> n.Literal:
        return n.Literal("float", float(children[0]), str(children[0]), self._span(meta))

    def quantity_lit(self, meta: Any, children: list[Token]) -> n.Literal:
        text = str(children[0])
        try:
            value: Fraction = parse_quantity(text)
        except QuantityError as error:  # the token regex and parse_quantity agree; defensive
            self._problem("PE107", str(error), self._span(meta))
            value = Fraction(0)
        return n.Literal("quantity", value, text, self._span(meta))

    def string_lit(self, meta: Any, children: list[Token]) -> n.Literal:
        token = children[0]
        return n.Literal("string", self._string(token), str(token), self._span(meta))

    def true_lit(self, meta: Any, children: list[Any]) -> n.Literal:
        return n.Literal("bool", True, "true", self._span(meta))

    def false_lit(self, meta: Any, children: list[Any]) -> n.Literal:
        return n.Literal("bool", False, "false", self._span(meta))

    def null_lit(self, meta: Any, children: list[Any]) -> n.Literal:
        return n.Literal("null", None, "null", self._span(meta))

    def name(self, meta: Any, children: list[Token]) -> n.Name:
        return n.Name(str(children[0]), self._span(meta))

    def call(self, meta: Any, children: list[Any]) -> n.Call:
        func, args = children
        return n.Call(str(func), tuple(args or ()), self._span(meta), self._tspan(func))

    def args(self, meta: Any, children: list[Any]) -> list[Any]:
        return children

    def generator_args(self, meta: Any, children: list[Any]) -> list[Any]:
        element, (targets, target_spans, iterable, condition) = children
        return [
            n.Comprehension(
                "generator", element, targets, iterable, condition, self._span(meta), target_spans
            )
        ]

    def comp_for(self, meta: Any, children: list[Any]) -> tuple[Any, ...]:
        first, second, iterable, condition = children
        tokens = [t for t in (first, second) if t is not None]
        return (
            tuple(str(t) for t in tokens),
            tuple(self._tspan(t) for t in tokens),
            iterable,
            condition,
        )

    def list_lit(self, meta: Any, children: list[Any]) -> n.ListLit:
        return n.ListLit(tuple(c for c in children if c is not None), self._span(meta))

    def list_comp(self, meta: Any, children: list[Any]) -> n.Comprehension:
        element, (targets, target_spans, iterable, condition) = children
        return n.Comprehension(
            "list", element, targets, iterable, condition, self._span(meta), target_spans
        )

    def map_lit(self, meta: Any, children: list[Any]) -> n.MapLit:
        return n.MapLit(tuple(c for c in children if c is not None), self._span(meta))

    def map_entry(self, meta: Any, children: list[Any]) -> tuple[n.Expr, n.Expr]:
        return (children[0], children[1])

    def set_lit(self, meta: Any, children: list[Any]) -> n.SetLit:
        return n.SetLit(tuple(c for c in children if c is not None), self._span(meta))


_driver_lock = threading.Lock()
_shared_driver: Driver | TreeDriver | None = None


def _driver() -> Driver | TreeDriver:
    """The shared driver (it holds no per-parse state), made once from the shared lark parser."""
    global _shared_driver
    if _shared_driver is None:
        with _driver_lock:
            if _shared_driver is None:
                try:
                    _shared_driver = Driver(lark_parser(), _Builder)
                except (AttributeError, TypeError, KeyError):
                    # A lark release that moved the internals the driver reads: same trees,
                    # slower (lark builds its own tree first).
                    _shared_driver = TreeDriver(lark_parser())
    return _shared_driver
