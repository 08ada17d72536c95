"""Hypothesis strategies for the language's tests: syntax trees of whole files (expressions,
templates, statements, items) that ``fmt`` prints, and the roughening of a printed file (odd
spacing, comments) that the formatter must undo. The fmt, parser and LALR-driver properties
draw from here.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from policyengine.lang import nodes as n
from policyengine.lang.fmt import quote
from policyengine.quantity import parse_quantity

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEYWORDS = frozenset(
    {
        *("import", "policy", "library", "profile", "policies", "match", "use", "disable"),
        *("weight", "let", "filter", "score", "overcommit", "normalize", "when", "reason"),
        *("if", "then", "else", "or", "and", "not", "in", "true", "false", "null", "for"),
    }
)

# --- leaves --------------------------------------------------------------------------------

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: s not in KEYWORDS
)
# Text for string values: anything but surrogates, with the awkward characters made likely.
text_values = st.text(
    alphabet=st.one_of(
        st.sampled_from('"\\{}\n\t\r #\u00e9\u2028\x00'),
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
    ),
    max_size=8,
)


@st.composite
def string_literals(draw: st.DrawFn, in_hole: bool = False) -> n.Literal:
    """A string literal with a random — not necessarily canonical — spelling of its value
    (in a reason's hole a quote can only be spelled as its escape code)."""
    value = draw(text_values)
    spelled = []
    for char in value:
        choices = [] if in_hole and char == '"' else [quote(char)[1:-1]]
        if ord(char) <= 0xFFFF:
            choices.append(f"\\u{ord(char):04x}")
        if char in "{}":
            choices.append("\\" + char)
        if char == "\t":
            choices.append("\t")
        spelled.append(draw(st.sampled_from(choices)))
    return n.Literal("string", value, '"' + "".join(spelled) + '"')


ints = st.from_regex(r"[0-9]{1,4}", fullmatch=True).map(lambda t: n.Literal("int", int(t), t))
floats = st.from_regex(r"[0-9]{1,3}\.[0-9]{1,3}", fullmatch=True).map(
    lambda t: n.Literal("float", float(t), t)
)
quantities = st.from_regex(
    r"[0-9]{1,3}(\.[0-9]{1,2})?([eE][+-]?[0-9]{1,2}|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])",
    fullmatch=True,
).map(lambda t: n.Literal("quantity", parse_quantity(t), t))
constants = st.sampled_from(
    [
        n.Literal("bool", True, "true"),
        n.Literal("bool", False, "false"),
        n.Literal("null", None, "null"),
    ]
)

BINARY_OPS = ["or", "and", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "??"]
BINARY_OPS += ["+", "-", "*", "/", "%"]


def _binary(op: str, left: n.Expr, right: n.Expr) -> n.Expr:
    """A binary node as the parser makes it: a run of ``and``/``or`` balanced and joined."""
    return n.run_of(op, [left, right]) if op in n.ASSOCIATIVE else n.Binary(op, left, right)


def expressions(depth: int, in_hole: bool = False) -> st.SearchStrategy[n.Expr]:
    """Any expression up to ``depth`` deep; a reason's hole holds no map or set (braces)."""
    leaves = [ints, floats, quantities, constants, names.map(n.Name), string_literals(in_hole)]
    leaf = st.one_of(*leaves)
    if depth == 0:
        return leaf
    sub = expressions(depth - 1, in_hole)
    args = st.lists(sub, max_size=3).map(tuple)
    comp = comprehensions(sub)
    call_args = st.one_of(args, comp.map(lambda c: (c,)))
    branches = [
        leaf,
        st.builds(n.Attribute, sub, names),
        st.builds(n.Index, sub, sub),
        st.builds(n.Call, names, call_args),
        st.builds(n.MethodCall, sub, names, call_args),
        st.builds(n.Unary, st.sampled_from(["-", "not"]), sub),
        st.builds(_binary, st.sampled_from(BINARY_OPS), sub, sub),
        st.builds(n.Conditional, sub, sub, sub),
        st.builds(n.ListLit, st.lists(sub, max_size=3).map(tuple)),
        comp.map(lambda c: n.Comprehension("list", *_fields(c)[1:])),
    ]
    if not in_hole:
        branches.append(st.builds(n.SetLit, st.lists(sub, min_size=1, max_size=3).map(tuple)))
        branches.append(st.builds(n.MapLit, st.lists(st.tuples(sub, sub), max_size=3).map(tuple)))
    return st.one_of(*branches)


def _fields(c: n.Comprehension) -> tuple:
    return (c.kind, c.element, c.targets, c.iterable, c.condition)


def comprehensions(sub: st.SearchStrategy[n.Expr]) -> st.SearchStrategy[n.Comprehension]:
    return st.builds(
        n.Comprehension,
        st.just("generator"),
        sub,
        st.lists(names, min_size=1, max_size=2).map(tuple),
        sub,
        st.none() | sub,
    )


@st.composite
def templates(draw: st.DrawFn) -> n.Template:
    parts: list[str | n.Expr] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.booleans()) and (not parts or not isinstance(parts[-1], str)):
            text = draw(text_values.filter(bool))
            parts.append(text)
        else:
            parts.append(draw(expressions(2, in_hole=True)))
    return n.Template(tuple(parts))


# --- statements and items ------------------------------------------------------------------

EXPR = expressions(3)
weights = st.integers(0, 1000)
adjustments = st.one_of(st.builds(n.Disable, names), st.builds(n.Reweight, names, weights))
ratios = st.one_of(
    st.integers(0, 99).map(lambda i: (i, str(i))),
    st.from_regex(r"[0-9]{1,2}\.[0-9]{1,2}", fullmatch=True).map(lambda t: (float(t), t)),
)
gang_items = st.one_of(
    st.builds(n.Within, st.lists(names, min_size=1, max_size=3).map(tuple), st.booleans()),
    st.builds(n.Filter, names, st.none() | EXPR, EXPR, st.none() | templates()),
    st.builds(n.Score, names, st.none() | weights, st.none() | names, st.none() | EXPR, EXPR),
)
statements = st.one_of(
    st.builds(n.GangBlock, st.lists(gang_items, max_size=3).map(tuple)),
    st.builds(n.Match, EXPR),
    st.builds(n.Use, names, st.lists(adjustments, max_size=3).map(tuple)),
    st.builds(n.Let, names, EXPR),
    st.builds(n.Filter, names, st.none() | EXPR, EXPR, st.none() | templates()),
    st.builds(n.Score, names, st.none() | weights, st.none() | names, st.none() | EXPR, EXPR),
    st.builds(
        lambda resource, ratio, bound: n.Overcommit(
            resource,
            ratio[0],
            ratio_text=ratio[1],
            max_load=None if bound is None else bound[0],
            max_load_text="" if bound is None else bound[1],
        ),
        names | text_values,
        ratios,
        st.none() | ratios,
    ),
)
bodies = st.lists(statements, max_size=4).map(tuple)
items = st.one_of(
    st.builds(n.Import, text_values),
    st.builds(n.Policy, text_values, bodies),
    st.builds(n.Library, names, bodies),
    st.builds(n.Profile, text_values, st.lists(text_values, max_size=4).map(tuple)),
)
files = st.lists(items, max_size=4).map(lambda xs: n.SourceFile("<gen>", tuple(xs)))

# --- roughening ----------------------------------------------------------------------------

STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# U+2028 and \f are line breaks to str.splitlines, not to the lexer: they must not cut comments.
comment_texts = st.text(
    alphabet=st.sampled_from("abc XYZ 019 \"{}#'\\\u2028\f\t"), max_size=12
).map(lambda s: ("#" + s).rstrip())


def _gaps(line: str) -> list[int]:
    """Offsets of the spaces of ``line`` that stand between tokens, not inside a string."""
    inside = set()
    for match in STRING_LITERAL.finditer(line):
        inside.update(range(match.start(), match.end()))
    return [i for i, char in enumerate(line) if char == " " and i not in inside]


@st.composite
def roughened(draw: st.DrawFn, text: str) -> tuple[str, list[str]]:
    """``text`` with lines joined and broken, blank lines and comments; and the comments."""
    out: list[str] = []
    comments: list[str] = []
    lines: list[str] = []
    for line in text.split("\n"):  # some lines joined first: statements sharing a line
        if lines and draw(st.integers(0, 3)) == 0:
            lines[-1] += " " + line
        else:
            lines.append(line)
    for line in lines:
        gaps = _gaps(line)
        pieces: list[str] = []
        start = 0
        for gap in sorted(
            draw(st.lists(st.sampled_from(gaps), max_size=3, unique=True)) if gaps else []
        ):
            pieces.append(line[start:gap])
            start = gap + 1
        pieces.append(line[start:])
        for position, piece in enumerate(pieces):
            if draw(st.integers(0, 5)) == 0:
                comment = draw(comment_texts)
                comments.append(comment)
                out.append("  " + comment)
            if draw(st.integers(0, 6)) == 0:
                out.append("")
            if position < len(pieces) - 1 and draw(st.booleans()):
                # A comment after code, in the middle of what was one line.
                comment = draw(comment_texts)
                comments.append(comment)
                out.append(piece + " " + comment)
            elif position == len(pieces) - 1 and piece.strip() and draw(st.integers(0, 4)) == 0:
                comment = draw(comment_texts)
                comments.append(comment)
                out.append(piece + "   " + comment)
            else:
                out.append(piece)
    return "\n".join(out), comments


# --- properties ----------------------------------------------------------------------------
