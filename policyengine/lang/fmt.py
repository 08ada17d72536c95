"""The canonical layout of a .sched file, so that reviews argue about policy, not spacing.

The formatter prints the syntax tree again rather than editing the text, so there is one
layout whatever the input looked like. Comments are not part of the tree: they are placed back
by position against the spans of the items and statements (see ``_distribute``).

Layout rules (the documentation's fmt page, docs/commands/fmt.md, repeats them):

* 2-space indentation, one statement per line, no trailing blanks, LF line endings and one
  final newline.
* One blank line between top-level items (consecutive imports may stay together); inside a
  block, blank lines are kept where there were some, at most one, never right after ``{`` or
  before ``}``.
* A rule stays on one line (``filter x when g { body } reason "…"``) when that fits in 100
  columns; otherwise its body goes on its own indented line(s) and ``}`` (followed by the
  reason, if any) closes it. A body that still does not fit and is an operator chain
  (``and``, ``or``, ``+``, ``??``, a comparison, …) is broken one operand per line, each
  continuation line starting with its operator; an operand that is itself a long chain
  breaks the same way, one indent deeper (inside ``(`` and ``)`` on lines of their own when
  it is parenthesised). Other long expressions (calls, literals, guards) stay on one line.
* ``let`` and ``match`` stay on one line when they fit; a longer operator chain there breaks
  after the first operand, continuation lines one indent deeper, led by their operator.
* Parentheses only where precedence needs them, with one exception for readability: a
  conditional used as the condition or the ``then`` branch of another one keeps them. A
  double negation is written ``- -x``. ``and`` and ``or`` are associative: a parenthesised
  run of one inside a run of the same one (``a or (b or c)``) joins it (``a or b or c``).
* Number and quantity literals, and string literals, keep their spelling (the tree records it
  and compares it); strings the tree keeps only as values — names of policies and profiles,
  import paths, reason templates — are re-escaped canonically: ``\\"`` ``\\\\`` ``\\n`` ``\\t``
  ``\\r``, other invisible characters as ``\\uXXXX``, the rest as they are; a reason's literal
  braces are written ``{{`` / ``}}``.
* ``use lib { … }`` keeps a single ``disable``/``weight`` inline (``use lib { disable x }``)
  when that fits and no comment stands inside, else puts one per line; ``use lib {}`` is
  ``use lib``. A profile lists its policies on one ``policies`` line when that fits and no
  comment stands inside it, else one ``policies "name"`` line each. An empty block is ``{}``.
* Comments: an own-line comment stays above what follows it (or at the end of its block); a
  comment after code stays at the end of the line where its statement ends (after ``{`` on a
  policy's, library's, profile's or ``use``'s first line, it stays there). A comment that stood
  anywhere else inside a statement — after a multi-line rule's ``{``, inside its body, in the
  middle of a multi-line expression, between a rule's ``}`` and its ``reason`` — moves, in
  order, to just above that statement.

The result is checked before it is returned: it must parse to a tree equal to the original,
with the same comments in the same order; if not, the file is left alone and a diagnostic
says why (a bug in this module, never a reason to lose a comment).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from policyengine.diagnostics import Diagnostic, Severity, Span
from policyengine.lang import nodes as n
from policyengine.lang.parser import parse

WIDTH = 100
INDENT = "  "

__all__ = [
    "WIDTH",
    "FormatResult",
    "format_file",
    "format_source",
    "print_expr",
    "quote",
]


@dataclass(frozen=True)
class FormatResult:
    """``text`` is the formatted source, or None when the file could not be formatted."""

    text: str | None
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def ok(self) -> bool:
        return self.text is not None


def format_source(source: str, path: str = "<input>") -> FormatResult:
    """Format one file's text; a file with syntax errors comes back with the parser's diagnostics."""
    result = parse(source, path)
    if not result.ok or result.file is None:
        return FormatResult(None, result.diagnostics)
    text = format_file(result.file)
    problem = _verify(result.file, text, path)
    if problem is not None:
        return FormatResult(None, (problem,))
    return FormatResult(text, ())


def format_file(file: n.SourceFile) -> str:
    """The canonical text of a parsed file (its ``source`` tells where the blank lines were)."""
    return _Printer(file.source).file(file.items, file.comments)


def _verify(original: n.SourceFile, text: str, path: str) -> Diagnostic | None:
    reparsed = parse(text, path)
    same = (
        reparsed.ok
        and reparsed.file is not None
        and reparsed.file == original
        and [c.text for c in reparsed.file.comments] == [c.text for c in original.comments]
    )
    if same:
        return None
    return Diagnostic(
        "PE199",
        Severity.ERROR,
        "internal error: formatting would change this file's meaning or comments, "
        "so it was left as it is",
        Span(path, 1, 1, 1, 2),
        "this is a bug in policyengine fmt; please report it with the file",
    )


# --- strings -------------------------------------------------------------------------------

_SIMPLE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_KEYWORDS = frozenset(
    {
        *("import", "policy", "library", "profile", "policies", "match", "use", "disable"),
        *("weight", "let", "filter", "score", "overcommit", "normalize", "when", "reason"),
        "max_load",
        *("gang", "within", "required"),
        "preempt",
        "select",
        "device",
        *("if", "then", "else", "or", "and", "not", "in", "true", "false", "null", "for"),
    }
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _escape_char(char: str) -> str:
    if char in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[char]
    # Invisible and line-breaking characters are spelled out: a raw U+2028 would even move
    # the line numbers other tools compute.
    if not char.isprintable() and ord(char) <= 0xFFFF:
        return f"\\u{ord(char):04x}"
    return char


def quote(value: str) -> str:
    """A string literal whose value is ``value``, escaped canonically."""
    return '"' + "".join(_escape_char(c) for c in value) + '"'


def _quote_template(template: n.Template) -> str:
    out = ['"']
    for part in template.parts:
        if isinstance(part, str):
            for char in part:
                out.append("{{" if char == "{" else "}}" if char == "}" else _escape_char(char))
        else:
            out.append("{" + _hole_text(print_expr(part)) + "}")
    out.append('"')
    return "".join(out)


def _hole_text(expr: str) -> str:
    """``expr`` written inside a reason's hole, where the parser reads an escaped quote back
    as a quote and keeps every other escape for the hole's own string literals. A quote escaped
    inside one of those literals is written as the \\u0022 escape: as a backslash pair and a
    quote it would end the reason's string."""
    out = []
    index = 0
    while index < len(expr):
        char = expr[index]
        if char == "\\":  # an escape inside a string literal: kept whole
            pair = expr[index : index + 2]
            out.append("\\u0022" if pair == '\\"' else pair)
            index += 2
            continue
        out.append('\\"' if char == '"' else char)
        index += 1
    return "".join(out)


def _resource(name: str) -> str:
    """``overcommit`` takes a name or a string; the tree keeps only the value."""
    if _NAME.fullmatch(name) and name not in _KEYWORDS:
        return name
    return quote(name)


# --- expressions ---------------------------------------------------------------------------

# Binding strength, loosest first, as in grammar/sched.lark.
COND, OR, AND, NOT, CMP, COAL, ADD, MUL, NEG, POSTFIX, ATOM = range(11)
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "not in"})


def _level(expr: n.Expr) -> int:
    match expr:
        case n.Conditional():
            return COND
        case n.Binary(op="or"):
            return OR
        case n.Binary(op="and"):
            return AND
        case n.Unary(op="not"):
            return NOT
        case n.Binary(op=op) if op in _COMPARISONS:
            return CMP
        case n.Binary(op="??"):
            return COAL
        case n.Binary(op="+" | "-"):
            return ADD
        case n.Binary():
            return MUL
        case n.Unary():
            return NEG
        case n.Attribute() | n.Index() | n.MethodCall():
            return POSTFIX
        case _:
            return ATOM


def _operand_levels(expr: n.Binary) -> tuple[int, int]:
    """The loosest level each side may hold without parentheses (left, right)."""
    level = _level(expr)
    if level == CMP:  # comparisons do not chain
        return COAL, COAL
    if level == COAL:  # right-associative
        return ADD, COAL
    if level in (OR, AND):  # associative: the parser balances a run and joins parenthesised ones
        return level, level
    return level, level + 1  # left-associative


def print_expr(expr: n.Expr, minimum: int = COND) -> str:
    """One-line text of ``expr``, parenthesised if it binds looser than ``minimum``."""
    text = _print(expr)
    return f"({text})" if _level(expr) < minimum else text


def _args(args: Sequence[n.Expr]) -> str:
    return ", ".join(print_expr(a) for a in args)


def _print(expr: n.Expr) -> str:
    match expr:
        case n.Literal(text=text):
            return text
        case n.Name(id=name):
            return name
        case n.Attribute(obj=obj, name=name):
            return f"{print_expr(obj, POSTFIX)}.{name}"
        case n.Index(obj=obj, index=index):
            return f"{print_expr(obj, POSTFIX)}[{print_expr(index)}]"
        case n.Call(func=func, args=args):
            return f"{func}({_args(args)})"
        case n.MethodCall(obj=obj, name=name, args=args):
            return f"{print_expr(obj, POSTFIX)}.{name}({_args(args)})"
        case n.Unary(op="not", operand=operand):
            return f"not {print_expr(operand, NOT)}"
        case n.Unary(op=op, operand=operand):
            inner = print_expr(operand, NEG)
            # `- -x`, not `--x`, which reads like a decrement.
            return f"{op} {inner}" if inner.startswith("-") else f"{op}{inner}"
        case n.Binary(op=op, left=left, right=right):
            left_min, right_min = _operand_levels(expr)
            return f"{print_expr(left, left_min)} {op} {print_expr(right, right_min)}"
        case n.Conditional(cond=cond, then=then, otherwise=otherwise):
            # Minimal would be no parentheses at all; `if if a then …` reads too badly.
            return (
                f"if {print_expr(cond, OR)} then {print_expr(then, OR)} "
                f"else {print_expr(otherwise)}"
            )
        case n.ListLit(items=items):
            return f"[{_args(items)}]"
        case n.SetLit(items=items):
            return "{" + _args(items) + "}"
        case n.MapLit(entries=entries):
            return "{" + ", ".join(f"{print_expr(k)}: {print_expr(v)}" for k, v in entries) + "}"
        case n.Comprehension(kind=kind):
            inner = _comprehension(expr)
            return f"[{inner}]" if kind == "list" else inner
        case n.Template():
            return _quote_template(expr)
    raise TypeError(f"cannot print {type(expr).__name__}")


def _comprehension(comp: n.Comprehension) -> str:
    # The grammar takes the iterable and the condition at `or` level: a conditional there
    # needs its parentheses.
    text = (
        f"{print_expr(comp.element)} for {', '.join(comp.targets)} "
        f"in {print_expr(comp.iterable, OR)}"
    )
    if comp.condition is not None:
        text += f" if {print_expr(comp.condition, OR)}"
    return text


def _spine(expr: n.Binary) -> tuple[list[n.Expr], list[str], list[int]]:
    """A run of operators of one level as operands, operators and each operand's minimum level.

    ``a - b + c`` (left-nested) gives [a, b, c] and [-, +]; ``a ?? b ?? c`` (right-nested) gives
    [a, b, c] too, and so does a balanced ``a or b or c``; a comparison has just its two sides.
    """
    level = _level(expr)
    left_min, right_min = _operand_levels(expr)
    if level == CMP:
        return [expr.left, expr.right], [expr.op], [left_min, right_min]
    operands: list[n.Expr] = []
    ops: list[str] = []
    node: n.Expr = expr
    if level in (OR, AND):
        # A balanced run: its operands in order, however the tree was split.
        stack: list[n.Expr] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, n.Binary) and _level(node) == level:
                stack += (node.right, node.left)
                ops.append(node.op)
            else:
                operands.append(node)
        return operands, ops, [level + 1] * len(operands)
    if level == COAL:
        while isinstance(node, n.Binary) and _level(node) == level:
            operands.append(node.left)
            ops.append(node.op)
            node = node.right
        return [*operands, node], ops, [left_min] * len(operands) + [right_min]
    while isinstance(node, n.Binary) and _level(node) == level:
        operands.append(node.right)
        ops.append(node.op)
        node = node.left
    operands.append(node)
    return operands[::-1], ops[::-1], [left_min] + [right_min] * len(ops)


def _block_lines(expr: n.Expr, depth: int) -> list[str]:
    """An expression whose lines all start at ``depth``: a rule's body, a parenthesised chain.

    It stays on one line if that fits; otherwise a binary operator chain (``and``, ``or``,
    ``+``, ``??``, …) goes one operand a line, each continuation led by its operator.
    """
    pad = INDENT * depth
    flat = print_expr(expr)
    if len(pad) + len(flat) <= WIDTH or not isinstance(expr, n.Binary):
        return [pad + flat]
    return _spine_lines(expr, depth, pad)


def _spine_lines(expr: n.Binary, depth: int, lead: str) -> list[str]:
    operands, ops, minimums = _spine(expr)
    pad = INDENT * depth
    lines = _hanging(operands[0], depth + 1, lead, minimums[0])
    for op, operand, minimum in zip(ops, operands[1:], minimums[1:], strict=True):
        lines.extend(_hanging(operand, depth + 1, f"{pad}{op} ", minimum))
    return lines


def _hanging(expr: n.Expr, depth: int, lead: str, minimum: int = COND) -> list[str]:
    """``lead`` then ``expr``; if it must break, its continuation lines start at ``depth``.

    An operand that is itself a chain thus breaks one indent deeper than the chain holding it,
    so that ``a and b`` inside ``or`` still reads as one operand; a parenthesised one opens and
    closes its parentheses on lines of their own.
    """
    flat = print_expr(expr, minimum)
    if len(lead) + len(flat) <= WIDTH or not isinstance(expr, n.Binary):
        return [lead + flat]
    if _level(expr) < minimum:
        return [lead + "(", *_block_lines(expr, depth), INDENT * (depth - 1) + ")"]
    return _spine_lines(expr, depth, lead)


# --- comments ------------------------------------------------------------------------------


def _start(span: Span) -> tuple[int, int]:
    return (span.line, span.column)


def _end(span: Span) -> tuple[int, int]:
    return (span.end_line, span.end_column)


@dataclass
class _Placement:
    """Where the comments of one block go, relative to its children."""

    header: list[n.Comment] = field(default_factory=list)  # after `{` on the header line
    before: list[list[n.Comment]] = field(default_factory=list)  # own lines above child k
    inside: list[list[n.Comment]] = field(default_factory=list)  # within child k, or after it
    end: list[n.Comment] = field(default_factory=list)  # own lines before `}`
    closing: list[n.Comment] = field(default_factory=list)  # after `}`


def _distribute(
    comments: Sequence[n.Comment], children: Sequence[Span], container: Span | None
) -> _Placement:
    """Assign each comment of a block to the block or to one child, by position."""
    placement = _Placement(before=[[] for _ in children], inside=[[] for _ in children])
    for comment in comments:
        at = _start(comment.span)
        if container is not None and at >= _end(container):
            placement.closing.append(comment)
            continue
        holder = next(
            (k for k, span in enumerate(children) if _start(span) <= at < _end(span)), None
        )
        if holder is None:
            # A comment after a child's last token, on the line where that child ends.
            ended = [k for k, span in enumerate(children) if _end(span) <= at]
            if ended and children[ended[-1]].end_line == comment.span.line:
                holder = ended[-1]
        if holder is not None:
            placement.inside[holder].append(comment)
        elif container is not None and comment.span.line == container.line:
            placement.header.append(comment)
        else:
            following = next((k for k, span in enumerate(children) if _start(span) > at), None)
            if following is None:
                placement.end.append(comment)
            else:
                placement.before[following].append(comment)
    return placement


def _with_trailing(lines: list[str], comments: Sequence[n.Comment]) -> list[str]:
    if not comments:
        return lines
    return [*lines[:-1], lines[-1] + "".join(f"  {c.text}" for c in comments)]


@dataclass(frozen=True)
class _Entry:
    """Printed lines standing for source lines ``first``..``last`` (for blank-line keeping).

    At the top level, ``item`` is the item the entry is or leads (None for comments at the
    end of the file), since blank lines there depend on which items meet.
    """

    first: int
    last: int
    lines: list[str]
    item: n.Item | None = None
    is_item: bool = False


# Prints one child of a block, given the comments that belong to it and its depth.
_Render = Callable[[Sequence[n.Comment], int], list[str]]


# --- printing ------------------------------------------------------------------------------


class _Printer:
    def __init__(self, source: str):
        self.source_lines = source.split("\n")

    def _blank_between(self, last: int, first: int) -> bool:
        """Whether the source has a blank line between line ``last`` and line ``first``."""
        return any(not line.strip() for line in self.source_lines[last : first - 1])

    def _join(self, entries: Sequence[_Entry]) -> list[str]:
        lines: list[str] = []
        for position, entry in enumerate(entries):
            if position and self._blank_between(entries[position - 1].last, entry.first):
                lines.append("")
            lines.extend(entry.lines)
        return lines

    # file

    def file(self, items: Sequence[n.Item], comments: Sequence[n.Comment]) -> str:
        placement = _distribute(comments, [item.span for item in items], None)
        entries: list[_Entry] = []
        for k, item in enumerate(items):
            for comment in placement.before[k]:
                entries.append(_Entry(comment.span.line, comment.span.line, [comment.text], item))
            lines = self.item(item, placement.inside[k])
            entries.append(_Entry(item.span.line, item.span.end_line, lines, item, is_item=True))
        for comment in placement.end:
            entries.append(_Entry(comment.span.line, comment.span.line, [comment.text]))
        lines = []
        for previous, entry in zip([None, *entries], entries, strict=False):
            if previous is None:
                pass
            elif previous.is_item and not (
                isinstance(previous.item, n.Import) and isinstance(entry.item, n.Import)
            ):
                lines.append("")  # items are one blank line apart, imports may stay together
            elif self._blank_between(previous.last, entry.first):
                lines.append("")
            lines.extend(entry.lines)
        return "\n".join(lines) + "\n" if lines else ""

    def item(self, item: n.Item, comments: Sequence[n.Comment]) -> list[str]:
        match item:
            case n.Import(path=path):
                return self._leaf([f"import {quote(path)}"], item.span, comments, 0)
            case n.Library(name=name):
                return self._block(f"library {name}", item, comments, 0)
            case n.Policy(name=name):
                return self._block(f"policy {quote(name)}", item, comments, 0)
            case n.Profile():
                return self._profile(item, comments)
        raise TypeError(f"cannot print {type(item).__name__}")

    # blocks

    def _leaf(
        self, lines: list[str], span: Span, comments: Sequence[n.Comment], depth: int
    ) -> list[str]:
        """A statement and its comments: those inside it go above, the one after it trails."""
        pad = INDENT * depth
        trailing = [c for c in comments if _start(c.span) >= _end(span)]
        above = [pad + c.text for c in comments if _start(c.span) < _end(span)]
        return above + _with_trailing(lines, trailing)

    def _container(
        self,
        head: str,
        span: Span,
        children: Sequence[tuple[Span, _Render]],
        comments: Sequence[n.Comment],
        depth: int,
    ) -> list[str]:
        pad = INDENT * depth
        placement = _distribute(comments, [child_span for child_span, _ in children], span)
        entries: list[_Entry] = []
        for k, (child_span, render) in enumerate(children):
            for comment in placement.before[k]:
                line = comment.span.line
                entries.append(_Entry(line, line, [pad + INDENT + comment.text]))
            lines = render(placement.inside[k], depth + 1)
            entries.append(_Entry(child_span.line, child_span.end_line, lines))
        for comment in placement.end:
            line = comment.span.line
            entries.append(_Entry(line, line, [pad + INDENT + comment.text]))
        if not entries and not placement.header:
            return _with_trailing([f"{pad}{head} {{}}"], placement.closing)
        opening = _with_trailing([f"{pad}{head} {{"], placement.header)
        closing = _with_trailing([f"{pad}}}"], placement.closing)
        return opening + self._join(entries) + closing

    def _block(
        self, head: str, block: n.Policy, comments: Sequence[n.Comment], depth: int
    ) -> list[str]:
        children = [
            (statement.span, self._statement_renderer(statement)) for statement in block.body
        ]
        return self._container(head, block.span, children, comments, depth)

    def _profile(self, profile: n.Profile, comments: Sequence[n.Comment]) -> list[str]:
        head = f"profile {quote(profile.scheduler_name)}"
        spans = list(profile.policy_spans)
        if len(spans) != len(profile.policies):  # a tree built by hand has no spans
            spans = [profile.span] * len(profile.policies)
        placement = _distribute(comments, spans, profile.span)
        inner_comments = len(comments) - len(placement.closing)
        compact = INDENT + "policies " + ", ".join(quote(p) for p in profile.policies)
        if profile.policies and inner_comments == 0 and len(compact) <= WIDTH:
            return _with_trailing([f"{head} {{", compact, "}"], placement.closing)

        def entry(name: str, span: Span) -> _Render:
            return lambda cs, depth: self._leaf(
                [INDENT * depth + f"policies {quote(name)}"], span, cs, depth
            )

        children = [
            (span, entry(name, span)) for name, span in zip(profile.policies, spans, strict=True)
        ]
        return self._container(head, profile.span, children, comments, 0)

    # statements

    def _statement_renderer(self, statement: n.Statement | n.Within) -> _Render:
        def render(comments: Sequence[n.Comment], depth: int) -> list[str]:
            if isinstance(statement, n.Use) and statement.adjustments:
                return self._use(statement, comments, depth)
            if isinstance(statement, n.GangBlock):
                children = [(s.span, self._statement_renderer(s)) for s in statement.body]
                return self._container("gang", statement.span, children, comments, depth)
            return self._leaf(self._statement(statement, depth), statement.span, comments, depth)

        return render

    def _use(self, use: n.Use, comments: Sequence[n.Comment], depth: int) -> list[str]:
        def text(item: n.Disable | n.Reweight) -> str:
            if isinstance(item, n.Disable):
                kind = f"{item.kind} " if item.kind else ""
                return f"disable {kind}{item.rule}"
            return f"weight {item.rule} {item.weight}"

        def adjustment(item: n.Disable | n.Reweight) -> _Render:
            return lambda cs, d: self._leaf([INDENT * d + text(item)], item.span, cs, d)

        head = f"{INDENT * depth}use {use.library}"
        spans = [item.span for item in use.adjustments]
        placement = _distribute(comments, spans, use.span)
        if len(use.adjustments) == 1 and len(comments) == len(placement.closing):
            # One adjustment reads well inline; two would run together with no separator.
            line = f"{head} {{ {text(use.adjustments[0])} }}"
            if len(line) <= WIDTH:
                return _with_trailing([line], placement.closing)
        children = [(item.span, adjustment(item)) for item in use.adjustments]
        return self._container(f"use {use.library}", use.span, children, comments, depth)

    def _statement(self, statement: n.Statement | n.Within, depth: int) -> list[str]:
        pad = INDENT * depth
        match statement:
            case n.Match(expr=expr):
                return _hanging(expr, depth + 1, f"{pad}match ")
            case n.Let(name=name, expr=expr):
                return _hanging(expr, depth + 1, f"{pad}let {name} = ")
            case n.Use(library=library):
                return [f"{pad}use {library}"]
            case n.Within(levels=levels, required=required):
                return [f"{pad}within {', '.join(levels)}" + (" required" if required else "")]
            case n.Overcommit(resource=resource, ratio=ratio, ratio_text=text):
                line = f"{pad}overcommit {_resource(resource)} {text or ratio}"
                if statement.max_load is not None:
                    line += f" max_load {statement.max_load_text or statement.max_load}"
                return [line]
            case n.Preempt(guard=guard, body=body):
                head = "preempt" if guard is None else f"preempt when {print_expr(guard)}"
                return self._rule(head, body, "", depth)
            case n.Device(mode=mode, shapes=shapes):
                if shapes is None:
                    return [f"{pad}device {mode}"]
                return self._rule(f"device {mode}", shapes, "", depth)
            case n.Select(mode=mode, key=key):
                if key is None:
                    return [f"{pad}select {mode}"]
                return self._rule(f"select {mode}", key, "", depth)
            case n.Filter(name=name, guard=guard, body=body, reason=reason):
                head = f"filter {name}"
                if guard is not None:
                    head += f" when {print_expr(guard)}"
                tail = f" reason {_quote_template(reason)}" if reason is not None else ""
                return self._rule(head, body, tail, depth)
            case n.Score(name=name, weight=weight, normalize=normalize, guard=guard, body=body):
                head = f"score {name}"
                if weight is not None:
                    head += f" weight {weight}"
                if normalize is not None:
                    head += f" normalize {normalize}"
                if guard is not None:
                    head += f" when {print_expr(guard)}"
                return self._rule(head, body, "", depth)
        raise TypeError(f"cannot print {type(statement).__name__}")

    def _rule(self, head: str, body: n.Expr, tail: str, depth: int) -> list[str]:
        pad = INDENT * depth
        one_line = f"{pad}{head} {{ {print_expr(body)} }}{tail}"
        if len(one_line) <= WIDTH:
            return [one_line]
        return [f"{pad}{head} {{", *_block_lines(body, depth + 1), f"{pad}}}{tail}"]
