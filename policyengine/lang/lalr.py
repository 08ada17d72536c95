"""Running lark's LALR tables with our own reduce callbacks, building nodes while parsing.

lark's usual path builds a whole parse tree (every reduction wrapped in child filters and a
position propagator), then a transformer walks that tree a second time to make our nodes: about
three quarters of a cold policy compile went there. This driver reads the same parse table and
uses the same contextual lexer, so it accepts exactly the texts lark accepts, but each reduction
calls the builder directly. Spans follow lark's ``propagate_positions`` rule exactly: a node
starts where its first child's text starts and ends where its last child's ends, counting the
anonymous tokens (keywords, brackets) the builder never sees; a rule that only passes one child
through (``?rule``, ``"(" expr ")"``) keeps that child's own span while its parent's span covers
the brackets too. A parallel stack of positions carries those outer extents.

On any syntax error the driver gives up and lets lark parse the same text, so error values
(expected sets, positions) are lark's own. ``TreeDriver`` runs the builder over a lark tree
built the usual way; tests hold the driver equal to it, and it stands in if this lark's
internals are not the ones the driver reads.
"""

from __future__ import annotations

from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput
from lark.lexer import PatternStr, UnlessCallback
from lark.parse_tree_builder import maybe_create_child_filter
from lark.parsers.lalr_analysis import Shift

# (line, column, end_line, end_column), as lark's tokens and tree metas count them.
Position = tuple[int, int, int, int]

_CALL, _PASS, _SPLICE = 0, 1, 2


class _Rejected(Exception):
    """The driver met a token the table has no action for (lark reports the real error)."""


class _Plan:
    """How one grammar rule reduces: which children the builder sees, and what it calls."""

    __slots__ = ("callback", "include", "kind", "origin", "simple", "size", "trailing")

    def __init__(self, rule: Any, builder_type: type, keep_placeholders: bool):
        self.size = len(rule.expansion)
        self.origin: str = rule.origin.name
        name = rule.alias or rule.options.template_source or self.origin
        empty = rule.options.empty_indices if keep_placeholders else None
        made = maybe_create_child_filter(
            rule.expansion,
            rule.options.keep_all_tokens,
            False,
            empty,  # type: ignore[arg-type]  # lark's own call passes None too
        )
        if made is None:
            self.include = [(i, False, 0) for i in range(self.size)]
            self.trailing = 0
        elif len(made.args) == 1:  # LALR without placeholders: (index, expand) pairs
            self.include = [(i, expand, 0) for i, expand in made.args[0]]
            self.trailing = 0
        else:
            self.include, self.trailing = list(made.args[0]), made.args[1]
        # A filter that keeps every child as it is can be skipped.
        self.simple = self.trailing == 0 and self.include == [
            (i, False, 0) for i in range(self.size)
        ]
        callback = getattr(builder_type, name, None)
        if callback is not None:
            self.kind, self.callback = _CALL, callback
        elif self.origin.startswith("_"):
            self.kind, self.callback = _SPLICE, None
        elif rule.options.expand1 and not rule.alias and self._one_child():
            self.kind, self.callback = _PASS, None
        else:
            raise TypeError(f"{builder_type.__name__} has no callback for rule {name!r}")

    def _one_child(self) -> bool:
        return (
            self.trailing == 0
            and len(self.include) == 1
            and not self.include[0][1]
            and not self.include[0][2]
        )

    def children(self, values: list[Any]) -> list[Any]:
        if self.simple:
            return values
        out: list[Any] = []
        for index, expand, nones in self.include:
            if nones:
                out.extend([None] * nones)
            if expand:
                if out:
                    out.extend(values[index])
                else:  # left recursion: the spliced list is ours alone, so grow it in place
                    out = values[index]
            else:
                out.append(values[index])
        if self.trailing:
            out.extend([None] * self.trailing)
        return out


class _Lexer:
    """One of the contextual lexer's per-state scanners, unpacked for a tight loop.

    lark's ``BasicLexer.next_token`` does the same: try each alternation in order, retype a
    name that spells a keyword of this state (its ``UnlessCallback``), skip ignored terminals.
    """

    __slots__ = ("ignore", "keywords", "newlines", "patterns")

    def __init__(self, basic: Any):
        self.patterns = tuple(basic.scanner._mres)
        self.keywords: dict[str, dict[str, str]] = {}
        for kind, callback in basic.callback.items():
            if not isinstance(callback, UnlessCallback):
                raise TypeError(f"unexpected lexer callback for {kind}")
            spelled: dict[str, str] = {}
            for terminal in callback.scanner.terminals:
                pattern = terminal.pattern
                if not isinstance(pattern, PatternStr) or pattern.flags:
                    raise TypeError(f"keyword {terminal.name} is not a plain string")
                spelled.setdefault(pattern.value, terminal.name)
            self.keywords[kind] = spelled
        self.ignore = frozenset(basic.ignore_types)
        self.newlines = frozenset(basic.newline_types)


class Driver:
    """lark's parse table and contextual lexer, with reductions calling ``builder_type``."""

    def __init__(self, lark: Lark, builder_type: type):
        self.lark = lark
        frontend = lark.parser
        table = frontend.parser._parse_table
        keep = bool(lark.options.maybe_placeholders)
        plans = {rule: _Plan(rule, builder_type, keep) for rule in lark.rules}
        self.states: dict[int, dict[str, Any]] = {}
        for state, actions in table.states.items():
            converted: dict[str, Any] = {}
            for symbol, (action, arg) in actions.items():
                converted[symbol] = arg if action is Shift else plans[arg]
            self.states[state] = converted
        self.start_states: dict[str, int] = dict(table.start_states)
        self.end_states: dict[str, int] = dict(table.end_states)
        self._ends = frozenset(self.end_states.values())
        self._kept = frozenset(
            symbol.name
            for rule in lark.rules
            for symbol in rule.expansion
            if symbol.is_term
            and (rule.options.keep_all_tokens or not getattr(symbol, "filter_out", False))
        )
        self._chains: dict[tuple[int, str, str], int] = {}
        # An empty value has no extent; only a start rule (an empty file) may reduce to one.
        starts = set(self.start_states)
        for rule in lark.rules:
            if not rule.expansion and rule.origin.name not in starts:
                raise TypeError(f"rule {rule.origin.name!r} may be empty")
        made: dict[int, _Lexer] = {}
        self.lexers: dict[int, _Lexer] = {}
        for state, basic in frontend.lexer.lexers.items():
            if id(basic) not in made:
                made[id(basic)] = _Lexer(basic)
            self.lexers[state] = made[id(basic)]

    def parse(self, text: str, start: str, builder: Any) -> Any:
        """The builder's value for ``text``; a syntax error raises lark's own exception."""
        try:
            return self._run(text, start, builder)
        except (_Rejected, UnexpectedInput):
            pass
        self.lark.parse(text, start=start)  # raises the error, with lark's expected set
        raise AssertionError("lark accepted a text its own parse table rejected")

    def _collapse(self, below: int, origin: str, kind: str) -> int:
        """The state after a run of ``?a: b`` reductions on lookahead ``kind``.

        Each such reduction pops one state and pushes the goto from the same state below, so
        the run depends only on that state, the first rule's symbol and the lookahead: a chain
        like ``expr → or_expr → … → postfix`` (ten reductions per operand) becomes one look-up.
        It stops at an end state, where the caller must look for the end of input.
        """
        key = (below, origin, kind)
        found = self._chains.get(key)
        if found is None:
            found = self.states[below][origin]
            while found not in self._ends:
                action = self.states[found].get(kind)
                if type(action) is not _Plan or action.kind != _PASS or action.size != 1:
                    break
                found = self.states[below][action.origin]
            self._chains[key] = found
        return found

    def _run(self, text: str, start: str, builder: Any) -> Any:
        states = self.states
        lexers = self.lexers
        chains = self._chains
        end_state = self.end_states[start]
        state_stack = [self.start_states[start]]
        values: list[Any] = []
        # Where each value's text begins and ends, brackets around a passed-through child
        # included: (line, column, end_line, end_column).
        positions: list[Position] = []
        kept = self._kept
        kind = ""
        token: Token | None = None
        where: Position = (1, 1, 1, 1)
        ending = False
        pos, length, line, line_start = 0, len(text), 1, 0
        while True:
            if not ending:
                lexer = lexers[state_stack[-1]]
                while True:
                    if pos >= length:
                        ending, kind = True, "$END"
                        break
                    for pattern in lexer.patterns:
                        match = pattern.match(text, pos)
                        if match is not None:
                            break
                    else:
                        raise _Rejected
                    value = match.group(0)
                    kind = match.lastgroup or ""  # every group is named: never the empty name
                    spelled = lexer.keywords.get(kind)
                    if spelled is not None:
                        kind = spelled.get(value, kind)
                    start_pos, pos = pos, match.end()
                    column = start_pos - line_start + 1
                    first_line = line
                    if kind in lexer.newlines:
                        breaks = value.count("\n")
                        if breaks:
                            line += breaks
                            line_start = start_pos + value.rindex("\n") + 1
                    if kind in lexer.ignore:
                        continue
                    where = (first_line, column, line, pos - line_start + 1)
                    # A keyword or bracket no rule keeps needs its extent only, not a Token.
                    token = (
                        Token(kind, value, start_pos, first_line, column, *where[2:], pos)
                        if kind in kept
                        else None
                    )
                    break
            while True:
                action = states[state_stack[-1]].get(kind)
                if action is None:
                    raise _Rejected
                if type(action) is int:
                    if ending:
                        raise _Rejected
                    state_stack.append(action)
                    values.append(token)
                    positions.append(where)
                    break
                plan: _Plan = action
                size = plan.size
                if size == 1 and plan.kind == _PASS:
                    # The value and its extent stay; only the state moves on.
                    below = state_stack[-2]
                    found = chains.get((below, plan.origin, kind))
                    state_stack[-1] = (
                        found if found is not None else self._collapse(below, plan.origin, kind)
                    )
                else:
                    if size:
                        raw = values[-size:]
                        first, last = positions[-size], positions[-1]
                        extent: Position | None = (first[0], first[1], last[2], last[3])
                        del values[-size:], positions[-size:], state_stack[-size:]
                    else:
                        raw, extent = [], None
                    children = raw if plan.simple else plan.children(raw)
                    if plan.kind == _CALL:
                        value = plan.callback(builder, extent, children)
                    elif plan.kind == _SPLICE:
                        value = children
                    else:
                        value = children[0]
                    state_stack.append(states[state_stack[-1]][plan.origin])
                    values.append(value)
                    positions.append(extent)  # type: ignore[arg-type]  # only a start rule is empty
                if ending and state_stack[-1] == end_state:
                    return values[-1]


class TreeDriver:
    """The reference, and the fallback should a lark release move the internals ``Driver`` reads:
    lark builds its tree with ``propagate_positions``, then ``build_from_tree`` runs the builder.
    """

    def __init__(self, lark: Lark):
        self.lark = lark

    def parse(self, text: str, start: str, builder: Any) -> Any:
        return build_from_tree(self.lark.parse(text, start=start), builder)


def build_from_tree(tree: Tree[Any], builder: Any) -> Any:
    """The reference: ``builder`` run over a tree lark built with ``propagate_positions``,
    children before parents, without recursion (a tree may be thousands of levels deep)."""
    built: dict[int, Any] = {}
    stack: list[tuple[Tree[Any], bool]] = [(tree, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            # Reversed, so children are built left to right, as reductions run.
            stack.extend(
                (child, False) for child in reversed(node.children) if isinstance(child, Tree)
            )
            continue
        children = [
            built.pop(id(child)) if isinstance(child, Tree) else child for child in node.children
        ]
        meta = node.meta
        position = None if meta.empty else (meta.line, meta.column, meta.end_line, meta.end_column)
        built[id(node)] = getattr(builder, node.data)(position, children)
    return built[id(tree)]
